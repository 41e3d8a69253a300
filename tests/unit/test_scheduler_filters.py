"""The scheduler's filters in a running simulation: FailedScheduling texts, retries, allocatable.

Texts: pkg/scheduler/framework/types.go FitError, plugins/interpodaffinity, podtopologyspread,
noderesources, nodeunschedulable; preemption: plugins/defaultpreemption. Timing: the 5-minute
unschedulable flush and the 1 s → 10 s per-pod back-off of pkg/scheduler/internal/queue.
"""

from __future__ import annotations

from typing import Any

from helmsim.cluster.controllers.scheduler import Scheduler, backoff_after
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile, profile_from_mapping
from helmsim.kube.pods import kubectl_columns

EKS = ["ip-10-0-1-10.ec2.internal", "ip-10-0-2-10.ec2.internal", "ip-10-0-3-10.ec2.internal"]
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _sim(profile: Any = "kind") -> Simulation:
    sim = Simulation(load_profile(profile) if isinstance(profile, str) else profile)
    Scheduler(sim)
    return sim


def _anti(key: str = HOSTNAME) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": labels or {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "app:1"}], **spec},
    }


def _failed(sim: Simulation, name: str) -> list[tuple[float, str]]:
    return [
        (round(e.time, 3), e.message)
        for e in sim.trace.find(what="event", reason="FailedScheduling")
        if e.obj == f"Pod/ns/{name}"
    ]


def _node(sim: Simulation, name: str) -> str | None:
    pod = sim.store.get("Pod", "ns", name)
    assert pod is not None
    node = pod["spec"].get("nodeName")
    return str(node) if node else None


ANTI_ONE_NODE = (
    "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. preemption: "
    "0/1 nodes are available: 1 No preemption victims found for incoming pod."
)


def test_required_anti_affinity_on_one_node_leaves_the_second_replica_pending() -> None:
    sim = _sim()
    for name in ("web-0", "web-1"):
        sim.store.create(_pod(name, affinity=_anti()), actor="replicaset-controller")
    sim.run(until=400)
    assert _node(sim, "web-0") == "kind-control-plane"
    assert _node(sim, "web-1") is None
    # the 5-minute flush retries it, with the same message
    assert _failed(sim, "web-1") == [(0.1, ANTI_ONE_NODE), (300.1, ANTI_ONE_NODE)]
    pod = sim.store.get("Pod", "ns", "web-1")
    assert pod is not None
    assert kubectl_columns(pod, sim.datetime()).status == "Pending"


def test_deleting_the_blocking_pod_reschedules_at_once_within_the_back_off() -> None:
    sim = _sim()
    for name in ("web-0", "web-1"):
        sim.store.create(_pod(name, affinity=_anti()), actor="replicaset-controller")
    sim.after(0.5, lambda: sim.store.delete("Pod", "ns", "web-0", actor="helm", grace=0.0))
    sim.run(until=5)
    # failed at 0.1 (1st attempt: 1 s back-off), the assigned pod went at 0.5: retried at 1.1 + 0.1
    requeued = [round(e.time, 3) for e in sim.trace.find(what="requeued")]
    assert requeued == [0.5]
    bound = [round(e.time, 3) for e in sim.trace.find(what="scheduled") if e.obj == "Pod/ns/web-1"]
    assert bound == [1.2]


def test_scheduler_back_off_doubles_to_ten_seconds() -> None:
    assert [backoff_after(n) for n in range(6)] == [0.0, 1.0, 2.0, 4.0, 8.0, 10.0]


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    sim = _sim()
    sim.store.create(_pod("guard", affinity=_anti()), actor="helm")
    sim.store.create(_pod("plain", labels={"app": "web"}), actor="helm")
    sim.run(until=1)
    assert _failed(sim, "plain") == [
        (
            0.1,
            (
                "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules. "
                "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
            ),
        )
    ]


def test_zone_anti_affinity_spreads_three_replicas_and_refuses_the_fourth() -> None:
    sim = _sim("eks-gp3")
    for i in range(4):
        sim.store.create(_pod(f"web-{i}", affinity=_anti(ZONE)), actor="replicaset-controller")
    sim.run(until=1)
    assert sorted(str(_node(sim, f"web-{i}")) for i in range(3)) == EKS
    assert _failed(sim, "web-3") == [
        (
            0.1,
            (
                "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: "
                "0/3 nodes are available: 3 No preemption victims found for incoming pod."
            ),
        )
    ]


