"""The scheduler: node choice, FailedScheduling messages and times, volume binding."""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.cluster.controllers.scheduler import (
    SELECTED_NODE,
    Scheduler,
    fit_error,
    node_selector_term_matches,
    tolerates,
)
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import Taint, load_profile, profile_from_mapping
from helmsim.kstatus import compute

EKS_NODES = ["ip-10-0-1-10.ec2.internal", "ip-10-0-2-10.ec2.internal", "ip-10-0-3-10.ec2.internal"]


def _sim(profile: Any = "kind") -> Simulation:
    sim = Simulation(load_profile(profile) if isinstance(profile, str) else profile)
    Scheduler(sim)
    return sim


def _pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "app:1"}], **spec},
    }


def _claim(name: str = "data", cls: str | None = "standard") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
    }
    if cls is not None:
        spec["storageClassName"] = cls
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def _with_claim(name: str = "p", claim: str = "data") -> dict[str, Any]:
    return _pod(name, volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": claim}}])


def _cond(sim: Simulation, name: str = "p") -> dict[str, Any]:
    pod = sim.store.get("Pod", "ns", name)
    return next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")  # type: ignore[index]


def _failed(sim: Simulation) -> list[tuple[float, str]]:
    return [
        (round(e.time, 3), e.message)
        for e in sim.trace.find(what="event", reason="FailedScheduling")
    ]


def test_binds_after_the_scheduling_latency() -> None:
    sim = _sim()
    sim.store.create(_pod(), actor="helm")
    sim.run(until=0.09)
    pod = sim.store.get("Pod", "ns", "p")
    assert pod["status"]["phase"] == "Pending" and "nodeName" not in pod["spec"]
    sim.run(until=1)
    pod = sim.store.get("Pod", "ns", "p")
    assert pod["spec"]["nodeName"] == "kind-control-plane"
    assert _cond(sim) == {
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": "2026-01-01T00:00:00.100Z",
    }
    ev = sim.trace.find(what="event", reason="Scheduled")[0]
    assert (
        ev.time == pytest.approx(0.1)
        and ev.message == "Successfully assigned ns/p to kind-control-plane"
    )
    assert ev.actor == "default-scheduler" and ev.data["type"] == "Normal"


def test_spreads_by_pod_count_then_name() -> None:
    sim = _sim("eks-gp3")
    for i in range(4):
        sim.store.create(_pod(f"p{i}"), actor="helm")
    sim.run(until=1)
    assert [sim.store.get("Pod", "ns", f"p{i}")["spec"]["nodeName"] for i in range(4)] == [
        *EKS_NODES,
        EKS_NODES[0],
    ]


def test_node_selector_and_affinity_filter_nodes() -> None:
    sim = _sim("eks-gp3")
    sim.store.create(
        _pod("zone-b", nodeSelector={"topology.kubernetes.io/zone": "us-east-1b"}), actor="helm"
    )
    term = {
        "matchExpressions": [
            {
                "key": "topology.kubernetes.io/zone",
                "operator": "NotIn",
                "values": ["us-east-1a", "us-east-1b"],
            }
        ]
    }
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    sim.store.create(_pod("not-ab", affinity=affinity), actor="helm")
    sim.run(until=1)
    assert sim.store.get("Pod", "ns", "zone-b")["spec"]["nodeName"] == EKS_NODES[1]
    assert sim.store.get("Pod", "ns", "not-ab")["spec"]["nodeName"] == EKS_NODES[2]


def test_no_fitting_node_is_unschedulable_with_the_scheduler_message() -> None:
    sim = _sim("eks-gp3")
    sim.store.create(_pod(nodeSelector={"disktype": "ssd"}), actor="helm")
    sim.run(until=20)
    msg = (
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert _failed(sim) == [(0.1, msg)]
    assert _cond(sim) == {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": msg,
        "lastProbeTime": None,
        "lastTransitionTime": "2026-01-01T00:00:00.100Z",
    }
    pod = sim.store.get("Pod", "ns", "p")
    # kstatus: Unschedulable for more than 15 s after creation is Failed
    assert compute(pod, now=sim.datetime(10)).status.value == "InProgress"
    assert compute(pod, now=sim.datetime(20)).status.value == "Failed"
    sim.run(until=400)  # retried after the 5 min unschedulable flush, same message
    assert [t for t, _ in _failed(sim)] == [0.1, 300.1]
    assert _cond(sim)["lastTransitionTime"] == "2026-01-01T00:00:00.100Z"


def test_untolerated_taint_and_toleration() -> None:
    prof = profile_from_mapping(
        {
            "extends": "kind",
            "nodes": [
                {
                    "name": "cp",
                    "taints": [
                        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
                    ],
                }
            ],
        },
        source="test",
    )
    sim = _sim(prof)
    sim.store.create(_pod("plain"), actor="helm")
    tol = [
        {
            "key": "node-role.kubernetes.io/control-plane",
            "operator": "Exists",
            "effect": "NoSchedule",
        }
    ]
    sim.store.create(_pod("tolerant", tolerations=tol), actor="helm")
    sim.run(until=1)
    assert _failed(sim)[0][1].startswith(
        "0/1 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }."
    )
    assert sim.store.get("Pod", "ns", "tolerant")["spec"]["nodeName"] == "cp"


def test_missing_claim_then_created_and_bound() -> None:
    sim = _sim()
    sim.store.create(_with_claim(), actor="helm")
    sim.run(until=5)
    assert _failed(sim) == [
        (
            0.1,
            (
                '0/1 nodes are available: persistentvolumeclaim "data" not found. preemption: '
                "0/1 nodes are available: 1 Preemption is not helpful for scheduling."
            ),
        )
    ]
    bound = _claim(cls="")
    bound["status"] = {"phase": "Bound"}
    sim.store.create(bound, actor="helm")
    sim.run(until=10)
    assert sim.store.get("Pod", "ns", "p")["spec"]["nodeName"] == "kind-control-plane"
    assert sim.trace.find(what="scheduled")[0].time == pytest.approx(5.1)


def test_wait_for_first_consumer_claim_gets_the_selected_node_and_the_pod_waits() -> None:
    sim = _sim()
    sim.store.create(_claim(cls="standard"), actor="helm")
    sim.store.create(_with_claim(), actor="helm")
    sim.run(until=3)
    pvc = sim.store.get("PersistentVolumeClaim", "ns", "data")
    assert pvc["metadata"]["annotations"] == {SELECTED_NODE: "kind-control-plane"}
    sel = sim.trace.find(what="selected-node")[0]
    assert sel.time == pytest.approx(0.1) and sel.data["pod"] == "Pod/ns/p"
    assert "nodeName" not in sim.store.get("Pod", "ns", "p")["spec"]  # PreBind waits for the claim
    # the storage helper's provisioner binds the claim; here the test does it
    sim.after(
        0,
        lambda: sim.store.update_status(
            "PersistentVolumeClaim",
            "ns",
            "data",
            {"phase": "Bound"},
            actor="persistentvolume-controller",
        ),
    )
    sim.run(until=4)
    assert sim.store.get("Pod", "ns", "p")["spec"]["nodeName"] == "kind-control-plane"
    assert sim.trace.find(what="scheduled")[0].time == pytest.approx(3.0)
    assert _failed(sim) == []


def test_default_class_claim_without_class_name_is_delayed_too() -> None:
    sim = _sim("eks-gp3")
    sim.store.create(_claim(cls=None), actor="helm")
    sim.store.create(_with_claim(), actor="helm")
    sim.run(until=1)
    annotations = sim.store.get("PersistentVolumeClaim", "ns", "data")["metadata"]["annotations"]
    assert annotations[SELECTED_NODE] == EKS_NODES[0]


def test_unbound_immediate_claim_keeps_the_pod_pending() -> None:
    prof = profile_from_mapping(
        {
            "extends": "kind",
            "storageClasses": [{"name": "fast", "provisioner": "x", "default": True}],
        },
        source="t",
    )
    sim = _sim(prof)
    sim.store.create(_claim(cls="fast"), actor="helm")
    sim.store.create(_with_claim(), actor="helm")
    sim.run(until=2)
    assert _failed(sim) == [
        (
            0.1,
            (
                "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
                "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
            ),
        )
    ]
    assert "annotations" not in sim.store.get("PersistentVolumeClaim", "ns", "data")["metadata"]
    sim.store.update_status(
        "PersistentVolumeClaim", "ns", "data", {"phase": "Bound"}, actor="pv-controller"
    )
    sim.run(until=3)
    assert sim.store.get("Pod", "ns", "p")["spec"]["nodeName"] == "kind-control-plane"


def test_wffc_bind_timeout_reports_and_retries() -> None:
    sim = _sim()
    sim.store.create(_claim(), actor="helm")
    sim.store.create(_with_claim(), actor="helm")
    sim.run(until=700)
    assert _failed(sim)[0] == (
        600.1,
        'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded',
    )


@pytest.mark.parametrize(
    ("expr", "labels", "ok"),
    [
        ({"key": "a", "operator": "In", "values": ["1"]}, {"a": "1"}, True),
        ({"key": "a", "operator": "In", "values": ["1"]}, {}, False),
        ({"key": "a", "operator": "NotIn", "values": ["1"]}, {}, True),
        ({"key": "a", "operator": "Exists"}, {"a": ""}, True),
        ({"key": "a", "operator": "DoesNotExist"}, {"a": ""}, False),
        ({"key": "a", "operator": "Gt", "values": ["3"]}, {"a": "4"}, True),
        ({"key": "a", "operator": "Lt", "values": ["3"]}, {"a": "4"}, False),
        ({"key": "a", "operator": "Gt", "values": ["3"]}, {"a": "x"}, False),
    ],
)
def test_node_selector_requirements(expr: dict[str, Any], labels: dict[str, str], ok: bool) -> None:
    assert node_selector_term_matches({"matchExpressions": [expr]}, labels, "n") is ok


def test_empty_term_matches_nothing_and_match_fields_use_the_name() -> None:
    assert node_selector_term_matches({}, {"a": "1"}, "n") is False
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
    assert node_selector_term_matches(term, {}, "n") and not node_selector_term_matches(
        term, {}, "m"
    )


@pytest.mark.parametrize(
    ("tol", "ok"),
    [
        ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "v"}, True),
        ({"key": "k", "value": "w"}, False),
        ({"key": "k", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, False),
    ],
)
def test_tolerations(tol: dict[str, Any], ok: bool) -> None:
    assert tolerates([tol], Taint(key="k", value="v", effect="NoSchedule")) is ok


def test_fit_error_histogram_is_sorted() -> None:
    msg = fit_error(
        3,
        reasons={
            "node(s) had untolerated taint {a: }": 1,
            "node(s) didn't match Pod's node affinity/selector": 2,
        },
    )
    assert msg.startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint {a: }, "
        "2 node(s) didn't match Pod's node affinity/selector. preemption:"
    )
