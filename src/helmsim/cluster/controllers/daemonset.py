"""The DaemonSet controller: one pod per eligible node.

Mirrors kubernetes/kubernetes pkg/controller/daemon (daemon_controller.go manage/
updateDaemonSetStatus, update.go rollingUpdate, util/daemonset_util.go). Nodes are the ``Node``
objects in the store (``seed_cluster`` creates them from the profile), else the profile's nodes.
Every sync runs ``controller_sync`` after the DaemonSet, one of its pods or a Node changed.

A node is eligible when the template's ``nodeSelector`` and required node affinity match its labels
and its NoSchedule/NoExecute taints are tolerated (with the tolerations the controller adds).
Pods are created unscheduled with a required node affinity on ``metadata.name`` (the default
scheduler places them), as daemon_controller.go does since 1.12.

Rolling update: old-revision pods are deleted while fewer than ``maxUnavailable`` (default 1) pods
are unavailable; ``OnDelete`` never replaces pods. Not modelled: maxSurge, ControllerRevisions
(the revision is a template hash in ``controller-revision-hash``), node resource fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from helmsim.cluster.controllers.workloads import (
    CONTROLLER_RETRY,
    KeyedQueue,
    delete_owned_pod,
    controller_ref,
    generate_name,
    int_or_percent,
    is_pod_available,
    is_pod_ready,
    is_terminating,
    pod_from_template,
    pod_phase,
    template_hash,
    trigger_cause,
)
from helmsim.cluster.engine import Controller
from helmsim.cluster.selectors import matches_selector
from helmsim.cluster.store import ApiError, ref_of

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

ACTOR = "daemonset-controller"
REVISION_LABEL = "controller-revision-hash"

# pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations
DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
HOST_NETWORK_TOLERATION = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}

Key = tuple[str, str]


def tolerates(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """k8s.io/api core/v1 toleration.go ToleratesTaint."""
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("key") and t.get("key") != taint.get("key"):
            continue
        if not t.get("key") and t.get("operator") != "Exists":
            continue
        op = t.get("operator") or "Equal"
        if op == "Exists" or (
            op == "Equal" and (t.get("value") or "") == (taint.get("value") or "")
        ):
            return True
    return False


def node_affinity_matches(affinity: Mapping[str, Any] | None, node: Mapping[str, Any]) -> bool:
    """Required node affinity: any term matches (matchExpressions on labels, matchFields on name)."""
    required = (
        ((affinity or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    labels = (node.get("metadata") or {}).get("labels") or {}
    fields = {"metadata.name": (node.get("metadata") or {}).get("name", "")}
    for term in terms:
        ok = matches_selector({"matchExpressions": term.get("matchExpressions") or []}, labels)
        ok = ok and matches_selector({"matchExpressions": term.get("matchFields") or []}, fields)
        if ok and (term.get("matchExpressions") or term.get("matchFields")):
            return True
    return False


class DaemonSetController(Controller):
    """apps/v1 DaemonSet controller (actor ``daemonset-controller``)."""

    name = ACTOR
    kinds = ("DaemonSet", "Pod", "Node")

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        self.queue = KeyedQueue(sim, self._sync)
        self._created: dict[str, int] = {}
        self._failed: set[Key] = set()

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        sync = self.sim.latency("controller_sync")
        kind = obj.get("kind")
        if kind == "DaemonSet":
            if event != "DELETED":
                meta = obj["metadata"]
                self.queue.add_after(
                    (meta.get("namespace") or "", meta["name"]), sync, trigger_cause(self.sim, obj)
                )
        elif kind == "Node":
            for ds in self.store.list("DaemonSet"):
                meta = ds["metadata"]
                self.queue.add_after(
                    (meta.get("namespace") or "", meta["name"]), sync, trigger_cause(self.sim, obj)
                )
        else:
            ref = controller_ref(obj)
            if ref is not None and ref.get("kind") == "DaemonSet":
                ns = obj["metadata"].get("namespace") or ""
                self.queue.add_after((ns, ref["name"]), sync, trigger_cause(self.sim, obj))

    def nodes(self) -> list[dict[str, Any]]:
        """Node objects from the store, else minimal ones made from the profile's nodes."""
        nodes = self.store.list("Node")
        if nodes:
            return nodes
        out = []
        for n in getattr(self.sim.profile, "nodes", []) or []:
            out.append(
                {
                    "kind": "Node",
                    "metadata": {"name": n.name, "labels": dict(n.labels)},
                    "spec": {
                        "taints": [
                            t.model_dump() if hasattr(t, "model_dump") else dict(t)
                            for t in n.taints
                        ]
                    },
                }
            )
        return out

    def _should_run(self, ds: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
        """daemon_controller.go NodeShouldRunDaemonPod (predicates without resources)."""
        pspec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
        labels = (node.get("metadata") or {}).get("labels") or {}
        selector = pspec.get("nodeSelector") or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            return False
        if not node_affinity_matches(pspec.get("affinity"), node):
            return False
        tolerations = list(pspec.get("tolerations") or []) + DAEMON_TOLERATIONS
        if pspec.get("hostNetwork"):
            tolerations.append(HOST_NETWORK_TOLERATION)
        for taint in (node.get("spec") or {}).get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(
                tolerations, taint
            ):
                return False
        return True

    def _sync(self, key: Key, cause: int | None) -> None:
        """daemon_controller.go processNextWorkItem: a sync whose pod creation failed is re-queued
        rate-limited (the default controller rate limiter); a clean one is forgotten."""
        self._failed.discard(key)
        self._sync_set(key, cause)
        if key in self._failed:
            self.queue.add_rate_limited(key, CONTROLLER_RETRY, cause)
        else:
            self.queue.forget(key)

    def _sync_set(self, key: Key, cause: int | None) -> None:
        ds = self.store.get("DaemonSet", *key)
        if ds is None or ds["metadata"].get("deletionTimestamp"):
            return
        spec = ds.get("spec") or {}
        rev = template_hash(spec.get("template") or {})
        nodes = self.nodes()
        eligible = {n["metadata"]["name"] for n in nodes if self._should_run(ds, n)}
        by_node: dict[str, list[dict[str, Any]]] = {}
        for pod in self._pods(ds):
            by_node.setdefault(_target_node(pod), []).append(pod)
        min_ready = int(spec.get("minReadySeconds") or 0)
        for node in nodes:
            nname = node["metadata"]["name"]
            pods = [p for p in by_node.get(nname, []) if not is_terminating(p)]
            if nname in eligible:
                failed = [p for p in pods if pod_phase(p) == "Failed"]
                for p in failed:
                    # daemon_controller.go podsShouldBeOnNode: failed daemon pods are killed
                    self.store.record_event(
                        ds,
                        "Warning",
                        "FailedDaemonPod",
                        f"Found failed daemon pod {p['metadata'].get('namespace')}/{p['metadata']['name']} on node {nname}, will try to kill it",
                        source=ACTOR,
                        cause=cause,
                    )
                    self._delete(ds, p, cause)
                if not [p for p in pods if pod_phase(p) != "Failed"] and not [
                    p for p in by_node.get(nname, []) if is_terminating(p)
                ]:
                    self._create(ds, nname, rev, cause)
            else:
                for p in pods:
                    self._delete(ds, p, cause)
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            self._rolling_update(ds, eligible, rev, min_ready, strategy, cause)
        self._write_status(ds, eligible, rev, min_ready, cause)

    def _pods(self, ds: Mapping[str, Any]) -> list[dict[str, Any]]:
        uid = ds["metadata"]["uid"]
        return [
            p
            for p in self.store.list("Pod", ds["metadata"].get("namespace") or "")
            if (controller_ref(p) or {}).get("uid") == uid
        ]

    def _rolling_update(
        self,
        ds: dict[str, Any],
        eligible: set[str],
        rev: str,
        min_ready: int,
        strategy: Mapping[str, Any],
        cause: int | None,
    ) -> None:
        """update.go rollingUpdate (maxSurge 0): replace old pods within maxUnavailable."""
        pods = [p for p in self._pods(ds) if _target_node(p) in eligible]
        max_unavailable = int_or_percent(
            (strategy.get("rollingUpdate") or {}).get("maxUnavailable"),
            len(eligible),
            round_up=True,
            default=1,
        )
        now = self.sim.now
        unavailable = sum(
            1
            for n in eligible
            if not any(
                _target_node(p) == n
                and not is_terminating(p)
                and is_pod_available(p, min_ready, now)
                for p in pods
            )
        )
        old = [
            p
            for p in pods
            if not is_terminating(p)
            and (p["metadata"].get("labels") or {}).get(REVISION_LABEL) != rev
        ]
        # unavailable old pods go first, then available ones while the budget allows
        for p in sorted(old, key=lambda p: is_pod_available(p, min_ready, now)):
            if is_pod_available(p, min_ready, now):
                if unavailable >= max_unavailable:
                    break
                unavailable += 1
            self._delete(ds, p, cause)

    def _create(self, ds: dict[str, Any], node: str, rev: str, cause: int | None) -> None:
        meta = ds["metadata"]
        n = self._created.get(meta["uid"], 0) + 1
        self._created[meta["uid"]] = n
        base = f"{meta['name']}-"
        name = generate_name(base, f"{meta['uid']}/{n}")
        pod = pod_from_template(
            ds,
            (ds.get("spec") or {}).get("template") or {},
            name,
            generate_base=base,
            labels={
                REVISION_LABEL: rev,
                "pod-template-generation": str(meta.get("generation") or 1),
            },
        )
        pspec = pod["spec"]
        # daemonset_util.go ReplaceDaemonSetPodNodeNameNodeAffinity: pin to the node by name
        pspec.setdefault("affinity", {})["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            }
        }
        tolerations = list(pspec.get("tolerations") or [])
        extra = DAEMON_TOLERATIONS + ([HOST_NETWORK_TOLERATION] if pspec.get("hostNetwork") else [])
        for t in extra:
            if t not in tolerations:
                tolerations.append(dict(t))
        pspec["tolerations"] = tolerations
        try:
            created = self.store.create(pod, actor=ACTOR, cause=cause)
        except ApiError as err:
            # controller_utils.go RealPodControl.createPods: FailedCreate "Error creating: <err>"
            self.store.record_event(
                ds, "Warning", "FailedCreate", f"Error creating: {err.message}", source=ACTOR, cause=cause
            )
            self._failed.add((meta.get("namespace") or "", meta["name"]))
            return
        self.store.record_event(
            ds,
            "Normal",
            "SuccessfulCreate",
            f"Created pod: {name}",
            source=ACTOR,
            cause=trigger_cause(self.sim, created),
        )

    def _delete(self, ds: dict[str, Any], pod: dict[str, Any], cause: int | None) -> None:
        delete_owned_pod(self, ds, pod, f"Deleted pod: {pod['metadata']['name']}", cause)

    def _write_status(
        self, ds: dict[str, Any], eligible: set[str], rev: str, min_ready: int, cause: int | None
    ) -> None:
        """daemon_controller.go updateDaemonSetStatus."""
        now = self.sim.now
        pods = [p for p in self._pods(ds) if not is_terminating(p) and pod_phase(p) != "Failed"]
        nodes_with: dict[str, list[dict[str, Any]]] = {}
        for p in pods:
            nodes_with.setdefault(_target_node(p), []).append(p)
        desired = len(eligible)
        current = sum(1 for n in eligible if n in nodes_with)
        mis = sum(1 for n in nodes_with if n not in eligible)
        ready: int = 0
        available: int = 0
        updated: int = 0
        for n in eligible:
            ps = nodes_with.get(n, [])
            if any(is_pod_ready(p) for p in ps):
                ready += 1
            if any(is_pod_available(p, min_ready, now) for p in ps):
                available += 1
            if any((p["metadata"].get("labels") or {}).get(REVISION_LABEL) == rev for p in ps):
                updated += 1
        status: dict[str, Any] = {
            "currentNumberScheduled": current,
            "numberMisscheduled": mis,
            "desiredNumberScheduled": desired,
            "numberReady": ready,
            "observedGeneration": int(ds["metadata"].get("generation") or 1),
            "updatedNumberScheduled": updated,
            "numberAvailable": available,
        }
        if desired - available > 0:
            status["numberUnavailable"] = desired - available
        old = ds.get("status") or {}
        if status == old:
            return
        message = (
            f"{ref_of(ds)}: desired={desired} current={current} ready={ready} "
            f"available={available} updated={updated}"
        )
        self.store.update_status(
            "DaemonSet",
            ds["metadata"].get("namespace"),
            ds["metadata"]["name"],
            status,
            actor=ACTOR,
            cause=cause,
            message=message,
        )


def _target_node(pod: Mapping[str, Any]) -> str:
    """daemonset util GetTargetNodeName: spec.nodeName, else the pinned node affinity."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    terms = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    for term in terms:
        for f in term.get("matchFields") or []:
            if (
                f.get("key") == "metadata.name"
                and f.get("operator") == "In"
                and len(f.get("values") or []) == 1
            ):
                return str(f["values"][0])
    return ""
