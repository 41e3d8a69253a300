"""The PersistentVolume controller of kube-controller-manager: binds claims to volumes.

Mirrors kubernetes/kubernetes pkg/controller/volume/persistentvolume/pv_controller.go
(``syncClaim`` → ``syncUnboundClaim`` / ``syncBoundClaim``, ``syncVolume``, ``bind``,
``provisionClaim`` for external provisioners). It reacts to claim and volume writes by others
after ``controller_sync`` and re-syncs every claim and volume every 15 s while any claim is
unbound (the resync is what repeats ``WaitForFirstConsumer`` / ``ExternalProvisioning``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from helmsim.cluster.controllers.storage import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    CSI_MIGRATION,
    WAIT_FOR_FIRST_CONSUMER,
    annotations_of,
    binding_mode,
    claim_class,
    claim_has_class,
    claim_key,
    csi_name,
    default_class,
    last_event_for,
    pods_using_claim,
    requested_storage,
    size,
    volume_class,
    with_annotations,
)
from helmsim.cluster.engine import Controller
from helmsim.cluster.selectors import matches_selector
from helmsim.cluster.store import clone, key_of, ref_of

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

PVC = "PersistentVolumeClaim"
PV = "PersistentVolume"

# kubernetes/kubernetes pkg/controller/volume/persistentvolume/config/v1alpha1/defaults.go:
# PVClaimBinderSyncPeriod (kube-controller-manager --pvclaimbinder-sync-period) = 15 s.
RESYNC_SECONDS = 15.0

MSG_WFFC = "waiting for first consumer to be created before binding"
MSG_NO_CLASS = "no persistent volumes available for this claim and no storage class is set"


def external_provisioning_message(provisioner: str) -> str:
    """pv_controller.go provisionClaimOperationExternal: the ExternalProvisioning event text."""
    return (
        f"Waiting for a volume to be created either by the external provisioner '{provisioner}' "
        "or manually by the system administrator. If volume creation is delayed, please verify "
        "that the provisioner is running and correctly registered."
    )


class PersistentVolumeController(Controller):
    """Binds claims to volumes, asks external provisioners for volumes, releases volumes."""

    name = "persistentvolume-controller"
    kinds = (PVC, PV)

    def __init__(self, sim: Simulation, *, resync_seconds: float = RESYNC_SECONDS) -> None:
        super().__init__(sim)
        self.resync_seconds = resync_seconds
        self._start = sim.now
        self._queued: set[tuple[str, str, str]] = set()
        self._ticking = False
        self._writing = False
        for obj in [*self.store.list(PVC), *self.store.list(PV)]:
            self._enqueue(obj, None)

    # --- watch and queue ------------------------------------------------------------------------
    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        # The controller's own writes are already in its cache (pv_controller.go
        # storeClaimUpdate/storeVolumeUpdate): the informer event for them is not processed.
        if self._writing:
            return
        cause = last_event_for(self.sim, obj)
        if obj.get("kind") == PVC and event == "DELETED":
            # pv_controller_base.go deleteClaim: the volume bound to it is synced (released).
            for pv in self.store.list(PV):
                if _claim_ref_names(pv, obj):
                    self._enqueue(pv, cause)
        elif event != "DELETED":
            self._enqueue(obj, cause)
        self._ensure_ticker()

    def _enqueue(
        self, obj: Mapping[str, Any], cause: int | None, delay: float | None = None
    ) -> None:
        key = key_of(obj)
        if key in self._queued:  # client-go workqueue: one pending item per key
            return
        self._queued.add(key)
        wait = self.sim.latency("controller_sync") if delay is None else delay
        self.sim.after(wait, self._work, key, cause)

    def _work(self, key: tuple[str, str, str], cause: int | None) -> None:
        self._queued.discard(key)
        kind, ns, name = key
        live = self.store.get(kind, ns, name)
        if live is None or live["metadata"].get("deletionTimestamp"):
            return
        if kind == PVC:
            self._sync_claim(live, cause)
        else:
            self._sync_volume(live, cause)
        self._ensure_ticker()

    def _ensure_ticker(self) -> None:
        """Schedule the next periodic resync (on the 15 s grid) while some claim is unbound."""
        if self._ticking or not self._needs_resync():
            return
        period = self.resync_seconds
        ticks = math.floor((self.sim.now - self._start) / period + 1e-9) + 1
        self._ticking = True
        self.sim.after(self._start + ticks * period - self.sim.now, self._resync)

    def _needs_resync(self) -> bool:
        return any(
            (c.get("status") or {}).get("phase") != "Bound"
            and not c["metadata"].get("deletionTimestamp")
            for c in self.store.list(PVC)
        )

    def _resync(self) -> None:
        # pv_controller_base.go resync: every claim and volume goes back on the queue.
        self._ticking = False
        for obj in [*self.store.list(PVC), *self.store.list(PV)]:
            self._enqueue(obj, None, delay=0.0)
        self._ensure_ticker()

    # --- claims ---------------------------------------------------------------------------------
    def _sync_claim(self, claim: dict[str, Any], cause: int | None) -> None:
        # pv_controller.go syncClaim: annBindCompleted separates unbound from bound claims.
        if ANN_BIND_COMPLETED in annotations_of(claim):
            self._sync_bound_claim(claim, cause)
        else:
            self._sync_unbound_claim(claim, cause)

    def _sync_unbound_claim(self, claim: dict[str, Any], cause: int | None) -> None:
        spec = claim.get("spec") or {}
        if spec.get("volumeName"):
            self._sync_prebound_claim(claim, str(spec["volumeName"]), cause)
            return
        class_name = claim_class(claim)
        sc = self.store.get("StorageClass", "", class_name) if class_name else None
        # storagehelpers.IsDelayBindingMode: a missing class is not delay binding.
        delay = sc is not None and binding_mode(sc) == WAIT_FOR_FIRST_CONSUMER
        volume = self._find_best_match(claim, delay)
        if volume is not None:
            self._bind(volume, claim, cause)
            return
        # pv_controller.go assignDefaultStorageClass (retroactive default, GA in 1.28): a claim
        # with a nil class gets the default class; the update triggers the next sync.
        if not claim_has_class(claim):
            dflt = default_class(self.store)
            if dflt is not None:
                new = clone(claim)
                new.setdefault("spec", {})["storageClassName"] = dflt["metadata"]["name"]
                self._write(new, cause)
                self.sim.log(
                    self.name,
                    "default-class-assigned",
                    ref_of(claim),
                    f"assigned the default StorageClass {dflt['metadata']['name']!r}",
                    cause=cause,
                )
                self._enqueue(new, cause)
                return
        if delay and not annotations_of(claim).get(ANN_SELECTED_NODE):
            # pv_controller.go emitEventForUnboundDelayBindingClaim
            self._emit_delay_binding_event(claim, cause)
        elif class_name:
            self._provision(claim, sc, cause)
            return
        else:
            self._event(claim, "Normal", "FailedBinding", MSG_NO_CLASS, cause)
        self._set_claim_phase(claim, "Pending", None, cause)

    def _sync_prebound_claim(
        self, claim: dict[str, Any], volume_name: str, cause: int | None
    ) -> None:
        # pv_controller.go syncUnboundClaim, "[Unit test set 2]": the user asked for a volume.
        volume = self.store.get(PV, "", volume_name)
        if volume is None:
            self._set_claim_phase(claim, "Pending", None, cause)
            return
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref:
            problem = _unsatisfied(volume, claim)
            if problem:
                msg = f'Cannot bind to requested volume "{volume_name}": {problem}'
                self._event(claim, "Warning", "VolumeMismatch", msg, cause)
                self._set_claim_phase(claim, "Pending", None, cause)
            else:
                self._bind(volume, claim, cause)
        elif _bound_to(volume, claim):
            self._bind(volume, claim, cause)
        else:
            msg = f'volume "{volume_name}" already bound to a different claim.'
            self._event(claim, "Warning", "FailedBinding", msg, cause)
            self._set_claim_phase(claim, "Pending", None, cause)

    def _sync_bound_claim(self, claim: dict[str, Any], cause: int | None) -> None:
        # pv_controller.go syncBoundClaim
        name = (claim.get("spec") or {}).get("volumeName")
        volume = self.store.get(PV, "", str(name)) if name else None
        if volume is None:
            msg = (
                "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
                if name
                else "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
            )
            if (claim.get("status") or {}).get("phase") != "Lost":
                self._set_claim_phase(claim, "Lost", None, cause)
                self._event(claim, "Warning", "ClaimLost", msg, cause)
            return
        if _bound_to(volume, claim) or not (volume.get("spec") or {}).get("claimRef"):
            self._bind(volume, claim, cause)
        elif (claim.get("status") or {}).get("phase") != "Lost":
            self._set_claim_phase(claim, "Lost", None, cause)
            self._event(
                claim,
                "Warning",
                "ClaimMisbound",
                "Two claims are bound to the same volume, this one is bound incorrectly",
                cause,
            )

    def _emit_delay_binding_event(self, claim: dict[str, Any], cause: int | None) -> None:
        # A pod that uses the claim but has no node yet turns the event into WaitForPodScheduled.
        waiting = [
            p["metadata"]["name"]
            for p in pods_using_claim(self.store, claim)
            if not (p.get("spec") or {}).get("nodeName")
        ]
        if not waiting:
            self._event(claim, "Normal", "WaitForFirstConsumer", MSG_WFFC, cause)
        elif len(waiting) == 1:
            self._event(
                claim,
                "Normal",
                "WaitForPodScheduled",
                f"waiting for pod {waiting[0]} to be scheduled",
                cause,
            )
        else:
            self._event(
                claim,
                "Normal",
                "WaitForPodScheduled",
                f"waiting for pods {','.join(waiting)} to be scheduled",
                cause,
            )

    def _provision(
        self, claim: dict[str, Any], sc: Mapping[str, Any] | None, cause: int | None
    ) -> None:
        # pv_controller.go provisionClaim → findProvisionablePlugin: a missing class or an
        # in-tree name without a plugin fails; any other name means an external provisioner.
        self._default_pending(claim, cause)
        if sc is None:
            msg = f'storageclass.storage.k8s.io "{claim_class(claim)}" not found'
            self._event(claim, "Warning", "ProvisioningFailed", msg, cause)
            return
        provisioner = str(sc.get("provisioner") or "")
        if provisioner.startswith("kubernetes.io/") and provisioner not in CSI_MIGRATION:
            # pkg/volume/plugins.go FindPluginByName
            msg = f"no volume plugin matched name: {provisioner}"
            self._event(claim, "Warning", "ProvisioningFailed", msg, cause)
            return
        name = csi_name(provisioner)
        # provisionClaimOperationExternal → setClaimProvisioner: both annotations name it.
        ann = annotations_of(claim)
        if (
            ann.get(ANN_STORAGE_PROVISIONER) != name
            or ann.get(ANN_BETA_STORAGE_PROVISIONER) != name
        ):
            claim = self._write(
                with_annotations(
                    claim, **{ANN_STORAGE_PROVISIONER: name, ANN_BETA_STORAGE_PROVISIONER: name}
                ),
                cause,
            )
        self._event(
            claim, "Normal", "ExternalProvisioning", external_provisioning_message(name), cause
        )

    def _find_best_match(self, claim: Mapping[str, Any], delay: bool) -> dict[str, Any] | None:
        """k8s.io/component-helpers storage/volume/pv_helpers.go FindMatchingVolume (no node)."""
        spec = claim.get("spec") or {}
        want_modes = set(spec.get("accessModes") or ())
        want_size = size(requested_storage(claim))
        want_class = claim_class(claim)
        selector = spec.get("selector")
        best: dict[str, Any] | None = None
        for volume in self.store.list(PV):
            vspec = volume.get("spec") or {}
            if _volume_mode(vspec) != _volume_mode(spec) or volume["metadata"].get(
                "deletionTimestamp"
            ):
                continue
            # index.go findByClaim: only volumes offering every requested access mode.
            if not want_modes <= set(vspec.get("accessModes") or ()):
                continue
            if _bound_to(volume, claim):
                return volume
            if delay:
                continue  # the scheduler binds unbound volumes for WaitForFirstConsumer claims
            if (volume.get("status") or {}).get("phase") != "Available" or vspec.get("claimRef"):
                continue
            labels = (volume.get("metadata") or {}).get("labels") or {}
            if selector is not None and not matches_selector(selector, labels):
                continue
            if volume_class(volume) != want_class:
                continue
            have = size((vspec.get("capacity") or {}).get("storage"))
            if have >= want_size and (
                best is None or size(best["spec"]["capacity"]["storage"]) > have
            ):
                best = volume
        return best

    # --- volumes --------------------------------------------------------------------------------
    def _sync_volume(self, volume: dict[str, Any], cause: int | None) -> None:
        # pv_controller.go syncVolume
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref or not ref.get("uid"):
            self._set_volume_phase(volume, "Available", cause)
            return
        claim = self.store.get(PVC, ref.get("namespace"), str(ref.get("name")))
        if claim is not None and claim["metadata"].get("uid") != ref.get("uid"):
            claim = None  # the claim was deleted and another one with the same name created
        if claim is None:
            self._release(volume, cause)
        elif not (claim.get("spec") or {}).get("volumeName"):
            # A provisioned volume waits for the claim's sync to finish the binding.
            self._enqueue(claim, cause, delay=self.sim.latency("controller_sync"))
        elif claim["spec"]["volumeName"] == volume["metadata"]["name"]:
            self._set_volume_phase(volume, "Bound", cause)
        elif ANN_PROVISIONED_BY in annotations_of(volume) and _reclaim(volume) == "Delete":
            self._release(volume, cause)

    def _release(self, volume: dict[str, Any], cause: int | None) -> None:
        phase = (volume.get("status") or {}).get("phase")
        if phase not in ("Released", "Failed"):
            policy = _reclaim(volume)
            self._set_volume_phase(volume, "Released", cause, note=f"reclaimPolicy {policy}")
        # reclaimVolume: Retain keeps the volume; Delete of an externally provisioned volume is
        # the provisioner's job (doDeleteVolume: "External deleter for volume requested").

    # --- writes ---------------------------------------------------------------------------------
    def _bind(self, volume: dict[str, Any], claim: dict[str, Any], cause: int | None) -> None:
        """pv_controller.go bind: volume spec, volume phase, claim spec, claim status."""
        vname = volume["metadata"]["name"]
        if not _bound_to(volume, claim) or not volume["spec"]["claimRef"].get("uid"):
            # storagehelpers.GetBindVolumeToClaim
            new = with_annotations(volume, **{ANN_BOUND_BY_CONTROLLER: "yes"})
            new["spec"]["claimRef"] = _claim_ref(claim)
            volume = self._write(new, cause)
        volume = self._set_volume_phase(volume, "Bound", cause) or volume
        if (claim.get("spec") or {}).get(
            "volumeName"
        ) != vname or ANN_BIND_COMPLETED not in annotations_of(claim):
            changes = {ANN_BIND_COMPLETED: "yes"}
            if claim["spec"].get("volumeName") != vname:
                changes[ANN_BOUND_BY_CONTROLLER] = "yes"
            new = with_annotations(claim, **changes)
            new["spec"]["volumeName"] = vname
            claim = self._write(new, cause)
        self._set_claim_phase(claim, "Bound", volume, cause)

    def _set_claim_phase(
        self, claim: dict[str, Any], phase: str, volume: Mapping[str, Any] | None, cause: int | None
    ) -> None:
        # pv_controller.go updateClaimStatus: Bound copies accessModes and (when becoming
        # Bound) capacity from the volume; other phases clear them.
        status = clone(claim.get("status") or {})
        old = dict(status)
        becoming = status.get("phase") != phase
        status["phase"] = phase
        if volume is None:
            status.pop("accessModes", None)
            status.pop("capacity", None)
        else:
            status["accessModes"] = list(volume["spec"].get("accessModes") or ())
            if becoming:
                status["capacity"] = dict(volume["spec"].get("capacity") or {})
        if status == old:
            return
        msg = None
        if becoming:
            msg = f"{claim_key(claim)} is {phase}" + (
                f" (volume {volume['metadata']['name']})" if volume else ""
            )
        self._writing = True
        try:
            self.store.update_status(
                PVC,
                claim["metadata"].get("namespace"),
                claim["metadata"]["name"],
                status,
                actor=self.name,
                cause=cause,
                message=msg,
            )
        finally:
            self._writing = False

    def _default_pending(self, claim: dict[str, Any], cause: int | None) -> None:
        # pkg/apis/core/v1/defaults.go SetDefaults_PersistentVolumeClaim: phase Pending.
        if not (claim.get("status") or {}).get("phase"):
            self._set_claim_phase(claim, "Pending", None, cause)

    def _set_volume_phase(
        self, volume: dict[str, Any], phase: str, cause: int | None, note: str = ""
    ) -> dict[str, Any] | None:
        if (volume.get("status") or {}).get("phase") == phase:
            return volume
        status = {**(volume.get("status") or {}), "phase": phase}
        self._writing = True
        try:
            return self.store.update_status(
                PV,
                None,
                volume["metadata"]["name"],
                status,
                actor=self.name,
                cause=cause,
                message=f"PersistentVolume {volume['metadata']['name']} is {phase}"
                + (f" ({note})" if note else ""),
            )
        finally:
            self._writing = False

    def _write(self, obj: Mapping[str, Any], cause: int | None) -> dict[str, Any]:
        self._writing = True
        try:
            return self.store.update(obj, actor=self.name, cause=cause)
        finally:
            self._writing = False

    def _event(
        self, obj: Mapping[str, Any], type_: str, reason: str, message: str, cause: int | None
    ) -> None:
        self.store.record_event(obj, type_, reason, message, source=self.name, cause=cause)


# --- helpers -----------------------------------------------------------------------------------


def _claim_ref(claim: Mapping[str, Any]) -> dict[str, Any]:
    meta = claim["metadata"]
    return {
        "apiVersion": "v1",
        "kind": PVC,
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }


def _claim_ref_names(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    ref = (volume.get("spec") or {}).get("claimRef") or {}
    meta = claim.get("metadata") or {}
    return ref.get("name") == meta.get("name") and (ref.get("namespace") or "") == (
        meta.get("namespace") or ""
    )


def _bound_to(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """k8s.io/component-helpers IsVolumeBoundToClaim: name/namespace match and UID, if set."""
    ref = (volume.get("spec") or {}).get("claimRef")
    if not ref or not _claim_ref_names(volume, claim):
        return False
    return not ref.get("uid") or ref.get("uid") == claim["metadata"].get("uid")


def _unsatisfied(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> str:
    """pv_controller.go checkVolumeSatisfyClaim: why a requested volume does not fit ("" if it does)."""
    vspec = volume.get("spec") or {}
    if volume["metadata"].get("deletionTimestamp"):
        name = volume["metadata"]["name"]
        return f'the volume is marked for deletion "{name}"'
    if size((vspec.get("capacity") or {}).get("storage")) < size(requested_storage(claim)):
        return "requested PV is too small"
    if volume_class(volume) != claim_class(claim):
        return "storageClassName does not match"
    if _volume_mode(vspec) != _volume_mode(claim.get("spec") or {}):
        return "incompatible volumeMode"
    if not set((claim.get("spec") or {}).get("accessModes") or ()) <= set(
        vspec.get("accessModes") or ()
    ):
        return "incompatible accessMode"
    return ""


def _volume_mode(spec: Mapping[str, Any]) -> str:
    # pkg/apis/core/v1/defaults.go: volumeMode defaults to Filesystem on claims and volumes.
    return str(spec.get("volumeMode") or "Filesystem")


def _reclaim(volume: Mapping[str, Any]) -> str:
    # pkg/apis/core/v1/defaults.go: a PV's persistentVolumeReclaimPolicy defaults to Retain.
    return str((volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain")
