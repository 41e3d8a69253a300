"""Helm tests under helm-controller (tests/realcharts/README.md: helm-tests): ``spec.test``
runs the test hooks after a successful install or upgrade; a failure is TestFailed, with
remediation as Flux applies it (fluxcd/helm-controller internal/reconcile/test.go, state.go,
atomic_release.go, release.go summarize)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from helmsim.cluster.profile import load_profile
from helmsim.release_inputs import build_inputs
from helmsim.simulate import ReleaseOutcome, SimulationResult, simulate

HERE = Path(__file__).parent / "helm-tests"
CHART = str(HERE / "chart")


@cache
def _tree() -> SimulationResult:
    releases = build_inputs(
        str(HERE / "flux"), values=[], sets=[], helmrelease=[], charts=[f"api={CHART}"], release_name=None,
        namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    return simulate(load_profile("kind"), releases, horizon=1800.0)


def _release(name: str) -> ReleaseOutcome:
    return next(r for r in _tree().releases if r.name == name)


def test_passing_tests_make_ready_with_flux_message() -> None:
    rel = _release("passing")
    assert rel.outcome == "Ready"
    # test.go success(): fmtTestSuccess with the number of test hooks; summarize ranks TestSuccess
    # before Released, so Ready carries it
    message = "Helm test succeeded for release apps/passing.v1 with chart api@1.2.0: 2 test hooks completed successfully"
    assert rel.conditions["TestSuccess"] == {"status": "True", "reason": "TestSucceeded", "message": message}
    assert (rel.reason, rel.message) == ("TestSucceeded", message)
    assert rel.conditions["Released"]["reason"] == "InstallSucceeded"
    assert [h["action"] for h in rel.history] == ["install", "test"]


def test_failing_test_is_test_failed_then_stalled() -> None:
    rel = _release("failing")
    # the smoke Pod exits 1: the hook Pod reader reads it Failed and the wait stops early
    err = "failed early due to stalled resources: [Pod/apps/failing-smoke status: 'Failed']"
    message = f"Helm test failed for release apps/failing.v1 with chart api@1.2.0: {err}"
    assert rel.conditions["TestSuccess"] == {"status": "False", "reason": "TestFailed", "message": message}
    assert rel.ready == "False" and rel.message == message
    # the failure counts for the install remediation (retries 0, remediateLastFailure false):
    # state Failed, retries exhausted → Stalled, no uninstall; the release stays deployed
    assert rel.outcome == "Stalled"
    assert rel.conditions["Stalled"] == {
        "status": "True", "reason": "RetriesExceeded", "message": "Failed to install after 1 attempt(s)",
    }
    assert [h["status"] for h in rel.helm_status] == ["deployed"]
    assert "Remediated" not in rel.conditions


def test_ignored_failures_keep_ready_from_released() -> None:
    rel = _release("ignored")
    assert rel.outcome == "Ready"
    assert rel.conditions["TestSuccess"]["reason"] == "TestFailed"
    # summarize without TestSuccess: Ready is the Released condition
    assert rel.reason == "InstallSucceeded"
    assert rel.message == "Helm install succeeded for release apps/ignored.v1 with chart api@1.2.0"


def test_install_remediation_uninstalls_and_retries() -> None:
    rel = _release("retried")
    # attempt 1: test fails → uninstall remediation → requeue → attempt 2: test fails →
    # exhausted (2 > 1) and install's remediateLastFailure defaults to false → Stalled; the
    # uninstall purged the history (uninstall.keepHistory false), so the new install is v1 again
    assert [h["action"] for h in rel.history] == ["install", "test", "uninstall", "install", "test"]
    assert rel.outcome == "Stalled"
    assert rel.conditions["Stalled"]["message"] == "Failed to install after 2 attempt(s)"
    assert rel.conditions["TestSuccess"]["message"].startswith(
        "Helm test failed for release apps/retried.v1 with chart api@1.2.0: failed early due to stalled resources"
    )


def test_filters_skip_excluded_hooks() -> None:
    rel = _release("filtered")
    assert rel.outcome == "Ready"
    assert rel.message == (
        "Helm test succeeded for release apps/filtered.v1 with chart api@1.2.0: 1 test hook completed successfully"
    )
    sim = _tree().sim
    assert sim is not None
    assert sim.store.get("Pod", "apps", "filtered-smoke") is None
    # hook-succeeded: the config check Pod was deleted after the tests passed
    assert sim.store.get("Pod", "apps", "filtered-config-check") is None


def test_dependents_wait_for_the_tested_release() -> None:
    rel = _release("gated")
    assert rel.outcome == "Blocked"
    assert rel.message == "dependency 'apps/failing' is not ready"


def test_upgrade_test_failure_is_rolled_back() -> None:
    releases = build_inputs(
        CHART, values=[], sets=["smokeExitCode=1"], helmrelease=[str(HERE / "upgrade.yaml")], charts=[],
        release_name=None, namespace="default", upgrade_from=CHART, upgrade_from_values=[],
        upgrade_from_set=["smokeExitCode=0"],
    )
    (rel,) = simulate(load_profile("kind"), releases, horizon=1800.0).releases
    # upgrade → test fails → rollback (upgrade remediation, retries 1) → requeue → OutOfSync →
    # upgrade → test fails → exhausted; remediateLastFailure defaults to true with retries > 0,
    # so the last failure is rolled back too (to v3, the first rollback), then Stalled
    assert [h["action"] for h in rel.history] == ["upgrade", "test", "rollback", "upgrade", "test", "rollback"]
    assert rel.outcome == "Stalled"
    assert rel.conditions["Stalled"]["message"] == "Failed to upgrade after 2 attempt(s)"
    assert rel.conditions["Remediated"] == {
        "status": "True", "reason": "RollbackSucceeded",
        "message": "Helm rollback to previous release apps/api.v3 with chart api@1.2.0 succeeded",
    }
    assert [h["status"] for h in rel.helm_status][-1] == "deployed"


def test_check_says_nothing_of_a_test_failure_the_release_ignores() -> None:
    """spec.test.ignoreFailures: the failed test changes nothing, so HS104 does not report it;
    a test failure that is not ignored is helm-controller's remediation, not Helm's failed
    release."""
    from helmsim.diagnose.check import CheckOptions, run_check

    releases = build_inputs(
        str(HERE / "flux"), values=[], sets=[], helmrelease=[], charts=[f"api={CHART}"], release_name=None,
        namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    report = run_check(releases, [load_profile("kind")], options=CheckOptions(verify_fixes=False))
    hs104 = [f for f in report.findings if f.rule == "HS104"]
    assert not [f for f in hs104 if f.release == "apps/ignored"]
    failing = [f for f in hs104 if f.release == "apps/failing"]
    assert failing and "(test hook) fails and helm-controller marks TestSuccess=False and remediates the release" in failing[0].message
