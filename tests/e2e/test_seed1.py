"""Seed 1 end to end: the migrate Job races its CiliumNetworkPolicy, and a Failed Job fails
the connectivity release despite ``disableWaitForJobs`` (issues 4 and 5).

Fixture profiles (tests/fixtures/e2e/profiles) make the race bite: ``cilium-always-race``
(image cached, policies enforced 8 s after creation), ``cilium-default-race`` (the same timing
under Cilium's default mode) and ``cilium-always-slow-policy`` (policies enforced after 150 s).
"""

from __future__ import annotations

import pytest
from e2e_helpers import (
    FIX,
    MAIN,
    MAIN_REF,
    MIGRATE_FAILS,
    MIGRATE_JOB,
    SEED1,
    SEED1_DEPENDENTS,
    events,
    k8s_events,
    object_status,
    release,
)

CI = SEED1 / "ci"
SLOW_ROLLOUT = FIX / "seed1-slow-rollout-values.yaml"
CNP = f"CiliumNetworkPolicy/kagent/{MAIN}-agent-manager-migrate"
MIGRATE_POD = f"Pod/kagent/{MIGRATE_JOB}"
FAILED_EARLY = f"failed early due to stalled resources: [Job/kagent/{MIGRATE_JOB} status: 'Failed']"
INSTALL_FAILED = f"Helm install failed for release {MAIN_REF} with chart {MAIN}@4.7.0: "
UPGRADE_FAILED = f"Helm upgrade failed for release {MAIN_REF} with chart {MAIN}@4.7.0: "
BLOCKED = f"dependency '{MAIN_REF}' is not ready"


def _apiserver_attempts(result, container: str = "migrate"):
    """The migrate container's connection events towards kube-apiserver, in order."""
    return [
        e
        for e in result.trace
        if e.what in ("connect-denied", "connected", "connect-timeout")
        and e.obj.startswith(MIGRATE_POD)
        and e.data.get("target") == "kube-apiserver"
        and e.data.get("container") == container
    ]


# --- issue 4: the race on the network ----------------------------------------------------------
def test_cilium_always_denies_the_first_syn_then_a_retransmit_connects(sim) -> None:
    result = sim(SEED1, "cilium-always-race")
    attempts = _apiserver_attempts(result)
    first = attempts[0]
    # The pod's first SYN goes out before its policy is enforced: dropped by "always".
    assert first.what == "connect-denied" and first.data["attempt"] == 1
    assert "cilium policyEnforcementMode=always and no policy allows it" in first.data["reason"]
    (in_effect,) = events(result, "policy-in-effect", obj_prefix=CNP)
    assert first.time < in_effect.time
    # The retransmissions before the policy are dropped too; the first one after it connects.
    connected = next(e for e in attempts if e.what == "connected")
    assert all(e.what == "connect-denied" for e in attempts[: attempts.index(connected)])
    assert connected.data["attempt"] > 1 and connected.time > in_effect.time
    assert "CiliumNetworkPolicy kagent/" in " ".join(connected.data["decided_by"])
    # the trace says why it connected: the connection is caused by the policy taking effect
    assert in_effect.id in [e.id for e in result.trace.chain(connected.id)]
    # one pod is enough: the Job completes without a retry, and the release is Ready
    assert len(k8s_events(result, "SuccessfulCreate", f"Job/kagent/{MIGRATE_JOB}")) == 1
    assert k8s_events(result, "Completed", f"Job/kagent/{MIGRATE_JOB}")
    assert release(result).outcome == "Ready"


