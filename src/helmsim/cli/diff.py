"""``helmsim diff``: render identity of a chart against a git ref, over a matrix of values files."""

from __future__ import annotations

import json
import tempfile
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from helmsim import diffing
from helmsim import render as rendering
from helmsim.cli import options
from helmsim.cli.app import command, emit
from helmsim.report.safe import dump_json, safe_text

MAX_FIELDS_SHOWN = 20
MAX_VALUE_CHARS = 120


class DiffFormat(str, Enum):
    text = "text"
    json = "json"


@command("diff")
def diff_cmd(
    chart: Annotated[str, typer.Argument(help="Chart directory inside a git work tree.")],
    against: Annotated[
        str,
        typer.Option(
            "--against",
            help="Git ref to compare with (branch, tag, commit, HEAD~1).",
            metavar="REF",
        ),
    ],
    values: Annotated[
        list[str] | None,
        typer.Option(
            "--values", "-f", help="A values file as one matrix entry (repeatable).", metavar="FILE"
        ),
    ] = None,
    values_matrix: Annotated[
        list[str] | None,
        typer.Option(
            "--values-matrix",
            help="Glob of values files, relative to the chart, each one entry (repeatable).",
            metavar="GLOB",
        ),
    ] = None,
    expect_identical: Annotated[
        list[str] | None,
        typer.Option(
            "--expect-identical",
            help="Entries that must not change (glob over entry names, repeatable); others are only reported.",
            metavar="GLOB",
        ),
    ] = None,
    semantic: Annotated[
        bool,
        typer.Option(
            "--semantic",
            help="Ignore pure formatting differences (key order, quoting, comments, separators).",
        ),
    ] = False,
    rehearse: Annotated[
        bool,
        typer.Option(
            "--rehearse",
            help="Simulate both renders of each changed entry, compare the predicted outcomes, and rehearse the upgrade from the ref's release to the working tree's.",
        ),
    ] = False,
    profile: Annotated[
        list[str] | None,
        typer.Option(
            "--profile",
            "-p",
            help="Cluster profile for --rehearse (repeatable, default kind); the first one's capabilities are the renders'.",
            metavar="NAME|FILE",
        ),
    ] = None,
    helmrelease: Annotated[
        list[str] | None,
        typer.Option(
            "--helmrelease",
            help="HelmRelease YAML file or directory for --rehearse (repeatable).",
            metavar="FILE|DIR",
        ),
    ] = None,
    release_name: Annotated[
        str | None,
        typer.Option(
            "--release-name", help="Release name (default: `helm template`'s release-name).", metavar="NAME"
        ),
    ] = None,
    namespace: options.Namespace = rendering.DEFAULT_NAMESPACE,
    fmt: Annotated[DiffFormat, typer.Option("--format", help="Output format.")] = DiffFormat.text,
    output: options.Output = None,
) -> None:
    """Render a chart as it is in the working tree and as it was at a git ref, per values file.

    Exit code 0 when nothing that must stay identical changed (and, with --rehearse, the upgrade
    from the ref gets Ready), 1 otherwise, 2 on bad input.

    Examples:

      helmsim diff charts/app --against origin/main --values-matrix 'ci/*-values.yaml'
      helmsim diff charts/app --against HEAD~1 --rehearse -p cilium-always --format json -o diff.json
    """
    kube, apis = options.capabilities(profile[0] if profile else None, None, None)
    opts = rendering.RenderOptions(
        release_name=release_name or rendering.DEFAULT_RELEASE_NAME,
        namespace=namespace,
        kube_version=kube,
        api_versions=apis,
    )
    with tempfile.TemporaryDirectory(prefix="helmsim-diff-") as scratch:
        report = diffing.diff_chart(
            chart,
            against,
            values=values or [],
            globs=values_matrix or [],
            expect_identical=expect_identical or [],
            semantic=semantic,
            opts=opts,
            rehearse_profiles=(profile or ["kind"]) if rehearse else None,
            helmrelease=helmrelease or [],
            release_name=release_name,
            scratch=Path(scratch),
        )
    if fmt is DiffFormat.json:
        emit(dump_json(to_json(report)), output)
    else:
        emit(safe_text(to_text(report)), output)
    if report.failing:
        raise typer.Exit(1)


# --- text ------------------------------------------------------------------------------------


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _field(obj: diffing.ObjectChange, f: diffing.FieldChange) -> str:
    if f.change == "added":
        return f"  ~ {obj.ref}: {f.path}: (absent) → {_value(f.new)}"
    if f.change == "removed":
        return f"  ~ {obj.ref}: {f.path}: {_value(f.old)} → (absent)"
    return f"  ~ {obj.ref}: {f.path}: {_value(f.old)} → {_value(f.new)}"


def _title(r: diffing.EntryResult, against: str, semantic: bool) -> str:
    e = r.entry
    origin = {
        "renamed": f" (renamed from {e.ref_name})",
        "new": f" (new: not at {against}; the same values on both sides)",
        "removed": f" (removed: only at {against}; its content there on both sides)",
        "edited": " (values file edited since the ref)",
        "external": " (outside the repository: the same values on both sides)",
    }.get(e.origin, "")
    status = {"identical": "identical", "formatting": "formatting only", "changed": "changed"}[
        r.status
    ]
    gate = ""
    if r.expect_identical:
        gate = "  [expected identical: FAIL]" if r.violates(semantic) else "  [expected identical]"
    return f"{e.name}{origin}: {status}{gate}"


