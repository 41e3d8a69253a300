"""phpMyAdmin writes its database host into config.inc.php and serves its login page without
connecting (bitnami/containers ``libphpmyadmin.sh`` phpmyadmin_initialize). Its image was
unknown, so helmsim inferred a connect-at-start need from ``DATABASE_HOST``/``DATABASE_PORT_NUMBER``:
with MariaDB's ``allowExternal=false`` policy the release was Stalled (HS113), a false alarm;
the policy only breaks logins later."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, restarts, simulate_chart


def test_phpmyadmin_starts_without_its_database() -> None:
    result = simulate_chart("phpmyadmin-db")
    assert result.releases[0].outcome == "Ready"
    assert all(v == 0 for v in restarts(result).values())
    notes = behaviour_notes(result, "phpmyadmin")
    assert notes[0].startswith("behaviour from catalog entry bitnami-phpmyadmin (")
    assert "needs nothing (catalog entry)" in notes
