"""The API server's validation of a few specs whose rules tie fields together, which a field
schema cannot say: a PodDisruptionBudget's ``minAvailable``/``maxUnavailable`` and a
HorizontalPodAutoscaler's replica bounds. Each returns the ``field.Invalid`` texts, in
upstream's order; the caller aggregates them into one Invalid StatusError.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_PERCENT = re.compile(r"^[0-9]+%$")
# k8s.io/apimachinery pkg/api/validation: IsValidPercent's message, kept verbatim (two spaces).
_NOT_PERCENT = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


def _go_value(value: Any) -> str:
    """A scalar as apimachinery field.Error prints it (``%v``, strings ``%q``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def _int_or_percent(value: Any, path: str) -> list[str]:
    """kubernetes pkg/apis/apps/validation/validation.go ValidatePositiveIntOrPercent and
    IsNotMoreThan100Percent."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int):
        return [] if value >= 0 else [f"{path}: Invalid value: {value}: must be greater than or equal to 0"]
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return [f"{path}: Invalid value: {_go_value(value)}: {_NOT_PERCENT}"]
        if int(value[:-1]) > 100:
            return [f"{path}: Invalid value: {_go_value(value)}: must not be greater than 100%"]
    return []


def pod_disruption_budget(obj: Mapping[str, Any]) -> list[str]:
    """kubernetes pkg/apis/policy/validation/validation.go ValidatePodDisruptionBudgetSpec: not
    both ``minAvailable`` and ``maxUnavailable``; each a non-negative int or a percent ≤ 100%.
    The first error's value is the whole spec, which Go prints as a struct dump (elided here)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    errors: list[str] = []
    has_min, has_max = spec.get("minAvailable") is not None, spec.get("maxUnavailable") is not None
    if has_min and has_max:
        errors.append("spec: Invalid value: policy.PodDisruptionBudgetSpec{…}: minAvailable and maxUnavailable cannot be both set")
    if has_min:
        errors.extend(_int_or_percent(spec.get("minAvailable"), "spec.minAvailable"))
    if has_max:
        errors.extend(_int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable"))
    return errors


# pkg/apis/autoscaling/validation/validation.go: minReplicasLowerBound is 1 unless the
# HPAScaleToZero feature gate (alpha, off by default) is on.
MIN_REPLICAS_LOWER_BOUND = 1


def horizontal_pod_autoscaler(obj: Mapping[str, Any]) -> list[str]:
    """kubernetes pkg/apis/autoscaling/validation/validation.go
    validateHorizontalPodAutoscalerSpec: ``minReplicas`` ≥ 1, ``maxReplicas`` > 0 and ≥
    ``minReplicas``."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    low, high = _int(spec.get("minReplicas")), _int(spec.get("maxReplicas"))
    errors: list[str] = []
    if low is not None and low < MIN_REPLICAS_LOWER_BOUND:
        errors.append(f"spec.minReplicas: Invalid value: {low}: must be greater than or equal to {MIN_REPLICAS_LOWER_BOUND}")
    if high is not None:
        if high < 1:
            errors.append(f"spec.maxReplicas: Invalid value: {high}: must be greater than 0")
        if low is not None and high < low:
            errors.append(f"spec.maxReplicas: Invalid value: {high}: must be greater than or equal to `minReplicas`")
    return errors


def _int(value: Any) -> int | None:
    """An integer field's value (a bool or other type is the schema check's business)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _namespace(obj: Mapping[str, Any]) -> list[str]:
    """Pod Security admission's check of a Namespace's labels (helmsim.cluster.podsecurity)."""
    from helmsim.cluster.podsecurity import namespace_label_errors

    return namespace_label_errors(obj)


POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "PodTemplate": ("template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    # not StatefulSet: apps validation ValidatePodTemplateSpecForStatefulSet leaves its pod spec
    # unchecked (mounts may name volumeClaimTemplates); its pods are checked when created
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
"""Where each kind holds the pod spec the API server validates as a pod's."""


def _overcommit_allowed(name: str) -> bool:
    """pkg/apis/core/v1/helper IsOvercommitAllowed: a native resource (no domain, or
    ``kubernetes.io/``) that is not hugepages; extended resources (``nvidia.com/gpu``) are not."""
    native = "/" not in name or name.startswith("kubernetes.io/")
    return native and not name.startswith("hugepages-")


def resource_errors(obj: Mapping[str, Any]) -> list[str]:
    """pkg/apis/core/validation/validation.go ValidateResourceRequirements: a container's request
    may not exceed its limit (``spec.containers[0].resources.requests: Invalid value: "2": must
    be less than or equal to cpu limit of 1``), and must equal it for a resource that cannot be
    overcommitted (extended resources, hugepages), which needs a limit; resources in name order
    (upstream ranges a map)."""
    from helmsim.kube.quantity import canonical, is_binary, parse_quantity

    path = POD_SPEC_PATHS.get(str(obj.get("kind") or ""))
    spec: Any = obj
    for part in path or ():
        spec = spec.get(part) if isinstance(spec, Mapping) else None
    if not path or not isinstance(spec, Mapping):
        return []
    prefix = ".".join(path)
    errors: list[str] = []
    for field in ("containers", "initContainers"):  # ValidatePodSpec: containers, then init containers
        found = spec.get(field)
        for i, c in enumerate(found if isinstance(found, list) else ()):
            resources = c.get("resources") if isinstance(c, Mapping) else None
            if not isinstance(resources, Mapping):
                continue
            requests, limits = resources.get("requests"), resources.get("limits")
            requests = requests if isinstance(requests, Mapping) else {}
            limits = limits if isinstance(limits, Mapping) else {}
            where = f"{prefix}.{field}[{i}].resources"
            for name in sorted(requests, key=str):
                if name not in limits:
                    if not _overcommit_allowed(str(name)):
                        errors.append(f"{where}.limits: Required value: Limit must be set for non overcommitable resources")
                    continue
                try:
                    req, lim = parse_quantity(requests[name]), parse_quantity(limits[name])
                except ValueError:
                    continue  # the field check refuses a malformed quantity first
                shown = canonical(req, is_binary(requests[name]))
                limit = canonical(lim, is_binary(limits[name]))
                if req != lim and not _overcommit_allowed(str(name)):
                    errors.append(f'{where}.requests: Invalid value: "{shown}": must be equal to {name} limit of {limit}')
                elif req > lim:
                    errors.append(
                        f'{where}.requests: Invalid value: "{shown}": must be less than or equal to {name} limit of {limit}'
                    )
    return errors


def pod(obj: Mapping[str, Any]) -> list[str]:
    """A Pod's checks (validation.go validatePodMetadataAndSpec): its pod spec's
    (:func:`resource_errors`), then validateContainersOnlyForPod: an image with leading or trailing
    whitespace is refused in a pod (not in a template, where a controller then fails to create
    its pods: ``FailedCreate``)."""
    from helmsim.kube.imageref import go_quote

    errors = resource_errors(obj)
    spec = obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    for field in ("containers", "initContainers"):
        found = spec.get(field)
        for i, c in enumerate(found if isinstance(found, list) else ()):
            image = c.get("image") if isinstance(c, Mapping) else None
            if isinstance(image, str) and image != image.strip():
                errors.append(
                    f"spec.{field}[{i}].image: Invalid value: {go_quote(image)}: must not have leading or trailing whitespace"
                )
    return errors


def persistent_volume_claim(obj: Mapping[str, Any]) -> list[str]:
    """pkg/apis/core/validation/validation.go ValidatePersistentVolumeClaimSpec: at least one
    access mode, and a storage request (checked before any admission plugin, LimitRanger's
    bounds included)."""
    def mapping(v: Any) -> Mapping[str, Any]:
        return v if isinstance(v, Mapping) else {}

    spec = mapping(obj.get("spec"))
    errors = []
    if not spec.get("accessModes"):
        errors.append("spec.accessModes: Required value: at least 1 access mode is required")
    if "storage" not in mapping(mapping(spec.get("resources")).get("requests")):
        errors.append("spec.resources[storage]: Required value")
    return errors


VALIDATORS: dict[tuple[str, str], Callable[[Mapping[str, Any]], list[str]]] = {
    ("", "PersistentVolumeClaim"): persistent_volume_claim,
    ("policy", "PodDisruptionBudget"): pod_disruption_budget,
    ("autoscaling", "HorizontalPodAutoscaler"): horizontal_pod_autoscaler,
    ("", "Namespace"): _namespace,
    ("", "Pod"): pod,
    **{(g, k): resource_errors for g, k in (
        ("", "PodTemplate"), ("", "ReplicationController"), ("apps", "ReplicaSet"), ("apps", "Deployment"),
        ("apps", "DaemonSet"), ("batch", "Job"), ("batch", "CronJob"),
    )},
}
"""(API group, kind) → its validator: every served version is validated alike (one internal type)."""


def spec_errors(obj: Mapping[str, Any]) -> list[str]:
    """The validation errors of ``obj``'s spec, when its kind is one of :data:`VALIDATORS`."""
    api = str(obj.get("apiVersion") or "")
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    validator = VALIDATORS.get((group, str(obj.get("kind") or "")))
    return validator(obj) if validator is not None else []


__all__ = ["MIN_REPLICAS_LOWER_BOUND", "VALIDATORS", "horizontal_pod_autoscaler", "persistent_volume_claim", "pod_disruption_budget", "spec_errors"]
