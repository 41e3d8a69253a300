"""A rollout timeline as one self-contained HTML file (docs/html-report.md).

Per profile and release: one lane per object (the HelmRelease, Helm's actions, its kind groups,
its wait with the polls, hooks, the release objects and the pods, ReplicaSets and volumes their
controllers create), state spans, trace events as focusable markers, the verdict, optional
findings (cause chains linked to the lanes and markers they cite) and optional Monte-Carlo
outcome histograms. Styles and script come from ``helmsim/report/assets`` and are inlined: the
file needs no network. The output is a pure function of its inputs (no generation time, ids
derived from trace ids and object names). Only trace messages and outcome fields are printed,
never an object's body, so Secret data cannot appear.
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import Any

from msgspec import Struct, field

from helmsim.cluster.trace import TraceEvent
from helmsim.report.safe import safe_text
from helmsim.simulate import ReleaseOutcome, SimulationResult

OUTCOMES = ("Ready", "Failed", "Stalled", "Blocked", "Progressing")


# --- inputs from other commands ------------------------------------------------------------------
class ChainStep(Struct, frozen=True):
    """One link of a cause chain: a trace event (``event_id``) or a derived fact (None)."""

    time: float
    obj: str
    text: str
    event_id: int | None = None

    @classmethod
    def coerce(cls, value: Any) -> ChainStep | int:
        """A trace id stays an int; mappings (``time``, ``object``, ``text``, ``event``) and
        objects with ``time``/``obj``/``text``/``event_id`` attributes become steps."""
        if isinstance(value, ChainStep | int):
            return value
        if isinstance(value, Mapping):
            event = value.get("event", value.get("event_id"))
            return cls(float(value.get("time", 0.0)), str(value.get("object", value.get("obj", ""))),
                       str(value.get("text", "")), None if event is None else int(event))
        event = getattr(value, "event_id", None)
        return cls(float(value.time), str(value.obj), str(value.text), None if event is None else int(event))


class Finding(Struct, frozen=True):
    """A problem found in a run (``helmsim check``), shown with its cause chain.

    ``chain`` lists trace event ids or ``ChainStep``s, cause first (``Trace.chain`` order);
    ``objects`` the ``Kind/namespace/name`` refs the finding cites; ``profile`` and ``release``
    (``namespace/name`` of the HelmRelease) say which run it belongs to (default: the first).
    ``severity`` is error, warning or note. ``run`` (an index into the runs) picks the run
    when several share a profile (``helmsim test``: one run per scenario); it wins over ``profile``.
    """

    title: str
    message: str = ""
    severity: str = "error"
    profile: str | None = None
    release: str | None = None
    chain: tuple[int | ChainStep, ...] = ()
    objects: tuple[str, ...] = ()
    id: str | None = None
    run: int | None = None
    fixes: tuple[tuple[str, str, str], ...] = ()
    """``(summary, how its re-simulation went, ok|warn|"")`` per suggested fix."""

    @classmethod
    def coerce(cls, value: Finding | Mapping[str, Any]) -> Finding:
        """A ``Finding`` from itself or from a mapping with the same keys."""
        if isinstance(value, Finding):
            return value
        return cls(
            title=str(value.get("title", "")),
            message=str(value.get("message", "")),
            severity=str(value.get("severity", "error")),
            profile=value.get("profile"),
            release=value.get("release"),
            chain=tuple(ChainStep.coerce(i) for i in value.get("chain", ()) or ()),
            objects=tuple(str(o) for o in value.get("objects", ()) or ()),
            id=value.get("id"),
            run=None if value.get("run") is None else int(value["run"]),
            fixes=tuple(
                (str(f[0]), str(f[1]), str(f[2])) for f in value.get("fixes", ()) or ()
            ),
        )

    @property
    def event_ids(self) -> list[int]:
        """The trace ids the chain cites."""
        out = []
        for c in self.chain:
            i = c if isinstance(c, int) else c.event_id
            if i is not None:
                out.append(i)
        return out


class OutcomeDistribution(Struct, frozen=True):
    """Monte-Carlo outcomes of one release under one profile (``helmsim test``).

    ``counts`` maps an outcome (Ready, Failed, Stalled, Blocked, Progressing) to its number of
    runs; ``ready_at`` holds the simulated time to Ready of the runs that got Ready. ``run`` (an
    index into the runs) puts it next to that run's timeline only, when several share a profile.
    """

    release: str
    profile: str
    counts: Mapping[str, int]
    ready_at: tuple[float, ...] = ()
    run: int | None = None

    @classmethod
    def coerce(cls, value: OutcomeDistribution | Mapping[str, Any]) -> OutcomeDistribution:
        """An ``OutcomeDistribution`` from itself or from a mapping with the same keys."""
        if isinstance(value, OutcomeDistribution):
            return value
        return cls(
            release=str(value["release"]),
            profile=str(value["profile"]),
            counts={str(k): int(v) for k, v in dict(value.get("counts") or {}).items()},
            ready_at=tuple(float(t) for t in value.get("ready_at", value.get("readyAt", ())) or ()),
            run=None if value.get("run") is None else int(value["run"]),
        )


# --- the timeline model --------------------------------------------------------------------------
class Span(Struct):
    """A stretch of one state of a lane's object; ``band`` "main" or "overlay" (hook, denied)."""

    start: float
    end: float | None
    state: str
    style: str
    band: str = "main"


class Marker(Struct):
    """Trace events at one time on one lane (same-time events grouped)."""

    time: float
    ids: list[int]
    what: str
    severity: str
    messages: list[str]
    repeats: int = 1
    until: float | None = None


class Lane(Struct):
    """One row of the timeline."""

    key: str
    kind: str
    namespace: str
    name: str
    title: str
    role: str
    order: int
    depth: int = 0
    parent: str | None = None
    note: str = ""
    spans: list[Span] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    cited_by: list[str] = field(default_factory=list)
    needs: list[tuple[str, float | None]] = field(default_factory=list)
    """Policy lanes a pod's containers depend on (from the kubelet's behaviour inference) and
    when each took effect."""


class ReleaseTimeline(Struct):
    """The lanes of one simulated release and its verdict."""

    outcome: ReleaseOutcome
    lanes: list[Lane]
    end: float
    verdict_time: float


# Severity order (highest last) and the glyph each marker shows: shapes tell them apart
# without colour.
_SEVERITY = ("info", "ok", "warn", "fail", "deny")
_GLYPH = {"info": "●", "ok": "✓", "warn": "▲", "fail": "✕", "deny": "⊘"}
_SEVERITY_WORD = {"info": "event", "ok": "ok", "warn": "warning", "fail": "failure", "deny": "denied"}
# Span styles and the word/glyph written in them.
_STYLE_GLYPH = {
    "ok": "✓", "run": "▶", "progress": "…", "pending": "◔", "failed": "✕", "denied": "⊘",
    "deleted": "⌫", "hook": "⚓", "neutral": "",
}
_OUTCOME_SEVERITY = {"Ready": "ok", "Failed": "fail", "Stalled": "fail", "Blocked": "warn", "Progressing": "info"}

