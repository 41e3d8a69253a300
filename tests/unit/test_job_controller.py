"""The Job and TTL-after-finished controllers, driven by a fake kubelet (no real kubelet needed).

The fake kubelet reads two annotations on the pod template: ``test/run`` (seconds until the pod
finishes; absent: runs forever) and ``test/exit`` (exit code, default 0). With
``test/restarts`` it instead stays Running and bumps restartCount every ``test/run`` seconds
(restartPolicy OnFailure).
"""

from __future__ import annotations

import random
from itertools import pairwise
from types import SimpleNamespace
from typing import Any

import pytest

from helmsim import kstatus
from helmsim.cluster.controllers.job import JobController, TTLAfterFinishedController
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile


class _Fixed:
    def __init__(self, v: float) -> None:
        self.v = v

    def nominal(self) -> float:
        return self.v

    def sample(self, rng: random.Random) -> float:
        return self.v


def zero_latency_sim(cap: float = 600.0) -> Simulation:
    lat = SimpleNamespace(controller_sync=_Fixed(0.0), api_write=_Fixed(0.0))
    profile = SimpleNamespace(
        latencies=lat, job_backoff_cap_seconds=cap, job_backoff_initial_seconds=10.0
    )
    return Simulation(profile)  # type: ignore[arg-type]


