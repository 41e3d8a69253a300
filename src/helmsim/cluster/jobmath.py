"""Pure Job-controller arithmetic: pod re-creation backoff, failure counting, deadlines, podFailurePolicy.

Everything here is a function of its arguments (no clock, no store) so it can be tested against the
upstream tables. Times are ``datetime`` (aware, UTC) or simulated seconds, as each function says.

Sources: kubernetes/kubernetes pkg/controller/job/backoff_utils.go (21da0b6d),
pkg/controller/job/job_controller.go (syncJob, manageJob, pastBackoffLimitOnFailure, pastActiveDeadline),
pkg/controller/job/pod_failure_policy.go.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from msgspec import Struct

# kubernetes pkg/controller/job/job_controller.go: DefaultJobPodFailureBackOff = 10 * time.Second
DEFAULT_POD_FAILURE_BACKOFF = 10.0
# job_controller.go: MaxJobPodFailureBackOff = 10 * time.Minute (current code)
MAX_POD_FAILURE_BACKOFF = 600.0
# Older controllers: MaxJobBackOff = 360 * time.Second (and the Job docs still say six minutes).
OLD_MAX_POD_FAILURE_BACKOFF = 360.0
# job_controller.go: syncJobBatchPeriod = time.Second; pod events and status updates are batched by
# it, and every delayed resync waits at least this long (enqueueSyncJobWithDelay).
SYNC_JOB_BATCH_PERIOD = 1.0
# job_controller.go: MaxPodCreateDeletePerSync = 500
MAX_POD_CREATE_DELETE_PER_SYNC = 500
# k8s.io/api batch/v1 types.go: backoffLimit defaults to 6
DEFAULT_BACKOFF_LIMIT = 6

_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


# --- backoff ------------------------------------------------------------------------------------


def backoff_delay(
    failures: int,
    *,
    initial: float = DEFAULT_POD_FAILURE_BACKOFF,
    cap: float = MAX_POD_FAILURE_BACKOFF,
) -> float:
    """Delay before the next pod after ``failures`` failures since the last success.

    backoff_utils.go getRemainingTimeForFailuresCount: 0 for no failures, else ``initial`` doubled
    ``failures - 1`` times, stopping at ``cap`` as soon as a doubling reaches it.
    """
    if failures <= 0:
        return 0.0
    delay = initial
    for _ in range(1, failures):
        delay *= 2
        if delay >= cap:
            return cap
    return delay


def remaining_backoff(
    failures: int,
    last_failure: float | None,
    now: float,
    *,
    initial: float = DEFAULT_POD_FAILURE_BACKOFF,
    cap: float = MAX_POD_FAILURE_BACKOFF,
) -> float:
    """Seconds until a replacement pod may be created (simulated seconds in, seconds out).

    backoff_utils.go getRemainingTimeForFailuresCount: ``delay - (now - lastFailure)``, 0 once
    the delay has elapsed.
    """
    if failures <= 0 or last_failure is None:
        return 0.0
    delay = backoff_delay(failures, initial=initial, cap=cap)
    elapsed = now - last_failure
    if delay < elapsed:
        return 0.0
    return delay - elapsed


class BackoffRecord(Struct, frozen=True):
    """backoff_utils.go backoffRecord: failures since the last success and when the last one ended."""

    failures_after_last_success: int = 0
    last_failure_time: float | None = None


def new_backoff_record(
    previous: BackoffRecord,
    succeeded_finish_times: Iterable[float],
    failed_finish_times: Iterable[float],
) -> BackoffRecord:
    """backoff_utils.go newBackoffRecord: fold newly finished pods into the record.

    A success resets the count; failures that finished strictly after the last new success count
    again, and the latest of them becomes the last failure time.
    """
    succeeded = sorted(succeeded_finish_times)
    failed = sorted(failed_finish_times)
    if not succeeded:
        if not failed:
            return previous
        return BackoffRecord(previous.failures_after_last_success + len(failed), failed[-1])
    last_success = succeeded[-1]
    count = 0
    last_failure: float | None = None
    for t in reversed(failed):
        if not t > last_success:
            break
        if last_failure is None:
            last_failure = t
        count += 1
    return BackoffRecord(count, last_failure)


def pod_finished_time(pod: Mapping[str, Any]) -> datetime:
    """backoff_utils.go getFinishedTime: when a finished pod finished.

    1. the latest ``terminated.finishedAt`` when every container has terminated (plus sidecar
       init containers, restartPolicy Always); 2. a ``Ready=False`` condition's
       lastTransitionTime; 3. ``deletionTimestamp - deletionGracePeriodSeconds``;
    4. ``creationTimestamp``.
    """
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    finish = _latest_finish(None, status.get("containerStatuses") or [], None)
    if finish is not None:
        sidecars = {
            c.get("name")
            for c in spec.get("initContainers") or []
            if c.get("restartPolicy") == "Always"
        }
        if sidecars:
            finish = _latest_finish(
                finish,
                status.get("initContainerStatuses") or [],
                lambda cs: cs.get("name") in sidecars,
            )
        if finish is not None:
            return finish
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            t = parse_time(cond.get("lastTransitionTime"))
            if cond.get("status") == "False" and t is not None and t != _ZERO_TIME:
                return t
            break
    deletion = parse_time(meta.get("deletionTimestamp"))
    if deletion is not None:
        grace = meta.get("deletionGracePeriodSeconds") or 0
        return deletion - timedelta(seconds=float(grace))
    return parse_time(meta.get("creationTimestamp")) or _ZERO_TIME


def _latest_finish(
    prev: datetime | None, statuses: Sequence[Mapping[str, Any]], check: Any
) -> datetime | None:
    finish = prev
    for cs in statuses:
        if check is not None and not check(cs):
            continue
        term = (cs.get("state") or {}).get("terminated")
        t = parse_time((term or {}).get("finishedAt")) if term else None
        if t is None or t == _ZERO_TIME:
            return None
        if finish is None or finish < t:
            finish = t
    return finish


def parse_time(value: Any) -> datetime | None:
    """An RFC3339 timestamp (``2026-01-01T00:00:42Z``, fractions allowed) as an aware datetime."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


