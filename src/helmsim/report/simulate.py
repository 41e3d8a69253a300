"""Report a simulation: a verdict per release with its cause and fix; with ``--timeline`` the
Helm history and a readable timeline.

Text via Rich; JSON with the schema in docs/simulate.md. Both are deterministic for the same
inputs and seed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from helmsim.cluster.trace import TraceEvent
from helmsim.config import config_file, describe
from helmsim.report.safe import dump_json, safe_text
from helmsim.report.verdict import OUTCOME_STYLE, Row, counted, fold_alike, labelled, print_notes, wrapped
from helmsim.simulate import ReleaseOutcome, SimulationResult

if TYPE_CHECKING:
    from helmsim.diagnose.check import CheckReport

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


def timeline_events(result: SimulationResult) -> list[TraceEvent]:
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
        "timeline": [e.to_dict() for e in timeline_events(result)],
        "notes": list(result.notes),
    }
    if result.kustomizations:
        doc["kustomizations"] = [k.to_dict() for k in result.kustomizations]
    return dump_json(doc)


def render_text(
    result: SimulationResult,
    console: Console,
    *,
    diagnosis: CheckReport | None = None,
    timeline: bool = False,
    full_timeline: bool = False,
    quiet: bool = False,
    config: str | None = None,
) -> None:
    """Per release its verdict and Flux's message; for one that is not Ready the root cause,
    the fix and its re-simulation from ``diagnosis`` (the rules ``check`` runs, on this very
    run) and the releases it blocks; notes; then one summary line. The second line names the
    config file in effect. ``timeline``: also the Helm history and the notable trace events
    (``full_timeline``: every event). ``quiet``: the summary line alone."""
    if not quiet:
        upgrade = f" (upgrade from t={result.upgrade_start:g}s)" if result.upgrade_start else ""
        wrapped(console, f"Profile {result.profile} · simulated until t={result.end_time:g}s{upgrade}", style="bold")
        wrapped(console, describe(config))
        console.print()
        _render_releases(result, diagnosis, console)
        if timeline or full_timeline:
            _render_history(result, console)
            console.print(Text("Timeline", style="bold"))
            _print_events(list(result.trace) if full_timeline else timeline_events(result), console)
            console.print()
        print_notes(console, result.notes)
    wrapped(console, summary_line(result))


def _render_releases(result: SimulationResult, diagnosis: CheckReport | None, console: Console) -> None:
    groups = diagnosis.root_causes() if diagnosis is not None else []
    listed = {d.release for _, deps in groups for d in deps}
    for o in result.releases:
        ref = f"{o.namespace}/{o.name}"
        if ref in listed:
            continue  # shown under the root cause that blocks it
        head = Text.assemble((safe_text(ref), "bold"), "  ", (_verdict(o), OUTCOME_STYLE.get(o.outcome, "")))
        wrapped(console, head)
        rows = [Row("flux", _summary_message(o))] if o.simulated or o.outcome != "Ready" else []
        mine = ((f, deps) for f, deps in groups if f.release == ref)
        for fold in fold_alike(mine, listed="helmsim check --format json"):  # simulate's JSON has no findings
            rows += fold.all_rows()
        labelled(console, rows)
    for k in result.kustomizations:
        style = "green" if k.ready == "True" else ("red" if k.ready == "False" else "cyan")
        head = Text.assemble(
            ("Kustomization ", "bold"), (safe_text(f"{k.namespace}/{k.name}"), "bold"), "  ",
            (f"Ready={k.ready}" + (f" {k.reason}" if k.reason else ""), style),
        )
        wrapped(console, head)
        labelled(console, [Row("flux", k.message)] if k.message else [])
    console.print()


def _verdict(o: ReleaseOutcome) -> str:
    if not o.simulated:
        return f"{o.outcome} (not simulated)"
    attempts = f" after {counted(o.attempts, 'attempt')}" if o.attempts > 1 else ""
    at = f" at t={o.ready_at:g}s" if o.outcome == "Ready" and o.ready_at is not None else ""
    return f"{o.outcome}{attempts}{at}"


def failing_kustomizations(result: SimulationResult) -> list[Any]:
    """The Kustomizations that end Ready=False (a suspended one, never reconciled, is not)."""
    return [k for k in result.kustomizations if k.ready == "False"]


def run_failed(result: SimulationResult) -> bool:
    """What ``simulate`` exits 1 for: a simulated HelmRelease that is not Ready, or a
    Kustomization that fails (its objects are not applied, or not healthy)."""
    return any(o.simulated and o.outcome != "Ready" for o in result.releases) or bool(failing_kustomizations(result))


def summary_line(result: SimulationResult) -> Text:
    """``FAIL 1 Stalled, 4 Blocked, 1 Ready of 6 HelmReleases under kind (5 not simulated)``:
    FAIL exactly when ``simulate`` exits 1 (:func:`run_failed`)."""
    failed = run_failed(result)
    bad_ks = len(failing_kustomizations(result))
    counts: dict[str, int] = {}
    for o in result.releases:
        counts[o.outcome] = counts.get(o.outcome, 0) + 1
    rank = {k: i for i, k in enumerate(("Stalled", "Failed", "Progressing", "Blocked", "Ready"))}
    text = ", ".join(f"{counts[k]} {k}" for k in sorted(counts, key=lambda k: (rank.get(k, 2), k)))
    n = len(result.releases)
    guessed = sum(1 for o in result.releases if not o.simulated)
    return Text.assemble(
        ("FAIL" if failed else "PASS", "bold red" if failed else "bold green"),
        f" {text} of {counted(n, 'HelmRelease')} under {safe_text(result.profile)}",
        f" ({guessed} not simulated)" if guessed else "",
        f"; {counted(bad_ks, 'Kustomization')} not Ready" if bad_ks else "",
    )


def _render_history(result: SimulationResult, console: Console) -> None:
    for o in result.releases:
        if not o.simulated or not o.helm_status:
            continue
        console.print(Text(f"Helm history of {o.target_namespace}/{o.release_name}", style="bold"))
        hist = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("REVISION", "STATUS", "CHART", "DESCRIPTION"):
            hist.add_column(col, overflow="fold", no_wrap=col != "DESCRIPTION")
        for h in o.helm_status:
            hist.add_row(str(h["revision"]), h["status"], h["chart"], h["description"])
        console.print(hist, soft_wrap=False)
        console.print()


def _print_events(events: Iterable[TraceEvent], console: Console) -> None:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("TIME", "ACTOR", "OBJECT", "WHAT"):
        table.add_column(col, overflow="fold", no_wrap=col == "TIME")
    last: tuple[float, str, str, str] | None = None
    for ev in events:
        what = ev.message
        if ev.what == "event":
            what = f"{ev.data.get('type', 'Normal')} {ev.data.get('reason', '')}: {ev.message}"
        row = (ev.time, ev.actor, ev.obj, what)
        if row == last:
            continue  # e.g. the status write that records the line just printed
        last = row
        style = "red" if ev.what in ("connect-denied", "connect-timeout", "apply-error", "hook-failed", "stalled") or ev.data.get("type") == "Warning" else ""
        table.add_row(f"t={ev.time:.2f}s", ev.actor, ev.obj, Text(safe_text(what), style=style))
    console.print(table, soft_wrap=False)


def outcome_dicts(result: SimulationResult) -> list[dict[str, Any]]:
    return [o.to_dict() for o in result.releases]
