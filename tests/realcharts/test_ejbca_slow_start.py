"""The Bitnami EJBCA image waits for its database (12 tries 5 s apart) before it configures
WildFly for minutes, and the chart's probes wait 500 s (bitnami/containers
bitnami/ejbca/9/debian-12/rootfs/opt/bitnami/scripts/libejbca.sh ejbca_initialize; bitnami/charts
bitnami/ejbca/values.yaml readinessProbe). With no entry for the image, helmsim took it to dial
the database once at start and exit when refused: bitnami/ejbca's defaults were blamed on that
(HS116) instead of the probe's delay beyond Helm's 300 s timeout (HS122); entry bitnami-ejbca."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, catalog_entries, check_chart, restarts, simulate_chart

CHART = "ejbca-slow-start"


def test_the_delay_of_the_probe_is_the_cause_and_a_longer_timeout_fixes_it() -> None:
    result = simulate_chart(CHART, "kind")
    assert result.releases[0].outcome == "Stalled"
    assert catalog_entries(result, "ejbca") == {"bitnami-ejbca"}
    assert "needs svc/default/ejbca-slow-start-db:3306 (catalog entry)" in behaviour_notes(result, "ejbca")
    assert all(v == 0 for v in restarts(result).values())  # it waited for the database: no exit
    report = check_chart(CHART, "kind", release_name="ejbca-slow-start", verify_fixes=True)
    rules = {f.rule for f in report.findings}
    assert "HS122" in rules and "HS116" not in rules
    hs122 = next(f for f in report.findings if f.rule == "HS122")
    assert hs122.fixes[0].verified is True


def test_an_image_nothing_describes_is_assumed_to_give_up_at_once() -> None:
    report = check_chart(CHART, "kind", release_name="ejbca-slow-start", values=("ci/unknown-values.yaml",))
    assert "HS116" in {f.rule for f in report.findings}
