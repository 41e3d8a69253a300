"""oauth2-proxy fetches its OIDC issuer's discovery document once at start and exits 1 when it
cannot (oauth2-proxy main.go: "ERROR: Failed to initialise OAuth2 Proxy: … failed to discover OIDC
configuration"). bitnami/charts bitnami/oauth2-proxy with ``networkPolicy.allowExternalEgress=false``
allows DNS only: the image was unknown and the release Ready."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, simulate_chart

CHART = "oauth2-proxy-issuer"


def test_an_issuer_its_policy_does_not_let_it_reach_stalls_the_release() -> None:
    result = simulate_chart(CHART, values=("ci/dns-only-values.yaml",))
    assert result.releases[0].outcome == "Stalled"
    logs = [str(e.data.get("line")) for e in result.trace if e.what == "container-log" and e.data.get("container") == "oauth2-proxy"]
    assert any(line.startswith("[main.go:60] ERROR: Failed to initialise OAuth2 Proxy:") for line in logs)


def test_a_reachable_issuer_is_assumed_to_answer_and_said() -> None:
    result = simulate_chart(CHART)
    assert result.releases[0].outcome == "Ready"
    assert "needs sso.example.com:443 (catalog entry)" in behaviour_notes(result, "oauth2-proxy")
    assert any(n.startswith("sso.example.com:443 is outside the cluster: assumed to resolve and to answer") for n in result.notes)


def test_skipping_discovery_requests_nothing_at_start() -> None:
    result = simulate_chart(CHART, values=("ci/skip-discovery-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    assert behaviour_notes(result, "oauth2-proxy")[0].startswith("behaviour from catalog entry oauth2-proxy-skip-oidc-discovery (")
