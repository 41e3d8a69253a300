"""A pod's effective resource requests, as kube-scheduler counts them.

k8s.io/component-helpers resource/helpers.go PodRequests: the sum over app containers, plus
restartable init containers (sidecars); the maximum with each ordinary init container (which runs
alone, next to the sidecars started before it); plus ``spec.overhead``. A container that sets
``limits`` but no ``requests`` for a resource requests its limit (kubernetes
pkg/apis/core/v1/defaults.go SetDefaults_Pod: requests default to limits).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from helmsim.kube.quantity import parse_quantity


def container_requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    """One container's requests (limits standing in for absent requests); bad quantities skipped."""
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        return {}
    out: dict[str, Decimal] = {}
    for field in ("limits", "requests"):  # requests override the defaulted limits
        values = resources.get(field) or {}
        if not isinstance(values, Mapping):
            continue
        for name, raw in values.items():
            try:
                out[str(name)] = parse_quantity(raw)
            except ValueError:
                continue  # the API server would refuse the object; validation reports it
    return out


def _add(into: dict[str, Decimal], more: Mapping[str, Decimal]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, Decimal(0)) + v


def _limits(container: Mapping[str, Any]) -> dict[str, Decimal]:
    resources = container.get("resources") or {}
    values = resources.get("limits") if isinstance(resources, Mapping) else None
    out: dict[str, Decimal] = {}
    for name, raw in (values or {}).items() if isinstance(values, Mapping) else ():
        try:
            out[str(name)] = parse_quantity(raw)
        except ValueError:
            continue
    return out


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """The pod's requests by resource name (only resources some container requests)."""
    return _pod_total(spec, container_requests)


def pod_limits(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """The pod's limits, summed as its requests are (component-helpers resource/helpers.go
    PodLimits: app containers and sidecars summed, at least any ordinary init container's with
    the sidecars started before it, plus ``spec.overhead``)."""
    return _pod_total(spec, _limits)


def _pod_total(spec: Mapping[str, Any], of: Any) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    containers, inits = spec.get("containers"), spec.get("initContainers")
    for c in containers if isinstance(containers, list) else ():
        if isinstance(c, Mapping):
            _add(total, of(c))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for c in inits if isinstance(inits, list) else ():
        if not isinstance(c, Mapping):
            continue
        req = of(c)
        if c.get("restartPolicy") == "Always":
            _add(sidecars, req)  # a sidecar keeps running next to everything after it
            _add(total, req)
            alone = dict(sidecars)
        else:
            alone = dict(sidecars)
            _add(alone, req)
        for k, v in alone.items():
            if v > init_peak.get(k, Decimal(0)):
                init_peak[k] = v
    for k, v in init_peak.items():
        if v > total.get(k, Decimal(0)):
            total[k] = v
    overhead = spec.get("overhead") or {}
    if isinstance(overhead, Mapping):
        for name, raw in overhead.items():
            try:
                _add(total, {str(name): parse_quantity(raw)})
            except ValueError:
                continue
    return {k: v for k, v in total.items() if v != 0}
