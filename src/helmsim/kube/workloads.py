"""How many pods a workload object asks for, as its controller reads the spec."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# k8s.io/api apps/v1 and core/v1 SetDefaults_*: replicas defaults to 1.
_REPLICATED = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"})


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