# Events that become markers (besides Kubernetes Events chosen below and finding citations).
_MARKER_WHATS = {
    "action-start", "apply-group", "apply-error", "adopted", "kept", "hook-start", "hook-failed",
    "hook-succeeded", "wait-start", "wait-end", "poll", "release", "condition", "stalled",
    "requeue", "connect-denied", "connect-timeout", "policy-in-effect", "policy-out-of-effect",
    "identity-pending", "container-exited", "container-log", "behaviour",
}
_NOTABLE_REASONS = {
    "WaitForFirstConsumer", "ExternalProvisioning", "ProvisioningSucceeded", "ProvisioningFailed",
    "FailedBinding", "FailedScheduling", "BackoffLimitExceeded", "DeadlineExceeded", "Completed",
    "SuccessfulCreate", "BackOff", "ProgressDeadlineExceeded", "Started", "Killing",
}
# Objects that controllers create for a release object and that get their own (nested) lane.
_CHILD_KINDS = {"ReplicaSet", "Pod", "Job", "PersistentVolumeClaim", "PersistentVolume"}
_RELEASE_REF = re.compile(r"^([a-z0-9][-a-z0-9.]*)/(.+)\.v(\d+)$")
_PHASE = re.compile(r"phase (\w+) -> (\w+)")
_CLAIM_PHASE = re.compile(r" is (Pending|Bound|Lost)\b")
_POLICY_CITED = re.compile(r"\b((?:Cilium)?(?:Clusterwide)?NetworkPolicy) (?:([a-z0-9][-a-z0-9.]*)/)?([a-z0-9][-a-z0-9.]*)")
_POLL_STYLE = {"Current": "ok", "InProgress": "progress", "Failed": "failed", "Terminating": "deleted"}
_POD_STYLE = {"Pending": "pending", "Running": "run", "Succeeded": "ok", "Failed": "failed", "Unknown": "pending"}


def _split_ref(obj: str) -> tuple[str, str, str] | None:
    """``Kind/ns/name`` or ``Kind/name`` → (kind, namespace, name); None for anything else."""
    parts = obj.split("/")
    if len(parts) not in (2, 3) or not parts[0][:1].isupper():
        return None
    if len(parts) == 2:
        return parts[0], "", parts[1]
    return parts[0], parts[1], parts[2]


def _release_of_ref(obj: str) -> tuple[str, str] | None:
    m = _RELEASE_REF.match(obj)
    return (m.group(1), m.group(2)) if m else None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "x"


def _severity(ev: TraceEvent) -> str:
    w, d = ev.what, ev.data
    if w in ("connect-denied", "connect-timeout"):
        return "deny"
    if w in ("apply-error", "hook-failed", "stalled"):
        return "fail"
    if w == "wait-end":
        return "fail" if d.get("error") else "ok"
    if w == "release":
        return {"deployed": "ok", "failed": "fail"}.get(str(d.get("status")), "info")
    if w == "container-exited":
        return "ok" if d.get("exitCode") == 0 else "fail"
    if w == "poll":
        return {"Current": "ok", "Failed": "fail"}.get(str(d.get("status")), "info")
    if w == "condition":
        status, reason = d.get("status"), str(d.get("reason", ""))
        if status == "True":
            return "ok"
        if status == "False":
            return "warn" if reason == "DependencyNotReady" else "fail"
        return "info"
    if w in ("hook-succeeded", "policy-in-effect"):
        return "ok"
    if w in ("policy-out-of-effect", "identity-pending"):
        return "warn"
    if w == "event":
        return "warn" if d.get("type") == "Warning" else "info"
    return "info"


def _is_marker(ev: TraceEvent) -> bool:
    if ev.what == "event":
        if ev.actor == "helm-controller":
            return False  # the condition right before says the same
        return ev.data.get("type") == "Warning" or ev.data.get("reason") in _NOTABLE_REASONS
    if ev.what == "connected":
        return int(ev.data.get("attempt", 1) or 1) > 1  # only retried connections are news
    return ev.what in _MARKER_WHATS


def _message(ev: TraceEvent) -> str:
    if ev.what == "event":
        return f"{ev.data.get('type', 'Normal')} {ev.data.get('reason', '')}: {ev.message}"
    return ev.message


