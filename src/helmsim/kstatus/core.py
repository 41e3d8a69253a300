"""``compute``: kstatus ``status.Compute`` (generic rules, per-kind rules, Ready fallback).

Rules follow fluxcd/cli-utils v1.2.1 (967855fb) pkg/kstatus/status, the fork helm-controller links;
it equals kubernetes-sigs/cli-utils @5895ad6c except that the fork has no Job ``Suspended`` branch.
``variant=Variant.UPSTREAM`` restores that branch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from helmsim.kstatus.fields import (
    BasicCondition,
    StatusError,
    conditions,
    get_bool_field,
    get_int_field,
    get_string_field,
    go_type,
    go_value,
    nested_int64,
    nested_string,
)
from helmsim.kstatus.types import (
    STALLED,
    Condition,
    Result,
    Status,
    current,
    failed,
    group_version,
    in_progress,
    unknown,
)


class Variant(str, Enum):
    """Which kstatus: the fluxcd fork (default, used by helm-controller) or upstream cli-utils."""

    FLUXCD = "fluxcd"
    UPSTREAM = "upstream"


# cli-utils pkg/kstatus/status/core.go: ScheduleWindow = 15 * time.Second
SCHEDULE_WINDOW = timedelta(seconds=15)
_MAX_INT32 = 2**31 - 1
_GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)

KindFn = Callable[[Mapping[str, Any], list[BasicCondition], datetime | None, Variant], Result]


def compute(
    obj: Mapping[str, Any], *, now: datetime | None = None, variant: Variant = Variant.FLUXCD
) -> Result:
    """The kstatus status of one object; never raises.

    ``now`` is the clock for the Pod 15 s unschedulable window; ``None`` means the window has
    passed. A status-function error (unknown Pod phase, wrongly typed field, no kind) gives
    ``Unknown`` with the error, as the polling layer reports it.
    """
    try:
        return compute_or_raise(obj, now=now, variant=variant)
    except StatusError as err:
        return unknown(str(err))


def compute_or_raise(
    obj: Mapping[str, Any], *, now: datetime | None = None, variant: Variant = Variant.FLUXCD
) -> Result:
    """cli-utils status.go Compute; raises StatusError where Go returns an error."""
    check_object(obj)
    if now is not None and now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    # Go decodes status.conditions in each function; decoding once is equivalent, because the
    # generic step decodes them first and would have returned the same error.
    res, conds = _generic(obj)
    if res is not None:
        return res
    fn = _KIND_RULES.get(group_kind_key(obj))
    if fn is not None:
        return fn(obj, conds, now, variant)
    res = _ready_condition(conds)
    if res is not None:
        return res
    # cli-utils status.go Compute: no rule applies → Current "Resource is current"
    return current("Resource is current")


def check_object(obj: Any) -> None:
    """Objects reach Compute in Go only after a GVK lookup, so they always have a kind; here a
    missing kind is reported like apimachinery's missing-kind error."""
    if not isinstance(obj, Mapping):
        raise StatusError("object is not a mapping")
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise StatusError("Object 'Kind' is missing")


def group_kind_key(obj: Mapping[str, Any]) -> str:
    """core.go GetLegacyConditionsFn key: "group/Kind", or "Kind" for the core group."""
    api_version = obj.get("apiVersion")
    if isinstance(api_version, str) and api_version.count("/") > 1:
        return ""  # unparsable apiVersion: Go's GroupVersionKind() is empty
    group, _ = group_version(api_version)
    raw_kind = obj.get("kind")
    kind = raw_kind if isinstance(raw_kind, str) else ""
    return f"{group}/{kind}" if group else kind


def _kind(obj: Mapping[str, Any]) -> str:
    k = obj.get("kind")
    return k if isinstance(k, str) else ""


# --- generic.go ---------------------------------------------------------------------------------


