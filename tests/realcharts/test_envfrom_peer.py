"""A database host that reaches the container through a ConfigMap (bitnami discourse:
``envFrom: configMapRef``) is a need like one written in ``env``; with the database's ingress
policy admitting only labelled clients, the release cannot get Ready (HS113), where helmsim said
Ready because it read only literal ``env`` values."""

from __future__ import annotations

import pytest
from realcharts_helpers import behaviour_notes, check_chart, simulate_chart


@pytest.mark.parametrize("mode", ["envFrom", "prefix", "keyRef"])
def test_a_host_from_a_config_map_is_a_need(mode: str) -> None:
    result = simulate_chart("envfrom-peer", sets=(f"mode={mode}",))
    assert result.releases[0].outcome == "Stalled"
    variable = "APP_DATABASE_HOST" if mode == "prefix" else "DATABASE_HOST"
    assert any(n.startswith(f"needs svc/default/db:5432: environment variable {variable}") for n in behaviour_notes(result, "app"))


def test_without_the_host_in_its_environment_nothing_is_inferred() -> None:
    result = simulate_chart("envfrom-peer", sets=("mode=none",))
    assert result.releases[0].outcome == "Ready"
    assert not any("svc/default/db" in n for n in behaviour_notes(result, "app"))


def test_hs113_quotes_the_dropped_attempt_not_the_refused_one_before_the_database_was_up() -> None:
    report = check_chart("envfrom-peer", release_name="e")
    (finding,) = [f for f in report.findings if f.rule == "HS113"]
    assert "gives up (dial tcp" in finding.message and ": i/o timeout)" in finding.message
    assert "connection refused" not in finding.message
