"""Report a check: a release × profile summary, then each finding with its chain and fixes.

Text via Rich; JSON with the schema in docs/check.md (``schemaVersion`` 1). Both list findings
worst first, then by rule id, release and object, so the same inputs give the same bytes. With
``--runs`` both add the sampled outcome distributions (``monteCarlo``, docs/montecarlo.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from helmsim import __version__
from helmsim.config import config_file, describe
from helmsim.diagnose.check import CheckReport
from helmsim.diagnose.model import Finding, Severity
from helmsim.diagnose.sampling import Sampling, pct
from helmsim.montecarlo import Stat
from helmsim.report.safe import dump_json, safe_text
from helmsim.report.verdict import (
    OUTCOME_STYLE,
    Fold,
    Row,
    counted,
    finding_head,
    fold_alike,
    labelled,
    print_notes,
    variant_note,
    wrapped,
)

if TYPE_CHECKING:
    from helmsim.fleet.run import FleetReport

SCHEMA_VERSION = 1


# --- JSON ---------------------------------------------------------------------------------------------
def to_data(report: CheckReport, *, fail_on: str) -> dict[str, Any]:
    """The JSON document (a plain dict) for ``report``."""
    releases = []
    for ref in sorted(report.releases):
        per: dict[str, Any] = {}
        for profile in report.profiles:
            o = report.outcomes.get((ref, profile))
            if o is None:
                continue
            per[profile] = {
                "outcome": o.outcome,
                "ready": o.ready,
                "reason": o.reason,
                "message": o.message,
                "attempts": o.attempts,
                "simulated": o.simulated,
                "readyAt": None if o.ready_at is None else round(o.ready_at, 3),
                "findings": [f.rule for f in report.findings_for(ref, profile)],
            }
        releases.append({"release": ref, "profiles": per})
    counts = {
        s.name: sum(1 for f in report.findings if f.severity == s)
        for s in sorted(Severity, reverse=True)
    }
    failing = report.at_or_above(fail_on)
    out = {
        "schemaVersion": SCHEMA_VERSION,
        "tool": {"name": "helmsim", "version": __version__},
        "failOn": fail_on,
        "passed": not failing,
        "configFile": config_file(report.config),
        "profiles": list(report.profiles),
        "summary": {**counts, "suppressed": len(report.suppressed)},
        "releases": releases,
        "findings": [finding_dict(f, report.sampling) for f in report.findings],
        "suppressed": [finding_dict(f, report.sampling) for f in report.suppressed],
        "notes": list(report.notes),
    }
    if report.sampling is not None:
        out["monteCarlo"] = report.sampling.to_dict()
    return out


def fleet_to_data(fleet: FleetReport, *, fail_on: str) -> dict[str, Any]:
    """The fleet's JSON: the matrix, totals, and each rehearsal's check document (its
    ``schemaVersion``, ``tool`` and ``failOn`` once, at the top)."""
    findings = [f for _, f in fleet.findings]
    counts = {s.name: sum(1 for f in findings if f.severity == s) for s in sorted(Severity, reverse=True)}
    suppressed = sum(len(r.suppressed) for _, r in fleet.rehearsals)
    failing = {spec.key for spec, _ in fleet.at_or_above(fail_on)}
    rehearsals = []
    for spec, report in fleet.rehearsals:
        doc = to_data(report, fail_on=fail_on)
        for key in ("schemaVersion", "tool", "failOn", "configFile"):
            doc.pop(key)
        rehearsals.append(
            {
                "rehearsal": spec.key,
                "name": spec.name,
                "target": spec.entry.target,
                "values": list(spec.values),
                **doc,
            }
        )
    return {
        "schemaVersion": SCHEMA_VERSION,
        "tool": {"name": "helmsim", "version": __version__},
        "failOn": fail_on,
        "passed": not failing,
        "configFile": config_file(fleet.config),
        "fleet": {
            "profiles": list(fleet.profiles),
            "rehearsals": len(fleet.rehearsals),
            "runs": fleet.runs,
            "seed": fleet.seed,
        },
        "summary": {**counts, "suppressed": suppressed, "failingRehearsals": len(failing)},
        "rehearsals": rehearsals,
    }


def fleet_to_json(fleet: FleetReport, *, fail_on: str) -> str:
    return dump_json(fleet_to_data(fleet, fail_on=fail_on))


def render_fleet_text(fleet: FleetReport, console: Console, *, fail_on: str) -> None:
    """One summary table for the whole matrix (rehearsal, release × profile), then each
    rehearsal's sampled distributions and findings, then the verdict."""
    n = len(fleet.rehearsals)
    head = f"helmsim fleet: {n} rehearsal{'s' if n != 1 else ''} × {len(fleet.profiles)} profiles"
    if fleet.runs:
        head += f", {fleet.runs} sampled run{'s' if fleet.runs != 1 else ''} per profile, seed {fleet.seed}"
    console.print(head, markup=False)
    console.print(describe(fleet.config), markup=False)
    console.print()
    table = _table("HELMRELEASE", fleet.profiles, lead=("REHEARSAL",))
    for spec, report in fleet.rehearsals:
        for k, ref in enumerate(sorted(report.releases)):
            table.add_row(
                Text(spec.key if k == 0 else ""),
                ref,
                *(outcome_cell(report, ref, p) for p in fleet.profiles),
            )
    console.print(table, soft_wrap=False)
    console.print()
    for spec, report in fleet.rehearsals:
        if not (report.findings or report.sampling or report.suppressed or report.notes):
            continue
        console.print(Text(f"== {spec.key}", style="bold"))
        _render_body(report, console)
        _render_tail(report, console)
        console.print()
    groups = [g for _, r in fleet.rehearsals for g in r.root_causes()]
    suppressed = [f for _, r in fleet.rehearsals for f in r.suppressed]
    failing = {spec.key for spec, _ in fleet.at_or_above(fail_on)}
    verdict = Text("FAIL" if failing else "PASS", style="bold red" if failing else "bold green")
    where = f" in {len(failing)} of {n} rehearsals" if failing else ""
    wrapped(console, Text.assemble(verdict, f" {_counts(groups, suppressed)}{where} (fail on: {fail_on})"))


