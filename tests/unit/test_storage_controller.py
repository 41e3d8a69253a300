"""The PV controller and the external provisioners: event sequences, times, and bindings.

Latencies are the profiles' nominal values: kind controllerSync 0.05 s, volumeProvisioning
U(1, 4) → 2.5 s; eks-gp3 volumeProvisioning lognormal median 4 s. The PV controller resyncs
every 15 s (kube-controller-manager --pvclaimbinder-sync-period).
"""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.cluster.admission import admit
from helmsim.cluster.controllers.pvbinder import external_provisioning_message
from helmsim.cluster.controllers.storage import (
    ANN_DEFAULT_CLASS,
    ANN_SELECTED_NODE,
    default_class,
    install_storage,
    seed_storage,
    with_annotations,
)
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile, profile_from_mapping
from helmsim.kstatus import Status, compute

PVC = "PersistentVolumeClaim"
NS = "model-serving"
WFFC_MSG = "waiting for first consumer to be created before binding"


def _profile(base: str, classes: list[dict[str, Any]] | None = None) -> Any:
    if classes is None:
        return load_profile(base)
    return profile_from_mapping(
        {"extends": base, "name": "test", "storageClasses": classes}, source="test"
    )


def _sim(base: str = "kind", classes: list[dict[str, Any]] | None = None) -> Simulation:
    sim = Simulation(_profile(base, classes))
    install_storage(sim)
    sim.store.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, actor="helm"
    )
    return sim


def _claim(
    name: str = "hf-cache",
    *,
    size: str = "500Gi",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    cls: str | None = None,
    set_class: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
    }
    if set_class:
        spec["storageClassName"] = cls
    return {
        "apiVersion": "v1",
        "kind": PVC,
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


def _create(sim: Simulation, obj: dict[str, Any]) -> dict[str, Any]:
    return sim.store.create(admit(sim, obj), actor="helm")


def _select_node(sim: Simulation, name: str, node: str) -> None:
    """What the scheduler does for a pod mounting a WaitForFirstConsumer claim."""
    claim = sim.store.get(PVC, NS, name)
    assert claim is not None
    sim.store.update(with_annotations(claim, **{ANN_SELECTED_NODE: node}), actor="scheduler")


def _events(sim: Simulation, name: str = "hf-cache") -> list[tuple[float, str, str, str]]:
    return [
        (round(e.time, 3), e.data["type"], e.data["reason"], e.message)
        for e in sim.trace.find(what="event", obj=f"{PVC}/{NS}/{name}")
    ]


def _reasons(sim: Simulation, name: str = "hf-cache") -> list[tuple[float, str]]:
    return [(t, r) for t, _, r, _ in _events(sim, name)]


def _live(sim: Simulation, name: str = "hf-cache") -> dict[str, Any]:
    claim = sim.store.get(PVC, NS, name)
    assert claim is not None
    return claim


# --- seed 2: WaitForFirstConsumer ---------------------------------------------------------------


def test_wffc_claim_without_consumer_stays_pending_with_repeated_event() -> None:
    sim = _sim("kind")
    _create(sim, _claim())
    sim.run(until=300.001)
    events = _events(sim)
    # one event at the first sync, then one per 15 s resync
    assert [t for t, *_ in events] == [0.05] + [15.0 * k for k in range(1, 21)]
    assert {(ty, r, m) for _, ty, r, m in events} == {("Normal", "WaitForFirstConsumer", WFFC_MSG)}
    claim = _live(sim)
    assert claim["spec"]["storageClassName"] == "standard"  # DefaultStorageClass admission
    assert claim["status"] == {"phase": "Pending"}
    assert sim.store.list("PersistentVolume") == []
    status = compute(claim)
    assert status.status is Status.IN_PROGRESS
    assert status.message == "PVC is not Bound. phase: Pending"


def test_selected_node_provisions_then_binds() -> None:
    sim = _sim("kind")
    created = _create(sim, _claim())
    sim.after(20.0, _select_node, sim, "hf-cache", "kind-control-plane")
    sim.run(until=60)
    after = [(t, r) for t, r in _reasons(sim) if t >= 20]
    assert after == [
        (20.05, "ExternalProvisioning"),
        (20.1, "Provisioning"),
        (22.6, "ProvisioningSucceeded"),
    ]
    msgs = {r: m for t, _, r, m in _events(sim) if t >= 20}
    uid = created["metadata"]["uid"]
    assert msgs["ExternalProvisioning"] == external_provisioning_message("rancher.io/local-path")
    assert (
        msgs["Provisioning"]
        == f'External provisioner is provisioning volume for claim "{NS}/hf-cache"'
    )
    assert msgs["ProvisioningSucceeded"] == f"Successfully provisioned volume pvc-{uid}"
    sources = {e.data["reason"]: e.actor for e in sim.trace.find(what="event") if e.time >= 20}
    assert sources["ExternalProvisioning"] == "persistentvolume-controller"
    assert sources["Provisioning"].startswith("rancher.io/local-path_local-path-provisioner-")
    claim = _live(sim)
    assert claim["status"] == {
        "phase": "Bound",
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "500Gi"},
    }
    assert claim["spec"]["volumeName"] == f"pvc-{uid}"
    bound = sim.trace.find(what="status", obj=f"{PVC}/{NS}/hf-cache")[-1]
    assert bound.time == pytest.approx(22.7)
    assert compute(claim).status is Status.CURRENT
    pv = sim.store.get("PersistentVolume", "", f"pvc-{uid}")
    assert pv is not None and pv["status"]["phase"] == "Bound"
    assert pv["spec"]["claimRef"]["uid"] == uid and pv["spec"]["storageClassName"] == "standard"
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {
        "key": "kubernetes.io/hostname",
        "operator": "In",
        "values": ["kind-control-plane"],
    }
    # the binding traces back to the scheduler's write
    chain = sim.trace.chain(bound.id)
    assert chain[0].actor == "scheduler"
    # no more WaitForFirstConsumer once the node is selected, and the resync stopped
    assert all(r != "WaitForFirstConsumer" for t, r in _reasons(sim) if t >= 20)


