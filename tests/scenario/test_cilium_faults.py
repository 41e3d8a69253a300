"""The Cilium model's faults and per-node agents on seed 1 under capa-cilium: what each does to
the migrate Job's dials to the API server (three tainted control-plane backends on 6443)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helmsim.pytest_plugin import SimRun, simulate_chart

ROOT = Path(__file__).parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
SLOW_ROLLOUT = ROOT / "tests" / "fixtures" / "e2e" / "seed1-slow-rollout-values.yaml"
MIGRATE = "Pod/kagent/agent-platform-connectivity-agent-manager-migrate-"
IO_TIMEOUT = "dial tcp 10.96.0.1:443: i/o timeout"
CP_IPS = {"10.0.1.20", "10.0.2.20", "10.0.3.20"}


def seed1(faults: list[dict[str, Any]] = (), profile: Any = "capa-cilium", **kw: Any) -> SimRun:  # type: ignore[assignment]
    return simulate_chart(
        SEED1,
        profile=profile,
        helmrelease=str(SEED1 / "flux" / "agent-platform-connectivity.yaml"),
        upgrade_from={"chart": str(SEED1), "valuesFiles": [str(SEED1 / "ci" / "previous-values.yaml")]},
        values_files=[SLOW_ROLLOUT],
        faults=list(faults),
        **kw,
    )


def dials(run: SimRun) -> list[Any]:
    """The migrate pods' dial outcomes towards the API server, in order."""
    return [
        e
        for e in run.trace
        if e.obj.startswith(MIGRATE)
        and e.what in ("connected", "connect-timeout")
        and e.data.get("target") == "kube-apiserver"
    ]


def first_drop(run: SimRun) -> str:
    return next(e.message for e in run.trace if e.what == "connect-denied" and e.obj.startswith(MIGRATE))


def failed_early(run: SimRun) -> bool:
    return any("failed early due to stalled resources: [Job/kagent/" in e.message for e in run.trace if e.what == "condition")


def test_without_faults_the_first_pod_reaches_a_control_plane_backend() -> None:
    run = seed1()
    assert [e.what for e in dials(run)] == ["connected"]
    # the pods land on workers (the control plane is tainted) and dial one backend on 6443
    scheduled = [e for e in run.trace if e.what == "scheduled" and e.obj.startswith(MIGRATE)]
    assert scheduled and all("-100." in e.message for e in scheduled)
    assert "via" not in dials(run)[0].message
    run.expect(release="agent-platform/agent-platform-connectivity", outcome="Ready")


def test_an_agent_stall_longer_than_the_job_fails_all_three_pods() -> None:
    run = seed1([{"agentStall": {"node": "*", "from": 0, "to": 300}}])
    got = dials(run)
    assert [e.what for e in got[:3]] == ["connect-timeout"] * 3
    assert {e.data["error"] for e in got[:3]} == {IO_TIMEOUT}
    assert failed_early(run)
    stall = [e for e in run.trace if e.what == "fault" and "agentStall" in e.message]
    assert any("is enforced there only at t=300s" in e.message for e in stall)
    # nothing of the policy is enforced anywhere before the stall ends
    effect = [e for e in run.trace if e.what == "policy-in-effect" and "migrate" in e.obj]
    assert all(e.time >= 300 for e in effect)


def test_a_short_agent_stall_fails_only_the_first_pod() -> None:
    run = seed1([{"agentStall": {"node": "*", "from": 0, "to": 60}}])
    assert [e.what for e in dials(run)][:2] == ["connect-timeout", "connected"]
    assert not failed_early(run)


def test_a_stall_on_one_node_keeps_the_policy_from_that_node_only() -> None:
    node = "ip-10-0-1-100.eu-west-1.compute.internal"
    run = seed1([{"agentStall": {"node": node, "from": 0, "to": 100}}])
    effect = [e for e in run.trace if e.what == "policy-in-effect" and e.obj.endswith("-migrate")]
    first = effect[0]
    assert node not in first.data["nodes"] and len(first.data["nodes"]) == 5
    # the stalled agent enforces it when the stall ends, on its node alone
    assert effect[1].data["nodes"] == [node] and effect[1].time == pytest.approx(100.0)


def test_the_kube_apiserver_label_missing_on_every_backend_drops_every_dial() -> None:
    run = seed1([{"apiserverIdentity": {"backends": "all"}}])
    assert [e.what for e in dials(run)[:3]] == ["connect-timeout"] * 3
    assert "without the kube-apiserver identity label" in first_drop(run)
    assert failed_early(run)