def test_cilium_always_with_a_slow_policy_fails_every_pod_of_the_job(sim) -> None:
    result = sim(SEED1, "cilium-always-slow-policy")
    timeouts = [e for e in events(result, "connect-timeout") if e.obj.startswith(MIGRATE_POD)]
    # backoffLimit 2: three pods, each gives up after the 30 s dial timeout, as in the seed log
    assert len(timeouts) == 3
    assert {e.data["error"] for e in timeouts} == {"dial tcp 10.96.0.1:443: i/o timeout"}
    exits = [e for e in events(result, "container-exited") if e.obj.startswith(MIGRATE_POD)]
    assert [e.data["exitCode"] for e in exits] == [1, 1, 1]
    (limit,) = k8s_events(result, "BackoffLimitExceeded", f"Job/kagent/{MIGRATE_JOB}")
    assert limit.message == "Job has reached the specified backoff limit"
    assert limit.data["type"] == "Warning"
    (in_effect,) = events(result, "policy-in-effect", obj_prefix=CNP)
    assert limit.time < in_effect.time  # the policy arrives after the Job gave up
    assert object_status(result, "Job", MIGRATE_JOB)["status"] == "Failed"


@pytest.mark.parametrize("profile", ["cilium-default", "cilium-default-race"])
def test_cilium_default_denies_nothing(sim, profile: str) -> None:
    result = sim(SEED1, profile)
    assert events(result, "connect-denied") == []
    first = _apiserver_attempts(result)[0]
    assert first.what == "connected" and first.data["attempt"] == 1
    assert release(result).outcome == "Ready"


def test_the_inferred_needs_are_recorded_in_the_trace(sim) -> None:
    result = sim(SEED1, "cilium-always-race")
    needs = [e.message for e in events(result, "behaviour") if e.obj.startswith(MIGRATE_POD)]
    assert any("migrate: needs kube-apiserver: CiliumNetworkPolicy" in m for m in needs)
    assert any("migrate: talks to the API server: ServiceAccount" in m for m in needs)


# --- issue 5: a failed migrate Job fails the release ------------------------------------------
def _assert_dependents_blocked(result) -> None:
    for name in SEED1_DEPENDENTS:
        dep = release(result, name)
        assert dep.outcome == "Blocked", name
        assert dep.reason == "DependencyNotReady" and dep.message == BLOCKED


def test_failed_job_fails_the_install_early_despite_disable_wait_for_jobs(sim) -> None:
    result = sim(SEED1, "cilium-always", MIGRATE_FAILS)
    o = release(result)
    assert o.outcome == "Stalled" and o.attempts == 4  # install.remediation.retries: 3
    assert o.conditions["Stalled"] == {
        "status": "True",
        "reason": "RetriesExceeded",
        "message": "Failed to install after 4 attempt(s)",
    }
    assert o.message == INSTALL_FAILED + FAILED_EARLY
    assert o.conditions["Released"]["reason"] == "InstallFailed"
    assert [h["status"] for h in o.helm_status] == ["failed"]
    assert o.helm_status[0]["description"] == f'Release "{MAIN}" failed: {FAILED_EARLY}'
    # install remediation: uninstall between attempts, none after the last (remediateLastFailure
    # defaults to false for install)
    assert [h["action"] for h in o.history] == ["install", "uninstall"] * 3 + ["install"]
    _assert_dependents_blocked(result)


def test_another_workload_was_still_rolling_out_when_the_job_failed(sim) -> None:
    """Fail-fast, not the all-terminal rule: the Deployment is InProgress at that moment."""
    result = sim(SEED1, "cilium-always", MIGRATE_FAILS)
    wait_end = next(e for e in events(result, "wait-end") if e.data.get("error"))
    assert wait_end.message == FAILED_EARLY
    polls = [
        e for e in events(result, "poll") if e.cause == wait_end.cause and e.time <= wait_end.time
    ]
    last = {e.obj: e.data["status"] for e in polls}
    assert last[f"Deployment/kagent/{MAIN}-agent-manager"] == "InProgress"
    assert last[f"Job/kagent/{MIGRATE_JOB}"] == "Failed"
    # the Job failed after backoffLimit 2 (three pods that exit 1) before the wait gave up
    (limit, *_) = k8s_events(result, "BackoffLimitExceeded", f"Job/kagent/{MIGRATE_JOB}")
    assert limit.time <= wait_end.time < limit.time + 5.0  # the poller polls every 5 s


