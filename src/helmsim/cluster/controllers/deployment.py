"""Deployment → ReplicaSet → Pods.

Mirrors kubernetes/kubernetes pkg/controller/deployment (sync.go getNewReplicaSet/calculateStatus,
rolling.go, recreate.go, progress.go syncRolloutStatus/requeueStuckDeployment,
util/deployment_util.go) and pkg/controller/replicaset/replica_set.go (manageReplicas,
calculateStatus). Status fields are exactly what kstatus reads (cli-utils core.go
deploymentConditions / replicasetConditions).

Timing: every sync runs ``controller_sync`` after the event that triggered it (Deployment,
ReplicaSet or Pod change). A stuck rollout is re-checked at
``Progressing.lastUpdateTime + progressDeadlineSeconds + 1 s`` (progress.go requeueStuckDeployment),
and marked ``ProgressDeadlineExceeded`` then. A ReplicaSet with ``minReadySeconds`` is re-synced
when its next pod becomes available.

Not modelled: revisionHistoryLimit cleanup of old ReplicaSets, rollback annotations, proportional
scaling of several active ReplicaSets during a rollout (the new one is sized, old ones scaled down),
orphan adoption, hash collisions beyond bumping ``collisionCount`` once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from helmsim.cluster.controllers.workloads import (
    CONTROLLER_RETRY,
    KeyedQueue,
    available_at,
    controller_ref,
    generate_name,
    int_or_percent,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    owned,
    pod_from_template,
    pod_phase,
    set_condition,
    sim_seconds,
    template_hash,
    trigger_cause,
)
from helmsim.cluster.engine import Controller
from helmsim.cluster.selectors import matches_selector
from helmsim.cluster.store import ApiError, clone, owner_reference, ref_of

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

DEPLOYMENT_ACTOR = "deployment-controller"
REPLICASET_ACTOR = "replicaset-controller"
HASH_LABEL = "pod-template-hash"  # apps/v1 DefaultDeploymentUniqueLabelKey
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
# k8s.io/api apps/v1 types.go: progressDeadlineSeconds defaults to 600
DEFAULT_PROGRESS_DEADLINE = 600
# pkg/controller/replicaset/replica_set.go: BurstReplicas = 500
BURST_REPLICAS = 500

Key = tuple[str, str]


# --- ReplicaSet -----------------------------------------------------------------------------------


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _replicas(spec: Mapping[str, Any]) -> int:
    value = spec.get("replicas")
    return 1 if value is None else int(value)


def _deletion_rank(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """controller_utils.go ActivePods.Less: which pods a scale-down removes first."""
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(pod_phase(pod), 0)
    cond: Mapping[str, Any] = next(
        (c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"),
        {},
    )
    ready_since = sim_seconds(cond.get("lastTransitionTime")) or 0.0
    restarts = sum(
        int(c.get("restartCount") or 0)
        for c in (pod.get("status") or {}).get("containerStatuses") or []
    )
    created = sim_seconds((pod.get("metadata") or {}).get("creationTimestamp")) or 0.0
    return (
        bool((pod.get("spec") or {}).get("nodeName")),  # unassigned first
        phase_rank,  # Pending < Unknown < Running
        is_pod_ready(pod),  # not ready first
        -ready_since,  # ready for a shorter time first
        -restarts,  # more restarts first
        -created,  # newer first
    )


class ReplicaSetController(Controller):
    """apps/v1 ReplicaSet controller (actor ``replicaset-controller``)."""

    name = REPLICASET_ACTOR
    kinds = ("ReplicaSet", "Pod")

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        self.queue = KeyedQueue(sim, self._sync)
        self._created: dict[str, int] = {}

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        if obj.get("kind") == "ReplicaSet":
            if event != "DELETED":
                self.queue.add_after(
                    _key(obj), self.sim.latency("controller_sync"), trigger_cause(self.sim, obj)
                )
            return
        ref = controller_ref(obj)
        if ref is not None and ref.get("kind") == "ReplicaSet":
            ns = obj["metadata"].get("namespace") or ""
            self.queue.add_after(
                (ns, ref["name"]), self.sim.latency("controller_sync"), trigger_cause(self.sim, obj)
            )

    def _sync(self, key: Key, cause: int | None) -> None:
        rs = self.store.get("ReplicaSet", *key)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return
        spec = rs.get("spec") or {}
        want = _replicas(spec)
        min_ready = int(spec.get("minReadySeconds") or 0)
        active = [p for p in owned(self.store, "Pod", rs) if is_pod_active(p)]
        diff = len(active) - want
        error: tuple[str, str] | None = None
        if diff < 0:
            error = self._create(rs, min(-diff, BURST_REPLICAS), cause)
        elif diff > 0:
            for pod in sorted(active, key=_deletion_rank)[: min(diff, BURST_REPLICAS)]:
                m = pod["metadata"]
                self.store.delete(
                    "Pod",
                    m.get("namespace"),
                    m["name"],
                    actor=REPLICASET_ACTOR,
                    cause=cause,
                    grace=self.sim.pod_grace(pod),
                )
                # controller_utils.go RealPodControl.DeletePod
                self.store.record_event(
                    rs,
                    "Normal",
                    "SuccessfulDelete",
                    f"Deleted pod: {m['name']}",
                    source=REPLICASET_ACTOR,
                    cause=cause,
                )
        rs = self.store.get("ReplicaSet", *key) or rs
        self._update_status(rs, error, min_ready, cause)
        # replica_set.go processNextWorkItem: a failed sync is re-queued rate-limited, a good one
        # forgotten.
        if error is not None:
            self.queue.add_rate_limited(key, CONTROLLER_RETRY, cause)
        else:
            self.queue.forget(key)

    def _create(self, rs: dict[str, Any], count: int, cause: int | None) -> tuple[str, str] | None:
        """replica_set.go manageReplicas: slow-start batches (1, 2, 4 …), stop at the first error."""
        meta = rs["metadata"]
        template = (rs.get("spec") or {}).get("template") or {}
        remaining, batch = count, 1
        while remaining > 0:
            for _ in range(min(batch, remaining)):
                n = self._created.get(meta["uid"], 0) + 1
                self._created[meta["uid"]] = n
                base = f"{meta['name']}-"
                name = generate_name(base, f"{meta['uid']}/{n}")
                pod = pod_from_template(rs, template, name, generate_base=base)
                try:
                    created = self.store.create(pod, actor=REPLICASET_ACTOR, cause=cause)
                except ApiError as err:
                    # controller_utils.go createPods: FailedCreate "Error creating: <err>"
                    self.store.record_event(
                        rs,
                        "Warning",
                        "FailedCreate",
                        f"Error creating: {err.message}",
                        source=REPLICASET_ACTOR,
                        cause=cause,
                    )
                    return ("FailedCreate", err.message)
                self.store.record_event(
                    rs,
                    "Normal",
                    "SuccessfulCreate",
                    f"Created pod: {name}",
                    source=REPLICASET_ACTOR,
                    cause=trigger_cause(self.sim, created),
                )
            remaining -= min(batch, remaining)
            batch *= 2
        return None

    def _update_status(
        self, rs: dict[str, Any], error: tuple[str, str] | None, min_ready: int, cause: int | None
    ) -> None:
        """replica_set_utils.go calculateStatus."""
        now = self.sim.now
        pods = [p for p in owned(self.store, "Pod", rs) if is_pod_active(p)]
        tmpl_labels = ((rs.get("spec") or {}).get("template") or {}).get("metadata", {}).get(
            "labels"
        ) or {}
        old = rs.get("status") or {}
        status: dict[str, Any] = {
            "replicas": len(pods),
            "fullyLabeledReplicas": sum(
                1
                for p in pods
                if matches_selector({"matchLabels": tmpl_labels}, p["metadata"].get("labels") or {})
            ),
            "readyReplicas": sum(1 for p in pods if is_pod_ready(p)),
            "availableReplicas": sum(1 for p in pods if is_pod_available(p, min_ready, now)),
            "observedGeneration": int(rs["metadata"].get("generation") or 1),
        }
        conditions = [
            dict(c) for c in old.get("conditions") or [] if c.get("type") != "ReplicaFailure"
        ]
        failure = next(
            (c for c in old.get("conditions") or [] if c.get("type") == "ReplicaFailure"), None
        )
        if error is not None:
            conditions.append(
                failure
                or {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "reason": error[0],
                    "message": error[1],
                    "lastTransitionTime": self.sim.timestamp(),
                }
            )
        if conditions:
            status["conditions"] = conditions
        if status != old:
            message = None
            if any(
                old.get(k) != status.get(k)
                for k in ("replicas", "readyReplicas", "availableReplicas")
            ) or ((error is None) != (failure is None)):
                message = (
                    f"{ref_of(rs)}: replicas={status['replicas']} ready={status['readyReplicas']} "
                    f"available={status['availableReplicas']}"
                )
                if error is not None:
                    message += f"; ReplicaFailure ({error[0]}: {error[1]})"
            self.store.update_status(
                "ReplicaSet",
                *_key(rs),
                status,
                actor=REPLICASET_ACTOR,
                cause=cause,
                message=message,
            )
        if min_ready > 0:
            # replica_set.go syncReplicaSet: requeue after minReadySeconds while pods are ready
            # but not yet available; here exactly when the next one becomes available.
            pending = [
                at for p in pods if (at := available_at(p, min_ready)) is not None and at > now
            ]
            if pending:
                self.queue.add_after(_key(rs), min(pending) - now, cause)


# --- Deployment -----------------------------------------------------------------------------------


def _strip_hash(template: Mapping[str, Any]) -> dict[str, Any]:
    out = clone(dict(template))
    labels = (out.get("metadata") or {}).get("labels")
    if labels and HASH_LABEL in labels:
        labels = dict(labels)
        labels.pop(HASH_LABEL)
        out["metadata"] = {**out["metadata"], "labels": labels}
    return out


def _normalize(template: Mapping[str, Any]) -> dict[str, Any]:
    """Template with empty maps dropped, so ``labels: {}`` equals no labels (semantic equality)."""
    t = _strip_hash(template)
    meta = {k: v for k, v in (t.get("metadata") or {}).items() if v not in (None, {}, [])}
    return {"metadata": meta, "spec": t.get("spec") or {}}


def _created(obj: Mapping[str, Any]) -> float:
    return sim_seconds((obj.get("metadata") or {}).get("creationTimestamp")) or 0.0


class DeploymentController(Controller):
    """apps/v1 Deployment controller (actor ``deployment-controller``)."""

    name = DEPLOYMENT_ACTOR
    kinds = ("Deployment", "ReplicaSet", "Pod")

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        self.queue = KeyedQueue(sim, self._sync)

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        kind = obj.get("kind")
        sync = self.sim.latency("controller_sync")
        if kind == "Deployment":
            if event != "DELETED":
                self.queue.add_after(_key(obj), sync, trigger_cause(self.sim, obj))
            return
        if kind == "Pod":
            # deployment_controller.go deletePod: only Recreate waits for pods to disappear
            if event != "DELETED":
                return
            ref = controller_ref(obj)
            if ref is None or ref.get("kind") != "ReplicaSet":
                return
            obj = self.store.get("ReplicaSet", obj["metadata"].get("namespace"), ref["name"]) or {}
            if not obj:
                return
        ref = controller_ref(obj)
        if ref is not None and ref.get("kind") == "Deployment":
            ns = obj["metadata"].get("namespace") or ""
            self.queue.add_after((ns, ref["name"]), sync, trigger_cause(self.sim, obj))

    # --- helpers ------------------------------------------------------------------------------------
    @staticmethod
    def _strategy(d: Mapping[str, Any]) -> tuple[str, int, int]:
        """(type, maxSurge, maxUnavailable) resolved (deployment_util.go ResolveFenceposts)."""
        spec = d.get("spec") or {}
        strategy = spec.get("strategy") or {}
        stype = strategy.get("type") or "RollingUpdate"
        replicas = _replicas(spec)
        if stype != "RollingUpdate":
            return stype, 0, 0
        ru = strategy.get("rollingUpdate") or {}
        # k8s.io/api apps/v1: maxSurge and maxUnavailable default to 25%
        surge = int_or_percent(ru.get("maxSurge"), replicas, round_up=True, default="25%")
        unavailable = int_or_percent(
            ru.get("maxUnavailable"), replicas, round_up=False, default="25%"
        )
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return stype, surge, unavailable

    def _max_unavailable(self, d: Mapping[str, Any]) -> int:
        """deployment_util.go MaxUnavailable."""
        stype, _, unavailable = self._strategy(d)
        replicas = _replicas(d.get("spec") or {})
        if stype != "RollingUpdate" or replicas == 0:
            return 0
        return min(unavailable, replicas)

    def _scale(
        self, d: Mapping[str, Any], rs: dict[str, Any], new: int, cause: int | None
    ) -> dict[str, Any]:
        """sync.go scaleReplicaSet: set replicas and the desired/max annotations, record the event."""
        old = _replicas(rs.get("spec") or {})
        _, surge, _ = self._strategy(d)
        replicas = _replicas(d.get("spec") or {})
        ann = {
            **(rs["metadata"].get("annotations") or {}),
            DESIRED: str(replicas),
            MAX_REPLICAS: str(replicas + surge),
        }
        if old == new and ann == (rs["metadata"].get("annotations") or {}):
            return rs
        updated = clone(rs)
        updated["spec"]["replicas"] = new
        updated["metadata"]["annotations"] = ann
        rs = self.store.update(updated, actor=DEPLOYMENT_ACTOR, cause=cause, quiet=old == new)
        if old != new:
            op = "up" if new > old else "down"
            # sync.go scaleReplicaSet event
            self.store.record_event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {op} replica set {rs['metadata']['name']} to {new} from {old}",
                source=DEPLOYMENT_ACTOR,
                cause=trigger_cause(self.sim, rs),
            )
        return rs

    def _new_rs_replicas(
        self, d: Mapping[str, Any], all_rs: Sequence[Mapping[str, Any]], new_rs_replicas: int
    ) -> int:
        """deployment_util.go NewRSNewReplicas."""
        stype, surge, _ = self._strategy(d)
        replicas = _replicas(d.get("spec") or {})
        if stype != "RollingUpdate":
            return replicas
        current = sum(_replicas(r.get("spec") or {}) for r in all_rs)
        max_total = replicas + surge
        if current >= max_total:
            return new_rs_replicas
        return new_rs_replicas + min(max_total - current, replicas - new_rs_replicas)

    # --- sync ---------------------------------------------------------------------------------------
    def _sync(self, key: Key, cause: int | None) -> None:
        d = self.store.get("Deployment", *key)
        if d is None or d["metadata"].get("deletionTimestamp"):
            return
        spec = d.get("spec") or {}
        status = clone(d.get("status") or {})
        conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
        has_deadline = spec.get("progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE) != 2**31 - 1
        rs_list = sorted(owned(self.store, "ReplicaSet", d), key=_created)
        tmpl = _normalize(spec.get("template") or {})
        new_rs = next(
            (r for r in rs_list if _normalize((r.get("spec") or {}).get("template") or {}) == tmpl),
            None,
        )
        paused = bool(spec.get("paused"))
        now_ts = self.sim.timestamp()

        if has_deadline:
            # deployment_controller.go checkPausedConditions
            prog = next((c for c in conditions if c.get("type") == "Progressing"), None)
            if prog is None or prog.get("reason") != "ProgressDeadlineExceeded":
                paused_cond = prog is not None and prog.get("reason") == "DeploymentPaused"
                if paused and not paused_cond:
                    set_condition(
                        conditions,
                        "Progressing",
                        "Unknown",
                        "DeploymentPaused",
                        "Deployment is paused",
                        now_ts,
                        update_time=True,
                    )
                elif not paused and paused_cond:
                    set_condition(
                        conditions,
                        "Progressing",
                        "Unknown",
                        "DeploymentResumed",
                        "Deployment is resumed",
                        now_ts,
                        update_time=True,
                    )

        if not paused:
            stype, _, _ = self._strategy(d)
            # recreate.go: a Recreate rollout creates the new ReplicaSet only once old pods are gone
            old_first = stype == "Recreate" and (
                any(_replicas(r.get("spec") or {}) for r in rs_list)
                or self._old_pods_running(rs_list, None)
            )
            if new_rs is None and not old_first:
                new_rs = self._create_rs(d, rs_list, status, conditions, has_deadline, cause)
                rs_list = sorted(owned(self.store, "ReplicaSet", d), key=_created)
            elif (
                new_rs is not None
                and has_deadline
                and not any(c.get("type") == "Progressing" for c in conditions)
            ):
                set_condition(
                    conditions,
                    "Progressing",
                    "True",
                    "FoundNewReplicaSet",
                    f'Found new replica set "{new_rs["metadata"]["name"]}"',
                    now_ts,
                    update_time=True,
                )
            if stype == "Recreate":
                self._recreate(d, rs_list, new_rs, cause)
            else:
                self._rolling(d, rs_list, new_rs, cause)
        elif (
            new_rs is not None
            and len([r for r in rs_list if _replicas(r["spec"])]) <= 1
            and _replicas(new_rs["spec"]) != _replicas(spec)
        ):
            # paused: only scaling (sync.go sync → scale)
            self._scale(d, new_rs, _replicas(spec), cause)

        if new_rs is not None:
            new_rs = self.store.get("ReplicaSet", *_key(new_rs))
            revision = ((new_rs or {}).get("metadata", {}).get("annotations") or {}).get(REVISION)
            if revision and (d["metadata"].get("annotations") or {}).get(REVISION) != revision:
                upd = clone(d)
                upd["metadata"].setdefault("annotations", {})[REVISION] = revision
                d = self.store.update(upd, actor=DEPLOYMENT_ACTOR, cause=cause, quiet=True)
        rs_list = sorted(owned(self.store, "ReplicaSet", d), key=_created)
        self._sync_rollout_status(d, rs_list, new_rs, status, paused, has_deadline, cause)

    def _create_rs(
        self,
        d: dict[str, Any],
        rs_list: list[dict[str, Any]],
        status: dict[str, Any],
        conditions: list[dict[str, Any]],
        has_deadline: bool,
        cause: int | None,
    ) -> dict[str, Any] | None:
        """sync.go getNewReplicaSet (create branch)."""
        spec = d["spec"]
        template = clone(spec.get("template") or {})
        h = template_hash(template, status.get("collisionCount"))
        template.setdefault("metadata", {})
        template["metadata"]["labels"] = {
            **(template["metadata"].get("labels") or {}),
            HASH_LABEL: h,
        }
        selector = clone(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: h}
        max_rev = max(
            (
                int((r["metadata"].get("annotations") or {}).get(REVISION, "0") or 0)
                for r in rs_list
            ),
            default=0,
        )
        replicas = self._new_rs_replicas(d, rs_list, 0)
        _, surge, _ = self._strategy(d)
        name = f"{d['metadata']['name']}-{h}"
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": d["metadata"].get("namespace"),
                "labels": dict(template["metadata"]["labels"]),
                "annotations": {
                    **{
                        k: v
                        for k, v in (d["metadata"].get("annotations") or {}).items()
                        if k
                        not in (
                            REVISION,
                            DESIRED,
                            MAX_REPLICAS,
                            "kubectl.kubernetes.io/last-applied-configuration",
                        )
                    },
                    REVISION: str(max_rev + 1),
                    DESIRED: str(_replicas(spec)),
                    MAX_REPLICAS: str(_replicas(spec) + surge),
                },
                "ownerReferences": [owner_reference(d)],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                "selector": selector,
                "template": template,
            },
        }
        try:
            created = self.store.create(rs, actor=DEPLOYMENT_ACTOR, cause=cause)
        except ApiError as err:
            if err.reason == "AlreadyExists":
                # sync.go: a hash collision bumps collisionCount and retries
                status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                return None
            msg = f'Failed to create new replica set "{name}": {err.message}'
            if has_deadline:
                set_condition(
                    conditions,
                    "Progressing",
                    "False",
                    "ReplicaSetCreateError",
                    msg,
                    self.sim.timestamp(),
                    update_time=True,
                )
            self.store.record_event(
                d, "Warning", "ReplicaSetCreateError", msg, source=DEPLOYMENT_ACTOR, cause=cause
            )
            return None
        if replicas > 0:
            self.store.record_event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {name} to {replicas}",
                source=DEPLOYMENT_ACTOR,
                cause=trigger_cause(self.sim, created),
            )
        if has_deadline:
            set_condition(
                conditions,
                "Progressing",
                "True",
                "NewReplicaSetCreated",
                f'Created new replica set "{name}"',
                self.sim.timestamp(),
                update_time=True,
            )
        return created

    def _rolling(
        self,
        d: dict[str, Any],
        rs_list: list[dict[str, Any]],
        new_rs: dict[str, Any] | None,
        cause: int | None,
    ) -> None:
        """rolling.go rolloutRolling: size the new ReplicaSet, then scale old ones down."""
        spec = d["spec"]
        replicas = _replicas(spec)
        if new_rs is not None:
            current = _replicas(new_rs["spec"])
            if current > replicas:
                self._scale(d, new_rs, replicas, cause)
                return
            if current < replicas:
                target = self._new_rs_replicas(d, rs_list, current)
                if target != current:
                    self._scale(d, new_rs, target, cause)
                    return
        new_uid = (new_rs or {}).get("metadata", {}).get("uid")
        rs_list = [self.store.get("ReplicaSet", *_key(r)) or r for r in rs_list]
        old = [r for r in rs_list if r["metadata"]["uid"] != new_uid and _replicas(r["spec"]) > 0]
        if not old:
            return
        all_pods = sum(_replicas(r["spec"]) for r in rs_list)
        max_unavailable = self._max_unavailable(d)
        min_available = replicas - max_unavailable
        new_unavailable = 0
        if new_rs is not None:
            fresh = self.store.get("ReplicaSet", *_key(new_rs)) or new_rs
            new_unavailable = _replicas(fresh["spec"]) - int(
                (fresh.get("status") or {}).get("availableReplicas") or 0
            )
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return
        # rolling.go cleanupUnhealthyReplicas: drop old replicas that are not available anyway
        cleaned = 0
        for rs in old:
            if cleaned >= max_scaled_down:
                break
            want, avail = (
                _replicas(rs["spec"]),
                int((rs.get("status") or {}).get("availableReplicas") or 0),
            )
            if want == avail:
                continue
            n = min(max_scaled_down - cleaned, want - avail)
            self._scale(d, rs, want - n, cause)
            cleaned += n
        if cleaned:
            return
        # rolling.go scaleDownOldReplicaSetsForRollingUpdate
        available = sum(int((r.get("status") or {}).get("availableReplicas") or 0) for r in rs_list)
        if available <= min_available:
            return
        total = available - min_available
        done = 0
        for rs in old:
            if done >= total:
                break
            n = min(_replicas(rs["spec"]), total - done)
            self._scale(d, rs, _replicas(rs["spec"]) - n, cause)
            done += n

    def _old_pods_running(
        self, rs_list: list[dict[str, Any]], new_rs: Mapping[str, Any] | None
    ) -> bool:
        new_uid = (new_rs or {}).get("metadata", {}).get("uid")
        for rs in rs_list:
            if rs["metadata"]["uid"] == new_uid:
                continue
            for pod in owned(self.store, "Pod", rs):
                if pod_phase(pod) not in ("Succeeded", "Failed"):
                    return True
        return False

    def _recreate(
        self,
        d: dict[str, Any],
        rs_list: list[dict[str, Any]],
        new_rs: dict[str, Any] | None,
        cause: int | None,
    ) -> None:
        """recreate.go rolloutRecreate: all old pods gone before the new ReplicaSet scales up."""
        new_uid = (new_rs or {}).get("metadata", {}).get("uid")
        scaled = False
        for rs in rs_list:
            if rs["metadata"]["uid"] != new_uid and _replicas(rs["spec"]) > 0:
                self._scale(d, rs, 0, cause)
                scaled = True
        if scaled or self._old_pods_running(rs_list, new_rs) or new_rs is None:
            return
        self._scale(d, new_rs, _replicas(d["spec"]), cause)

    def _sync_rollout_status(
        self,
        d: dict[str, Any],
        rs_list: list[dict[str, Any]],
        new_rs: Mapping[str, Any] | None,
        status: dict[str, Any],
        paused: bool,
        has_deadline: bool,
        cause: int | None,
    ) -> None:
        """progress.go syncRolloutStatus with sync.go calculateStatus."""
        spec = d["spec"]
        replicas = _replicas(spec)
        now_ts = self.sim.timestamp()
        available = sum(int((r.get("status") or {}).get("availableReplicas") or 0) for r in rs_list)
        total = sum(_replicas(r.get("spec") or {}) for r in rs_list)
        new_status: dict[str, Any] = {
            "observedGeneration": int(d["metadata"].get("generation") or 1),
            "replicas": sum(int((r.get("status") or {}).get("replicas") or 0) for r in rs_list),
            "updatedReplicas": int(((new_rs or {}).get("status") or {}).get("replicas") or 0),
            "readyReplicas": sum(
                int((r.get("status") or {}).get("readyReplicas") or 0) for r in rs_list
            ),
            "availableReplicas": available,
            "unavailableReplicas": max(0, total - available),
        }
        if status.get("collisionCount") is not None:
            new_status["collisionCount"] = status["collisionCount"]
        conditions = [dict(c) for c in status.get("conditions") or []]
        if available >= replicas - self._max_unavailable(d):
            set_condition(
                conditions,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                now_ts,
                update_time=True,
            )
        else:
            set_condition(
                conditions,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                now_ts,
                update_time=True,
            )
        if not has_deadline:
            conditions = [c for c in conditions if c.get("type") != "Progressing"]
        old_status = d.get("status") or {}
        current = next(
            (c for c in old_status.get("conditions") or [] if c.get("type") == "Progressing"), None
        )
        complete = (
            new_status["updatedReplicas"] == replicas
            and new_status["replicas"] == replicas
            and available == replicas
        )
        already = (
            new_status["replicas"] == new_status["updatedReplicas"]
            and current is not None
            and current.get("reason") == "NewReplicaSetAvailable"
        )
        rs_name = (new_rs or {}).get("metadata", {}).get("name")
        subject = f'ReplicaSet "{rs_name}"' if rs_name else f'Deployment "{d["metadata"]["name"]}"'
        if has_deadline and not already and not paused:
            prog = next((c for c in conditions if c.get("type") == "Progressing"), None)
            if complete:
                set_condition(
                    conditions,
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable",
                    f"{subject} has successfully progressed.",
                    now_ts,
                    update_time=True,
                )
            elif self._progressing(old_status, new_status):
                new = {
                    "type": "Progressing",
                    "status": "True",
                    "reason": "ReplicaSetUpdated",
                    "message": f"{subject} is progressing.",
                    "lastUpdateTime": now_ts,
                    "lastTransitionTime": now_ts,
                }
                if current is not None and current.get("status") == "True":
                    new["lastTransitionTime"] = current.get("lastTransitionTime", now_ts)
                conditions = [c for c in conditions if c.get("type") != "Progressing"] + [new]
            elif prog is not None and self._timed_out(spec, prog):
                set_condition(
                    conditions,
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    f"{subject} has timed out progressing.",
                    now_ts,
                    update_time=True,
                )
        failures = [
            c
            for r in ([new_rs] if new_rs else []) + rs_list
            for c in (r.get("status") or {}).get("conditions") or []
            if c.get("type") == "ReplicaFailure"
        ]
        conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
        if failures:
            f = failures[0]
            conditions.append(
                {
                    "type": "ReplicaFailure",
                    "status": f.get("status"),
                    "reason": f.get("reason"),
                    "message": f.get("message"),
                    "lastUpdateTime": f.get("lastTransitionTime"),
                    "lastTransitionTime": f.get("lastTransitionTime"),
                }
            )
        new_status["conditions"] = conditions
        if new_status == old_status:
            self._requeue_stuck(d, new_status, complete, cause)
            return
        self.store.update_status(
            "Deployment",
            *_key(d),
            new_status,
            actor=DEPLOYMENT_ACTOR,
            cause=cause,
            message=_deploy_message(d, old_status, new_status),
        )

    @staticmethod
    def _progressing(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        """deployment_util.go DeploymentProgressing."""

        def g(s: Mapping[str, Any], k: str) -> int:
            return int(s.get(k) or 0)

        old_old = g(old, "replicas") - g(old, "updatedReplicas")
        new_old = g(new, "replicas") - g(new, "updatedReplicas")
        return (
            g(new, "updatedReplicas") > g(old, "updatedReplicas")
            or new_old < old_old
            or g(new, "readyReplicas") > g(old, "readyReplicas")
            or g(new, "availableReplicas") > g(old, "availableReplicas")
        )

    def _timed_out(self, spec: Mapping[str, Any], cond: Mapping[str, Any]) -> bool:
        """deployment_util.go DeploymentTimedOut: lastUpdateTime + deadline before now."""
        if cond.get("reason") == "NewReplicaSetAvailable":
            return False
        if cond.get("reason") == "ProgressDeadlineExceeded":
            return True
        since = sim_seconds(cond.get("lastUpdateTime"))
        deadline = spec.get("progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE)
        return since is not None and since + deadline < self.sim.now

    def _requeue_stuck(
        self, d: Mapping[str, Any], status: Mapping[str, Any], complete: bool, cause: int | None
    ) -> None:
        """progress.go requeueStuckDeployment: re-check at lastUpdateTime + deadline (+1 s)."""
        spec = d.get("spec") or {}
        deadline = spec.get("progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE)
        cond = next(
            (
                c
                for c in (d.get("status") or {}).get("conditions") or []
                if c.get("type") == "Progressing"
            ),
            None,
        )
        if (
            deadline == 2**31 - 1
            or cond is None
            or complete
            or cond.get("reason") == "ProgressDeadlineExceeded"
        ):
            return
        if spec.get("paused"):
            return
        since = sim_seconds(cond.get("lastUpdateTime"))
        if since is None:
            return
        after = since + deadline - self.sim.now
        delay = self.sim.latency("controller_sync") if after < 1 else after + 1
        self.queue.add_after(_key(d), delay, cause)


def _deploy_message(
    d: Mapping[str, Any], old: Mapping[str, Any], new: Mapping[str, Any]
) -> str | None:
    keys = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
    old_c = {(c.get("type"), c.get("status"), c.get("reason")) for c in old.get("conditions") or []}
    added = [
        c
        for c in new.get("conditions") or []
        if (c.get("type"), c.get("status"), c.get("reason")) not in old_c
    ]
    if not added and all(old.get(k) == new.get(k) for k in keys):
        return None
    text = (
        f"{ref_of(d)}: replicas={new['replicas']} updated={new['updatedReplicas']} "
        f"ready={new['readyReplicas']} available={new['availableReplicas']}"
    )
    for c in added:
        text += f"; {c['type']}={c['status']} ({c.get('reason')}: {c.get('message')})"
    return text
