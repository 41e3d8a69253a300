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


def test_cloudflare_without_credentials_crash_loops() -> None:
    """provider/cloudflare/cloudflare.go: CF_API_TOKEN, or CF_API_KEY with CF_API_EMAIL, else
    log.Fatal at start (controller/execute.go); it was Ready with the image unknown."""
    for values in (("ci/cloudflare-values.yaml",), ("ci/cloudflare-key-only-values.yaml",)):
        result = simulate_chart("external-dns-crd-source", "kind", values=values)
        (release,) = result.releases
        assert release.outcome == "Stalled", values
        logs = [e.data.get("line") for e in result.trace if e.what == "container-log" and e.data.get("container") == "external-dns"]
        assert (
            'level=fatal msg="cloudflare credentials are not configured: set either CF_API_TOKEN or both CF_API_KEY '
            'and CF_API_EMAIL environment variables"'
        ) in logs


def test_cloudflare_with_a_token_from_a_secret_runs() -> None:
    (release,) = simulate_chart("external-dns-crd-source", "kind", values=("ci/cloudflare-token-values.yaml",)).releases
    assert release.outcome == "Ready", release.message


def test_the_crd_source_is_checked_before_the_provider() -> None:
    """controller/execute.go builds the sources first: without the CRD that is the fatal error."""
    result = simulate_chart("external-dns-crd-source", "kind", sets=("provider=cloudflare",))
    logs = [e.data.get("line") for e in result.trace if e.what == "container-log" and e.data.get("container") == "external-dns"]
    assert any("DNSEndpoint" in str(line) for line in logs)
    assert not any("cloudflare credentials" in str(line) for line in logs)