def test_required_pod_affinity_waits_for_its_peer_and_follows_it() -> None:
    sim = _sim("eks-gp3")
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ZONE}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    sim.store.create(_pod("cache", labels={"app": "cache"}, affinity=affinity), actor="helm")
    sim.after(
        3,
        lambda: sim.store.create(
            _pod("db", labels={"app": "db"}, nodeSelector={ZONE: "us-east-1c"}), actor="helm"
        ),
    )
    sim.run(until=10)
    assert _failed(sim, "cache") == [
        (
            0.1,
            (
                "0/3 nodes are available: 3 node(s) didn't match pod affinity rules. preemption: "
                "0/3 nodes are available: 3 Preemption is not helpful for scheduling."
            ),
        )
    ]
    # the db pod's binding at 3.1 moves it; its 1 s back-off is over, so it follows at once
    assert _node(sim, "db") == EKS[2]
    assert _node(sim, "cache") == EKS[2]


def test_self_affinity_lets_the_first_pod_of_a_group_schedule() -> None:
    sim = _sim()
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    sim.store.create(_pod("web-0", affinity=affinity), actor="helm")
    sim.run(until=1)
    assert _node(sim, "web-0") == "kind-control-plane"


def _spread(max_skew: int = 1) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": max_skew,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]


def test_topology_spread_do_not_schedule_with_two_zones_reachable() -> None:
    sim = _sim("eks-gp3")
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": ZONE, "operator": "In", "values": ["us-east-1a", "us-east-1b"]}
                        ]
                    }
                ]
            }
        }
    }
    # a replica already in 1a; nodes of 1c are not counted (nodeAffinityPolicy Honor)
    sim.store.create(_pod("old", nodeName=EKS[0]), actor="helm")
    sim.store.create(
        _pod("new", topologySpreadConstraints=_spread(), affinity=affinity), actor="helm"
    )
    sim.run(until=1)
    assert _node(sim, "new") == EKS[1]


def test_topology_spread_missing_label_is_unresolvable() -> None:
    sim = _sim()
    spread = [{**_spread()[0], "topologyKey": "rack"}]
    sim.store.create(_pod("p", topologySpreadConstraints=spread), actor="helm")
    sim.run(until=1)
    assert _failed(sim, "p") == [
        (
            0.1,
            (
                "0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints "
                "(missing required label). preemption: 0/1 nodes are available: 1 Preemption is not "
                "helpful for scheduling."
            ),
        )
    ]


