"""The scheduler: binds pending pods to the profile's nodes, waiting for their volumes.

Filters are kube-scheduler's default plugins (:mod:`helmsim.cluster.scheduling`: NodeUnschedulable,
TaintToleration, NodeAffinity, NodeResourcesFit against the profile's allocatable,
PodTopologySpread, InterPodAffinity) plus VolumeBinding here (missing claims, unbound Immediate
claims, WaitForFirstConsumer claims that get the selected-node annotation and are waited for in
PreBind). Among the feasible nodes the one with the fewest pods wins, then the name
(deterministic; kube-scheduler scores resources and spreads). An unschedulable pod is retried when
the cluster changes in a way that may help it, as the plugins that rejected it register
(:data:`PLUGIN_EVENTS`: a pod that did not fit is helped by an assigned pod gone or a node added or
changed, not by another pod being placed; one that affinity or spreading rejected also by a pod
added or relabelled), after its back-off, and at the latest after 5 minutes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from msgspec.structs import replace

from helmsim.cluster.engine import Controller, Simulation
from helmsim.cluster.scheduling import (
    REASON_AFFINITY,
    NodeInfo,
    PodInfo,
    Snapshot,
    Taint,
    allocatable_amounts,
    filter_nodes,
    fit_error,
    has_required_anti_affinity,
    needs_assigned_pods,
    node_affinity_matches,
    node_selector_term_matches,
    tolerates,
)
from helmsim.cluster.store import ApiUnreachable, clone, ref_of

__all__ = [
    "REASON_AFFINITY",
    "SELECTED_NODE",
    "Scheduler",
    "fit_error",
    "node_affinity_matches",
    "node_selector_term_matches",
    "tolerates",
]

SOURCE = "default-scheduler"
# kubernetes pkg/controller/volume/persistentvolume/util/util.go AnnSelectedNode.
SELECTED_NODE = "volume.kubernetes.io/selected-node"
# kubernetes pkg/scheduler/apis/config/v1/defaults.go: VolumeBindingArgs.BindTimeoutSeconds = 600.
BIND_TIMEOUT = 600.0
# kubernetes pkg/scheduler/internal/queue/scheduling_queue.go
# DefaultPodMaxInUnschedulablePodsDuration: an unschedulable pod is retried after 5 min at most.
UNSCHEDULABLE_RETRY = 300.0
# kubernetes pkg/scheduler/framework/plugins/volumebinding/volume_binding.go
# ErrReasonUnboundImmediatePersistentVolumeClaim.
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# kubernetes pkg/scheduler/apis/config/v1/defaults.go: podInitialBackoffSeconds = 1,
# podMaxBackoffSeconds = 10: a pod is retried no sooner than 1 s after its first failed attempt,
# doubling per attempt to 10 s (scheduling_queue.go calculateBackoffDuration).
POD_INITIAL_BACKOFF = 1.0
POD_MAX_BACKOFF = 10.0

PodKey = tuple[str, str]

# The cluster events each Filter plugin registers (EventsToRegister in kubernetes
# pkg/scheduler/framework/plugins/{nodeunschedulable,tainttoleration,nodeaffinity,nodeports,noderesources/fit,
# podtopologyspread,interpodaffinity}): an unschedulable pod is moved back to the queue by an
# event only if a plugin that rejected it registers that event (scheduling_queue.go
# isPodWorthRequeuing; with no rejecting plugin recorded, every event moves it). Node events
# here stand for Node Add and every Node update, which all seven register.
ASSIGNED_POD_ADD = "AssignedPodAdd"
ASSIGNED_POD_UPDATE = "AssignedPodUpdateLabel"
ASSIGNED_POD_DELETE = "AssignedPodDelete"
NODE_CHANGE = "NodeAddOrUpdate"
PLUGIN_EVENTS: dict[str, frozenset[str]] = {
    "NodeUnschedulable": frozenset({NODE_CHANGE}),
    "TaintToleration": frozenset({NODE_CHANGE}),
    "NodeAffinity": frozenset({NODE_CHANGE}),
    "NodePorts": frozenset({ASSIGNED_POD_DELETE, NODE_CHANGE}),
    "NodeResourcesFit": frozenset({ASSIGNED_POD_DELETE, NODE_CHANGE}),
    "PodTopologySpread": frozenset({ASSIGNED_POD_ADD, ASSIGNED_POD_UPDATE, ASSIGNED_POD_DELETE, NODE_CHANGE}),
    "InterPodAffinity": frozenset({ASSIGNED_POD_ADD, ASSIGNED_POD_UPDATE, ASSIGNED_POD_DELETE, NODE_CHANGE}),
}


def worth_requeuing(rejected_by: frozenset[str], event: str) -> bool:
    """Whether ``event`` may make a pod the plugins ``rejected_by`` rejected schedulable."""
    return not rejected_by or any(event in PLUGIN_EVENTS.get(p, (event,)) for p in rejected_by)


def backoff_after(attempts: int) -> float:
    """calculateBackoffDuration: 1 s · 2^(attempts-1), capped at 10 s (0 before any attempt)."""
    if attempts <= 0:
        return 0.0
    return float(min(POD_INITIAL_BACKOFF * 2 ** (attempts - 1), POD_MAX_BACKOFF))


def _terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_info(pod: Mapping[str, Any], node: str | None = None) -> PodInfo:
    """The filters' view of a Pod object."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    return PodInfo(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        spec=spec,
        node=node if node is not None else spec.get("nodeName"),
        terminating=bool(meta.get("deletionTimestamp")),
    )