def finding_dict(f: Finding, sampling: Sampling | None) -> dict[str, Any]:
    """A finding as JSON; a race finding of a sampled check carries its figures per profile."""
    out = f.to_dict()
    if sampling is not None:
        races = sampling.races_of(f.rule, f.release, f.location.obj)
        if races:
            out["monteCarlo"] = [{"profile": r.profile, **r.figures()} for r in races]
    return out


def to_json(report: CheckReport, *, fail_on: str) -> str:
    return dump_json(to_data(report, fail_on=fail_on))


# --- text ---------------------------------------------------------------------------------------------
def render_text(
    report: CheckReport,
    console: Console,
    *,
    fail_on: str,
    timeline: bool = False,
    quiet: bool = False,
) -> None:
    """The config file in effect, the release × profile summary, the sampled distributions
    (``--runs``), each root cause (cause, fix, its verification, the releases it blocks; with
    ``timeline`` its causal chain), the notes, and the verdict line last. ``quiet``: the
    verdict line alone."""
    if not quiet:
        wrapped(console, describe(report.config))
        summary_table(report, console)
        console.print()
        _render_body(report, console, timeline=timeline)
        _render_tail(report, console)
    wrapped(console, verdict_line(report, fail_on=fail_on))


def verdict_line(report: CheckReport, *, fail_on: str) -> Text:
    """``FAIL 1 error (4 releases blocked by it) (fail on: error)`` or ``PASS …``."""
    failing = report.at_or_above(fail_on)
    verdict = Text("FAIL" if failing else "PASS", style="bold red" if failing else "bold green")
    return Text.assemble(verdict, f" {_counts(report.root_causes(), report.suppressed)} (fail on: {fail_on})")


def summary_table(report: CheckReport, console: Console) -> None:
    """Release × profile: a table when it fits the console, else one line per release with
    its profiles grouped by outcome. Release names are never cut."""
    refs = sorted(report.releases)
    cells = {(ref, p): outcome_cell(report, ref, p) for ref in refs for p in report.profiles}
    table = _table("HELMRELEASE", report.profiles)
    for ref in refs:
        table.add_row(ref, *(cells[(ref, p)] for p in report.profiles))
    if _natural_width(table, console) <= console.width:
        console.print(table, soft_wrap=False)
        return
    pad = max(len(r) for r in refs) if refs else 0
    pad = pad if pad <= console.width // 2 else 0  # aligned while the names leave room
    for ref in refs:
        groups: dict[str, list[str]] = {}
        styled: dict[str, Text | str] = {}
        for p in report.profiles:
            cell = cells[(ref, p)]
            key = cell.plain if isinstance(cell, Text) else cell
            groups.setdefault(key, []).append(p)
            styled[key] = cell
        line = Text(safe_text(f"{ref:<{pad}}  "), style="bold")
        for i, (key, profiles) in enumerate(groups.items()):
            if i:
                line.append("; ")
            shown = styled[key]
            line.append_text(shown if isinstance(shown, Text) else Text(safe_text(key)))
            under = "every profile" if len(groups) == 1 and len(profiles) > 1 else ", ".join(profiles)
            line.append(f" ({under})")
        wrapped(console, line)


def _natural_width(table: Table, console: Console) -> int:
    from rich.measure import Measurement

    wide = console.options.update_width(10_000)
    return Measurement.get(console, wide, table).maximum


def _table(first: str, profiles: Sequence[str], *, lead: Sequence[str] = ()) -> Table:
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for column in (*lead, first):
        table.add_column(column, no_wrap=True)
    for p in profiles:
        table.add_column(p.upper(), no_wrap=True)
    return table


