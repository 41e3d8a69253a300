"""HS104 tells a hook Job that failed from one still running when Helm's wait on it times out
(bitnami influxdb's create-admin-token Job, backoffLimit 10, whose kubectl never reaches the API
server under cilium-always): it said "fails" for both."""

from __future__ import annotations

from pathlib import Path

from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.release_inputs import build_inputs

JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: setup
  annotations:
    helm.sh/hook: pre-install
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        helmsim.dev/run-seconds: "{run}"
        helmsim.dev/exit-code: "{code}"
    spec:
      restartPolicy: Never
      containers:
        - name: setup
          image: ghcr.io/example/setup:1.0.0
"""


def _hs104(tmp_path: Path, run: str, code: int) -> str:
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: hooks\nversion: 0.1.0\n")
    (chart / "templates" / "job.yaml").write_text(JOB.format(run=run, code=code))
    inputs = build_inputs(
        str(chart), values=[], sets=[], helmrelease=[], charts=[], release_name="r", namespace="default",
        upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    report = run_check(inputs, [load_profile("kind")], options=CheckOptions(verify_fixes=False))
    (finding,) = [f for f in report.findings if f.rule == "HS104"]
    return finding.occurrences[0].message


def test_a_hook_still_running_at_the_timeout_does_not_complete(tmp_path: Path) -> None:
    msg = _hs104(tmp_path, "forever", 0)
    assert msg.startswith("Job/default/setup (pre-install hook) does not complete within the release timeout")


def test_a_hook_that_exits_non_zero_fails(tmp_path: Path) -> None:
    msg = _hs104(tmp_path, "5", 1)
    assert msg.startswith("Job/default/setup (pre-install hook) fails and Helm marks the release failed")
