"""Keycloak waits for the database of its JDBC URL (bitnami/containers ``libkeycloak.sh``
keycloak_initialize: wait-for-port 10 times, then "Unable to connect to host" and exit 1). A
``jdbc:postgresql://…`` URL was no need and the image unknown: bitnami keycloak with
PostgreSQL's ``allowExternal=false`` was Ready where the real pod crash-loops."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, simulate_chart

CHART = "keycloak-jdbc"


def test_keycloak_waits_for_the_database_of_its_jdbc_url() -> None:
    result = simulate_chart(CHART)
    assert result.releases[0].outcome == "Ready"
    assert "needs svc/default/db:5432 (catalog entry)" in behaviour_notes(result, "keycloak")


def test_a_database_its_policy_keeps_away_stalls_the_release() -> None:
    for profile in ("kind", "cilium-always"):
        result = simulate_chart(CHART, profile, values=("ci/isolated-values.yaml",))
        assert result.releases[0].outcome == "Stalled", profile
        assert any("Unable to connect to host" in e.message for e in result.trace if e.what == "container-log")
