"""What the simulated cluster looks like after a whole release: the store, the trace, and
reproducibility of sampled (Monte Carlo) runs."""

from __future__ import annotations

from itertools import pairwise

import pytest
from e2e_helpers import FIX, MAIN, SEED1, SEED2, k8s_events, release

from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import load_profile
from helmsim.report.simulate import to_json
from helmsim.simulate import simulate

SLOW_ROLLOUT = FIX / "seed1-slow-rollout-values.yaml"
DEPLOYMENT = f"{MAIN}-agent-manager"


@pytest.mark.parametrize(
    ("example", "profile", "values"),
    [
        (SEED1, "cilium-always-race", ()),
        (SEED2, "kind", ()),
        (SEED1, "cilium-always", (FIX / "seed1-migrate-fails-values.yaml",)),
    ],
    ids=["seed1-race", "seed2", "seed1-fails"],
)
def test_every_cause_is_an_earlier_event(sim, example, profile, values) -> None:
    result = sim(example, profile, *values)
    events = list(result.trace)
    assert [e.id for e in events] == list(range(len(events)))
    assert all(b.time >= a.time for a, b in pairwise(events))
    for e in events:
        if e.cause is not None:
            assert e.cause < e.id and events[e.cause].time <= e.time


def test_upgrade_rolls_the_deployment_to_a_new_generation(sim) -> None:
    result = sim(
        SEED1, "cilium-always", SEED1 / "ci" / "default-values.yaml", SLOW_ROLLOUT, upgrade=True
    )
    dep = result.sim.store.get("Deployment", "kagent", DEPLOYMENT)
    assert dep["metadata"]["generation"] == 2 and dep["status"]["observedGeneration"] == 2
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":4.7.0")
    # previous-values ran 4.5.3; the rollout replaces it one pod at a time (maxSurge 25%)
    replica_sets = result.sim.store.list("ReplicaSet", "kagent")
    assert sorted(rs["spec"]["replicas"] for rs in replica_sets) == [0, 2]
    scaled = [e.message for e in k8s_events(result, "ScalingReplicaSet")]
    assert any(m.endswith("to 1 from 2") and "Scaled down" in m for m in scaled)
    assert release(result).outcome == "Ready"


def test_release_objects_carry_helm_ownership(sim) -> None:
    result = sim(SEED2, "kind", SEED2 / "ci" / "hook-values.yaml")
    dep = result.sim.store.get("Deployment", "model-serving", f"{MAIN}-model-gateway")
    # helm/helm pkg/action/validate.go setMetadataVisitor
    assert dep["metadata"]["annotations"]["meta.helm.sh/release-name"] == MAIN
    assert dep["metadata"]["annotations"]["meta.helm.sh/release-namespace"] == "agent-platform"
    assert dep["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"


def test_a_namespace_created_by_a_release_has_the_name_label(sim) -> None:
    result = sim(SEED2, "kind", SEED2 / "ci" / "hook-values.yaml")
    ns = result.sim.store.get("Namespace", None, "model-serving")
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == "model-serving"


def test_sampled_latencies_are_reproducible_per_seed() -> None:
    releases = build_inputs(
        str(SEED1),
        values=[],
        sets=[],
        helmrelease=[str(SEED1 / "flux")],
        charts=[],
        release_name=None,
        namespace="default",
        upgrade_from=None,
        upgrade_from_values=[],
        upgrade_from_set=[],
    )
    profile = load_profile("cilium-always")

    def report(seed: int) -> str:
        return to_json(simulate(profile, releases, seed=seed, sample_latencies=True))

    assert report(7) == report(7)
    assert report(7) != report(8)  # the latencies really are drawn
    # nominal runs ignore the seed
    assert to_json(simulate(profile, releases, seed=1)) == to_json(
        simulate(profile, releases, seed=2)
    )