class _LaneBuilder:
    """Spans of one lane from its events, in time order."""

    def __init__(self, lane: Lane) -> None:
        self.lane = lane
        self.current: Span | None = None
        self.overlays: dict[str, Span] = {}

    def state(self, t: float, state: str, style: str) -> None:
        cur = self.current
        if cur is not None and cur.state == state and cur.style == style:
            return
        if cur is not None:
            cur.end = t
        self.current = Span(t, None, state, style)
        self.lane.spans.append(self.current)

    def close(self, t: float) -> None:
        if self.current is not None:
            self.current.end = t
            self.current = None

    def overlay_open(self, key: str, t: float, state: str, style: str) -> Span:
        span = self.overlays.get(key)
        if span is None:
            span = Span(t, None, state, style, band="overlay")
            self.overlays[key] = span
            self.lane.spans.append(span)
        return span

    def overlay_close(self, key: str, t: float, *, state: str | None = None, style: str | None = None) -> None:
        span = self.overlays.pop(key, None)
        if span is not None:
            span.end = t
            if state is not None:
                span.state = state
            if style is not None:
                span.style = style

    def feed(self, ev: TraceEvent) -> None:
        kind, role, w, t = self.lane.kind, self.lane.role, ev.what, ev.time
        if role == "helmrelease":
            if w == "condition" and ev.data.get("type") == "Ready":
                status, reason = ev.data.get("status"), str(ev.data.get("reason", ""))
                if status == "True":
                    self.state(t, f"Ready: {reason}", "ok")
                elif status == "False":
                    self.state(t, f"Not ready: {reason}", "pending" if reason == "DependencyNotReady" else "failed")
                else:
                    self.state(t, f"Progressing: {reason}", "progress")
            elif w == "stalled":
                self.state(t, f"Stalled: {ev.data.get('reason', '')}", "failed")
            return
        if role == "helm":
            if w == "action-start":
                self.state(t, str(ev.data.get("action", "action")), "progress")
            elif w == "release" and self.current is not None:
                status = str(ev.data.get("status", ""))
                self.current.state = f"{self.current.state} → {status}"
                self.current.style = {"deployed": "ok", "failed": "failed"}.get(status, "neutral")
                self.close(t)
            return
        if role == "groups":
            if w == "apply-group":
                self.state(t, f"{ev.data.get('kind', ev.obj)} ×{ev.data.get('count', 1)}", "progress")
            elif w in ("wait-start", "release", "apply-error"):
                self.close(t)
            return
        if role == "wait":
            if w == "wait-start":
                self.state(t, "waiting", "pending")
            elif w == "wait-end" and self.current is not None:
                err = ev.data.get("error")
                self.current.state = "timeout" if err and "timeout" in str(err) else ("failed" if err else "all ready")
                self.current.style = "failed" if err else "ok"
                self.close(t)
            return
        # release objects and their children
        if w == "deleted":
            for key in list(self.overlays):
                self.overlay_close(key, t)
            self.close(t)
            return
        if w == "deleting":
            self.state(t, "Terminating", "deleted")
            return
        if w == "hook-start":
            self.overlay_open("hook", t, f"{ev.data.get('event', 'hook')} hook", "hook")
        elif w in ("hook-succeeded", "hook-failed"):
            ok = w == "hook-succeeded"
            self.overlay_close("hook", t, state=f"{ev.data.get('event', 'hook')} hook {'succeeded' if ok else 'failed'}",
                               style="hook" if ok else "failed")
        if kind == "Pod":
            self._pod(ev)
        elif kind == "PersistentVolumeClaim":
            if w in ("created", "adopted") and self.current is None:
                self.state(t, "Pending", "pending")
            m = _CLAIM_PHASE.search(ev.message) if w == "status" else None
            if m:
                self.state(t, m.group(1), {"Bound": "ok", "Lost": "failed"}.get(m.group(1), "pending"))
        elif kind.endswith("NetworkPolicy"):
            if w in ("created", "adopted") and self.current is None:
                self.state(t, "created, not in effect yet", "pending")
            elif w == "policy-in-effect":
                self.state(t, "in effect", "ok")
            elif w == "policy-out-of-effect":
                self.state(t, "not in effect", "pending")
        else:
            if w in ("created", "configured", "adopted", "unchanged") and self.current is None:
                self.state(t, "applied", "neutral")
            elif w == "poll" and self.current is not None and self.current.style != "deleted":
                status = str(ev.data.get("status", ""))
                self.state(t, status, _POLL_STYLE.get(status, "pending"))

    def _pod(self, ev: TraceEvent) -> None:
        w, t = ev.what, ev.time
        if w == "created" and self.current is None:
            self.state(t, "Pending", "pending")
        elif w == "status":
            m = _PHASE.search(ev.message)
            if m and self.current is not None and self.current.style == "deleted":
                self.state(t, f"Terminating ({m.group(2)})", "deleted")  # killed, not failed on its own
            elif m:
                self.state(t, m.group(2), _POD_STYLE.get(m.group(2), "pending"))
        elif w in ("connect-denied", "connect-timeout", "connected"):
            key = f"net:{ev.data.get('container', '')}:{ev.data.get('dial', ev.data.get('target', ''))}"
            if w == "connect-denied":
                span = self.overlay_open(key, t, "denied", "denied")
                span.state = f"denied ×{int(ev.data.get('attempt', 1) or 1)}: {ev.data.get('target', '')}"
            elif w == "connect-timeout":
                self.overlay_close(key, t, state=f"timed out: {ev.data.get('target', '')}", style="failed")
            else:
                self.overlay_close(key, t)
        elif w == "container-exited":
            for key in [k for k in self.overlays if k.startswith(f"net:{ev.data.get('container', '')}:")]:
                self.overlay_close(key, t)


def _build_release(
    outcome: ReleaseOutcome,
    events: list[TraceEvent],
    release_of: Mapping[int, tuple[str, str]],
    force: set[int],
) -> ReleaseTimeline:
    lanes: dict[str, Lane] = {}
    order = 0

    def new_lane(key: str, **kw: Any) -> Lane:
        nonlocal order
        order += 1
        lane = Lane(key=key, order=order, **kw)
        lanes[key] = lane
        return lane

    hr_obj = f"HelmRelease/{outcome.namespace}/{outcome.name}"
    rel = f"{outcome.target_namespace}/{outcome.release_name}"
    new_lane(hr_obj, kind="HelmRelease", namespace=outcome.namespace, name=outcome.name,
             title=f"HelmRelease {outcome.name}", role="helmrelease", note="helm-controller")
    new_lane("helm:" + rel, kind="Helm", namespace=outcome.target_namespace, name=outcome.release_name,
             title=f"Helm actions on {rel}", role="helm")
    new_lane("groups:" + rel, kind="Helm", namespace=outcome.target_namespace, name=outcome.release_name,
             title="kind groups applied", role="groups", note="Helm applies kind by kind")
    new_lane("wait:" + rel, kind="Helm", namespace=outcome.target_namespace, name=outcome.release_name,
             title="wait for the release objects", role="wait", note="polls of each object's status")

    # (lane, event, may be a marker): some events only move a lane's state
    assigned: list[tuple[Lane, TraceEvent, bool]] = []
    lane_of_event: dict[int, Lane] = {}
    by_id = {ev.id: ev for ev in events}
    wait_lane, groups_lane, helm_lane = lanes["wait:" + rel], lanes["groups:" + rel], lanes["helm:" + rel]
    mine = (outcome.target_namespace, outcome.release_name)
    for ev in events:
        lane: Lane | None = None
        ours = release_of.get(ev.id) == mine
        if ev.obj == hr_obj:
            lane = lanes[hr_obj]
        elif ev.what in ("action-start", "release") and ours:
            lane = helm_lane
            if ev.what == "release":
                assigned.append((groups_lane, ev, False))  # ends the last kind group
        elif ev.what == "apply-group" and ours:
            lane = groups_lane
        elif ev.what in ("wait-start", "wait-end") and _release_of_ref(ev.obj):
            if not ours:
                continue
            lane = wait_lane
            if ev.what == "wait-start":
                assigned.append((groups_lane, ev, False))
        elif ev.what == "poll" and ev.cause is not None and lane_of_event.get(ev.cause) is wait_lane:
            lane_of_event[ev.id] = wait_lane
            assigned.append((wait_lane, ev, True))
            if ev.obj in lanes:
                assigned.append((lanes[ev.obj], ev, False))  # the object's status as the wait saw it
            continue
        else:
            lane = lanes.get(ev.obj)
            parsed = _split_ref(ev.obj)
            if lane is None and parsed is not None:
                if ev.actor == "helm" and ours:
                    lane = new_lane(ev.obj, kind=parsed[0], namespace=parsed[1], name=parsed[2],
                                    title=f"{parsed[0]} {parsed[2]}", role="object")
                elif ev.what == "created" and parsed[0] in _CHILD_KINDS:
                    parent = _parent_lane(ev, by_id, lanes)
                    if parent is not None:
                        lane = new_lane(ev.obj, kind=parsed[0], namespace=parsed[1], name=parsed[2],
                                        title=f"{parsed[0]} {parsed[2]}", role="object",
                                        depth=parent.depth + 1, parent=parent.key)
        if lane is None:
            continue
        if ev.what == "hook-start" and not lane.note:
            lane.note = f"hook: {ev.data.get('event', '')}"
        lane_of_event[ev.id] = lane
        # a hook's own polls move its state; they are markers only on the release wait lane
        assigned.append((lane, ev, ev.what != "poll"))

    _name_attempts(lanes, outcome.release_name)
    builders = {key: _LaneBuilder(lane) for key, lane in lanes.items()}
    last = 0.0
    for lane, ev, may_mark in assigned:
        builders[lane.key].feed(ev)
        if may_mark:
            last = max(last, ev.time)
            if _is_marker(ev) or ev.id in force:
                _add_marker(lane, ev)
    _link_needed_policies(lanes, assigned)
    verdict_time = _verdict_time(outcome, events, last)
    end = max(last, verdict_time, 1.0)
    kept = [lane for lane in lanes.values() if lane.spans or lane.markers]
    return ReleaseTimeline(outcome, _tree_order(kept), end, verdict_time)


