"""Workload objects as their controllers read them: the pod template, how many pods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

POD_KINDS = ("Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob")
"""The kinds that are a pod or hold a pod template (k8s.io/api core/v1, apps/v1, batch/v1)."""

# k8s.io/api apps/v1 and core/v1 SetDefaults_*: replicas defaults to 1.
_REPLICATED = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"})


def pod_template(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod a Pod is, or the pod template of a workload (``spec.template``) or CronJob
    (``spec.jobTemplate.spec.template``): a mapping with ``metadata`` and ``spec``; None when
    the object has none (k8s.io/api core/v1 PodTemplateSpec)."""
    kind = body.get("kind")
    if kind == "Pod":
        return body
    spec = body.get("spec") or {}
    if kind == "CronJob" and isinstance(spec, Mapping):
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    tpl = spec.get("template") if isinstance(spec, Mapping) else None
    return tpl if isinstance(tpl, Mapping) else None


def _count(value: Any, default: int) -> int:
    """A count field; absent is ``default``, a mistyped value counts 0 (validation reports it)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return max(0, value)


def _job_pods(spec: Mapping[str, Any]) -> int:
    # k8s.io/api batch/v1 SetDefaults_Job: parallelism 1; completions 1 when both are unset.
    parallelism = _count(spec.get("parallelism"), 1)
    completions = _count(spec.get("completions"), 1)
    return max(parallelism, completions)


def declared_pods(kind: str, body: Mapping[str, Any], nodes: int) -> int:
    """Pods the object's controller creates for its spec (a DaemonSet: one per node; a Job or
    a CronJob's run: its completions or parallelism, whichever is larger; retries not counted)."""
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        spec = {}
    if kind == "Pod":
        return 1
    if kind in _REPLICATED:
        return _count(spec.get("replicas"), 1)
    if kind == "DaemonSet":
        return nodes
    if kind == "Job":
        return _job_pods(spec)
    if kind == "CronJob":
        template = spec.get("jobTemplate")
        inner = template.get("spec") if isinstance(template, Mapping) else None
        return _job_pods(inner if isinstance(inner, Mapping) else {})
    return 0
