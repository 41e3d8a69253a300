"""kube-scheduler's filters, pure: which nodes a pod fits, and the FailedScheduling text.

Plugins in the order of the default profile (kubernetes pkg/scheduler/apis/config/v1/
default_plugins.go getDefaultPlugins): NodeUnschedulable, TaintToleration, NodeAffinity,
NodeResourcesFit, PodTopologySpread, InterPodAffinity. A node is reported under the first plugin
that rejects it (pkg/scheduler/framework/runtime/framework.go RunFilterPlugins). Volume binding
(VolumeBinding PreFilter/PreBind) stays in the controller, which owns claims and their timing.

The texts are the plugins' ErrReason constants; each status is ``Unschedulable`` (preemption
might help) or ``UnschedulableAndUnresolvable`` (it cannot), which decides the "preemption: …"
half of the message (pkg/scheduler/framework/preemption/preemption.go, plugins/
defaultpreemption/default_preemption.go SelectVictimsOnNode).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import Struct

from helmsim.kube.selectors import matches_selector
from helmsim.kube.quantity import parse_quantity, scheduler_amount
from helmsim.kube.requests import pod_requests

UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"

# nodeunschedulable/node_unschedulable.go ErrReasonUnschedulable, and the taint a pod tolerates
# to land on a cordoned node (v1.TaintNodeUnschedulable).
REASON_NODE_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
# nodeaffinity/node_affinity.go ErrReasonPod.
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
# nodeports/node_ports.go ErrReason.
REASON_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
# noderesources/fit.go fitsRequest.
REASON_TOO_MANY_PODS = "Too many pods"
# podtopologyspread/filtering.go ErrReasonConstraintsNotMatch, ErrReasonNodeLabelNotMatch.
REASON_SPREAD = "node(s) didn't match pod topology spread constraints"
REASON_SPREAD_LABEL = REASON_SPREAD + " (missing required label)"
# interpodaffinity/filtering.go.
REASON_POD_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
# volumebinding/volume_binding.go ErrReasonBindConflict, ErrReasonNodeConflict.
REASON_VOLUME_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_VOLUME_NODE_CONFLICT = "node(s) had volume node affinity conflict"
# preemption.go nodesWherePreemptionMightHelp; default_preemption.go SelectVictimsOnNode.
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
# Resources every node reports; a profile that does not state one sets no limit on it.
STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _maps(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a list field (anything else, in it or instead of it, is ignored)."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list | tuple) else []


def _strs(value: Any) -> list[str]:
    if not isinstance(value, list | tuple):
        return []
    return [str(v) for v in value if isinstance(v, str | int) and not isinstance(v, bool)]


def _clean_selector(selector: Any) -> dict[str, Any] | None:
    """A LabelSelector with only well-formed parts (None stays None: it selects nothing)."""
    if selector is None:
        return None
    sel = _map(selector)
    labels = {str(k): str(v) for k, v in _map(sel.get("matchLabels")).items()}
    exprs = [
        {
            "key": str(e.get("key", "")),
            "operator": e.get("operator"),
            "values": _strs(e.get("values")),
        }
        for e in _maps(sel.get("matchExpressions"))
    ]
    return {"matchLabels": labels, "matchExpressions": exprs}


class Taint(Struct, frozen=True):
    key: str
    value: str
    effect: str


class NodeInfo(Struct, frozen=True):
    """A node as the scheduler's snapshot holds it."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...] = ()
    allocatable: Mapping[str, int] = msgspec.field(default_factory=dict)
    """Scheduler amounts (millicores for cpu); resources absent here are not limited when they
    are standard ones, and are absent (0) otherwise (extended resources, hugepages)."""
    unschedulable: bool = False


