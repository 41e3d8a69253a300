"""The ResourceQuota admission plugin: a namespace's quotas refuse what would exceed them.

k8s.io/apiserver pkg/admission/plugin/resourcequota/controller.go CheckRequest, with the usage
of kubernetes pkg/quota/v1/evaluator/core (pods.go, persistent_volume_claims.go, services.go) and
the object-count evaluator (``count/<resource>.<group>``). On each create in a namespace with a
ResourceQuota whose scopes match the object:

* a quota over ``cpu``/``memory`` (``requests.*``, ``limits.*``) needs every container to set
  them: ``failed quota: <name>: must specify limits.cpu for: app; requests.memory for: app,init``;
* usage plus the object's usage over ``hard`` is refused: ``exceeded quota: <name>, requested:
  requests.cpu=500m, used: requests.cpu=1800m, limited: requests.cpu=2``.

Usage is what the namespace holds when the object is created, kept by a :class:`Ledger` that
follows the store's writes (upstream: the quota controller's ``status.used`` plus what admission
charged since); the limits are each quota's ``spec.hard``. Pods in a terminal phase count only
for ``count/pods`` (pods.go QuotaV1Pod). Quota scopes (Terminating, NotTerminating, BestEffort, NotBestEffort,
PriorityClass, CrossNamespacePodAffinity) select pods; a quota with scopes tracks nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from helmsim.cluster.store import ApiError
from helmsim.kube.quantity import canonical, is_binary, parse_quantity
from helmsim.kube.requests import container_requests, pod_limits, pod_requests

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

Usage = dict[str, Decimal]

# pods.go validationSet: quota over these needs each container to set them.
_VALIDATED = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})
# pods.go podResources (plus the hugepages-/extended prefixes below)
_POD_RESOURCES = frozenset(
    {
        "count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
        "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods",
    }
)
_LEGACY_COUNTS = {"Service": "services", "Secret": "secrets", "ConfigMap": "configmaps",
                  "PersistentVolumeClaim": "persistentvolumeclaims", "ReplicationController": "replicationcontrollers",
                  "ResourceQuota": "resourcequotas"}
_NATIVE = ("cpu", "memory", "ephemeral-storage")


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _seq(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _count_name(sim: Simulation, obj: Mapping[str, Any]) -> str:
    """``count/<resource>`` (core) or ``count/<resource>.<group>``."""
    from helmsim.cluster.controllers.crd import resource_name

    api_version = str(obj.get("apiVersion") or "")
    kind = str(obj.get("kind") or "")
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    plural = resource_name(sim, api_version, kind)
    return f"count/{plural}" + (f".{group}" if group else "")


def _limits(c: Mapping[str, Any]) -> Usage:
    out: Usage = {}
    for name, raw in _map(_map(c.get("resources")).get("limits")).items():
        try:
            out[str(name)] = parse_quantity(raw)
        except ValueError:
            continue
    return out


def _compute(requests: Mapping[str, Decimal], limits: Mapping[str, Decimal]) -> Usage:
    """pods.go podComputeUsageHelper."""
    out: Usage = {"pods": Decimal(1)}
    for name in _NATIVE:
        if name in requests:
            out[name] = requests[name]
            out[f"requests.{name}"] = requests[name]
        if name in limits:
            out[f"limits.{name}"] = limits[name]
    for name, q in requests.items():
        if name.startswith("hugepages-"):
            out[name] = q
            out[f"requests.{name}"] = q
        elif "/" in name and not name.startswith("kubernetes.io/"):  # an extended resource
            out[f"requests.{name}"] = q
    return out


def _pod_counts(pod: Mapping[str, Any]) -> bool:
    """pods.go QuotaV1Pod: whether the pod's compute resources are charged (not in a terminal
    phase; a deleted pod stays in the store only for its grace period, when it still counts)."""
    return _map(pod.get("status")).get("phase") not in ("Succeeded", "Failed")


def usage(sim: Simulation, obj: Mapping[str, Any]) -> Usage:
    """What ``obj`` charges against a quota (the evaluators' Usage)."""
    kind = str(obj.get("kind") or "")
    out: Usage = {_count_name(sim, obj): Decimal(1)}
    if kind in _LEGACY_COUNTS and obj.get("apiVersion") == "v1":
        out[_LEGACY_COUNTS[str(kind)]] = Decimal(1)
    spec = _map(obj.get("spec"))
    if kind == "Pod":
        if _pod_counts(obj):
            out.update(_compute(pod_requests(spec), pod_limits(spec)))
    elif kind == "PersistentVolumeClaim":
        # persistent_volume_claims.go Usage: requests.storage, per class too
        cls = spec.get("storageClassName")
        try:
            storage = parse_quantity(_map(_map(spec.get("resources")).get("requests")).get("storage"))
        except ValueError:
            storage = None
        if storage is not None:
            out["requests.storage"] = storage
        if isinstance(cls, str) and cls:
            prefix = f"{cls}.storageclass.storage.k8s.io/"
            out[prefix + "persistentvolumeclaims"] = Decimal(1)
            if storage is not None:
                out[prefix + "requests.storage"] = storage
    elif kind == "Service":
        # services.go Usage: load balancers, and node ports of NodePort and LoadBalancer Services
        kind_of = spec.get("type") or "ClusterIP"
        ports = len([p for p in _seq(spec.get("ports")) if isinstance(p, Mapping)])
        if kind_of == "LoadBalancer":
            out["services.loadbalancers"] = Decimal(1)
            if spec.get("allocateLoadBalancerNodePorts") is not False:
                out["services.nodeports"] = Decimal(ports)
        elif kind_of == "NodePort":
            out["services.nodeports"] = Decimal(ports)
    return out


def _best_effort(spec: Mapping[str, Any]) -> bool:
    """pkg/apis/core/v1/helper/qos GetPodQOS: no container requests or limits cpu or memory."""
    for field in ("initContainers", "containers"):
        for c in spec.get(field) or ():
            if isinstance(c, Mapping):
                if any(k in ("cpu", "memory") for k in container_requests(c)) or any(k in ("cpu", "memory") for k in _limits(c)):
                    return False
    return True


def _matches_scope(selector: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """pods.go podMatchesScopeFunc."""
    spec = _map(pod.get("spec"))
    name = selector.get("scopeName")
    if name in ("Terminating", "NotTerminating"):
        deadline = spec.get("activeDeadlineSeconds")
        terminating = isinstance(deadline, int) and not isinstance(deadline, bool) and deadline >= 0
        return terminating == (name == "Terminating")
    if name in ("BestEffort", "NotBestEffort"):
        return _best_effort(spec) == (name == "BestEffort")
    if name == "PriorityClass":
        cls = str(spec.get("priorityClassName") or "")
        op = selector.get("operator")
        values = [str(v) for v in _seq(selector.get("values"))]
        if op == "Exists":
            return bool(cls)
        if op == "DoesNotExist":
            return not cls
        if op == "In":
            return bool(cls) and cls in values
        if op == "NotIn":
            return not cls or cls not in values
        return False
    if name == "CrossNamespacePodAffinity":
        affinity = _map(spec.get("affinity"))
        for side in ("podAffinity", "podAntiAffinity"):
            a = _map(affinity.get(side))
            terms = list(_seq(a.get("requiredDuringSchedulingIgnoredDuringExecution")))
            terms += [_map(t).get("podAffinityTerm") for t in _seq(a.get("preferredDuringSchedulingIgnoredDuringExecution"))]
            if any(_map(t).get("namespaces") or _map(t).get("namespaceSelector") is not None for t in terms):
                return True
        return False
    return False


def _selectors(quota: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """controller.go getScopeSelectorsFromQuota."""
    spec = _map(quota.get("spec"))
    given = spec.get("scopes")
    scopes: list[Any] = given if isinstance(given, list) else []
    out: list[Mapping[str, Any]] = [{"scopeName": s, "operator": "Exists"} for s in scopes]
    out += [e for e in _seq(_map(spec.get("scopeSelector")).get("matchExpressions")) if isinstance(e, Mapping)]
    return out


def _hard(quota: Mapping[str, Any]) -> dict[str, tuple[Decimal, str]]:
    out: dict[str, tuple[Decimal, str]] = {}
    for name, raw in _map(_map(quota.get("spec")).get("hard")).items():
        try:
            out[str(name)] = (parse_quantity(raw), str(raw))
        except ValueError:
            continue
    return out


def _tracked(kind: str, names: Iterable[str], count: str) -> list[str]:
    """The evaluator's MatchingResources of the quota's hard names."""
    out = []
    for n in names:
        if n == count:
            out.append(n)
        elif kind == "Pod" and (n in _POD_RESOURCES or n.startswith(("hugepages-", "requests.hugepages-")) or (n.startswith("requests.") and "/" in n)):
            out.append(n)
        elif kind == "PersistentVolumeClaim" and (n in ("requests.storage", "persistentvolumeclaims") or ".storageclass.storage.k8s.io/" in n):
            out.append(n)
        elif kind == "Service" and n in ("services", "services.loadbalancers", "services.nodeports"):
            out.append(n)
        elif n == _LEGACY_COUNTS.get(kind):
            out.append(n)
    return out


def _missing(pod: Mapping[str, Any], required: set[str]) -> str | None:
    """pods.go Constraints: each container must set what a cpu/memory quota tracks."""
    need = required & _VALIDATED
    if not need:
        return None
    missing: dict[str, set[str]] = {}
    spec = _map(pod.get("spec"))
    for field in ("containers", "initContainers"):
        for c in spec.get(field) or ():
            if not isinstance(c, Mapping):
                continue
            have = set(_compute(container_requests(c), _limits(c)))
            for name in need - have:
                missing.setdefault(name, set()).add(str(c.get("name") or ""))
    if not missing:
        return None
    return "must specify " + "; ".join(f"{k} for: {','.join(sorted(v))}" for k, v in sorted(missing.items()))


def _pretty(values: Mapping[str, Decimal], binary: Mapping[str, bool]) -> str:
    """controller.go prettyPrint: ``name=quantity`` sorted, joined by commas."""
    return ",".join(f"{k}={canonical(v, binary.get(k, False))}" for k, v in sorted(values.items()))


def admit(sim: Simulation, obj: Mapping[str, Any], *, released: int = 0) -> None:
    """Refuse creating ``obj`` (``ApiError`` Forbidden) when a quota of its namespace forbids it
    (``released``: objects of its kind the same request removes first, as Helm's storage prunes
    release records)."""
    meta = _map(obj.get("metadata"))
    namespace = str(meta.get("namespace") or "")
    if not namespace:
        return
    quotas = sim.store.list("ResourceQuota", namespace)
    if not quotas:
        return
    kind = str(obj.get("kind") or "")
    count = _count_name(sim, obj)
    delta = {k: v for k, v in usage(sim, obj).items() if v != 0}
    # controller.go CheckRequest: every matching quota's constraints first, then the usage
    matching: list[tuple[str, dict[str, tuple[Decimal, str]], list[str]]] = []
    for quota in sorted(quotas, key=lambda q: str(_map(q.get("metadata")).get("name"))):
        name = str(_map(quota.get("metadata")).get("name"))
        selectors = _selectors(quota)
        if selectors and (kind != "Pod" or not all(_matches_scope(s, obj) for s in selectors)):
            continue  # generic.Matches: every scope must match; only pods have scopes
        hard = _hard(quota)
        tracked = _tracked(kind, hard, count)
        if not tracked:
            continue
        if kind == "Pod":
            reason = _missing(obj, set(tracked))
            if reason is not None:
                raise forbidden(sim, obj, f"failed quota: {name}: {reason}")
        matching.append((name, hard, tracked))
    used: Usage | None = None
    for name, hard, tracked in matching:
        requested = {k: v for k, v in delta.items() if k in tracked}
        if not requested:
            continue
        if used is None:
            used = dict(_namespace_usage(sim, namespace, kind, obj))
            for counted in (count, _LEGACY_COUNTS.get(kind, "")):
                if released and counted in used:
                    used[counted] -= released
        over = sorted(k for k, v in requested.items() if used.get(k, Decimal(0)) + v > hard[k][0])
        if over:
            binary = {k: is_binary(hard[k][1]) or _binary_request(obj, k) for k in over}
            raise forbidden(
                sim,
                obj,
                f"exceeded quota: {name}, requested: {_pretty({k: requested[k] for k in over}, binary)}, "
                f"used: {_pretty({k: used.get(k, Decimal(0)) for k in over}, binary)}, "
                f"limited: {_pretty({k: hard[k][0] for k in over}, binary)}",
            )


def _binary_request(obj: Mapping[str, Any], name: str) -> bool:
    resource = name.split(".", 1)[1] if name.startswith(("requests.", "limits.")) else name
    for field in ("containers", "initContainers"):
        for c in _seq(_map(obj.get("spec")).get(field)):
            res = _map(_map(c).get("resources"))
            for part in ("requests", "limits"):
                if is_binary(_map(res.get(part)).get(resource)):
                    return True
    return is_binary(_map(_map(_map(obj.get("spec")).get("resources")).get("requests")).get("storage"))


class Ledger:
    """What the objects of each (kind, apiVersion, namespace) charge, kept up to date by the
    store's writes of the kinds a quota was asked about (the quota controller's status.used and
    admission's running total, without recounting the namespace on every create)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.totals: dict[tuple[str, str, str], Usage] = {}
        self.charged: dict[tuple[str, str, str, str], tuple[tuple[str, str, str], Usage]] = {}
        self.kinds: set[str] = set()

    def total(self, kind: str, api_version: str, namespace: str) -> Usage:
        if kind not in self.kinds:
            self.kinds.add(kind)
            for obj in self.sim.store.list(kind):
                self._charge("ADDED", obj)
            self.sim.store.watch([kind], self._charge)
        found = self.totals.get((kind, api_version, namespace), {})
        records = self.sim.release_records
        if kind == "Secret" and api_version == "v1" and records is not None:
            # Helm stores each revision as a Secret in the release's storage namespace
            extra = Decimal(records.stored(namespace))
            if extra:
                found = dict(found)
                for name in ("count/secrets", "secrets"):
                    found[name] = found.get(name, Decimal(0)) + extra
        return found

    def _charge(self, event: str, obj: Mapping[str, Any]) -> None:
        meta = _map(obj.get("metadata"))
        where = (str(obj.get("kind") or ""), str(obj.get("apiVersion") or ""), str(meta.get("namespace") or ""))
        key = (*where, str(meta.get("name") or ""))
        before = self.charged.pop(key, None)
        totals = self.totals.setdefault(where, {})
        if before is not None:
            for k, v in before[1].items():
                totals[k] = totals.get(k, Decimal(0)) - v
        if event != "DELETED":
            now = usage(self.sim, obj)
            self.charged[key] = (where, now)
            for k, v in now.items():
                totals[k] = totals.get(k, Decimal(0)) + v


def _namespace_usage(sim: Simulation, namespace: str, kind: str, obj: Mapping[str, Any]) -> Usage:
    """What the namespace's objects of ``obj``'s kind already charge."""
    if sim.quota_ledger is None:
        sim.quota_ledger = Ledger(sim)
    ledger: Ledger = sim.quota_ledger
    return ledger.total(kind, str(obj.get("apiVersion") or ""), namespace)


def forbidden(sim: Simulation, obj: Mapping[str, Any], reason: str) -> ApiError:
    """``<resource> "<name>" is forbidden: <reason>`` (admission.NewForbidden)."""
    from helmsim.cluster.controllers.crd import resource_name

    api_version = str(obj.get("apiVersion") or "")
    kind = str(obj.get("kind") or "")
    meta = _map(obj.get("metadata"))
    name = str(meta.get("generateName") or meta.get("name") or "") if kind == "Pod" else str(meta.get("name") or "")
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    resource = resource_name(sim, api_version, kind) + (f".{group}" if group else "")
    return ApiError("Forbidden", f'{resource} "{name}" is forbidden: {reason}')
