"""Policies in effect over time and timed connection attempts (the seed-1 race)."""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.cluster.behaviour import Need
from helmsim.cluster.controllers.kubelet import Kubelet
from helmsim.cluster.controllers.scheduler import Scheduler
from helmsim.cluster.engine import Simulation
from helmsim.cluster.netstate import SYN_OFFSETS, network_state
from helmsim.cluster.profile import load_profile, profile_from_mapping

# Small, fixed latencies so the first SYN goes out at 0.5 s: bound 0.1, endpoint 0.1-0.3,
# image 0.3-0.4, container started 0.5. Policy propagation stays the profile's nominal (1.05 s).
FAST = {"scheduling": 0.1, "endpointRegeneration": 0.2, "imagePull": 0.1, "containerStart": 0.1}


def _profile(name: str, **latencies: Any) -> Any:
    return profile_from_mapping(
        {"extends": name, "latencies": {**FAST, **latencies}}, source="test"
    )


def _sim(profile: Any) -> Simulation:
    sim = Simulation(profile)
    Scheduler(sim)
    Kubelet(sim)
    return sim


def _pod(name: str = "migrate", needs: str = "kube-apiserver", **ann: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "kagent",
            "labels": {"app": "migrate"},
            "annotations": {"helmsim.dev/needs": needs, **ann},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "migrate", "image": "migrate:1.0"}],
        },
    }


def _cnp(name: str = "migrate", egress: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": name, "namespace": "kagent"},
        "spec": {
            "endpointSelector": {"matchLabels": {"app": "migrate"}},
            "egress": egress if egress is not None else [{"toEntities": ["kube-apiserver"]}],
        },
    }


def _times(sim: Simulation, what: str) -> list[float]:
    return [round(e.time, 3) for e in sim.trace.find(what=what)]


def test_always_without_policy_times_out_after_30s_and_exits_1() -> None:
    sim = _sim(_profile("cilium-always"))
    sim.store.create(_pod(), actor="helm")
    sim.run(until=60)
    denied = sim.trace.find(what="connect-denied")
    # Linux SYN retransmissions (1 s RTO doubling) within the 30 s client-go dial timeout.
    assert [round(e.time - 0.5, 3) for e in denied] == [0.0, 1.0, 3.0, 7.0, 15.0]
    assert "policyEnforcementMode=always and no policy allows it" in denied[0].message
    timeout = sim.trace.find(what="connect-timeout")[0]
    assert timeout.time == pytest.approx(30.5)
    assert timeout.data["error"] == "dial tcp 10.96.0.1:443: i/o timeout"
    log = sim.trace.find(what="container-log")[0]
    assert log.message.endswith("Error: dial tcp 10.96.0.1:443: i/o timeout")
    pod = sim.store.get("Pod", "kagent", "migrate")
    assert pod["status"]["phase"] == "Failed"
    term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 1 and term["reason"] == "Error"
    # the chain from the timeout leads back to the container start and the pod's creation
    chain = [e.what for e in sim.trace.chain(timeout.id)]
    assert chain[0] == "created" and "event" in chain and chain[-1] == "connect-timeout"


def test_policy_landing_inside_the_window_lets_a_retransmit_through() -> None:
    sim = _sim(_profile("cilium-always"))
    sim.store.create(_pod(), actor="helm")
    sim.after(1.3, lambda: sim.store.create(_cnp(), actor="helm"))
    sim.run(until=60)
    # created 1.3 s + nominal propagation U(0.1, 2) -> 1.05 s = in effect at 2.35 s
    assert _times(sim, "policy-in-effect") == [2.35]
    assert _times(sim, "connect-denied") == [0.5, 1.5]  # SYN 1 and the +1 s retransmit
    connected = sim.trace.find(what="connected")[0]
    assert connected.time == pytest.approx(3.5) and connected.data["attempt"] == 3  # the +3 s one
    # the connection is caused by the policy taking effect, which is caused by its creation
    chain = sim.trace.chain(connected.id)
    assert [e.what for e in chain] == ["created", "policy-in-effect", "connected"]
    assert chain[0].obj == "CiliumNetworkPolicy/kagent/migrate"
    assert sim.store.get("Pod", "kagent", "migrate")["status"]["phase"] == "Succeeded"


