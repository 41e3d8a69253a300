"""Two replicas sharing one ReadWriteOnce claim under required anti-affinity: on a zonal
WaitForFirstConsumer class the claim is provisioned for the first pod's node, and the scheduler's
VolumeBinding filter keeps the second pod off every node the volume cannot reach (kubernetes
pkg/scheduler/framework/plugins/volumebinding binder.go FindPodVolumes). helmsim let the second
pod re-annotate the claim for its own node and both ran: Ready on eks-gp3."""

from __future__ import annotations

from realcharts_helpers import simulate_chart

from helmsim.cluster.scheduling import REASON_VOLUME_BIND_CONFLICT, REASON_VOLUME_NODE_CONFLICT


def test_the_second_replica_finds_no_node_its_volume_reaches() -> None:
    result = simulate_chart("shared-rwo-claim", "eks-gp3")
    assert result.releases[0].outcome == "Stalled"
    selected = [e for e in result.trace if e.what == "selected-node"]
    assert len(selected) == 1  # the claim is annotated once, for the first pod's node
    messages = [e.message for e in result.trace if e.what == "event" and e.data.get("reason") == "FailedScheduling"]
    assert any(REASON_VOLUME_NODE_CONFLICT in m or REASON_VOLUME_BIND_CONFLICT in m for m in messages)


def test_replicas_that_may_share_a_node_share_the_volume() -> None:
    result = simulate_chart("shared-rwo-claim", "eks-gp3", values=("ci/soft-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    assert result.sim is not None
    nodes = {p["spec"]["nodeName"] for p in result.sim.store.list("Pod", "default") if p["metadata"]["name"].startswith("web-")}
    assert len(nodes) == 1