def _generic(obj: Mapping[str, Any]) -> tuple[Result | None, list[BasicCondition]]:
    # cli-utils generic.go checkGenericProperties: deletionTimestamp → Terminating
    try:
        deletion = nested_string(obj, "metadata", "deletionTimestamp")
    except StatusError as err:
        raise StatusError(f"looking up metadata.deletionTimestamp from resource: {err}") from None
    if deletion:
        return Result(Status.TERMINATING, "Resource scheduled for deletion", ()), []
    res = _check_generation(obj)
    if res is not None:
        return res, []
    # generic.go: first Reconciling=True → InProgress, first Stalled=True → Failed (list order)
    conds = conditions(obj)
    for c in conds:
        if c.type == "Reconciling" and c.status == "True":
            return in_progress(c.reason, c.message), conds
        if c.type == STALLED and c.status == "True":
            stalled = Condition(STALLED, "True", c.reason, c.message)
            return Result(Status.FAILED, c.message, (stalled,)), conds
    return None, conds


def _check_generation(obj: Mapping[str, Any]) -> Result | None:
    # cli-utils generic.go checkGeneration: only when both fields exist
    try:
        generation = nested_int64(obj, "metadata", "generation")
    except StatusError as err:
        raise StatusError(f"looking up metadata.generation from resource: {err}") from None
    if generation is None:
        return None
    try:
        observed = nested_int64(obj, "status", "observedGeneration")
    except StatusError as err:
        raise StatusError(f"looking up status.observedGeneration from resource: {err}") from None
    if observed is not None and observed != generation:
        message = (
            f"{_kind(obj)} generation is {generation}, but latest observed generation is {observed}"
        )
        return in_progress("LatestGenerationNotObserved", message)
    return None


# --- status.go checkReadyCondition --------------------------------------------------------------


def _ready_condition(conds: list[BasicCondition]) -> Result | None:
    for c in conds:
        if c.type != "Ready":
            continue
        if c.status == "True":
            return current("Resource is Ready")
        if c.status in ("False", "Unknown"):
            return in_progress(c.reason, c.message)
    return None


# --- core.go kind rules -------------------------------------------------------------------------


def _always_ready(
    obj: Mapping[str, Any], conds: list[BasicCondition], now: datetime | None, variant: Variant
) -> Result:
    # core.go alwaysReady (Secret, ConfigMap, batch/CronJob)
    return current("Resource is always ready")


def _sts(
    obj: Mapping[str, Any], conds: list[BasicCondition], now: datetime | None, variant: Variant
) -> Result:
    # core.go stsConditions
    if get_string_field(obj, ".spec.updateStrategy.type", "") == "OnDelete":
        return current("StatefulSet is using the ondelete update strategy")
    spec = get_int_field(obj, ".spec.replicas", 1)
    ready = get_int_field(obj, ".status.readyReplicas", 0)
    cur = get_int_field(obj, ".status.currentReplicas", 0)
    updated = get_int_field(obj, ".status.updatedReplicas", 0)
    replicas = get_int_field(obj, ".status.replicas", 0)
    partition = get_int_field(obj, ".spec.updateStrategy.rollingUpdate.partition", -1)
    if spec > replicas:
        return in_progress("LessReplicas", f"Replicas: {replicas}/{spec}")
    if spec > ready:
        return in_progress("LessReady", f"Ready: {ready}/{spec}")
    if replicas > spec:
        return in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    if partition != -1:
        if updated < spec - partition:
            return in_progress("PartitionRollout", f"updated: {updated}/{spec - partition}")
        return current(f"Partition rollout complete. updated: {updated}")
    if spec > cur:
        return in_progress("LessCurrent", f"current: {cur}/{spec}")
    if get_string_field(obj, ".status.currentRevision", "") != get_string_field(
        obj, ".status.updateRevision", ""
    ):
        return in_progress("RevisionMismatch", "Waiting for updated revision to match current")
    return current(f"All replicas scheduled as expected. Replicas: {replicas}")