def test_the_label_missing_on_one_backend_fails_only_the_dials_that_land_there() -> None:
    run = seed1([{"apiserverIdentity": {"backends": 1}}])
    outcomes = [e.what for e in dials(run)]
    assert outcomes[0] == "connect-timeout" and "connected" in outcomes
    assert not failed_early(run)


def test_the_label_window_ends() -> None:
    run = seed1([{"apiserverIdentity": {"backends": "all", "from": 0, "to": 40}}])
    assert [e.what for e in dials(run)][:2] == ["connect-timeout", "connected"]


def test_an_endpoint_that_never_leaves_reserved_init_drops_everything() -> None:
    run = seed1([{"endpointInit": {"match": {"kind": "Job", "name": "*-migrate-*"}}}])
    assert [e.what for e in dials(run)[:3]] == ["connect-timeout"] * 3
    assert "reserved:init identity (identity 5; never gets its own)" in first_drop(run)


def test_an_endpoint_stuck_on_init_for_a_while_fails_only_its_attempt() -> None:
    run = seed1([{"endpointInit": {"match": {"kind": "Job", "name": "*-migrate-*"}, "seconds": 60, "attempts": {"to": 1}}}])
    assert [e.what for e in dials(run)][:2] == ["connect-timeout", "connected"]


def test_the_label_filter_dropping_the_selected_label_leaves_the_pods_unselected() -> None:
    profile = {"extends": "capa-cilium", "name": "filtered", "cni": {"identityLabels": ["k8s:!app.kubernetes.io/component"]}}
    run = seed1(profile=profile)
    assert [e.what for e in dials(run)[:3]] == ["connect-timeout"] * 3
    assert "policyEnforcementMode=always and no policy allows it" in first_drop(run)


def test_identity_allocation_delays_the_start_instead_of_dropping_packets() -> None:
    profile = {"extends": "capa-cilium", "name": "slow-ids", "cni": {"identityAllocationSeconds": "20s"}}
    run = seed1(profile=profile)
    pending = [e for e in run.trace if e.what == "identity-pending" and e.obj.startswith(MIGRATE)]
    assert pending and "resolves its security identity (blocking) for 20s" in pending[0].message
    ready = next(e for e in run.trace if e.what == "endpoint-ready" and e.obj.startswith(MIGRATE))
    assert ready.time == pytest.approx(pending[0].time + 20 + 0.85, abs=0.01)
    assert not any("reserved:init" in e.message for e in run.trace if e.what == "connect-denied")


def test_monte_carlo_draws_a_propagation_per_node_agent() -> None:
    run = seed1(sample_latencies=True, seed=7)
    effect = [e for e in run.trace if e.what == "policy-in-effect" and e.obj.endswith("-migrate")]
    assert len(effect) == 6  # six agents, six draws
    assert sorted(n for e in effect for n in e.data["nodes"]) == sorted(
        n for n in {n for e in effect for n in e.data["nodes"]}
    )


def test_without_the_l7_proxy_to_fqdns_rules_never_learn_an_address() -> None:
    def fqdn_dials(run: SimRun) -> list[str]:
        return [
            e.what
            for e in run.trace
            if e.obj.startswith(MIGRATE) and e.data.get("target") == "api.github.com:443" and e.what in ("connected", "connect-denied")
        ]

    assert fqdn_dials(seed1())[:1] == ["connected"]
    # cilium --enable-l7-proxy=false: no DNS proxy, so the toFQDNs rule of the migrate policy
    # matches nothing and the dial to api.github.com is dropped
    profile = {"extends": "capa-cilium", "name": "no-l7", "cni": {"enableL7Proxy": False}}
    assert fqdn_dials(seed1(profile=profile))[:1] == ["connect-denied"]


def test_a_dns_proxy_that_is_not_ready_drops_the_lookups_it_would_answer() -> None:
    run = seed1([{"dnsProxy": {"node": "*", "from": 0, "to": 600}}])
    # the API server is dialled by IP and still connects; the lookup of api.github.com, which the
    # migrate policy's rules.dns sends through the proxy, times out
    assert [e.what for e in dials(run)][:1] == ["connected"]
    lookups = [e for e in run.trace if e.obj.startswith(MIGRATE) and e.what == "connect-denied" and e.data.get("lookup") == "api.github.com"]
    assert lookups and "the cilium DNS proxy on ip-10-0-" in lookups[0].data["reason"]
