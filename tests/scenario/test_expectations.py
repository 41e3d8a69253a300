"""Expectations: each kind passes on what was simulated and fails with expected vs simulated and
the trace events that show why."""

from __future__ import annotations

from pathlib import Path

import pytest

from helmsim.expectations import Checked
from helmsim.pytest_plugin import ExpectationFailed, SimRun, simulate_chart

MINI = str(Path(__file__).parent / "charts" / "mini")


@pytest.fixture(scope="module")
def failing_job() -> SimRun:
    """The Job exits 1 on every attempt: the release fails early on it."""
    return simulate_chart(MINI, faults=[{"containerExit": {"match": {"kind": "Job"}, "exitCode": 1, "message": "Error: boom"}}])


@pytest.fixture(scope="module")
def healthy() -> SimRun:
    return simulate_chart(MINI)


def test_release_expectations_pass_on_the_simulated_outcome(healthy: SimRun) -> None:
    c = healthy.expect(release="default/mini", outcome="Ready", ready="True", reason="InstallSucceeded",
                       attempts=1, helmStatus="deployed", within="1m",
                       message="Helm install succeeded for release default/mini.v1 with chart mini@0.1.0")
    assert c.passed and "Ready=True" in "\n".join(e.message for e in c.evidence)


def test_a_wrong_release_expectation_shows_expected_simulated_and_the_causal_chain(failing_job: SimRun) -> None:
    with pytest.raises(ExpectationFailed) as err:
        failing_job.expect(release="mini", outcome="Ready")
    c = err.value.checked
    assert c.expected == "outcome Ready" and c.simulated == "outcome Stalled"
    text = c.explain()
    assert text.startswith("expected: outcome Ready\nsimulated: outcome Stalled\ntrace:\n")
    # the chain reaches back from the helm-controller condition to the Failed Job
    assert "failed early due to stalled resources: [Job/default/mini-migrate status: 'Failed']" in text
    assert any(e.what == "condition" and e.data.get("reason") == "InstallFailed" for e in c.evidence)


def test_within_fails_when_ready_too_late(healthy: SimRun) -> None:
    ready_at = healthy.release().ready_at
    assert ready_at is not None
    (c,) = healthy.check({"release": "mini", "within": ready_at / 2})
    assert not c.passed and c.simulated == f"Ready within {ready_at:g}s"


def test_unknown_release_lists_the_ones_simulated(healthy: SimRun) -> None:
    (c,) = healthy.check({"release": "nope", "outcome": "Ready"})
    assert not c.passed and c.simulated == "no such HelmRelease (have: default/mini)"


def test_object_status_and_attempts(failing_job: SimRun) -> None:
    failing_job.expect(object="Job/default/mini-migrate", status="Failed", attempts=3)
    (c,) = failing_job.check({"object": "Job/default/mini-*", "status": "Current", "maxAttempts": 1})
    assert not c.passed
    assert "kstatus Failed (Job Failed. failed: 3/1)" in c.simulated and "pods created at most 3" in c.simulated
    assert any(e.what == "container-log" and "Error: boom" in e.message for e in c.evidence)


def test_event_seen_and_not_seen(failing_job: SimRun) -> None:
    failing_job.expect(event="BackoffLimitExceeded", object="Job/default/mini-migrate", type="Warning")
    (c,) = failing_job.check({"event": "BackoffLimitExceeded", "seen": False})
    assert not c.passed and c.simulated.startswith("seen 1 time(s), first at t=")
    # the evidence is the event and what caused it
    assert c.evidence[-1].data.get("reason") == "BackoffLimitExceeded" or any(
        e.data.get("reason") == "BackoffLimitExceeded" for e in c.evidence
    )
    (missing,) = failing_job.check({"event": "NoSuchReason", "object": "Job/default/mini-migrate"})
    assert not missing.passed and missing.evidence  # similar events on that object are shown


def test_connection_results(healthy: SimRun, failing_job: SimRun) -> None:
    healthy.expect(connection="kube-apiserver", from_="Job/default/mini-migrate", result="connected-first-try")
    (c,) = healthy.check({"connection": "kube-apiserver", "from": "Job/default/mini-migrate", "pod": 2, "result": "connected"})
    assert not c.passed and c.simulated == "pod 2 only 1 pod(s) created for Job/default/mini-migrate"
    (d,) = healthy.check({"connection": "kube-apiserver", "from": "Job/default/mini-migrate", "result": "dropped"})
    assert not d.passed and d.simulated == "result connected-first-try"


def test_checked_explain_is_stable(healthy: SimRun) -> None:
    c = Checked("x", False, "a 1", "a 2")
    assert c.explain() == "expected: a 1\nsimulated: a 2"