# --- failure counting and deadlines ---------------------------------------------------------------


def exceeds_backoff_limit(failed: int, backoff_limit: int) -> bool:
    """job_controller.go syncJob: ``exceedsBackoffLimit := failed > backoffLimit`` (strictly greater)."""
    return failed > backoff_limit


def restart_count_sum(pods: Iterable[Mapping[str, Any]]) -> int:
    """Σ restartCount over init and app containers of Pending/Running pods."""
    total = 0
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") not in ("Pending", "Running"):
            continue
        for key in ("initContainerStatuses", "containerStatuses"):
            for cs in status.get(key) or []:
                total += int(cs.get("restartCount") or 0)
    return total


def past_backoff_limit_on_failure(
    restart_policy: str | None, backoff_limit: int, pods: Iterable[Mapping[str, Any]]
) -> bool:
    """job_controller.go pastBackoffLimitOnFailure (restartPolicy OnFailure only).

    Σ restartCount of Pending/Running pods ``>= backoffLimit``, or ``> 0`` when backoffLimit is 0.
    """
    if restart_policy != "OnFailure":
        return False
    total = restart_count_sum(pods)
    if backoff_limit == 0:
        return total > 0
    return total >= backoff_limit


def past_active_deadline(
    active_deadline_seconds: int | None,
    start_time: float | None,
    now: float,
    *,
    suspended: bool = False,
) -> bool:
    """job_controller.go pastActiveDeadline: ``now - startTime >= activeDeadlineSeconds``; never
    while suspended or before the Job started."""
    if active_deadline_seconds is None or start_time is None or suspended:
        return False
    return now - start_time >= active_deadline_seconds


