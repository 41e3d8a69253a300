"""A DaemonSet no node is eligible for (tests/realcharts/README.md: "Programs that cannot work"):
kstatus reads 0 of 0 scheduled as Current, so the release is Ready; the report says it runs
nowhere (prometheus-community/helm-charts charts/prometheus-windows-exporter on Linux nodes)."""

from __future__ import annotations

from realcharts_helpers import simulate_chart


def test_a_daemonset_matching_no_node_is_ready_and_said_to_run_nowhere() -> None:
    result = simulate_chart("daemonset-no-node", "kind")
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert (
        "DaemonSet/default/daemonset-no-node runs no pod: no node of kind matches its nodeSelector "
        "kubernetes.io/os=windows; kstatus reads 0 of 0 scheduled as Current, so the release is Ready "
        "with it running nowhere"
    ) in result.notes


def test_a_daemonset_on_every_node_gets_no_such_note() -> None:
    result = simulate_chart("daemonset-no-node", "kind", values=("ci/linux-values.yaml",))
    assert not [n for n in result.notes if "runs no pod" in n]