def test_default_mode_denies_nothing_without_a_selecting_policy() -> None:
    sim = _sim(_profile("cilium-default"))
    sim.store.create(_pod(needs="kube-apiserver,dns,api.github.com:443"), actor="helm")
    sim.run(until=60)
    assert sim.trace.find(what="connect-denied") == []
    assert [e.data["target"] for e in sim.trace.find(what="connected")] == [
        "kube-apiserver",
        "dns",
        "dns",
        "api.github.com:443",
    ]
    assert sim.store.get("Pod", "kagent", "migrate")["status"]["phase"] == "Succeeded"


def test_policy_accepted_just_before_the_pod_reaches_it_only_after_propagation() -> None:
    # Helm creates the policy 50 ms before the pod and the CNI ADD starts at 0.1 s, but the agent
    # learns of the policy only at 0.05 + 1.05 s: the endpoint is built without it, the first SYN
    # (0.55 s) is dropped, and the +1 s retransmit (1.55 s) gets through. This is the seed-1 race.
    sim = _sim(_profile("cilium-always"))
    sim.after(0.05, lambda: sim.store.create(_cnp(), actor="helm"))
    sim.after(0.1, lambda: sim.store.create(_pod(), actor="helm"))
    sim.run(until=60)
    assert _times(sim, "connect-denied") == [0.6]
    assert _times(sim, "connected") == [1.6]
    ready = sim.trace.find(what="endpoint-ready")[0]
    assert ready.data["policies"] == []


def test_dns_denied_fails_after_two_queries_with_the_go_lookup_error() -> None:
    sim = _sim(_profile("cilium-always"))
    sim.store.create(_cnp(), actor="helm")  # apiserver allowed, DNS not
    sim.after(5, lambda: sim.store.create(_pod(needs="api.github.com:443"), actor="helm"))
    sim.run(until=60)
    denied = sim.trace.find(what="connect-denied")
    assert [e.time for e in denied] == pytest.approx([5.5, 10.5])  # glibc/Go: 5 s, 2 attempts
    err = sim.trace.find(what="connect-timeout")[0]
    assert err.time == pytest.approx(15.5)
    assert err.data["error"] == (
        "dial tcp: lookup api.github.com on 10.96.0.10:53: "
        "read udp 10.244.0.10:32769->10.96.0.10:53: i/o timeout"
    )


def test_timeout_beyond_syn_retries_fails_with_connection_timed_out() -> None:
    sim = _sim(_profile("cilium-always"))
    sim.store.create(_pod(**{"helmsim.dev/connect-timeout-seconds": "300"}), actor="helm")
    sim.run(until=400)
    assert [round(e.time - 0.5, 3) for e in sim.trace.find(what="connect-denied")] == list(
        SYN_OFFSETS
    )
    err = sim.trace.find(what="connect-timeout")[0]
    assert err.time == pytest.approx(127.5)
    assert err.data["error"] == "dial tcp 10.96.0.1:443: connect: connection timed out"


def test_kind_network_policy_isolates_only_after_propagation() -> None:
    sim = _sim(_profile("kind"))
    deny_all = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny", "namespace": "kagent"},
        "spec": {"podSelector": {}, "policyTypes": ["Egress"]},
    }
    sim.store.create(deny_all, actor="helm")
    sim.store.create(_pod(), actor="helm")
    sim.run(until=60)
    # no CNI-ADD snapshot outside Cilium (and no endpoint build): the policy applies at
    # 0 + 1.05 s, after SYN 1 at 0.3 s; a pod created after that is isolated.
    assert _times(sim, "connected") == [0.3]
    sim2 = _sim(_profile("kind"))
    sim2.store.create(deny_all, actor="helm")
    sim2.after(2, lambda: sim2.store.create(_pod(), actor="helm"))
    sim2.run(until=60)
    assert (
        "isolated by NetworkPolicy kagent/deny" in sim2.trace.find(what="connect-denied")[0].message
    )