class FakeKubelet:
    """Moves pods through Running to Succeeded/Failed as their template annotations say."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.created: list[tuple[float, str]] = []
        sim.store.watch(["Pod"], self._on_pod)

    def _on_pod(self, event: str, pod: dict[str, Any]) -> None:
        if event != "ADDED":
            return
        meta = pod["metadata"]
        self.created.append((self.sim.now, meta["name"]))
        ann = meta.get("annotations") or {}
        ns, name = meta["namespace"], meta["name"]
        self._set(ns, name, "Running", [self._cs(running=True)], ready=True)
        if "test/run" not in ann:
            return
        run = float(ann["test/run"])
        if "test/restarts" in ann:
            for i in range(1, 50):
                self.sim.after(run * i, self._restart, ns, name, i)
            return
        self.sim.after(run, self._finish, ns, name, int(ann.get("test/exit", "0")))

    def _cs(
        self, *, running: bool = False, code: int | None = None, restarts: int = 0
    ) -> dict[str, Any]:
        ts = self.sim.timestamp()
        state = (
            {"running": {"startedAt": ts}}
            if running
            else {
                "terminated": {
                    "exitCode": code,
                    "reason": "Completed" if code == 0 else "Error",
                    "finishedAt": ts,
                }
            }
        )
        return {"name": "main", "ready": running, "restartCount": restarts, "state": state}

    def _set(
        self, ns: str, name: str, phase: str, statuses: list[dict[str, Any]], *, ready: bool
    ) -> None:
        pod = self.sim.store.get("Pod", ns, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        cond = {
            "type": "Ready",
            "status": "True" if ready else "False",
            "lastTransitionTime": self.sim.timestamp(),
        }
        self.sim.store.update_status(
            "Pod",
            ns,
            name,
            {
                "phase": phase,
                "podIP": "10.244.0.5",
                "conditions": [cond],
                "containerStatuses": statuses,
            },
            actor="kubelet",
            message=f"Pod/{ns}/{name} {phase}",
        )

    def _finish(self, ns: str, name: str, code: int) -> None:
        self._set(
            ns, name, "Succeeded" if code == 0 else "Failed", [self._cs(code=code)], ready=False
        )

    def _restart(self, ns: str, name: str, n: int) -> None:
        self._set(ns, name, "Running", [self._cs(running=True, restarts=n)], ready=True)


def job(
    name: str = "migrate",
    *,
    run: float | None = 32,
    exit_code: int = 1,
    restart: str = "Never",
    **spec: Any,
) -> dict[str, Any]:
    ann: dict[str, str] = {}
    if run is not None:
        ann["test/run"] = str(run)
        ann["test/exit"] = str(exit_code)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            **spec,
            "template": {
                "metadata": {"annotations": ann},
                "spec": {"restartPolicy": restart, "containers": [{"name": "main", "image": "x"}]},
            },
        },
    }


def events(sim: Simulation, obj: str) -> list[tuple[float, str, str, str]]:
    return [
        (e.time, e.data["type"], e.data["reason"], e.message)
        for e in sim.trace.find(what="event", obj=obj)
    ]


def condition_times(sim: Simulation, obj: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for e in sim.trace.find(what="status", obj=obj):
        for c in ("FailureTarget", "Failed", "SuccessCriteriaMet", "Complete"):
            if f"; {c}=True" in e.message:
                out.setdefault(c, e.time)
    return out


# --- the done-when -----------------------------------------------------------------------


def test_backoff_limit_2_pod_fails_after_32s_exact_times() -> None:
    """Issue 4: pods at 0, 42, 94 s; Failed (BackoffLimitExceeded) at ≈126 s.

    With zero controller latency the third failure (126 s) is seen at the next batched sync,
    126 + syncJobBatchPeriod (1 s) = 127 s, where FailureTarget and then Failed are written."""
    sim = zero_latency_sim()
    kubelet = FakeKubelet(sim)
    JobController(sim)
    sim.store.create(job(backoffLimit=2), actor="helm")
    sim.run(until=400)
    assert [t for t, _ in kubelet.created] == [0, 42, 94]
    assert condition_times(sim, "Job/ns/migrate") == {"FailureTarget": 127.0, "Failed": 127.0}
    live = sim.store.get("Job", "ns", "migrate")
    assert live is not None
    conds = live["status"]["conditions"]
    assert [(c["type"], c["reason"], c["message"]) for c in conds] == [
        ("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ]
    assert live["status"]["failed"] == 3 and live["status"]["active"] == 0
    evs = events(sim, "Job/ns/migrate")
    assert [e[2] for e in evs] == ["SuccessfulCreate"] * 3 + ["BackoffLimitExceeded"]
    assert evs[0][3] == f"Created pod: {kubelet.created[0][1]}"
    assert evs[-1] == (
        127.0,
        "Warning",
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    )
    result = kstatus.compute(live)
    assert result.status == kstatus.Status.FAILED and result.message == "Job Failed. failed: 3/1"
    # the Warning event's causal chain reaches back to the pod failure that triggered it
    chain = sim.trace.chain(sim.trace.find(what="event", reason="BackoffLimitExceeded")[0].id)
    assert any(e.actor == "kubelet" and "Failed" in e.message for e in chain)


def test_backoff_limit_2_with_sampled_kind_latencies() -> None:
    sim = Simulation(load_profile("kind"), seed=7, sample_latencies=True)
    kubelet = FakeKubelet(sim)
    JobController(sim)
    sim.store.create(job(backoffLimit=2), actor="helm")
    sim.run(until=400)
    times = [t for t, _ in kubelet.created]
    assert times == pytest.approx([0, 42, 94], abs=0.5)
    failed_at = condition_times(sim, "Job/ns/migrate")["Failed"]
    assert 126 < failed_at < 128


def test_pod_names_and_labels() -> None:
    sim = zero_latency_sim()
    FakeKubelet(sim)
    JobController(sim)
    j = sim.store.create(job(run=None), actor="helm")
    sim.run(until=1)
    (pod,) = sim.store.list("Pod", "ns")
    name = pod["metadata"]["name"]
    assert name.startswith("migrate-") and len(name) == len("migrate-") + 5
    assert pod["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": j["metadata"]["uid"],
        "batch.kubernetes.io/job-name": "migrate",
        "controller-uid": j["metadata"]["uid"],
        "job-name": "migrate",
    }
    assert pod["metadata"]["ownerReferences"][0]["uid"] == j["metadata"]["uid"]
    status = sim.store.get("Job", "ns", "migrate")["status"]  # type: ignore[index]
    assert status["startTime"] == "2026-01-01T00:00:00.000Z" and status["active"] == 1
    assert kstatus.compute(sim.store.get("Job", "ns", "migrate")).status == kstatus.Status.CURRENT  # type: ignore[arg-type]


@pytest.mark.parametrize(("cap", "gap"), [(600.0, 600.0), (360.0, 360.0)])
def test_backoff_cap_from_profile(cap: float, gap: float) -> None:
    """The 7th delay (10·2⁶ = 640 s) is capped: 600 s current, 360 s older controllers."""
    sim = zero_latency_sim(cap)
    kubelet = FakeKubelet(sim)
    JobController(sim)
    sim.store.create(job(run=1, backoffLimit=7), actor="helm")
    sim.run(until=3000)
    times = [t for t, _ in kubelet.created]
    assert len(times) == 8
    assert [b - (a + 1) for a, b in pairwise(times)] == [10, 20, 40, 80, 160, 320, gap]


def test_completions_success_conditions_and_events() -> None:
    sim = zero_latency_sim()
    kubelet = FakeKubelet(sim)
    JobController(sim)
    sim.store.create(job(run=5, exit_code=0, completions=2), actor="helm")
    sim.run(until=60)
    assert [t for t, _ in kubelet.created] == [0, 6]  # next pod at the batched sync after success
    live = sim.store.get("Job", "ns", "migrate")
    assert live is not None
    assert [(c["type"], c["reason"]) for c in live["status"]["conditions"]] == [
        ("SuccessCriteriaMet", "CompletionsReached"),
        ("Complete", "CompletionsReached"),
    ]
    assert live["status"]["conditions"][1]["message"] == "Reached expected number of succeeded pods"
    assert live["status"]["completionTime"] == "2026-01-01T00:00:12.000Z"
    assert events(sim, "Job/ns/migrate")[-1] == (12.0, "Normal", "Completed", "Job completed")
    assert kstatus.compute(live).message == "Job Completed. succeeded: 2/2"


def test_active_deadline_deletes_pod_then_fails_after_termination() -> None:
    sim = zero_latency_sim()
    FakeKubelet(sim)
    JobController(sim)
    sim.store.create(job(run=None, activeDeadlineSeconds=30), actor="helm")
    sim.run(until=100)
    times = condition_times(sim, "Job/ns/migrate")
    # FailureTarget when the deadline passes; Failed once the deleted pod is gone (grace 1 s) + batch 1 s
    assert times == {"FailureTarget": 30.0, "Failed": 32.0}
    live = sim.store.get("Job", "ns", "migrate")
    assert live is not None and live["status"]["failed"] == 1
    assert live["status"]["conditions"][-1]["reason"] == "DeadlineExceeded"
    assert (
        live["status"]["conditions"][-1]["message"]
        == "Job was active longer than specified deadline"
    )
    reasons = [e[2] for e in events(sim, "Job/ns/migrate")]
    assert reasons == ["SuccessfulCreate", "SuccessfulDelete", "DeadlineExceeded"]
    assert sim.store.list("Pod", "ns") == []


def test_on_failure_restart_counts_reach_backoff_limit() -> None:
    sim = zero_latency_sim()
    kubelet = FakeKubelet(sim)
    JobController(sim)
    j = job(run=10, restart="OnFailure", backoffLimit=2)
    j["spec"]["template"]["metadata"]["annotations"]["test/restarts"] = "yes"
    sim.store.create(j, actor="helm")
    sim.run(until=200)
    assert len(kubelet.created) == 1  # OnFailure restarts in place; no replacement pods
    times = condition_times(sim, "Job/ns/migrate")
    assert (
        times["FailureTarget"] == 21.0
    )  # 2nd restart at 20 s ≥ backoffLimit 2, seen at the batched sync
    live = sim.store.get("Job", "ns", "migrate")
    assert live is not None and live["status"]["conditions"][-1]["type"] == "Failed"
    assert live["status"]["conditions"][-1]["reason"] == "BackoffLimitExceeded"


def test_pod_failure_policy_fail_job() -> None:
    sim = zero_latency_sim()
    FakeKubelet(sim)
    JobController(sim)
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}
    sim.store.create(job(run=5, exit_code=42, podFailurePolicy=policy), actor="helm")
    sim.run(until=60)
    live = sim.store.get("Job", "ns", "migrate")
    assert live is not None
    pod_name = sim.store.list("Pod", "ns")[0]["metadata"]["name"]
    ft, failed = live["status"]["conditions"]
    assert (ft["type"], ft["reason"]) == ("FailureTarget", "PodFailurePolicy")
    assert (
        ft["message"]
        == f"Container main for pod ns/{pod_name} failed with exit code 42 matching FailJob rule at index 0"
    )
    assert (failed["type"], failed["message"]) == ("Failed", ft["message"])


def test_pod_failure_policy_ignore_does_not_count() -> None:
    sim = zero_latency_sim()
    kubelet = FakeKubelet(sim)
    JobController(sim)
    policy = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}]}
    sim.store.create(job(run=5, exit_code=3, backoffLimit=0, podFailurePolicy=policy), actor="helm")
    sim.run(until=40)
    live = sim.store.get("Job", "ns", "migrate")
    assert live is not None and int(live["status"].get("failed") or 0) == 0
    assert not any(c["type"] == "Failed" for c in live["status"]["conditions"])
    assert len(kubelet.created) >= 2  # replaced (after the pod-failure backoff), never failed


def test_ttl_after_finished_deletes_job_and_pods() -> None:
    sim = zero_latency_sim()
    FakeKubelet(sim)
    JobController(sim)
    TTLAfterFinishedController(sim)
    sim.store.create(job(run=5, exit_code=0, ttlSecondsAfterFinished=10), actor="helm")
    sim.run(until=15.5)
    assert sim.store.get("Job", "ns", "migrate") is not None
    sim.run(until=17)
    assert sim.store.get("Job", "ns", "migrate") is None  # Complete at 6 s + 10 s
    (expired,) = sim.trace.find(what="ttl-expired")
    assert expired.time == 16.0 and expired.actor == "ttl-after-finished-controller"
    sim.run(until=20)
    assert sim.store.list("Pod", "ns") == []


def test_suspended_job_creates_nothing_until_resumed() -> None:
    sim = zero_latency_sim()
    kubelet = FakeKubelet(sim)
    JobController(sim)
    sim.store.create(job(run=None, suspend=True), actor="helm")
    sim.run(until=10)
    live = sim.store.get("Job", "ns", "migrate")
    assert live is not None and kubelet.created == [] and "startTime" not in live["status"]
    assert live["status"]["conditions"][0]["reason"] == "JobSuspended"
    assert kstatus.compute(live).message == "Job not started"
    resumed = job(run=None, suspend=False)
    sim.store.apply(resumed, actor="helm")
    sim.run(until=20)
    assert [t for t, _ in kubelet.created] == [10]
    reasons = [e[2] for e in events(sim, "Job/ns/migrate")]
    assert reasons == ["Suspended", "SuccessfulCreate", "Resumed"]
