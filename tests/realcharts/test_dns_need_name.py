"""A container whose only peer is a Service (bitnami keycloak's keycloak-config-cli: KEYCLOAK_URL
names the headless Service) looks that Service's name up first; when nothing allows its DNS,
HS113 quotes that lookup, not one of kubernetes.default the program never makes."""

from __future__ import annotations

from realcharts_helpers import HERE

from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.release_inputs import build_inputs


def test_hs113_quotes_the_lookup_of_the_service_it_dials() -> None:
    releases = build_inputs(str(HERE / "dns-need-name"), release_name="d", namespace="default")
    report = run_check(releases, [load_profile("cilium-always")], options=CheckOptions(verify_fixes=False))
    (finding,) = [f for f in report.findings if f.rule == "HS113" and "Job/default/configure" in f.message]
    assert "(lookup api.default.svc.cluster.local on 10.96.0.10:53: read udp" in finding.message
    assert "kubernetes.default" not in finding.message