def test_in_effect_follows_creation_update_and_deletion() -> None:
    sim = Simulation(load_profile("cilium-default"))
    net = network_state(sim)
    sim.store.create(_cnp(), actor="helm")
    sim.run(until=1)
    assert net.in_effect() == []
    sim.run(until=1.1)
    (v1,) = net.in_effect()
    assert v1.index == 0 and v1.effective == pytest.approx(1.05)
    changed = _cnp(egress=[{"toEntities": ["world"]}])
    sim.store.apply(changed, actor="helm")  # generation 2: in effect 1.05 s later
    sim.run(until=2.0)
    assert net.in_effect()[0].index == 0
    sim.run(until=2.2)
    assert net.in_effect()[0].index == 1
    sim.store.delete("CiliumNetworkPolicy", "kagent", "migrate", actor="helm")
    assert net.in_effect() == []
    assert [e.what for e in sim.trace if e.actor == "cilium"] == [
        "policy-in-effect",
        "policy-in-effect",
        "policy-out-of-effect",
    ]


def test_policies_existing_before_the_state_are_adopted() -> None:
    sim = Simulation(load_profile("cilium-always"))
    sim.store.create(_cnp(), actor="helm")
    net = network_state(sim)
    sim.run(until=2)
    assert [v.key for v in net.in_effect()] == [("CiliumNetworkPolicy", "kagent", "migrate")]


@pytest.mark.parametrize(
    ("profile", "mode"),
    [
        ("cilium-always", {"cni": {"policyEnforcementMode": "never"}}),
        ("kind", {"cni": {"type": "none"}}),
    ],
)
def test_no_enforcement_allows_everything(profile: str, mode: dict[str, Any]) -> None:
    prof = profile_from_mapping({"extends": profile, "latencies": FAST, **mode}, source="test")
    sim = _sim(prof)
    sim.store.create(
        {
            **_cnp(egress=[]),
            "spec": {"endpointSelector": {}, "egressDeny": [{"toEntities": ["all"]}]},
        }
        if profile.startswith("cilium")
        else _cnp(),
        actor="helm",
    )
    sim.store.create(_pod(needs="kube-apiserver,dns,api.github.com:443"), actor="helm")
    sim.run(until=60)
    assert sim.trace.find(what="connect-denied") == []
    assert sim.store.get("Pod", "kagent", "migrate")["status"]["phase"] == "Succeeded"


@pytest.mark.parametrize(
    ("name", "selects", "port"),
    [
        ("db", "db", 5432),
        # the dialling pod is in the evaluator's view so that policies select it, but a Service
        # serves only Ready pods (pkg/controller/endpointslice): dialling its own Service before
        # it is Ready is refused, as any other client's would be (it was "connecting to itself")
        ("self", "migrate", 80),
    ],
)
def test_service_without_ready_endpoints_is_refused_at_once(name: str, selects: str, port: int) -> None:
    sim = _sim(_profile("kind"))
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "kagent"},
        "spec": {"clusterIP": "10.96.0.50", "selector": {"app": selects}, "ports": [{"port": port}]},
    }
    sim.store.create(svc, actor="helm")
    sim.store.create(_pod(needs=f"svc/kagent/{name}:{port}"), actor="helm")
    sim.run(until=60)
    refused = sim.trace.find(what="connect-refused")[0]
    assert refused.message.startswith(f"migrate: dial tcp 10.96.0.50:{port}: connect: connection refused")
    assert not [e for e in sim.trace.find(what="connected") if e.data.get("target") == f"svc/kagent/{name}:{port}"]
    assert sim.store.get("Pod", "kagent", "migrate")["status"]["phase"] == "Failed"


