"""Checking a scenario's expectations against a simulation, with evidence from the trace.

:func:`check` returns one :class:`Checked` per expectation: whether it holds, what was expected,
what was simulated, and the trace events that show it (for a failure, the causal chain that led
there), so a report can say *why* without the user rerunning anything.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from typing import Any

from msgspec import Struct, field

from helmsim.cluster.trace import TraceEvent
from helmsim.scenario import ConnectionExpect, EventExpect, ObjectExpect, ReleaseExpect
from helmsim.simulate import ReleaseOutcome, SimulationResult

MAX_EVIDENCE = 14
_REF = re.compile(r"\b([A-Z][A-Za-z]+/[a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9.-]*)\b")
CONNECT_VERBS = ("connected", "connect-denied", "connect-timeout", "connect-refused")


class Checked(Struct, frozen=True):
    """One expectation's verdict."""

    label: str
    passed: bool
    expected: str
    simulated: str
    evidence: tuple[TraceEvent, ...] = ()
    line: int | None = None

    def explain(self) -> str:
        """Expected vs simulated, then the evidence, one event per line."""
        lines = [f"expected: {self.expected}", f"simulated: {self.simulated}"]
        if self.evidence:
            lines.append("trace:")
            lines.extend("  " + format_event(e) for e in self.evidence)
        return "\n".join(lines)


def format_event(e: TraceEvent) -> str:
    """``t=3.65s cilium connect-denied Pod/ns/name: message``."""
    return f"t={e.time:.2f}s {e.actor} {e.what} {e.obj}: {e.message}"


class _Verdict(Struct):
    problems: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    simulated: list[str] = field(default_factory=list)

    def compare(self, what: str, want: Any, got: Any, ok: bool | None = None) -> None:
        self.expected.append(f"{what} {want}")
        self.simulated.append(f"{what} {got}")
        if not (want == got if ok is None else ok):
            self.problems.append(what)


def check(expectations: Sequence[Any], result: SimulationResult, lines: Sequence[int | None] = ()) -> list[Checked]:
    """Check each expectation (scenario models) against ``result``."""
    out = []
    for i, exp in enumerate(expectations):
        line = lines[i] if i < len(lines) else None
        if isinstance(exp, ReleaseExpect):
            checked = _release(exp, result)
        elif isinstance(exp, ObjectExpect):
            checked = _object(exp, result)
        elif isinstance(exp, EventExpect):
            checked = _event(exp, result)
        elif isinstance(exp, ConnectionExpect):
            checked = _connection(exp, result)
        else:  # pragma: no cover - the scenario model admits only the four
            raise TypeError(f"unknown expectation {exp!r}")
        out.append(Checked(checked.label, checked.passed, checked.expected, checked.simulated, checked.evidence, line))
    return out


def _done(label: str, v: _Verdict, evidence: Iterable[TraceEvent], show_all: bool = False) -> Checked:
    ev = _dedupe(evidence)
    return Checked(
        label,
        not v.problems,
        "; ".join(v.expected),
        "; ".join(v.simulated),
        tuple(ev[-MAX_EVIDENCE:]) if (v.problems or show_all) else tuple(ev[-3:]),
    )


def _dedupe(events: Iterable[TraceEvent]) -> list[TraceEvent]:
    seen: dict[int, TraceEvent] = {}
    for e in events:
        seen.setdefault(e.id, e)
    return [seen[k] for k in sorted(seen)]


# --- releases ------------------------------------------------------------------------------------


def find_release(result: SimulationResult, ref: str) -> ReleaseOutcome | None:
    """The outcome of HelmRelease ``namespace/name`` or ``name``."""
    for o in result.releases:
        if ref in (f"{o.namespace}/{o.name}", o.name):
            return o
    return None


def _release(exp: ReleaseExpect, result: SimulationResult) -> Checked:
    label = exp.name or _release_label(exp)
    o = find_release(result, exp.release)
    if o is None:
        have = ", ".join(f"{r.namespace}/{r.name}" for r in result.releases)
        return Checked(label, False, f"HelmRelease {exp.release}", f"no such HelmRelease (have: {have})")
    v = _Verdict()
    if exp.outcome is not None:
        v.compare("outcome", exp.outcome, o.outcome)
    if exp.ready is not None:
        v.compare("Ready", exp.ready, o.ready)
    if exp.reason is not None:
        v.compare("reason", exp.reason, o.reason)
    if exp.message is not None:
        v.compare("message", repr(exp.message), repr(o.message), o.message == exp.message)
    if exp.message_contains is not None:
        v.compare(
            "message containing", repr(exp.message_contains), repr(o.message), exp.message_contains in o.message
        )
    if exp.attempts is not None:
        v.compare("attempts", exp.attempts, o.attempts)
    if exp.max_attempts is not None:
        v.compare("attempts at most", exp.max_attempts, o.attempts, o.attempts <= exp.max_attempts)
    if exp.helm_status is not None:
        latest = o.helm_status[-1]["status"] if o.helm_status else "none (no Helm release)"
        v.compare("Helm status", exp.helm_status, latest)
    if exp.within is not None:
        took = None if o.ready_at is None else o.ready_at - result.upgrade_start
        v.compare(
            "Ready within",
            f"{exp.within:g}s",
            "never" if took is None else f"{took:g}s",
            took is not None and took <= exp.within,
        )
    obj = f"HelmRelease/{o.namespace}/{o.name}"
    mine = [e for e in result.trace if e.obj == obj and e.what in ("condition", "stalled")]
    evidence: list[TraceEvent] = list(mine[-4:])
    if v.problems and mine:
        evidence.extend(_chain(result, mine[-1].id))
        # the objects Flux's message names (e.g. the Failed Job): what last happened to them
        for ref in dict.fromkeys(_REF.findall(o.message)):
            named = [e for e in result.trace if e.obj == ref and e.what in ("status", "event", "container-log")]
            evidence.extend(named[-3:])
    helm = [e for e in result.trace if e.actor == "helm" and e.what in ("release", "wait-end", "hook-failed", "apply-error")]
    evidence.extend(e for e in helm[-3:] if f"/{o.release_name}." in e.obj or e.what != "release")
    return _done(label, v, evidence)