class PodInfo(Struct, frozen=True):
    """A pod as the filters read it (the incoming one, or one assigned to a node)."""

    namespace: str
    name: str
    labels: Mapping[str, str]
    spec: Mapping[str, Any]
    node: str | None = None
    terminating: bool = False
    volumes: tuple[tuple[str, Any], ...] = ()
    """What its claims ask of a node (the VolumeBinding filter): ``("selected", node)`` for an
    unbound WaitForFirstConsumer claim another pod's scheduling annotated with a node,
    ``("affinity", nodeSelectorTerms)`` for a claim bound to a volume pinned by node affinity."""

    @property
    def priority(self) -> int:
        value = self.spec.get("priority")
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    @property
    def requests(self) -> dict[str, int]:
        spec = {
            "containers": _maps(self.spec.get("containers")),
            "initContainers": _maps(self.spec.get("initContainers")),
            "overhead": _map(self.spec.get("overhead")),
        }
        out = {}
        for name, q in pod_requests(spec).items():
            out[name] = scheduler_amount(name, q)
        return out


@dataclass(frozen=True)
class Status:
    """A plugin's rejection of one node."""

    code: str
    reasons: tuple[str, ...]
    plugin: str = field(default="", compare=False)
    """The Filter plugin that rejected the node (one of :data:`PLUGINS`)."""


class Snapshot(Struct):
    """The nodes and the pods assigned to them (non-terminal ones), plus namespace labels.

    ``usage`` (pods count and summed requests per node) stands in for ``pods`` in the resource
    filter when the caller keeps it incrementally; then ``pods`` may hold only what the pod's
    affinity and spread filters need (``complete`` False when it is not every assigned pod).
    """

    nodes: list[NodeInfo]
    pods: list[PodInfo]
    namespace_labels: Mapping[str, Mapping[str, str]] = msgspec.field(default_factory=dict)
    usage: Mapping[str, tuple[int, Mapping[str, int]]] | None = None
    complete: bool = True

    def pods_on(self, node: str) -> list[PodInfo]:
        return [p for p in self.pods if p.node == node]

    def usage_of(self, node: str) -> tuple[int, Mapping[str, int]]:
        """Pods on ``node`` and the sum of their requests."""
        if self.usage is not None:
            return self.usage.get(node, (0, {}))
        on = self.pods_on(node)
        used: dict[str, int] = defaultdict(int)
        for p in on:
            for k, v in p.requests.items():
                used[k] += v
        return len(on), used


def allocatable_amounts(allocatable: Mapping[str, Any]) -> dict[str, int]:
    """A Node's ``status.allocatable`` map as scheduler amounts (unparseable entries dropped)."""
    out = {}
    for name, raw in allocatable.items():
        try:
            out[str(name)] = scheduler_amount(str(name), parse_quantity(raw))
        except ValueError:
            continue
    return out


