"""Pod admission (ServiceAccount, Priority) and the controllers that meet its refusals.

Texts: plugin/pkg/admission/serviceaccount/admission.go, plugin/pkg/admission/priority/admission.go,
pkg/controller/controller_utils.go (FailedCreate "Error creating: …"), stateful_pod_control.go.
Retry timings: job_controller.go DefaultJobApiBackOff/MaxJobApiBackOff (1 s → 60 s), client-go
DefaultTypedControllerRateLimiter (5 ms → 1000 s) for ReplicaSet, StatefulSet and DaemonSet.
"""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.cluster.admission import admit
from helmsim.cluster.cluster import build_cluster
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile
from helmsim.cluster.store import ApiError

SA_TEXT = 'error looking up service account app/setup: serviceaccount "setup" not found'


def _cluster() -> Simulation:
    return build_cluster(load_profile("kind"), namespaces=["app"])


def _pod_spec(**extra: Any) -> dict[str, Any]:
    return {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox:1.36"}],
        **extra,
    }


def _pod(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "app"},
        "spec": _pod_spec(**spec),
    }


def _sa(sim: Simulation, name: str = "setup") -> None:
    sim.store.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "app"}},
        actor="helm",
    )


def _events(sim: Simulation, obj: str, reason: str) -> list[tuple[float, str]]:
    return [
        (round(e.time, 3), e.message)
        for e in sim.trace
        if e.what == "event" and e.obj == obj and e.data.get("reason") == reason
    ]


# --- ServiceAccount admission ---------------------------------------------------------------------


def test_missing_service_account_is_forbidden_with_the_api_servers_text() -> None:
    sim = _cluster()
    with pytest.raises(ApiError) as err:
        admit(sim, _pod(serviceAccountName="setup"))
    assert err.value.reason == "Forbidden"
    assert err.value.message == f'pods "web" is forbidden: {SA_TEXT}'


def test_generated_names_show_the_prefix_in_the_refusal() -> None:
    sim = _cluster()
    pod = _pod("job-abcde", serviceAccountName="setup")
    pod["metadata"]["generateName"] = "job-"
    with pytest.raises(ApiError) as err:
        admit(sim, pod)
    assert err.value.message.startswith('pods "job-" is forbidden: ')


def test_deprecated_service_account_field_is_checked_too() -> None:
    sim = _cluster()
    with pytest.raises(ApiError) as err:
        admit(sim, _pod(serviceAccount="setup"))
    assert SA_TEXT in err.value.message


def test_default_service_account_is_filled_in_and_accepted() -> None:
    sim = _cluster()
    admitted = admit(sim, _pod())
    assert admitted["spec"]["serviceAccountName"] == "default"
    assert admitted["spec"]["priority"] == 0


def test_existing_service_account_admits_the_pod() -> None:
    sim = _cluster()
    _sa(sim)
    assert admit(sim, _pod(serviceAccountName="setup"))["spec"]["serviceAccountName"] == "setup"


def test_every_namespace_gets_default_account_and_root_ca_after_one_sync() -> None:
    sim = _cluster()
    assert sim.store.get("ServiceAccount", "app", "default") is not None
    assert sim.store.get("ConfigMap", "kube-system", "kube-root-ca.crt") is not None
    sim.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "late"}}, actor="helm")
    assert sim.store.get("ServiceAccount", "late", "default") is None
    sim.run(0.051)  # controller_sync (50 ms) later
    assert sim.store.get("ServiceAccount", "late", "default") is not None
    assert "ca.crt" in sim.store.get("ConfigMap", "late", "kube-root-ca.crt")["data"]
    sim.store.delete("ServiceAccount", "late", "default", actor="user")
    sim.run(0.2)
    assert sim.store.get("ServiceAccount", "late", "default") is not None


# --- Priority admission ---------------------------------------------------------------------------


def test_missing_priority_class_is_forbidden() -> None:
    sim = _cluster()
    with pytest.raises(ApiError) as err:
        admit(sim, _pod(priorityClassName="high"))
    assert err.value.message == 'pods "web" is forbidden: no PriorityClass with name high was found'


def test_priority_comes_from_the_class_and_the_system_classes_exist() -> None:
    sim = _cluster()
    assert admit(sim, _pod(priorityClassName="system-node-critical"))["spec"]["priority"] == 2000001000
    sim.store.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "batch"},
            "value": 100,
            "globalDefault": True,
            "preemptionPolicy": "Never",
        },
        actor="helm",
    )
    spec = admit(sim, _pod())["spec"]
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == ("batch", 100, "Never")


