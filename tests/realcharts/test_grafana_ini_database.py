"""Grafana opens and migrates the database of its grafana.ini at start (grafana/grafana
``pkg/services/sqlstore/sqlstore.go``) and ends when it cannot. The entry read peers only from the
environment: a database set in grafana.ini (the chart's ``grafana.ini.database``) was no need,
so a database that never answers was Ready where the environment's was Stalled."""

from __future__ import annotations

import pytest
from realcharts_helpers import behaviour_notes, simulate_chart

CHART = "grafana-ini-database"


@pytest.mark.parametrize("via", ["file", "env"])
def test_a_database_that_never_answers_stalls_either_way(via: str) -> None:
    result = simulate_chart(CHART, sets=(f"via={via}",))
    assert result.releases[0].outcome == "Stalled"
    if via == "file":
        assert "needs svc/default/pg:5432: its configuration file names it (catalog entry)" in behaviour_notes(result, "grafana")
