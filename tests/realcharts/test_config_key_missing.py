"""JIRAlert exits 1 at start when its configuration defines no receiver
(prometheus-community/jiralert ``pkg/config/config.go`` UnmarshalYAML "no receivers defined",
``cmd/jiralert/main.go`` os.Exit(1) before it serves), and the chart's defaults define none. The
image was unknown: Ready, where the real pod crash-loops. The file is read from the container's
Secret or ConfigMap mounts for the key's presence only; its content is never printed."""

from __future__ import annotations

import json

import pytest
from realcharts_helpers import HERE, check_chart, simulate_chart
from typer.testing import CliRunner

from helmsim.cli import app

CHART = "config-key-missing"


@pytest.mark.parametrize("store", [(), ("ci/configmap-values.yaml",), ("ci/items-values.yaml",)])
def test_no_receiver_stalls_the_release_wherever_the_file_is_mounted_from(store: tuple[str, ...]) -> None:
    result = simulate_chart(CHART, values=store)
    assert result.releases[0].outcome == "Stalled"
    logs = [e.message for e in result.trace if e.what == "container-log" and "error loading configuration" in e.message]
    assert logs and logs[0].endswith('err="no receivers defined"')


def test_a_receiver_lets_it_start() -> None:
    assert simulate_chart(CHART, values=("ci/receiver-values.yaml",)).releases[0].outcome == "Ready"


def test_the_finding_names_the_key_and_no_content() -> None:
    report = check_chart(CHART, release_name=CHART)
    (finding,) = [f for f in report.findings if f.rule == "HS116"]
    assert finding.occurrences[0].message.startswith(
        "Deployment/default/jiralert's container jiralert (catalog entry jiralert) needs receivers in /config/jiralert.yml set, "
        "which its configuration file does not set"
    )
    assert finding.fixes[0].summary.startswith("set receivers in /config/jiralert.yml: the program reads it at start")
    out = CliRunner().invoke(app, ["check", str(HERE / CHART), "-p", "kind", "--format", "json"])
    assert "atlassian" not in out.stdout and "jiralert.tmpl" not in out.stdout  # the Secret's content
    json.loads(out.stdout)
