"""The MySQL exporter exits 1 at start when the [client] section of its my.cnf names no user and
``--mysqld.username`` gives none (prometheus/mysqld_exporter ``config/config.go`` ReloadConfig,
"no configuration found"; ``mysqld_exporter.go`` os.Exit(1)). The image was unknown: with
``mysql.user=""`` prometheus-mysql-exporter was Ready where the real pod crash-loops. The INI
file is read from its Secret mount for the key's presence only."""

from __future__ import annotations

import pytest
from realcharts_helpers import simulate_chart

CHART = "mysqld-exporter-user"


@pytest.mark.parametrize(("values", "outcome"), [((), "Ready"), (("ci/no-user-values.yaml",), "Stalled"), (("ci/flag-values.yaml",), "Ready")])
def test_a_user_in_my_cnf_or_the_flag_lets_it_start(values: tuple[str, ...], outcome: str) -> None:
    result = simulate_chart(CHART, values=values)
    assert result.releases[0].outcome == outcome
    failed = [e.message for e in result.trace if e.what == "container-log" and "Error parsing host config" in e.message]
    assert bool(failed) == (outcome == "Stalled")