def _deployment(
    obj: Mapping[str, Any], conds: list[BasicCondition], now: datetime | None, variant: Variant
) -> Result:
    # core.go deploymentConditions; absent progressDeadlineSeconds reads as MaxInt32 (no deadline)
    progressing = get_int_field(obj, ".spec.progressDeadlineSeconds", _MAX_INT32) == _MAX_INT32
    available = False
    for c in conds:
        if c.type == "Progressing":
            if c.reason == "ProgressDeadlineExceeded":
                return Result(
                    Status.FAILED,
                    "Progress deadline exceeded",
                    (Condition(STALLED, "True", c.reason, c.message),),
                )
            if c.status == "True" and c.reason == "NewReplicaSetAvailable":
                progressing = True
        elif c.type == "Available" and c.status == "True":
            available = True
    spec = get_int_field(obj, ".spec.replicas", 1)
    replicas = get_int_field(obj, ".status.replicas", 0)
    updated = get_int_field(obj, ".status.updatedReplicas", 0)
    ready = get_int_field(obj, ".status.readyReplicas", 0)
    avail = get_int_field(obj, ".status.availableReplicas", 0)
    if spec > replicas:
        return in_progress("LessReplicas", f"Replicas: {replicas}/{spec}")
    if spec > updated:
        return in_progress("LessUpdated", f"Updated: {updated}/{spec}")
    if replicas > spec:
        return in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    if updated > avail:
        return in_progress("LessAvailable", f"Available: {avail}/{updated}")
    if spec > ready:
        return in_progress("LessReady", f"Ready: {ready}/{spec}")
    if not progressing:
        return in_progress("ReplicaSetNotAvailable", "ReplicaSet not Available")
    if not available:
        return in_progress("DeploymentNotAvailable", "Deployment not Available")
    return current(f"Deployment is available. Replicas: {replicas}")


def _replicaset(
    obj: Mapping[str, Any], conds: list[BasicCondition], now: datetime | None, variant: Variant
) -> Result:
    # core.go replicasetConditions: ReplicaFailure=True is InProgress, not Failed
    for c in conds:
        if c.type == "ReplicaFailure" and c.status == "True":
            return in_progress("ReplicaFailure", "Replica Failure condition. Check Pods")
    spec = get_int_field(obj, ".spec.replicas", 1)
    replicas = get_int_field(obj, ".status.replicas", 0)
    ready = get_int_field(obj, ".status.readyReplicas", 0)
    avail = get_int_field(obj, ".status.availableReplicas", 0)
    labelled = get_int_field(obj, ".status.fullyLabeledReplicas", 0)
    if spec > labelled:
        return in_progress("LessLabelled", f"Labelled: {labelled}/{spec}")
    if spec > avail:
        return in_progress("LessAvailable", f"Available: {avail}/{spec}")
    if spec > ready:
        return in_progress("LessReady", f"Ready: {ready}/{spec}")
    if replicas > spec:
        return in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    return current(f"ReplicaSet is available. Replicas: {replicas}")


def _daemonset(
    obj: Mapping[str, Any], conds: list[BasicCondition], now: datetime | None, variant: Variant
) -> Result:
    # core.go daemonsetConditions, after checkGenerationSet
    res = _check_generation_set(obj)
    if res is not None:
        return res
    desired = get_int_field(obj, ".status.desiredNumberScheduled", -1)
    cur = get_int_field(obj, ".status.currentNumberScheduled", 0)
    updated = get_int_field(obj, ".status.updatedNumberScheduled", 0)
    avail = get_int_field(obj, ".status.numberAvailable", 0)
    ready = get_int_field(obj, ".status.numberReady", 0)
    if desired == -1:
        return in_progress("NoDesiredNumber", "Missing .status.desiredNumberScheduled")
    if desired > cur:
        return in_progress("LessCurrent", f"Current: {cur}/{desired}")
    if desired > updated:
        return in_progress("LessUpdated", f"Updated: {updated}/{desired}")
    if desired > avail:
        return in_progress("LessAvailable", f"Available: {avail}/{desired}")
    if desired > ready:
        return in_progress("LessReady", f"Ready: {ready}/{desired}")
    return current(f"All replicas scheduled as expected. Replicas: {desired}")