def _release_label(exp: ReleaseExpect) -> str:
    parts = [f"HelmRelease {exp.release}"]
    for key, text in (
        ("outcome", "is {}"),
        ("ready", "Ready={}"),
        ("reason", "reason {}"),
        ("message", "message {!r}"),
        ("message_contains", "message contains {!r}"),
        ("attempts", "after {} attempt(s)"),
        ("max_attempts", "within {} attempt(s)"),
        ("helm_status", "Helm status {}"),
    ):
        value = getattr(exp, key)
        if value is not None:
            parts.append(text.format(value))
    if exp.within is not None:
        parts.append(f"Ready within {exp.within:g}s")
    return " ".join(parts)


def _chain(result: SimulationResult, event_id: int) -> list[TraceEvent]:
    return result.trace.chain(event_id)


# --- objects ---------------------------------------------------------------------------------


def _parse_ref(ref: str) -> tuple[str, str, str]:
    parts = ref.split("/")
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    if len(parts) == 2:
        return parts[0], "", parts[1]
    return ref, "*", "*"


def _ref_matches(pattern: str, ref: str) -> bool:
    return fnmatch.fnmatchcase(ref, pattern)


def pods_of(result: SimulationResult, workload: str) -> list[str]:
    """``Pod/ns/name`` of the pods created for ``workload`` (``Kind/ns/name`` glob), in order.

    A Deployment's pods are its ReplicaSets' (``<deployment>-<hash>``); a CronJob's its Jobs'.
    """
    kind, ns, name = _parse_ref(workload)
    if kind == "Pod":
        return [e.obj for e in result.trace if e.what == "created" and e.obj.startswith("Pod/") and _ref_matches(workload, e.obj)]
    owners = [workload]
    if kind == "Deployment":
        owners = [f"ReplicaSet/{ns}/{name}-*"]
    elif kind == "CronJob":
        owners = [f"Job/{ns}/{name}-*"]
    out: list[str] = []
    for e in result.trace:
        created = e.what == "event" and e.data.get("reason") == "SuccessfulCreate"
        if created and e.message.startswith("Created pod: ") and any(_ref_matches(p, e.obj) for p in owners):
            _, ons, _ = _parse_ref(e.obj)
            out.append(f"Pod/{ons}/{e.message.removeprefix('Created pod: ').strip()}")
    return out


def _object(exp: ObjectExpect, result: SimulationResult) -> Checked:
    label = exp.name or " ".join(
        p
        for p in (
            exp.object,
            f"is {exp.status}" if exp.status else "",
            f"after {exp.attempts} attempt(s)" if exp.attempts is not None else "",
            f"within {exp.max_attempts} attempt(s)" if exp.max_attempts is not None else "",
        )
        if p
    )
    v = _Verdict()
    matched = [
        o for o in result.objects if _ref_matches(exp.object, f"{o['kind']}/{o['namespace']}/{o['name']}".replace("//", "/"))
        or _ref_matches(exp.object, f"{o['kind']}/{o['namespace']}/{o['name']}")
    ]
    if not matched and result.sim is not None:
        # not a release object: something the simulation created (a hook Job's kubectl apply,
        # a controller's object) — read it live
        matched = _live_objects(exp.object, result)
    evidence: list[TraceEvent] = []
    if exp.status is not None:
        if not matched:
            have = sorted({f"{o['kind']}/{o['namespace']}/{o['name']}" for o in result.objects})
            v.compare("kstatus", exp.status, f"no release object matches {exp.object} (have {len(have)}: {', '.join(have[:8])})", False)
        for o in matched:
            ref = f"{o['kind']}/{o['namespace']}/{o['name']}"
            v.compare(f"{ref} kstatus", exp.status, f"{o['status']} ({o['message']})" if o["message"] else o["status"], o["status"] == exp.status)
            mine = [e for e in result.trace if e.obj == ref or e.obj == f"{o['kind']}/{o['name']}"]
            evidence.extend(mine[-4:])
            if mine:
                evidence.extend(_chain(result, mine[-1].id))
    if exp.attempts is not None or exp.max_attempts is not None:
        pods = pods_of(result, exp.object)
        if exp.attempts is not None:
            v.compare("pods created", exp.attempts, len(pods))
        if exp.max_attempts is not None:
            v.compare("pods created at most", exp.max_attempts, len(pods), len(pods) <= exp.max_attempts)
        evidence.extend(
            e for e in result.trace if e.what in ("container-exited", "container-log") and e.obj in pods
        )
    return _done(label, v, evidence)