def _small(**extra: Any) -> Any:
    node = {"name": "n1", "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "3"}, **extra}
    return profile_from_mapping({"extends": "kind", "nodes": [node]}, source="test")


def _requests(cpu: str, memory: str = "64Mi") -> list[dict[str, Any]]:
    return [
        {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    ]


def test_requests_against_allocatable_insufficient_and_unresolvable() -> None:
    sim = _sim(_small())
    sim.store.create(_pod("a", labels={"x": "a"}, containers=_requests("1500m")), actor="helm")
    sim.store.create(_pod("b", labels={"x": "b"}, containers=_requests("1")), actor="helm")
    sim.store.create(
        _pod("huge", labels={"x": "c"}, containers=_requests("3", "8Gi")), actor="helm"
    )
    sim.run(until=1)
    assert _node(sim, "a") == "n1"
    assert _failed(sim, "b") == [
        (
            0.1,
            (
                "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
                "1 No preemption victims found for incoming pod."
            ),
        )
    ]
    # more than the node has at all: preemption cannot help
    assert _failed(sim, "huge") == [
        (
            0.1,
            (
                "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: 0/1 "
                "nodes are available: 1 Preemption is not helpful for scheduling."
            ),
        )
    ]
    # the running pod finishes: its requests are freed and b is retried
    pod = sim.store.get("Pod", "ns", "a")
    assert pod is not None
    sim.store.update_status(
        "Pod", "ns", "a", {**pod["status"], "phase": "Succeeded"}, actor="kubelet"
    )
    sim.run(until=3)
    assert _node(sim, "b") == "n1"


def test_pod_count_limit_and_a_lower_priority_victim_is_not_preempted() -> None:
    sim = _sim(_small())
    for i in range(3):
        sim.store.create(_pod(f"low-{i}", labels={"i": str(i)}, priority=0), actor="helm")
    sim.store.create(_pod("high", labels={"i": "h"}, priority=1000), actor="helm")
    sim.run(until=1)
    assert _failed(sim, "high") == [(0.1, "0/1 nodes are available: 1 Too many pods.")]
    assumed = [e.message for e in sim.trace.find(what="assumed") if e.obj == "Pod/ns/high"]
    assert assumed and "does not model preemption" in assumed[0]


def test_extended_resources_the_node_lacks_are_insufficient() -> None:
    sim = _sim()
    gpu = [{"name": "c", "image": "cuda:12", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
    sim.store.create(_pod("train", containers=gpu), actor="helm")
    sim.run(until=1)
    assert _failed(sim, "train")[0][1].startswith(
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    )


def test_profile_without_allocatable_is_said_once() -> None:
    bare = profile_from_mapping({"extends": "kind", "nodes": [{"name": "n1"}]}, source="bare")
    sim = _sim(bare)
    for i in range(2):
        sim.store.create(
            _pod(f"p{i}", labels={"i": str(i)}, containers=_requests("100")), actor="helm"
        )
    sim.run(until=1)
    notes = [e.message for e in sim.trace.find(what="assumed")]
    assert notes == [
        (
            "profile bare states no allocatable for n1: resource requests were not "
            "checked against node capacity"
        )
    ]
    assert _node(sim, "p0") == _node(sim, "p1") == "n1"


def test_cordoned_node_and_filter_order_taints_first() -> None:
    prof = profile_from_mapping(
        {
            "extends": "kind",
            "nodes": [
                {
                    "name": "cp",
                    "taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}],
                },
                {"name": "w1"},
            ],
        },
        source="test",
    )
    sim = _sim(prof)
    for node in prof.nodes:
        meta = {"name": node.name, "labels": dict(node.labels)}
        spec = {"taints": [t.model_dump() for t in node.taints]}
        sim.store.create(
            {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec}, actor="kubelet"
        )
    cordoned = sim.store.get("Node", None, "w1")
    assert cordoned is not None
    sim.store.update({**cordoned, "spec": {"unschedulable": True}}, actor="kubectl")
    sim.store.create(_pod("p", nodeSelector={"disk": "ssd"}), actor="helm")
    sim.run(until=1)
    # cp fails TaintToleration before NodeAffinity; w1 fails NodeUnschedulable first
    assert _failed(sim, "p") == [
        (
            0.1,
            (
                "0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, 1 node(s) "
                "were unschedulable. preemption: 0/2 nodes are available: 2 Preemption is not helpful "
                "for scheduling."
            ),
        )
    ]
    # uncordoning and labelling it (a Node update) moves the pod again, and it fits
    live = sim.store.get("Node", None, "w1")
    assert live is not None
    sim.store.update(
        {
            **live,
            "spec": {},
            "metadata": {**live["metadata"], "labels": {HOSTNAME: "w1", "disk": "ssd"}},
        },
        actor="kubectl",
    )
    sim.run(until=3)
    assert _node(sim, "p") == "w1"


def _full_node() -> Any:
    """kind with one node that holds two pods."""
    return profile_from_mapping(
        {
            "extends": "kind",
            "nodes": [{"name": "kind-control-plane", "internalIP": "172.18.0.2", "allocatable": {"pods": "2"}}],
        },
        source="test",
    )


def test_preemption_dry_run_sees_the_lower_priority_pods_on_the_node() -> None:
    # a pod of higher priority finds the node full of lower-priority pods: evicting them would
    # make room, which helmsim says it does not model; with equal priorities there are no victims
    # (default_preemption.go SelectVictimsOnNode: only lower-priority pods are victims)
    for incoming, victims in ((1000, True), (0, False)):
        sim = _sim(_full_node())
        for name in ("low-0", "low-1"):
            sim.store.create(_pod(name, labels={"app": "low"}), actor="replicaset-controller")
        sim.after(1.0, lambda p=incoming: sim.store.create(_pod("high", labels={"app": "high"}, priority=p), actor="helm"))
        sim.run(until=2)
        assert _node(sim, "low-0") and _node(sim, "low-1") and _node(sim, "high") is None
        assumed = [e.message for e in sim.trace.find(what="assumed") if e.obj == "Pod/ns/high"]
        message = _failed(sim, "high")[0][1]
        if victims:
            assert assumed and "evicting lower-priority pods would make room" in assumed[0]
            assert "No preemption victims" not in message
        else:
            assert not assumed
            assert message.endswith("1 No preemption victims found for incoming pod."), message


# --- which cluster events requeue an unschedulable pod ------------------------------------------
# Derived from the EventsToRegister of each Filter plugin (kubernetes pkg/scheduler/framework/plugins:
# noderesources/fit.go registers Pod Delete and Node Add/Update, not Pod Add; interpodaffinity and
# podtopologyspread register every assigned-pod event) and scheduling_queue.go isPodWorthRequeuing.
REQUEUE_TABLE = [
    # (plugins that rejected the pod, event, requeued)
    ({"NodeResourcesFit"}, "AssignedPodAdd", False),
    ({"NodeResourcesFit"}, "AssignedPodUpdateLabel", False),
    ({"NodeResourcesFit"}, "AssignedPodDelete", True),
    ({"NodeResourcesFit"}, "NodeAddOrUpdate", True),
    ({"InterPodAffinity"}, "AssignedPodAdd", True),
    ({"PodTopologySpread"}, "AssignedPodUpdateLabel", True),
    ({"NodeAffinity"}, "AssignedPodDelete", False),
    ({"TaintToleration"}, "AssignedPodAdd", False),
    ({"NodeUnschedulable"}, "NodeAddOrUpdate", True),
    ({"NodePorts"}, "AssignedPodAdd", False),  # nodeports: Pod Delete, Node Add/Update
    ({"NodePorts"}, "AssignedPodDelete", True),
    ({"NodeResourcesFit", "InterPodAffinity"}, "AssignedPodAdd", True),  # one plugin is enough
    (set(), "AssignedPodAdd", True),  # no plugin recorded: every event
]


def test_requeue_table() -> None:
    from helmsim.cluster.controllers.scheduler import worth_requeuing

    for plugins, event, expected in REQUEUE_TABLE:
        assert worth_requeuing(frozenset(plugins), event) is expected, (plugins, event)


def test_a_pod_that_did_not_fit_waits_for_a_pod_to_go_not_for_one_to_be_placed() -> None:
    sim = _sim(_full_node())
    for name in ("a", "b", "c"):
        sim.store.create(_pod(name, labels={"app": name}), actor="replicaset-controller")
    # another pod placed elsewhere cannot help "c" (Too many pods): a pod gone can
    sim.after(20, lambda: sim.store.delete("Pod", "ns", "a", actor="helm", grace=0.0))
    sim.run(until=10)
    assert _node(sim, "c") is None and [t for t, _ in _failed(sim, "c")] == [0.1]
    relabel = sim.store.get("Pod", "ns", "b")
    assert relabel is not None
    sim.store.update({**relabel, "metadata": {**relabel["metadata"], "labels": {"app": "b2"}}}, actor="helm")
    sim.run(until=15)
    assert [e for e in sim.trace.find(what="requeued") if e.obj == "Pod/ns/c"] == []  # not by a relabel
    sim.run(until=25)
    requeued = [(round(e.time, 3), e.message) for e in sim.trace.find(what="requeued") if e.obj == "Pod/ns/c"]
    assert requeued == [(20.0, "assigned pod ns/a gone: retrying in 0s")]
    assert _node(sim, "c") == "kind-control-plane"


def test_a_pod_that_needs_a_peer_is_retried_when_the_peer_is_placed() -> None:
    sim = _sim()
    need = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOSTNAME}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [need]}}
    sim.store.create(_pod("app", labels={"app": "app"}, affinity=affinity), actor="helm")
    sim.after(5, lambda: sim.store.create(_pod("db", labels={"app": "db"}), actor="helm"))
    sim.run(until=10)
    assert [t for t, _ in _failed(sim, "app")] == [0.1]
    assert [e.message for e in sim.trace.find(what="requeued") if e.obj == "Pod/ns/app"] == [
        "assigned pod ns/db added: retrying in 0s"
    ]
    assert _node(sim, "app") == "kind-control-plane"


# --- host ports (pkg/scheduler/framework/plugins/nodeports/node_ports.go) -----------------------------
NODE_PORTS_ONE_NODE = (
    "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. preemption: "
    "0/1 nodes are available: 1 No preemption victims found for incoming pod."
)


def _ported(name: str, *ports: dict[str, Any], host_network: bool = False) -> dict[str, Any]:
    pod = _pod(name)
    pod["spec"]["containers"][0]["ports"] = list(ports)
    if host_network:
        pod["spec"]["hostNetwork"] = True
    return pod


# (the assigned pod's ports, the incoming pod's ports, whether it fits) — derived from the cases of
# nodeports/node_ports_test.go TestNodePorts and framework/types.go HostPortInfo.CheckConflict
HOST_PORT_TABLE = [
    ([{"containerPort": 80, "hostPort": 8080}], [{"containerPort": 80, "hostPort": 8080}], False),
    ([{"containerPort": 80, "hostPort": 8080}], [{"containerPort": 80, "hostPort": 8081}], True),
    ([{"containerPort": 80, "hostPort": 8080, "protocol": "UDP"}], [{"containerPort": 80, "hostPort": 8080}], True),
    ([{"containerPort": 80, "hostPort": 8080, "hostIP": "127.0.0.1"}], [{"containerPort": 80, "hostPort": 8080, "hostIP": "127.0.0.2"}], True),
    ([{"containerPort": 80, "hostPort": 8080, "hostIP": "127.0.0.1"}], [{"containerPort": 80, "hostPort": 8080}], False),  # 0.0.0.0 takes every IP
    ([{"containerPort": 8080}], [{"containerPort": 8080}], True),  # no hostPort: nothing on the node
]


def test_host_port_table() -> None:
    for existing, incoming, fits in HOST_PORT_TABLE:
        sim = _sim()
        sim.store.create(_ported("web-0", *existing), actor="replicaset-controller")
        sim.store.create(_ported("web-1", *incoming), actor="replicaset-controller")
        sim.run(until=5)
        assert _node(sim, "web-0") == "kind-control-plane"
        assert (_node(sim, "web-1") is not None) is fits, (existing, incoming)
        if not fits:
            assert _failed(sim, "web-1")[0][1] == NODE_PORTS_ONE_NODE


def test_host_network_takes_the_container_ports_and_a_pod_gone_frees_them() -> None:
    # prometheus-community prometheus-blackbox-exporter with hostNetwork=true, replicas=2 on kind:
    # the API server defaults hostPort to containerPort (pkg/apis/core/v1/defaults.go)
    sim = _sim()
    for name in ("web-0", "web-1"):
        sim.store.create(_ported(name, {"containerPort": 9115}, host_network=True), actor="replicaset-controller")
    sim.after(0.5, lambda: sim.store.delete("Pod", "ns", "web-0", actor="helm", grace=0.0))
    sim.run(until=5)
    assert _failed(sim, "web-1")[0] == (0.1, NODE_PORTS_ONE_NODE)
    bound = [round(e.time, 3) for e in sim.trace.find(what="scheduled") if e.obj == "Pod/ns/web-1"]
    assert bound == [1.2]  # requeued by the delete (NodePorts registers Pod Delete), after its back-off


def test_three_nodes_take_three_host_network_replicas_and_refuse_a_fourth() -> None:
    sim = _sim("eks-gp3")
    for i in range(4):
        sim.store.create(_ported(f"web-{i}", {"containerPort": 9100}, host_network=True), actor="replicaset-controller")
    sim.run(until=5)
    nodes = [_node(sim, f"web-{i}") for i in range(4)]
    assert sorted(n for n in nodes if n) == EKS and nodes.count(None) == 1
