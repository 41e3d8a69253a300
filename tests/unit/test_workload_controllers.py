"""Deployment → ReplicaSet → Pods, StatefulSet, DaemonSet and CronJob with a fake kubelet.

The fake kubelet makes a pod Running and Ready ``READY_AFTER`` seconds after it is created,
unless its first container's image is ``bad`` (then it stays Pending, like an image that never
pulls). Deleted pods vanish after the store's default grace (1 s).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from helmsim import kstatus
from helmsim.cluster.controllers.cronjob import (
    CronJobController,
    ScheduleError,
    job_name,
    parse_schedule,
)
from helmsim.cluster.controllers.daemonset import DaemonSetController
from helmsim.cluster.controllers.deployment import (
    HASH_LABEL,
    DeploymentController,
    ReplicaSetController,
)
from helmsim.cluster.controllers.statefulset import StatefulSetController
from helmsim.cluster.controllers.workloads import generate_name, install_workload_controllers
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import Node, Taint

READY_AFTER = 5.0
S = kstatus.Status


class _Fixed:
    def __init__(self, v: float) -> None:
        self.v = v

    def nominal(self) -> float:
        return self.v

    def sample(self, rng: random.Random) -> float:
        return self.v


def make_sim(nodes: list[Node] | None = None, sync: float = 0.05) -> Simulation:
    lat = SimpleNamespace(controller_sync=_Fixed(sync), api_write=_Fixed(0.0))
    profile = SimpleNamespace(latencies=lat, nodes=nodes or [Node(name="node-a")])
    return Simulation(profile)  # type: ignore[arg-type]


class FakeKubelet:
    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.max_active: dict[str, int] = {}
        sim.store.watch(["Pod"], self._on_pod)

    def _on_pod(self, event: str, pod: dict[str, Any]) -> None:
        if event != "ADDED":
            return
        if pod["spec"]["containers"][0].get("image") == "bad":
            return
        self.sim.after(
            READY_AFTER, self._ready, pod["metadata"]["namespace"], pod["metadata"]["name"]
        )

    def _ready(self, ns: str, name: str) -> None:
        pod = self.sim.store.get("Pod", ns, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        ts = self.sim.timestamp()
        self.sim.store.update_status(
            "Pod",
            ns,
            name,
            {
                "phase": "Running",
                "podIP": "10.244.0.7",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ts}],
                "containerStatuses": [
                    {
                        "name": "c",
                        "ready": True,
                        "restartCount": 0,
                        "state": {"running": {"startedAt": ts}},
                    }
                ],
            },
            actor="kubelet",
            message=f"Pod/{ns}/{name} Ready",
        )


def template(image: str = "good", app: str = "web") -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }


def deployment(image: str = "good", replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(image),
            **spec,
        },
    }


def status_at(sim: Simulation, kind: str, name: str, t: float) -> kstatus.Result:
    sim.run(until=t)
    obj = sim.store.get(kind, "ns", name)
    assert obj is not None
    return kstatus.compute(obj)


def active_pods(sim: Simulation) -> list[dict[str, Any]]:
    return [p for p in sim.store.list("Pod", "ns") if not p["metadata"].get("deletionTimestamp")]


def deployment_sim(**kw: Any) -> Simulation:
    sim = make_sim(**kw)
    FakeKubelet(sim)
    DeploymentController(sim)
    ReplicaSetController(sim)
    return sim


# --- Deployment ---------------------------------------------------------------------------------


def test_deployment_rollout_in_progress_then_current() -> None:
    sim = deployment_sim()
    sim.store.apply(deployment(), actor="helm")
    assert status_at(sim, "Deployment", "web", 0.01).status == S.IN_PROGRESS
    assert status_at(sim, "Deployment", "web", 1).message == "Available: 0/3"
    current = status_at(sim, "Deployment", "web", 6)
    assert current.status == S.CURRENT and current.message == "Deployment is available. Replicas: 3"
    (rs,) = sim.store.list("ReplicaSet", "ns")
    h = rs["metadata"]["labels"][HASH_LABEL]
    assert rs["metadata"]["name"] == f"web-{h}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", HASH_LABEL: h}
    assert rs["status"] == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "observedGeneration": 1,
    }
    assert kstatus.compute(rs).status == S.CURRENT
    d = sim.store.get("Deployment", "ns", "web")
    assert d is not None
    assert [(c["type"], c["status"], c["reason"]) for c in d["status"]["conditions"]] == [
        ("Available", "True", "MinimumReplicasAvailable"),
        ("Progressing", "True", "NewReplicaSetAvailable"),
    ]
    assert (
        d["status"]["conditions"][1]["message"]
        == f'ReplicaSet "web-{h}" has successfully progressed.'
    )
    evs = [
        (e.data["reason"], e.message) for e in sim.trace.find(what="event", obj="Deployment/ns/web")
    ]
    assert evs == [("ScalingReplicaSet", f"Scaled up replica set web-{h} to 3")]
    rs_events = [
        e.data["reason"] for e in sim.trace.find(what="event", obj=f"ReplicaSet/ns/web-{h}")
    ]
    assert rs_events == ["SuccessfulCreate"] * 3
    for pod in sim.store.list("Pod", "ns"):
        assert pod["metadata"]["name"].startswith(f"web-{h}-")
        assert pod["metadata"]["labels"][HASH_LABEL] == h


def test_rolling_update_respects_max_surge_and_scales_old_down() -> None:
    sim = deployment_sim()
    seen: list[int] = []
    sim.store.watch(["Pod"], lambda ev, obj: seen.append(len(active_pods(sim))))
    sim.store.apply(deployment(), actor="helm")
    sim.run(until=10)
    seen.clear()
    sim.store.apply(deployment(image="good2"), actor="helm")
    assert status_at(sim, "Deployment", "web", 10.2).status == S.IN_PROGRESS
    assert status_at(sim, "Deployment", "web", 60).status == S.CURRENT
    assert max(seen) <= 4  # replicas 3 + maxSurge ceil(25%) = 1
    rs_sizes = sorted(r["spec"]["replicas"] for r in sim.store.list("ReplicaSet", "ns"))
    assert rs_sizes == [0, 3]
    assert all(p["spec"]["containers"][0]["image"] == "good2" for p in active_pods(sim))
    d = sim.store.get("Deployment", "ns", "web")
    assert (
        d is not None
        and d["status"]["observedGeneration"] == 2
        and d["status"]["updatedReplicas"] == 3
    )


def test_progress_deadline_exceeded_fails_kstatus() -> None:
    sim = deployment_sim()
    sim.store.apply(deployment(progressDeadlineSeconds=60), actor="helm")
    sim.run(until=10)
    sim.store.apply(deployment(image="bad", progressDeadlineSeconds=60), actor="helm")
    assert status_at(sim, "Deployment", "web", 30).status == S.IN_PROGRESS
    d = sim.store.get("Deployment", "ns", "web")
    assert d is not None
    prog = next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")
    last_update = datetime.fromisoformat(prog["lastUpdateTime"])
    deadline = (last_update - datetime(2026, 1, 1, tzinfo=UTC)).total_seconds() + 60
    # progress.go requeueStuckDeployment: re-checked at lastUpdateTime + deadline + 1 s
    assert status_at(sim, "Deployment", "web", deadline + 0.9).status == S.IN_PROGRESS
    failed = status_at(sim, "Deployment", "web", deadline + 1.1)
    assert failed.status == S.FAILED and failed.message == "Progress deadline exceeded"
    d = sim.store.get("Deployment", "ns", "web")
    assert d is not None
    prog = next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")
    assert (prog["status"], prog["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert prog["message"].endswith("has timed out progressing.")
    # the old ReplicaSet keeps serving: maxUnavailable 0 (floor of 25% of 3) allows no scale-down
    assert d["status"]["availableReplicas"] == 3


def test_min_ready_seconds_delays_availability() -> None:
    sim = deployment_sim()
    sim.store.apply(deployment(replicas=1, minReadySeconds=10), actor="helm")
    assert status_at(sim, "Deployment", "web", 14).message == "Available: 0/1"
    assert status_at(sim, "Deployment", "web", 16).status == S.CURRENT


def test_paused_deployment_does_not_roll_out() -> None:
    sim = deployment_sim()
    sim.store.apply(deployment(), actor="helm")
    sim.run(until=10)
    sim.store.apply(deployment(image="good2", paused=True), actor="helm")
    sim.run(until=30)
    assert len(sim.store.list("ReplicaSet", "ns")) == 1
    d = sim.store.get("Deployment", "ns", "web")
    assert d is not None
    prog = next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")
    assert (prog["status"], prog["reason"], prog["message"]) == (
        "Unknown",
        "DeploymentPaused",
        "Deployment is paused",
    )


def test_recreate_waits_for_old_pods_to_go() -> None:
    sim = deployment_sim()
    sim.store.apply(deployment(strategy={"type": "Recreate"}), actor="helm")
    sim.run(until=10)
    old = {p["metadata"]["name"] for p in sim.store.list("Pod", "ns")}
    sim.store.apply(deployment(image="good2", strategy={"type": "Recreate"}), actor="helm")
    sim.run(until=40)
    new_created = [
        e.time for e in sim.trace.find(what="created") if e.obj.startswith("Pod/") and e.time > 10
    ]
    old_gone = [e.time for e in sim.trace.find(what="deleted") if e.obj.split("/")[-1] in old]
    assert len(old_gone) == 3 and len(new_created) == 3
    assert min(new_created) > max(old_gone)
    assert kstatus.compute(sim.store.get("Deployment", "ns", "web")).status == S.CURRENT  # type: ignore[arg-type]


def test_replicaset_create_error_sets_then_clears_replica_failure() -> None:
    sim = make_sim()
    ReplicaSetController(sim)
    snapshots: list[dict[str, Any]] = []
    sim.store.watch(["ReplicaSet"], lambda ev, obj: snapshots.append(obj))
    rs = sim.store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "rs", "namespace": "ns"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": template(),
            },
        },
        actor="helm",
    )
    # occupy the name the controller generates for its first pod: that create fails
    taken = generate_name("rs-", f"{rs['metadata']['uid']}/1")
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": taken, "namespace": "ns"},
            "spec": {},
        },
        actor="someone",
    )
    sim.run(until=1)
    failing = next(o for o in snapshots if (o.get("status") or {}).get("conditions"))
    (cond,) = failing["status"]["conditions"]
    assert (cond["type"], cond["reason"], cond["message"]) == (
        "ReplicaFailure",
        "FailedCreate",
        f'pods "{taken}" already exists',
    )
    assert kstatus.compute(failing).message == "Replica Failure condition. Check Pods"
    assert [
        (e.data["type"], e.data["reason"])
        for e in sim.trace.find(what="event", obj="ReplicaSet/ns/rs")
    ] == [("Warning", "FailedCreate"), ("Normal", "SuccessfulCreate")]
    assert (
        sim.trace.find(what="event", reason="FailedCreate")[0].message
        == f'Error creating: pods "{taken}" already exists'
    )
    # the next sync creates the pod and clears the condition (replica_set_utils.go calculateStatus)
    live = sim.store.get("ReplicaSet", "ns", "rs")
    assert (
        live is not None and "conditions" not in live["status"] and live["status"]["replicas"] == 1
    )


# --- StatefulSet --------------------------------------------------------------------------------


def statefulset(image: str = "good", replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "ns"},
        "spec": {
            "replicas": replicas,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": template(image, "db"),
            **spec,
        },
    }


def sts_sim() -> Simulation:
    sim = make_sim()
    FakeKubelet(sim)
    StatefulSetController(sim)
    return sim


def pod_created_at(sim: Simulation) -> dict[str, float]:
    return {
        e.obj.split("/")[-1]: e.time
        for e in sim.trace.find(what="created")
        if e.obj.startswith("Pod/")
    }


def test_statefulset_ordered_ready_with_claims() -> None:
    sim = sts_sim()
    vct = [
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    ]
    sim.store.apply(statefulset(volumeClaimTemplates=vct), actor="helm")
    assert status_at(sim, "StatefulSet", "db", 1).message == "Replicas: 1/3"
    assert status_at(sim, "StatefulSet", "db", 20).status == S.CURRENT
    created = pod_created_at(sim)
    # each pod waits for the previous one to be Running and Ready (5 s) plus a sync
    assert created == pytest.approx({"db-0": 0.05, "db-1": 5.1, "db-2": 10.15})
    for i in range(3):
        claim = sim.store.get("PersistentVolumeClaim", "ns", f"data-db-{i}")
        assert claim is not None and claim["metadata"]["labels"] == {"app": "db"}
        pod = sim.store.get("Pod", "ns", f"db-{i}")
        assert pod is not None
        assert {"name": "data", "persistentVolumeClaim": {"claimName": f"data-db-{i}"}} in pod[
            "spec"
        ]["volumes"]
        assert pod["spec"]["hostname"] == f"db-{i}" and pod["spec"]["subdomain"] == "db"
        assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == f"db-{i}"
    msgs = [e.message for e in sim.trace.find(what="event", obj="StatefulSet/ns/db")][:2]
    assert msgs == [
        "create Claim data-db-0 Pod db-0 in StatefulSet db success",
        "create Pod db-0 in StatefulSet db successful",
    ]
    sts = sim.store.get("StatefulSet", "ns", "db")
    assert sts is not None and sts["status"]["currentRevision"] == sts["status"]["updateRevision"]


def test_statefulset_parallel_creates_all_at_once() -> None:
    sim = sts_sim()
    sim.store.apply(statefulset(podManagementPolicy="Parallel"), actor="helm")
    sim.run(until=1)
    assert set(pod_created_at(sim).values()) == {0.05}


def test_statefulset_rolling_update_highest_ordinal_first() -> None:
    sim = sts_sim()
    sim.store.apply(statefulset(), actor="helm")
    sim.run(until=20)
    sim.store.apply(statefulset(image="good2"), actor="helm")
    assert status_at(sim, "StatefulSet", "db", 21).status == S.IN_PROGRESS
    assert status_at(sim, "StatefulSet", "db", 60).status == S.CURRENT
    deletions = [e.obj.split("/")[-1] for e in sim.trace.find(what="deleting") if e.time > 20]
    assert deletions == ["db-2", "db-1", "db-0"]
    sts = sim.store.get("StatefulSet", "ns", "db")
    assert sts is not None and sts["status"]["currentRevision"] == sts["status"]["updateRevision"]


def test_statefulset_on_delete_is_current_for_kstatus() -> None:
    sim = sts_sim()
    sim.store.apply(statefulset(image="bad", updateStrategy={"type": "OnDelete"}), actor="helm")
    assert (
        status_at(sim, "StatefulSet", "db", 5).message
        == "StatefulSet is using the ondelete update strategy"
    )


# --- DaemonSet ----------------------------------------------------------------------------------


def test_daemonset_over_profile_nodes_with_selector_and_taints() -> None:
    nodes = [
        Node(name="a", labels={"disk": "ssd"}),
        Node(
            name="b",
            labels={"disk": "ssd"},
            taints=[Taint(key="dedicated", value="gpu", effect="NoSchedule")],
        ),
        Node(name="c", labels={"disk": "hdd"}),
        Node(name="d", labels={"disk": "ssd"}),
    ]
    sim = make_sim(nodes)
    FakeKubelet(sim)
    DaemonSetController(sim)
    tmpl = template("good", "agent")
    tmpl["spec"]["nodeSelector"] = {"disk": "ssd"}
    sim.store.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": tmpl},
        },
        actor="helm",
    )
    assert status_at(sim, "DaemonSet", "agent", 1).message == "Available: 0/2"
    assert status_at(sim, "DaemonSet", "agent", 6).status == S.CURRENT
    ds = sim.store.get("DaemonSet", "ns", "agent")
    assert ds is not None
    st = ds["status"]
    assert (
        st["desiredNumberScheduled"],
        st["currentNumberScheduled"],
        st["numberReady"],
        st["numberAvailable"],
        st["updatedNumberScheduled"],
        st["observedGeneration"],
    ) == (2, 2, 2, 2, 2, 1)
    pinned = sorted(
        p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ][0]["matchFields"][0]["values"][0]
        for p in sim.store.list("Pod", "ns")
    )
    assert pinned == ["a", "d"]


# --- CronJob ------------------------------------------------------------------------------------

T = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)  # a Thursday


@pytest.mark.parametrize(
    ("spec", "after", "want"),
    [
        ("*/5 * * * *", T, datetime(2026, 1, 1, 0, 5, tzinfo=UTC)),
        ("30 2 * * *", T, datetime(2026, 1, 1, 2, 30, tzinfo=UTC)),
        (
            "0,15 * * * *",
            datetime(2026, 1, 1, 0, 1, tzinfo=UTC),
            datetime(2026, 1, 1, 0, 15, tzinfo=UTC),
        ),
        ("0 9-17/4 * * *", T, datetime(2026, 1, 1, 9, 0, tzinfo=UTC)),
        ("0 0 * * MON", T, datetime(2026, 1, 5, tzinfo=UTC)),
        ("0 0 13 * FRI", T, datetime(2026, 1, 2, tzinfo=UTC)),  # dom and dow restricted: either day
        ("0 0 1 feb *", T, datetime(2026, 2, 1, tzinfo=UTC)),
        ("@hourly", T, datetime(2026, 1, 1, 1, 0, tzinfo=UTC)),
        ("@every 90s", T, datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC)),
    ],
)
def test_schedule_next(spec: str, after: datetime, want: datetime) -> None:
    assert parse_schedule(spec).next_after(after) == want


@pytest.mark.parametrize(
    "spec", ["", "* * * *", "61 * * * *", "*/0 * * * *", "@fortnightly", "TZ=UTC * * * * *"]
)
def test_schedule_errors(spec: str) -> None:
    with pytest.raises(ScheduleError):
        parse_schedule(spec)


def cronjob(schedule: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "backup", "namespace": "ns"},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "x"}],
                        }
                    }
                }
            },
            **spec,
        },
    }


def test_cronjob_fires_only_when_scheduled_within_horizon() -> None:
    sim = make_sim()
    CronJobController(sim)
    sim.store.apply(cronjob("*/5 * * * *"), actor="helm")
    sim.store.apply(
        {**cronjob("30 2 * * *"), "metadata": {"name": "nightly", "namespace": "ns"}}, actor="helm"
    )
    sim.store.apply(
        {**cronjob("*/5 * * * *", suspend=True), "metadata": {"name": "off", "namespace": "ns"}},
        actor="helm",
    )
    sim.run(until=299)
    assert sim.store.list("Job", "ns") == []
    sim.run(until=601)
    jobs = sim.store.list("Job", "ns")
    # 00:05 and 00:10 (the controller wakes 100 ms after the scheduled time)
    assert [j["metadata"]["name"] for j in jobs] == [
        job_name("backup", datetime(2026, 1, 1, 0, m, tzinfo=UTC)) for m in (5, 10)
    ]
    assert (
        jobs[0]["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        == "2026-01-01T00:05:00Z"
    )
    created = [e.time for e in sim.trace.find(what="created") if e.obj.startswith("Job/")]
    assert created == pytest.approx([300.1, 600.1])
    cj = sim.store.get("CronJob", "ns", "backup")
    assert cj is not None and cj["status"]["lastScheduleTime"] == "2026-01-01T00:10:00Z"
    assert len(cj["status"]["active"]) == 2
    assert kstatus.compute(cj).status == S.CURRENT  # kstatus: CronJob is always ready
    first = next(e.message for e in sim.trace.find(what="event", obj="CronJob/ns/backup"))
    assert first == f"Created job {jobs[0]['metadata']['name']}"


def test_install_workload_controllers_starts_all() -> None:
    sim = make_sim()
    names = sorted(c.name for c in install_workload_controllers(sim))
    assert names == [
        "cronjob-controller",
        "daemonset-controller",
        "deployment-controller",
        "job-controller",
        "replicaset-controller",
        "statefulset-controller",
        "ttl-after-finished-controller",
    ]