def _live_objects(pattern: str, result: SimulationResult) -> list[dict[str, Any]]:
    """kstatus (Flux's wait reader) of live objects in the finished cluster matching ``pattern``."""
    from helmsim import kstatus

    assert result.sim is not None
    kind = pattern.split("/", 1)[0]
    out: list[dict[str, Any]] = []
    for obj in result.sim.store.list(kind):
        meta = obj.get("metadata") or {}
        ref = f"{kind}/{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else f"{kind}/{meta.get('name')}"
        if _ref_matches(pattern, ref):
            res = kstatus.read(obj, reader="flux-wait-jobs", now=result.sim.datetime())
            out.append({"kind": kind, "namespace": meta.get("namespace"), "name": meta.get("name"),
                        "status": res.status.value, "message": res.message})
    return out


# --- events ----------------------------------------------------------------------------------


def _event(exp: EventExpect, result: SimulationResult) -> Checked:
    where = f" on {exp.object}" if exp.object else ""
    label = exp.name or (f"event {exp.event}{where} " + ("seen" if exp.seen else "not seen")) + (
        f" within {exp.within:g}s" if exp.within is not None else ""
    )
    found = []
    similar = []
    for e in result.trace:
        if exp.object and not _ref_matches(exp.object, e.obj):
            continue
        reason = e.data.get("reason")
        if reason is None and e.what != exp.event:
            continue
        if exp.type and e.data.get("type", exp.type) != exp.type:
            continue
        if reason == exp.event or (reason is None and e.what == exp.event):
            if exp.message_contains and exp.message_contains not in e.message:
                similar.append(e)
                continue
            if exp.within is not None and e.time - result.upgrade_start > exp.within:
                similar.append(e)
                continue
            found.append(e)
        elif e.what == "event":
            similar.append(e)
    v = _Verdict()
    detail = f"{len(found)} time(s)" + (f", first at t={found[0].time:.2f}s" if found else "")
    v.compare("seen", "yes" if exp.seen else "no", detail, bool(found) == exp.seen)
    evidence = list(found[:3])
    if found and not exp.seen:
        evidence.extend(_chain(result, found[0].id))
    if not found:
        evidence.extend(similar[-8:])
    return _done(label, v, evidence)


# --- connections ------------------------------------------------------------------------------


def _connection(exp: ConnectionExpect, result: SimulationResult) -> Checked:
    which = "any pod" if exp.pod is None else f"pod {exp.pod}"
    label = exp.name or f"{exp.from_} ({which}) → {exp.connection}: {exp.result}"
    pods = pods_of(result, exp.from_)
    v = _Verdict()
    if exp.pod is not None:
        if len(pods) < exp.pod:
            v.compare(which, "created", f"only {len(pods)} pod(s) created for {exp.from_}", False)
            return _done(label, v, [])
        pods = [pods[exp.pod - 1]]
    if not pods:
        v.compare("pods", "at least one", f"none created for {exp.from_}", False)
        return _done(label, v, [])
    events = [
        e
        for e in result.trace
        if e.what in CONNECT_VERBS
        and e.obj in pods
        and e.data.get("target") == exp.connection
        and (exp.container is None or e.data.get("container") == exp.container)
    ]
    denied = [e for e in events if e.what == "connect-denied"]
    connected = [e for e in events if e.what == "connected"]
    failed = [e for e in events if e.what in ("connect-timeout", "connect-refused")]
    if not events:
        got = "no connection attempt"
    elif connected and not denied:
        got = "connected-first-try"
    elif connected:
        got = f"connected after {len(denied)} dropped packet(s)"
    else:
        got = f"failed ({len(failed)} time(s), {len(denied)} dropped packet(s))"
    ok = {
        "connected-first-try": bool(connected) and not denied,
        "connected": bool(connected),
        "dropped": bool(denied),
        "failed": bool(failed),
    }[exp.result]
    v.compare("result", exp.result, got, ok)
    evidence = list(events)
    if not ok and (denied or failed):
        evidence.extend(_chain(result, (denied or failed)[0].id))
        policy = [e for e in result.trace if e.what in ("policy-in-effect", "identity-pending", "endpoint-ready", "fault") and (e.obj in pods or e.what in ("policy-in-effect", "fault"))]
        evidence.extend(policy[:4])
    return _done(label, v, evidence)


__all__ = ["Checked", "check", "find_release", "format_event", "pods_of"]