# --- node selectors and taints ---------------------------------------------------------------
def _requirement(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op = str(expr.get("key", "")), expr.get("operator")
    values = _strs(expr.get("values"))
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


def node_selector_term_matches(
    term: Mapping[str, Any], labels: Mapping[str, str], name: str
) -> bool:
    """One NodeSelectorTerm: every matchExpression and matchField holds (an empty term matches nothing).

    k8s.io/component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go.
    """
    exprs = _maps(term.get("matchExpressions"))
    fields = _maps(term.get("matchFields"))
    if not exprs and not fields:
        return False
    if not all(_requirement(e, labels) for e in exprs):
        return False
    return all(_requirement(f, {"metadata.name": name}) for f in fields)


def node_affinity_matches(pod: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    """nodeSelector (all pairs) AND required node affinity (any term)."""
    spec = _map(pod.get("spec"))
    selector = _map(spec.get("nodeSelector"))
    if any(labels.get(str(k)) != str(v) for k, v in selector.items()):
        return False
    required = _map(_map(spec.get("affinity")).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not isinstance(required, Mapping):
        return True
    terms = _maps(required.get("nodeSelectorTerms"))
    return any(node_selector_term_matches(t, labels, name) for t in terms)


def tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Any) -> bool:
    """k8s.io/api core/v1/toleration.go ToleratesTaint: effect, key and operator/value match."""
    for t in _maps(tolerations):
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


def untolerated_taint(pod: PodInfo, node: NodeInfo) -> Taint | None:
    """The first NoSchedule/NoExecute taint the pod does not tolerate (FindMatchingUntoleratedTaint)."""
    tolerations = _maps(pod.spec.get("tolerations"))
    for t in node.taints:
        if t.effect in ("NoSchedule", "NoExecute") and not tolerates(tolerations, t):
            return t
    return None


# --- the filters ----------------------------------------------------------------------------------
def _node_unschedulable(pod: PodInfo, node: NodeInfo) -> Status | None:
    cordon = Taint(TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule")
    if node.unschedulable and not tolerates(_maps(pod.spec.get("tolerations")), cordon):
        return Status(UNRESOLVABLE, (REASON_NODE_UNSCHEDULABLE,), "NodeUnschedulable")
    return None


def _taint_toleration(pod: PodInfo, node: NodeInfo) -> Status | None:
    bad = untolerated_taint(pod, node)
    if bad is None:
        return None
    return Status(UNRESOLVABLE, (f"node(s) had untolerated taint {{{bad.key}: {bad.value}}}",), "TaintToleration")


def _node_affinity(pod: PodInfo, node: NodeInfo) -> Status | None:
    if node_affinity_matches({"spec": pod.spec}, node.labels, node.name):
        return None
    return Status(UNRESOLVABLE, (REASON_AFFINITY,), "NodeAffinity")


def host_ports(spec: Mapping[str, Any]) -> frozenset[tuple[str, str, int]]:
    """(hostIP, protocol, hostPort) of the pod's containers (nodeports/node_ports.go
    getContainerPorts: app containers only). With ``hostNetwork`` a port without hostPort takes
    its containerPort (pkg/apis/core/v1/defaults.go SetDefaults_Pod)."""
    host_network = spec.get("hostNetwork") is True
    out: set[tuple[str, str, int]] = set()
    for c in _maps(spec.get("containers")):
        for p in _maps(c.get("ports")):
            port = p.get("hostPort") or (p.get("containerPort") if host_network else None)
            if isinstance(port, int) and not isinstance(port, bool) and port > 0:
                out.add((str(p.get("hostIP") or "0.0.0.0"), str(p.get("protocol") or "TCP").upper(), port))
    return frozenset(out)


def _ports_conflict(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    # pkg/scheduler/framework/types.go HostPortInfo.CheckConflict: 0.0.0.0 conflicts with any IP
    return a[1:] == b[1:] and (a[0] == b[0] or "0.0.0.0" in (a[0], b[0]))


def _volume_binding(pod: PodInfo, node: NodeInfo) -> Status | None:
    """kubernetes pkg/scheduler/framework/plugins/volumebinding binder.go FindPodVolumes: a
    delayed claim already annotated with a selected node fits only that node; a bound claim's
    volume fits the nodes its nodeAffinity selects (any term); each conflict unresolvable."""
    reasons: list[str] = []
    for kind, value in pod.volumes:
        if kind == "selected" and value != node.name and REASON_VOLUME_BIND_CONFLICT not in reasons:
            reasons.append(REASON_VOLUME_BIND_CONFLICT)
        elif kind == "affinity" and not any(node_selector_term_matches(t, node.labels, node.name) for t in value):
            if REASON_VOLUME_NODE_CONFLICT not in reasons:
                reasons.append(REASON_VOLUME_NODE_CONFLICT)
    return Status(UNRESOLVABLE, tuple(reasons), "VolumeBinding") if reasons else None


def _node_ports(pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status | None:
    wanted = host_ports(pod.spec)
    if not wanted:
        return None
    used = [u for other in snap.pods_on(node.name) for u in host_ports(other.spec)]
    if any(_ports_conflict(w, u) for w in wanted for u in used):
        return Status(UNSCHEDULABLE, (REASON_NODE_PORTS,), "NodePorts")
    return None


def _resource_order(name: str) -> tuple[int, str]:
    order = {"cpu": 0, "memory": 1, "ephemeral-storage": 2}
    return (order.get(name, 3), name)


def node_resources_fit(
    requests: Mapping[str, int], node: NodeInfo, count: int, used: Mapping[str, int]
) -> Status | None:
    """noderesources/fit.go fitsRequest: pods count, then cpu, memory, ephemeral-storage, others.

    A request larger than the node's whole allocatable is unresolvable (preemption cannot help).
    """
    reasons: list[str] = []
    unresolvable = False
    alloc = node.allocatable
    if "pods" in alloc and count + 1 > alloc["pods"]:
        reasons.append(REASON_TOO_MANY_PODS)
    for name in sorted(requests, key=_resource_order):
        want = requests[name]
        if name == "pods" or want <= 0:
            continue
        if name not in alloc and name in STANDARD_RESOURCES:
            continue  # not stated by the profile: not limited
        capacity = alloc.get(name, 0)
        if want > capacity - used.get(name, 0):
            reasons.append(f"Insufficient {name}")
            unresolvable = unresolvable or want > capacity
    if not reasons:
        return None
    return Status(UNRESOLVABLE if unresolvable else UNSCHEDULABLE, tuple(reasons), "NodeResourcesFit")


# --- label selectors of pod (anti-)affinity and spread constraints ---------------------------
def _with_label_keys(
    selector: Mapping[str, Any] | None,
    labels: Mapping[str, str],
    match_keys: Any,
    mismatch_keys: Any = (),
) -> dict[str, Any] | None:
    """The selector with ``matchLabelKeys`` (In the pod's value) and ``mismatchLabelKeys`` (NotIn)
    merged, as kube-apiserver does at pod creation (pkg/registry/core/pod/strategy.go
    applyMatchLabelKeysAndMismatchLabelKeys); keys the pod lacks are skipped."""
    clean = _clean_selector(selector)
    if clean is None:
        return None
    exprs = clean["matchExpressions"]
    for key in _strs(match_keys):
        if key in labels:
            exprs.append({"key": key, "operator": "In", "values": [labels[key]]})
    for key in _strs(mismatch_keys):
        if key in labels:
            exprs.append({"key": key, "operator": "NotIn", "values": [labels[key]]})
    return clean


def _selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector: a nil selector selects nothing, an empty one everything."""
    return selector is not None and matches_selector(selector, labels)


class _Term(Struct, frozen=True):
    namespaces: frozenset[str] | None  # None: every namespace
    selector: Mapping[str, Any] | None
    topology_key: str

    def matches(self, pod: PodInfo) -> bool:
        if self.namespaces is not None and pod.namespace not in self.namespaces:
            return False
        return _selects(self.selector, pod.labels)


def _terms(owner: PodInfo, kind: str, snap: Snapshot) -> list[_Term]:
    """Required (anti-)affinity terms of ``owner`` (schedutil GetNamespacesFromPodAffinityTerm)."""
    affinity = _map(_map(owner.spec.get("affinity")).get(kind))
    out = []
    for term in _maps(affinity.get("requiredDuringSchedulingIgnoredDuringExecution")):
        names = set(_strs(term.get("namespaces")))
        ns_selector = _clean_selector(term.get("namespaceSelector"))
        namespaces: frozenset[str] | None
        if ns_selector is not None and not any(ns_selector.values()):
            namespaces = None  # an empty namespaceSelector selects every namespace
        else:
            if ns_selector:
                names |= {
                    ns
                    for ns, labels in snap.namespace_labels.items()
                    if matches_selector(ns_selector, labels)
                }
            if not names and ns_selector is None:
                names = {owner.namespace}
            namespaces = frozenset(names)
        selector = _with_label_keys(
            term.get("labelSelector"),
            owner.labels,
            term.get("matchLabelKeys"),
            term.get("mismatchLabelKeys"),
        )
        out.append(_Term(namespaces, selector, str(term.get("topologyKey") or "")))
    return out


class _AffinityState(Struct):
    """interpodaffinity PreFilter: matched-term counts per topology pair."""

    affinity: list[_Term]
    anti: list[_Term]
    affinity_counts: dict[tuple[str, str], int]
    anti_counts: dict[tuple[str, str], int]
    existing_anti_counts: dict[tuple[str, str], int]
    matches_own_affinity: bool


def _affinity_state(pod: PodInfo, snap: Snapshot) -> _AffinityState:
    affinity = _terms(pod, "podAffinity", snap)
    anti = _terms(pod, "podAntiAffinity", snap)
    nodes = {n.name: n for n in snap.nodes}
    aff: dict[tuple[str, str], int] = defaultdict(int)
    anti_c: dict[tuple[str, str], int] = defaultdict(int)
    existing: dict[tuple[str, str], int] = defaultdict(int)
    for other in snap.pods:
        node = nodes.get(str(other.node))
        if node is None:
            continue
        if affinity and all(t.matches(other) for t in affinity):
            for t in affinity:
                if t.topology_key in node.labels:
                    aff[(t.topology_key, node.labels[t.topology_key])] += 1
        for t in anti:
            if t.matches(other) and t.topology_key in node.labels:
                anti_c[(t.topology_key, node.labels[t.topology_key])] += 1
        for t in _terms(other, "podAntiAffinity", snap):
            if t.matches(pod) and t.topology_key in node.labels:
                existing[(t.topology_key, node.labels[t.topology_key])] += 1
    own = bool(affinity) and all(t.matches(pod) for t in affinity)
    return _AffinityState(affinity, anti, dict(aff), dict(anti_c), dict(existing), own)


def _inter_pod_affinity(st: _AffinityState, node: NodeInfo) -> Status | None:
    """interpodaffinity/filtering.go Filter: satisfyPodAffinity, satisfyPodAntiAffinity,
    satisfyExistingPodsAntiAffinity."""
    if st.affinity:
        exist = True
        for t in st.affinity:
            if t.topology_key not in node.labels:
                return Status(UNRESOLVABLE, (REASON_POD_AFFINITY,), "InterPodAffinity")
            if st.affinity_counts.get((t.topology_key, node.labels[t.topology_key]), 0) <= 0:
                exist = False
        # the first pod of a group with affinity to itself may go anywhere the keys exist
        if not exist and not (not st.affinity_counts and st.matches_own_affinity):
            return Status(UNRESOLVABLE, (REASON_POD_AFFINITY,), "InterPodAffinity")
    for t in st.anti:
        value = node.labels.get(t.topology_key)
        if value is not None and st.anti_counts.get((t.topology_key, value), 0) > 0:
            return Status(UNSCHEDULABLE, (REASON_POD_ANTI_AFFINITY,), "InterPodAffinity")
    for key, value in node.labels.items():
        if st.existing_anti_counts.get((key, value), 0) > 0:
            return Status(UNSCHEDULABLE, (REASON_EXISTING_ANTI_AFFINITY,), "InterPodAffinity")
    return None


class _Constraint(Struct, frozen=True):
    max_skew: int
    key: str
    selector: Mapping[str, Any] | None
    min_domains: int


class _SpreadState(Struct):
    constraints: list[_Constraint]
    counts: dict[tuple[str, str], int]
    minimum: dict[str, int]
    self_match: list[int]


def _spread_state(pod: PodInfo, snap: Snapshot) -> _SpreadState:
    """podtopologyspread/filtering.go calPreFilterState, for the DoNotSchedule constraints."""
    constraints = []
    hard = [
        h
        for h in _maps(pod.spec.get("topologySpreadConstraints"))
        if h.get("whenUnsatisfiable") == "DoNotSchedule"
    ]
    for raw in hard:
        selector = _with_label_keys(raw.get("labelSelector"), pod.labels, raw.get("matchLabelKeys"))
        skew = raw.get("maxSkew")
        domains = raw.get("minDomains")
        constraints.append(
            _Constraint(
                skew if isinstance(skew, int) and skew > 0 else 1,
                str(raw.get("topologyKey") or ""),
                selector,
                domains if isinstance(domains, int) and domains > 0 else 1,
            )
        )
    counts: dict[tuple[str, str], int] = defaultdict(int)
    domains_of: dict[str, set[str]] = defaultdict(set)
    if constraints:
        policies = [
            (h.get("nodeAffinityPolicy") or "Honor", h.get("nodeTaintsPolicy") or "Ignore")
            for h in hard
        ]
        for node in snap.nodes:
            if not all(c.key in node.labels for c in constraints):
                continue  # nodeLabelsMatchSpreadConstraints
            for c, (aff_policy, taint_policy) in zip(constraints, policies, strict=True):
                if aff_policy == "Honor" and _node_affinity(pod, node) is not None:
                    continue
                if taint_policy == "Honor" and untolerated_taint(pod, node) is not None:
                    continue
                pair = (c.key, node.labels[c.key])
                domains_of[c.key].add(pair[1])
                # countPodsMatchSelector: same namespace, not terminating
                counts[pair] += sum(
                    1
                    for p in snap.pods_on(node.name)
                    if not p.terminating
                    and p.namespace == pod.namespace
                    and _selects(c.selector, p.labels)
                )
    minimum: dict[str, int] = {}
    for c in constraints:
        values = [counts.get((c.key, v), 0) for v in domains_of.get(c.key, ())]
        low = min(values) if values else 0
        minimum[c.key] = 0 if len(values) < c.min_domains else low
    self_match = [1 if _selects(c.selector, pod.labels) else 0 for c in constraints]
    return _SpreadState(constraints, dict(counts), minimum, self_match)


def _topology_spread(st: _SpreadState, node: NodeInfo) -> Status | None:
    if any(c.key not in node.labels for c in st.constraints):
        return Status(UNRESOLVABLE, (REASON_SPREAD_LABEL,), "PodTopologySpread")
    for c, own in zip(st.constraints, st.self_match, strict=True):
        match = st.counts.get((c.key, node.labels[c.key]), 0)
        if match + own - st.minimum.get(c.key, 0) > c.max_skew:
            return Status(UNSCHEDULABLE, (REASON_SPREAD,), "PodTopologySpread")
    return None


# --- a scheduling cycle ---------------------------------------------------------------------------
class Result(Struct):
    """The outcome of filtering every node for one pod."""

    feasible: list[str]
    statuses: dict[str, Status]
    preemption: dict[str, tuple[str, ...] | None]
    """For each rejected node: preemption's dry-run verdict (None: evicting victims would help)."""

    def message(self, num_nodes: int) -> str:
        """The FailedScheduling message (empty when a node is feasible)."""
        hist: dict[str, int] = defaultdict(int)
        for st in self.statuses.values():
            for r in st.reasons:
                hist[r] += 1
        pre: dict[str, int] = defaultdict(int)
        verdicts = self.preemption.values()
        if all(v is not None for v in verdicts):  # a node where preemption helps: no FitError
            for v in verdicts:
                for text in v or ():
                    pre[text] += 1
        return fit_error(num_nodes, reasons=hist, preemption=pre)


def needs_assigned_pods(pod: PodInfo) -> bool:
    """Whether the pod's own filters read the assigned pods (pod (anti-)affinity, spread, host
    ports)."""
    if host_ports(pod.spec):
        return True
    if any(_terms(pod, kind, Snapshot([], [])) for kind in ("podAffinity", "podAntiAffinity")):
        return True
    return any(
        h.get("whenUnsatisfiable") == "DoNotSchedule"
        for h in _maps(pod.spec.get("topologySpreadConstraints"))
    )


def has_required_anti_affinity(pod: PodInfo) -> bool:
    """Whether an assigned pod's required anti-affinity can reject other pods."""
    return bool(_terms(pod, "podAntiAffinity", Snapshot([], [])))


def filter_nodes(pod: PodInfo, snap: Snapshot) -> Result:
    """Run the filters on every node; for rejected ones, preemption's dry run."""
    statuses = {}
    feasible = []
    aff = _affinity_state(pod, snap)
    spread = _spread_state(pod, snap)
    requests = pod.requests
    for node in snap.nodes:
        st = _filter(pod, node, snap, aff, spread, requests)
        if st is None:
            feasible.append(node.name)
        else:
            statuses[node.name] = st
    preemption = {}
    if not feasible:
        for name, st in statuses.items():
            preemption[name] = _dry_run(pod, name, st, snap, requests)
    return Result(feasible, statuses, preemption)


def _filter(
    pod: PodInfo,
    node: NodeInfo,
    snap: Snapshot,
    aff: _AffinityState,
    spread: _SpreadState,
    requests: Mapping[str, int],
) -> Status | None:
    return (
        _node_unschedulable(pod, node)
        or _taint_toleration(pod, node)
        or _node_affinity(pod, node)
        or _node_ports(pod, node, snap)
        or node_resources_fit(requests, node, *snap.usage_of(node.name))
        or _volume_binding(pod, node)
        or _topology_spread(spread, node)
        or _inter_pod_affinity(aff, node)
    )


PLUGINS = (
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeBinding",
    "PodTopologySpread",
    "InterPodAffinity",
)
"""The Filter plugins modelled, in the default profile's order."""


def run_plugin(plugin: str, pod: PodInfo, snap: Snapshot) -> dict[str, Status | None]:
    """One Filter plugin alone on every node (what the upstream plugin tests exercise)."""
    if plugin not in PLUGINS:
        raise ValueError(f"unknown plugin {plugin!r} (known: {', '.join(PLUGINS)})")
    aff = _affinity_state(pod, snap) if plugin == "InterPodAffinity" else None
    spread = _spread_state(pod, snap) if plugin == "PodTopologySpread" else None
    requests = pod.requests
    out: dict[str, Status | None] = {}
    for node in snap.nodes:
        if aff is not None:
            out[node.name] = _inter_pod_affinity(aff, node)
        elif spread is not None:
            out[node.name] = _topology_spread(spread, node)
        elif plugin == "NodeResourcesFit":
            out[node.name] = node_resources_fit(requests, node, *snap.usage_of(node.name))
        elif plugin == "NodePorts":
            out[node.name] = _node_ports(pod, node, snap)
        elif plugin == "VolumeBinding":
            out[node.name] = _volume_binding(pod, node)
        elif plugin == "NodeAffinity":
            out[node.name] = _node_affinity(pod, node)
        elif plugin == "TaintToleration":
            out[node.name] = _taint_toleration(pod, node)
        else:
            out[node.name] = _node_unschedulable(pod, node)
    return out


def _dry_run(
    pod: PodInfo, node_name: str, st: Status, snap: Snapshot, requests: Mapping[str, int]
) -> tuple[str, ...] | None:
    """default_preemption.go SelectVictimsOnNode, reduced to its verdict for the message."""
    if st.code == UNRESOLVABLE:
        return (PREEMPTION_NOT_HELPFUL,)
    victims = [p for p in snap.pods_on(node_name) if p.priority < pod.priority]
    if not victims:
        return (NO_VICTIMS,)
    keep = [p for p in snap.pods if p not in victims]
    reduced = Snapshot(snap.nodes, keep, snap.namespace_labels)
    node = next(n for n in snap.nodes if n.name == node_name)
    again = _filter(
        pod, node, reduced, _affinity_state(pod, reduced), _spread_state(pod, reduced), requests
    )
    if again is None:
        return None  # evicting lower-priority pods would make room: a real candidate
    return again.reasons


def fit_error(
    num_nodes: int,
    *,
    prefilter: str = "",
    reasons: Mapping[str, int] | None = None,
    preemption: Mapping[str, int] | None = None,
) -> str:
    """The FailedScheduling message.

    kubernetes pkg/scheduler/framework/types.go FitError.Error: "0/N nodes are available:" then the
    PreFilter message, or the sorted "<count> <reason>" histogram; then the PostFilter
    (preemption) message, itself a FitError over preemption's verdict per node
    (pkg/scheduler/framework/preemption/preemption.go). A PreFilter rejection is unresolvable on
    every node: "Preemption is not helpful for scheduling".
    """
    msg = f"0/{num_nodes} nodes are available:"
    if prefilter:
        msg += f" {prefilter}."
    elif reasons:
        msg += " " + ", ".join(sorted(f"{n} {r}" for r, n in reasons.items())) + "."
    if preemption is None:
        preemption = {PREEMPTION_NOT_HELPFUL: num_nodes}
    if preemption:
        hist = ", ".join(sorted(f"{n} {r}" for r, n in preemption.items()))
        msg += f" preemption: 0/{num_nodes} nodes are available: {hist}."
    return msg
