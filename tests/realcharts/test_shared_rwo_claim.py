"""Two replicas sharing one ReadWriteOnce claim under required anti-affinity: on a zonal
WaitForFirstConsumer class the claim is provisioned for the first pod's node, and the scheduler's
VolumeBinding filter keeps the second pod off every node the volume cannot reach (kubernetes
pkg/scheduler/framework/plugins/volumebinding binder.go FindPodVolumes). helmsim let the second
pod re-annotate the claim for its own node and both ran: Ready on eks-gp3."""

from __future__ import annotations

from realcharts_helpers import HERE, simulate_chart

from helmsim.cluster.profile import ClusterProfile, load_profile

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



def _one_zone() -> ClusterProfile:
    """eks-gp3 with three nodes in one zone (ci/one-zone-profile.yaml)."""
    return load_profile(str(HERE / "shared-rwo-claim" / "ci" / "one-zone-profile.yaml"))


def test_a_rollout_onto_another_node_of_the_zone_waits_for_the_volume_forever() -> None:
    """Three nodes in one zone (a real node group): the zonal volume reaches all of them, the new
    pod of the rollout lands on another node than the old one, and the attach/detach controller
    refuses a second node for a ReadWriteOnce volume (reconciler.go reportMultiAttachError)
    while the rollout keeps the old pod until the new one is Ready."""
    result = simulate_chart(
        "shared-rwo-claim", _one_zone(), values=("ci/single-rollout-values.yaml",), upgrade_from_values=("ci/single-values.yaml",)
    )
    assert result.releases[0].outcome == "Stalled"
    refused = [e for e in result.trace if e.what == "event" and e.data.get("reason") == "FailedAttachVolume"]
    assert len(refused) == 1
    assert refused[0].message.startswith('Multi-Attach error for volume "pvc-')
    assert "Volume is already used by pod(s) web-" in refused[0].message
    assert any(e.what == "sync-failed" and "unattached volumes=[data]" in e.message for e in result.trace)


def test_the_first_install_attaches_once_per_node_and_both_pods_wait_for_it() -> None:
    result = simulate_chart("shared-rwo-claim", _one_zone(), values=("ci/soft-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    attached = [e for e in result.trace if e.what == "event" and e.data.get("reason") == "SuccessfulAttachVolume"]
    assert result.sim is not None
    pods = [p for p in result.sim.store.list("Pod", "default") if p["metadata"]["name"].startswith("web-")]
    assert len({p["spec"]["nodeName"] for p in pods}) == 1
    # both pods report the one attach, and neither started before it (volumeAttach: 6 s median)
    assert sorted(e.obj for e in attached) == sorted(f"Pod/default/{p['metadata']['name']}" for p in pods)
    started = [e.time for e in result.trace if e.what == "event" and e.data.get("reason") == "Started"]
    assert min(started) >= max(e.time for e in attached)


def test_a_driver_that_needs_no_attach_lets_the_rollout_through() -> None:
    """The same rollout where the profile's CSIDriver says attachRequired: false (as for
    file.csi.azure.com): nothing is attached, so nothing is refused."""
    profile = _one_zone()
    objects = [
        {**o, "spec": {"attachRequired": False}} if o.get("kind") == "CSIDriver" else o for o in profile.objects
    ]
    result = simulate_chart(
        "shared-rwo-claim",
        profile.model_copy(update={"objects": objects}),
        values=("ci/single-rollout-values.yaml",),
        upgrade_from_values=("ci/single-values.yaml",),
    )
    assert result.releases[0].outcome == "Ready"
    assert not [e for e in result.trace if e.what == "event" and "Attach" in str(e.data.get("reason"))]


def test_without_a_csidriver_object_attach_is_assumed_and_said() -> None:
    profile = _one_zone()
    objects = [o for o in profile.objects if o.get("kind") != "CSIDriver"]
    result = simulate_chart("shared-rwo-claim", profile.model_copy(update={"objects": objects}), values=("ci/soft-values.yaml",))
    notes = [n for n in result.notes if n.startswith("CSI driver ebs.csi.aws.com: the profile holds no CSIDriver object")]
    assert len(notes) == 1
