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