def _link_needed_policies(lanes: Mapping[str, Lane], assigned: Sequence[tuple[Lane, TraceEvent, bool]]) -> None:
    """Pods whose inferred behaviour names a policy lane of this release need that policy."""
    for lane, ev, _ in assigned:
        if lane.kind != "Pod" or ev.what != "behaviour":
            continue
        for kind, ns, name in _POLICY_CITED.findall(ev.message):
            key = f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}"
            policy = lanes.get(key)
            if policy is None or any(k == key for k, _ in lane.needs):
                continue
            effect = next((s.start for s in policy.spans if s.state == "in effect"), None)
            lane.needs.append((key, effect))


def _parent_lane(ev: TraceEvent, by_id: Mapping[int, TraceEvent], lanes: Mapping[str, Lane]) -> Lane | None:
    """The lane of the object whose event caused ``ev`` (a controller creating a child)."""
    cur = ev.cause
    seen: set[int] = set()
    while cur is not None and cur not in seen:
        seen.add(cur)
        cause = by_id.get(cur)
        if cause is None:
            return None
        lane = lanes.get(cause.obj)
        if lane is not None and lane.role == "object" and cause.obj != ev.obj:
            return lane
        cur = cause.cause
    return None


def _name_attempts(lanes: Mapping[str, Lane], release: str = "") -> None:
    """Pods of a Job are its attempts: ``migrate-<hash> pod 2/3`` in creation order, the Job
    named without the release-name prefix its chart gives it (the full name is the lane's)."""
    pods: dict[str, list[Lane]] = {}
    for lane in sorted(lanes.values(), key=lambda x: x.order):
        if lane.kind == "Pod" and lane.parent and lanes[lane.parent].kind == "Job":
            pods.setdefault(lane.parent, []).append(lane)
    for job, mine in pods.items():
        name = lanes[job].name
        short = name[len(release) + 1 :] if release and name.startswith(release + "-") else name
        for k, lane in enumerate(mine, 1):
            lane.note = f"{short} pod {k}/{len(mine)}"


def _tree_order(lanes: list[Lane]) -> list[Lane]:
    keys = {lane.key for lane in lanes}
    children: dict[str | None, list[Lane]] = {}
    for lane in lanes:
        parent = lane.parent if lane.parent in keys else None
        children.setdefault(parent, []).append(lane)
    out: list[Lane] = []

    def walk(parent: str | None) -> None:
        for lane in sorted(children.get(parent, []), key=lambda x: x.order):
            out.append(lane)
            walk(lane.key)

    walk(None)
    return out


def _add_marker(lane: Lane, ev: TraceEvent) -> None:
    sev, msg = _severity(ev), _message(ev)
    prev = lane.markers[-1] if lane.markers else None
    if prev is not None and round(prev.time, 3) == round(ev.time, 3):
        prev.ids.append(ev.id)
        if _SEVERITY.index(sev) > _SEVERITY.index(prev.severity):
            prev.severity, prev.what = sev, ev.what
            prev.messages.insert(0, msg)  # the worst event names the marker
        else:
            prev.messages.append(msg)
        return
    if prev is not None and prev.what == ev.what and len(prev.messages) == 1 and prev.messages[0] == msg:
        prev.repeats += 1  # the same thing again (e.g. WaitForFirstConsumer every 15 s)
        prev.until = ev.time
        prev.ids.append(ev.id)
        return
    lane.markers.append(Marker(ev.time, [ev.id], ev.what, sev, [msg]))


def _verdict_time(outcome: ReleaseOutcome, events: Sequence[TraceEvent], last: float) -> float:
    if outcome.outcome == "Ready" and outcome.ready_at is not None:
        return outcome.ready_at
    hr_obj = f"HelmRelease/{outcome.namespace}/{outcome.name}"
    stalled = [ev.time for ev in events if ev.obj == hr_obj and ev.what == "stalled"]
    return stalled[-1] if stalled else last


def build_timelines(result: SimulationResult, force: Iterable[int] = ()) -> list[ReleaseTimeline]:
    """The timeline of each simulated release of ``result``; ``force`` makes these trace ids
    markers even when they would not be (events a finding cites)."""
    events = list(result.trace)
    forced = set(force)
    release_of = _release_of(events)
    return [_build_release(o, events, release_of, forced) for o in result.releases if o.simulated]


def _release_of(events: Sequence[TraceEvent]) -> dict[int, tuple[str, str]]:
    """Event id → (namespace, release) of the Helm action it descends from (by ``cause``)."""
    out: dict[int, tuple[str, str]] = {}
    for ev in events:  # causes precede their effects
        rel = _release_of_ref(ev.obj) if ev.what == "action-start" else None
        if rel is None and ev.cause is not None:
            rel = out.get(ev.cause)
        if rel is not None:
            out[ev.id] = rel
    return out


# --- HTML ----------------------------------------------------------------------------------------
def _e(text: Any, limit: int | None = None) -> str:
    """Text for HTML: secrets scrubbed, control characters shown, cut to ``limit`` after
    scrubbing (``helmsim.report.safe``), then escaped."""
    safe = safe_text(text)
    if limit is not None and len(safe) > limit:
        safe = safe[: limit - 1] + "…"
    return html.escape(safe, quote=True)


def _t(seconds: float) -> str:
    """Seconds as the report writes them: at most 3 decimals, no trailing zeros."""
    text = f"{seconds:.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _pct(value: float, end: float) -> str:
    return f"{max(0.0, min(100.0, 100.0 * value / end)):.3f}%"


def _nice_step(span: float, target: int = 8) -> float:
    raw = span / max(1, target)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for mult in (1, 2, 5, 10):
        if mult * mag >= raw:
            return mult * mag
    return 10 * mag


def _asset(name: str) -> str:
    return resources.files("helmsim.report").joinpath("assets", name).read_text(encoding="utf-8")


