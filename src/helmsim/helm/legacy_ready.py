"""Helm's legacy readiness checks (``--wait`` of Helm 3, ``waitStrategy: legacy`` in Flux).

helm/helm pkg/kube/ready.go (ReadyChecker.IsReady) @v3.21.4 / v4 legacy waiter: pure functions
of the object and the objects it owns. Every kind not listed is ready at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from msgspec import Struct

from helmsim.cluster.selectors import matches_selector

Lister = Callable[[str, str | None], Sequence[Mapping[str, Any]]]
"""``(kind, namespace) -> objects``: what the checker may list (ReplicaSets, Pods)."""


class Readiness(Struct, frozen=True):
    """``ready``, or an ``error`` (retryable in pkg/kube/wait.go, up to 30 times in a row)."""

    ready: bool
    error: str | None = None


_READY = Readiness(True)
_NOT_READY = Readiness(False)


def _cond(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == type_:
            return c
    return None


def _true(obj: Mapping[str, Any], type_: str) -> bool:
    c = _cond(obj, type_)
    return c is not None and c.get("status") == "True"


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _scaled(value: Any, total: int, *, round_up: bool, default: int) -> int:
    """k8s.io/apimachinery intstr GetScaledValueFromIntOrPercent."""
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value)
    if text.endswith("%") and text[:-1].isdigit():
        exact = int(text[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return default


def _generation_observed(obj: Mapping[str, Any]) -> bool:
    meta = obj.get("metadata") or {}
    return _int((obj.get("status") or {}).get("observedGeneration"), -1) == _int(meta.get("generation"), 0)


def is_ready(obj: Mapping[str, Any], list_objects: Lister, *, check_jobs: bool) -> Readiness:
    """ReadyChecker.IsReady for one live object (PausedAsReady is on, as Helm sets it)."""
    kind = obj.get("kind")
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    ns = (obj.get("metadata") or {}).get("namespace")
    if kind == "Pod":
        return Readiness(_true(obj, "Ready"))  # ready.go isPodReady
    if kind == "Job":
        if not check_jobs:
            return _READY
        # ready.go jobReady: failed > backoffLimit is an error; succeeded < completions not ready
        if _int(status.get("failed")) > _int(spec.get("backoffLimit"), 6):
            return Readiness(False, f"job is failed: {ns}/{obj['metadata']['name']}")
        completions = spec.get("completions")
        if completions is not None and _int(status.get("succeeded")) < _int(completions, 1):
            return _NOT_READY
        return _READY
    if kind == "Deployment":
        return _deployment(obj, list_objects)
    if kind == "PersistentVolumeClaim":
        return Readiness(status.get("phase") == "Bound")
    if kind == "Service":
        svc_type = spec.get("type", "ClusterIP")
        if svc_type == "ExternalName":
            return _READY
        if not spec.get("clusterIP"):
            return _NOT_READY
        if svc_type == "LoadBalancer" and not spec.get("externalIPs"):
            return Readiness(bool((status.get("loadBalancer") or {}).get("ingress")))
        return _READY
    if kind == "DaemonSet":
        if not _generation_observed(obj):
            return _NOT_READY
        strategy = (spec.get("updateStrategy") or {})
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return _READY
        desired = _int(status.get("desiredNumberScheduled"))
        if _int(status.get("updatedNumberScheduled")) != desired:
            return _NOT_READY
        max_unavailable = _scaled(
            (strategy.get("rollingUpdate") or {}).get("maxUnavailable"), desired, round_up=True, default=1
        )
        return Readiness(_int(status.get("numberReady")) >= desired - max_unavailable)
    if kind == "CustomResourceDefinition":
        # ready.go crdReady: Established, or NamesAccepted=False (treated as ready)
        names = _cond(obj, "NamesAccepted")
        return Readiness(_true(obj, "Established") or (names is not None and names.get("status") == "False"))
    if kind == "StatefulSet":
        return _statefulset(obj)
    if kind in ("ReplicaSet", "ReplicationController"):
        if not _generation_observed(obj):
            return _NOT_READY
        selector = spec.get("selector") or {}
        if kind == "ReplicationController":
            selector = {"matchLabels": selector}
        pods = [p for p in list_objects("Pod", ns) if matches_selector(selector, (p.get("metadata") or {}).get("labels") or {})]
        return Readiness(all(_true(p, "Ready") for p in pods))
    return _READY


def _deployment(obj: Mapping[str, Any], list_objects: Lister) -> Readiness:
    spec = obj.get("spec") or {}
    if spec.get("paused") is True:
        return _READY  # PausedAsReady(true)
    if not _generation_observed(obj):
        return _NOT_READY
    uid = (obj.get("metadata") or {}).get("uid")
    owned = [
        rs for rs in list_objects("ReplicaSet", (obj.get("metadata") or {}).get("namespace"))
        if any(o.get("uid") == uid for o in (rs.get("metadata") or {}).get("ownerReferences") or ())
    ]
    template = spec.get("template")
    newest = next((rs for rs in owned if (rs.get("spec") or {}).get("template") == template), None)
    if newest is None and owned:
        newest = max(owned, key=lambda rs: (rs.get("metadata") or {}).get("creationTimestamp", ""))
    if newest is None or not _generation_observed(newest):
        return _NOT_READY
    replicas = _int(spec.get("replicas"), 1)
    strategy = spec.get("strategy") or {}
    max_unavailable = 0
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        rolling = strategy.get("rollingUpdate") or {}
        surge = _scaled(rolling.get("maxSurge", "25%"), replicas, round_up=True, default=0)
        max_unavailable = _scaled(rolling.get("maxUnavailable", "25%"), replicas, round_up=False, default=0)
        if surge == 0 and max_unavailable == 0:
            max_unavailable = 1  # deploymentutil.MaxUnavailable
    expected = replicas - max_unavailable
    return Readiness(_int((newest.get("status") or {}).get("readyReplicas")) >= expected)


def _statefulset(obj: Mapping[str, Any]) -> Readiness:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if not _generation_observed(obj):
        return _NOT_READY
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return _READY
    replicas = _int(spec.get("replicas"), 1)
    partition = _int((strategy.get("rollingUpdate") or {}).get("partition"), 0)
    if _int(status.get("updatedReplicas")) < replicas - partition:
        return _NOT_READY
    if _int(status.get("readyReplicas")) != replicas:
        return _NOT_READY
    if partition == 0 and status.get("currentRevision") != status.get("updateRevision"):
        return _NOT_READY
    return _READY
