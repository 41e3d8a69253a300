"""Each scenario fault, on a tiny chart: what a user would see in the trace and the outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helmsim.errors import InputError
from helmsim.pytest_plugin import SimRun, simulate_chart

SEED1 = Path(__file__).parents[2] / "examples" / "seed1-migrate-race"

EBS_IMMEDIATE = {
    "extends": "eks-gp3",
    "storageClasses": [
        {"name": "io2", "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "Immediate", "default": True}
    ],
}
TWO_NODES = {
    "extends": "kind",
    "nodes": [{"name": "a", "internalIP": "172.18.0.2"}, {"name": "b", "internalIP": "172.18.0.3"}],
}


def events(run: SimRun, what: str, **data: Any) -> list[Any]:
    return [e for e in run.trace if e.what == what and all(e.data.get(k) == v for k, v in data.items())]


def test_container_exit_on_attempts_1_to_2_then_the_job_succeeds(mini: str) -> None:
    run = simulate_chart(
        mini,
        faults=[
            {
                "containerExit": {
                    "match": {"kind": "Job", "name": "*-migrate", "container": "migrate"},
                    "exitCode": 3,
                    "message": "Error: schema v2 is not served",
                    "attempts": {"from": 1, "to": 2},
                }
            }
        ],
    )
    exits = [e.data["exitCode"] for e in events(run, "container-exited", container="migrate")]
    assert exits == [3, 3, 0]
    logs = [e.message for e in events(run, "container-log") if "schema v2" in e.message]
    assert len(logs) == 2
    run.expect(object="Job/default/mini-migrate", status="Current", attempts=3)
    run.expect(release="mini", outcome="Ready")


def test_container_exit_on_every_attempt_fails_the_release(mini: str) -> None:
    run = simulate_chart(
        mini, faults=[{"containerExit": {"match": {"kind": "Job"}, "exitCode": 1}}]
    )
    run.expect(event="BackoffLimitExceeded", object="Job/default/mini-migrate", type="Warning")
    run.expect(release="mini", ready="False", messageContains="failed early due to stalled resources: [Job/default/mini-migrate status: 'Failed']")


def test_image_pull_fails_twice_then_pulls(mini: str) -> None:
    run = simulate_chart(
        mini,
        faults=[
            {
                "imagePull": {
                    "image": "example.com/migrate:*",
                    "error": "rpc error: code = NotFound desc = not found",
                    "attempts": {"to": 2},
                }
            }
        ],
    )
    failed = [e for e in events(run, "event", reason="Failed") if e.message.startswith("Failed to pull image")]
    assert [e.message for e in failed] == [
        'Failed to pull image "example.com/migrate:1.0": rpc error: code = NotFound desc = not found'
    ] * 2
    assert events(run, "event", reason="BackOff")
    run.expect(release="mini", outcome="Ready")


def test_slow_image_pull_delays_ready_only_for_the_matched_workload(mini: str) -> None:
    fault = {"imagePull": {"match": {"kind": "Deployment", "name": "mini-web"}, "delay": "100s"}}
    slow = simulate_chart(mini, faults=[fault])
    fast = simulate_chart(mini)
    assert slow.release().ready_at is not None and fast.release().ready_at is not None
    assert slow.release().ready_at >= fast.release().ready_at + 95
    pulled = [e for e in events(slow, "event", reason="Pulled") if "example.com/migrate" in e.message]
    assert pulled and pulled[0].time < 10  # the Job's image is not slowed


def test_apiserver_outage_fails_helm_creates_with_the_client_error(mini: str) -> None:
    run = simulate_chart(mini, faults=[{"apiserverOutage": {"from": 0, "to": "60s"}}])
    run.expect(
        release="mini",
        ready="False",
        messageContains='Post "https://10.96.0.1:443/apis/batch/v1/namespaces/default/jobs": dial tcp 10.96.0.1:443: connect: connection refused',
    )


def test_apiserver_outage_refuses_pod_connections_in_the_window(mini: str) -> None:
    run = simulate_chart(
        mini,
        values={"deploy": {"enabled": False}},
        faults=[{"apiserverOutage": {"from": "3s", "to": "300s"}}],
    )
    # the API server's port is closed: pods' clients get the same refusal Helm gets, at once
    refused = [e for e in events(run, "connect-refused") if "apiserverOutage" in e.message]
    assert refused and all(3 <= e.time < 300 for e in refused)
    assert all("dial tcp 10.96.0.1:443: connect: connection refused" in e.message for e in refused)
    run.expect(connection="kube-apiserver", from_="Job/default/mini-migrate", pod=1, result="failed")


def test_apiserver_outage_turns_helm_polls_unknown_and_holds_kubelet_status(mini: str) -> None:
    run = simulate_chart(
        mini,
        values={"deploy": {"enabled": False}},
        faults=[{"apiserverOutage": {"from": "3s", "to": "60s"}}],
    )
    # kstatus polling: a failed GET is Unknown with the client's error, until the outage ends
    unknown = [e for e in events(run, "poll", status="Unknown") if e.obj == "Job/default/mini-migrate"]
    assert unknown and all(3 <= e.time < 60 for e in unknown)
    assert 'Get "https://10.96.0.1:443/apis/batch/v1/namespaces/default/jobs/mini-migrate"' in unknown[0].message
    # the kubelet's status writes fail during the window and land after it (syncPeriod 10 s)
    held = [e for e in run.trace if e.actor == "kubelet" and e.what == "api-unreachable"]
    assert held and all(3 <= e.time < 60 for e in held)
    assert not [e for e in run.trace if e.actor == "kubelet" and e.what == "status" and 3 < e.time < 60]
    run.expect(release="mini", outcome="Ready")


def test_apiserver_outage_during_an_upgrade_fails_helms_get_before_the_patch(mini: str) -> None:
    run = simulate_chart(
        mini,
        upgrade_from={"chart": mini, "set": ["job.enabled=false"]},
        values={"job": {"enabled": False}, "deploy": {"replicas": 2}},
        faults=[{"apiserverOutage": {"from": 5.015, "to": "600s"}}],
    )
    run.expect(
        release="mini",
        ready="False",
        # helm/helm pkg/kube/client.go update: the GET before the patch fails first
        messageContains='could not get information about the resource: Get "https://10.96.0.1:443/apis/apps/v1/namespaces/default/deployments/mini-web": dial tcp 10.96.0.1:443: connect: connection refused',
    )


def test_provisioner_fails_twice_then_provisions(mini: str) -> None:
    run = simulate_chart(
        mini,
        profile=EBS_IMMEDIATE,
        values={"pvc": {"enabled": True}, "job": {"enabled": False}},
        faults=[{"provisioner": {"name": "ebs.csi.aws.com", "error": "could not create volume: UnauthorizedOperation", "attempts": {"to": 2}}}],
    )
    failed = events(run, "event", reason="ProvisioningFailed")
    assert [e.message for e in failed] == ["could not create volume: UnauthorizedOperation"] * 2
    run.expect(event="ProvisioningSucceeded", object="PersistentVolumeClaim/default/mini-data")
    run.expect(release="mini", outcome="Ready")


def test_slow_provisioner_times_the_release_out(mini: str) -> None:
    run = simulate_chart(
        mini,
        profile=EBS_IMMEDIATE,
        values={"pvc": {"enabled": True}, "job": {"enabled": False}},
        faults=[{"provisioner": {"delay": "400s"}}],
    )
    run.expect(
        release="mini",
        ready="False",
        messageContains="timeout waiting for: [PersistentVolumeClaim/default/mini-data status: 'InProgress']",
    )


def test_lost_node_pods_are_garbage_collected_and_replaced(mini: str) -> None:
    run = simulate_chart(
        mini,
        profile=TWO_NODES,
        values={"deploy": {"replicas": 2}, "job": {"enabled": False}},
        faults=[{"nodeLost": {"node": "b", "at": "3s"}}],
    )
    lost = [e.obj for e in events(run, "scheduled") if e.data.get("node") == "b"]
    assert lost
    gc = [e for e in run.trace if e.actor == "pod-garbage-collector" and e.what == "deleting"]
    # PodGC: 40 s quarantine, then the next 20 s tick (pkg/controller/podgc/gc_controller.go)
    assert {e.obj for e in gc} == set(lost) and all(e.time == 60.0 for e in gc)
    after = [e for e in events(run, "scheduled") if e.time > 3]
    assert after and all(e.data.get("node") == "a" for e in after)
    run.expect(release="mini", outcome="Ready")


def test_policy_propagation_delay_applies_to_matching_policies_only() -> None:
    run = simulate_chart(
        SEED1,
        profile="cilium-always",
        helmrelease=str(SEED1 / "flux" / "agent-platform-connectivity.yaml"),
        faults=[{"policyPropagation": {"policy": "CiliumNetworkPolicy/kagent/*-migrate", "delay": "5s"}}],
    )
    # cilium-always: propagation U(0.1 s, 2 s), nominal 1.05 s, plus the 5 s delay
    effect = [e for e in run.trace if e.what == "policy-in-effect"]
    assert len(effect) == 1 and effect[0].time == pytest.approx(0.08 + 1.05 + 5, abs=0.01)
    run.expect(connection="kube-apiserver", from_="Job/kagent/*-migrate-*", container="migrate", result="dropped")


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ({"nodeLost": {"node": "nope", "at": 1}}, "nodeLost: no node 'nope'"),
        ({"provisioner": {"name": "ebs.csi.aws.com", "delay": 1}}, "no provisioner matches 'ebs.csi.aws.com'"),
    ],
)
def test_faults_naming_missing_parts_of_the_profile_are_input_errors(mini: str, fault: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        simulate_chart(mini, faults=[fault])


def test_behaviour_override_by_workload_glob(mini: str) -> None:
    run = simulate_chart(
        mini, behaviours=[{"match": {"kind": "Deployment", "name": "mini-*"}, "runSeconds": 2, "exitCode": 1}]
    )
    web_exits = [e for e in events(run, "container-exited", container="web")]
    assert web_exits and all(e.data["exitCode"] == 1 for e in web_exits)
    job_exits = events(run, "container-exited", container="migrate")
    assert job_exits and job_exits[0].data["exitCode"] == 0