def _check_generation_set(obj: Mapping[str, Any]) -> Result | None:
    # core.go checkGenerationSet
    try:
        generation = nested_int64(obj, "metadata", "generation")
    except StatusError as err:
        raise StatusError(f"looking up metadata.generation from resource: {err}") from None
    if generation is None:
        return in_progress("NoGeneration", f"{_kind(obj)} metadata.generation not found")
    try:
        observed = nested_int64(obj, "status", "observedGeneration")
    except StatusError as err:
        raise StatusError(f"looking up status.observedGeneration from resource: {err}") from None
    if observed is None:
        return in_progress(
            "NoObservedGeneration", f"{_kind(obj)} status.observedGeneration not found"
        )
    return None


def _pvc(
    obj: Mapping[str, Any], conds: list[BasicCondition], now: datetime | None, variant: Variant
) -> Result:
    # core.go pvcConditions: no Failed state; an unbound PVC is InProgress forever
    phase = get_string_field(obj, ".status.phase", "unknown")
    if phase != "Bound":
        return in_progress("NotBound", f"PVC is not Bound. phase: {phase}")
    return current("PVC is Bound")


def _pod(
    obj: Mapping[str, Any], conds: list[BasicCondition], now: datetime | None, variant: Variant
) -> Result:
    # core.go podConditions
    phase = get_string_field(obj, ".status.phase", "")
    if phase == "Succeeded":
        return current("Pod has completed successfully")
    if phase == "Failed":
        return current("Pod has completed, but not successfully")
    if phase == "Running":
        if any(c.type == "Ready" and c.status == "True" for c in conds):
            return current("Pod is Ready")
        looping = _crash_looping_containers(obj)
        if looping:
            message = f"Containers in CrashLoop state: {','.join(looping)}"
            return failed("ContainerCrashLooping", message)
        return in_progress("PodRunningNotReady", "Pod is running but is not Ready")
    if phase == "Pending":
        sched = next((c for c in conds if c.type == "PodScheduled" and c.status == "False"), None)
        if sched is not None and sched.reason == "Unschedulable":
            if now is not None and now - SCHEDULE_WINDOW < creation_timestamp(obj):
                return in_progress("PodNotScheduled", "Pod has not been scheduled")
            return failed("PodUnschedulable", "Pod could not be scheduled")
        return in_progress("PodPending", "Pod is in the Pending phase")
    if phase == "":
        return in_progress("PodNotObserved", "Pod phase not available")
    raise StatusError(f"unknown phase {phase}")


def _crash_looping_containers(obj: Mapping[str, Any]) -> list[str]:
    # core.go getCrashLoopingContainers (Go panics on wrongly typed entries; we report an error)
    status = obj.get("status")
    if not isinstance(status, Mapping) or "containerStatuses" not in status:
        return []
    css = status["containerStatuses"]
    if not isinstance(css, list | tuple):
        # apimachinery NestedSlice: a present non-slice value (null included) is an error
        raise StatusError(
            f".status.containerStatuses accessor error: {go_value(css)} is of the type "
            f"{go_type(css)}, expected []interface{{}}"
        )
    names: list[str] = []
    for cs in css:
        if not isinstance(cs, Mapping):
            raise StatusError("containerStatuses entry is not an object")
        if "name" not in cs or "state" not in cs:
            continue
        name, state = cs["name"], cs["state"]
        if not isinstance(name, str) or not isinstance(state, Mapping):
            raise StatusError("containerStatuses entry has a wrongly typed name or state")
        if "waiting" not in state:
            continue
        waiting = state["waiting"]
        if not isinstance(waiting, Mapping):
            raise StatusError("containerStatuses state.waiting is not an object")
        if "reason" not in waiting:
            continue
        if not isinstance(waiting["reason"], str):
            raise StatusError("containerStatuses state.waiting.reason is not a string")
        if waiting["reason"] == "CrashLoopBackOff":
            names.append(name)
    return names


