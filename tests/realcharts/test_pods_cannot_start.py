"""Pods that cannot start (tests/realcharts/README.md: hook-sa-later, hook-configmap-later,
job-missing-secret, anti-affinity-one-node).

What real Helm v4, helm-controller, the API server, the kubelet and kube-scheduler do with a hook
whose ServiceAccount Helm creates after it, a hook reading a ConfigMap of the manifest, a Job
mounting a Secret nobody creates, and required anti-affinity on a one-node cluster; and what
``helmsim check`` names.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

from realcharts_helpers import simulate_chart

from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.cluster.profile import load_profile
from helmsim.kube.pods import kubectl_columns
from helmsim.release_inputs import build_inputs
from helmsim.simulate import SimulationResult

HERE = Path(__file__).parent


def _pods(result: SimulationResult, prefix: str) -> list[dict[str, Any]]:
    assert result.sim is not None
    return [p for p in result.sim.store.list("Pod") if p["metadata"]["name"].startswith(prefix)]


def _status(result: SimulationResult, pod: dict[str, Any]) -> tuple[str, str]:
    assert result.sim is not None
    cols = kubectl_columns(pod, result.sim.datetime())
    return cols.ready, cols.status


def _events(result: SimulationResult, obj_prefix: str, reason: str) -> list[Any]:
    return [
        e
        for e in result.trace
        if e.what == "event" and e.obj.startswith(obj_prefix) and e.data.get("reason") == reason
    ]


def _findings(chart: str, *sets: str) -> dict[str, str]:
    releases = build_inputs(
        str(HERE / chart),
        values=[],
        sets=list(sets),
        helmrelease=[],
        charts=[],
        release_name=None,
        namespace="default",
        upgrade_from=None,
        upgrade_from_values=[],
        upgrade_from_set=[],
    )
    report = run_check(releases, [load_profile("kind")], options=CheckOptions(verify_fixes=False))
    return {f.rule: f.worst.message for f in report.findings}


def test_hook_service_account_created_after_the_hook_times_out_pre_install() -> None:
    """helm/helm#12414: same weight, the Job's name sorts first; Helm waits for the Job before it
    creates the account, and the API server refuses every pod of the Job."""
    result = simulate_chart("hook-sa-later")
    (rel,) = result.releases
    assert rel.outcome == "Stalled"
    assert rel.message == (
        "Helm install failed for release default/webhook-certs with chart webhook-certs@0.3.0: "
        "failed pre-install: timeout waiting for: [Job/default/webhook-certs-admission-create "
        "status: 'InProgress']"
    )
    refused = _events(result, "Job/default/webhook-certs-admission-create", "FailedCreate")
    assert refused[0].message == (
        'Error creating: pods "webhook-certs-admission-create-" is forbidden: error looking up '
        'service account default/zz-certgen: serviceaccount "zz-certgen" not found'
    )
    # the Job controller's back-off: 1 s doubling to 60 s (job_controller.go DefaultJobApiBackOff)
    gaps = [round(b.time - a.time, 1) for a, b in pairwise(refused)][:7]
    assert gaps == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0]
    assert _pods(result, "webhook-certs-admission-create") == []
    assert "HS108" in _findings("hook-sa-later")


def test_hook_service_account_sorting_first_installs() -> None:
    result = simulate_chart("hook-sa-later", sets=("serviceAccountName=certgen",))
    assert [r.outcome for r in result.releases] == ["Ready"]


def test_hook_reading_a_configmap_of_the_manifest_times_out_pre_install() -> None:
    result = simulate_chart("hook-configmap-later")
    (rel,) = result.releases
    assert rel.outcome == "Stalled"
    assert rel.message.endswith(
        "failed pre-install: timeout waiting for: [Job/default/migrations-migrate status: 'InProgress']"
    )
    (pod,) = _pods(result, "migrations-migrate")
    assert pod["status"]["phase"] == "Pending"
    assert _status(result, pod) == ("0/1", "CreateContainerConfigError")
    failed = _events(result, f"Pod/default/{pod['metadata']['name']}", "Failed")
    assert failed[0].message == 'Error: configmap "migrations-env" not found'
    # retried every 10 s (kubelet.go backOffPeriod) until Helm gives up at 300 s
    assert [round(b.time - a.time, 1) for a, b in pairwise(failed)][:3] == [10.0, 10.0, 10.0]
    findings = _findings("hook-configmap-later")
    assert "HS107" in findings and "ConfigMap/default/migrations-env" in findings["HS107"]


def test_job_mounting_a_missing_secret_stays_container_creating() -> None:
    result = simulate_chart("job-missing-secret")
    (rel,) = result.releases
    assert rel.outcome == "Stalled"
    assert rel.message.endswith(
        "timeout waiting for: [Job/default/backup-backup status: 'InProgress']"
    )
    (pod,) = _pods(result, "backup-backup")
    assert _status(result, pod) == ("0/1", "ContainerCreating")
    assert "podIP" not in pod["status"]
    mounts = _events(result, f"Pod/default/{pod['metadata']['name']}", "FailedMount")
    assert (
        mounts[0].message
        == 'MountVolume.SetUp failed for volume "secrets" : secret "backup-credentials" not found'
    )
    # the volume reconciler's back-off: 0.5 s doubling (exponential_backoff.go)
    assert [round(b.time - a.time, 1) for a, b in pairwise(mounts)][:4] == [0.5, 1.0, 2.0, 4.0]
    finding = _findings("job-missing-secret")["HS114"]
    assert (
        "Secret/default/backup-credentials is missing" in finding and "ContainerCreating" in finding
    )


def test_required_anti_affinity_on_one_node_times_out_naming_the_workload() -> None:
    result = simulate_chart("anti-affinity-one-node")
    (rel,) = result.releases
    assert rel.outcome == "Stalled"
    assert rel.message == (
        "Helm install failed for release default/cache with chart cache@1.1.0: timeout waiting for: "
        "[Deployment/default/cache-cache status: 'InProgress']"
    )
    pods = _pods(result, "cache-cache")
    assert sorted(_status(result, p)[1] for p in pods) == ["Pending", "Pending", "Running"]
    pending = [p for p in pods if not p["spec"].get("nodeName")]
    cond = next(c for c in pending[0]["status"]["conditions"] if c["type"] == "PodScheduled")
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == (
        "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. preemption: 0/1 "
        "nodes are available: 1 No preemption victims found for incoming pod."
    )
    finding = _findings("anti-affinity-one-node")["HS115"]
    assert finding.startswith("Deployment/default/cache-cache: 2 pods never scheduled")


def test_an_ordered_statefulsets_next_pod_that_never_schedules_is_named() -> None:
    # OrderedReady: cache-cache-1 is created when cache-cache-0 is Ready, and never scheduled;
    # the finding names the StatefulSet (it was a bare HS100 before)
    findings = _findings("anti-affinity-one-node", "workload=StatefulSet")
    assert findings["HS115"].startswith("StatefulSet/default/cache-cache: 1 pod never scheduled (cache-cache-1)")
    assert "HS100" not in findings


def test_soft_anti_affinity_on_one_node_is_ready() -> None:
    result = simulate_chart("anti-affinity-one-node", sets=("podAntiAffinityPreset=soft",))
    assert [r.outcome for r in result.releases] == ["Ready"]


def test_hard_anti_affinity_on_three_zones_is_ready() -> None:
    result = simulate_chart("anti-affinity-one-node", "eks-gp3")
    assert [r.outcome for r in result.releases] == ["Ready"]
