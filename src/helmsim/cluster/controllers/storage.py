"""Storage on the simulated cluster: StorageClasses, claim/volume helpers, and wiring.

The controllers live in ``pvbinder.py`` (kube-controller-manager's PersistentVolume controller)
and ``provisioner.py`` (the external provisioners and resizers). This module holds what they
share: the well-known annotations, class resolution and the default class, and
``seed_storage`` / ``install_storage`` for cluster start. docs/storage.md describes the model.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from helmsim.cluster.store import ref_of
from helmsim.helm.immutable import quantity

if TYPE_CHECKING:
    from helmsim.cluster.controllers.provisioner import ExternalProvisioner, ExternalResizer
    from helmsim.cluster.controllers.pvbinder import PersistentVolumeController
    from helmsim.cluster.engine import Simulation
    from helmsim.cluster.store import Store

# kubernetes/api storage/v1 annotations (k8s.io/component-helpers storage/volume/helpers.go).
ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
ANN_BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
ANN_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_MIGRATED_TO = "pv.kubernetes.io/migrated-to"

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"

# kubernetes/csi-translation-lib plugins/*.go: in-tree provisioners whose volumes CSI drivers
# serve since CSI migration went GA (aws-ebs 1.25, gce-pd 1.25, azure-disk 1.24, cinder 1.24,
# azure-file 1.26, vsphere 1.26, portworx 1.33).
CSI_MIGRATION: Mapping[str, str] = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}


# --- StorageClasses -----------------------------------------------------------------------------


def storage_class_object(cls: Any) -> dict[str, Any]:
    """A profile ``StorageClass`` as the storage.k8s.io/v1 object ``kubectl get -o yaml`` shows."""
    meta: dict[str, Any] = {"name": cls.name}
    if cls.default:
        meta["annotations"] = {ANN_DEFAULT_CLASS: "true"}
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": meta,
        "provisioner": cls.provisioner,
        "reclaimPolicy": getattr(cls, "reclaim_policy", "Delete"),
        "volumeBindingMode": cls.volume_binding_mode,
    }
    params = dict(getattr(cls, "parameters", {}) or {})
    if params:
        obj["parameters"] = params
    if cls.allow_volume_expansion:
        obj["allowVolumeExpansion"] = True
    return obj


def seed_storage(sim: Simulation) -> list[dict[str, Any]]:
    """Create the profile's StorageClasses in the store (cluster start); returns them."""
    out = []
    for cls in getattr(sim.profile, "storage_classes", ()) or ():
        if sim.store.get("StorageClass", "", cls.name) is None:
            out.append(sim.store.create(storage_class_object(cls), actor="apiserver"))
    return out


def is_default_class(sc: Mapping[str, Any]) -> bool:
    """k8s.io/component-helpers storage/volume/helpers.go IsDefaultAnnotation: either annotation "true"."""
    meta = sc.get("metadata")
    ann = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(ann, Mapping):
        return False  # a dump's malformed annotations mark nothing (the API server would refuse them)
    return ann.get(ANN_DEFAULT_CLASS) == "true" or ann.get(ANN_BETA_DEFAULT_CLASS) == "true"


def default_class(store: Store) -> dict[str, Any] | None:
    """The class a claim without ``storageClassName`` gets.

    kubernetes/kubernetes pkg/volume/util/storageclass.go GetDefaultClass (>= 1.26): of several
    defaults the newest by creationTimestamp wins, ties broken by name ascending.
    """
    defaults = [sc for sc in store.list("StorageClass") if is_default_class(sc)]
    if not defaults:
        return None
    newest = max(str(sc["metadata"].get("creationTimestamp", "")) for sc in defaults)
    return min(
        (sc for sc in defaults if str(sc["metadata"].get("creationTimestamp", "")) == newest),
        key=lambda sc: str(sc["metadata"]["name"]),
    )


def binding_mode(sc: Mapping[str, Any]) -> str:
    """``volumeBindingMode``; kubernetes/api storage/v1/types.go: the API default is Immediate."""
    return str(sc.get("volumeBindingMode") or IMMEDIATE)


def reclaim_policy(sc: Mapping[str, Any]) -> str:
    """``reclaimPolicy``; kubernetes/api storage/v1/types.go: the API default is Delete."""
    return str(sc.get("reclaimPolicy") or "Delete")


def csi_name(provisioner: str) -> str:
    """The name that provisions for ``provisioner`` (the CSI driver for migrated in-tree names)."""
    return CSI_MIGRATION.get(provisioner, provisioner)