def test_failed_job_fails_the_upgrade_early_and_rolls_back(sim) -> None:
    result = sim(SEED1, "cilium-always", MIGRATE_FAILS, upgrade=True)
    o = release(result)
    assert o.outcome == "Stalled" and o.attempts == 4
    assert o.conditions["Stalled"]["message"] == "Failed to upgrade after 4 attempt(s)"
    released = o.conditions["Released"]
    assert released["reason"] == "UpgradeFailed"
    assert released["message"] == UPGRADE_FAILED + FAILED_EARLY
    # upgrade remediation: rollback after every failure (remediateLastFailure: true)
    assert [h["action"] for h in o.history] == ["upgrade", "rollback"] * 4
    assert o.reason == "RetriesExceeded" and o.conditions["Ready"]["reason"] == "RollbackSucceeded"
    # history pruned to maxHistory 5: revisions 5..9, failed upgrades and rollbacks alternating
    assert o.helm_status[0] == {
        "revision": 5,
        "status": "superseded",
        "chart": f"{MAIN}@4.7.0",
        "description": "Rollback to 3",
    }
    assert o.helm_status[1]["status"] == "failed"
    assert o.helm_status[1]["description"] == f'Upgrade "{MAIN}" failed: {FAILED_EARLY}'
    assert o.helm_status[-1]["status"] == "deployed"
    assert o.helm_status[-1]["description"].startswith("Rollback to ")
    _assert_dependents_blocked(result)


def test_helm_history_is_pruned_to_max_history(sim) -> None:
    # fluxcd/helm-controller internal/action/upgrade.go, rollback.go: MaxHistory = GetMaxHistory()
    o = release(sim(SEED1, "cilium-always", MIGRATE_FAILS, upgrade=True))
    assert [h["revision"] for h in o.helm_status] == [5, 6, 7, 8, 9]


def test_the_seed_incident_reproduces_from_the_network_alone(sim) -> None:
    """No forced exit code: the slow policy times every migrate pod out while the Deployment
    rolls out, and the upgrade fails exactly as on the installation."""
    result = sim(SEED1, "cilium-always-slow-policy", SLOW_ROLLOUT, upgrade=True)
    o = release(result)
    assert o.outcome == "Stalled"
    assert o.conditions["Released"]["message"] == UPGRADE_FAILED + FAILED_EARLY
    logs = {
        e.data["line"] for e in events(result, "container-log") if e.obj.startswith(MIGRATE_POD)
    }
    assert "Error: dial tcp 10.96.0.1:443: i/o timeout" in logs
    _assert_dependents_blocked(result)


# --- issue 5: the post-upgrade-hook "fix" -------------------------------------------------------
def test_failed_post_upgrade_hook_still_fails_the_release(sim) -> None:
    result = sim(
        SEED1, "cilium-always", CI / "post-upgrade-hook-values.yaml", MIGRATE_FAILS, upgrade=True
    )
    o = release(result)
    assert o.outcome == "Stalled"
    hook_error = f"post-upgrade hooks failed: {FAILED_EARLY}"
    assert o.helm_status[1]["status"] == "failed"
    assert o.helm_status[1]["description"] == f'Upgrade "{MAIN}" failed: {hook_error}'
    assert o.conditions["Released"]["message"] == UPGRADE_FAILED + hook_error
    # the release's own resources were ready; it is the hook that failed it
    rev2 = [e for e in result.trace if e.obj == f"{MAIN_REF}.v2"]
    ready = next(e for e in rev2 if e.what == "wait-end")
    assert ready.data["error"] is None
    failed = events(result, "hook-failed", obj_prefix=f"Job/kagent/{MIGRATE_JOB}")
    assert failed and failed[0].data["event"] == "post-upgrade" and failed[0].time > ready.time
    _assert_dependents_blocked(result)


def test_failed_post_install_hook_fails_the_install(sim) -> None:
    o = release(sim(SEED1, "cilium-always", CI / "post-upgrade-hook-values.yaml", MIGRATE_FAILS))
    assert o.outcome == "Stalled"
    assert o.message == INSTALL_FAILED + f"failed post-install: {FAILED_EARLY}"


