"""A release whose record is too big for its Secret (tests/realcharts/README.md: "Releases too big
to store"): Helm stores the revision before it creates anything (helm/helm
pkg/action/install.go RunWithContext: Releases.Create), so the API server's refusal of the
Secret fails the install with nothing created."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from realcharts_helpers import HERE, simulate_chart

from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.release_inputs import build_inputs
from helmsim.simulate import simulate

DIGESTS = ("ci/digests-values.yaml",)
TOO_LONG = 'Secret "sh.helm.release.v1.release-record.v{}" is invalid: data: Too long: must have at most 1048576 bytes'


def test_a_record_over_one_mebibyte_fails_the_install_before_anything_is_created() -> None:
    result = simulate_chart("release-record", "kind", values=DIGESTS)
    (release,) = result.releases
    assert release.outcome == "Failed", release.message
    assert release.message == (
        "Helm install failed for release default/release-record with chart release-record@0.1.0: "
        f"create: failed to create: {TOO_LONG.format(1)}"
    )
    assert result.sim is not None
    assert result.sim.store.get("ConfigMap", "default", "release-record-digests") is None
    refused = [e for e in result.trace if e.what == "record-refused"]
    low, high = refused[0].data["stored"]
    assert 1024 * 1024 < low <= high  # every size Go's gzip may give is over the limit
    assert not [e for e in result.trace if e.what == "action-start"]  # no release stored


def test_the_default_values_fit_and_the_release_is_ready() -> None:
    (release,) = simulate_chart("release-record", "kind").releases
    assert release.outcome == "Ready", release.message


def test_an_upgrade_to_a_record_too_big_fails_and_leaves_revision_one() -> None:
    result = simulate_chart("release-record", "kind", values=DIGESTS, upgrade_from_values=())
    (release,) = result.releases
    assert release.message.startswith("Helm upgrade failed for release default/release-record")
    assert release.message.endswith(f"create: failed to create: {TOO_LONG.format(2)}")
    assert result.sim is not None
    digests = result.sim.store.get("ConfigMap", "default", "release-record-digests")
    assert digests is not None and digests["data"]["digests"].count("\n") == 10  # revision 1's


def _with_file(tmp_path: Path, size: int, *, ignored: bool = False) -> str:
    chart = tmp_path / "release-record"
    shutil.copytree(HERE / "release-record", chart)
    (chart / "docs").mkdir()
    (chart / "docs" / "manual.pdf").write_bytes(random.Random(size).randbytes(size))  # incompressible
    if ignored:
        (chart / ".helmignore").write_text("docs/\n")
    return str(chart)


def _simulate(chart: str, profile: str = "kind"):
    releases = build_inputs(chart, release_name="release-record", namespace="default")
    return simulate(load_profile(profile), releases)


def test_a_file_left_in_the_chart_directory_is_stored_and_refused(tmp_path: Path) -> None:
    (release,) = _simulate(_with_file(tmp_path, 900_000)).releases
    assert release.outcome == "Failed"
    assert release.message.endswith(TOO_LONG.format(1))


def test_a_file_listed_in_helmignore_is_not_stored(tmp_path: Path) -> None:
    # Helm's loader skips it (pkg/ignore), so the record holds only the templates
    (release,) = _simulate(_with_file(tmp_path, 900_000, ignored=True)).releases
    assert release.outcome == "Ready", release.message


def test_a_body_over_three_mebibytes_is_refused_before_validation(tmp_path: Path) -> None:
    (release,) = _simulate(_with_file(tmp_path, 2_600_000)).releases
    assert release.message.endswith("create: failed to create: Request entity too large: limit is 3145728")


@pytest.mark.parametrize("variant", ["failing", "fixed"])
def test_check_names_the_heaviest_file(tmp_path: Path, variant: str) -> None:
    chart = _with_file(tmp_path, 900_000, ignored=variant == "fixed")
    report = run_check(
        build_inputs(chart, release_name="release-record", namespace="default"),
        [load_profile("kind")],
        options=CheckOptions(verify_fixes=False),
    )
    hits = [f for f in report.findings if f.rule == "HS118"]
    if variant == "fixed":
        assert hits == []
        return
    (finding,) = hits
    # the chart's files weigh most here, so the .helmignore fix comes first
    assert finding.fixes[0].summary.startswith("keep what Helm does not need out of the chart with .helmignore")
    assert "docs/manual.pdf (900,000 bytes)" in finding.fixes[0].summary
