"""external-dns reading DNSEndpoint objects without their CRD (tests/realcharts/README.md:
"Programs that cannot work"): it builds its DNSEndpoint informer at start and exits 1 when the
API is not served (kubernetes-sigs/external-dns source/crd.go, controller/execute.go)."""

from __future__ import annotations

from realcharts_helpers import simulate_chart

WITH_CRD = ("ci/crd-values.yaml",)


def test_the_crd_source_without_its_crd_crash_loops() -> None:
    # before, the image was unknown and the release Ready at 20 s
    result = simulate_chart("external-dns-crd-source", "kind")
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    logs = [e.data.get("line") for e in result.trace if e.what == "container-log" and e.data.get("container") == "external-dns"]
    assert 'level=fatal msg="no matches for kind "DNSEndpoint" in version "externaldns.k8s.io/v1alpha1""' in logs


def test_with_the_crd_in_the_release_external_dns_runs() -> None:
    (release,) = simulate_chart("external-dns-crd-source", "kind", values=WITH_CRD).releases
    assert release.outcome == "Ready", release.message


def test_without_the_crd_source_nothing_is_checked() -> None:
    result = simulate_chart("external-dns-crd-source", "kind", sets=("sources={service}",))
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
