"""``helmsim test``: the seeds' acceptance criteria pass, JUnit parses, failures explain themselves."""

from __future__ import annotations

from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml
from typer.testing import CliRunner

from helmsim.cli import app

runner = CliRunner()
ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples"
MINI = ROOT / "tests" / "scenario" / "charts" / "mini"

WRONG = f"""\
apiVersion: helmsim.dev/v1alpha1
kind: Scenario
metadata: {{name: wrong}}
releases:
  - chart: {MINI}
faults:
  - containerExit: {{match: {{kind: Job}}, exitCode: 1, message: "Error: boom"}}
expect:
  - release: mini
    outcome: Ready
  - event: BackoffLimitExceeded
"""


@pytest.fixture(scope="module")
def examples_junit(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, str]:
    out = tmp_path_factory.mktemp("junit") / "report.xml"
    result = runner.invoke(app, ["test", str(EXAMPLES), "--format", "junit", "--output", str(out)])
    return result.exit_code, out, result.output


def test_examples_pass_and_junit_parses(examples_junit: tuple[int, Path, str]) -> None:
    code, out, text = examples_junit
    assert code == 0, text
    xml = JUnitXml.fromfile(str(out))
    suites = list(xml)
    names = {s.name for s in suites}
    assert {"seed1-forced-failure-broken", "seed1-first-attempt-init-wait-slow-policy", "seed2-hook-fixed-eks-gp3", "seed2-broken-kind"} <= names
    cases = [c for s in suites for c in s]
    assert len(cases) >= 30 and all(c.is_passed for c in cases)
    assert "PASS: report written to" in text


def test_a_wrong_expectation_fails_with_expected_simulated_and_trace(tmp_path: Path) -> None:
    f = tmp_path / "wrong.helmsim.yaml"
    f.write_text(WRONG)
    result = runner.invoke(app, ["test", str(f)])
    assert result.exit_code == 1
    out = result.output
    assert "FAIL wrong" in out and "ok   event BackoffLimitExceeded seen" in out
    assert f"{f}:9: expectation failed" in out
    assert "expected: outcome Ready" in out and "simulated: outcome Stalled" in out
    assert "failed early due to stalled resources: [Job/default/mini-migrate status: 'Failed']" in out
    assert "kubelet container-log Pod/default/mini-migrate-" in out or "Job has reached the specified backoff limit" in out
    assert "1 scenario(s), 2 expectation(s): 1 passed, 1 failed" in out


def test_junit_failure_carries_the_evidence(tmp_path: Path) -> None:
    f = tmp_path / "wrong.helmsim.yaml"
    f.write_text(WRONG)
    out = tmp_path / "r.xml"
    result = runner.invoke(app, ["test", str(f), "--format", "junit", "-o", str(out)])
    assert result.exit_code == 1
    (suite,) = list(JUnitXml.fromfile(str(out)))
    failed = [c for c in suite if not c.is_passed]
    assert len(failed) == 1
    (failure,) = [r for r in failed[0].result if isinstance(r, Failure)]
    assert failure.message == "expected outcome Ready; simulated outcome Stalled"
    assert "trace:" in (failure.text or "")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (WRONG.replace("outcome: Ready", "outcome: Redy"), ":10: expect[0].outcome: Input should be"),
        ("apiVersion: v1\nkind: Pod\n", "not a scenario"),
    ],
)
def test_bad_scenarios_exit_2_with_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "bad.helmsim.yaml"
    f.write_text(content)
    result = runner.invoke(app, ["test", str(f)])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_an_empty_directory_is_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["test", str(tmp_path)])
    assert result.exit_code == 2 and "no scenario files" in result.output


def test_monte_carlo_test_is_reproducible_and_reports_a_failing_seed(tmp_path: Path) -> None:
    f = tmp_path / "mc.helmsim.yaml"
    # the web pod's image pull is lognormal on kind: sometimes the release is Ready after 8 s
    f.write_text(
        f"""\
apiVersion: helmsim.dev/v1alpha1
kind: Scenario
releases:
  - chart: {MINI}
    values: {{job: {{enabled: false}}}}
expect:
  - release: mini
    within: 8s
  - release: mini
    within: 8s
    minProbability: 0.05
"""
    )
    args = ["test", str(f), "--runs", "12", "--seed", "5"]
    first = runner.invoke(app, args)
    second = runner.invoke(app, args)
    assert first.output == second.output
    assert first.exit_code == 1  # the strict expectation fails in some runs
    assert "holds in" in first.output and "runs (" in first.output
    assert "fails e.g. with --runs 1 --seed " in first.output
    seed = first.output.split("--runs 1 --seed ")[1].split()[0]
    replay = runner.invoke(app, ["test", str(f), "--runs", "1", "--seed", seed])
    assert replay.exit_code == 1 and "simulated: Ready within" in replay.output


def test_simulate_runs_prints_probabilities_identically_for_the_same_seed() -> None:
    args = ["simulate", str(MINI), "--profile", "kind", "--set", "job.enabled=false", "--runs", "8", "--seed", "3"]
    first = runner.invoke(app, args)
    second = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    assert "8 runs, seed 3" in first.output
    assert "outcome Ready" in first.output and "8/8  100.00 %  [67.56 %, 100.00 %]" in first.output
    other = runner.invoke(app, [*args[:-1], "4"])
    assert other.exit_code == 0 and "8 runs, seed 4" in other.output


def test_simulate_runs_json_and_bad_backend() -> None:
    import json

    result = runner.invoke(app, ["simulate", str(MINI), "--set", "job.enabled=false", "--runs", "3", "--format", "json"])
    data = json.loads(result.output)
    assert data["runs"] == 3 and data["profile"] == "kind"
    assert {"group": "HelmRelease default/mini", "label": "outcome Ready", "count": 3}.items() <= data["stats"][0].items()
    bad = runner.invoke(app, ["simulate", str(MINI), "--runs", "3", "--backend", "mars"])
    assert bad.exit_code == 2 and "expected local or ray" in bad.output
