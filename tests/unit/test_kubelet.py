"""The kubelet: event sequences and times of pod lifecycles under the real `kind` profile.

kind's nominal latencies: scheduling 0.1 s, image pull 3 s (lognormal median), container start
0.5 s, no endpoint regeneration. A pod created at 0 is bound at 0.1 and its first container
starts at 3.6.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from helmsim.cluster.behaviour import BehaviourOverride
from helmsim.cluster.controllers.kubelet import Kubelet, default_pull_policy, get_phase
from helmsim.cluster.controllers.scheduler import Scheduler
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile
from helmsim.kstatus import compute


def _sim(profile: str = "kind") -> Simulation:
    sim = Simulation(load_profile(profile))
    Scheduler(sim)
    Kubelet(sim)
    return sim


def _pod(policy: str = "Never", ann: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", [{"name": "app", "image": "app:1.0"}])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "annotations": ann or {}},
        "spec": {"restartPolicy": policy, "containers": containers, **spec},
    }


def _events(sim: Simulation, reason: str | None = None) -> list[tuple[float, str, str]]:
    return [
        (round(e.time, 3), e.data["reason"], e.message)
        for e in sim.trace.find(what="event", reason=reason)
        if e.obj == "Pod/ns/p"
    ]


def _status(sim: Simulation) -> dict[str, Any]:
    return sim.store.get("Pod", "ns", "p")["status"]  # type: ignore[index]


def test_never_pod_forced_to_exit_1_after_32s() -> None:
    sim = _sim()
    sim.store.create(
        _pod(ann={"helmsim.dev/run-seconds": "32", "helmsim.dev/exit-code": "1"}), actor="helm"
    )
    sim.run(until=100)
    assert _events(sim) == [
        (0.1, "Scheduled", "Successfully assigned ns/p to kind-control-plane"),
        (0.1, "Pulling", 'Pulling image "app:1.0"'),
        (3.1, "Pulled", 'Successfully pulled image "app:1.0" in 3s (3s including waiting)'),
        (3.6, "Created", "Created container app"),
        (3.6, "Started", "Started container app"),
    ]
    phases = [
        (round(e.time, 3), e.message) for e in sim.trace.find(what="status") if "phase" in e.message
    ]
    assert phases == [
        (3.6, "Pod/ns/p phase Pending -> Running (container app started)"),
        (35.6, "Pod/ns/p phase Running -> Failed (container app exited with code 1)"),
    ]
    st = _status(sim)
    term = st["containerStatuses"][0]["state"]["terminated"]
    assert term == {
        "exitCode": 1,
        "reason": "Error",
        "startedAt": "2026-01-01T00:00:03.600Z",
        "finishedAt": "2026-01-01T00:00:35.600Z",
        "containerID": term["containerID"],
    }
    assert st["containerStatuses"][0]["restartCount"] == 0
    assert {c["type"]: c["status"] for c in st["conditions"]} == {
        "PodScheduled": "True",
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "ContainersReady": "False",
        "Ready": "False",
    }
    assert compute(sim.store.get("Pod", "ns", "p")).status.value == "Current"  # Failed is final


def test_on_failure_crash_loop_backoff_doubles() -> None:
    sim = _sim()
    ann = {"helmsim.dev/run-seconds": "1", "helmsim.dev/exit-code": "1"}
    sim.store.create(_pod("OnFailure", ann), actor="helm")
    sim.run(until=150)
    started = [t for t, _, _ in _events(sim, "Started")]
    # exits at start + 1 s; first restart immediate (no back-off entry yet), then 10, 20, 40 s
    assert started == [3.6, 5.1, 16.6, 38.1, 79.6]
    backoffs = [(t, m) for t, _, m in _events(sim, "BackOff")]
    uid = sim.store.get("Pod", "ns", "p")["metadata"]["uid"]
    assert backoffs[0] == (6.1, f"Back-off restarting failed container app in pod p_ns({uid})")
    assert [t for t, _ in backoffs] == [6.1, 17.6, 39.1, 80.6]
    messages = [e.message for e in sim.trace.find(what="status") if "CrashLoopBackOff" in e.message]
    assert messages[:3] == [
        f"container app in CrashLoopBackOff for {d}" for d in ("10s", "20s", "40s")
    ]
    # image already on the node after the first pull (IfNotPresent)
    assert [m for _, _, m in _events(sim, "Pulled")][
        1
    ] == 'Container image "app:1.0" already present on machine'
    # during a back-off: waiting CrashLoopBackOff, lastState terminated, phase Running
    sim2 = _sim()
    sim2.store.create(_pod("OnFailure", ann), actor="helm")
    sim2.run(until=10)
    pod = sim2.store.get("Pod", "ns", "p")
    cs = pod["status"]["containerStatuses"][0]
    assert cs["state"]["waiting"] == {
        "reason": "CrashLoopBackOff",
        "message": f"back-off 10s restarting failed container=app pod=p_ns({pod['metadata']['uid']})",
    }
    assert cs["lastState"]["terminated"]["exitCode"] == 1 and cs["restartCount"] == 1
    assert pod["status"]["phase"] == "Running"
    result = compute(pod)
    assert result.status.value == "Failed" and "CrashLoop" in result.message


def test_backoff_caps_at_the_profile_cap_and_resets_after_clean_running() -> None:
    sim = _sim()
    sim.store.create(_pod("Always", {"helmsim.dev/run-seconds": "0.5"}), actor="helm")
    sim.run(until=2000)
    started = [t for t, _, _ in _events(sim, "Started")]
    gaps = [round(b - a - 1.0, 3) for a, b in pairwise(started)]  # minus run 0.5 and start 0.5
    assert gaps[:8] == [0, 10, 20, 40, 80, 160, 300, 300]
    sim2 = _sim()
    sim2.store.create(_pod("Always", {"helmsim.dev/run-seconds": "700"}), actor="helm")
    sim2.run(until=3000)
    started2 = [t for t, _, _ in _events(sim2, "Started")]
    # every run lasts longer than 2 x 300 s after the last back-off update: always immediate
    assert [round(b - a, 3) for a, b in pairwise(started2)] == [700.5] * 4
    assert _events(sim2, "BackOff") == []


def test_init_containers_run_in_order_then_apps_together() -> None:
    sim = _sim()
    sim.behaviour_overrides = [BehaviourOverride(container="init-*", run_seconds=2)]  # type: ignore[attr-defined]
    containers = [{"name": "a", "image": "app:1.0"}, {"name": "b", "image": "app:1.0"}]
    init = [{"name": "init-1", "image": "tool:1"}, {"name": "init-2", "image": "tool:1"}]
    sim.store.create(_pod("Always", containers=containers, initContainers=init), actor="helm")
    sim.run(until=2.0)
    st = _status(sim)
    assert st["phase"] == "Pending"
    assert st["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    sim.run(until=30)
    started = [(t, m) for t, _, m in _events(sim, "Started")]
    assert started == [
        (3.6, "Started container init-1"),  # pull 3 s + start 0.5 s
        (6.1, "Started container init-2"),  # image present; init-1 ran 2 s
        (11.6, "Started container a"),  # init-2 ran 2 s, then pull app:1.0
        (11.6, "Started container b"),
    ]
    st = _status(sim)
    assert [s["state"]["terminated"]["reason"] for s in st["initContainerStatuses"]] == [
        "Completed"
    ] * 2
    init_cond = next(c for c in st["conditions"] if c["type"] == "Initialized")
    assert (
        init_cond["status"] == "True"
        and init_cond["lastTransitionTime"] == "2026-01-01T00:00:08.100Z"
    )
    assert st["phase"] == "Running"


def test_failed_init_container_fails_a_never_pod_and_restarts_otherwise() -> None:
    init = [{"name": "init", "image": "tool:1"}]
    for policy, phase in (("Never", "Failed"), ("OnFailure", "Pending")):
        sim = _sim()
        sim.behaviour_overrides = [BehaviourOverride(container="init", exit_code=3, run_seconds=1)]  # type: ignore[attr-defined]
        sim.store.create(_pod(policy, initContainers=init), actor="helm")
        sim.run(until=20)
        st = _status(sim)
        assert st["phase"] == phase
        init_st = st["initContainerStatuses"][0]
        if policy == "Never":
            assert init_st["state"]["terminated"]["exitCode"] == 3
            assert [m for _, _, m in _events(sim, "Started")] == ["Started container init"]
        else:
            assert init_st["restartCount"] >= 1
            assert st["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}


def test_readiness_after_initial_delay_plus_period() -> None:
    sim = _sim()
    containers = [
        {"name": "plain", "image": "app:1.0"},
        {"name": "probed", "image": "app:1.0", "readinessProbe": {"initialDelaySeconds": 5}},
        {
            "name": "slow",
            "image": "app:1.0",
            "startupProbe": {"periodSeconds": 20},
            "readinessProbe": {"initialDelaySeconds": 5, "periodSeconds": 3},
        },
    ]
    sim.store.create(_pod("Always", containers=containers), actor="helm")
    ready: dict[str, float] = {}
    sim.store.watch(
        ["Pod"],
        lambda ev, o: [
            ready.setdefault(s["name"], sim.now)
            for s in (o.get("status") or {}).get("containerStatuses") or ()
            if s["ready"]
        ],
    )
    sim.run(until=60)
    # started at 3.6: no probe -> ready at once; 5 + 10 (default period); startup 0 + 20, then
    # the next readiness period (3 s)
    assert ready == pytest.approx({"plain": 3.6, "probed": 18.6, "slow": 26.6})
    st = _status(sim)
    ready_cond = next(c for c in st["conditions"] if c["type"] == "Ready")
    assert (
        ready_cond["status"] == "True"
        and ready_cond["lastTransitionTime"] == "2026-01-01T00:00:26.600Z"
    )
    assert compute(sim.store.get("Pod", "ns", "p")).status.value == "Current"


def test_active_deadline_exceeded_fails_the_pod() -> None:
    sim = _sim()
    sim.store.create(
        _pod(ann={"helmsim.dev/run-seconds": "forever"}, activeDeadlineSeconds=10), actor="helm"
    )
    sim.run(until=30)
    st = _status(sim)
    assert st["phase"] == "Failed" and st["reason"] == "DeadlineExceeded"
    assert st["message"] == "Pod was active on the node longer than the specified deadline"
    assert (
        10.1,
        "DeadlineExceeded",
        "Pod was active on the node longer than the specified deadline",
    ) in _events(sim)
    assert st["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137


def test_deleted_pod_stops_its_containers_and_goes_away() -> None:
    sim = _sim()
    sim.store.create(_pod("Always"), actor="helm")
    sim.run(until=10)
    sim.store.delete("Pod", "ns", "p", actor="helm", grace=1)
    assert (10.0, "Killing", "Stopping container app") in _events(sim)
    st = _status(sim)
    assert st["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 143
    sim.run(until=20)
    assert sim.store.get("Pod", "ns", "p") is None


def test_image_pull_fault_gives_err_image_pull_then_back_off() -> None:
    class Faults:
        def image_pull_error(self, pod: Any, container: str, attempt: int) -> str | None:
            return "manifest unknown" if attempt < 2 else None

        def exit_code(self, pod: Any, container: str, run: int) -> int | None:
            return None

    sim = _sim()
    sim.faults = Faults()  # type: ignore[attr-defined]
    sim.store.create(_pod(), actor="helm")
    sim.run(until=60)
    msgs = [(t, m) for t, r, m in _events(sim) if r in ("Failed", "BackOff", "Pulled")]
    assert msgs[:4] == [
        (3.1, 'Failed to pull image "app:1.0": manifest unknown'),
        (3.1, "Error: ErrImagePull"),
        (3.1, 'Back-off pulling image "app:1.0"'),
        (3.1, "Error: ImagePullBackOff"),
    ]
    # retries after 10 s, then 20 s (plus the 3 s pull each time)
    assert [t for t, m in msgs if m.startswith("Successfully pulled")] == [39.1]
    assert _status(sim)["phase"] == "Succeeded"


@pytest.mark.parametrize(
    ("policy", "states", "expected"),
    [
        ("Never", [{"running": {}}], "Running"),
        ("Never", [{"waiting": {}}], "Pending"),
        ("Never", [{"terminated": {"exitCode": 0}}], "Succeeded"),
        ("Never", [{"terminated": {"exitCode": 1}}], "Failed"),
        ("Never", [{"terminated": {"exitCode": 1}}, {"running": {}}], "Running"),
        ("OnFailure", [{"terminated": {"exitCode": 1}}], "Running"),
        ("OnFailure", [{"terminated": {"exitCode": 0}}], "Succeeded"),
        ("Always", [{"terminated": {"exitCode": 0}}], "Running"),
        ("Always", [{"waiting": {"reason": "CrashLoopBackOff"}, "last": 1}], "Running"),
    ],
)
def test_get_phase(policy: str, states: list[dict[str, Any]], expected: str) -> None:
    spec = {"restartPolicy": policy, "containers": [{"name": f"c{i}"} for i in range(len(states))]}
    statuses = []
    for i, s in enumerate(states):
        last = s.pop("last", None)
        statuses.append(
            {
                "name": f"c{i}",
                "state": s,
                "lastState": {"terminated": {"exitCode": last}} if last is not None else {},
            }
        )
    assert get_phase(spec, [], statuses) == expected


def test_get_phase_init_failure() -> None:
    spec = {
        "restartPolicy": "Never",
        "initContainers": [{"name": "i"}],
        "containers": [{"name": "c"}],
    }
    init = [{"name": "i", "state": {"terminated": {"exitCode": 2}}, "lastState": {}}]
    app = [{"name": "c", "state": {"waiting": {"reason": "PodInitializing"}}, "lastState": {}}]
    assert get_phase(spec, init, app) == "Failed"
    assert get_phase({**spec, "restartPolicy": "OnFailure"}, init, app) == "Pending"


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("busybox:1.36", "IfNotPresent"),
        ("reg:5000/app", "Always"),
        ("reg:5000/app:v1", "IfNotPresent"),
        ("app@sha256:ab", "IfNotPresent"),  # does not parse: ParseImageName's error leaves tag ""
        ("app@sha256:" + "a" * 64, "IfNotPresent"),
        ("app:latest@sha256:" + "a" * 64, "Always"),  # the tag is still latest
    ],
)
def test_default_pull_policy(image: str, policy: str) -> None:
    assert default_pull_policy(image) == policy
