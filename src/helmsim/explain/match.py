"""Does one simulation reproduce an observation? Each observed fact checked against the trace.

A fact that does not hold comes with the reason in terms of the trace ("pod 2 starts 41 s after
CiliumNetworkPolicy kagent/x is in effect on its node and connects to kube-apiserver on SYN 1").
Names are compared by shape: generated suffixes (a Job's template hash, a pod's random suffix)
and chart build metadata differ between a real cluster and the simulation.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

from msgspec import Struct

from helmsim.cluster.trace import Trace, TraceEvent
from helmsim.explain.observation import EventSeen, LoadedObservation, ReleaseSeen, WorkloadSeen
from helmsim.simulate import ReleaseOutcome, SimulationResult

# kubernetes/apimachinery pkg/util/rand/rand.go: generated suffixes use consonants and the digits
# 2,4-9 ("bcdfghjklmnpqrstvwxz2456789"); a pod of a Job or ReplicaSet is <owner>-<5 of them>.
_POD_SUFFIX = re.compile(r"-?[bcdfghjklmnpqrstvwxz2456789]{5}\b")
# a pod-template or Job hash: 8-10 hex digits (the job name the chart derives from its values)
_HASH = re.compile(r"-[0-9a-f]{8,10}(?=[^0-9a-f]|$)")
# semver build metadata (chart version 4.7.0+c439a9c72d9c)
_BUILD = re.compile(r"(@v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\+[0-9A-Za-z.]+")
_RELEASE_REVISION = re.compile(r"(release [^ ]+?)\.v\d+\b")
MIN_SLACK = 15.0


def shape(text: str) -> str:
    """``text`` with generated suffixes, chart build metadata and release revisions neutralised."""
    out = _BUILD.sub(r"\1", text)
    out = _RELEASE_REVISION.sub(r"\1", out)
    out = _HASH.sub("-*", out)
    out = _POD_SUFFIX.sub("-*", out)
    return out.strip()


class Fact(Struct, frozen=True):
    """One observed fact and whether the run reproduces it."""

    id: str
    text: str
    ok: bool
    detail: str = ""
    absent: bool = False
    """An event whose reason the run never emits at all (maybe not modelled)."""
    time: float | None = None
    """When the run shows it (the observed Ready message: the moment everything was seen)."""


def _near(seen: float, observed: float, tolerance: float) -> bool:
    return abs(seen - observed) <= max(MIN_SLACK, tolerance * observed)


def _outcome(result: SimulationResult, seen: ReleaseSeen | None) -> ReleaseOutcome | None:
    outs = [o for o in result.releases if o.simulated] or list(result.releases)
    if seen is None or seen.name is None:
        return outs[0] if outs else None
    for o in outs:
        if seen.name in (f"{o.namespace}/{o.name}", o.name):
            return o
    return None


def _conditions(trace: Trace, ref: str) -> list[TraceEvent]:
    return [e for e in trace if e.what == "condition" and e.obj == f"HelmRelease/{ref}"]


def _message_of(ev: TraceEvent) -> str:
    # "Ready=False UpgradeFailed: <message>"
    head, _, rest = ev.message.partition(": ")
    return rest if head.startswith("Ready=") else ev.message


def release_facts(result: SimulationResult, seen: ReleaseSeen, tolerance: float) -> list[Fact]:
    """The HelmRelease's Ready condition, failures and time as observed."""
    o = _outcome(result, seen)
    if o is None:
        names = ", ".join(f"{r.namespace}/{r.name}" for r in result.releases)
        return [Fact("release", f"HelmRelease {seen.name}", False, f"no such HelmRelease simulated (have: {names})")]
    ref = f"{o.namespace}/{o.name}"
    conds = _conditions(result.trace, ref)
    out: list[Fact] = []
    if seen.ready is not None or seen.message is not None or seen.message_contains is not None:
        want = seen.message or seen.message_contains or ""
        label = f"Ready={seen.ready or '*'}" + (f" {shape(want)!r}" if want else "")

        def fits(ev: TraceEvent) -> bool:
            if seen.ready is not None and ev.data.get("status") != seen.ready:
                return False
            msg = shape(_message_of(ev))
            if seen.message is not None and msg != shape(seen.message):
                return False
            return seen.message_contains is None or shape(seen.message_contains) in msg

        hit = next((e for e in conds if fits(e)), None)
        if hit is None:
            last = conds[-1] if conds else None
            why = (
                f"the HelmRelease never shows it; it ends {o.outcome}: {last.message.splitlines()[0]}"
                if last is not None
                else f"the HelmRelease ends {o.outcome} without a Ready condition"
            )
            out.append(Fact("release.ready", label, False, why))
        else:
            out.append(Fact("release.ready", label, True, f"at t={hit.time:.0f}s", time=hit.time))
            if seen.after is not None:
                took = hit.time - result.upgrade_start
                ok = _near(took, float(seen.after), tolerance)
                out.append(
                    Fact(
                        "release.after",
                        f"after ~{seen.after:g}s",
                        ok,
                        f"it appears {took:.0f}s after the start (observed ~{seen.after:g}s)",
                    )
                )
    if seen.failures is not None:
        failed = [e for e in conds if str(e.data.get("reason", "")).endswith("Failed") and e.data.get("status") == "False"]
        ok = len(failed) == seen.failures
        out.append(Fact("release.failures", f"{seen.failures} failed attempts", ok, f"{len(failed)} failed attempt(s) simulated"))
    return out


