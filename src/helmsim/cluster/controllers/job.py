"""The Job controller and the TTL-after-finished controller.

Mirrors kubernetes/kubernetes pkg/controller/job/job_controller.go ``syncJob``/``manageJob`` as
newer clusters run it (JobPodReplacementPolicy/JobManagedBy on: interim ``FailureTarget`` and
``SuccessCriteriaMet`` conditions, terminal condition only once no pod is terminating) and
pkg/controller/ttlafterfinished. The arithmetic lives in ``helmsim.cluster.jobmath``.

Timing (simulated seconds):

* a Job add or spec change is synced ``controller_sync`` later (enqueueSyncJobImmediately);
* pod events and Job status updates are synced ``controller_sync + 1 s`` later
  (enqueueSyncJobBatched, ``syncJobBatchPeriod``);
* a replacement pod waits for the pod-failure backoff, at least 1 s (enqueueSyncJobWithDelay);
* ``activeDeadlineSeconds`` is re-checked exactly when it expires (queue.AddAfter);
* ``Failed``/``Complete`` follow ``FailureTarget``/``SuccessCriteriaMet`` in the same sync when no
  pod is terminating, else in the sync after the last terminating pod is gone (its grace period
  + ``controller_sync`` + 1 s).

Not modelled: Indexed completion mode, backoffLimitPerIndex/maxFailedIndexes, successPolicy,
managedBy controllers other than the built-in one (such Jobs are skipped), the pod tracking
finalizer (counted pods are tracked in memory instead), API errors on pod creation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from helmsim.cluster import jobmath
from helmsim.cluster.controllers.workloads import (
    KeyedQueue,
    controller_ref,
    generate_name,
    is_pod_active,
    is_pod_ready,
    is_terminating,
    owned,
    pod_from_template,
    pod_phase,
    sim_seconds,
    trigger_cause,
)
from helmsim.cluster.engine import EPOCH, Controller
from helmsim.cluster.store import ApiError, clone, ref_of

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

ACTOR = "job-controller"
TTL_ACTOR = "ttl-after-finished-controller"
# k8s.io/api batch/v1 types.go: JobControllerName, the only managedBy value this controller syncs.
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"

# k8s.io/api batch/v1 types.go: reasons and the messages job_controller.go writes with them.
BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
# job_controller.go DefaultJobApiBackOff = 1 s, MaxJobApiBackOff = 1 min: the rate limiter of the
# Job queue, used when a sync fails (e.g. the API server refuses a pod).
JOB_API_BACKOFF = (1.0, 60.0)

Key = tuple[str, str]


class _JobState(Struct):
    """What the controller remembers about one Job (by uid), as the real one does in memory."""

    counted: set[str] = field(default_factory=set)  # pod uids already in status (finalizer removed)
    tombstones: dict[str, dict[str, Any]] = field(default_factory=dict)  # deleted, not yet counted
    backoff: jobmath.BackoffRecord = field(default_factory=jobmath.BackoffRecord)
    created: int = 0


class _Finish(Struct):
    type: str  # FailureTarget, Failed, SuccessCriteriaMet, Complete
    reason: str
    message: str

    @property
    def failure(self) -> bool:
        return self.type in ("FailureTarget", "Failed")


def job_finished(job: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(type, lastTransitionTime)`` of a True Complete/Failed condition (util.IsJobFinished)."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"]), str(cond.get("lastTransitionTime") or "")
    return None


def job_spec_defaults(spec: Mapping[str, Any]) -> tuple[int, int | None, int]:
    """``(parallelism, completions, backoffLimit)`` after API defaulting.

    kubernetes pkg/apis/batch/v1/defaults.go SetDefaults_Job: with neither completions nor
    parallelism both become 1; parallelism alone leaves completions nil (work queue);
    backoffLimit defaults to 6.
    """
    completions = spec.get("completions")
    parallelism = spec.get("parallelism")
    if completions is None and parallelism is None:
        completions, parallelism = 1, 1
    if parallelism is None:
        parallelism = 1
    backoff_limit = spec.get("backoffLimit")
    if backoff_limit is None:
        backoff_limit = jobmath.DEFAULT_BACKOFF_LIMIT
    return int(parallelism), None if completions is None else int(completions), int(backoff_limit)


class JobController(Controller):
    """batch/v1 Job controller (actor ``job-controller``)."""

    name = ACTOR
    kinds = ("Job", "Pod")

    def __init__(
        self,
        sim: Simulation,
        *,
        backoff_initial: float | None = None,
        backoff_cap: float | None = None,
        batch_period: float = jobmath.SYNC_JOB_BATCH_PERIOD,
    ) -> None:
        super().__init__(sim)
        profile = sim.profile
        self.backoff_initial = float(
            backoff_initial
            if backoff_initial is not None
            else getattr(
                profile, "job_backoff_initial_seconds", jobmath.DEFAULT_POD_FAILURE_BACKOFF
            )
        )
        self.backoff_cap = float(
            backoff_cap
            if backoff_cap is not None
            else getattr(profile, "job_backoff_cap_seconds", jobmath.MAX_POD_FAILURE_BACKOFF)
        )
        self.batch_period = batch_period
        self.queue = KeyedQueue(sim, self._sync)
        self._generation: dict[Key, int] = {}
        self._state: dict[str, _JobState] = {}
        self._failed: set[Key] = set()

    # --- event handlers ---------------------------------------------------------------------------
    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        if obj.get("kind") == "Job":
            self._on_job(event, obj)
        else:
            self._on_pod(event, obj)

    def _on_job(self, event: str, job: dict[str, Any]) -> None:
        meta = job["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        sync = self.sim.latency("controller_sync")
        cause = trigger_cause(self.sim, job)
        gen = int(meta.get("generation") or 1)
        if event == "ADDED" or event == "DELETED" or self._generation.get(key) != gen:
            # job_controller.go addJob/deleteJob/updateJob (generation changed): immediately
            self.queue.add_after(key, sync, cause)
        else:
            # updateJob with the same generation (status updates): batched
            self.queue.add_after(key, sync + self.batch_period, cause)
        if event == "DELETED":
            self._generation.pop(key, None)
        else:
            self._generation[key] = gen

    def _on_pod(self, event: str, pod: dict[str, Any]) -> None:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "Job":
            return
        ns = pod["metadata"].get("namespace") or ""
        job = self.store.get("Job", ns, ref.get("name", ""))
        if job is None or job["metadata"].get("uid") != ref.get("uid"):
            return
        if event == "DELETED":
            state = self._state.setdefault(job["metadata"]["uid"], _JobState())
            uid = pod["metadata"].get("uid", "")
            if uid not in state.counted:
                state.tombstones[uid] = clone(pod)
        # job_controller.go addPod/updatePod/deletePod: enqueueSyncJobBatched
        delay = self.sim.latency("controller_sync") + self.batch_period
        self.queue.add_after((ns, job["metadata"]["name"]), delay, trigger_cause(self.sim, pod))

    # --- syncJob ------------------------------------------------------------------------------------
    def _sync(self, key: Key, cause: int | None) -> None:
        """job_controller.go processNextWorkItem: a syncJob that failed (a pod the API server
        refused) is re-queued with the Job API back-off, 1 s doubling to 60 s
        (DefaultJobApiBackOff, MaxJobApiBackOff); a clean one is forgotten."""
        self._failed.discard(key)
        self._sync_job(key, cause)
        if key in self._failed:
            self.queue.add_rate_limited(key, JOB_API_BACKOFF, cause)
        else:
            self.queue.forget(key)

    def _sync_job(self, key: Key, cause: int | None) -> None:
        ns, name = key
        job = self.store.get("Job", ns, name)
        if job is None:
            return
        uid = job["metadata"]["uid"]
        if job_finished(job) is not None:
            self._state.pop(uid, None)
            return
        managed_by = (job.get("spec") or {}).get("managedBy")
        if managed_by not in (None, JOB_CONTROLLER_NAME):
            return  # job_controller.go managedByExternalController
        st = self._state.setdefault(uid, _JobState())
        spec = job.get("spec") or {}
        status: dict[str, Any] = clone(job.get("status") or {})
        parallelism, completions, backoff_limit = job_spec_defaults(spec)
        template = spec.get("template") or {}
        restart_policy = (template.get("spec") or {}).get("restartPolicy")
        pfp = spec.get("podFailurePolicy")
        suspended = bool(spec.get("suspend"))
        now = self.sim.now

        live = owned(self.store, "Pod", job)
        live_uids = {p["metadata"]["uid"] for p in live}
        gone = [p for u, p in st.tombstones.items() if u not in live_uids]
        pods = live + gone
        active_pods = [p for p in live if is_pod_active(p)]
        # job_controller.go onlyReplaceFailedPods: with a podFailurePolicy only Failed pods count
        only_failed = pfp is not None or spec.get("podReplacementPolicy") == "Failed"

        def considered_failed(p: Mapping[str, Any]) -> bool:
            # job_controller.go isPodFailed: Failed phase, or deleted and not Succeeded
            if pod_phase(p) == "Failed":
                return True
            if only_failed:
                return False
            removed = p["metadata"]["uid"] not in live_uids
            return (is_terminating(p) or removed) and pod_phase(p) != "Succeeded"

        uncounted = [p for p in pods if p["metadata"]["uid"] not in st.counted]
        new_succeeded = [p for p in uncounted if pod_phase(p) == "Succeeded"]
        new_failed = [p for p in uncounted if considered_failed(p)]
        succeeded = int(status.get("succeeded") or 0) + len(new_succeeded)
        failed = int(status.get("failed") or 0) + sum(
            1 for p in new_failed if jobmath.match_pod_failure_policy(pfp, p).count_failed
        )
        started_now = False
        if not status.get("startTime") and not suspended:
            status["startTime"] = self.sim.timestamp()
            started_now = True
        start = sim_seconds(status.get("startTime"))
        backoff = jobmath.new_backoff_record(
            st.backoff,
            [self._finish(p) for p in new_succeeded],
            [self._finish(p) for p in new_failed],
        )

        conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
        finish = self._existing_finish(conditions)
        if finish is None and pfp:
            for p in pods:
                if considered_failed(p):
                    msg = jobmath.match_pod_failure_policy(pfp, p).fail_job_message
                    if msg is not None:
                        finish = _Finish("FailureTarget", "PodFailurePolicy", msg)
                        break
        if finish is None:
            if jobmath.exceeds_backoff_limit(
                failed, backoff_limit
            ) or jobmath.past_backoff_limit_on_failure(restart_policy, backoff_limit, pods):
                finish = _Finish("FailureTarget", *BACKOFF_LIMIT_EXCEEDED)
            elif jobmath.past_active_deadline(
                spec.get("activeDeadlineSeconds"), start, now, suspended=suspended
            ):
                finish = _Finish("FailureTarget", *DEADLINE_EXCEEDED)
            elif (
                spec.get("activeDeadlineSeconds") is not None
                and not suspended
                and start is not None
            ):
                left = jobmath.active_deadline_remaining(
                    int(spec["activeDeadlineSeconds"]), start, now
                )
                self.queue.add_after(key, left, cause)

        active = len(active_pods)
        ready = sum(1 for p in active_pods if is_pod_ready(p))
        terminating = sum(
            1 for p in live if is_terminating(p) and pod_phase(p) not in ("Succeeded", "Failed")
        )
        events: list[tuple[str, str, str]] = []
        if finish is not None:
            # job_controller.go deleteActivePods: a finishing Job deletes what still runs
            deleted = self._delete_pods(job, active_pods, cause)
            active -= deleted
            terminating += deleted
            ready -= sum(1 for p in active_pods if is_pod_ready(p))
        else:
            if not job["metadata"].get("deletionTimestamp"):
                active, terminating, ready = self._manage(
                    job,
                    key,
                    st,
                    active_pods,
                    active,
                    terminating,
                    ready,
                    succeeded,
                    parallelism,
                    completions,
                    backoff,
                    only_failed,
                    suspended,
                    cause,
                )
            if jobmath.is_complete(completions, succeeded, active):
                finish = _Finish("SuccessCriteriaMet", *COMPLETIONS_REACHED)
            elif suspended:
                if _ensure_condition(
                    conditions,
                    "Suspended",
                    "True",
                    "JobSuspended",
                    "Job suspended",
                    self.sim.timestamp(),
                ):
                    events.append(("Normal", "Suspended", "Job suspended"))
            elif _ensure_condition(
                conditions, "Suspended", "False", "JobResumed", "Job resumed", self.sim.timestamp()
            ):
                events.append(("Normal", "Resumed", "Job resumed"))
                if not started_now:
                    status["startTime"] = self.sim.timestamp()  # resuming resets the deadline timer

        # trackJobStatusAndRemoveFinalizers: count finished pods (and, when failing, every
        # non-succeeded pod) and remember them as counted.
        for p in new_succeeded:
            st.counted.add(p["metadata"]["uid"])
        for p in uncounted:
            puid = p["metadata"]["uid"]
            if puid in st.counted:
                continue
            if considered_failed(p) or (
                finish is not None and finish.failure and pod_phase(p) != "Succeeded"
            ):
                if p not in new_failed and jobmath.match_pod_failure_policy(pfp, p).count_failed:
                    failed += 1
                st.counted.add(puid)
        for puid in list(st.tombstones):
            if puid in st.counted:
                del st.tombstones[puid]
        st.backoff = backoff

        status["active"] = active
        status["ready"] = ready
        status["terminating"] = terminating
        status["succeeded"] = succeeded
        status["failed"] = failed
        status["uncountedTerminatedPods"] = {}
        ts = self.sim.timestamp()
        interim = False
        if finish is not None and finish.type == "FailureTarget":
            conditions.append(_condition("FailureTarget", finish.reason, finish.message, ts))
            finish = _Finish("Failed", finish.reason, finish.message)
            interim = True
        elif finish is not None and finish.type == "SuccessCriteriaMet":
            if not any(c.get("type") == "SuccessCriteriaMet" for c in conditions):
                conditions.append(
                    _condition("SuccessCriteriaMet", finish.reason, finish.message, ts)
                )
                interim = True
            finish = _Finish("Complete", finish.reason, finish.message)
        status["conditions"] = conditions
        if finish is None or terminating > 0:
            # enactJobFinished: the terminal condition waits until no pod is terminating
            self._write_status(job, status, None, events, cause)
            return
        if interim:
            # flushUncountedAndRemoveFinalizers writes the interim condition first
            job = self._write_status(job, clone(status), None, events, cause) or job
            events = []
        final = clone(status)
        _ensure_condition(
            final["conditions"], finish.type, "True", finish.reason, finish.message, ts
        )
        if finish.type == "Complete":
            final["completionTime"] = ts
        self._write_status(job, final, finish, events, cause)

    def _manage(
        self,
        job: dict[str, Any],
        key: Key,
        st: _JobState,
        active_pods: list[dict[str, Any]],
        active: int,
        terminating: int,
        ready: int,
        succeeded: int,
        parallelism: int,
        completions: int | None,
        backoff: jobmath.BackoffRecord,
        only_failed: bool,
        suspended: bool,
        cause: int | None,
    ) -> tuple[int, int, int]:
        """job_controller.go manageJob: delete surplus pods or create missing ones (after backoff)."""
        if suspended:
            n = self._delete_pods(job, active_pods, cause)
            return (
                active - n,
                terminating + n,
                ready - sum(1 for p in active_pods if is_pod_ready(p)),
            )
        want = jobmath.want_active(parallelism, completions, succeeded, active)
        if active > want:
            # controller.ActivePods ordering: not-ready and unscheduled pods go first
            victims = sorted(
                active_pods, key=lambda p: (is_pod_ready(p), bool(p["spec"].get("nodeName")))
            )
            victims = victims[: min(active - want, jobmath.MAX_POD_CREATE_DELETE_PER_SYNC)]
            n = self._delete_pods(job, victims, cause)
            return active - n, terminating + n, ready - sum(1 for p in victims if is_pod_ready(p))
        diff = want - (terminating if only_failed else 0) - active
        if diff <= 0:
            return active, terminating, ready
        remaining = jobmath.remaining_backoff(
            backoff.failures_after_last_success,
            backoff.last_failure_time,
            self.sim.now,
            initial=self.backoff_initial,
            cap=self.backoff_cap,
        )
        if remaining > 0:
            # enqueueSyncJobWithDelay: at least syncJobBatchPeriod. (Upstream also reports
            # active=0 from this branch; the real count is kept here.)
            self.queue.add_after(key, max(remaining, self.batch_period), cause)
            return active, terminating, ready
        for _ in range(min(diff, jobmath.MAX_POD_CREATE_DELETE_PER_SYNC)):
            if not self._create_pod(job, st, cause):
                self._failed.add(key)  # manageJob returns the creation error
                break
            active += 1
        return active, terminating, ready

    def _create_pod(self, job: dict[str, Any], st: _JobState, cause: int | None) -> bool:
        """Create one pod; False (with the FailedCreate event) when the API server refuses it."""
        meta = job["metadata"]
        template = (job.get("spec") or {}).get("template") or {}
        st.created += 1
        base = f"{meta['name']}-"
        name = generate_name(base, f"{meta['uid']}/{st.created}")
        # The API server labels Job pods (pkg/registry/batch/job/strategy.go generateSelector):
        # batch.kubernetes.io/controller-uid, batch.kubernetes.io/job-name and the legacy keys.
        labels = {
            "batch.kubernetes.io/controller-uid": meta["uid"],
            "batch.kubernetes.io/job-name": meta["name"],
            "controller-uid": meta["uid"],
            "job-name": meta["name"],
        }
        pod = pod_from_template(job, template, name, generate_base=base, labels=labels)
        try:
            created = self.store.create(pod, actor=ACTOR, cause=cause)
        except ApiError as err:
            # pkg/controller/controller_utils.go RealPodControl.createPods: FailedCreate event
            self.store.record_event(
                job, "Warning", "FailedCreate", f"Error creating: {err.message}", source=ACTOR, cause=cause
            )
            return False
        # pkg/controller/controller_utils.go RealPodControl.createPods: SuccessfulCreate event
        self.store.record_event(
            job,
            "Normal",
            "SuccessfulCreate",
            f"Created pod: {name}",
            source=ACTOR,
            cause=trigger_cause(self.sim, created),
        )
        return True

    def _delete_pods(
        self, job: dict[str, Any], pods: list[dict[str, Any]], cause: int | None
    ) -> int:
        for pod in pods:
            pmeta = pod["metadata"]
            self.store.delete(
                "Pod",
                pmeta.get("namespace"),
                pmeta["name"],
                actor=ACTOR,
                cause=cause,
                grace=self.sim.pod_grace(pod),
            )
            # controller_utils.go RealPodControl.DeletePod: SuccessfulDelete event
            self.store.record_event(
                job,
                "Normal",
                "SuccessfulDelete",
                f"Deleted pod: {pmeta['name']}",
                source=ACTOR,
                cause=cause,
            )
        return len(pods)

    def _finish(self, pod: Mapping[str, Any]) -> float:
        return (jobmath.pod_finished_time(pod) - EPOCH).total_seconds()

    @staticmethod
    def _existing_finish(conditions: list[dict[str, Any]]) -> _Finish | None:
        for c in conditions:
            if c.get("type") == "SuccessCriteriaMet" and c.get("status") == "True":
                return _Finish("SuccessCriteriaMet", c.get("reason", ""), c.get("message", ""))
        for c in conditions:
            if c.get("type") == "FailureTarget" and c.get("status") == "True":
                # newFailedConditionForFailureTarget: Failed with the same reason and message
                return _Finish("Failed", c.get("reason", ""), c.get("message", ""))
        return None

    def _write_status(
        self,
        job: dict[str, Any],
        status: dict[str, Any],
        finished: _Finish | None,
        events: list[tuple[str, str, str]],
        cause: int | None,
    ) -> dict[str, Any] | None:
        old = job.get("status") or {}
        if status == old:
            return None
        meta = job["metadata"]
        message = _status_message(job, old, status)
        updated = self.store.update_status(
            "Job",
            meta.get("namespace"),
            meta["name"],
            status,
            actor=ACTOR,
            cause=cause,
            message=message,
        )
        if updated is None:
            return None
        ev_cause = trigger_cause(self.sim, updated) if message else cause
        for type_, reason, msg in events:
            self.store.record_event(updated, type_, reason, msg, source=ACTOR, cause=ev_cause)
        if finished is not None:
            # job_controller.go recordJobFinished
            if finished.type == "Complete":
                self.store.record_event(
                    updated, "Normal", "Completed", "Job completed", source=ACTOR, cause=ev_cause
                )
            else:
                self.store.record_event(
                    updated,
                    "Warning",
                    finished.reason,
                    finished.message,
                    source=ACTOR,
                    cause=ev_cause,
                )
        return updated


def _condition(type_: str, reason: str, message: str, ts: str) -> dict[str, Any]:
    # job_controller.go newCondition: lastProbeTime and lastTransitionTime both now
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": ts,
        "lastTransitionTime": ts,
    }


def _ensure_condition(
    conditions: list[dict[str, Any]], type_: str, status: str, reason: str, message: str, ts: str
) -> bool:
    """job_controller.go ensureJobConditionStatus: never appends a False condition."""
    for i, c in enumerate(conditions):
        if c.get("type") == type_:
            if (
                c.get("status") != status
                or c.get("reason") != reason
                or c.get("message") != message
            ):
                conditions[i] = {**_condition(type_, reason, message, ts), "status": status}
                return True
            return False
    if status != "False":
        conditions.append({**_condition(type_, reason, message, ts), "status": status})
        return True
    return False


def _status_message(
    job: Mapping[str, Any], old: Mapping[str, Any], new: Mapping[str, Any]
) -> str | None:
    """A trace line for user-visible changes (counters and conditions), else None."""
    old_conds = {(c.get("type"), c.get("status")) for c in old.get("conditions") or []}
    added = [
        c for c in new.get("conditions") or [] if (c.get("type"), c.get("status")) not in old_conds
    ]
    counters = ("active", "succeeded", "failed")
    changed = any(int(old.get(k) or 0) != int(new.get(k) or 0) for k in counters)
    if not added and not changed and bool(old.get("startTime")) == bool(new.get("startTime")):
        return None
    text = f"{ref_of(job)}: active={new.get('active', 0)} succeeded={new.get('succeeded', 0)} failed={new.get('failed', 0)}"
    for c in added:
        text += f"; {c['type']}={c['status']}"
        if c.get("reason"):
            text += f" ({c['reason']}: {c.get('message', '')})"
    return text


class TTLAfterFinishedController(Controller):
    """Deletes finished Jobs ``ttlSecondsAfterFinished`` after they finished.

    kubernetes pkg/controller/ttlafterfinished/ttlafterfinished_controller.go: the expiry is the
    Complete/Failed condition's lastTransitionTime + TTL; the Job is deleted with Foreground
    propagation (modelled as the store's background deletion: pods are collected after the Job).
    """

    name = TTL_ACTOR
    kinds = ("Job",)

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        self.queue = KeyedQueue(sim, self._sync)

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        if event == "DELETED":
            return
        spec = obj.get("spec") or {}
        if spec.get("ttlSecondsAfterFinished") is None or job_finished(obj) is None:
            return
        meta = obj["metadata"]
        self.queue.add_after(
            (meta.get("namespace") or "", meta["name"]),
            self.sim.latency("controller_sync"),
            trigger_cause(self.sim, obj),
        )

    def _sync(self, key: Key, cause: int | None) -> None:
        job = self.store.get("Job", key[0], key[1])
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        done = job_finished(job)
        if ttl is None or done is None:
            return
        finished_at = sim_seconds(done[1])
        expire = (finished_at if finished_at is not None else self.sim.now) + float(ttl)
        if expire > self.sim.now:
            self.queue.add_after(key, expire - self.sim.now, cause)
            return
        self.sim.log(
            TTL_ACTOR,
            "ttl-expired",
            ref_of(job),
            f"{ref_of(job)} finished at {done[1]}; ttlSecondsAfterFinished={ttl} expired, deleting",
            cause=cause,
        )
        self.store.delete("Job", key[0], key[1], actor=TTL_ACTOR, cause=len(self.sim.trace) - 1)