class _Ids:
    """Stable DOM ids: derived from the run index, trace ids and object names."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def make(self, base: str) -> str:
        candidate, n = base, 1
        while candidate in self.used:
            n += 1
            candidate = f"{base}-{n}"
        self.used.add(candidate)
        return candidate


def render_html(
    runs: SimulationResult | Sequence[SimulationResult],
    *,
    title: str | None = None,
    findings: Sequence[Finding | Mapping[str, Any]] = (),
    distributions: Sequence[OutcomeDistribution | Mapping[str, Any]] = (),
    run_titles: Sequence[str] = (),
    config: str | None = None,
    verdict: tuple[str, bool] | None = None,
) -> str:
    """One self-contained HTML document for one or more runs (one per profile), with optional
    findings and Monte-Carlo outcome distributions. ``run_titles[i]`` heads run ``i`` (e.g. the
    scenario it simulates); ``config`` is the header line naming the config file in effect
    (``helmsim.config.describe``); ``verdict`` is the report's summary line and whether it
    fails, shown first, above a release × run table linking to each timeline and finding.
    Same inputs → the same bytes."""
    run_list = [runs] if isinstance(runs, SimulationResult) else list(runs)
    found = [Finding.coerce(f) for f in findings]
    dists = [OutcomeDistribution.coerce(d) for d in distributions]
    found = [f if f.id else _with_id(f, i) for i, f in enumerate(found)]
    ids = _Ids()
    body: list[str] = []
    namespaces: set[str] = set()
    kinds: set[str] = set()
    shown_dists: set[int] = set()
    links: dict[tuple[int, str], str] = {}
    for r, result in enumerate(run_list):
        mine = [f for f in found if _run_of(f, run_list) == r]
        timelines = build_timelines(result, {i for f in mine for i in f.event_ids})
        index = _index(timelines, r)
        for f in mine:
            for lane in _cited_lanes(f, timelines, index):
                lane.cited_by.append(str(f.id))
        for tl in timelines:
            for lane in tl.lanes:
                namespaces.add(lane.namespace or "(cluster)")
                kinds.add(lane.kind)
        heading = run_titles[r] if r < len(run_titles) else ""
        body.append(_run_html(r, result, timelines, mine, dists, shown_dists, index, ids, heading, links))
    rest = [d for i, d in enumerate(dists) if i not in shown_dists]
    if rest:
        body.append('<section class="run" aria-labelledby="mc-h"><h2 id="mc-h">Monte-Carlo outcomes</h2>')
        body.extend(_histogram(d) for d in rest)
        body.append("</section>")
    page_title = title or "helmsim rollout timeline: " + ", ".join(
        f"{', '.join(o.name for o in res.releases if o.simulated) or 'no release'} on {res.profile}" for res in run_list
    )
    top = _overview(run_list, found, links, verdict, run_titles)
    return _page(page_title, "".join(body), sorted(namespaces), sorted(kinds), config, top)


def _overview(
    runs: Sequence[SimulationResult],
    findings: Sequence[Finding],
    links: Mapping[tuple[int, str], str],
    verdict: tuple[str, bool] | None,
    run_titles: Sequence[str],
) -> str:
    """The top of the page: the verdict, then one row per HelmRelease and one column per run
    (profile), each cell its outcome linking to that timeline and the findings linking to
    theirs."""
    out = ['<section class="overview" aria-labelledby="overview-h"><h2 id="overview-h">Verdict</h2>']
    if verdict is not None:
        text, failing = verdict
        sev = "fail" if failing else "ok"
        out.append(
            f'<p class="verdict sev-{sev}" role="status"><span class="glyph" aria-hidden="true">{_GLYPH[sev]}</span> '
            f"<strong>{_e(text)}</strong></p>"
        )
    refs: list[str] = []
    for res in runs:
        for o in res.releases:
            ref = f"{o.namespace}/{o.name}"
            if ref not in refs:
                refs.append(ref)
    shared = len({res.profile for res in runs}) < len(runs)  # e.g. one run per scenario

    def column(r: int, res: SimulationResult) -> str:
        if shared:
            return run_titles[r] if r < len(run_titles) and run_titles[r] else f"run {r + 1} ({res.profile})"
        return res.profile

    heads = "".join(f'<th scope="col">{_e(column(r, res))}</th>' for r, res in enumerate(runs))
    rows = []
    for ref in refs:
        cells = []
        for r, res in enumerate(runs):
            found = next((x for x in res.releases if f"{x.namespace}/{x.name}" == ref), None)
            if found is None:
                cells.append("<td>–</td>")
                continue
            sev = _OUTCOME_SEVERITY.get(found.outcome, "info")
            label = f"{found.outcome}{'' if found.simulated else ' (not simulated)'}"
            chip = (
                f'<span class="verdict-chip sev-{sev}"><span aria-hidden="true">{_GLYPH[sev]}</span> {_e(label)}</span>'
            )
            tid = links.get((r, ref))
            cell = f'<a href="#{tid}">{chip}</a>' if tid else chip
            cited = [f for f in findings if f.release == ref and _run_of(f, runs) == r]
            if cited:
                cell += '<span class="rules">' + "".join(
                    f'<a href="#finding-{_e(f.id)}">{_e(f.title.split(" ", 1)[0])}</a>' for f in cited
                ) + "</span>"
            cells.append(f"<td>{cell}</td>")
        rows.append(f'<tr><th scope="row">{_e(ref)}</th>{"".join(cells)}</tr>')
    out.append(
        '<div class="table-wrap"><table class="summary matrix"><caption>Outcome per HelmRelease and profile '
        "(each links to its timeline, rule ids to their findings)</caption>"
        f'<thead><tr><th scope="col">HelmRelease</th>{heads}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    )
    out.append("</section>")
    return "".join(out)


def _with_id(f: Finding, i: int) -> Finding:
    return Finding(
        f.title, f.message, f.severity, f.profile, f.release, f.chain, f.objects, f"F{i + 1}", f.run, f.fixes
    )


def _run_of(f: Finding, runs: Sequence[SimulationResult]) -> int:
    if f.run is not None and 0 <= f.run < len(runs):
        return f.run
    if f.profile is not None:
        for r, res in enumerate(runs):
            if res.profile == f.profile:
                return r
    return 0


def _index(timelines: Sequence[ReleaseTimeline], r: int) -> dict[str, Any]:
    """DOM ids of lanes (by object) and markers (by trace id) of one run."""
    lane_ids: dict[str, str] = {}
    marker_ids: dict[int, str] = {}
    for tl in timelines:
        for lane in tl.lanes:
            lane_ids.setdefault(lane.key, f"lane-r{r}-{_slug(lane.key)}")
            for m in lane.markers:
                for i in m.ids:
                    marker_ids.setdefault(i, f"ev-r{r}-{m.ids[0]}")
    return {"lanes": lane_ids, "markers": marker_ids}


def _cited_lanes(f: Finding, timelines: Sequence[ReleaseTimeline], index: Mapping[str, Any]) -> list[Lane]:
    cited = set(f.objects)
    ids = set(f.event_ids)
    out: list[Lane] = []
    for tl in timelines:
        for lane in tl.lanes:
            if lane.key in cited or any(i in ids for m in lane.markers for i in m.ids):
                out.append(lane)
    return out


def _run_html(
    r: int,
    result: SimulationResult,
    timelines: Sequence[ReleaseTimeline],
    findings: Sequence[Finding],
    dists: Sequence[OutcomeDistribution],
    shown: set[int],
    index: Mapping[str, Any],
    ids: _Ids,
    heading: str = "",
    links: dict[tuple[int, str], str] | None = None,
) -> str:
    head = ids.make(f"run-{r}")
    out = [f'<section class="run" id="{head}" aria-labelledby="{head}-h">']
    sub = f" · upgrade from t={_t(result.upgrade_start)}s" if result.upgrade_start else ""
    out.append(
        f'<h2 id="{head}-h">{_run_heading(heading)}Profile <code>{_e(result.profile)}</code>'
        f' <span class="sub">simulated until t={_t(result.end_time)}s{_e(sub)}</span></h2>'
    )
    out.append(_summary_table(result))
    by_release = {f"{tl.outcome.namespace}/{tl.outcome.name}": tl for tl in timelines}
    for rel, tl in by_release.items():
        mine = [i for i, d in enumerate(dists) if d.release == rel and _dist_in_run(d, r, result)]
        shown.update(mine)
        out.append(_timeline_html(r, tl, [dists[i] for i in mine], index, ids, links))
    if findings:
        out.append(_findings_html(r, result, findings, index))
    for note in result.notes:
        out.append(f'<p class="note"><span aria-hidden="true">ℹ</span> note: {_e(note)}</p>')
    out.append("</section>")
    return "".join(out)


def _run_heading(heading: str) -> str:
    return f'<span class="run-title">{_e(heading)}</span> · ' if heading else ""


def _dist_in_run(d: OutcomeDistribution, r: int, result: SimulationResult) -> bool:
    return d.run == r if d.run is not None else d.profile == result.profile


def _summary_table(result: SimulationResult) -> str:
    rows = []
    for o in result.releases:
        sev = _OUTCOME_SEVERITY.get(o.outcome, "info")
        ready_at = f"t={_t(o.ready_at)}s" if o.ready_at is not None else "–"
        rows.append(
            f'<tr><th scope="row">{_e(o.namespace)}/{_e(o.name)}</th>'
            f'<td><span class="verdict-chip sev-{sev}"><span aria-hidden="true">{_GLYPH[sev]}</span> '
            f'{_e(o.outcome)}{"" if o.simulated else " (not simulated)"}</span></td>'
            f"<td>{_e(o.attempts) if o.simulated else '–'}</td><td>{ready_at}</td>"
            f'<td class="msg">{_e(_summary_message(o))}</td></tr>'
        )
    return (
        '<div class="table-wrap"><table class="summary"><caption>Verdict per HelmRelease</caption>'
        '<thead><tr><th scope="col">HelmRelease</th><th scope="col">Outcome</th>'
        '<th scope="col">Attempts</th><th scope="col">Ready at</th><th scope="col">Message</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _summary_message(o: ReleaseOutcome) -> str:
    if o.outcome in ("Stalled", "Failed"):
        stalled = o.conditions.get("Stalled", {}).get("message", "")
        test = o.conditions.get("TestSuccess", {})
        released = (test if test.get("status") == "False" else o.conditions.get("Released", {})).get("message", "")
        text = "; last failure: ".join(x for x in (stalled, released) if x)
        return text or o.message
    return o.message


def _timeline_html(
    r: int,
    tl: ReleaseTimeline,
    dists: Sequence[OutcomeDistribution],
    index: Mapping[str, Any],
    ids: _Ids,
    links: dict[tuple[int, str], str] | None = None,
) -> str:
    o = tl.outcome
    end = tl.end * 1.04
    tid = ids.make(f"tl-r{r}-{_slug(o.namespace + '-' + o.name)}")
    if links is not None:
        links[(r, f"{o.namespace}/{o.name}")] = tid
    sev = _OUTCOME_SEVERITY.get(o.outcome, "info")
    out = [
        (f'<section class="timeline" id="{tid}" data-end="{end:.3f}" data-release="{_e(o.namespace)}/{_e(o.name)}" '
        f'aria-labelledby="{tid}-h">'),
        (f'<h3 id="{tid}-h">HelmRelease <code>{_e(o.namespace)}/{_e(o.name)}</code> → release '
        f'<code>{_e(o.target_namespace)}/{_e(o.release_name)}</code></h3>'),
        ('<div class="tl-tools" role="toolbar" aria-label="Zoom">'
        '<button type="button" data-zoom="out" aria-label="Zoom out">−</button>'
        '<button type="button" data-zoom="in" aria-label="Zoom in">+</button>'
        '<button type="button" data-zoom="fit">Fit</button>'
        '<span class="zoom-level" aria-live="polite">×1</span>'
        '<span class="hint">Tab to the markers, ←/→ along a lane, ↑/↓ across lanes, +/− zoom, Esc hides</span></div>'),
    ]
    side = "".join(_histogram(d) for d in dists)
    out.append(f'<div class="tl-main{" with-side" if side else ""}">')
    out.append('<div class="tl-scroll"><div class="tl-body">')
    out.append(_axis(end))
    out.append(f'<ol class="lanes" aria-label="Lanes of {_e(o.namespace)}/{_e(o.name)}">')
    parents = {lane.parent for lane in tl.lanes}  # lanes with a lane nested under them
    for lane in tl.lanes:
        out.append(_lane_html(r, lane, end, tl, index, lane.key in parents))
    out.append("</ol>")
    out.append(
        f'<div class="verdict-line" style="--p:{min(1.0, tl.verdict_time / end):.5f}" aria-hidden="true"></div>'
    )
    out.append("</div></div>")
    if side:
        out.append(f'<aside class="tl-side" aria-label="Monte-Carlo outcomes">{side}</aside>')
    out.append("</div>")
    out.append(
        '<p class="detail" aria-live="polite" data-empty="Focus or hover a marker to read its message.">'
        "Focus or hover a marker to read its message.</p>"
    )
    out.append(
        f'<div class="verdict sev-{sev}" role="status"><span class="glyph" aria-hidden="true">{_GLYPH[sev]}</span>'
        f' <strong>Verdict at t={_t(tl.verdict_time)}s: {_e(o.outcome)}</strong>'
        f' ({_e(o.reason)}, {_e(o.attempts)} attempt{"s" if o.attempts != 1 else ""})'
        f'<br><span class="msg">{_e(_summary_message(o))}</span></div>'
    )
    out.append(_event_table(r, tl, index))
    out.append("</section>")
    return "".join(out)


def _axis(end: float) -> str:
    step = _nice_step(end)
    ticks = []
    n = 0
    while n * step <= end + 1e-9:
        v = n * step
        ticks.append(f'<span class="tick" style="left:{_pct(v, end)}">{_t(v)}s</span>')
        n += 1
    return (
        '<div class="axis" aria-hidden="true"><div class="lane-label axis-label">simulated time</div>'
        f'<div class="track axis-track">{"".join(ticks)}</div></div>'
    )


def _lane_html(
    r: int, lane: Lane, end: float, tl: ReleaseTimeline, index: Mapping[str, Any], has_children: bool
) -> str:
    lid = index["lanes"][lane.key]
    ns = lane.namespace or "(cluster)"
    label_note = f'<span class="note-tag">{_e(lane.note)}</span>' if lane.note else ""
    cites = "".join(
        f'<a class="cite" href="#finding-{_e(fid)}" aria-label="cited by finding {_e(fid)}">{_e(fid)}</a>'
        for fid in lane.cited_by
    )
    quiet = (
        not lane.markers
        and not lane.cited_by
        and not lane.needs
        and all(s.style in ("ok", "neutral") for s in lane.spans)
        and not has_children
    )
    needs = "".join(
        f'<a class="needs" href="#{index["lanes"][key]}">needs {_e(key.split("/", 1)[0])}'
        f'{"" if at is None else f" (in effect t={_t(at)}s)"}</a>'
        for key, at in lane.needs
    )
    out = [
        (f'<li class="lane role-{lane.role}{" cited" if lane.cited_by else ""}{" quiet" if quiet else ""}" id="{lid}" '
        f'data-kind="{_e(lane.kind)}" data-ns="{_e(ns)}" data-name="{_e(lane.name)}" data-obj="{_e(lane.key)}" '
        f'data-depth="{lane.depth}" style="--depth:{lane.depth}">'),
        (f'<div class="lane-label" title="{_e(lane.key)}"><span class="kind">{_e(lane.kind)}</span> '
        f'<span class="name">{_e(lane.name if lane.role in ("object", "helmrelease") else lane.title)}</span>'
        f'{label_note}<span class="ns">{_e(ns)}</span>{needs}{cites}</div>'),
        '<div class="track">',
    ]
    for key, at in lane.needs:
        if at is not None:
            out.append(
                f'<div class="needs-line" style="left:{_pct(at, end)}" data-policy="{_e(key)}" data-t="{at:.3f}" '
                f'title="{_e(key)} in effect at t={_t(at)}s"><span>policy in effect</span></div>'
            )
    for span in lane.spans:
        out.append(_span_html(span, end))
    if lane.role == "helmrelease":
        sev = _OUTCOME_SEVERITY.get(tl.outcome.outcome, "info")
        vid = f"verdict-r{r}-{_slug(tl.outcome.namespace + '-' + tl.outcome.name)}"
        msg = f"Verdict: {tl.outcome.outcome} — {_summary_message(tl.outcome)}"
        out.append(
            f'<button type="button" class="mk verdict-mk sev-{sev}" id="{vid}" style="left:{_pct(tl.verdict_time, end)}" '
            f'data-t="{tl.verdict_time:.3f}" data-what="verdict" data-obj="{_e(lane.key)}" data-msg="{_e(msg)}" '
            f'aria-label="t={_t(tl.verdict_time)}s verdict {_e(tl.outcome.outcome)}">'
            f'<span aria-hidden="true">{_GLYPH[sev]}</span></button>'
        )
    for m in lane.markers:
        out.append(_marker_html(r, lane, m, end))
    out.append("</div></li>")
    return "".join(out)


def _span_html(span: Span, end: float) -> str:
    stop = end if span.end is None else span.end
    width = max(0.0, stop - span.start)
    glyph = _STYLE_GLYPH.get(span.style, "")
    label = f"{glyph} {span.state}".strip()
    until = "end of the simulation" if span.end is None else f"t={_t(span.end)}s"
    return (
        f'<div class="span st-{span.style} band-{span.band}{" open" if span.end is None else ""}" '
        f'style="left:{_pct(span.start, end)};width:{_pct(width, end)}" data-state="{_e(span.state)}" '
        f'data-style="{span.style}" data-start="{span.start:.3f}" data-end="{"" if span.end is None else f"{span.end:.3f}"}" '
        f'title="{_e(label)} (t={_t(span.start)}s to {until})"><span class="span-label">{_e(label)}</span></div>'
    )


def _marker_html(r: int, lane: Lane, m: Marker, end: float) -> str:
    mid = f"ev-r{r}-{m.ids[0]}"
    messages = list(m.messages)
    if m.repeats > 1 and m.until is not None:
        messages[-1] += f" (×{m.repeats}, until t={_t(m.until)}s)"
    head = messages[0] if len(messages) == 1 else f"{len(messages)} events: {messages[0]}"
    return (
        f'<button type="button" class="mk sev-{m.severity}" id="{mid}" style="left:{_pct(m.time, end)}" '
        f'data-t="{m.time:.3f}" data-what="{_e(m.what)}" data-ids="{" ".join(str(i) for i in m.ids)}" '
        f'data-obj="{_e(lane.key)}" data-msg="{_e(chr(10).join(messages))}" '
        f'aria-label="t={_t(m.time)}s {_SEVERITY_WORD[m.severity]} {_e(m.what)}: {_e(head, 160)}">'
        f'<span aria-hidden="true">{_GLYPH[m.severity]}</span></button>'
    )


def _event_table(r: int, tl: ReleaseTimeline, index: Mapping[str, Any]) -> str:
    rows = []
    items = sorted(
        ((m.time, m.ids[0], lane, m) for lane in tl.lanes for m in lane.markers), key=lambda x: (x[0], x[1])
    )
    for _, _, lane, m in items:
        sev = m.severity
        text = "<br>".join(_e(x) for x in m.messages)
        if m.repeats > 1 and m.until is not None:
            text += f" (×{m.repeats}, until t={_t(m.until)}s)"
        rows.append(
            f'<tr class="sev-{sev}"><td>t={_t(m.time)}s</td><td><a href="#ev-r{r}-{m.ids[0]}">{_e(lane.key)}</a></td>'
            f'<td><span aria-hidden="true">{_GLYPH[sev]}</span> {_e(m.what)}</td><td class="msg">{text}</td></tr>'
        )
    return (
        f'<details class="events"><summary>All {len(rows)} events as a table</summary><div class="table-wrap">'
        '<table><thead><tr><th scope="col">Time</th><th scope="col">Lane</th><th scope="col">What</th>'
        f'<th scope="col">Message</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div></details>'
    )


def _findings_html(r: int, result: SimulationResult, findings: Sequence[Finding], index: Mapping[str, Any]) -> str:
    out = [f'<section class="findings" aria-labelledby="findings-r{r}"><h3 id="findings-r{r}">Findings</h3><ol>']
    by_id = {ev.id: ev for ev in result.trace}
    for f in findings:
        sev = {"error": "fail", "warning": "warn"}.get(f.severity.lower(), "info")
        out.append(
            f'<li class="finding sev-{sev}" id="finding-{_e(f.id)}"><p><span aria-hidden="true">{_GLYPH[sev]}</span> '
            f'<strong>{_e(f.id)} · {_e(f.severity)}: {_e(f.title)}</strong></p>'
        )
        if f.message:
            out.append(f'<p class="msg">{_e(f.message)}</p>')
        if f.objects:
            links = []
            for obj in f.objects:
                lid = index["lanes"].get(obj)
                links.append(
                    f'<a href="#{lid}" data-focus="{lid}">{_e(obj)}</a>' if lid else f"<code>{_e(obj)}</code>"
                )
            out.append(f'<p class="cites">Lanes: {", ".join(links)}</p>')
        if f.fixes:
            out.append('<ul class="fixes" aria-label="fixes">')
            for summary, checked, sev in f.fixes:
                check = f'<span class="check sev-{_e(sev)}">{_e(checked)}</span>' if checked else ""
                out.append(f"<li>fix: {_e(summary)}{check}</li>")
            out.append("</ul>")
        if f.chain:
            out.append('<ol class="chain" aria-label="cause chain, first cause first">')
            for c in f.chain:
                i = c if isinstance(c, int) else c.event_id
                ev = by_id.get(i) if i is not None else None
                if isinstance(c, ChainStep):
                    text = f"t={_t(c.time)}s {c.obj}: {c.text}"
                elif ev is not None:
                    text = f"t={_t(ev.time)}s {ev.obj}: {_message(ev)}"
                else:
                    continue
                mid = index["markers"].get(i) if i is not None else None
                out.append(
                    f'<li><a href="#{mid}" data-focus="{mid}">{_e(text)}</a></li>' if mid else f"<li>{_e(text)}</li>"
                )
            out.append("</ol>")
        out.append("</li>")
    out.append("</ol></section>")
    return "".join(out)


def _histogram(d: OutcomeDistribution) -> str:
    total = sum(d.counts.values()) or 1
    keys = [k for k in OUTCOMES if k in d.counts] + sorted(k for k in d.counts if k not in OUTCOMES)
    rows = []
    for k in keys:
        n = d.counts[k]
        sev = _OUTCOME_SEVERITY.get(k, "info")
        rows.append(
            f'<tr data-outcome="{_e(k)}"><th scope="row"><span aria-hidden="true">{_GLYPH[sev]}</span> {_e(k)}</th>'
            f'<td class="bar-cell"><span class="bar sev-{sev}" style="width:{100 * n / total:.1f}%"></span></td>'
            f"<td>{n} ({100 * n / total:.0f}%)</td></tr>"
        )
    out = [
        (f'<figure class="histogram" data-release="{_e(d.release)}" data-profile="{_e(d.profile)}">'
        f"<figcaption>{_e(d.release)} on {_e(d.profile)}: {sum(d.counts.values())} runs</figcaption>"
        f'<table><tbody>{"".join(rows)}</tbody></table>')
    ]
    if d.ready_at:
        out.append(_ready_histogram(sorted(d.ready_at)))
    out.append("</figure>")
    return "".join(out)


def _ready_histogram(times: list[float]) -> str:
    lo, hi = times[0], times[-1]
    bins = 10 if hi > lo else 1
    width = (hi - lo) / bins if hi > lo else 1.0
    counts = [0] * bins
    for t in times:
        counts[min(bins - 1, int((t - lo) / width))] += 1
    top = max(counts)
    bars = []
    for i, c in enumerate(counts):
        h = 40 * c / top
        a, b = lo + i * width, lo + (i + 1) * width
        bars.append(
            f'<rect x="{i * 10 + 1}" y="{40 - h:.2f}" width="8" height="{h:.2f}"><title>t={_t(a)}–{_t(b)}s: {c} runs</title></rect>'
        )
    p50 = times[len(times) // 2]
    p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
    return (
        f'<p class="ready-dist">Time to Ready: median t={_t(p50)}s, 90th percentile t={_t(p90)}s, '
        f"range {_t(lo)}–{_t(hi)}s</p>"
        f'<svg class="ready-hist" viewBox="0 0 {bins * 10} 40" role="img" aria-label="time to Ready, {len(times)} runs">'
        f'{"".join(bars)}</svg>'
    )


def csp_hash(block: str) -> str:
    """A CSP source expression allowing exactly this inline ``<script>``/``<style>`` text
    (CSP Level 3 §8.4: base64 of the SHA-256 of the element's text, UTF-8)."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(block.encode("utf-8")).digest()).decode("ascii") + "'"


def _page(
    title: str,
    body: str,
    namespaces: Sequence[str],
    kinds: Sequence[str],
    config: str | None = None,
    overview: str = "",
) -> str:
    def boxes(name: str, values: Sequence[str]) -> str:
        return "".join(
            f'<label><input type="checkbox" name="{name}" value="{_e(v)}" checked> {_e(v)}</label>' for v in values
        )

    legend = "".join(
        f'<li><span class="span st-{style} legend-swatch"><span class="span-label">{_e(_STYLE_GLYPH[style])}</span></span> {_e(word)}</li>'
        for style, word in (
            ("ok", "ready / current / in effect"), ("run", "running"), ("progress", "in progress"),
            ("pending", "pending / waiting / not in effect"), ("failed", "failed (cross-hatched)"),
            ("denied", "connections denied (striped)"), ("deleted", "terminating"), ("hook", "hook"),
        )
    ) + "".join(
        f'<li><span class="mk legend-mk sev-{sev}" aria-hidden="true">{_GLYPH[sev]}</span> {_e(_SEVERITY_WORD[sev])}</li>'
        for sev in _SEVERITY
    )
    style, script = _asset("timeline.css"), _asset("timeline.js")
    # The page's one <style> and one <script> run by their hashes, nothing else inline; style
    # attributes (lane positions) are allowed by style-src-attr: they cannot run code.
    csp = (
        f"default-src 'none'; style-src {csp_hash(style)}; style-src-attr 'unsafe-inline'; "
        f"script-src {csp_hash(script)}; img-src data:; base-uri 'none'; form-action 'none'"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f"<title>{_e(title)}</title><style>{style}</style></head>\n<body>"
        f'<a class="skip" href="#main">Skip to the timelines</a>'
        f"<header><h1>{_e(title)}</h1>"
        + (f'<p class="config">{_e(config)}</p>' if config else "")
        + overview
        + '<form class="filters" aria-label="Filter lanes">'
        f'<fieldset><legend>Namespace</legend>{boxes("ns", namespaces)}</fieldset>'
        f'<fieldset><legend>Kind</legend>{boxes("kind", kinds)}</fieldset>'
        '<p class="filter-status" aria-live="polite"></p></form>'
        f'<details class="legend"><summary>Legend</summary><ul>{legend}</ul>'
        "<p>Times are simulated seconds from the start of the simulation. The vertical line marks the verdict.</p>"
        "</details></header>"
        f'<main id="main">{body}</main>'
        '<div id="tip" role="tooltip" hidden></div>'
        f"<script>{script}</script></body></html>\n"
    )


__all__ = [
    "ChainStep",
    "Finding",
    "Lane",
    "Marker",
    "OutcomeDistribution",
    "ReleaseTimeline",
    "Span",
    "build_timelines",
    "render_html",
]
