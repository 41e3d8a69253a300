"""Pure Job-controller arithmetic: backoff, failure counting, deadlines, podFailurePolicy.

The parametrized tables are ported as data from kubernetes/kubernetes
pkg/controller/job/backoff_utils_test.go @ 0bee0bcaa7ddf245d967776b158f2affb7b9c5f3
(TestGetRemainingBackoffTime, TestNewBackoffRecord, TestGetFinishedTime).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest

from helmsim.cluster import jobmath
from helmsim.cluster.jobmath import BackoffRecord

# --- TestGetRemainingBackoffTime: (name, failures, seconds since last failure, default, max, want)
REMAINING_BACKOFF_TABLE = [
    ("no failures", 0, None, 5, 700, 0),
    ("one failure; current time and failure time are same", 1, 0, 5, 700, 5),
    ("one failure; current time == 1 second + failure time", 1, 1, 5, 700, 4),
    ("one failure; current time == expected backoff time", 1, 5, 5, 700, 0),
    ("one failure; current time == expected backoff time + 1 Second", 1, 6, 5, 700, 0),
    ("three failures; current time and failure time are same", 3, 0, 5, 700, 20),
    ("eight failures; backoff not exceeding maxBackoff", 8, 0, 5, 700, 640),
    ("nine failures; backoff exceeding maxBackoff", 9, 0, 5, 700, 700),
]


@pytest.mark.parametrize(
    ("name", "failures", "since", "initial", "cap", "want"),
    REMAINING_BACKOFF_TABLE,
    ids=[row[0] for row in REMAINING_BACKOFF_TABLE],
)
def test_remaining_backoff_upstream_table(
    name: str, failures: int, since: float | None, initial: float, cap: float, want: float
) -> None:
    last = None if since is None else 100.0
    now = 100.0 + (since or 0)
    assert jobmath.remaining_backoff(failures, last, now, initial=initial, cap=cap) == want


# --- TestNewBackoffRecord: times in ms relative to a fixed instant
NEW_RECORD_TABLE: list[
    tuple[str, tuple[int, float | None], list[int], list[int], tuple[int, int | None]]
] = [
    ("Empty backoff store and one new failure", (0, None), [], [0], (1, 0)),
    ("Empty backoff store and two new failures", (0, None), [], [0, -1], (2, 0)),
    ("Empty backoff store, two failures followed by success", (0, None), [0], [-2, -1], (0, None)),
    (
        "Empty backoff store, two failures, one success and two more failures",
        (0, None),
        [-2],
        [0, -4, -3, -1],
        (2, 0),
    ),
    ("Backoff store having failure count 2 and one new failure", (2, None), [], [0], (3, 0)),
    (
        "Empty backoff store with success and failure at same timestamp",
        (0, None),
        [0],
        [0],
        (0, None),
    ),
    ("Empty backoff store with no success/failure", (0, None), [], [], (0, None)),
    ("Empty backoff store with one success", (0, None), [0], [], (0, None)),
]


@pytest.mark.parametrize(
    ("name", "prev", "succeeded", "failed", "want"),
    NEW_RECORD_TABLE,
    ids=[row[0] for row in NEW_RECORD_TABLE],
)
def test_new_backoff_record_upstream_table(
    name: str,
    prev: tuple[int, float | None],
    succeeded: list[int],
    failed: list[int],
    want: tuple[int, int | None],
) -> None:
    got = jobmath.new_backoff_record(
        BackoffRecord(*prev), [ms / 1000 for ms in succeeded], [ms / 1000 for ms in failed]
    )
    assert got == BackoffRecord(want[0], None if want[1] is None else want[1] / 1000)


# --- TestGetFinishedTime
T0 = datetime(2009, 11, 10, 23, 0, 0, tzinfo=UTC)


def _ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _term(dt: datetime | None) -> dict[str, Any]:
    return {"state": {"terminated": {"finishedAt": _ts(dt)} if dt else {}}}


FINISHED_TIME_TABLE: list[tuple[str, dict[str, Any], datetime]] = [
    (
        "all containers terminated: the latest",
        {
            "status": {
                "containerStatuses": [
                    _term(T0 - timedelta(seconds=1)),
                    _term(T0),
                    _term(T0 - timedelta(seconds=2)),
                ]
            }
        },
        T0,
    ),
    (
        "one container running: fallback to deletionTimestamp",
        {
            "metadata": {"deletionTimestamp": _ts(T0)},
            "status": {
                "containerStatuses": [_term(T0 - timedelta(seconds=1)), {"state": {"running": {}}}]
            },
        },
        T0,
    ),
    (
        "fallback to deletionTimestamp, decremented by grace period",
        {
            "metadata": {"deletionTimestamp": _ts(T0), "deletionGracePeriodSeconds": 30},
            "status": {"containerStatuses": [{"state": {"running": {}}}]},
        },
        T0 - timedelta(seconds=30),
    ),
    (
        "fallback to PodReady.LastTransitionTime when the condition is False",
        {
            "status": {
                "containerStatuses": [{"state": {"terminated": {}}}],
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "PodFailed",
                        "lastTransitionTime": _ts(T0),
                    }
                ],
            }
        },
        T0,
    ),
    (
        "skip PodReady.LastTransitionTime when the condition is True",
        {
            "metadata": {"deletionTimestamp": _ts(T0)},
            "status": {
                "containerStatuses": [{"state": {"terminated": {}}}],
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "lastTransitionTime": _ts(T0 - timedelta(seconds=30)),
                    }
                ],
            },
        },
        T0,
    ),
    (
        "fallback to creationTimestamp",
        {
            "metadata": {"creationTimestamp": _ts(T0)},
            "status": {"containerStatuses": [{"state": {"terminated": {}}}]},
        },
        T0,
    ),
    (
        "sidecar init container terminated after the regular containers",
        {
            "spec": {"initContainers": [{"name": "sidecar", "restartPolicy": "Always"}]},
            "status": {
                "containerStatuses": [_term(T0 - timedelta(seconds=1))],
                "initContainerStatuses": [{"name": "sidecar", **_term(T0)}],
            },
        },
        T0,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "want"), FINISHED_TIME_TABLE, ids=[row[0] for row in FINISHED_TIME_TABLE]
)
def test_pod_finished_time_upstream_table(name: str, pod: dict[str, Any], want: datetime) -> None:
    assert jobmath.pod_finished_time(pod) == want


# --- the reference's rules ----------------------------------------------------------------------


def test_backoff_delay_doubles_from_10s_and_caps() -> None:
    assert [jobmath.backoff_delay(n) for n in range(9)] == [0, 10, 20, 40, 80, 160, 320, 600, 600]
    # older controllers (MaxJobBackOff = 360 s): the 7th delay is capped at six minutes
    assert jobmath.backoff_delay(7, cap=jobmath.OLD_MAX_POD_FAILURE_BACKOFF) == 360


def test_worked_example_never_backoff_limit_6() -> None:
    """Reference §1.3: a pod failing after r seconds is recreated at r+10, then +20, +40 … after
    each failure; the 7th failure fails the Job, ≈ 7r + 630 s after the start; the cap is never hit."""
    r = 30.0
    created, failed, t = [0.0], 0, 0.0
    record = BackoffRecord()
    while True:
        t = created[-1] + r  # the pod fails
        failed += 1
        record = jobmath.new_backoff_record(record, [], [t])
        if jobmath.exceeds_backoff_limit(failed, 6):
            break
        created.append(
            t
            + jobmath.remaining_backoff(
                record.failures_after_last_success, record.last_failure_time, t
            )
        )
    gaps = [b - (a + r) for a, b in pairwise(created)]
    assert gaps == [10, 20, 40, 80, 160, 320]
    assert failed == 7 and t == 7 * r + 630


@pytest.mark.parametrize(
    ("limit", "restarts", "phase", "want"),
    [
        (6, [3, 3], "Running", True),  # ≥ backoffLimit, not >
        (6, [5], "Running", False),
        (0, [1], "Pending", True),  # backoffLimit 0: any restart
        (0, [0], "Running", False),
        (2, [5], "Succeeded", False),  # only Pending/Running pods count
    ],
)
def test_past_backoff_limit_on_failure(
    limit: int, restarts: list[int], phase: str, want: bool
) -> None:
    pods = [
        {"status": {"phase": phase, "containerStatuses": [{"restartCount": n} for n in restarts]}}
    ]
    assert jobmath.past_backoff_limit_on_failure("OnFailure", limit, pods) is want
    assert jobmath.past_backoff_limit_on_failure("Never", limit, pods) is False


def test_init_container_restarts_count_on_failure() -> None:
    pods = [{"status": {"phase": "Pending", "initContainerStatuses": [{"restartCount": 2}]}}]
    assert jobmath.past_backoff_limit_on_failure("OnFailure", 2, pods)


def test_exceeds_backoff_limit_is_strict() -> None:
    assert not jobmath.exceeds_backoff_limit(6, 6)
    assert jobmath.exceeds_backoff_limit(7, 6)


def test_active_deadline() -> None:
    assert jobmath.past_active_deadline(30, 10.0, 40.0)
    assert not jobmath.past_active_deadline(30, 10.0, 39.9)
    assert not jobmath.past_active_deadline(30, 10.0, 99.0, suspended=True)
    assert not jobmath.past_active_deadline(None, 10.0, 99.0)
    assert jobmath.active_deadline_remaining(30, 10.0, 25.0) == 15


@pytest.mark.parametrize(
    ("parallelism", "completions", "succeeded", "active", "want", "complete"),
    [
        (1, 1, 0, 0, 1, False),
        (3, 5, 4, 0, 1, False),  # never more than the remaining completions
        (2, 2, 2, 0, 0, True),
        (3, None, 0, 0, 3, False),  # work queue: parallelism until a success
        (3, None, 1, 2, 2, False),  # … then leave what runs
        (3, None, 1, 0, 0, True),
    ],
)
def test_want_active_and_complete(
    parallelism: int,
    completions: int | None,
    succeeded: int,
    active: int,
    want: int,
    complete: bool,
) -> None:
    assert jobmath.want_active(parallelism, completions, succeeded, active) == want
    assert jobmath.is_complete(completions, succeeded, active) is complete


def _failed_pod(code: int, conditions: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": "job-abcde"},
        "status": {
            "phase": "Failed",
            "conditions": conditions or [],
            "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": code}}}],
        },
    }


POLICY = {
    "rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {
            "action": "FailJob",
            "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]},
        },
        {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
    ]
}


def test_pod_failure_policy_fail_job_message() -> None:
    m = jobmath.match_pod_failure_policy(POLICY, _failed_pod(42))
    assert m.action == "FailJob" and m.count_failed
    assert (
        m.fail_job_message
        == "Container main for pod ns/job-abcde failed with exit code 42 matching FailJob rule at index 1"
    )


def test_pod_failure_policy_ignore_count_and_no_match() -> None:
    ignored = jobmath.match_pod_failure_policy(
        POLICY, _failed_pod(1, [{"type": "DisruptionTarget", "status": "True"}])
    )
    assert ignored.action == "Ignore" and not ignored.count_failed
    assert jobmath.match_pod_failure_policy(POLICY, _failed_pod(7)).action == "Count"
    unmatched = jobmath.match_pod_failure_policy(POLICY, _failed_pod(1))
    assert unmatched.action is None and unmatched.count_failed
    # exit code 0 never matches onExitCodes (pod_failure_policy.go getMatchingContainerFromList)
    notin_zero = {
        "rules": [{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1]}}]
    }
    assert jobmath.match_pod_failure_policy(notin_zero, _failed_pod(0)).fail_job_message is None


def test_pod_failure_policy_condition_fail_job_message() -> None:
    policy = {
        "rules": [
            {
                "action": "FailJob",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            }
        ]
    }
    m = jobmath.match_pod_failure_policy(
        policy, _failed_pod(1, [{"type": "DisruptionTarget", "status": "True"}])
    )
    assert (
        m.fail_job_message
        == "Pod ns/job-abcde has condition DisruptionTarget matching FailJob rule at index 0"
    )
