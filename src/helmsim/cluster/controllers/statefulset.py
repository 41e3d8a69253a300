"""The StatefulSet controller: ordered pods ``<sts>-0..n-1`` and their volume claims.

Mirrors kubernetes/kubernetes pkg/controller/statefulset (stateful_set_control.go
updateStatefulSet/computeReplicaStatus, stateful_pod_control.go events and claims,
stateful_set_utils.go naming). Every sync runs ``controller_sync`` after the StatefulSet or one of
its pods changed.

* ``OrderedReady`` (default): pod i is created only when pods 0..i-1 are Running and Ready; scale
  down removes the highest ordinal first, one at a time.
* ``Parallel``: all missing pods are created in one sync.
* ``volumeClaimTemplates``: claim ``<template>-<sts>-<i>`` is created before pod i (and kept:
  the default retention policy is Retain; ``whenDeleted: Delete`` makes the StatefulSet its owner).
* ``RollingUpdate`` (default): with every pod Running and Ready, the highest-ordinal pod of an old
  revision at or above ``partition`` is deleted and recreated; ``OnDelete`` never replaces pods.
* Failed or Succeeded pods are deleted and recreated (``RecreatingFailedPod``).

Not modelled: ControllerRevision objects (revisions are ``<sts>-<hash>`` names only),
maxUnavailable for rolling updates, ``ordinals.start``, claim retention ``whenScaled``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from helmsim.cluster.controllers.workloads import (
    CONTROLLER_RETRY,
    KeyedQueue,
    delete_owned_pod,
    enqueue_owner,
    controller_ref,
    is_pod_available,
    is_pod_ready,
    is_terminating,
    pod_from_template,
    pod_phase,
    template_hash,
    trigger_cause,
)
from helmsim.cluster.engine import Controller
from helmsim.cluster.store import ApiError, clone, owner_reference, ref_of

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

ACTOR = "statefulset-controller"
REVISION_LABEL = "controller-revision-hash"  # apps/v1 ControllerRevisionHashLabelKey
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"

Key = tuple[str, str]


def revision_name(sts: Mapping[str, Any]) -> str:
    """``<sts>-<hash of the pod template>`` (controller_history.go ControllerRevisionName)."""
    return (
        f"{sts['metadata']['name']}-{template_hash((sts.get('spec') or {}).get('template') or {})}"
    )


def claim_name(template_name: str, sts_name: str, ordinal: int) -> str:
    """stateful_set_utils.go getPersistentVolumeClaimName: ``<template>-<sts>-<ordinal>``."""
    return f"{template_name}-{sts_name}-{ordinal}"


def _running_ready(pod: Mapping[str, Any]) -> bool:
    """stateful_set_utils.go isRunningAndReady."""
    return pod_phase(pod) == "Running" and is_pod_ready(pod)


class StatefulSetController(Controller):
    """apps/v1 StatefulSet controller (actor ``statefulset-controller``)."""

    name = ACTOR
    kinds = ("StatefulSet", "Pod")

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        self.queue = KeyedQueue(sim, self._sync)
        self._failed: set[Key] = set()

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        enqueue_owner(self.sim, self.queue, "StatefulSet", event, obj)

    def _sync(self, key: Key, cause: int | None) -> None:
        """stateful_set.go processNextWorkItem: a sync whose create failed is re-queued
        rate-limited (the default controller rate limiter); a clean one is forgotten."""
        self._failed.discard(key)
        self._sync_set(key, cause)
        if key in self._failed:
            self.queue.add_rate_limited(key, CONTROLLER_RETRY, cause)
        else:
            self.queue.forget(key)

    def _sync_set(self, key: Key, cause: int | None) -> None:
        sts = self.store.get("StatefulSet", *key)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return
        spec = sts.get("spec") or {}
        replicas = 1 if spec.get("replicas") is None else int(spec["replicas"])
        parallel = spec.get("podManagementPolicy") == "Parallel"
        strategy = spec.get("updateStrategy") or {}
        on_delete = strategy.get("type") == "OnDelete"
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        old_status = sts.get("status") or {}
        update_rev = revision_name(sts)
        current_rev = old_status.get("currentRevision") or update_rev
        name = key[1]
        pods = {p["metadata"]["name"]: p for p in self._pods(sts)}

        self._act(sts, pods, replicas, parallel, on_delete, partition, update_rev, cause)
        pods = {p["metadata"]["name"]: p for p in self._pods(sts)}
        self._write_status(sts, pods, replicas, update_rev, current_rev, on_delete, name, cause)

    def _pods(self, sts: Mapping[str, Any]) -> list[dict[str, Any]]:
        uid = sts["metadata"]["uid"]
        out = []
        for p in self.store.list("Pod", sts["metadata"].get("namespace") or ""):
            ref = controller_ref(p)
            if ref is not None and ref.get("uid") == uid:
                out.append(p)
        return out

    def _act(
        self,
        sts: dict[str, Any],
        pods: dict[str, dict[str, Any]],
        replicas: int,
        parallel: bool,
        on_delete: bool,
        partition: int,
        update_rev: str,
        cause: int | None,
    ) -> None:
        """stateful_set_control.go updateStatefulSet, one step per sync for OrderedReady."""
        name = sts["metadata"]["name"]
        monotonic = not parallel
        for i in range(replicas):
            pod_name = f"{name}-{i}"
            pod = pods.get(pod_name)
            if (
                pod is not None
                and pod_phase(pod) in ("Failed", "Succeeded")
                and not is_terminating(pod)
            ):
                self.store.record_event(
                    sts,
                    "Warning",
                    "RecreatingFailedPod",
                    f"StatefulSet {sts['metadata'].get('namespace')}/{name} is recreating failed Pod {pod_name}",
                    source=ACTOR,
                    cause=cause,
                )
                self._delete(sts, pod, cause)
                if monotonic:
                    return
                continue
            if pod is None:
                self._create(sts, i, update_rev, cause)
                if monotonic:
                    return  # wait for it to be Running and Ready
                continue
            if monotonic and (is_terminating(pod) or not _running_ready(pod)):
                return  # "StatefulSet is waiting for Pod to be Running and Ready"
        # scale down: highest ordinal first
        condemned = sorted(
            (p for p in pods.values() if _ordinal(p, name) >= replicas),
            key=lambda p: -_ordinal(p, name),
        )
        for pod in condemned:
            if is_terminating(pod):
                if monotonic:
                    return
                continue
            if monotonic and any(
                not _running_ready(p) for p in pods.values() if _ordinal(p, name) < replicas
            ):
                return
            self._delete(sts, pod, cause)
            if monotonic:
                return
        if on_delete:
            return
        # rolling update: all pods Running and Ready, replace the highest old-revision ordinal
        current = [pods.get(f"{name}-{i}") for i in range(replicas)]
        if any(p is None or is_terminating(p) or not _running_ready(p) for p in current):
            return
        for i in range(replicas - 1, partition - 1, -1):
            pod = current[i]
            assert pod is not None
            if (pod["metadata"].get("labels") or {}).get(REVISION_LABEL) != update_rev:
                self._delete(sts, pod, cause)
                return

    def _create(self, sts: dict[str, Any], ordinal: int, revision: str, cause: int | None) -> None:
        spec = sts.get("spec") or {}
        name = sts["metadata"]["name"]
        ns = sts["metadata"].get("namespace") or "default"
        pod_name = f"{name}-{ordinal}"
        pod = pod_from_template(
            sts,
            spec.get("template") or {},
            pod_name,
            labels={
                REVISION_LABEL: revision,
                POD_NAME_LABEL: pod_name,
                POD_INDEX_LABEL: str(ordinal),
            },
        )
        # stateful_set_utils.go initIdentity: hostname and subdomain (the governing Service)
        pod["spec"]["hostname"] = pod_name
        if spec.get("serviceName"):
            pod["spec"]["subdomain"] = spec["serviceName"]
        volumes = [v for v in pod["spec"].get("volumes") or []]
        retention = spec.get("persistentVolumeClaimRetentionPolicy") or {}
        selector_labels = ((spec.get("selector") or {}).get("matchLabels")) or {}
        for tpl in spec.get("volumeClaimTemplates") or []:
            tname = (tpl.get("metadata") or {}).get("name", "")
            cname = claim_name(tname, name, ordinal)
            volumes = [v for v in volumes if v.get("name") != tname]
            volumes.append({"name": tname, "persistentVolumeClaim": {"claimName": cname}})
            if self.store.get("PersistentVolumeClaim", ns, cname) is not None:
                continue
            claim: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": cname,
                    "namespace": ns,
                    # stateful_set_utils.go getPersistentVolumeClaims: template labels + selector
                    "labels": {
                        **((tpl.get("metadata") or {}).get("labels") or {}),
                        **selector_labels,
                    },
                },
                "spec": clone(tpl.get("spec") or {}),
                "status": {"phase": "Pending"},
            }
            if (tpl.get("metadata") or {}).get("annotations"):
                claim["metadata"]["annotations"] = dict(tpl["metadata"]["annotations"])
            if retention.get("whenDeleted") == "Delete":
                claim["metadata"]["ownerReferences"] = [owner_reference(sts)]
            try:
                created = self.store.create(claim, actor=ACTOR, cause=cause)
            except ApiError as err:
                self.store.record_event(
                    sts,
                    "Warning",
                    "FailedCreate",
                    f"create Claim {cname} for Pod {pod_name} in StatefulSet {name} failed error: {err.message}",
                    source=ACTOR,
                    cause=cause,
                )
                self._failed.add((ns, name))
                return
            # stateful_pod_control.go recordClaimEvent
            self.store.record_event(
                sts,
                "Normal",
                "SuccessfulCreate",
                f"create Claim {cname} Pod {pod_name} in StatefulSet {name} success",
                source=ACTOR,
                cause=trigger_cause(self.sim, created),
            )
        if volumes:
            pod["spec"]["volumes"] = volumes
        try:
            created = self.store.create(pod, actor=ACTOR, cause=cause)
        except ApiError as err:
            # stateful_pod_control.go recordPodEvent: "%s Pod %s in StatefulSet %s failed error: %s"
            self.store.record_event(
                sts,
                "Warning",
                "FailedCreate",
                f"create Pod {pod_name} in StatefulSet {name} failed error: {err.message}",
                source=ACTOR,
                cause=cause,
            )
            self._failed.add((ns, name))
            return
        # stateful_pod_control.go recordPodEvent
        self.store.record_event(
            sts,
            "Normal",
            "SuccessfulCreate",
            f"create Pod {pod_name} in StatefulSet {name} successful",
            source=ACTOR,
            cause=trigger_cause(self.sim, created),
        )

    def _delete(self, sts: dict[str, Any], pod: dict[str, Any], cause: int | None) -> None:
        # stateful_pod_control.go recordPodEvent
        name = pod["metadata"]["name"]
        message = f"delete Pod {name} in StatefulSet {sts['metadata']['name']} successful"
        delete_owned_pod(self, sts, pod, message, cause)

    def _write_status(
        self,
        sts: dict[str, Any],
        pods: dict[str, dict[str, Any]],
        replicas: int,
        update_rev: str,
        current_rev: str,
        on_delete: bool,
        name: str,
        cause: int | None,
    ) -> None:
        """stateful_set_control.go computeReplicaStatus + completeRollingUpdate."""
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        live = [p for p in pods.values() if pod_phase(p) not in ("Failed", "Succeeded")]
        status: dict[str, Any] = {
            "observedGeneration": int(sts["metadata"].get("generation") or 1),
            "replicas": len(live),
            "readyReplicas": sum(1 for p in live if _running_ready(p)),
            "availableReplicas": sum(
                1
                for p in live
                if _running_ready(p) and is_pod_available(p, min_ready, self.sim.now)
            ),
            "currentReplicas": 0,
            "updatedReplicas": 0,
            "currentRevision": current_rev,
            "updateRevision": update_rev,
            "collisionCount": 0,
        }
        for p in live:
            if is_terminating(p):
                continue
            rev = (p["metadata"].get("labels") or {}).get(REVISION_LABEL)
            if rev == current_rev:
                status["currentReplicas"] += 1
            if rev == update_rev:
                status["updatedReplicas"] += 1
        if (
            not on_delete
            and status["updatedReplicas"] == status["replicas"] == replicas
            and status["readyReplicas"] == replicas
        ):
            status["currentRevision"] = update_rev
            status["currentReplicas"] = status["updatedReplicas"]
        old = sts.get("status") or {}
        if status == old:
            return
        keys = (
            "replicas",
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "currentRevision",
        )
        message = None
        if any(old.get(k) != status.get(k) for k in keys):
            message = (
                f"{ref_of(sts)}: replicas={status['replicas']} ready={status['readyReplicas']} "
                f"current={status['currentReplicas']} updated={status['updatedReplicas']}"
            )
        self.store.update_status(
            "StatefulSet",
            sts["metadata"].get("namespace"),
            name,
            status,
            actor=ACTOR,
            cause=cause,
            message=message,
        )


def _ordinal(pod: Mapping[str, Any], sts_name: str) -> int:
    suffix = pod["metadata"]["name"][len(sts_name) + 1 :]
    return int(suffix) if suffix.isdigit() else -1
