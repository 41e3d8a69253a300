"""The attach/detach controller's view of volumes: which a pod must attach, and where each is.

kubernetes pkg/controller/volume/attachdetach: a pod's persistent volume whose plugin is
attachable is attached to the pod's node before the kubelet mounts it; a volume whose access
modes allow no second node (reconciler.go isMultiAttachForbidden) is attached to one node at a
time, and a pod on another node waits ("Multi-Attach error") until every pod using it on the
first node is gone and the volume detached.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import simpy
from msgspec import Struct

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

Key = tuple[str, str]

SOURCE = "attachdetach-controller"
# pkg/controller/volume/attachdetach/attach_detach_controller.go DefaultTimerConfig
# ReconcilerMaxWaitForUnmountDuration: a volume still mounted on a node that stopped reporting
# is force-detached after 6 minutes.
MAX_WAIT_FOR_UNMOUNT = 360.0
# pkg/volume/util/operationexecutor: in-tree plugins that implement volume.AttachableVolumePlugin
# (awsebs, gcepd, azuredd, cinder, vsphere_volume, rbd, iscsi, fc; CSI migration keeps them so).
IN_TREE_ATTACHABLE = (
    "awsElasticBlockStore", "gcePersistentDisk", "azureDisk", "cinder", "vsphereVolume", "rbd", "iscsi", "fc",
)


class Volume(Struct, frozen=True):
    """A volume of a pod that must be attached to its node first."""

    name: str
    """The pod's name for it (``spec.volumes[].name``)."""
    pv: str
    """The PersistentVolume bound to the pod's claim."""
    exclusive: bool
    """Attached to one node at a time (no ReadWriteMany or ReadOnlyMany access mode)."""
    driver: str | None = None
    """The CSI driver, when the profile holds no CSIDriver object for it (attach assumed)."""


def _exclusive(pv_spec: Mapping[str, Any]) -> bool:
    # reconciler.go isMultiAttachForbidden: a vSphere volume never is; a PV without access modes
    # is left to the attacher; any ReadWriteMany or ReadOnlyMany mode allows several nodes.
    if "vsphereVolume" in pv_spec:
        return False
    modes = [str(m) for m in pv_spec.get("accessModes") or ()]
    return bool(modes) and not any(m in ("ReadWriteMany", "ReadOnlyMany") for m in modes)


def volumes_to_attach(store: Any, pod: Mapping[str, Any]) -> list[Volume]:
    """The pod's bound claims whose volumes need attaching, in the pod's volume order."""
    ns = str(pod["metadata"].get("namespace") or "")
    out: list[Volume] = []
    for vol in (pod.get("spec") or {}).get("volumes") or ():
        src = vol.get("persistentVolumeClaim") if isinstance(vol, Mapping) else None
        if not isinstance(src, Mapping):
            continue
        pvc = store.get("PersistentVolumeClaim", ns, str(src.get("claimName") or ""))
        name = str(((pvc or {}).get("spec") or {}).get("volumeName") or "")
        pv = store.get("PersistentVolume", None, name) if name else None
        if pv is None:
            continue
        spec = pv.get("spec") or {}
        csi = spec.get("csi")
        assumed: str | None = None
        if isinstance(csi, Mapping):
            driver = str(csi.get("driver") or "")
            obj = store.get("CSIDriver", None, driver)
            # pkg/volume/csi/csi_plugin.go skipAttach: attach unless the driver's CSIDriver object
            # says attachRequired: false; without a CSIDriver object attach is required.
            if obj is not None and (obj.get("spec") or {}).get("attachRequired") is False:
                continue
            assumed = driver if obj is None else None
        elif not any(k in spec for k in IN_TREE_ATTACHABLE):
            continue  # hostPath, local, nfs, ...: nothing to attach
        out.append(Volume(str(vol.get("name") or ""), name, _exclusive(spec), assumed))
    return out


class Attachments:
    """Which nodes each volume is attached to, and for which pods (the actual state of the world)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.held: dict[str, dict[str, set[Key]]] = {}
        self._attached: dict[tuple[str, str], simpy.Event] = {}
        self._released: dict[str, simpy.Event] = {}
        self.assumed_drivers: set[str] = set()
        """CSI drivers attached without a CSIDriver object in the profile (said once each)."""

    def elsewhere(self, pv: str, node: str) -> list[Key]:
        """Pods using ``pv`` on nodes other than ``node``, sorted."""
        return sorted(k for n, pods in self.held.get(pv, {}).items() if n != node for k in pods)

    def hold(self, pv: str, node: str, pod: Key, attach: Callable[[], float]) -> simpy.Event:
        """``pod`` uses ``pv`` on ``node``: the attach's event, fired once attached. Without an
        attachment there yet, one starts and lasts ``attach()`` seconds, whatever becomes of the
        pod meanwhile (the controller attaches for every scheduled pod that uses the volume)."""
        nodes = self.held.setdefault(pv, {})
        if node not in nodes:
            ev = self._attached[(pv, node)] = self.sim.env.event()
            self.sim.after(attach(), self._done, pv, node, ev)
        nodes.setdefault(node, set()).add(pod)
        return self._attached[(pv, node)]

    def _done(self, pv: str, node: str, ev: simpy.Event) -> None:
        if not ev.triggered:
            ev.succeed()

    def released(self, pv: str) -> simpy.Event:
        """An event that fires when ``pv`` is next detached from a node."""
        ev = self._released.get(pv)
        if ev is None or ev.triggered:
            ev = self._released[pv] = self.sim.env.event()
        return ev

    def release(self, pod: Key, delay: float = 0.0) -> None:
        """``pod`` no longer uses its volumes: each is detached from a node ``delay`` seconds
        later unless another pod there still uses it."""
        for pv, nodes in self.held.items():
            for node, pods in nodes.items():
                if pod in pods:
                    self.sim.after(delay, self._drop, pv, node, pod)

    def _drop(self, pv: str, node: str, pod: Key) -> None:
        nodes = self.held.get(pv, {})
        pods = nodes.get(node)
        if pods is None or pod not in pods:
            return
        pods.discard(pod)
        if pods:
            return
        del nodes[node]
        self._attached.pop((pv, node), None)
        ev = self._released.pop(pv, None)
        if ev is not None and not ev.triggered:
            ev.succeed()
