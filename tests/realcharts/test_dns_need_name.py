"""A container whose only peer is a Service (bitnami keycloak's keycloak-config-cli: KEYCLOAK_URL
names the headless Service) looks that Service's name up first; when nothing allows its DNS,
HS113 quotes that lookup, not one of kubernetes.default the program never makes."""

from __future__ import annotations

from realcharts_helpers import check_chart


def test_hs113_quotes_the_lookup_of_the_service_it_dials() -> None:
    report = check_chart("dns-need-name", "cilium-always", release_name="d")
    (finding,) = [f for f in report.findings if f.rule == "HS113" and "Job/default/configure" in f.message]
    assert "(lookup api.default.svc.cluster.local on 10.96.0.10:53: read udp" in finding.message
    assert "kubernetes.default" not in finding.message