def test_unscheduled_consumer_pod_turns_the_event_into_wait_for_pod_scheduled() -> None:
    sim = _sim("kind")
    _create(sim, _claim())
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "predictor-0", "namespace": NS},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": "hf-cache"}}],
        },
        "status": {"phase": "Pending"},
    }
    sim.after(10.0, lambda: sim.store.create(pod, actor="helm"))
    sim.run(until=15.001)
    assert _events(sim)[-1] == (
        15.0,
        "Normal",
        "WaitForPodScheduled",
        "waiting for pod predictor-0 to be scheduled",
    )


# --- binding modes and classes ------------------------------------------------------------------

IMMEDIATE_GP3 = {
    "name": "gp3-now",
    "provisioner": "ebs.csi.aws.com",
    "volumeBindingMode": "Immediate",
    "allowVolumeExpansion": True,
}


def test_immediate_class_provisions_at_once_in_whole_gib() -> None:
    sim = _sim("eks-gp3", [IMMEDIATE_GP3])
    _create(sim, _claim(size="1500Mi", cls="gp3-now", set_class=True))
    sim.run(until=30)
    assert _reasons(sim) == [
        (0.05, "ExternalProvisioning"),
        (0.1, "Provisioning"),
        (4.1, "ProvisioningSucceeded"),
    ]
    claim = _live(sim)
    assert claim["status"]["phase"] == "Bound" and claim["status"]["capacity"] == {"storage": "2Gi"}
    pv = sim.store.get("PersistentVolume", "", claim["spec"]["volumeName"])
    assert pv is not None and pv["spec"]["csi"]["driver"] == "ebs.csi.aws.com"
    term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {
        "key": "topology.kubernetes.io/zone",
        "operator": "In",
        "values": ["us-east-1a"],
    }


