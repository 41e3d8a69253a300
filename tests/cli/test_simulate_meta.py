"""A meta-chart (a chart that renders HelmReleases) is simulated as the Flux tree it renders."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from helmsim.cli import app

CHARTS = Path(__file__).resolve().parents[1] / "fixtures" / "charts"


def test_meta_chart_releases_with_mapped_and_unmapped_charts() -> None:
    result = CliRunner().invoke(
        app,
        ["simulate", str(CHARTS / "meta"), "-n", "flux-system", "--chart", f"caps={CHARTS / 'caps'}", "--format", "json"],
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    by_name = {r["name"]: r for r in doc["releases"]}
    assert by_name["work"]["namespace"] == "flux-system" and by_name["work"]["simulated"]
    assert by_name["work"]["message"] == "Helm install succeeded for release flux-system/work.v1 with chart caps@1.2.3"
    after = by_name["after"]
    assert not after["simulated"] and after["outcome"] == "Ready"
    assert after["readyAt"] >= by_name["work"]["readyAt"] + 60  # unmapped: Ready 60 s after its dependency
    assert any("chart other is not mapped" in n for n in doc["notes"])


def _chart(root: Path, template: str, values: str = "") -> Path:
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: kinds\nversion: 0.1.0\n")
    (root / "values.yaml").write_text(values)
    (root / "templates" / "x.yaml").write_text(template)
    return root


_HR_FROM_VALUES = """apiVersion: helm.toolkit.fluxcd.io/v2
kind: {{ .Values.kind }}
metadata: {name: from-values, namespace: flux-system}
spec:
  interval: 5m
  chart: {spec: {chart: absent, sourceRef: {kind: HelmRepository, name: r}}}
"""


def test_a_helmrelease_kind_given_only_in_values_is_still_a_meta_chart(tmp_path: Path) -> None:
    chart = _chart(tmp_path / "c", _HR_FROM_VALUES, "kind: ConfigMap\n")
    result = CliRunner().invoke(
        app,
        ["simulate", str(chart), "-n", "flux-system", "--set", "kind=HelmRelease", "--chart", f"absent={CHARTS / 'caps'}",
         "--format", "json"],
    )
    doc = json.loads(result.stdout)
    assert [r["name"] for r in doc["releases"]] == ["from-values"], result.stderr


def test_a_helmrelease_inside_a_packaged_subchart_is_found(tmp_path: Path) -> None:
    import io
    import tarfile

    from helmsim.release_inputs import _may_render_helmreleases

    chart = _chart(tmp_path / "c", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz") as tar:
        data = b"kind: HelmRelease\n"
        info = tarfile.TarInfo("sub/templates/hr.yaml")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    assert not _may_render_helmreleases(chart, {})
    (chart / "charts").mkdir()
    (chart / "charts" / "sub-0.1.0.tgz").write_bytes(inner.getvalue())
    assert _may_render_helmreleases(chart, {})
    assert _may_render_helmreleases(chart / "charts" / "sub-0.1.0.tgz", {})
    assert _may_render_helmreleases(tmp_path / "c", {"note": "HelmRelease"})