class Scheduler(Controller):
    """Binds Pending pods without ``spec.nodeName`` after the ``scheduling`` latency."""

    name = "scheduler"
    kinds = ("Pod", "PersistentVolumeClaim")

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        sim.store.watch(("Node",), self._on_node)
        self._queued: set[PodKey] = set()
        self._parked: dict[PodKey, int | None] = {}  # unschedulable: the FailedScheduling event id
        self._claim_waiters: dict[tuple[str, str], set[PodKey]] = defaultdict(set)
        self._binding: dict[PodKey, tuple[str, tuple[str, ...], int | None]] = {}
        self._backoff: dict[PodKey, float] = {}
        self._attempts: dict[PodKey, tuple[int, float]] = {}
        """Failed scheduling attempts of each pending pod: (count, time of the last)."""
        self._assigned: dict[PodKey, tuple[str, tuple[tuple[str, str], ...]]] = {}
        """The scheduler cache's assigned, non-terminal pods: node and labels."""
        self._usage: dict[str, tuple[int, dict[str, int]]] = {}
        """Per node: assigned pods and the sum of their requests (kept as pods come and go)."""
        self._requests: dict[PodKey, tuple[str, dict[str, int], bool, int]] = {}
        """Per assigned pod: its node, requests, whether it has required anti-affinity, and its
        priority."""
        self._anti_pods = 0
        self._priorities: Counter[int] = Counter()
        """Priorities of the assigned pods (preemption's dry run needs the pods only when one is
        lower than the incoming pod's)."""
        self._noted_no_allocatable = False
        self._nodes: tuple[int, list[NodeInfo]] | None = None
        self._rejected_by: dict[PodKey, frozenset[str]] = {}
        """Per unschedulable pod: the Filter plugins that rejected it on its last attempt."""

    def nodes(self) -> list[NodeInfo]:
        """The nodes the scheduler's snapshot holds: the live Node objects (a deleted Node is
        gone, a tainted or cordoned one filters by it), or the profile's nodes when the store
        has no Node objects (a bare simulation). Allocatable is the profile's. Built again only
        after a write to a Node."""
        writes = self.store.writes("Node")
        if self._nodes is None or self._nodes[0] != writes:
            self._nodes = (writes, self._build_nodes())
        return list(self._nodes[1])

    def _build_nodes(self) -> list[NodeInfo]:
        live = {n["metadata"]["name"]: n for n in self.store.list("Node")}
        out = []
        for n in self.sim.profile.nodes:
            obj = live.get(n.name)
            if live and obj is None:
                continue  # deleted: pkg/scheduler/backend/cache removes it from the snapshot
            alloc = allocatable_amounts(getattr(n, "allocatable", None) or {})
            if obj is None:
                out.append(
                    NodeInfo(
                        n.name,
                        n.labels,
                        tuple(Taint(t.key, t.value or "", t.effect) for t in n.taints),
                        alloc,
                    )
                )
                continue
            spec = obj.get("spec") or {}
            taints = tuple(
                Taint(
                    str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or "")
                )
                for t in spec.get("taints") or ()
            )
            labels = (obj.get("metadata") or {}).get("labels") or n.labels
            out.append(NodeInfo(n.name, labels, taints, alloc, bool(spec.get("unschedulable"))))
        return out

    def snapshot(self, incoming: PodInfo | None = None) -> Snapshot:
        """Nodes, their usage, and the assigned non-terminal pods (with the pods assumed on a
        node while their claims bind). The pod list is built only when ``incoming``'s filters
        or an assigned pod's required anti-affinity read it (else ``complete`` is False)."""
        usage = {n: (c, dict(u)) for n, (c, u) in self._usage.items()}
        assumed = []
        for key, (node, _claims, _cause) in sorted(self._binding.items()):
            pod = self.store.get("Pod", *key)
            if pod is not None:
                info = pod_info(pod, node)  # the cache's assumed pod
                assumed.append(info)
                count, used = usage.get(node, (0, {}))
                for k, v in info.requests.items():
                    used[k] = used.get(k, 0) + v
                usage[node] = (count + 1, used)
        full = incoming is None or self._anti_pods > 0 or needs_assigned_pods(incoming)
        pods = []
        if full:
            pods = [
                pod_info(p)
                for p in self.store.list("Pod")
                if (p.get("spec") or {}).get("nodeName") and not _terminal(p)
            ]
        ns_labels = {
            str(n["metadata"]["name"]): (n["metadata"].get("labels") or {})
            for n in self.store.list("Namespace")
        }
        return Snapshot(self.nodes(), [*pods, *assumed], ns_labels, usage, complete=full)

    # --- watch -----------------------------------------------------------------------------------
    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        if obj.get("kind") == "PersistentVolumeClaim":
            self._on_claim(obj)
            return
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        self._track_assigned(event, key, obj)
        if event == "DELETED":
            self._forget(key)
            return
        if event == "ADDED" and not (obj.get("status") or {}).get("phase"):
            # kubernetes pkg/registry/core/pod/strategy.go PrepareForCreate: phase Pending.
            self.sim.after(0, self._set_pending, key)
        spec = obj.get("spec") or {}
        if spec.get("schedulerName") not in (None, "", SOURCE):
            return  # another scheduler's pod (pkg/scheduler/profile: one profile per schedulerName)
        if spec.get("nodeName") or meta.get("deletionTimestamp"):
            self._forget(key)
            return
        if event == "ADDED" or (key not in self._parked and key not in self._binding):
            self._enqueue(key, self._cause(obj))

    def _track_assigned(self, event: str, key: PodKey, obj: Mapping[str, Any]) -> None:
        """Keep the cache of assigned pods; a change in it may help unschedulable pods.

        kubernetes pkg/scheduler/eventhandlers.go: assigned pods added, updated (labels) and
        deleted (a pod turning terminal leaves the cache) move unschedulable pods back to the
        queue (scheduling_queue.go MoveAllToActiveOrBackoffQueue, with the plugins' events:
        interpodaffinity and podtopologyspread on AssignedPod Add/UpdatePodLabel/Delete,
        noderesources on AssignedPod Delete).
        """
        node = (obj.get("spec") or {}).get("nodeName")
        before = self._assigned.get(key)
        if event == "DELETED" or not node or _terminal(obj):
            if before is not None:
                del self._assigned[key]
                self._account(key, None)
                self._cluster_changed(f"assigned pod {key[0]}/{key[1]} gone", ASSIGNED_POD_DELETE)
            return
        labels = tuple(sorted(((obj.get("metadata") or {}).get("labels") or {}).items()))
        now = (str(node), labels)
        if before != now:
            self._assigned[key] = now
            self._account(key, pod_info(obj))
            self._cluster_changed(
                f"assigned pod {key[0]}/{key[1]} {'added' if before is None else 'relabelled'}",
                ASSIGNED_POD_ADD if before is None else ASSIGNED_POD_UPDATE,
            )

    def _account(self, key: PodKey, info: PodInfo | None) -> None:
        """Move ``key``'s requests out of its old node's usage and into ``info``'s node."""
        old = self._requests.pop(key, None)
        if old is not None:
            node, requests, anti, priority = old
            count, used = self._usage.get(node, (0, {}))
            for k, v in requests.items():
                used[k] = used.get(k, 0) - v
            self._usage[node] = (count - 1, used)
            self._anti_pods -= anti
            self._priorities[priority] -= 1
        if info is None or info.node is None:
            return
        requests = info.requests
        anti = has_required_anti_affinity(info)
        self._requests[key] = (info.node, requests, anti, info.priority)
        self._priorities[info.priority] += 1
        count, used = self._usage.get(info.node, (0, {}))
        for k, v in requests.items():
            used[k] = used.get(k, 0) + v
        self._usage[info.node] = (count + 1, used)
        self._anti_pods += anti

    def _on_node(self, event: str, obj: dict[str, Any]) -> None:
        """A node added, changed (labels, taints, cordon) or deleted moves pending pods again."""
        if event in ("ADDED", "MODIFIED"):
            self._cluster_changed(f"Node/{(obj.get('metadata') or {}).get('name')} {event.lower()}", NODE_CHANGE)

    def _cluster_changed(self, why: str, event: str) -> None:
        """Requeue the unschedulable pods ``event`` may help (not those waiting for a claim),
        after their back-off."""
        for key in sorted(k for k, ev in self._parked.items() if ev is not None):
            if any(key in w for w in self._claim_waiters.values()):
                continue
            if not worth_requeuing(self._rejected_by.get(key, frozenset()), event):
                continue
            ev = self._parked.pop(key)
            count, last = self._attempts.get(key, (0, self.sim.now))
            wait = max(0.0, last + backoff_after(count) - self.sim.now)
            self.sim.log(
                self.name,
                "requeued",
                f"Pod/{key[0]}/{key[1]}",
                f"{why}: retrying in {wait:g}s",
                cause=ev,
            )
            self._enqueue(key, ev, delay=wait + self.sim.latency("scheduling"))

    def _cause(self, obj: Mapping[str, Any]) -> int | None:
        found = self.sim.trace.find(what="created", obj=ref_of(obj))
        return found[-1].id if found else None

    def _forget(self, key: PodKey) -> None:
        self._parked.pop(key, None)
        self._binding.pop(key, None)
        self._backoff.pop(key, None)
        self._attempts.pop(key, None)
        self._rejected_by.pop(key, None)
        for waiters in self._claim_waiters.values():
            waiters.discard(key)

    def _set_pending(self, key: PodKey) -> None:
        pod = self.store.get("Pod", *key)
        if pod is None or (pod.get("status") or {}).get("phase"):
            return
        status = dict(pod.get("status") or {})
        status.update({"phase": "Pending", "qosClass": status.get("qosClass", "BestEffort")})
        self.store.update_status("Pod", *key, status, actor="apiserver")

    def _enqueue(self, key: PodKey, cause: int | None, delay: float | None = None) -> None:
        if key in self._queued:
            return
        self._queued.add(key)
        wait = self.sim.latency("scheduling") if delay is None else delay
        self.sim.after(wait, self._attempt, key, cause)

    def _on_claim(self, pvc: Mapping[str, Any]) -> None:
        meta = pvc.get("metadata") or {}
        ckey = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        cause = self._cause(pvc)
        for pod_key in sorted(self._claim_waiters.pop(ckey, set())):
            if pod_key in self._parked:
                self._parked.pop(pod_key)
                self._enqueue(pod_key, cause)
        for pod_key, (node, claims, bind_cause) in sorted(self._binding.items()):
            if ckey[0] == pod_key[0] and ckey[1] in claims:
                self.sim.after(0, self._finish_binding, pod_key, node, claims, bind_cause)

    # --- one scheduling cycle --------------------------------------------------------------------
    def _attempt(self, key: PodKey, cause: int | None) -> None:
        self._queued.discard(key)
        pod = self.store.get("Pod", *key)
        if (
            pod is None
            or (pod.get("spec") or {}).get("nodeName")
            or pod["metadata"].get("deletionTimestamp")
        ):
            return
        prefilter, to_bind, waiting_on = self._volumes(pod)
        incoming = replace(pod_info(pod), volumes=self._volume_nodes(pod))
        snap = self.snapshot(incoming)
        if prefilter:
            self._unschedulable(
                pod, fit_error(len(snap.nodes), prefilter=prefilter), cause, waiting_on
            )
            return
        self._note_no_allocatable(incoming, snap, cause)
        result = filter_nodes(incoming, snap)
        if not result.feasible and not snap.complete and self._lower_priority_assigned(incoming.priority):
            # preemption's dry run looks at the pods on each node; without an assigned pod of
            # lower priority it finds no victims on any node, as on the partial snapshot
            # (default_preemption.go SelectVictimsOnNode: only lower-priority pods are victims)
            snap = self.snapshot()
            result = filter_nodes(incoming, snap)
        if not result.feasible:
            if any(v is None for v in result.preemption.values()):
                self.sim.log(
                    self.name,
                    "assumed",
                    ref_of(pod),
                    f"{ref_of(pod)}: evicting lower-priority pods would make room; helmsim does not "
                    "model preemption, so the pod stays Pending (a real scheduler would preempt them)",
                    cause=cause,
                )
            self._unschedulable(
                pod, result.message(len(snap.nodes)), cause, (), frozenset(st.plugin for st in result.statuses.values())
            )
            return
        load = self.store.node_load()  # bound pods not Succeeded/Failed, indexed by the store
        chosen = min(result.feasible, key=lambda n: (load.get(n, 0), n))
        if to_bind:
            self._select_node_for_claims(pod, key, chosen, to_bind, cause)
            return
        self._bind(key, chosen, cause)

    def _lower_priority_assigned(self, priority: int) -> bool:
        return any(n > 0 and p < priority for p, n in self._priorities.items())

    def _note_no_allocatable(self, pod: PodInfo, snap: Snapshot, cause: int | None) -> None:
        """Say once that requests were not checked where the profile states no allocatable."""
        if self._noted_no_allocatable or not pod.requests:
            return
        bare = [n.name for n in snap.nodes if not n.allocatable]
        if not bare:
            return
        self._noted_no_allocatable = True
        self.sim.log(
            self.name,
            "assumed",
            f"Pod/{pod.namespace}/{pod.name}",
            f"profile {getattr(self.sim.profile, 'name', '?')} states no allocatable for "
            f"{', '.join(bare)}: resource requests were not checked against node capacity",
            cause=cause,
        )

    def _volumes(self, pod: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]], tuple[str, ...]]:
        """(PreFilter failure message, WaitForFirstConsumer claims to bind, claims waited on).

        kubernetes pkg/scheduler/framework/plugins/volumebinding/volume_binding.go PreFilter and
        binder.go GetPodVolumeClaims.
        """
        ns = str(pod["metadata"].get("namespace") or "")
        to_bind: list[dict[str, Any]] = []
        for vol in (pod.get("spec") or {}).get("volumes") or ():
            src = vol.get("persistentVolumeClaim")
            if not src:
                continue
            claim = str(src.get("claimName", ""))
            pvc = self.store.get("PersistentVolumeClaim", ns, claim)
            if pvc is None:
                return f'persistentvolumeclaim "{claim}" not found', [], (claim,)
            if pvc["metadata"].get("deletionTimestamp"):
                return f'persistentvolumeclaim "{claim}" is being deleted', [], (claim,)
            if (pvc.get("status") or {}).get("phase") == "Bound":
                continue
            mode = self._binding_mode(pvc)
            if mode == "WaitForFirstConsumer":
                to_bind.append(pvc)
            else:
                return REASON_UNBOUND_IMMEDIATE, [], (claim,)
        return "", to_bind, ()

    def _volume_nodes(self, pod: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
        """What the pod's claims ask of a node (:attr:`PodInfo.volumes`): a delayed claim's
        selected node, a bound claim's volume's required node affinity."""
        ns = str(pod["metadata"].get("namespace") or "")
        out: list[tuple[str, Any]] = []
        for vol in (pod.get("spec") or {}).get("volumes") or ():
            src = vol.get("persistentVolumeClaim")
            pvc = self.store.get("PersistentVolumeClaim", ns, str(src.get("claimName", ""))) if src else None
            if pvc is None:
                continue
            if (pvc.get("status") or {}).get("phase") == "Bound":
                pv = self.store.get("PersistentVolume", None, str((pvc.get("spec") or {}).get("volumeName") or ""))
                required = (((pv or {}).get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
                terms = required.get("nodeSelectorTerms") or []
                if terms:
                    out.append(("affinity", tuple(terms)))
            elif (selected := (pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE)):
                out.append(("selected", str(selected)))
        return tuple(out)

    def _binding_mode(self, pvc: Mapping[str, Any]) -> str:
        spec = pvc.get("spec") or {}
        name = spec.get("storageClassName")
        if name is None:
            # DefaultStorageClass admission (plugin/pkg/admission/storage/storageclass/setdefault):
            # a claim without storageClassName gets the default class.
            default = self.sim.profile.default_storage_class()
            if default is None:
                return "Immediate"
            name = default.name
        if name == "":
            return "Immediate"  # "" means no class: static binding only
        live = self.store.get("StorageClass", None, str(name))
        if live is not None:
            return str(live.get("volumeBindingMode") or "Immediate")
        cls = self.sim.profile.storage_class(str(name))
        return cls.volume_binding_mode if cls is not None else "Immediate"

    def _unschedulable(
        self,
        pod: dict[str, Any],
        message: str,
        cause: int | None,
        claims: Sequence[str],
        rejected_by: frozenset[str] = frozenset(),
    ) -> None:
        """Record a failed attempt; ``rejected_by``: the Filter plugins that rejected the pod
        (none known: every cluster event requeues it)."""
        key = (str(pod["metadata"].get("namespace") or ""), str(pod["metadata"]["name"]))
        self._rejected_by[key] = rejected_by
        status = clone(pod.get("status") or {})
        status.setdefault("phase", "Pending")
        conds = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
        old = next(
            (c for c in status.get("conditions") or () if c.get("type") == "PodScheduled"), None
        )
        same = (
            old is not None
            and old.get("status") == "False"
            and old.get("reason") == "Unschedulable"
        )
        conds.insert(
            0,
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": old.get("lastTransitionTime")
                if same and old
                else self.sim.timestamp(),
            },
        )
        status["conditions"] = conds
        count, _last = self._attempts.get(key, (0, 0.0))
        self._attempts[key] = (count + 1, self.sim.now)
        self._parked[key] = None
        try:
            self.store.update_status("Pod", *key, status, actor=self.name, cause=cause)
        except ApiUnreachable as err:
            self._parked.pop(key, None)
            self._retry_later(key, cause, err)
            return
        # kubernetes pkg/scheduler/schedule_one.go handleSchedulingFailure: FailedScheduling.
        ev = self.store.record_event(
            pod, "Warning", "FailedScheduling", message, source=SOURCE, cause=cause
        )
        self._parked[key] = ev
        for claim in claims:
            self._claim_waiters[(key[0], claim)].add(key)
        if not claims:
            self.sim.after(UNSCHEDULABLE_RETRY, self._retry_parked, key, ev)

    def _retry_later(self, key: PodKey, cause: int | None, err: ApiUnreachable) -> None:
        """A write to the API server failed: back off and try the pod again
        (scheduling_queue.go calculateBackoffDuration: initial, doubling, capped)."""
        wait = self._backoff.get(key)
        wait = POD_INITIAL_BACKOFF if wait is None else min(wait * 2, POD_MAX_BACKOFF)
        self._backoff[key] = wait
        self.sim.log(
            self.name,
            "api-unreachable",
            f"Pod/{key[0]}/{key[1]}",
            f"{err.message} ({err.why}); retrying in {wait:g}s",
            cause=cause,
        )
        self._enqueue(key, cause, delay=wait)

    def _retry_parked(self, key: PodKey, ev: int) -> None:
        if self._parked.get(key) == ev:
            self._parked.pop(key)
            self._enqueue(key, ev, delay=0)

    # --- WaitForFirstConsumer ----------------------------------------------------------------------
    def _select_node_for_claims(
        self,
        pod: Mapping[str, Any],
        key: PodKey,
        node: str,
        claims: list[dict[str, Any]],
        cause: int | None,
    ) -> None:
        """volumebinding PreBind: annotate each delayed claim with the node, then wait for Bound."""
        names = tuple(sorted(c["metadata"]["name"] for c in claims))
        self._binding[key] = (node, names, cause)
        last = cause
        for pvc in claims:
            if (pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE) == node:
                continue
            new = clone(pvc)
            new["metadata"].setdefault("annotations", {})[SELECTED_NODE] = node
            try:
                self.store.update(new, actor=self.name, cause=cause)
            except ApiUnreachable as err:
                self._binding.pop(key, None)
                self._retry_later(key, cause, err)
                return
            last = self.sim.log(
                self.name,
                "selected-node",
                ref_of(new),
                f"{ref_of(new)} annotated {SELECTED_NODE}={node} for {ref_of(pod)}",
                cause=cause,
                node=node,
                pod=ref_of(pod),
            ).id
        self._binding[key] = (node, names, last)
        self.sim.after(BIND_TIMEOUT, self._bind_timeout, key, node, names)
        self._finish_binding(key, node, names, last)

    def _finish_binding(
        self, key: PodKey, node: str, claims: tuple[str, ...], cause: int | None
    ) -> None:
        if self._binding.get(key, (None,))[0] != node:
            return
        for claim in claims:
            pvc = self.store.get("PersistentVolumeClaim", key[0], claim)
            if pvc is None or (pvc.get("status") or {}).get("phase") != "Bound":
                return
        self._binding.pop(key, None)
        self._bind(key, node, cause)

    def _bind_timeout(self, key: PodKey, node: str, claims: tuple[str, ...]) -> None:
        if self._binding.get(key, (None,))[0] != node:
            return
        self._binding.pop(key)
        pod = self.store.get("Pod", *key)
        if pod is None:
            return
        # volumebinding PreBind: BindPodVolumes gives up after BindTimeoutSeconds.
        msg = 'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
        ev = self.store.record_event(pod, "Warning", "FailedScheduling", msg, source=SOURCE)
        self._enqueue(key, ev)

    # --- bind ------------------------------------------------------------------------------------
    def _bind(self, key: PodKey, node: str, cause: int | None) -> None:
        pod = self.store.get("Pod", *key)
        if (
            pod is None
            or pod["metadata"].get("deletionTimestamp")
            or (pod.get("spec") or {}).get("nodeName")
        ):
            return
        self._parked.pop(key, None)
        new = clone(pod)
        new.setdefault("spec", {})["nodeName"] = node
        status = clone(new.get("status") or {})
        status.setdefault("phase", "Pending")
        conds = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
        # kubernetes pkg/registry/core/pod/storage/storage.go assignPod: the binding sets
        # spec.nodeName and the PodScheduled=True condition.
        conds.insert(
            0,
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": self.sim.timestamp(),
            },
        )
        status["conditions"] = conds
        new["status"] = status
        # schedule_one.go bind: POST pods/<name>/binding, which fails while the API server is down
        refused = self.store.unreachable(self.name, "Post", new, sub="binding")
        if refused is not None:
            self._retry_later(key, cause, refused)
            return
        ev = self.sim.log(
            self.name,
            "scheduled",
            ref_of(new),
            f"{ref_of(new)} bound to node {node}",
            cause=cause,
            node=node,
        )
        self.store.update(new, actor=self.name, cause=ev.id, quiet=True)
        self._backoff.pop(key, None)
        # kubernetes pkg/scheduler/schedule_one.go: "Successfully assigned %v/%v to %v".
        self.store.record_event(
            new,
            "Normal",
            "Scheduled",
            f"Successfully assigned {key[0]}/{key[1]} to {node}",
            source=SOURCE,
            cause=ev.id,
        )
