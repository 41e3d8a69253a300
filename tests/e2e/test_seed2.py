"""Seed 2 end to end: the hf-cache claim has no consumer, so under WaitForFirstConsumer the
poller times out on it five times and the HelmRelease stalls (issues 4 and 5)."""

from __future__ import annotations

from typing import Any

import pytest
from e2e_helpers import (
    FIX,
    MAIN,
    MAIN_REF,
    SEED2,
    SEED2_DEPENDENTS,
    events,
    k8s_events,
    object_status,
    release,
    run_example,
)

CI = SEED2 / "ci"
PVC = "PersistentVolumeClaim/model-serving/hf-cache"
TIMEOUT = f"timeout waiting for: [{PVC} status: 'InProgress']"
WFFC = "waiting for first consumer to be created before binding"
PREDICTOR_HR = FIX / "flux" / "seed2-predictor.yaml"
PREDICTOR_CHART = f"model-predictor={FIX / 'charts' / 'model-predictor'}"
NAMESPACE_EXISTS = FIX / "seed2-namespace-exists-values.yaml"


def _consumer_pod(at: float) -> Any:
    """A ``setup`` callback creating, at simulated time ``at``, a pod that mounts hf-cache."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "predictor", "namespace": "model-serving"},
        "spec": {
            "containers": [
                {
                    "name": "predictor",
                    "image": "ghcr.io/example/predictor:0.1.0",
                    "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                }
            ],
            "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": "hf-cache"}}],
        },
    }

    def setup(sim: Any) -> None:
        sim.after(at, lambda: sim.store.create(pod, actor="test"))

    return setup


# --- issue 4: the claim under WaitForFirstConsumer ----------------------------------------------
def test_claim_stays_pending_with_repeated_wait_for_first_consumer_events(sim) -> None:
    result = sim(SEED2, "kind")
    wffc = k8s_events(result, "WaitForFirstConsumer", PVC)
    assert len(wffc) >= 10  # the binder re-syncs and re-records it while the claim waits
    assert {e.message for e in wffc} == {WFFC}
    assert {e.data["type"] for e in wffc} == {"Normal"}
    assert {e.actor for e in wffc} == {"persistentvolume-controller"}
    assert events(result, "selected-node", obj_prefix=PVC) == []
    assert k8s_events(result, "ProvisioningSucceeded", PVC) == []
    claim = result.sim.store.get("PersistentVolumeClaim", "model-serving", "hf-cache")
    assert claim is not None and claim["status"]["phase"] == "Pending"
    assert object_status(result, "PersistentVolumeClaim", "hf-cache")["status"] == "InProgress"


def test_claim_binds_once_a_consuming_pod_schedules() -> None:
    result = run_example(SEED2, "kind", setup=_consumer_pod(200.0))
    (created,) = [e for e in events(result, "created") if e.obj == "Pod/model-serving/predictor"]
    assert created.time == 200.0
    before = [e for e in k8s_events(result, "WaitForFirstConsumer", PVC) if e.time < created.time]
    assert before and not [
        e for e in k8s_events(result, "WaitForFirstConsumer", PVC) if e.time > created.time
    ]
    # the scheduler picks the node, then the provisioner provisions and the binder binds
    (selected,) = events(result, "selected-node", obj_prefix=PVC)
    assert selected.data["node"] == "kind-control-plane" and selected.time > created.time
    (provisioned,) = k8s_events(result, "ProvisioningSucceeded", PVC)
    assert provisioned.time > selected.time
    (scheduled,) = [
        e for e in events(result, "scheduled") if e.obj == "Pod/model-serving/predictor"
    ]
    assert scheduled.time >= provisioned.time
    claim = result.sim.store.get("PersistentVolumeClaim", "model-serving", "hf-cache")
    assert claim["status"]["phase"] == "Bound"
    # and the first install attempt's wait sees it Bound: Ready on the first attempt
    o = release(result)
    assert o.outcome == "Ready" and o.attempts == 1 and o.ready_at < 360.0


def test_a_predictor_release_without_depends_on_is_the_first_consumer() -> None:
    """A second release mounting the claim, installed first (its pod is unschedulable until
    the claim exists), lets the claim bind and connectivity get Ready."""
    result = run_example(
        SEED2, "kind", [NAMESPACE_EXISTS], helmreleases=[PREDICTOR_HR], charts=[PREDICTOR_CHART]
    )
    pod = "Pod/model-serving/model-predictor-predictor-"
    unschedulable = k8s_events(result, "FailedScheduling", pod)
    assert (
        unschedulable and 'persistentvolumeclaim "hf-cache" not found' in unschedulable[0].message
    )
    assert k8s_events(result, "WaitForPodScheduled", PVC)
    assert release(result).outcome == "Ready" and release(result).attempts == 1
    assert release(result, "model-predictor").outcome == "Ready"
    for name in SEED2_DEPENDENTS:
        assert release(result, name).outcome == "Ready"


def test_the_consumer_behind_depends_on_cannot_break_the_deadlock() -> None:
    """model-manager (whose predictors mount the claim) dependsOn connectivity, which waits for
    the claim: mapping its chart changes nothing."""
    result = run_example(
        SEED2, "kind", charts=[f"agent-platform-model-manager={FIX / 'charts' / 'model-predictor'}"]
    )
    assert release(result).outcome == "Stalled"
    mm = release(result, "model-manager")
    assert mm.simulated and mm.outcome == "Blocked" and mm.attempts == 0
    assert mm.message == f"dependency '{MAIN_REF}' is not ready"


# --- issue 5: five attempts, then Stalled --------------------------------------------------------
@pytest.mark.parametrize("profile", ["kind", "eks-gp3"])
def test_seed2_stalls_after_five_install_attempts(sim, profile: str) -> None:
    result = sim(SEED2, profile)
    o = release(result)
    assert o.outcome == "Stalled" and o.attempts == 5  # install.remediation.retries: 4
    assert o.conditions["Stalled"] == {
        "status": "True",
        "reason": "RetriesExceeded",
        "message": "Failed to install after 5 attempt(s)",
    }
    assert o.conditions["Released"]["message"].endswith(TIMEOUT)
    assert (
        o.message
        == f"Helm install failed for release {MAIN_REF} with chart {MAIN}@4.28.1: {TIMEOUT}"
    )
    assert o.helm_status == [
        {
            "revision": 1,
            "status": "failed",
            "chart": f"{MAIN}@4.28.1",
            "description": f'Release "{MAIN}" failed: {TIMEOUT}',
        }
    ]
    for name in SEED2_DEPENDENTS:
        assert release(result, name).message == f"dependency '{MAIN_REF}' is not ready"
        assert release(result, name).outcome == "Blocked"


def test_each_attempt_waits_the_full_five_minutes_and_keeps_the_claim(sim) -> None:
    result = sim(SEED2, "kind")
    main = f"{MAIN_REF}.v1"
    starts = [e for e in events(result, "wait-start") if e.obj == main]
    ends = [e for e in events(result, "wait-end") if e.obj == main]
    assert len(starts) == len(ends) == 5
    for s, e in zip(starts, ends, strict=True):
        assert e.time - s.time == pytest.approx(300.0)  # spec.timeout 5m
        assert e.data["error"] == TIMEOUT
    # the uninstall remediation keeps the claim (helm.sh/resource-policy: keep) and the next
    # install adopts it
    assert len([e for e in events(result, "kept") if e.obj == PVC]) == 4
    assert len([e for e in events(result, "adopted") if e.obj == PVC]) == 4
    # the dependency on kserve-resources (unmapped, Ready after 60 s) delays the first install
    assert starts[0].time >= 60.0


@pytest.mark.parametrize("profile", ["kind", "eks-gp3"])
def test_hook_fix_is_ready(sim, profile: str) -> None:
    result = sim(SEED2, profile, CI / "hook-values.yaml")
    o = release(result)
    assert o.outcome == "Ready" and o.attempts == 1
    assert o.message == f"Helm install succeeded for release {MAIN_REF}.v1 with chart {MAIN}@4.28.1"
    hook = f"Job/agent-platform/{MAIN}-model-serving-cache"
    assert [e.data["event"] for e in events(result, "hook-succeeded") if e.obj == hook] == [
        "post-install"
    ]
    assert all(d.outcome == "Ready" for d in result.releases)


@pytest.mark.parametrize("profile", ["kind", "eks-gp3"])
def test_hook_fix_leaves_the_claim_pending(sim, profile: str) -> None:
    result = sim(SEED2, profile, CI / "hook-values.yaml")
    claim = result.sim.store.get("PersistentVolumeClaim", "model-serving", "hf-cache")
    assert claim is not None and claim["status"]["phase"] == "Pending"
    assert k8s_events(result, "WaitForFirstConsumer", PVC)[0].message == WFFC


# --- the variants in ci/, per profile ---------------------------------------------------------
VARIANTS = {
    "default": "Stalled",
    "hook": "Ready",
    "hook-empty-class": "Ready",
    "cache-disabled": "Ready",
    "existing-claim": "Ready",
    "serving-disabled": "Ready",
}


@pytest.mark.parametrize("profile", ["kind", "eks-gp3"])
@pytest.mark.parametrize(("variant", "expected"), sorted(VARIANTS.items()))
def test_variants_converge_where_expected(sim, profile: str, variant: str, expected: str) -> None:
    result = sim(SEED2, profile, CI / f"{variant}-values.yaml")
    o = release(result)
    assert o.outcome == expected
    claim_rendered = object_status(result, "PersistentVolumeClaim", "hf-cache") is not None
    assert claim_rendered == (variant == "default")
    if expected == "Ready":
        assert o.attempts == 1


def test_upgrade_from_the_failing_shape_to_the_hook_fix() -> None:
    result = run_example(
        SEED2, "kind", [CI / "hook-values.yaml"], upgrade_from_values=[CI / "default-values.yaml"]
    )
    assert release(result).outcome == "Ready"
    claim = result.sim.store.get("PersistentVolumeClaim", "model-serving", "hf-cache")
    assert claim is not None and claim["status"]["phase"] == "Pending"