@pytest.mark.parametrize(("pods", "error"), [(0, "dial tcp: lookup db.kagent.svc.cluster.local on 10.96.0.10:53: no such host"), (1, None)])
def test_a_headless_service_resolves_to_its_ready_pods(pods: int, error: str | None) -> None:
    # a headless Service has no ClusterIP to dial ("None:5432" before): its name resolves to
    # its ready endpoints, and to nothing without one
    sim = _sim(_profile("kind"))
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "db", "namespace": "kagent"},
        "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]},
    }
    sim.store.create(svc, actor="helm")
    if pods:
        db = _pod("db", needs="", **{"helmsim.dev/run-seconds": "forever"})
        db["metadata"]["labels"] = {"app": "db"}
        sim.store.create(db, actor="helm")
        sim.run(until=5)
    sim.store.create(_pod(needs="svc/kagent/db:5432"), actor="helm")
    sim.run(until=60)
    if error is None:
        (ok,) = [e for e in sim.trace.find(what="connected") if e.data.get("target") == "svc/kagent/db:5432"]
        assert "None:" not in ok.message and ok.data["dial"].endswith(":5432")
    else:
        assert any(e.message == f"migrate: {error} (service kagent/db:5432: the headless Service has no ready endpoints, so its name has no records)" for e in sim.trace)


def test_connect_is_usable_from_any_process() -> None:
    from helmsim.cluster.netstate import connect

    sim = _sim(_profile("cilium-always"))
    pod = sim.store.create(
        _pod(needs="dns", **{"helmsim.dev/run-seconds": "forever"}), actor="helm"
    )
    results: list[Any] = []

    def probe() -> Any:
        yield sim.sleep(1)
        results.append((yield from connect(sim, pod, Need("kube-apiserver"), 2.5)))

    sim.process(probe())
    sim.run(until=10)
    (res,) = results
    assert (
        not res.ok
        and res.time == pytest.approx(3.5)
        and res.error == "dial tcp 10.96.0.1:443: i/o timeout"
    )


def _seed_job_pod() -> dict[str, Any]:
    pod = _pod(needs="")
    del pod["metadata"]["annotations"]
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "migrate",
            "uid": "job-uid",
            "controller": True,
        }
    ]
    pod["spec"]["serviceAccountName"] = "migrate"
    return pod


SEED_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "RoleBinding",
    "metadata": {"name": "migrate", "namespace": "kagent"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "migrate"},
    "subjects": [{"kind": "ServiceAccount", "name": "migrate", "namespace": "kagent"}],
}
# the Role it binds (examples/seed1-migrate-race templates/agent-manager/migrate-rbac.yaml)
SEED_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "Role",
    "metadata": {"name": "migrate", "namespace": "kagent"},
    "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create"]}],
}
SEED_CNP = _cnp(
    egress=[
        {
            "toEndpoints": [
                {
                    "matchLabels": {
                        "k8s:io.kubernetes.pod.namespace": "kube-system",
                        "k8s:k8s-app": "kube-dns",
                    }
                }
            ],
            "toPorts": [
                {
                    "ports": [{"port": "53", "protocol": "ANY"}],
                    "rules": {"dns": [{"matchPattern": "*"}]},
                }
            ],
        },
        {"toEntities": ["kube-apiserver"]},
        {
            "toFQDNs": [{"matchName": "api.github.com"}],
            "toPorts": [{"ports": [{"port": "443", "protocol": "TCP"}]}],
        },
    ]
)