def to_text(report: diffing.DiffReport) -> str:
    """The human report: one line per entry, then its object and field changes."""
    lines = [f"{report.chart}: working tree against {report.against} ({report.commit[:12]})"]
    lines.extend(f"note: {note}" for note in report.notes)
    for r in report.entries:
        lines.append(_title(r, report.against, report.semantic))
        for note in r.notes:
            lines.append(f"  {note}")
        for obj in r.objects:
            if obj.change == "added":
                lines.append(f"  + {obj.ref} (added; {obj.source})")
            elif obj.change == "removed":
                lines.append(f"  - {obj.ref} (removed; was {obj.source})")
            else:
                for f in obj.fields[:MAX_FIELDS_SHOWN]:
                    lines.append(_field(obj, f))
                if len(obj.fields) > MAX_FIELDS_SHOWN:
                    lines.append(
                        f"  ~ {obj.ref}: … {len(obj.fields) - MAX_FIELDS_SHOWN} more fields (--format json lists all)"
                    )
        for reh in r.rehearsals:
            installs = [c for c in reh.releases if c.ref != c.worktree]
            if not installs:
                main = next((c for c in reh.releases if "not simulated" not in c.ref), None)
                what = f" ({main.release}: {main.ref})" if main else ""
                lines.append(f"  rehearse under {reh.profile}: predicted outcome unchanged{what}")
            for c in installs:
                lines.append(
                    f"  rehearse under {reh.profile}: HelmRelease {c.release}: "
                    f"{report.against}: {c.ref}; working tree: {c.worktree}"
                )
            lines.extend(_upgrade_lines(reh, report.against))
    counts: dict[str, int] = {}
    for r in report.entries:
        counts[r.status] = counts.get(r.status, 0) + 1
    parts = [
        f"{counts[s]} {label}"
        for s, label in (
            ("identical", "identical"),
            ("formatting", "formatting only"),
            ("changed", "changed"),
        )
        if counts.get(s)
    ]
    lines.append("")
    lines.append(f"{_count(len(report.entries), 'entry', 'entries')}: {', '.join(parts)}.")
    failing = report.failing
    upgrades = [r for r in failing if r.upgrade_fails]
    differ = report.differing
    if differ:
        scope = "expected identical " if report.expect_identical else ""
        verb = "differs" if len(differ) == 1 else "differ"
        names = ", ".join(r.entry.name for r in differ)
        lines.append(
            f"FAIL: {_count(len(differ), scope + 'entry', scope + 'entries')} {verb}: {names}"
        )
    if upgrades:
        names = ", ".join(r.entry.name for r in upgrades)
        lines.append(f"FAIL: the upgrade from {report.against} fails for {names}")
    if not failing:
        lines.append("OK: nothing that must stay identical changed.")
    return "\n".join(lines) + "\n"


def _upgrade_lines(reh: diffing.Rehearsal, against: str) -> list[str]:
    """The upgrade rehearsal: the ref's release upgraded to the working tree's."""
    head = f"  rehearse under {reh.profile}: upgrade {against} → working tree"
    if reh.note:
        return [f"{head}: {reh.note}"]
    failed = [c for c in reh.releases if c.upgrade_fails]
    if not failed:
        main = next((c for c in reh.releases if c.upgrade and "not simulated" not in c.upgrade), None)
        return [f"{head}: {main.release}: {main.upgrade}" if main else f"{head}: nothing simulated"]
    return [
        f"{head}: HelmRelease {c.release}: {c.upgrade}" + (f" — {c.upgrade_cause}" if c.upgrade_cause else "")
        for c in failed
    ]


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


# --- json ------------------------------------------------------------------------------------


def to_json(report: diffing.DiffReport) -> dict[str, Any]:
    """The machine report (objects redacted by ``helmsim.redaction``; :func:`dump_json` scrubs
    the rest)."""
    return {
        "chart": report.chart,
        "against": report.against,
        "commit": report.commit,
        "semantic": report.semantic,
        "expectIdentical": list(report.expect_identical),
        "notes": list(report.notes),
        "entries": [
            {
                "name": r.entry.name,
                "origin": r.entry.origin,
                "refName": r.entry.ref_name,
                "status": r.status,
                "expectIdentical": r.expect_identical,
                "differs": r.violates(report.semantic),
                "notes": list(r.notes),
                "objects": [
                    {
                        "ref": o.ref,
                        "change": o.change,
                        "source": o.source,
                        "fields": [
                            {"path": f.path, "change": f.change, "old": f.old, "new": f.new}
                            for f in o.fields
                        ],
                    }
                    for o in r.objects
                ],
                "rehearsals": [
                    {
                        "profile": reh.profile,
                        "changed": reh.changed,
                        "releases": [
                            {
                                "release": c.release,
                                "ref": c.ref,
                                "workingTree": c.worktree,
                                "upgrade": c.upgrade,
                                "upgradeCause": c.upgrade_cause,
                                "upgradeFails": c.upgrade_fails,
                                "changed": c.changed,
                            }
                            for c in reh.releases
                        ],
                        "upgradeFails": reh.upgrade_fails,
                        "note": reh.note,
                    }
                    for reh in r.rehearsals
                ],
            }
            for r in report.entries
        ],
        "failing": [r.entry.name for r in report.failing],
        "exitCode": 1 if report.failing else 0,
    }