# --- workloads --------------------------------------------------------------------------------------
def _pods(trace: Trace, workload: WorkloadSeen, until: float) -> list[str]:
    """The workload's pods created by ``until``, in creation order (``Pod/ns/name``), matched by
    name prefix."""
    _kind, ns, name = workload.object.split("/", 2)
    out = []
    for e in trace:
        if e.what != "created" or not e.obj.startswith("Pod/") or e.time > until:
            continue
        _, pns, pname = e.obj.split("/", 2)
        if fnmatch.fnmatchcase(pns, ns) and fnmatch.fnmatchcase(pname, name + "*") and e.obj not in out:
            out.append(e.obj)
    return out


def _errors(trace: Trace, pod: str) -> list[tuple[TraceEvent, str]]:
    """What a pod's clients printed: dial errors and container log lines."""
    out: list[tuple[TraceEvent, str]] = []
    for e in trace:
        if e.obj != pod:
            continue
        if e.what == "connect-timeout":
            out.append((e, str(e.data.get("error") or "")))
        elif e.what == "connect-refused":
            out.append((e, e.message.split(": ", 1)[-1]))
        elif e.what == "container-log":
            out.append((e, str(e.data.get("line") or "")))
    return [(e, t) for e, t in out if t]


def _start(trace: Trace, pod: str) -> TraceEvent | None:
    return next((e for e in trace if e.obj == pod and e.what == "endpoint-ready"), None) or next(
        (e for e in trace if e.obj == pod and e.what == "container-started"), None
    )


def _policy_ref(decided_by: str) -> str:
    kind, _, rest = decided_by.partition(" ")
    return f"{kind}/{rest}"


def why_no_error(trace: Trace, pod: str, index: int, line: str) -> str:
    """Why pod ``index`` did not log ``line``: how its connections went, in trace terms."""
    got = _errors(trace, pod)
    logged = [t for e, t in got if e.what == "container-log"]
    if logged and not any(e.what != "container-log" for e, _ in got):
        return f"pod {index} logs {logged[0]!r}, not the observed line"
    connected = [e for e in trace if e.obj == pod and e.what == "connected" and not e.data.get("lookup")]
    if connected:
        told = why_connected(trace, pod, index, connected[0])
        return f"{told}; it fails with {got[0][1]!r} instead" if got else told
    if got:
        return f"pod {index} logs {got[0][1]!r}, not the observed line"
    exited = next((e for e in trace if e.obj == pod and e.what == "container-exited"), None)
    if exited is not None:
        return f"pod {index} dials nothing that fails: {exited.message}"
    return f"pod {index} never runs its containers"


def why_connected(trace: Trace, pod: str, index: int, c: TraceEvent) -> str:
    """How pod ``index`` came to connect: when it started against when its policy took effect."""
    start = _start(trace, pod)
    syn = c.data.get("attempt", 1)
    text = f"pod {index} connects to {c.data.get('target')} on SYN {syn} at t={c.time:.0f}s"
    bound = next((e for e in trace if e.obj == pod and e.what == "scheduled"), None)
    node = bound.data.get("node") if bound is not None else None
    for pid in c.data.get("decided_by") or ():
        ref = _policy_ref(str(pid))
        # the pod's own node: each Cilium agent enforces a policy after its own delay, and the
        # "policy-in-effect" event of another node says nothing about this pod's connection
        effect = [
            e
            for e in trace
            if e.what == "policy-in-effect"
            and e.obj == ref
            and e.time <= c.time
            and (node is None or "nodes" not in e.data or node in e.data["nodes"])
        ]
        if effect and start is not None:
            gap = start.time - effect[-1].time
            if gap >= 0:
                return f"pod {index} starts {gap:.1f} s after {pid} is in effect and connects to {c.data.get('target')} on SYN {syn}"
            return f"{text}: {pid} takes effect {-gap:.1f} s after the pod starts, before the dial times out"
    return text


def _line_matches(line: str, texts: Sequence[str]) -> bool:
    norm = shape(line)
    return any(t and (t in line or shape(t) in norm or norm in shape(t)) for t in texts)