# --- the proposed fixes, per profile ---------------------------------------------------------
# Outcome of the connectivity HelmRelease and final kstatus of the migrate Job ("-" = no Job in
# the final release) for an upgrade from ci/previous-values.yaml with the agent-manager rollout
# slowed (tests/fixtures/e2e/seed1-slow-rollout-values.yaml).
FIX_MATRIX = {
    # variant: (cilium-always, cilium-default, cilium-always-slow-policy)
    "default": ("Ready", "Ready", "Stalled"),
    "cilium-flavour": ("Ready", "Ready", "Stalled"),
    # A NetworkPolicy ipBlock of the apiserver's node address does not match under Cilium
    # (nodes are selected by CIDR only with policyCIDRMatchMode: nodes; cilium/cilium
    # Documentation/security/policy/language.rst), so this flavour fails on both modes.
    "kubernetes-flavour": ("Stalled", "Stalled", "Stalled"),
    "init-wait": ("Ready", "Ready", "Ready"),
    # A pre-upgrade hook policy is created first but still needs its propagation time.
    "policy-hook": ("Ready", "Ready", "Stalled"),
    # As a hook the Job runs after the 3-minute rollout, when even the slow policy is in effect.
    "post-upgrade-hook": ("Ready", "Ready", "Ready"),
    "migration-disabled": ("Ready", "Ready", "Ready"),
}
PROFILES = ("cilium-always", "cilium-default", "cilium-always-slow-policy")


@pytest.mark.parametrize(
    ("variant", "profile", "expected"),
    [(v, p, exp[i]) for v, exp in FIX_MATRIX.items() for i, p in enumerate(PROFILES)],
)
def test_fix_variants_converge_where_expected(
    sim, variant: str, profile: str, expected: str
) -> None:
    result = sim(SEED1, profile, CI / f"{variant}-values.yaml", SLOW_ROLLOUT, upgrade=True)
    o = release(result)
    assert o.outcome == expected, o.message
    if expected == "Ready":
        assert o.attempts == 1
        assert (
            o.message == f"Helm upgrade succeeded for release {MAIN_REF}.v2 with chart {MAIN}@4.7.0"
        )
        job = object_status(result, "Job", MIGRATE_JOB)
        if variant == "migration-disabled":
            assert job is None
        elif variant == "post-upgrade-hook":
            assert job is not None and job["hook"] and job["status"] == "NotFound"  # hook-succeeded
        else:
            assert job is not None and job["status"] == "Current"  # Complete
    else:
        assert o.conditions["Released"]["message"] == UPGRADE_FAILED + FAILED_EARLY


def test_init_wait_lets_the_migrate_container_connect_on_its_first_attempt(sim) -> None:
    """The seed's acceptance criterion: the migrate Job reaches the apiserver on its first
    attempt under "always"; the init container absorbs the denied SYNs."""
    result = sim(SEED1, "cilium-always-race", CI / "init-wait-values.yaml")
    waits = _apiserver_attempts(result, "wait-for-apiserver")
    assert waits[0].what == "connect-denied"
    migrate = _apiserver_attempts(result)
    assert migrate[0].what == "connected" and migrate[0].data["attempt"] == 1
    assert migrate[0].time > waits[-1].time


def test_policy_hook_alone_does_not_avoid_the_denied_first_attempt(sim) -> None:
    """A hook policy is created before the Job, but a non-Job hook is ready at once, so the Job
    still starts inside the propagation window."""
    result = sim(SEED1, "cilium-always-race", CI / "policy-hook-values.yaml")
    assert _apiserver_attempts(result)[0].what == "connect-denied"
    created = next(e for e in events(result, "created") if e.obj == CNP)
    job_created = next(e for e in events(result, "created") if e.obj == f"Job/kagent/{MIGRATE_JOB}")
    assert created.time < job_created.time
