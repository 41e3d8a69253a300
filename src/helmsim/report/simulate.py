"""Report a simulation: a summary per release, Helm history, and a readable timeline.

Text via Rich; JSON with the schema in docs/simulate.md. Both are deterministic for the same
inputs and seed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from helmsim.cluster.trace import TraceEvent
from helmsim.config import config_file, describe
from helmsim.report.safe import dump_json, safe_text
from helmsim.simulate import ReleaseOutcome, SimulationResult

# What a reader needs to follow a rollout: release actions and waits, conditions, hooks, pods
# failing or being denied, policies taking effect, claims waiting, Warning events.
_TIMELINE_WHATS = {
    "action-start", "apply-group", "apply-error", "adopted", "hook-start", "hook-failed",
    "hook-succeeded", "wait-start", "wait-end", "release", "kept", "condition", "stalled",
    "connect-denied", "connect-timeout", "connected", "policy-in-effect", "container-exited",
    "container-log", "render-failed",
}
_NOTABLE_REASONS = {
    "WaitForFirstConsumer", "ExternalProvisioning", "ProvisioningSucceeded", "ProvisioningFailed",
    "FailedBinding", "FailedScheduling", "BackoffLimitExceeded", "DeadlineExceeded", "Completed",
    "SuccessfulCreate", "BackOff", "ProgressDeadlineExceeded",
}


def timeline(result: SimulationResult) -> list[TraceEvent]:
    """The trace events worth reading, repeated ones (e.g. WaitForFirstConsumer) kept once."""
    out: list[TraceEvent] = []
    seen_repeats: set[tuple[str, str]] = set()
    for ev in result.trace:
        keep = ev.what in _TIMELINE_WHATS
        if ev.what == "event":
            reason = str(ev.data.get("reason", ""))
            keep = ev.data.get("type") == "Warning" or reason in _NOTABLE_REASONS
            if reason in ("WaitForFirstConsumer", "SuccessfulCreate"):
                key = (ev.obj, ev.message)
                if key in seen_repeats:
                    continue
                seen_repeats.add(key)
        if ev.what == "event" and ev.actor == "helm-controller":
            keep = False  # the condition line right before says the same
        if ev.what == "connected" and "attempt 1" in ev.message:
            keep = False  # only connections that needed retransmits are interesting
        if keep:
            out.append(ev)
    return out


def _summary_message(o: ReleaseOutcome) -> str:
    if o.outcome == "Stalled":
        stalled = o.conditions.get("Stalled", {}).get("message", "")
        released = _failure(o)
        return f"{stalled}; last failure: {released}" if released else stalled
    if o.outcome == "Failed":
        return _failure(o) or o.message
    return o.message


def _failure(o: ReleaseOutcome) -> str:
    """The failed condition: a failed Helm test (TestSuccess=False) or the Released one."""
    test = o.conditions.get("TestSuccess", {})
    if test.get("status") == "False":
        return str(test.get("message", ""))
    return str(o.conditions.get("Released", {}).get("message", ""))


def to_json(result: SimulationResult, *, config: str | None = None) -> str:
    """The documented JSON document (docs/simulate.md), indented, stable order; ``configFile``
    is the ``.helmsim.yaml`` in effect (``null``: none)."""
    doc = {
        "profile": result.profile,
        "configFile": config_file(config),
        "endTime": round(result.end_time, 3),
        "upgradeStart": round(result.upgrade_start, 3),
        "releases": [
            {**o.to_dict(), "summary": _summary_message(o)} for o in result.releases
        ],
        "objects": result.objects,
        "timeline": [e.to_dict() for e in timeline(result)],
        "notes": list(result.notes),
    }
    if result.kustomizations:
        doc["kustomizations"] = [k.to_dict() for k in result.kustomizations]
    return dump_json(doc)


_STYLE = {"Ready": "green", "Stalled": "bold red", "Failed": "red", "Blocked": "yellow", "Progressing": "cyan"}


def render_text(
    result: SimulationResult, console: Console, *, full_timeline: bool = False, config: str | None = None
) -> None:
    """Summary table, Helm history per simulated release, then the timeline; the second line
    names the config file in effect."""
    console.print(
        Text(
            f"Profile {result.profile} · simulated until t={result.end_time:g}s"
            + (f" (upgrade from t={result.upgrade_start:g}s)" if result.upgrade_start else ""),
            style="bold",
        )
    )
    console.print(describe(config), markup=False)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("HELMRELEASE", "OUTCOME", "ATTEMPTS", "READY", "MESSAGE"):
        table.add_column(col, overflow="fold")
    for o in result.releases:
        table.add_row(
            f"{o.namespace}/{o.name}",
            Text(o.outcome + ("" if o.simulated else " (not simulated)"), style=_STYLE.get(o.outcome, "")),
            str(o.attempts) if o.simulated else "-",
            o.ready,
            _summary_message(o),
        )
    console.print(table)
    if result.kustomizations:
        ks_table = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("KUSTOMIZATION", "READY", "REASON", "MESSAGE"):
            ks_table.add_column(col, overflow="fold")
        for k in result.kustomizations:
            style = "green" if k.ready == "True" else ("red" if k.ready == "False" else "cyan")
            ks_table.add_row(f"{k.namespace}/{k.name}", Text(k.ready, style=style), k.reason, k.message)
        console.print()
        console.print(ks_table)
    for o in result.releases:
        if not o.simulated or not o.helm_status:
            continue
        console.print()
        console.print(Text(f"Helm history of {o.target_namespace}/{o.release_name}", style="bold"))
        hist = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("REVISION", "STATUS", "CHART", "DESCRIPTION"):
            hist.add_column(col, overflow="fold")
        for h in o.helm_status:
            hist.add_row(str(h["revision"]), h["status"], h["chart"], h["description"])
        console.print(hist)
    console.print()
    console.print(Text("Timeline", style="bold"))
    events = list(result.trace) if full_timeline else timeline(result)
    _print_events(events, console)
    for note in result.notes:
        console.print(Text(f"note: {note}", style="yellow"))


def _print_events(events: Iterable[TraceEvent], console: Console) -> None:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("TIME", "ACTOR", "OBJECT", "WHAT"):
        table.add_column(col, overflow="fold")
    for ev in events:
        what = ev.message
        if ev.what == "event":
            what = f"{ev.data.get('type', 'Normal')} {ev.data.get('reason', '')}: {ev.message}"
        style = "red" if ev.what in ("connect-denied", "connect-timeout", "apply-error", "hook-failed", "stalled") or ev.data.get("type") == "Warning" else ""
        table.add_row(f"t={ev.time:.2f}s", ev.actor, ev.obj, Text(safe_text(what), style=style))
    console.print(table)


def outcome_dicts(result: SimulationResult) -> list[dict[str, Any]]:
    return [o.to_dict() for o in result.releases]