def test_local_path_cannot_provision_immediate_claims() -> None:
    sim = _sim(
        "kind", [{"name": "local-now", "provisioner": "rancher.io/local-path", "default": True}]
    )
    _create(sim, _claim())
    sim.run(until=50)
    failed = [(t, m) for t, ty, r, m in _events(sim) if r == "ProvisioningFailed"]
    # the provisioner's workqueue retries after 15 s, then 30 s
    assert failed == [(t, "configuration error, no node was specified") for t in (0.1, 15.1, 45.1)]
    assert all(ty == "Warning" for _, ty, r, _ in _events(sim) if r == "ProvisioningFailed")
    assert _live(sim)["status"]["phase"] == "Pending"


def test_local_path_refuses_read_write_many() -> None:
    sim = _sim("kind")
    _create(sim, _claim(modes=("ReadWriteMany",)))
    sim.after(5.0, _select_node, sim, "hf-cache", "kind-control-plane")
    sim.run(until=6)
    assert _events(sim)[-1][1:] == (
        "Warning",
        "ProvisioningFailed",
        "NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes",
    )


def test_empty_class_without_volume_fails_binding_on_every_sync() -> None:
    sim = _sim("kind")
    _create(sim, _claim(cls="", set_class=True))
    sim.run(until=30.001)
    assert _live(sim)["spec"]["storageClassName"] == ""  # "" is not defaulted
    assert _events(sim) == [
        (
            t,
            "Normal",
            "FailedBinding",
            "no persistent volumes available for this claim and no storage class is set",
        )
        for t in (0.05, 15.0, 30.0)
    ]


def test_empty_class_binds_to_an_existing_classless_volume() -> None:
    sim = _sim("kind")
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "static-1"},
        "spec": {
            "capacity": {"storage": "1Ti"},
            "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
            "hostPath": {"path": "/data"},
        },
    }
    _create(sim, pv)
    sim.after(1.0, _create, sim, _claim(cls="", set_class=True))
    sim.run(until=5)
    claim = _live(sim)
    assert claim["spec"]["volumeName"] == "static-1"
    assert claim["status"]["capacity"] == {"storage": "1Ti"} and claim["status"]["phase"] == "Bound"
    assert _events(sim) == []  # binding a volume records no Event
    live_pv = sim.store.get("PersistentVolume", "", "static-1")
    assert live_pv is not None and live_pv["status"]["phase"] == "Bound"
    assert live_pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"


def test_missing_class_fails_provisioning_until_the_class_appears() -> None:
    sim = _sim("eks-gp3")
    _create(sim, _claim(cls="fast", set_class=True))
    fast = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "fast"},
        "provisioner": "ebs.csi.aws.com",
        "volumeBindingMode": "Immediate",
    }
    sim.after(20.0, lambda: sim.store.create(fast, actor="helm"))
    sim.run(until=60)
    events = _events(sim)
    assert events[:2] == [
        (t, "Warning", "ProvisioningFailed", 'storageclass.storage.k8s.io "fast" not found')
        for t in (0.05, 15.0)
    ]
    # the next resync (30 s) finds the class and provisions
    assert [(t, r) for t, _, r, _ in events[2:]] == [
        (30.0, "ExternalProvisioning"),
        (30.05, "Provisioning"),
        (34.05, "ProvisioningSucceeded"),
    ]
    assert _live(sim)["status"]["phase"] == "Bound"