def active_deadline_remaining(active_deadline_seconds: int, start_time: float, now: float) -> float:
    """syncJob requeues ``activeDeadlineSeconds - (now - startTime)`` after each sync."""
    return active_deadline_seconds - (now - start_time)


def want_active(parallelism: int, completions: int | None, succeeded: int, active: int) -> int:
    """job_controller.go manageJob: how many pods should be active.

    Without completions: parallelism until a pod succeeded, then leave what runs; with completions:
    ``min(completions - succeeded, parallelism)``, never below 0.
    """
    if completions is None:
        return active if succeeded > 0 else parallelism
    return max(0, min(completions - succeeded, parallelism))


def is_complete(completions: int | None, succeeded: int, active: int) -> bool:
    """syncJob: complete when ``succeeded >= completions`` (or any success without completions) and
    nothing is active."""
    if completions is None:
        return succeeded > 0 and active == 0
    return succeeded >= completions and active == 0


# --- podFailurePolicy -----------------------------------------------------------------------------


class PolicyMatch(Struct, frozen=True):
    """matchPodFailurePolicy's result: a FailJob message, whether to count it, the action."""

    fail_job_message: str | None
    count_failed: bool
    action: str | None


def match_pod_failure_policy(
    policy: Mapping[str, Any] | None, pod: Mapping[str, Any]
) -> PolicyMatch:
    """pod_failure_policy.go matchPodFailurePolicy: first matching rule wins.

    ``onExitCodes`` looks at terminated containers with a non-zero exit code (app containers, then
    init containers), optionally restricted to ``containerName``, with operator In or NotIn;
    ``onPodConditions`` matches a pod condition's type and status. Ignore → not counted;
    Count → counted; FailJob → counted and the Job fails with the returned message.
    FailIndex (Indexed Jobs with backoffLimitPerIndex) is not modelled and treated as Count.
    """
    if not policy:
        return PolicyMatch(None, True, None)
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    for index, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        on_codes = rule.get("onExitCodes")
        matched_container: Mapping[str, Any] | None = None
        matched_condition: Mapping[str, Any] | None = None
        if on_codes is not None:
            matched_container = _match_exit_codes(status, on_codes)
            if matched_container is None:
                continue
        elif rule.get("onPodConditions") is not None:
            matched_condition = _match_conditions(status, rule.get("onPodConditions") or [])
            if matched_condition is None:
                continue
        else:
            continue
        if action == "Ignore":
            return PolicyMatch(None, False, "Ignore")
        if action == "FailJob":
            ref = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
            if matched_container is not None:
                code = matched_container["state"]["terminated"].get("exitCode")
                msg = (
                    f"Container {matched_container.get('name')} for pod {ref} failed with exit code "
                    f"{code} matching FailJob rule at index {index}"
                )
            else:
                assert matched_condition is not None
                msg = f"Pod {ref} has condition {matched_condition.get('type')} matching FailJob rule at index {index}"
            return PolicyMatch(msg, True, "FailJob")
        return PolicyMatch(None, True, str(action) if action else "Count")
    return PolicyMatch(None, True, None)


def _match_exit_codes(
    status: Mapping[str, Any], req: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or []:
            term = (cs.get("state") or {}).get("terminated")
            if not term:
                continue
            name = req.get("containerName")
            if name is not None and name != cs.get("name"):
                continue
            code = int(term.get("exitCode") or 0)
            if code == 0:
                continue
            values = [int(v) for v in req.get("values") or []]
            op = req.get("operator")
            if (op == "In" and code in values) or (op == "NotIn" and code not in values):
                return cs  # type: ignore[no-any-return]
    return None


def _match_conditions(
    status: Mapping[str, Any], patterns: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    for cond in status.get("conditions") or []:
        for pat in patterns:
            if cond.get("type") == pat.get("type") and cond.get("status") == pat.get(
                "status", "True"
            ):
                return cond  # type: ignore[no-any-return]
    return None