def test_service_account_is_checked_before_the_priority_class() -> None:
    sim = _cluster()
    with pytest.raises(ApiError) as err:
        admit(sim, _pod(serviceAccountName="setup", priorityClassName="high"))
    assert SA_TEXT in err.value.message


def test_mirror_pods_skip_both_plugins() -> None:
    sim = _cluster()
    pod = _pod(serviceAccountName="setup", priorityClassName="high")
    pod["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    assert admit(sim, pod)["spec"]["serviceAccountName"] == "setup"


# --- controllers seeing FailedCreate ----------------------------------------------------------------


def _job(sa: str = "setup") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "setup", "namespace": "app"},
        "spec": {"backoffLimit": 0, "template": {"spec": _pod_spec(serviceAccountName=sa)}},
    }


def test_job_retries_a_refused_pod_with_the_job_api_backoff_until_the_account_exists() -> None:
    sim = _cluster()
    sim.store.create(_job(), actor="helm")
    sim.after(20, _sa, sim)
    sim.run(60)
    failed = _events(sim, "Job/app/setup", "FailedCreate")
    # first sync after controller_sync (0.05 s), then 1, 2, 4, 8 s later (DefaultJobApiBackOff)
    assert [t for t, _ in failed] == [0.05, 1.05, 3.05, 7.05, 15.05]
    assert {m for _, m in failed} == {f'Error creating: pods "setup-" is forbidden: {SA_TEXT}'}
    created = _events(sim, "Job/app/setup", "SuccessfulCreate")
    assert [t for t, _ in created] == [31.05]  # the next back-off step (16 s) after the account appeared
    assert _events(sim, "Job/app/setup", "Completed")


def test_job_backoff_is_capped_at_sixty_seconds() -> None:
    sim = _cluster()
    sim.store.create(_job(), actor="helm")
    sim.run(400)
    times = [t for t, _ in _events(sim, "Job/app/setup", "FailedCreate")]
    gaps = [round(b - a, 3) for a, b in zip(times, times[1:], strict=False)]
    assert gaps[:7] == [1, 2, 4, 8, 16, 32, 60]
    assert set(gaps[6:]) == {60}
    assert sim.store.get("Job", "app", "setup")["status"]["active"] == 0


def _workload(kind: str, api: str = "apps/v1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "web", "namespace": "app"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "serviceAccountName": "setup",
                    "containers": [{"name": "c", "image": "nginx:1.27"}],
                },
            },
            **spec,
        },
    }


def test_replicaset_retries_with_the_default_controller_rate_limiter() -> None:
    sim = _cluster()
    sim.store.create(_workload("ReplicaSet", replicas=1), actor="helm")
    sim.run(1.0)
    times = [t for t, _ in _events(sim, "ReplicaSet/app/web", "FailedCreate")]
    gaps = [round(b - a, 3) for a, b in zip(times, times[1:], strict=False)]
    assert gaps[:6] == [0.005, 0.01, 0.02, 0.04, 0.08, 0.16]  # 5 ms doubling
    rs = sim.store.get("ReplicaSet", "app", "web")
    cond = next(c for c in rs["status"]["conditions"] if c["type"] == "ReplicaFailure")
    assert (cond["reason"], cond["message"]) == (
        "FailedCreate",
        f'pods "web-" is forbidden: {SA_TEXT}',
    )
    _sa(sim)
    sim.run(30)
    rs = sim.store.get("ReplicaSet", "app", "web")
    assert rs["status"]["readyReplicas"] == 1
    assert not [c for c in rs["status"].get("conditions") or () if c["type"] == "ReplicaFailure"]


def test_statefulset_event_names_the_ordinal_pod() -> None:
    sim = _cluster()
    sim.store.create(_workload("StatefulSet", replicas=1, serviceName="web"), actor="helm")
    sim.run(0.5)
    failed = _events(sim, "StatefulSet/app/web", "FailedCreate")
    assert failed[0][1] == (
        f'create Pod web-0 in StatefulSet web failed error: pods "web-0" is forbidden: {SA_TEXT}'
    )
    assert len(failed) > 3  # re-queued rate-limited, not given up
    _sa(sim)
    sim.run(30)
    assert sim.store.get("Pod", "app", "web-0") is not None


def test_daemonset_reports_failed_create_and_recovers() -> None:
    sim = _cluster()
    sim.store.create(_workload("DaemonSet"), actor="helm")
    sim.run(0.5)
    failed = _events(sim, "DaemonSet/app/web", "FailedCreate")
    assert failed and failed[0][1] == f'Error creating: pods "web-" is forbidden: {SA_TEXT}'
    _sa(sim)
    sim.run(30)
    assert sim.store.get("DaemonSet", "app", "web")["status"]["numberReady"] == 1
