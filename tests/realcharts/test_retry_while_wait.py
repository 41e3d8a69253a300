"""Bitnami's ``retry_while "check_postgresql_connection"`` wait-for-db init container (bitnami/charts
``bitnami/superset/templates/_helpers.tpl`` superset.initContainers.waitForDB) waits for its
database and exits 1 after 12 tries 5 s apart. It was taken as exiting 0 at once, so a database
the init container cannot reach went unnoticed when the app itself names no peer: Ready, where
the real pod never starts."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, restarts, simulate_chart

CHART = "retry-while-wait"


def test_the_init_container_waits_for_the_database() -> None:
    result = simulate_chart(CHART)
    assert result.releases[0].outcome == "Ready"
    assert any(
        n.startswith("waits for svc/default/db:5432 (retry_while check_postgresql_connection:")
        for n in behaviour_notes(result, "wait-for-db")
    )
    exited = [e.time for e in result.trace if e.what == "container-exited" and e.data.get("container") == "wait-for-db"]
    db_ready = [e.time for e in result.trace if e.obj == "Pod/default/db-0" and e.message == "container postgresql ready"]
    assert exited and db_ready and db_ready[0] <= exited[0] <= db_ready[0] + 5.0  # its next try after db serves


def test_an_unreachable_database_stalls_the_release_at_the_init_container() -> None:
    result = simulate_chart(CHART, values=("ci/isolated-values.yaml",))
    assert result.releases[0].outcome == "Stalled"
    counts = {k: v for k, v in restarts(result).items() if k.endswith("/wait-for-db")}
    assert counts and all(v >= 1 for v in counts.values())  # exit 1 after 60 s, restarted
    logs = [e.message for e in result.trace if "Could not connect to the database server" in e.message]
    assert logs


def test_the_function_may_have_any_name() -> None:
    """seaweedfs names it ``mariadb_is_ready``; only ``check_*`` was recognised, and the init
    container was taken to exit 0 at once while the app crash-looped on the database."""
    result = simulate_chart(CHART, values=("ci/any-name-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    assert any(
        n.startswith("waits for svc/default/db:5432 (retry_while postgresql_is_ready:")
        for n in behaviour_notes(result, "wait-for-db")
    )
    isolated = simulate_chart(CHART, values=("ci/any-name-values.yaml", "ci/isolated-values.yaml"))
    assert isolated.releases[0].outcome == "Stalled"
