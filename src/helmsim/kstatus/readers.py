"""Status readers chosen by name, as helm-controller's waiter assembles them, and ``aggregate``.

* ``core``: fluxcd/cli-utils ``status.Compute`` alone.
* ``flux-wait``: HC ``waiter.Wait`` (``disableWaitForJobs``): the fork's default poller readers,
  i.e. apps/Deployment reader, apps/StatefulSet and apps/ReplicaSet pod-controller readers, then
  ``status.Compute`` (fluxcd/cli-utils pkg/kstatus/polling/polling.go createStatusReaders).
* ``flux-wait-jobs``: HC ``waiter.WaitWithJobs`` (the default): Flux's custom Job reader first
  (fluxcd/pkg runtime/statusreaders/job.go), then as ``flux-wait``.
* ``hook``: HC ``waiter.WatchUntilReady``: Flux Job reader, HC hook Pod reader
  (internal/action/pod_status_reader.go), then ``alwaysReady`` for every other kind
  (internal/action/wait.go).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from helmsim.kstatus.core import (
    check_object,
    compute,
    compute_or_raise,
    group_kind_key,
    parse_rfc3339,
)
from helmsim.kstatus.fields import (
    StatusError,
    conditions,
    get_int_field,
    get_string_field,
)
from helmsim.kstatus.selector import labels_of, selector_of
from helmsim.kstatus.types import (
    RECONCILING,
    STALLED,
    Condition,
    Result,
    Status,
    current,
    unknown,
)

READERS: tuple[str, ...] = ("core", "flux-wait", "flux-wait-jobs", "hook")

PodStatus = tuple[Status, Mapping[str, Any] | None]


def read(
    obj: Mapping[str, Any],
    *,
    reader: str,
    now: datetime | None = None,
    pods: Sequence[Mapping[str, Any]] = (),
) -> Result:
    """The status the named reader reports for ``obj``; never raises on bad object shapes.

    ``pods`` are the Pods the pod-controller readers may list (same namespace, matching
    ``spec.selector``); other readers ignore them. Unknown ``reader`` names raise ValueError.
    """
    if reader not in READERS:
        raise ValueError(f"unknown reader {reader!r}; expected one of {', '.join(READERS)}")
    try:
        check_object(obj)
        key = group_kind_key(obj)
        if reader in ("flux-wait-jobs", "hook") and key == "batch/Job":
            return flux_job_status(obj)
        if reader == "hook":
            if key == "Pod":
                return hook_pod_status(obj)
            # HC internal/action/wait.go alwaysReady: every other hook kind is ready at once
            return current("Resource is current")
        if reader == "core":
            return compute_or_raise(obj, now=now)
        return _flux_poller(obj, key, now, pods)
    except StatusError as err:
        # statusreaders/common.go errResourceToResourceStatus: status-func error → Unknown
        return unknown(str(err))


def _flux_poller(
    obj: Mapping[str, Any], key: str, now: datetime | None, pods: Sequence[Mapping[str, Any]]
) -> Result:
    # fluxcd/cli-utils polling.go createStatusReaders: Supports() is apps/<Kind> only
    if key == "apps/Deployment":
        # statusreaders/deployment.go: lists ReplicaSets by selector, returns Compute(deployment)
        selector_of(obj)
        return compute_or_raise(obj, now=now)
    if key in ("apps/StatefulSet", "apps/ReplicaSet"):
        return _pod_controller(obj, now, pods)
    return compute_or_raise(obj, now=now)


def _pod_controller(
    obj: Mapping[str, Any], now: datetime | None, pods: Sequence[Mapping[str, Any]]
) -> Result:
    # statusreaders/pod_controller.go readStatus: pods first (an error there is the owner's error)
    matches = selector_of(obj)
    namespace = _namespace(obj)
    pod_statuses: list[PodStatus] = []
    for pod in pods:
        if not isinstance(pod, Mapping) or group_kind_key(pod) != "Pod":
            continue
        if _namespace(pod) != namespace or not matches(labels_of(pod)):
            continue
        # the pod reader is the generic reader: a pod's own error makes only that pod Unknown
        pod_statuses.append((compute(pod, now=now).status, pod))
    owner = compute_or_raise(obj, now=now)
    return pod_controller_result(owner, pod_statuses)


def pod_controller_result(owner: Result, pods: Iterable[PodStatus]) -> Result:
    """fluxcd/cli-utils statusreaders/pod_controller.go: an InProgress owner with a selected Pod
    that is Failed becomes Failed "<n> pods have failed", except for transient pod failures
    (fork commit 28dac90: no resource, being deleted, or PodScheduled=False/Unschedulable)."""
    if owner.error is not None or owner.status is not Status.IN_PROGRESS:
        return owner
    failed = sum(1 for st, pod in pods if st is Status.FAILED and not _transient(pod))
    if failed:
        return Result(Status.FAILED, f"{failed} pods have failed", ())
    return owner


def _transient(pod: Mapping[str, Any] | None) -> bool:
    # pod_controller.go isTransientPodFailure
    if pod is None:
        return True
    meta = pod.get("metadata")
    deletion = meta.get("deletionTimestamp") if isinstance(meta, Mapping) else None
    if isinstance(deletion, str) and parse_rfc3339(deletion) is not None:
        return True  # Unstructured.GetDeletionTimestamp() != nil (a parsable time)
    if group_kind_key(pod) != "Pod":
        return False
    try:
        conds = conditions(pod)
    except StatusError:
        return False
    return any(
        c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
        for c in conds
    )


def _namespace(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    return ns if isinstance(ns, str) else ""


def flux_job_status(obj: Mapping[str, Any]) -> Result:
    """fluxcd/pkg runtime/statusreaders/job.go jobConditions: Current only once Complete.

    No generic checks (deletionTimestamp, generation) run first. Raises StatusError on malformed
    conditions, which ``read`` reports as Unknown.
    """
    spec = obj.get("spec")
    # job.go: NestedBool spec.suspend; a non-bool is ignored
    if isinstance(spec, Mapping) and spec.get("suspend") is True:
        return current("Job is suspended")
    parallelism = get_int_field(obj, ".spec.parallelism", 1)
    completions = get_int_field(obj, ".spec.completions", parallelism)
    active = get_int_field(obj, ".status.active", 0)
    succeeded = get_int_field(obj, ".status.succeeded", 0)
    failures = get_int_field(obj, ".status.failed", 0)
    start = get_string_field(obj, ".status.startTime", "")
    for c in conditions(obj):
        if c.type == "Complete" and c.status == "True":
            return current(f"Job Completed. succeeded: {succeeded}/{completions}")
        if c.type == "Failed" and c.status == "True":
            msg = f"Job Failed. failed: {failures}/{completions}"
            return Result(Status.FAILED, msg, (Condition(STALLED, "True", "JobFailed", msg),))
    if start == "":
        msg = f"Job not started. active: 0/{parallelism}"
        cond = Condition(RECONCILING, "True", "JobNotStarted", msg)
        return Result(Status.IN_PROGRESS, msg, (cond,))
    msg = f"Job in progress. success:{succeeded}, active: {active}, failed: {failures}"
    return Result(Status.IN_PROGRESS, msg, (Condition(RECONCILING, "True", "JobInProgress", msg),))


def compute_job_status(obj: Mapping[str, Any]) -> Result:
    """fluxcd/pkg runtime/statusreaders/job.go ComputeJobStatus: errors become Unknown
    "Failed to compute job status: <err>"."""
    try:
        return flux_job_status(obj)
    except StatusError as err:
        return Result(Status.UNKNOWN, f"Failed to compute job status: {err}", (), str(err))


def hook_pod_status(obj: Mapping[str, Any]) -> Result:
    """helm-controller internal/action/pod_status_reader.go podConditions (from Helm's
    internal/statusreaders): Succeeded → Current, Failed → Failed, anything else InProgress."""
    phase = get_string_field(obj, ".status.phase", "")
    name = _name(obj)
    if phase == "Succeeded":
        msg = f"pod {name} succeeded"
        return Result(Status.CURRENT, msg, (Condition(STALLED, "True", "", msg),))
    if phase == "Failed":
        msg = f"pod {name} failed"
        return Result(Status.FAILED, msg, (Condition(STALLED, "True", "PodFailed", msg),))
    msg = "Pod in progress"
    return Result(Status.IN_PROGRESS, msg, (Condition(RECONCILING, "True", "PodInProgress", msg),))


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""


def aggregate(statuses: Iterable[Status], desired: Status = Status.CURRENT) -> Status:
    """fluxcd/cli-utils polling/aggregator/aggregator.go AggregateStatus.

    Any Failed → Failed; else any Unknown → Unknown; else all desired (or none) → desired;
    else InProgress.
    """
    any_unknown = False
    all_desired = True
    for s in statuses:
        if s is Status.FAILED:
            return Status.FAILED
        if s is Status.UNKNOWN:
            any_unknown = True
        if s is not desired:
            all_desired = False
    if any_unknown:
        return Status.UNKNOWN
    return desired if all_desired else Status.IN_PROGRESS
