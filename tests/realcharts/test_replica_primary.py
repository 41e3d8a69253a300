"""A Valkey replica connects to its primary in the background, every second, and its readiness
probe pings the primary (bitnami/charts bitnami/valkey templates/health-configmap.yaml
ping_readiness_primary.sh). The entry for the valkey image said it needs nothing, so under
cilium-always with the chart's policy off the replicas were Ready, where they can reach neither
DNS nor the primary and are never Ready."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, catalog_entries, restarts, simulate_chart

CHART = "replica-primary"


def test_replicas_wait_for_the_primary_without_restarting() -> None:
    result = simulate_chart(CHART, "cilium-always")
    assert result.releases[0].outcome == "Ready"
    notes = behaviour_notes(result, "valkey")
    assert "bitnami-valkey-replica" in catalog_entries(result, "valkey")
    assert "needs svc/default/kv-headless:6379 (catalog entry)" in notes


def test_replicas_that_cannot_reach_the_primary_are_never_ready() -> None:
    result = simulate_chart(CHART, "cilium-always", values=("ci/no-policy-values.yaml",))
    assert result.releases[0].outcome == "Stalled"
    assert all(v == 0 for v in restarts(result).values())  # it keeps retrying; it does not exit
    assert simulate_chart(CHART, "kind", values=("ci/no-policy-values.yaml",)).releases[0].outcome == "Ready"