def test_in_tree_class_is_provisioned_by_its_csi_driver() -> None:
    sim = _sim("eks-gp3")
    _create(sim, _claim(size="10Gi", cls="gp2", set_class=True))
    sim.after(3.0, _select_node, sim, "hf-cache", "ip-10-0-2-10.ec2.internal")
    sim.run(until=20)
    msgs = {r: m for _, _, r, m in _events(sim)}
    assert msgs["ExternalProvisioning"] == external_provisioning_message("ebs.csi.aws.com")
    pv = sim.store.get("PersistentVolume", "", _live(sim)["spec"]["volumeName"])
    assert pv is not None
    assert pv["metadata"]["annotations"] == {
        "pv.kubernetes.io/provisioned-by": "kubernetes.io/aws-ebs",
        "pv.kubernetes.io/migrated-to": "ebs.csi.aws.com",
    }
    zone = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0][
        "values"
    ]
    assert zone == ["us-east-1b"]  # the selected node's zone


def test_in_tree_provisioner_without_plugin_fails() -> None:
    sim = _sim(
        "kind", [{"name": "local", "provisioner": "kubernetes.io/no-provisioner", "default": True}]
    )
    _create(sim, _claim())
    sim.run(until=1)
    assert _events(sim) == [
        (
            0.05,
            "Warning",
            "ProvisioningFailed",
            "no volume plugin matched name: kubernetes.io/no-provisioner",
        )
    ]


def test_provisioner_not_running_leaves_the_claim_waiting() -> None:
    sim = _sim("kind")
    sc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "nfs"},
        "provisioner": "nfs.csi.k8s.io",
        "volumeBindingMode": "Immediate",
    }
    sim.store.create(sc, actor="helm")
    _create(sim, _claim(cls="nfs", set_class=True))
    sim.run(until=30.001)
    assert _reasons(sim) == [
        (0.05, "ExternalProvisioning"),
        (15.0, "ExternalProvisioning"),
        (30.0, "ExternalProvisioning"),
    ]
    assert _live(sim)["status"]["phase"] == "Pending"


# --- default class ------------------------------------------------------------------------------


def test_seeded_classes_match_the_profile() -> None:
    sim = Simulation(load_profile("eks-gp3"))
    classes = {c["metadata"]["name"]: c for c in seed_storage(sim)}
    assert set(classes) == {"gp2", "gp3"}
    assert classes["gp3"]["metadata"]["annotations"] == {ANN_DEFAULT_CLASS: "true"}
    assert "annotations" not in classes["gp2"]["metadata"]
    assert (
        classes["gp3"]["allowVolumeExpansion"] is True
        and "allowVolumeExpansion" not in classes["gp2"]
    )
    assert classes["gp3"]["volumeBindingMode"] == "WaitForFirstConsumer"
    assert default_class(sim.store) == classes["gp3"]


def test_newest_default_class_wins_then_name() -> None:
    sim = _sim(
        "kind",
        [
            {"name": "b", "provisioner": "rancher.io/local-path", "default": True},
            {"name": "a", "provisioner": "rancher.io/local-path", "default": True},
        ],
    )
    assert default_class(sim.store)["metadata"]["name"] == "a"  # type: ignore[index]
    newer = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "z", "annotations": {ANN_DEFAULT_CLASS: "true"}},
        "provisioner": "x.example.com",
    }
    sim.after(1.0, lambda: sim.store.create(newer, actor="helm"))
    sim.run(until=2)
    assert default_class(sim.store)["metadata"]["name"] == "z"  # type: ignore[index]


def test_default_class_assigned_retroactively() -> None:
    sim = _sim(
        "kind",
        [
            {
                "name": "standard",
                "provisioner": "rancher.io/local-path",
                "volumeBindingMode": "WaitForFirstConsumer",
                "default": False,
            }
        ],
    )
    _create(sim, _claim())
    assert _live(sim)["spec"].get("storageClassName") is None  # no default at admission
    dflt = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "late", "annotations": {ANN_DEFAULT_CLASS: "true"}},
        "provisioner": "rancher.io/local-path",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    sim.after(20.0, lambda: sim.store.create(dflt, actor="helm"))
    sim.run(until=31)
    assert _reasons(sim) == [
        (0.05, "FailedBinding"),
        (15.0, "FailedBinding"),
        (30.05, "WaitForFirstConsumer"),
    ]
    assert _live(sim)["spec"]["storageClassName"] == "late"
    assigned = sim.trace.find(what="default-class-assigned")
    assert [round(e.time, 2) for e in assigned] == [30.0]


