"""The CronJob controller: Jobs only when the schedule fires inside the simulated horizon.

Mirrors kubernetes/kubernetes pkg/controller/cronjob (cronjob_controllerv2.go syncCronJob,
utils.go mostRecentScheduleTime/getJobName/nextScheduleTimeDuration). Schedules are the standard
five cron fields as github.com/robfig/cron/v3 ParseStandard reads them: ``*``, ``?``, numbers,
ranges ``a-b``, steps ``*/n`` and ``a-b/n``, lists, month and weekday names, the descriptors
``@yearly @annually @monthly @weekly @daily @midnight @hourly`` and ``@every <duration>``; when
both day-of-month and day-of-week are restricted a day matching either fires (robfig
``dayMatches``). ``spec.timeZone`` is honoured (IANA names); otherwise UTC, the simulated
cluster's zone. Simulated time 0 is 2026-01-01T00:00:00Z (``helmsim.cluster.engine.EPOCH``).

Timing: the controller wakes 100 ms after each scheduled time (utils.go ``nextScheduleDelta``)
plus ``controller_sync``. A CronJob created at t creates nothing before its first schedule time
after t, so in a horizon of minutes only frequent schedules ever create a Job.

Not modelled: ``TZ=``/``CRON_TZ=`` prefixes (rejected by API validation since 1.27; here an
``UnparseableSchedule`` event), the "too many missed start times" warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from msgspec import Struct

from helmsim.cluster.controllers.job import job_finished
from helmsim.cluster.controllers.workloads import (
    KeyedQueue,
    enqueue_owner,
    controller_ref,
    sim_seconds,
    trigger_cause,
)
from helmsim.cluster.engine import EPOCH, Controller
from helmsim.cluster.jobmath import parse_time
from helmsim.cluster.latency import parse_duration
from helmsim.cluster.store import ApiError, owner_reference, ref_of

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

ACTOR = "cronjob-controller"
# cronjob utils.go: nextScheduleDelta = 100 * time.Millisecond
NEXT_SCHEDULE_DELTA = 0.1
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
_DOWS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# robfig/cron/v3 parser.go parseDescriptor
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class ScheduleError(ValueError):
    """An unparseable cron schedule."""


class Schedule(Struct, frozen=True):
    """A parsed schedule: allowed values per field, or a constant delay (``@every``)."""

    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    doms: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    dows: frozenset[int] = frozenset()
    dom_star: bool = True
    dow_star: bool = True
    every: float | None = None

    def next_after(self, t: datetime) -> datetime | None:
        """The first activation strictly after ``t`` (robfig SpecSchedule.Next), within 5 years."""
        if self.every is not None:
            # robfig constantdelay.go: t + delay, rounded down to the second
            step = max(1.0, float(int(self.every)))
            return t.replace(microsecond=0) + timedelta(seconds=step)
        start = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
        day = start.replace(hour=0, minute=0)
        for offset in range(366 * 5):
            d = day + timedelta(days=offset)
            if d.month not in self.months or not self._day_matches(d):
                continue
            for hour in sorted(self.hours):
                for minute in sorted(self.minutes):
                    cand = d.replace(hour=hour, minute=minute)
                    if cand >= start:
                        return cand
        return None

    def _day_matches(self, d: datetime) -> bool:
        dom_ok = d.day in self.doms
        dow_ok = (d.isoweekday() % 7) in self.dows
        if self.dom_star or self.dow_star:
            return dom_ok and dow_ok
        return dom_ok or dow_ok


def parse_schedule(text: str) -> Schedule:
    """Parse a cron schedule as robfig/cron/v3 ParseStandard does (see the module docstring)."""
    spec = (text or "").strip()
    if not spec:
        raise ScheduleError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        raise ScheduleError("TZ and CRON_TZ are not supported in schedule; use spec.timeZone")
    if spec.startswith("@every "):
        try:
            return Schedule(every=parse_duration(spec[len("@every ") :]))
        except ValueError as err:
            raise ScheduleError(f"failed to parse duration {spec}: {err}") from None
    spec = _DESCRIPTORS.get(spec, spec)
    if spec.startswith("@"):
        raise ScheduleError(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{spec}]")
    minutes, _ = _field(fields[0], 0, 59, {})
    hours, _ = _field(fields[1], 0, 23, {})
    doms, dom_star = _field(fields[2], 1, 31, {})
    months, _ = _field(fields[3], 1, 12, _MONTHS)
    dows, dow_star = _field(fields[4], 0, 6, _DOWS)
    return Schedule(minutes, hours, doms, months, dows, dom_star, dow_star)


def _field(text: str, low: int, high: int, names: Mapping[str, int]) -> tuple[frozenset[int], bool]:
    values: set[int] = set()
    star = False
    for part in text.split(","):
        step = 1
        rng = part
        if "/" in part:
            rng, step_text = part.split("/", 1)
            if not step_text.isdigit() or int(step_text) == 0:
                raise ScheduleError(f"invalid step in {part!r}")
            step = int(step_text)
        if rng in ("*", "?"):
            start, end = low, high
            star = star or step == 1
        elif "-" in rng:
            a, b = rng.split("-", 1)
            start, end = _value(a, names), _value(b, names)
        else:
            start = _value(rng, names)
            end = high if "/" in part else start
        if start < low or end > high or start > end:
            raise ScheduleError(f"value out of range ({low}-{high}): {part!r}")
        values.update(range(start, end + 1, step))
    return frozenset(values), star


def _value(text: str, names: Mapping[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not re.fullmatch(r"[0-9]+", text):
        raise ScheduleError(f"failed to parse int from {text}")
    return int(text)


def job_name(cronjob_name: str, scheduled: datetime) -> str:
    """cronjob utils.go getJobName: ``<cronjob>-<scheduled time in Unix minutes>``."""
    return f"{cronjob_name}-{int(scheduled.timestamp()) // 60}"


Key = tuple[str, str]


class CronJobController(Controller):
    """batch/v1 CronJob controller (actor ``cronjob-controller``)."""

    name = ACTOR
    kinds = ("CronJob", "Job")

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        self.queue = KeyedQueue(sim, self._sync)

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        enqueue_owner(self.sim, self.queue, "CronJob", event, obj)

    def _zone(self, cj: Mapping[str, Any]) -> tzinfo | None:
        tz = (cj.get("spec") or {}).get("timeZone")
        if not tz:
            return EPOCH.tzinfo
        try:
            return ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            return None

    def _sync(self, key: Key, cause: int | None) -> None:
        cj = self.store.get("CronJob", *key)
        if cj is None or cj["metadata"].get("deletionTimestamp"):
            return
        spec = cj.get("spec") or {}
        status: dict[str, Any] = dict(cj.get("status") or {})
        self._reconcile_jobs(cj, status, cause)
        zone = self._zone(cj)
        try:
            schedule = parse_schedule(str(spec.get("schedule") or ""))
        except ScheduleError as err:
            # cronjob_controllerv2.go: UnparseableSchedule
            self.store.record_event(
                cj,
                "Warning",
                "UnparseableSchedule",
                f"unparseable schedule: {spec.get('schedule')!r} : {err}",
                source=ACTOR,
                cause=cause,
            )
            self._write(cj, status, cause)
            return
        if zone is None:
            self.store.record_event(
                cj,
                "Warning",
                "UnknownTimeZone",
                f"invalid timeZone: {spec.get('timeZone')!r}",
                source=ACTOR,
                cause=cause,
            )
            self._write(cj, status, cause)
            return
        if spec.get("suspend"):
            self._write(cj, status, cause)
            return
        now = self.sim.datetime().astimezone(zone)
        earliest = (
            parse_time(status.get("lastScheduleTime"))
            or parse_time(cj["metadata"].get("creationTimestamp"))
            or now
        )
        earliest = earliest.astimezone(zone)
        sds = spec.get("startingDeadlineSeconds")
        if sds is not None:
            earliest = max(earliest, now - timedelta(seconds=int(sds)))
        scheduled = None
        t = schedule.next_after(earliest)
        for _ in range(10_000):  # utils.go mostRecentScheduleTime walks the missed start times
            if t is None or t > now:
                break
            scheduled = t
            t = schedule.next_after(t)
        if scheduled is not None:
            self._start(cj, spec, status, scheduled, cause)
        self._write(cj, status, cause)
        nxt = schedule.next_after(max(earliest, now))
        if nxt is not None:
            delay = (nxt - now).total_seconds() + NEXT_SCHEDULE_DELTA
            self.queue.add_after(key, delay, cause)

    def _start(
        self,
        cj: dict[str, Any],
        spec: Mapping[str, Any],
        status: dict[str, Any],
        scheduled: datetime,
        cause: int | None,
    ) -> None:
        name = cj["metadata"]["name"]
        ns = cj["metadata"].get("namespace") or "default"
        active = list(status.get("active") or [])
        policy = spec.get("concurrencyPolicy") or "Allow"
        if active and policy == "Forbid":
            # cronjob_controllerv2.go: JobAlreadyActive
            self.store.record_event(
                cj,
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
                source=ACTOR,
                cause=cause,
            )
            return
        if active and policy == "Replace":
            for ref in active:
                if self.store.delete("Job", ns, ref["name"], actor=ACTOR, cause=cause):
                    self.store.record_event(
                        cj,
                        "Normal",
                        "SuccessfulDelete",
                        f"Deleted job {ref['name']}",
                        source=ACTOR,
                        cause=cause,
                    )
            active = []
        tmpl = spec.get("jobTemplate") or {}
        jname = job_name(name, scheduled)
        ts = scheduled.astimezone(EPOCH.tzinfo).strftime("%Y-%m-%dT%H:%M:%SZ")
        tmeta = tmpl.get("metadata") or {}
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": jname,
                "namespace": ns,
                "labels": dict(tmeta.get("labels") or {}),
                "annotations": {**(tmeta.get("annotations") or {}), SCHEDULED_TIMESTAMP: ts},
                "ownerReferences": [owner_reference(cj)],
            },
            "spec": dict(tmpl.get("spec") or {}),
        }
        try:
            created = self.store.create(job, actor=ACTOR, cause=cause)
        except ApiError as err:
            if err.reason != "AlreadyExists":
                self.store.record_event(
                    cj,
                    "Warning",
                    "FailedCreate",
                    f"Error creating job: {err.message}",
                    source=ACTOR,
                    cause=cause,
                )
                return
            created = self.store.get("Job", ns, jname) or job
        else:
            self.store.record_event(
                cj,
                "Normal",
                "SuccessfulCreate",
                f"Created job {jname}",
                source=ACTOR,
                cause=trigger_cause(self.sim, created),
            )
        m = created["metadata"]
        if all(r.get("uid") != m.get("uid") for r in active):
            active.append(
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": jname,
                    "namespace": ns,
                    "uid": m.get("uid"),
                    "resourceVersion": m.get("resourceVersion"),
                }
            )
        status["active"] = active
        status["lastScheduleTime"] = ts

    def _reconcile_jobs(
        self, cj: dict[str, Any], status: dict[str, Any], cause: int | None
    ) -> None:
        """syncCronJob: drop finished/missing Jobs from ``active``; cleanupFinishedJobs."""
        ns = cj["metadata"].get("namespace") or ""
        uid = cj["metadata"]["uid"]
        jobs = [
            j for j in self.store.list("Job", ns) if (controller_ref(j) or {}).get("uid") == uid
        ]
        by_uid = {j["metadata"]["uid"]: j for j in jobs}
        active = []
        for ref in status.get("active") or []:
            job = by_uid.get(ref.get("uid"))
            if job is None:
                continue  # MissingJob: dropped from active
            done = job_finished(job)
            if done is None:
                active.append(ref)
                continue
            self.store.record_event(
                cj,
                "Normal",
                "SawCompletedJob",
                f"Saw completed job: {job['metadata']['name']}, condition: {done[0]}",
                source=ACTOR,
                cause=cause,
            )
            if done[0] == "Complete":
                status["lastSuccessfulTime"] = done[1][:19] + "Z"
        if active:
            status["active"] = active
        else:
            status.pop("active", None)
        spec = cj.get("spec") or {}
        for kind, limit in (
            ("Complete", spec.get("successfulJobsHistoryLimit", 3)),
            ("Failed", spec.get("failedJobsHistoryLimit", 1)),
        ):
            finished = sorted(
                (
                    j
                    for j in jobs
                    if (job_finished(j) or ("",))[0] == kind
                    and not j["metadata"].get("deletionTimestamp")
                ),
                key=lambda j: sim_seconds(j["metadata"].get("creationTimestamp")) or 0.0,
            )
            for job in finished[: max(0, len(finished) - int(limit))]:
                self.store.delete("Job", ns, job["metadata"]["name"], actor=ACTOR, cause=cause)
                self.store.record_event(
                    cj,
                    "Normal",
                    "SuccessfulDelete",
                    f"Deleted job {job['metadata']['name']}",
                    source=ACTOR,
                    cause=cause,
                )

    def _write(self, cj: dict[str, Any], status: dict[str, Any], cause: int | None) -> None:
        if status == (cj.get("status") or {}):
            return
        message = f"{ref_of(cj)}: active={len(status.get('active') or [])} lastScheduleTime={status.get('lastScheduleTime')}"
        self.store.update_status(
            "CronJob",
            cj["metadata"].get("namespace"),
            cj["metadata"]["name"],
            status,
            actor=ACTOR,
            cause=cause,
            message=message,
        )