def outcome_cell(report: CheckReport, ref: str, profile: str) -> Text | str:
    """A summary cell: the outcome, the share of sampled runs not Ready, the rule ids."""
    o = report.outcomes.get((ref, profile))
    if o is None:
        return "-"
    cell = Text(o.outcome, style=OUTCOME_STYLE.get(o.outcome, ""))
    if not o.simulated and o.outcome == "Ready":
        cell = Text("Ready (not simulated)", style="dim")
    dist = report.sampling.distribution(ref, profile) if report.sampling is not None else None
    if dist is not None and o.outcome == "Ready" and (bad := dist.not_ready()).count:
        cell.append(f" ({100 * bad.probability:.1f} % not Ready)", style="red")
    ids = sorted({f.rule for f in report.findings_for(ref, profile)})
    if ids:
        cell.append(" " + " ".join(ids), style="bold")
    return cell


def _render_body(report: CheckReport, console: Console, *, timeline: bool = False) -> None:
    """The sampled distributions (``--runs``) and every root cause with what it blocks."""
    if report.sampling is not None:
        for line in sampling_lines(report.sampling):
            console.print(line, markup=False, highlight=False)
        console.print()
    if not report.findings:
        console.print("No findings.", style="green")
    for fold in fold_alike(report.root_causes(), profiles=report.profiles, rule_id=False):
        render_fold(fold, console, timeline=timeline)


def _render_tail(report: CheckReport, console: Console) -> None:
    for s in report.suppressed:
        wrapped(console, f"suppressed {s.rule} {s.location.obj}: {s.suppressed}", style="dim")
    print_notes(console, report.notes)


def _counts(groups: Sequence[tuple[Finding, list[Finding]]], suppressed: Sequence[Finding]) -> str:
    """``1 error (4 releases blocked by it), 1 warning; 1 suppressed`` (or ``no findings``):
    root causes by severity, the dependents they block counted beside them."""
    parts = []
    for s in (Severity.error, Severity.warning, Severity.note):
        mine = [(f, d) for f, d in groups if f.severity == s]
        if not mine:
            continue
        blocked = {x.release for _, deps in mine for x in deps}
        part = counted(len(mine), s.name)
        if blocked:
            part += f" ({counted(len(blocked), 'release')} blocked by {'it' if len(mine) == 1 else 'them'})"
        parts.append(part)
    summary = ", ".join(parts) or "no findings"
    if suppressed:
        summary += f"; {len(suppressed)} suppressed"
    return summary


def render_fold(fold: Fold, console: Console, *, timeline: bool = False) -> None:
    """A root cause and those alike (:func:`helmsim.report.verdict.fold_alike`): the first in
    full, the others by name; with ``timeline`` the first's causal chain."""
    wrapped(console, finding_head(fold.first))
    rows = fold.all_rows()
    if timeline:
        rows += _chain_rows(fold.first)
    labelled(console, rows)
    console.print()


def _chain_rows(f: Finding) -> list[Row]:
    rows: list[Row] = []
    shown: set[str] = set()
    for o in sorted(f.occurrences, key=lambda o: -int(o.severity)):
        text = " — ".join(str(s) for s in o.chain)
        if text in shown or not o.chain:
            continue
        shown.add(text)
        rows.append(Row("chain", f"({o.profile}{variant_note(o.variant)})"))
        rows += [Row("", str(s)) for s in o.chain]
        if len(shown) >= 2:
            break
    return rows


def sampling_lines(sampling: Sampling) -> list[str]:
    """The sampled outcome distributions as plain lines (the same for the same seed)."""
    blocks: list[tuple[str, list[tuple[str, Stat]]]] = []
    for d in sampling.distributions:
        if not d.simulated and d.counts == {"Ready": d.runs}:
            continue  # modelled Ready in every run: nothing to read
        items: list[tuple[str, Stat]] = [(s.label, s) for s in d.outcomes]
        if d.first_attempt_failed is not None and d.first_attempt_failed.count:
            items.append(("first attempt failed", d.first_attempt_failed))
        for r in sampling.races:
            if (r.release, r.profile) == (d.release, d.profile):
                items.append((f"{r.rule} {r.obj} denied", r.denied))
                if r.first_attempt.count:
                    items.append(
                        (f"{r.rule} {r.obj} denied, first attempt failed", r.first_attempt)
                    )
                items.append((f"{r.rule} {r.obj} fails the release", r.fails))
        head = f"{d.release} under {d.profile}" + ("" if d.simulated else " (not simulated)")
        blocks.append((head, items))
    rows = [item for _, items in blocks for item in items]
    width = max((len(label) for label, _ in rows), default=10) + 2
    count = max((len(f"{s.count}/{s.runs}") for _, s in rows), default=5)
    plural = "s" if sampling.runs != 1 else ""
    lines = [
        f"Monte Carlo: {sampling.runs} sampled run{plural} per profile, seed {sampling.seed}, "
        + "latencies drawn from each profile's distributions"
    ]
    lines.append(
        "probability with its 95 % Wilson interval; 'seed' replays one such run: "
        "helmsim simulate … -p PROFILE --runs 1 --seed SEED"
    )
    for head, items in blocks:
        lines += ["", head]
        for label, s in items:
            lo, hi = s.interval
            line = f"  {label:<{width}}{f'{s.count}/{s.runs}':>{count}}  {pct(s.probability):>8}  [{pct(lo)}, {pct(hi)}]"
            if s.seed is not None and s.count and label != "Ready":
                line += f"  seed {s.seed}"
            lines.append(line)
    return lines