# --- lifecycle ----------------------------------------------------------------------------------


def _bound_claim(sim: Simulation, node: str, **kw: Any) -> dict[str, Any]:
    _create(sim, _claim(**kw))
    sim.after(1.0, _select_node, sim, kw.get("name", "hf-cache"), node)
    sim.run(until=20)
    claim = _live(sim, kw.get("name", "hf-cache"))
    assert claim["status"]["phase"] == "Bound"
    return claim


def test_deleting_the_claim_releases_and_deletes_the_volume() -> None:
    sim = _sim("kind")
    claim = _bound_claim(sim, "kind-control-plane")
    pv_name = claim["spec"]["volumeName"]
    sim.store.delete(PVC, NS, "hf-cache", actor="helm")
    sim.run(until=20.06)
    pv = sim.store.get("PersistentVolume", "", pv_name)
    assert pv is not None and pv["status"]["phase"] == "Released"
    sim.run(until=30)
    assert sim.store.get("PersistentVolume", "", pv_name) is None
    deleted = sim.trace.find(what="deleted", obj=f"PersistentVolume/{pv_name}")
    assert [round(e.time, 2) for e in deleted] == [
        22.6
    ]  # controller_sync + volume_provisioning later


def test_retain_policy_keeps_the_released_volume() -> None:
    sim = _sim(
        "kind",
        [
            {
                "name": "keep",
                "provisioner": "rancher.io/local-path",
                "default": True,
                "volumeBindingMode": "WaitForFirstConsumer",
                "reclaimPolicy": "Retain",
            }
        ],
    )
    claim = _bound_claim(sim, "kind-control-plane")
    sim.store.delete(PVC, NS, "hf-cache", actor="helm")
    sim.run(until=60)
    pv = sim.store.get("PersistentVolume", "", claim["spec"]["volumeName"])
    assert pv is not None and pv["status"]["phase"] == "Released"


def test_expansion_resizes_the_volume_then_the_file_system() -> None:
    sim = _sim("eks-gp3")
    claim = _bound_claim(sim, "ip-10-0-1-10.ec2.internal", size="10Gi")
    grown = {**claim, "spec": {**claim["spec"], "resources": {"requests": {"storage": "20Gi"}}}}
    sim.store.update(grown, actor="helm")  # t = 20
    sim.run(until=30)
    resize = [(t, r) for t, r in _reasons(sim) if t >= 20]
    assert resize == [(20.05, "Resizing"), (24.05, "FileSystemResizeRequired")]
    live = _live(sim)
    assert live["status"]["capacity"] == {"storage": "10Gi"}
    assert [c["type"] for c in live["status"]["conditions"]] == ["FileSystemResizePending"]
    pv = sim.store.get("PersistentVolume", "", live["spec"]["volumeName"])
    assert pv is not None and pv["spec"]["capacity"] == {"storage": "20Gi"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "db-0", "namespace": NS},
        "spec": {
            "nodeName": "ip-10-0-1-10.ec2.internal",
            "containers": [{"name": "c", "image": "x"}],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "hf-cache"}}],
        },
        "status": {"phase": "Running"},
    }
    sim.store.create(pod, actor="kubelet")  # t = 30
    sim.run(until=31)
    live = _live(sim)
    assert live["status"]["capacity"] == {"storage": "20Gi"} and "conditions" not in live["status"]
    pv_name = pv["metadata"]["name"]
    expected = (
        f'MountVolume.NodeExpandVolume succeeded for volume "{pv_name}" ip-10-0-1-10.ec2.internal'
    )
    assert _events(sim)[-1] == (30.05, "Normal", "FileSystemResizeSuccessful", expected)
