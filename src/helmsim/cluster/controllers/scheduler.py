"""The scheduler: binds pending pods to the profile's nodes, waiting for their volumes.

Filters mirror kube-scheduler's default plugins in the simplest useful form: NodeAffinity
(``nodeSelector`` and required node affinity), TaintToleration (NoSchedule / NoExecute) and
VolumeBinding (missing claims, unbound Immediate claims, WaitForFirstConsumer claims that get the
selected-node annotation and are waited for in PreBind). Among the feasible nodes the one with the
fewest pods wins, then the name (deterministic; kube-scheduler scores resources and spreads).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from helmsim.cluster.engine import Controller, Simulation
from helmsim.cluster.store import ApiUnreachable, clone, ref_of

SOURCE = "default-scheduler"
# kubernetes pkg/controller/volume/persistentvolume/util/util.go AnnSelectedNode.
SELECTED_NODE = "volume.kubernetes.io/selected-node"
# kubernetes pkg/scheduler/apis/config/v1/defaults.go: VolumeBindingArgs.BindTimeoutSeconds = 600.
BIND_TIMEOUT = 600.0
# kubernetes pkg/scheduler/internal/queue/scheduling_queue.go
# DefaultPodMaxInUnschedulablePodsDuration: an unschedulable pod is retried after 5 min at most.
UNSCHEDULABLE_RETRY = 300.0
# kubernetes pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go ErrReasonPod.
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
# kubernetes pkg/scheduler/framework/plugins/volumebinding/volume_binding.go
# ErrReasonUnboundImmediatePersistentVolumeClaim.
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# kubernetes pkg/scheduler/apis/config/v1/defaults.go: podInitialBackoffSeconds = 1,
# podMaxBackoffSeconds = 10: a pod whose binding failed is retried after 1 s, doubling to 10 s.
POD_INITIAL_BACKOFF = 1.0
POD_MAX_BACKOFF = 10.0

PodKey = tuple[str, str]


def fit_error(
    num_nodes: int, *, prefilter: str = "", reasons: Mapping[str, int] | None = None
) -> str:
    """The FailedScheduling message.

    kubernetes pkg/scheduler/framework/types.go FitError.Error: "0/N nodes are available:" then the
    PreFilter message, or the sorted "<count> <reason>" histogram; then the PostFilter
    (preemption) message, which for these filters is "Preemption is not helpful" on every node
    (pkg/scheduler/framework/preemption/preemption.go).
    """
    msg = f"0/{num_nodes} nodes are available:"
    if prefilter:
        msg += f" {prefilter}."
    elif reasons:
        msg += " " + ", ".join(sorted(f"{n} {r}" for r, n in reasons.items())) + "."
    msg += (
        f" preemption: 0/{num_nodes} nodes are available: {num_nodes} Preemption is not helpful"
        " for scheduling."
    )
    return msg


def node_selector_term_matches(
    term: Mapping[str, Any], labels: Mapping[str, str], name: str
) -> bool:
    """One NodeSelectorTerm: every matchExpression and matchField holds (an empty term matches nothing).

    k8s.io/component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go.
    """
    exprs = list(term.get("matchExpressions") or ())
    fields = list(term.get("matchFields") or ())
    if not exprs and not fields:
        return False
    for e in exprs:
        if not _requirement(e, labels):
            return False
    return all(_requirement(f, {"metadata.name": name}) for f in fields)


def _requirement(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op = str(expr.get("key", "")), expr.get("operator")
    values = [str(v) for v in expr.get("values") or ()]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def node_affinity_matches(pod: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    """nodeSelector (all pairs) AND required node affinity (any term)."""
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    if any(labels.get(str(k)) != str(v) for k, v in selector.items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is None:
        return True
    terms = required.get("nodeSelectorTerms") or ()
    return any(node_selector_term_matches(t, labels, name) for t in terms)


def tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Any) -> bool:
    """k8s.io/api core/v1/toleration.go ToleratesTaint: effect, key and operator/value match."""
    for t in tolerations:
        effect = t.get("effect") or ""
        if effect and effect != taint.effect:
            continue
        key = t.get("key") or ""
        op = t.get("operator") or "Equal"
        if not key and op != "Exists":
            continue
        if key and key != taint.key:
            continue
        if op == "Exists" or (op == "Equal" and str(t.get("value") or "") == taint.value):
            return True
    return False


@dataclass(frozen=True)
class _Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class _Node:
    name: str
    labels: Mapping[str, str]
    taints: tuple[_Taint, ...]


class Scheduler(Controller):
    """Binds Pending pods without ``spec.nodeName`` after the ``scheduling`` latency."""

    name = "scheduler"
    kinds = ("Pod", "PersistentVolumeClaim")

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        self._queued: set[PodKey] = set()
        self._parked: dict[PodKey, int | None] = {}  # unschedulable: the FailedScheduling event id
        self._claim_waiters: dict[tuple[str, str], set[PodKey]] = defaultdict(set)
        self._binding: dict[PodKey, tuple[str, tuple[str, ...], int | None]] = {}
        self._backoff: dict[PodKey, float] = {}

    def nodes(self) -> list[_Node]:
        """The nodes the scheduler's snapshot holds: the live Node objects (a deleted Node is
        gone, a tainted one filters by its taints), or the profile's nodes when the store has
        no Node objects (a bare simulation)."""
        live = {n["metadata"]["name"]: n for n in self.store.list("Node")}
        out = []
        for n in self.sim.profile.nodes:
            obj = live.get(n.name)
            if live and obj is None:
                continue  # deleted: pkg/scheduler/backend/cache removes it from the snapshot
            if obj is None:
                taints = tuple(_Taint(t.key, t.value or "", t.effect) for t in n.taints)
                labels: Mapping[str, str] = n.labels
            else:
                taints = tuple(
                    _Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
                    for t in (obj.get("spec") or {}).get("taints") or ()
                )
                labels = (obj.get("metadata") or {}).get("labels") or n.labels
            out.append(_Node(n.name, labels, taints))
        return out

    # --- watch -----------------------------------------------------------------------------------
    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        if obj.get("kind") == "PersistentVolumeClaim":
            self._on_claim(obj)
            return
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
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

    def _cause(self, obj: Mapping[str, Any]) -> int | None:
        found = self.sim.trace.find(what="created", obj=ref_of(obj))
        return found[-1].id if found else None

    def _forget(self, key: PodKey) -> None:
        self._parked.pop(key, None)
        self._binding.pop(key, None)
        self._backoff.pop(key, None)
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
        nodes = self.nodes()
        prefilter, to_bind, waiting_on = self._volumes(pod)
        if prefilter:
            self._unschedulable(pod, fit_error(len(nodes), prefilter=prefilter), cause, waiting_on)
            return
        reasons: dict[str, int] = defaultdict(int)
        feasible = []
        tolerations = (pod.get("spec") or {}).get("tolerations") or ()
        for node in nodes:
            if not node_affinity_matches(pod, node.labels, node.name):
                reasons[REASON_AFFINITY] += 1
                continue
            # kubernetes pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go:
            # only NoSchedule and NoExecute taints filter; the first untolerated one is reported.
            bad = next(
                (
                    t
                    for t in node.taints
                    if t.effect in ("NoSchedule", "NoExecute") and not tolerates(tolerations, t)
                ),
                None,
            )
            if bad is not None:
                reasons[f"node(s) had untolerated taint {{{bad.key}: {bad.value}}}"] += 1
                continue
            feasible.append(node.name)
        if not feasible:
            self._unschedulable(pod, fit_error(len(nodes), reasons=reasons), cause, ())
            return
        load = self.store.node_load()  # bound pods not Succeeded/Failed, indexed by the store
        chosen = min(feasible, key=lambda n: (load.get(n, 0), n))
        if to_bind:
            self._select_node_for_claims(pod, key, chosen, to_bind, cause)
            return
        self._bind(key, chosen, cause)

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
        self, pod: dict[str, Any], message: str, cause: int | None, claims: Sequence[str]
    ) -> None:
        key = (str(pod["metadata"].get("namespace") or ""), str(pod["metadata"]["name"]))
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