@pytest.mark.parametrize(
    ("profile", "denied"), [("cilium-always", True), ("cilium-default", False)]
)
def test_seed_1_job_pod_infers_its_needs_from_the_release(profile: str, denied: bool) -> None:
    """The release's CiliumNetworkPolicy says what the Job reaches even before it exists."""
    sim = _sim(load_profile(profile))
    sim.release_objects = [SEED_ROLE, SEED_BINDING, SEED_CNP]  # type: ignore[attr-defined]
    sim.store.create(SEED_BINDING, actor="helm")
    sim.store.create(_seed_job_pod(), actor="helm")
    sim.after(40, lambda: sim.store.create(SEED_CNP, actor="helm"))  # applied after the Job
    sim.run(until=120)
    notes = [e.message for e in sim.trace.find(what="behaviour")]
    assert notes[0] == (
        "migrate: talks to the API server: ServiceAccount migrate is bound to Role migrate "
        "by RoleBinding migrate"
    )
    assert (
        "migrate: needs api.github.com:443: CiliumNetworkPolicy kagent/migrate allows toFQDNs api.github.com"
        in notes
    )
    phase = sim.store.get("Pod", "kagent", "migrate")["status"]["phase"]
    if denied:
        first = sim.trace.find(what="connect-denied")[0]
        assert first.data["target"] == "kube-apiserver" and first.data["attempt"] == 1
        assert (
            sim.trace.find(what="container-log")[0].message
            == "migrate: Error: dial tcp 10.96.0.1:443: i/o timeout"
        )
        assert phase == "Failed"
    else:
        assert sim.trace.find(what="connect-denied") == []
        assert [e.data["target"] for e in sim.trace.find(what="connected")] == [
            "kube-apiserver",
            "dns",
            "dns",
            "api.github.com:443",
        ]
        assert phase == "Succeeded"


def test_missing_service_is_no_such_host() -> None:
    sim = _sim(_profile("kind"))
    sim.store.create(_pod(needs="svc/kagent/nope:80"), actor="helm")
    sim.run(until=30)
    refused = sim.trace.find(what="connect-refused")[0]
    assert refused.message.startswith(
        "migrate: dial tcp: lookup nope.kagent.svc.cluster.local on 10.96.0.10:53: no such host"
    )


def test_side_streams_are_the_same_in_every_process() -> None:
    """The agents' propagation draws and the load balancer's picks come from side streams seeded
    from the main stream: the same in a process with another str-hash salt (they were salted by
    PYTHONHASHSEED, so the same seed gave different runs on multi-node Cilium profiles)."""
    import os
    import subprocess
    import sys

    code = (
        "import random\n"
        "from helmsim.cluster.netstate import _stream_seed\n"
        "class S: rng = random.Random(5)\n"
        "print(_stream_seed(S, 'cilium-agents'), _stream_seed(S, 'service-lb'))\n"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": salt},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for salt in ("1", "2", "3")
    }
    assert len(seen) == 1
    agents, lb = next(iter(seen)).split()
    assert agents != lb  # two streams, not one


def test_a_name_dot_namespace_is_resolved_at_the_dial() -> None:
    # a need for db.ops that was external when the model was built (no Service then) reaches the
    # Service db of namespace ops once it exists: the resolver searches db.ops.svc.<domain>
    # before the absolute name at every dial (kubernetes pkg/kubelet/network/dns/dns.go)
    from helmsim.cluster.netstate import connect

    sim = _sim(_profile("kind"))
    pod = sim.store.create(
        _pod(needs="dns", **{"helmsim.dev/run-seconds": "forever"}), actor="helm"
    )
    results: list[Any] = []

    def probe() -> Any:
        yield sim.sleep(1)
        results.append((yield from connect(sim, pod, Need("fqdn", "db.ops", 5432), 30)))
        sim.store.create(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "db", "namespace": "ops"},
                "spec": {"clusterIP": "10.96.0.50", "selector": {"app": "db"}, "ports": [{"port": 5432}]},
            },
            actor="helm",
        )
        yield sim.sleep(1)
        results.append((yield from connect(sim, pod, Need("fqdn", "db.ops", 5432), 30)))

    sim.process(probe())
    sim.run(until=10)
    before, after = results
    assert before.ok  # no such Service: an outside name, which kind's egress allows
    assert not after.ok and after.error == "dial tcp 10.96.0.50:5432: connect: connection refused"