def workload_facts(
    result: SimulationResult, seen: WorkloadSeen, tolerance: float, until: float | None = None
) -> list[Fact]:
    """Pods created by ``until`` (when the observed Ready message appeared), their log lines and
    the workload's span as observed."""
    trace = result.trace
    pods = _pods(trace, seen, result.end_time if until is None else until)
    out: list[Fact] = []
    if seen.pods is not None:
        ok = len(pods) == seen.pods
        detail = f"{len(pods)} pod(s) created"
        if not ok and pods and len(pods) < seen.pods:
            last = _errors(trace, pods[-1])
            if not last:
                detail += f"; {why_no_error(trace, pods[-1], len(pods), '')}"
        out.append(Fact(f"{seen.object}.pods", f"{seen.object}: {seen.pods} pods", ok, detail))
    for j, log in enumerate(seen.logs):
        wanted = range(1, (seen.pods or len(pods) or 1) + 1) if log.pods == "all" else log.pods
        for i in wanted:
            fid = f"{seen.object}.logs[{j}].pod{i}"
            label = f"pod {i} of {seen.object} logs {shape(log.line)[:80]!r}"
            if i > len(pods):
                out.append(Fact(fid, label, False, f"there is no pod {i}: {len(pods)} pod(s) created"))
                continue
            texts = [t for _, t in _errors(trace, pods[i - 1])]
            if _line_matches(log.line, texts):
                out.append(Fact(fid, label, True))
            else:
                out.append(Fact(fid, label, False, why_no_error(trace, pods[i - 1], i, log.line)))
    if seen.span is not None and pods:
        first = next(e.time for e in trace if e.obj == pods[0] and e.what == "created")
        ends = [e.time for e in trace if e.obj == pods[-1] and e.what in ("container-exited", "deleted")]
        end = ends[0] if ends else result.end_time
        took = end - first
        ok = _near(took, float(seen.span), tolerance)
        out.append(Fact(f"{seen.object}.span", f"{seen.object} spans ~{seen.span:g}s", ok, f"its pods span {took:.0f}s"))
    return out


# --- events -------------------------------------------------------------------------------------------
def event_facts(result: SimulationResult, events: Sequence[EventSeen]) -> list[Fact]:
    """Each observed Kubernetes Event, matched by reason, object shape and message shape."""
    sim = [e for e in result.trace if e.what == "event"]
    out = []
    for i, ev in enumerate(events):
        label = f"event {ev.reason} on {shape(ev.ref)}"
        same_reason = [e for e in sim if e.data.get("reason") == ev.reason]
        if not same_reason:
            out.append(Fact(f"events[{i}]", label, False, f"no {ev.reason} event is simulated", absent=True))
            continue
        want_obj, want_msg = shape(ev.ref), shape(ev.message)
        hit = any(shape(e.obj) == want_obj and (not want_msg or shape(_tail(e.message)) == want_msg) for e in same_reason)
        detail = "" if hit else f"{ev.reason} is simulated on {shape(same_reason[0].obj)}: {_tail(same_reason[0].message)}"
        out.append(Fact(f"events[{i}]", label, hit, detail))
    return out


def _tail(message: str) -> str:
    # "Warning BackoffLimitExceeded: Job has reached …" -> the Event's own message
    head, sep, rest = message.partition(": ")
    return rest if sep and " " in head and head.split(" ", 1)[0] in ("Normal", "Warning") else message


def facts(result: SimulationResult, loaded: LoadedObservation) -> list[Fact]:
    """Every observed fact checked against one run."""
    obs = loaded.observation
    release: list[Fact] = []
    until: float | None = None
    if obs.helm_release is not None:
        release = release_facts(result, obs.helm_release, obs.tolerance)
        seen_at = next((f for f in release if f.id == "release.ready" and f.ok), None)
        until = seen_at.time if seen_at is not None else None
    # the workloads first: a pod's story is the most telling reason a run does not reproduce
    out = [f for w in obs.workloads for f in workload_facts(result, w, obs.tolerance, until)]
    return [*out, *release, *event_facts(result, loaded.events)]


def job_states(result: SimulationResult, globs: Sequence[str]) -> dict[str, str]:
    """Each observed Job (glob): ``Completed``, ``Failed``, ``running`` or ``absent`` (never
    created) at the end of the run."""
    out = {}
    for g in globs:
        kind, ns, name = g.split("/", 2)
        state = "absent"
        for e in result.trace:
            if e.what not in ("event", "created") or not e.obj.startswith(f"{kind}/"):
                continue
            _, ens, ename = e.obj.split("/", 2)
            if not (fnmatch.fnmatchcase(ens, ns) and fnmatch.fnmatchcase(ename, name)):
                continue
            state = "running" if state == "absent" else state
            reason = e.data.get("reason")
            if reason == "Completed":
                state = "Completed"
            elif reason in ("BackoffLimitExceeded", "DeadlineExceeded"):
                state = "Failed"
        out[g] = state
    return out


def reproduces(found: Sequence[Fact], ignored: frozenset[str] = frozenset()) -> bool:
    """Every fact holds (facts in ``ignored`` — events nothing simulates — aside)."""
    return all(f.ok for f in found if f.id not in ignored)


def first_miss(found: Sequence[Fact], ignored: frozenset[str] = frozenset()) -> Fact | None:
    return next((f for f in found if not f.ok and f.id not in ignored), None)


__all__ = ["Fact", "event_facts", "facts", "first_miss", "release_facts", "reproduces", "shape", "why_no_error", "workload_facts"]

