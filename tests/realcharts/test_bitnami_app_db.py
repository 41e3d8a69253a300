"""Bitnami application images whose entrypoint waits for the database before it installs
(bitnami/containers libdrupal.sh drupal_wait_for_db_connection, libmoodle.sh
moodle_wait_for_mysql_connection, libodoo.sh odoo_wait_for_postgresql_connection, libredmine.sh
redmine_wait_for_*_connection: retry_while, 12 tries 5 s apart, then exit 1). With an external
database (the charts' ``externalDatabase.host``) nothing in the environment is a Service, so
helmsim assumed the image started without dialling anything: Ready under cilium-always, where
no policy lets the pod reach DNS or the database and the real pod crash-loops."""

from __future__ import annotations

import pytest
from realcharts_helpers import behaviour_notes, restarts, simulate_chart

CHART = "bitnami-app-db"
APPS = ("drupal", "moodle", "odoo", "redmine")


@pytest.mark.parametrize("app", APPS)
def test_an_external_database_behind_denied_egress_stalls(app: str) -> None:
    result = simulate_chart(CHART, "cilium-always", sets=(f"app={app}",))
    assert result.releases[0].outcome == "Stalled"
    assert behaviour_notes(result, app)[0].startswith(f"behaviour from catalog entry bitnami-{app} (")
    assert any(v >= 1 for k, v in restarts(result).items() if k.endswith(f"/{app}"))  # exit 1 after 60 s, restarted
    assert any(f"{app} ERROR ==> Could not connect to the database" in e.message for e in result.trace)


@pytest.mark.parametrize("app", APPS)
def test_an_egress_policy_for_dns_and_the_port_lets_it_through(app: str) -> None:
    result = simulate_chart(CHART, "cilium-always", values=("ci/egress-values.yaml",), sets=(f"app={app}",))
    assert result.releases[0].outcome == "Ready"
    assert any(n.startswith("db.example.com:3306 is outside the cluster: assumed to resolve and to answer") for n in result.notes)


def test_the_in_release_database_is_waited_for_without_a_restart() -> None:
    result = simulate_chart(CHART, "kind", values=("ci/in-release-values.yaml",), sets=("app=redmine",))
    assert result.releases[0].outcome == "Ready"
    assert all(v == 0 for v in restarts(result).values())
