"""External provisioners and resizers: the drivers that create, delete and grow volumes.

An ``ExternalProvisioner`` mirrors kubernetes-sigs/sig-storage-lib-external-provisioner
controller/controller.go (the library behind local-path-provisioner and CSI external-provisioner):
it provisions a claim whose ``volume.kubernetes.io/storage-provisioner`` annotation names it
(set by the PV controller), for WaitForFirstConsumer classes only once the scheduler has written
``volume.kubernetes.io/selected-node``. ``ExternalResizer`` mirrors kubernetes-csi/external-resizer.
Driver specifics (topology, supported access modes, volume source) come from ``DRIVERS``.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from helmsim.cluster.controllers.storage import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_MIGRATED_TO,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    annotations_of,
    binding_mode,
    claim_class,
    claim_key,
    csi_name,
    last_event_for,
    node_labels,
    pods_using_claim,
    reclaim_policy,
    requested_storage,
    size,
)
from helmsim.cluster.engine import Controller
from helmsim.cluster.store import ApiError, ApiUnreachable

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

PVC = "PersistentVolumeClaim"
PV = "PersistentVolume"

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

# sig-storage-lib-external-provisioner controller.go NewProvisionController: the workqueue rate
# limiter retries a failed claim after 15 s · 2^(n-1), capped at 1000 s, and gives up after
# DefaultFailedProvisionThreshold = 15 failures.
RETRY_BASE = 15.0
RETRY_CAP = 1000.0
FAILED_PROVISION_THRESHOLD = 15

# kubernetes-sigs/sig-storage-lib-external-provisioner v13.0.0 controller/controller.go
# provisionClaimOperation: a gRPC InvalidArgument from the driver is "infeasible" and reported
# with this prefix (and retried slowly: the slow retry is not modelled).
MSG_INFEASIBLE = "Volume provisioning failed with infeasible error. Retries will be delayed. "
INVALID_ARGUMENT = "rpc error: code = InvalidArgument"
# aws-ebs-csi-driver pkg/driver/controller.go validateCreateVolumeRequest
MODES_NOT_SUPPORTED = "Volume capabilities not supported"
# controller.go DefaultCreateProvisionedPVInterval = 10 s: a PV that could not be saved is retried
# (volume_store.go; the give-up after DefaultCreateProvisionedPVRetryCount = 5 is not modelled).
STORE_RETRY = 10.0

MSG_FS_RESIZE_PENDING = (
    "Waiting for user to (re-)start a pod to finish file system resize of volume on node."
)


class Driver(Struct, frozen=True):
    """What a provisioner does differently: where volumes live and what it refuses."""

    pod: str
    """The controller pod whose hostname is part of the event source (``<name>_<pod>_<uuid>``)."""
    topology_key: str | None = None
    """The node label the volume is pinned to (``nodeAffinity``), or None for reachable anywhere."""
    needs_node: bool = False
    """Refuses to provision without a selected node (local volumes)."""
    single_node_modes: bool = False
    """Supports only ReadWriteOnce and ReadWriteOncePod."""
    multi_writer_block_only: bool = False
    """A CSI driver whose CreateVolume accepts single-node writers, and several nodes' writers
    only on a raw block volume: ReadWriteMany on a filesystem and ReadOnlyMany are refused."""
    whole_gib: bool = False
    """Rounds the capacity up to whole GiB."""
    source: Callable[[str, Mapping[str, Any], Mapping[str, Any]], dict[str, Any]] | None = None


def _local_path_source(pv: str, claim: Mapping[str, Any], _sc: Mapping[str, Any]) -> dict[str, Any]:
    # rancher/local-path-provisioner provisioner.go provisionFor: folder <pv>_<ns>_<claim> under the
    # configured path (kind: /var/local-path-provisioner), hostPath DirectoryOrCreate by default.
    meta = claim["metadata"]
    path = f"/var/local-path-provisioner/{pv}_{meta.get('namespace', '')}_{meta['name']}"
    return {"hostPath": {"path": path, "type": "DirectoryOrCreate"}}


def _ebs_source(pv: str, _claim: Mapping[str, Any], sc: Mapping[str, Any]) -> dict[str, Any]:
    params = sc.get("parameters") or {}
    fs = params.get("csi.storage.k8s.io/fstype") or params.get("fsType") or "ext4"
    handle = "vol-" + uuid.uuid5(uuid.NAMESPACE_URL, pv).hex[:17]
    return {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": handle, "fsType": fs}}


def _csi_source(
    driver: str,
) -> Callable[[str, Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]:
    def source(pv: str, _claim: Mapping[str, Any], _sc: Mapping[str, Any]) -> dict[str, Any]:
        return {"csi": {"driver": driver, "volumeHandle": pv}}

    return source


DRIVERS: dict[str, Driver] = {
    # rancher/local-path-provisioner provisioner.go: NodePath volumes need the selected node,
    # allow only RWO/RWOP and get node affinity kubernetes.io/hostname In [node].
    "rancher.io/local-path": Driver(
        pod="local-path-provisioner-7dc846544d-4w6lx",
        topology_key=HOSTNAME,
        needs_node=True,
        single_node_modes=True,
        source=_local_path_source,
    ),
    # kubernetes-sigs/aws-ebs-csi-driver: zonal volumes in whole GiB; the external-provisioner
    # copies the topology the driver reports into nodeAffinity (the zone of the selected node).
    # pkg/driver/controller.go isValidCapability: SINGLE_NODE_WRITER, and MULTI_NODE_MULTI_WRITER
    # only for block devices (io2 Multi-Attach); validateCreateVolumeRequest refuses the rest.
    "ebs.csi.aws.com": Driver(
        pod="ebs-csi-controller-5d8c9b7f6d-q2m7x",
        topology_key=ZONE,
        whole_gib=True,
        multi_writer_block_only=True,
        source=_ebs_source,
    ),
}


def identity(provisioner: str) -> str:
    """The provisioner's event source: ``<provisioner>_<hostname>_<uuid>``.

    sig-storage-lib-external-provisioner controller.go NewProvisionController: component =
    provisionerName + "_" + os.Hostname() + "_" + a random UUID; the hostname is the
    controller pod's name. The UUID here is derived from the name so runs are reproducible.
    """
    driver = DRIVERS.get(provisioner)
    pod = driver.pod if driver else provisioner.split("/")[-1].replace(".", "-") + "-controller-0"
    return f"{provisioner}_{pod}_{uuid.uuid5(uuid.NAMESPACE_DNS, provisioner)}"


class ExternalProvisioner(Controller):
    """One provisioner (by provisioner name): provisions claims and deletes released volumes."""

    kinds = (PVC, PV)

    def __init__(self, sim: Simulation, provisioner: str) -> None:
        self.provisioner = provisioner
        self.name = identity(provisioner)
        self.driver = DRIVERS.get(provisioner, Driver(pod="", source=_csi_source(provisioner)))
        self._inflight: set[str] = set()
        self._failures: dict[str, int] = {}
        self._deleting: set[str] = set()
        super().__init__(sim)

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        if event == "DELETED":
            return
        if obj.get("kind") == PV:
            if self._should_delete(obj) and obj["metadata"]["name"] not in self._deleting:
                self._deleting.add(obj["metadata"]["name"])
                delay = self.sim.latency("controller_sync") + self.sim.latency(
                    "volume_provisioning"
                )
                self.sim.after(delay, self._delete, obj["metadata"]["name"])
            return
        uid = str(obj["metadata"].get("uid", ""))
        if uid not in self._inflight and self._should_provision(obj):
            self._inflight.add(uid)
            cause = last_event_for(self.sim, obj)
            self.sim.after(
                self.sim.latency("controller_sync"), self._provision, _nsname(obj), uid, cause
            )

    # --- provisioning ---------------------------------------------------------------------------
    def _should_provision(self, claim: Mapping[str, Any]) -> bool:
        """controller.go shouldProvision."""
        if (claim.get("spec") or {}).get("volumeName") or claim["metadata"].get(
            "deletionTimestamp"
        ):
            return False
        ann = annotations_of(claim)
        named = ann.get(ANN_STORAGE_PROVISIONER) or ann.get(ANN_BETA_STORAGE_PROVISIONER)
        if not named or csi_name(str(named)) != self.provisioner:
            return False
        sc = self.store.get("StorageClass", "", claim_class(claim))
        if sc is None:
            return False
        # WaitForFirstConsumer: only with the scheduler's selected-node annotation.
        return binding_mode(sc) != WAIT_FOR_FIRST_CONSUMER or bool(ann.get(ANN_SELECTED_NODE))

    def _provision(self, nsname: tuple[str, str], uid: str, cause: int | None = None) -> None:
        """controller.go provisionClaimOperation: the Provisioning event, then the driver."""
        claim = self._live_claim(nsname, uid)
        if claim is None or not self._should_provision(claim):
            self._inflight.discard(uid)
            return
        pv_name = f"pvc-{uid}"  # controller.go getProvisionedVolumeNameForClaim
        if self.store.get(PV, "", pv_name) is not None:
            self._inflight.discard(uid)
            return
        cause = self._event(
            claim,
            "Normal",
            "Provisioning",
            f'External provisioner is provisioning volume for claim "{claim_key(claim)}"',
            cause,
        )
        faults = self.sim.faults
        failing = getattr(faults, "provision_error", None)
        problem = self._refusal(claim) or (
            failing(claim, self.provisioner, self._failures.get(uid, 0) + 1) if failing else None
        )
        if problem:
            failed = self._event(claim, "Warning", "ProvisioningFailed", failure_message(problem), cause)
            self._retry(nsname, uid, failed)
            return
        slower = getattr(faults, "provision_delay", None)
        extra = max(0.0, float(slower(claim, self.provisioner) or 0.0)) if slower else 0.0
        self.sim.after(
            self.sim.latency("volume_provisioning") + extra, self._store_volume, nsname, uid, cause
        )

    def _refusal(self, claim: Mapping[str, Any]) -> str:
        if self.driver.single_node_modes:
            modes = (claim.get("spec") or {}).get("accessModes") or ()
            if any(m not in ("ReadWriteOnce", "ReadWriteOncePod") for m in modes):
                return (
                    "NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes"
                )
        if self.driver.multi_writer_block_only:
            spec = claim.get("spec") or {}
            modes = spec.get("accessModes") or ()
            block = spec.get("volumeMode") == "Block"
            # external-provisioner maps ReadWriteOnce(Pod) to SINGLE_NODE_WRITER, ReadWriteMany to
            # MULTI_NODE_MULTI_WRITER and ReadOnlyMany to MULTI_NODE_READER_ONLY
            if "ReadOnlyMany" in modes or ("ReadWriteMany" in modes and not block):
                return f"{INVALID_ARGUMENT} desc = {MODES_NOT_SUPPORTED}"
        if self.driver.needs_node and not annotations_of(claim).get(ANN_SELECTED_NODE):
            return "configuration error, no node was specified"
        return ""

    def _retry(self, nsname: tuple[str, str], uid: str, cause: int) -> None:
        n = self._failures.get(uid, 0) + 1
        self._failures[uid] = n
        if n >= FAILED_PROVISION_THRESHOLD:
            self._inflight.discard(uid)
            self.sim.log(
                self.name,
                "provisioning-abandoned",
                f"{PVC}/{nsname[0]}/{nsname[1]}",
                f"gave up after {n} failed attempts (failedProvisionThreshold)",
                cause=cause,
            )
            return
        self.sim.after(
            min(RETRY_BASE * 2 ** (n - 1), RETRY_CAP), self._provision, nsname, uid, cause
        )

    def _store_volume(self, nsname: tuple[str, str], uid: str, cause: int) -> None:
        """Create the PV bound to the claim, then ProvisioningSucceeded (volume_store.go)."""
        self._inflight.discard(uid)
        claim = self._live_claim(nsname, uid)
        if claim is None:
            return
        sc = self.store.get("StorageClass", "", claim_class(claim))
        if sc is None:
            return
        pv = self._volume(claim, sc)
        try:
            self.store.create(pv, actor=self.name, cause=cause)
        except ApiUnreachable:
            # volume_store.go StoreVolume: the volume exists at the driver; saving the PV is retried
            self._inflight.add(uid)
            self.sim.after(STORE_RETRY, self._store_volume, nsname, uid, cause)
            return
        except ApiError:
            return  # already provisioned
        self._failures.pop(uid, None)
        self._event(
            claim,
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {pv['metadata']['name']}",
            cause,
        )

    def _volume(self, claim: Mapping[str, Any], sc: Mapping[str, Any]) -> dict[str, Any]:
        spec = claim.get("spec") or {}
        name = f"pvc-{claim['metadata']['uid']}"
        ann = {ANN_PROVISIONED_BY: str(sc.get("provisioner"))}
        if csi_name(str(sc.get("provisioner"))) != sc.get("provisioner"):
            ann[ANN_MIGRATED_TO] = self.provisioner
        node = annotations_of(claim).get(ANN_SELECTED_NODE)
        if self.provisioner == "rancher.io/local-path" and node:
            ann["local.path.provisioner/selected-node"] = node
        pv_spec: dict[str, Any] = {
            "accessModes": list(spec.get("accessModes") or ()),
            "capacity": {"storage": self._capacity(requested_storage(claim))},
            "claimRef": {
                "apiVersion": "v1",
                "kind": PVC,
                "namespace": claim["metadata"].get("namespace", ""),
                "name": claim["metadata"]["name"],
                "uid": claim["metadata"]["uid"],
                "resourceVersion": claim["metadata"].get("resourceVersion", ""),
            },
            "persistentVolumeReclaimPolicy": reclaim_policy(sc),
            "storageClassName": claim_class(claim),
            "volumeMode": spec.get("volumeMode") or "Filesystem",
        }
        if self.driver.source is not None:
            pv_spec.update(self.driver.source(name, claim, sc))
        affinity = self._node_affinity(node)
        if affinity:
            pv_spec["nodeAffinity"] = affinity
        return {
            "apiVersion": "v1",
            "kind": PV,
            "metadata": {"name": name, "annotations": ann},
            "spec": pv_spec,
            "status": {"phase": "Pending"},
        }

    def _capacity(self, requested: str | None) -> str:
        if requested is None:
            return "0"
        if not self.driver.whole_gib:
            return requested
        gib = math.ceil(size(requested) / Fraction(2**30))
        return f"{max(gib, 1)}Gi"

    def _node_affinity(self, node: str | None) -> dict[str, Any] | None:
        key = self.driver.topology_key
        if key is None:
            return None
        if not node:
            # Immediate binding: the provisioner picks the topology itself; deterministically
            # here, the first node of the profile.
            nodes = [n.name for n in getattr(self.sim.profile, "nodes", ()) or ()]
            if not nodes:
                return None
            node = min(nodes)
        labels = node_labels(self.sim, node)
        value = labels.get(key) or (node if key == HOSTNAME else None)
        if value is None:
            return None
        term = {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
        return {"required": {"nodeSelectorTerms": [term]}}

    # --- deletion -------------------------------------------------------------------------------
    def _should_delete(self, pv: Mapping[str, Any]) -> bool:
        """controller.go shouldDelete: a Released volume of ours with reclaimPolicy Delete."""
        return (
            (pv.get("status") or {}).get("phase") == "Released"
            and (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete"
            and csi_name(str(annotations_of(pv).get(ANN_PROVISIONED_BY, ""))) == self.provisioner
            and not pv["metadata"].get("deletionTimestamp")
        )

    def _delete(self, name: str) -> None:
        self._deleting.discard(name)
        pv = self.store.get(PV, "", name)
        if pv is None or not self._should_delete(pv):
            return
        self.store.delete(PV, None, name, actor=self.name)

    # --- helpers --------------------------------------------------------------------------------
    def _live_claim(self, nsname: tuple[str, str], uid: str) -> dict[str, Any] | None:
        claim = self.store.get(PVC, nsname[0], nsname[1])
        if (
            claim is None
            or claim["metadata"].get("uid") != uid
            or claim["metadata"].get("deletionTimestamp")
        ):
            return None
        return claim

    def _event(
        self,
        obj: Mapping[str, Any],
        type_: str,
        reason: str,
        message: str,
        cause: int | None = None,
    ) -> int:
        return self.store.record_event(obj, type_, reason, message, source=self.name, cause=cause)


class ExternalResizer(Controller):
    """kubernetes-csi/external-resizer for one driver, plus the kubelet's file system step."""

    kinds = (PVC, "Pod")

    def __init__(self, sim: Simulation, driver: str) -> None:
        self.driver = driver
        # external-resizer pkg/controller/controller.go: events come from "external-resizer <driver>".
        self.name = f"external-resizer {driver}"
        self._inflight: set[str] = set()
        super().__init__(sim)

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        if event == "DELETED":
            return
        if obj.get("kind") == "Pod":
            if (obj.get("spec") or {}).get("nodeName") and (obj.get("status") or {}).get(
                "phase"
            ) == "Running":
                for vol in (obj.get("spec") or {}).get("volumes") or ():
                    claim_name = (vol.get("persistentVolumeClaim") or {}).get("claimName")
                    claim = (
                        self.store.get(PVC, obj["metadata"].get("namespace"), str(claim_name))
                        if claim_name
                        else None
                    )
                    if claim is not None and _fs_resize_pending(claim):
                        self.sim.after(
                            self.sim.latency("controller_sync"), self._finish_fs, _nsname(claim)
                        )
            return
        uid = str(obj["metadata"].get("uid", ""))
        if uid not in self._inflight and self._needs_resize(obj):
            self._inflight.add(uid)
            self.sim.after(self.sim.latency("controller_sync"), self._resize, _nsname(obj), uid)

    def _needs_resize(self, claim: Mapping[str, Any]) -> bool:
        status = claim.get("status") or {}
        if status.get("phase") != "Bound" or _fs_resize_pending(claim) or _resizing(claim):
            return False
        want = size(requested_storage(claim))
        have = size((status.get("capacity") or {}).get("storage"))
        sc = self.store.get("StorageClass", "", claim_class(claim))
        pv = self.store.get(PV, "", str((claim.get("spec") or {}).get("volumeName") or ""))
        return (
            want > have
            and sc is not None
            and bool(sc.get("allowVolumeExpansion"))
            and pv is not None
            and csi_name(str(annotations_of(pv).get(ANN_PROVISIONED_BY, ""))) == self.driver
            and size(((pv.get("spec") or {}).get("capacity") or {}).get("storage")) < want
        )

    def _resize(self, nsname: tuple[str, str], uid: str) -> None:
        claim = self.store.get(PVC, *nsname)
        if claim is None or claim["metadata"].get("uid") != uid or not self._needs_resize(claim):
            self._inflight.discard(uid)
            return
        pv_name = str(claim["spec"]["volumeName"])
        cause = self.store.record_event(
            claim,
            "Normal",
            "Resizing",
            f"External resizer is resizing volume {pv_name}",
            source=self.name,
        )
        self._set_conditions(claim, [_condition(self.sim, "Resizing", "")], cause)
        self.sim.after(
            self.sim.latency("volume_provisioning"), self._resized, nsname, uid, pv_name, cause
        )

    def _resized(self, nsname: tuple[str, str], uid: str, pv_name: str, cause: int) -> None:
        self._inflight.discard(uid)
        claim = self.store.get(PVC, *nsname)
        pv = self.store.get(PV, "", pv_name)
        if claim is None or pv is None or claim["metadata"].get("uid") != uid:
            return
        new_size = requested_storage(claim)
        grown = {
            **pv,
            "spec": {
                **pv["spec"],
                "capacity": {**(pv["spec"].get("capacity") or {}), "storage": new_size},
            },
        }
        self.store.update(grown, actor=self.name, cause=cause)
        ev = self.store.record_event(
            claim,
            "Normal",
            "FileSystemResizeRequired",
            "Require file system resize of volume on node",
            source=self.name,
            cause=cause,
        )
        claim = self.store.get(PVC, *nsname) or claim
        self._set_conditions(
            claim, [_condition(self.sim, "FileSystemResizePending", MSG_FS_RESIZE_PENDING)], ev
        )
        for pod in pods_using_claim(self.store, claim):
            if (pod.get("spec") or {}).get("nodeName") and (pod.get("status") or {}).get(
                "phase"
            ) == "Running":
                self.sim.after(self.sim.latency("controller_sync"), self._finish_fs, nsname)
                break

    def _finish_fs(self, nsname: tuple[str, str]) -> None:
        """The kubelet's NodeExpandVolume on the node running a pod that mounts the claim."""
        claim = self.store.get(PVC, *nsname)
        if claim is None or not _fs_resize_pending(claim):
            return
        pv = self.store.get(PV, "", str(claim["spec"].get("volumeName") or ""))
        pods = [
            p
            for p in pods_using_claim(self.store, claim)
            if (p.get("spec") or {}).get("nodeName")
            and (p.get("status") or {}).get("phase") == "Running"
        ]
        if pv is None or not pods:
            return
        node = pods[0]["spec"]["nodeName"]
        status = dict(claim.get("status") or {})
        status["capacity"] = dict(pv["spec"].get("capacity") or {})
        status.pop("conditions", None)
        try:
            self.store.update_status(
                PVC,
                *nsname,
                status,
                actor="kubelet",
                message=f"{claim_key(claim)} capacity {status['capacity'].get('storage')}",
            )
        except ApiUnreachable:
            self.sim.after(STORE_RETRY, self._finish_fs, nsname)  # the kubelet retries its sync
            return
        # kubelet operation_generator.go: GenerateMsg("MountVolume.NodeExpandVolume succeeded", node)
        msg = f'MountVolume.NodeExpandVolume succeeded for volume "{pv["metadata"]["name"]}" {node}'
        self.store.record_event(
            claim, "Normal", "FileSystemResizeSuccessful", msg, source="kubelet"
        )

    def _set_conditions(
        self, claim: Mapping[str, Any], conditions: list[dict[str, Any]], cause: int
    ) -> None:
        status = {**(claim.get("status") or {}), "conditions": conditions}
        self.store.update_status(PVC, *_nsname(claim), status, actor=self.name, cause=cause)


def failure_message(error: str) -> str:
    """The ProvisioningFailed event text for a driver error (controller.go provisionClaimOperation:
    the error verbatim, behind the infeasible prefix for gRPC InvalidArgument)."""
    return MSG_INFEASIBLE + error if error.startswith(INVALID_ARGUMENT) else error


def _nsname(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name", ""))


def _condition(sim: Simulation, type_: str, message: str) -> dict[str, Any]:
    cond: dict[str, Any] = {"type": type_, "status": "True", "lastTransitionTime": sim.timestamp()}
    if message:
        cond["message"] = message
    return cond


def _has_condition(claim: Mapping[str, Any], type_: str) -> bool:
    return any(
        c.get("type") == type_ and c.get("status") == "True"
        for c in (claim.get("status") or {}).get("conditions") or ()
    )


def _fs_resize_pending(claim: Mapping[str, Any]) -> bool:
    return _has_condition(claim, "FileSystemResizePending")


def _resizing(claim: Mapping[str, Any]) -> bool:
    return _has_condition(claim, "Resizing")