# --- Claims and volumes -------------------------------------------------------------------------


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def claim_class(claim: Mapping[str, Any]) -> str:
    """k8s.io/component-helpers storage/volume/helpers.go GetPersistentVolumeClaimClass.

    The beta annotation wins, then ``spec.storageClassName``; nil and ``""`` both give ``""``.
    """
    ann = annotations_of(claim)
    if ANN_BETA_CLASS in ann:
        return str(ann[ANN_BETA_CLASS])
    name = (claim.get("spec") or {}).get("storageClassName")
    return "" if name is None else str(name)


def claim_has_class(claim: Mapping[str, Any]) -> bool:
    """k8s.io/component-helpers PersistentVolumeClaimHasClass: ``""`` counts, nil does not."""
    if ANN_BETA_CLASS in annotations_of(claim):
        return True
    return (claim.get("spec") or {}).get("storageClassName") is not None


def volume_class(pv: Mapping[str, Any]) -> str:
    """k8s.io/component-helpers GetPersistentVolumeClass."""
    ann = annotations_of(pv)
    if ANN_BETA_CLASS in ann:
        return str(ann[ANN_BETA_CLASS])
    return str((pv.get("spec") or {}).get("storageClassName") or "")


def claim_key(claim: Mapping[str, Any]) -> str:
    """``namespace/name`` (klog.KObj), as provisioner events quote it."""
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def requested_storage(obj: Mapping[str, Any]) -> str | None:
    """``spec.resources.requests.storage`` of a claim."""
    value = (((obj.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
    return None if value is None else str(value)


def size(value: Any) -> Fraction:
    """A storage quantity in bytes (0 when absent or unparsable)."""
    return quantity(value) or Fraction(0)


def pods_using_claim(store: Store, claim: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Active pods in the claim's namespace with a volume naming the claim, by name.

    kubernetes/kubernetes pkg/controller/volume/common: the PodPVCIndex; terminated pods
    (Succeeded/Failed, pkg/volume/util IsPodTerminated) are left out.
    """
    meta = claim.get("metadata") or {}
    out = []
    for pod in store.list("Pod", meta.get("namespace")):
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for vol in (pod.get("spec") or {}).get("volumes") or ():
            if ((vol.get("persistentVolumeClaim") or {}).get("claimName")) == meta.get("name"):
                out.append(pod)
                break
    return out


def node_labels(sim: Simulation, name: str) -> dict[str, str]:
    """Labels of node ``name``: the Node object if the store has one, else the profile's node."""
    node = sim.store.get("Node", "", name)
    if node is not None:
        return dict((node.get("metadata") or {}).get("labels") or {})
    for n in getattr(sim.profile, "nodes", ()) or ():
        if n.name == name:
            return dict(n.labels)
    return {"kubernetes.io/hostname": name}


def with_annotations(obj: Mapping[str, Any], **changes: str | None) -> dict[str, Any]:
    """A deep copy of ``obj`` with annotations set (or removed where the value is None)."""
    new = copy.deepcopy(dict(obj))
    ann = dict(new.setdefault("metadata", {}).get("annotations") or {})
    for key, value in changes.items():
        if value is None:
            ann.pop(key, None)
        else:
            ann[key] = value
    new["metadata"]["annotations"] = ann
    return new


def last_event_for(sim: Simulation, obj: Mapping[str, Any]) -> int | None:
    """The trace id of the write that produced a watch event (the newest entry, if it is about ``obj``)."""
    n = len(sim.trace)
    if n and sim.trace[n - 1].obj == ref_of(obj):
        return sim.trace[n - 1].id
    return None


# --- Wiring -------------------------------------------------------------------------------------


def install_storage(
    sim: Simulation,
) -> tuple[PersistentVolumeController, list[ExternalProvisioner], list[ExternalResizer]]:
    """Seed the profile's classes and start the PV controller plus one provisioner per driver.

    Only the provisioners named by the profile's classes run (after CSI migration); a class a
    release creates with another provisioner leaves its claims waiting (ExternalProvisioning).
    """
    from helmsim.cluster.controllers.provisioner import ExternalProvisioner, ExternalResizer
    from helmsim.cluster.controllers.pvbinder import PersistentVolumeController

    seed_storage(sim)
    binder = PersistentVolumeController(sim)
    names: dict[str, None] = {}
    expandable: dict[str, None] = {}
    for cls in getattr(sim.profile, "storage_classes", ()) or ():
        if cls.provisioner.startswith("kubernetes.io/") and cls.provisioner not in CSI_MIGRATION:
            continue  # an in-tree name with no CSI driver: nothing runs for it
        names.setdefault(csi_name(cls.provisioner), None)
        if cls.allow_volume_expansion:
            expandable.setdefault(csi_name(cls.provisioner), None)
    provisioners = [ExternalProvisioner(sim, name) for name in names]
    resizers = [ExternalResizer(sim, name) for name in expandable]
    return binder, provisioners, resizers
