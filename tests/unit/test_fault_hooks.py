"""The simulator's public fault hooks, each on a bare simulation of the `kind` profile.

kind's nominal latencies: scheduling 0.1 s, image pull 3 s, container start 0.5 s, controller
sync 0.1 s, volume provisioning 2.5 s, policy propagation 1.05 s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from helmsim.cluster.cluster import build_cluster
from helmsim.cluster.controllers.kubelet import Kubelet
from helmsim.cluster.controllers.provisioner import failure_message
from helmsim.cluster.controllers.scheduler import Scheduler
from helmsim.cluster.engine import Simulation
from helmsim.cluster.netstate import network_state
from helmsim.cluster.profile import load_profile, profile_from_mapping
from helmsim.cluster.store import ApiUnreachable, api_path

TWO_NODES = {
    "extends": "kind",
    "name": "two",
    "nodes": [{"name": "a", "internalIP": "172.18.0.2"}, {"name": "b", "internalIP": "172.18.0.3"}],
}
REFUSED = "dial tcp 10.96.0.1:443: connect: connection refused"


class NoFaults:
    """Every hook answers "nothing": subclasses override one."""

    def image_pull_error(self, pod: Mapping[str, Any], container: str, attempt: int) -> str | None:
        return None

    def image_pull_delay(self, pod: Mapping[str, Any], container: str, attempt: int) -> float | None:
        return None

    def exit_code(self, pod: Mapping[str, Any], container: str, run: int) -> int | None:
        return None

    def policy_propagation(self, doc: Mapping[str, Any], sampled: float) -> float:
        return sampled

    def provision_error(self, claim: Mapping[str, Any], provisioner: str, attempt: int) -> str | None:
        return None

    def provision_delay(self, claim: Mapping[str, Any], provisioner: str) -> float | None:
        return None


def _pod(name: str = "p", node: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "app", "image": "app:1.0"}], **spec}
    if node:
        body["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": body}


def _events(sim: Simulation, obj: str, reason: str | None = None) -> list[tuple[float, str, str]]:
    return [
        (round(e.time, 3), e.data["reason"], e.message)
        for e in sim.trace.find(what="event", reason=reason)
        if e.obj == obj
    ]


def _kubelet(sim: Simulation) -> Kubelet:
    return next(c for c in sim.controllers if isinstance(c, Kubelet))


# --- image_pull_delay ---------------------------------------------------------------------------
def test_image_pull_delay_lengthens_that_pull_and_its_pulled_message() -> None:
    calls: list[tuple[str, int]] = []

    class Slow(NoFaults):
        def image_pull_delay(self, pod: Mapping[str, Any], container: str, attempt: int) -> float | None:
            calls.append((container, attempt))
            return 20.0

    sim = Simulation(load_profile("kind"))
    Scheduler(sim)
    Kubelet(sim)
    sim.faults = Slow()  # type: ignore[attr-defined]
    sim.store.create(_pod(), actor="helm")
    sim.run(until=60)
    assert calls == [("app", 0)]
    assert _events(sim, "Pod/default/p", "Pulled") == [
        (23.1, "Pulled", 'Successfully pulled image "app:1.0" in 23s (23s including waiting)')
    ]


# --- policy_propagation -------------------------------------------------------------------------
def test_policy_propagation_hook_sets_when_a_policy_takes_effect() -> None:
    seen: list[tuple[str, float]] = []

    class Late(NoFaults):
        def policy_propagation(self, doc: Mapping[str, Any], sampled: float) -> float:
            seen.append((doc["metadata"]["name"], sampled))
            return sampled + 7

    sim = build_cluster(load_profile("kind"))
    sim.faults = Late()  # type: ignore[attr-defined]
    network_state(sim)
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny", "namespace": "default"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }
    sim.after(2.0, lambda: sim.store.create(policy, actor="helm"))
    sim.run(until=30)
    assert seen == [("deny", pytest.approx(1.05))]
    effect = sim.trace.find(what="policy-in-effect", obj="NetworkPolicy/default/deny")
    assert [round(e.time, 3) for e in effect] == [10.05]


# --- provisioner hooks ---------------------------------------------------------------------------
def _claim_sim(faults: Any) -> Simulation:
    profile = profile_from_mapping(
        {
            "extends": "eks-gp3",
            "name": "io2",
            "storageClasses": [
                {"name": "io2", "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "Immediate", "default": True}
            ],
        },
        source="test",
    )
    sim = build_cluster(profile)
    sim.faults = faults  # type: ignore[attr-defined]
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
        actor="helm",
    )
    return sim


def test_provision_error_fails_the_attempts_it_names_then_the_volume_comes() -> None:
    attempts: list[tuple[str, int]] = []

    class Refusing(NoFaults):
        def provision_error(self, claim: Mapping[str, Any], provisioner: str, attempt: int) -> str | None:
            attempts.append((provisioner, attempt))
            return "could not create volume in EC2: UnauthorizedOperation" if attempt <= 2 else None

    sim = _claim_sim(Refusing())
    sim.run(until=120)
    assert attempts == [("ebs.csi.aws.com", 1), ("ebs.csi.aws.com", 2), ("ebs.csi.aws.com", 3)]
    failed = _events(sim, "PersistentVolumeClaim/default/data", "ProvisioningFailed")
    # the library's workqueue retries after 15 s, then 30 s
    assert [(t - failed[0][0], m) for t, _, m in failed] == [
        (0.0, "could not create volume in EC2: UnauthorizedOperation"),
        (15.0, "could not create volume in EC2: UnauthorizedOperation"),
    ]
    assert _events(sim, "PersistentVolumeClaim/default/data", "ProvisioningSucceeded")


@pytest.mark.parametrize(
    ("error", "event"),
    [
        # sig-storage-lib-external-provisioner v13.0.0 controller.go provisionClaimOperation
        ("rpc error: code = Internal desc = boom", "rpc error: code = Internal desc = boom"),
        (
            "rpc error: code = InvalidArgument desc = bad size",
            (
                "Volume provisioning failed with infeasible error. Retries will be delayed. "
                "rpc error: code = InvalidArgument desc = bad size"
            ),
        ),
        ("configuration error, no node was specified", "configuration error, no node was specified"),
    ],
)
def test_provisioning_failed_event_text(error: str, event: str) -> None:
    assert failure_message(error) == event


def test_provision_delay_postpones_the_volume() -> None:
    class Slow(NoFaults):
        def provision_delay(self, claim: Mapping[str, Any], provisioner: str) -> float | None:
            return 100.0

    fast, slow = _claim_sim(NoFaults()), _claim_sim(Slow())
    for sim in (fast, slow):
        sim.run(until=300)
    made = [
        s.trace.find(what="created", obj=f"PersistentVolume/{s.store.list('PersistentVolume')[0]['metadata']['name']}")[0].time
        for s in (fast, slow)
    ]
    assert made[1] - made[0] == pytest.approx(100.0)


# --- API availability ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("obj", "item", "path"),
    [
        ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"}}, False, "/apis/batch/v1/namespaces/ns/jobs"),
        ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}, True, "/api/v1/namespaces/ns/pods/p"),
        ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}, True, "/apis/rbac.authorization.k8s.io/v1/clusterroles/r"),
        ({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "n", "namespace": "x"}}, True, "/apis/networking.k8s.io/v1/namespaces/x/networkpolicies/n"),
    ],
)
def test_api_path(obj: dict[str, Any], item: bool, path: str) -> None:
    assert api_path(obj, item=item) == path


def _down_for(*actors: str) -> Any:
    return lambda actor: "down for the test" if actor in actors else None


CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}}


@pytest.mark.parametrize(
    ("write", "text"),
    [
        (lambda s: s.create({**CM, "metadata": {"name": "new", "namespace": "default"}}, actor="helm"), 'Post "https://10.96.0.1:443/api/v1/namespaces/default/configmaps"'),
        (lambda s: s.apply(CM, actor="helm"), 'Patch "https://10.96.0.1:443/api/v1/namespaces/default/configmaps/c"'),
        (lambda s: s.update(CM, actor="helm"), 'Put "https://10.96.0.1:443/api/v1/namespaces/default/configmaps/c"'),
        (lambda s: s.update_status("ConfigMap", "default", "c", {}, actor="helm"), 'Put "https://10.96.0.1:443/api/v1/namespaces/default/configmaps/c/status"'),
        (lambda s: s.delete("ConfigMap", "default", "c", actor="helm"), 'Delete "https://10.96.0.1:443/api/v1/namespaces/default/configmaps/c"'),
    ],
)
def test_every_write_of_a_refused_actor_fails_with_the_client_go_text(write: Any, text: str) -> None:
    sim = Simulation(load_profile("kind"))
    sim.store.create(CM, actor="setup")
    sim.store.availability = _down_for("helm")
    with pytest.raises(ApiUnreachable) as err:
        write(sim.store)
    assert err.value.message == f"{text}: {REFUSED}"
    assert err.value.why == "down for the test"
    assert sim.store.get("ConfigMap", "default", "c") == {**CM, "metadata": sim.store.get("ConfigMap", "default", "c")["metadata"]}
    # others still write
    sim.store.apply({**CM, "data": {"a": "2"}}, actor="job-controller")
    assert sim.store.get("ConfigMap", "default", "c")["data"] == {"a": "2"}


def test_pods_reaching_a_down_api_server_are_refused_at_once() -> None:
    sim = build_cluster(load_profile("kind"))
    sim.store.availability = lambda actor: "down" if actor.startswith("system:serviceaccount:") else None
    pod = _pod(restartPolicy="Never")
    pod["metadata"]["annotations"] = {"helmsim.dev/needs": "kube-apiserver"}
    sim.store.create(pod, actor="helm")
    sim.run(until=60)
    refused = sim.trace.find(what="connect-refused", obj="Pod/default/p")
    assert len(refused) == 1 and REFUSED in refused[0].message
    assert sim.store.get("Pod", "default", "p")["status"]["phase"] == "Failed"


def test_kubelet_status_waits_out_an_outage_and_lands_after_it() -> None:
    sim = build_cluster(load_profile("kind"))
    down = {"until": 30.0}
    sim.store.availability = lambda actor: "down" if actor == "kubelet" and sim.now < down["until"] else None
    sim.store.create(_pod(node="kind-control-plane"), actor="helm")
    sim.run(until=60)
    status = [e for e in sim.trace.find(what="status", obj="Pod/default/p") if "phase" in e.message]
    # the first write (pod accepted, t=0) fails; the status manager retries every 10 s and the
    # phase change (container started at 3.5) lands with the retry at 30 s
    assert [round(e.time, 2) for e in status] == [30.0]
    assert len(sim.trace.find(what="api-unreachable", obj="Pod/default/p")) == 1


def test_scheduler_backs_off_while_binding_is_refused() -> None:
    sim = build_cluster(load_profile("kind"))
    sim.store.availability = lambda actor: "down" if actor == "scheduler" and sim.now < 5 else None
    sim.store.create(_pod(), actor="helm")
    sim.run(until=30)
    tries = [round(e.time, 2) for e in sim.trace.find(what="api-unreachable", obj="Pod/default/p")]
    # pkg/scheduler backoff: 1 s, doubling (0.1 first attempt, then +1, +2)
    assert tries == [0.1, 1.1, 3.1]
    assert [round(e.time, 2) for e in sim.trace.find(what="scheduled", obj="Pod/default/p")] == [7.1]


# --- lost nodes -----------------------------------------------------------------------------------
def _two_nodes() -> Simulation:
    return build_cluster(profile_from_mapping(TWO_NODES, source="test"))


def test_node_lost_with_its_instance_deletes_the_node_and_podgc_collects_its_pods() -> None:
    sim = _two_nodes()
    sim.store.create(_pod("on-b", node="b"), actor="helm")
    sim.after(25.0, lambda: _kubelet(sim).node_lost("b"))
    sim.run(until=200)
    assert sim.store.get("Node", None, "b") is None
    gc = sim.trace.find(what="deleting", obj="Pod/default/on-b")
    # PodGC runs every 20 s: the run at 40 s quarantines the node, the run at 80 s deletes
    assert [(e.actor, e.time) for e in gc] == [("pod-garbage-collector", 80.0)]
    # the scheduler no longer offers b
    sim.store.create(_pod("later"), actor="helm")
    sim.run(until=210)
    assert sim.store.get("Pod", "default", "later")["spec"]["nodeName"] == "a"


def test_podgc_marks_the_orphan_failed_with_deletion_by_podgc() -> None:
    sim = _two_nodes()
    sim.store.create(_pod("on-b", node="b"), actor="helm")
    seen: list[dict[str, Any]] = []
    sim.store.watch(["Pod"], lambda ev, obj: seen.append(obj) if obj["metadata"].get("deletionTimestamp") else None)
    sim.after(25.0, lambda: _kubelet(sim).node_lost("b"))
    sim.run(until=100)
    last = seen[0]["status"]
    assert last["phase"] == "Failed"
    cond = next(c for c in last["conditions"] if c["type"] == "DisruptionTarget")
    assert (cond["reason"], cond["message"]) == ("DeletionByPodGC", "PodGC: node no longer exists")


def test_unreachable_node_goes_not_ready_then_its_pods_are_evicted_by_taint() -> None:
    sim = _two_nodes()
    sim.store.create(_pod("default-toleration", node="b"), actor="helm")
    short = [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]
    sim.store.create(_pod("short", node="b", tolerations=short), actor="helm")
    forever = [{"operator": "Exists"}]
    sim.store.create(_pod("forever", node="b", tolerations=forever), actor="helm")
    sim.after(10.0, lambda: _kubelet(sim).node_lost("b", instance_gone=False))
    sim.run(until=20)
    assert sim.store.get("Pod", "default", "short")["status"]["phase"] == "Running"
    sim.run(until=400)
    node = sim.store.get("Node", None, "b")
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown",
        "NodeStatusUnknown",
        "Kubelet stopped posting node status.",
    )
    assert {(t["key"], t["effect"]) for t in node["spec"]["taints"]} == {
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    }
    # NotReady at 10 + 40 s; evictions at +10 s and +300 s (DefaultTolerationSeconds)
    evicted = {e.obj: e.time for e in sim.trace.find(what="deleting") if e.actor == "taint-eviction-controller"}
    assert evicted == {"Pod/default/short": 60.0, "Pod/default/default-toleration": 350.0}
    kept = sim.store.get("Pod", "default", "forever")
    assert next(c for c in kept["status"]["conditions"] if c["type"] == "Ready")["status"] == "False"
    # the NoSchedule taint keeps new pods off b
    sim.store.create(_pod("later"), actor="helm")
    sim.run(until=410)
    assert sim.store.get("Pod", "default", "later")["spec"]["nodeName"] == "a"


def test_a_lost_nodes_containers_stop_and_report_nothing_more() -> None:
    sim = _two_nodes()
    sim.store.create(_pod("on-b", node="b"), actor="helm")
    sim.after(10.0, lambda: _kubelet(sim).node_lost("b", instance_gone=False))
    sim.run(until=45)
    writes = [e for e in sim.trace if e.obj == "Pod/default/on-b" and e.actor == "kubelet" and e.time >= 10]
    assert writes == []
    assert sim.store.get("Pod", "default", "on-b")["status"]["phase"] == "Running"  # last report