def creation_timestamp(obj: Mapping[str, Any]) -> datetime:
    """Unstructured.GetCreationTimestamp: RFC3339, or Go's zero time when absent or invalid."""
    meta = obj.get("metadata")
    raw = meta.get("creationTimestamp") if isinstance(meta, Mapping) else None
    if not isinstance(raw, str):
        return _GO_ZERO_TIME
    return parse_rfc3339(raw) or _GO_ZERO_TIME


def parse_rfc3339(text: str) -> datetime | None:
    """time.Parse(time.RFC3339, …); None when it does not parse. Naive results are UTC."""
    if len(text) < 20 or text[10] not in "Tt":
        return None
    try:
        value = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1] in "Zz" else text)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _pdb(
    obj: Mapping[str, Any], conds: list[BasicCondition], now: datetime | None, variant: Variant
) -> Result:
    # core.go pdbConditions
    return current("AllowedDisruptions has been computed.")


def _job(
    obj: Mapping[str, Any], conds: list[BasicCondition], now: datetime | None, variant: Variant
) -> Result:
    # core.go jobConditions (fork: no Suspended branch; upstream: Suspended=True and spec.suspend)
    parallelism = get_int_field(obj, ".spec.parallelism", 1)
    completions = get_int_field(obj, ".spec.completions", parallelism)
    succeeded = get_int_field(obj, ".status.succeeded", 0)
    active = get_int_field(obj, ".status.active", 0)
    failures = get_int_field(obj, ".status.failed", 0)
    start = get_string_field(obj, ".status.startTime", "")
    suspended = variant is Variant.UPSTREAM and get_bool_field(obj, ".spec.suspend", False)
    for c in conds:
        if c.type == "Complete" and c.status == "True":
            return current(f"Job Completed. succeeded: {succeeded}/{completions}")
        if c.type == "Failed" and c.status == "True":
            return failed("JobFailed", f"Job Failed. failed: {failures}/{completions}")
        if c.type == "Suspended" and c.status == "True" and suspended:
            return current("Job is suspended")
    if start == "":
        return in_progress("JobNotStarted", "Job not started")
    return current(f"Job in progress. success:{succeeded}, active: {active}, failed: {failures}")


def _service(
    obj: Mapping[str, Any], conds: list[BasicCondition], now: datetime | None, variant: Variant
) -> Result:
    # core.go serviceConditions: status.loadBalancer.ingress is never read
    if get_string_field(obj, ".spec.type", "ClusterIP") == "LoadBalancer" and (
        get_string_field(obj, ".spec.clusterIP", "") == ""
    ):
        return in_progress("NoIPAssigned", "ClusterIP not set. Service type: LoadBalancer")
    return current("Service is ready")


def _crd(
    obj: Mapping[str, Any], conds: list[BasicCondition], now: datetime | None, variant: Variant
) -> Result:
    # core.go crdConditions (upstream: CRDConditions)
    for c in conds:
        if c.type == "NamesAccepted" and c.status == "False":
            return failed(c.reason, c.message)
        if c.type == "Established":
            if c.status == "False" and c.reason != "Installing":
                return failed(c.reason, c.message)
            if c.status == "True":
                return current("CRD is established")
    return in_progress("Installing", "Install in progress")


# core.go legacyTypes
_KIND_RULES: dict[str, KindFn] = {
    "Service": _service,
    "Pod": _pod,
    "Secret": _always_ready,
    "PersistentVolumeClaim": _pvc,
    "apps/StatefulSet": _sts,
    "apps/DaemonSet": _daemonset,
    "extensions/DaemonSet": _daemonset,
    "apps/Deployment": _deployment,
    "extensions/Deployment": _deployment,
    "apps/ReplicaSet": _replicaset,
    "extensions/ReplicaSet": _replicaset,
    "policy/PodDisruptionBudget": _pdb,
    "batch/CronJob": _always_ready,
    "ConfigMap": _always_ready,
    "batch/Job": _job,
    "apiextensions.k8s.io/CustomResourceDefinition": _crd,
}
