"""The pytest plugin as a chart repository uses it: scenario files collected as tests, fixtures.

pytest runs in a subprocess that loads the plugin through the ``pytest11`` entry point, as in a
chart repository that installed helmsim, in a temporary project.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

MINI = Path(__file__).parent / "charts" / "mini"

SCENARIO = f"""\
apiVersion: helmsim.dev/v1alpha1
kind: Scenario
metadata:
  name: mini-job-fails
releases:
  - chart: {MINI}
faults:
  - containerExit:
      match: {{kind: Job, name: "*-migrate"}}
      exitCode: 1
expect:
  - name: the Job fails
    event: BackoffLimitExceeded
  - name: the release is Ready
    release: mini
    outcome: Ready
"""

FIXTURE_TEST = f"""\
from helmsim.pytest_plugin import ExpectationFailed
import pytest

def test_simulate(helmsim_simulate):
    run = helmsim_simulate({str(MINI)!r}, profile="kind", values={{"deploy": {{"replicas": 2}}}},
                           faults=[{{"imagePull": {{"image": "example.com/web:*", "delay": "30s"}}}}])
    assert run.release().outcome == "Ready"
    run.expect(release="mini", within="1m")
    with pytest.raises(ExpectationFailed, match="expected: Ready within 10s"):
        run.expect(release="mini", within="10s")

def test_render(helmsim_render):
    docs = helmsim_render({str(MINI)!r}, values={{"pvc": {{"enabled": True}}}}, release_name="r")
    assert sorted(d["kind"] + "/" + d["metadata"]["name"] for d in docs) == [
        "Deployment/r-web", "Job/r-migrate", "PersistentVolumeClaim/r-data"]
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chartrepo")
    (root / "mini.helmsim.yaml").write_text(SCENARIO)
    (root / "test_fixtures.py").write_text(FIXTURE_TEST)
    (root / "values.yaml").write_text("not: a scenario\n")
    return root


def run_pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args, str(root)],
        check=False,
        capture_output=True,
        text=True,
        cwd=root,
        timeout=120,
    )


def test_scenario_files_become_one_test_per_expectation(project: Path) -> None:
    out = run_pytest(project, "--collect-only", "-k", "mini")
    assert "mini-job-fails: the Job fails" in out.stdout
    assert "mini-job-fails: the release is Ready" in out.stdout


def test_failures_show_expected_simulated_and_the_trace(project: Path) -> None:
    out = run_pytest(project, "-rfE")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "1 failed, 3 passed" in out.stdout
    text = out.stdout
    assert "mini.helmsim.yaml:14: expectation failed: the release is Ready" in text
    assert "expected: outcome Ready" in text and "simulated: outcome Stalled" in text
    assert "failed early due to stalled resources: [Job/default/mini-migrate status: 'Failed']" in text
    assert "helm-controller condition HelmRelease/default/mini" in text
    assert "job-controller event Job/default/mini-migrate: Job has reached the specified backoff limit" in text


def test_a_bad_scenario_file_is_a_collection_error_naming_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.helmsim.yaml").write_text(SCENARIO.replace("outcome: Ready", "outcome: Redy"))
    out = run_pytest(tmp_path)
    assert out.returncode == 2
    assert "bad.helmsim.yaml:16: expect[1].outcome: Input should be" in out.stdout
