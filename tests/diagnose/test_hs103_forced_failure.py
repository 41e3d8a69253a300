"""HS103's what-if: a Job that succeeds, in a release whose HelmRelease sets disableWaitForJobs,
is re-simulated forced to fail; the finding says what its failure would do to the release."""

from __future__ import annotations

from pathlib import Path

from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check

ROOT = Path(__file__).resolve().parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"


def _check(tmp_path: Path, extra_values: str | None) -> list:  # type: ignore[type-arg]
    values = []
    if extra_values is not None:
        f = tmp_path / "v.yaml"
        f.write_text(extra_values)
        values.append(str(f))
    inputs = build_inputs(
        str(SEED1), values=values, sets=[], helmrelease=[str(SEED1 / "flux")], charts=[],
        release_name=None, namespace="default", upgrade_from=None, upgrade_from_values=[],
        upgrade_from_set=[],
    )
    report = run_check(inputs, [load_profile("kind")], options=CheckOptions(verify_fixes=False))
    return [f for f in report.findings if f.rule == "HS103"]


def test_a_job_failing_after_the_wait_is_a_warning_about_the_next_upgrade(tmp_path: Path) -> None:
    (finding,) = _check(tmp_path, None)
    occ = finding.occurrences[0]
    assert occ.variant == "forced failure" and finding.severity.name == "warning"
    assert "disableWaitForJobs: true does not keep a failing Job from failing the release" in occ.message
    assert "after Helm's wait" in occ.message and "next upgrade" in occ.message
    assert "BackoffLimitExceeded" in occ.chain[0].text


def test_a_job_failing_while_helm_waits_is_an_error(tmp_path: Path) -> None:
    # the agent-manager takes 90 s to get ready: the forced failure lands inside the wait
    slow = "agentManager:\n  readinessProbe: {initialDelaySeconds: 90, periodSeconds: 5}\n"
    (finding,) = _check(tmp_path, slow)
    occ = finding.occurrences[0]
    assert finding.severity.name == "error" and occ.variant == "forced failure"
    assert "failed early due to stalled resources: [Job/kagent/" in occ.message
