"""The compact text both ``simulate`` and ``check`` print: per root cause its one-line cause,
the fix and how its re-simulation went, the releases it blocks; then notes, then one summary line.

Lines wrap at the console's width on word boundaries with a hanging indent (:func:`labelled`),
so an object or release name is never cut: a name longer than the line is folded, never
shortened. Every string goes through :func:`helmsim.report.safe.safe_text` before it becomes a
Rich ``Text`` (which would silently drop a BEL instead of showing it escaped).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from msgspec import Struct
from rich.console import Console
from rich.text import Text

from helmsim.diagnose.model import SAMPLED, Finding, Fix, Severity
from helmsim.report.safe import safe_text

OUTCOME_STYLE = {
    "Ready": "green",
    "Failed": "red",
    "Stalled": "bold red",
    "Blocked": "yellow",
    "Progressing": "yellow",
}
SEVERITY_STYLE = {Severity.error: "bold red", Severity.warning: "yellow", Severity.note: "cyan"}


class Row(Struct, frozen=True):
    """One labelled line of a block: ``label`` in the margin, ``text`` wrapped beside it."""

    label: str
    text: str | Text
    style: str = ""


def labelled(console: Console, rows: Iterable[Row], *, indent: int = 2) -> None:
    """Print ``rows`` as ``label  text`` with the text wrapped at the console width under
    itself (a hanging indent); a word is folded only when longer than the whole line."""
    rows = list(rows)
    margin = indent + max((len(r.label) for r in rows), default=0) + 1
    lines: list[Text] = []
    for r in rows:
        text = Text(safe_text(r.text), style=r.style) if isinstance(r.text, str) else r.text
        lead = Text(" " * indent) + Text(r.label, style="bold") + " " * (margin - indent - len(r.label))
        lines += _hanging_lines(console, lead, text, margin)
    _print_lines(console, lines)


def hanging(console: Console, lead: Text, text: Text, margin: int) -> None:
    """``lead`` then ``text`` wrapped at the console width, continuation lines indented by
    ``margin`` columns; no trailing spaces."""
    _print_lines(console, _hanging_lines(console, lead, text, margin))


def _hanging_lines(console: Console, lead: Text, text: Text, margin: int) -> list[Text]:
    width = max(console.width - margin, 20)
    out = []
    for i, line in enumerate(text.wrap(console, width, overflow="fold")):
        line.rstrip()
        out.append((lead if i == 0 else Text(" " * margin)) + line)
    return out


def _print_lines(console: Console, lines: Sequence[Text]) -> None:
    """The lines in one print: Rich's cost is per call (a block of 400 findings printed line
    by line took 0.5 s), the output the same."""
    if lines:
        console.print(Text("\n").join(lines), soft_wrap=True, overflow="ignore", crop=False)


def wrapped(console: Console, text: str | Text, style: str = "", *, margin: int = 0) -> None:
    """One paragraph wrapped at the console width on word boundaries, continuation lines
    indented by ``margin``."""
    line = Text(safe_text(text), style=style) if isinstance(text, str) else text
    hanging(console, Text(""), line, margin)


def variant_note(variant: str) -> str:
    """How an occurrence was found, for the text report (nothing for the nominal run)."""
    return {"tight": ", tight timing", SAMPLED: ", sampled run"}.get(variant, "")


def fix_check_text(fx: Fix) -> tuple[str, str] | None:
    """How a mechanical fix's re-simulation went (and its style), ``None`` when not checked."""
    if not fx.checks:
        return None
    good = [c.profile for c in sorted(fx.checks, key=lambda c: c.profile) if c.converges]
    bad = [c for c in sorted(fx.checks, key=lambda c: c.profile) if not c.converges]
    parts = []
    if good:
        only = len(fx.checks) == 1
        detail = fx.checks[0].detail if only else ""
        parts.append(
            f"verified: {detail} under {good[0]}" if only and detail else "verified under " + ", ".join(good)
        )
    parts += [f"not enough under {c.profile}: {c.detail}" for c in bad]
    return "; ".join(parts), ("green" if not bad else "yellow")


def finding_rows(
    finding: Finding,
    dependents: Sequence[Finding],
    *,
    profiles: Sequence[str] | None = None,
    rule_id: bool = True,
) -> list[Row]:
    """The rows of a root-cause block: cause (the rule's message, its template line), where it
    holds (``profiles`` given: a check matrix), each fix with its verification, and the blocked
    dependents."""
    loc = finding.location
    where = f" ({loc.file}:{loc.line})" if loc.file else ""
    rule = f"{finding.rule}: " if rule_id else ""
    rows = [Row("cause", f"{rule}{finding.message}{where}")]
    if profiles is not None:
        groups: dict[str, list[str]] = {}
        for o in finding.occurrences:
            groups.setdefault(f"{o.severity.name}, {o.outcome}{variant_note(o.variant)}", []).append(o.profile)
        every = len(groups) == 1 and len(finding.occurrences) == len(profiles) > 1
        under = "; ".join(
            f"{'every profile' if every else ', '.join(names)} ({how})" for how, names in groups.items()
        )
        rows.append(Row("under", under))
    for fx in finding.fixes:
        rows.append(Row("fix", fx.summary))
        checked = fix_check_text(fx)
        if checked is not None:
            rows.append(Row("", *checked))
    if dependents:
        names = ", ".join(d.release for d in sorted(dependents, key=lambda d: d.release))
        rows.append(Row("blocks", f"{names}: Blocked, they dependsOn it ({dependents[0].rule})", "yellow"))
    return rows


ALIKE_SHOWN = 10
"""How many of a fold's other objects the text names (``check --format json`` lists every finding)."""


class Fold(Struct):
    """Root causes that read the same but for their object: ``first`` in full, ``others`` by name."""

    first: Finding
    dependents: list[Finding]
    rows: list[Row]
    others: list[Finding]
    listed: str = "--format json"
    """What lists every finding, for the ``also`` row of a fold of more than ``ALIKE_SHOWN``."""

    def all_rows(self) -> list[Row]:
        """The first finding's rows, then one ``also`` row naming the others (if any)."""
        if not self.others:
            return list(self.rows)
        names = [f.location.obj for f in self.others]
        shown = ", ".join(names[:ALIKE_SHOWN])
        rest = len(names) - ALIKE_SHOWN
        tail = f" and {rest} more ({self.listed} lists each)" if rest > 0 else ""
        return [*self.rows, Row("also", f"{counted(len(names), 'more object')} the same: {shown}{tail}")]


def fold_alike(
    groups: Iterable[tuple[Finding, list[Finding]]],
    *,
    profiles: Sequence[str] | None = None,
    rule_id: bool = True,
    listed: str = "--format json",
) -> list[Fold]:
    """Root causes (with their dependents) folded where their heads and rows
    (:func:`finding_rows`) are the same text once each one's own object name is masked: the
    250 Deployments of one template that do not fit the node read as one block naming the
    others, in the order of their first member. ``listed`` names what lists every finding."""
    folds: dict[tuple[object, ...], Fold] = {}
    for f, deps in groups:
        rows = finding_rows(f, deps, profiles=profiles, rule_id=rule_id)
        mask = _name_mask(f.location.obj)
        shape = (
            finding_head(f).plain,
            tuple((r.label, mask(r.text.plain if isinstance(r.text, Text) else r.text), r.style) for r in rows),
        )
        fold = folds.get(shape)
        if fold is None:
            folds[shape] = Fold(f, list(deps), rows, [], listed)
        else:
            fold.others.append(f)
    return list(folds.values())


def _name_mask(obj: str) -> Callable[[str], str]:
    """Text with ``obj``'s ref and its name (alone or as the stem of a generated name:
    ``app-1`` in ``app-1-7d9f-x2kq``, not in ``app-10``) replaced by a placeholder."""
    name = obj.rsplit("/", 1)[-1]
    if not name:
        return lambda text: text
    stem = re.compile(rf"(?<![\w.-]){re.escape(name)}(?:-[a-z0-9]+)*(?![\w.-])")

    def mask(text: str) -> str:
        return stem.sub("\x00", text.replace(obj, "\x00"))

    return mask


def finding_head(finding: Finding) -> Text:
    """``HS102 unconsumed-wffc-claim error  agent-platform/connectivity`` (the release)."""
    return Text.assemble(
        (f"{finding.rule} ", "bold"),
        f"{finding.slug} ",
        (finding.severity.name, SEVERITY_STYLE[finding.severity]),
        f"  {safe_text(finding.release)}",
    )


def print_notes(console: Console, notes: Iterable[str]) -> None:
    """Each note once, unmapped charts folded into one note."""
    for note in compact_notes(notes):
        wrapped(console, f"note: {note}", style="dim", margin=6)


# helmsim.simulate's note for a HelmRelease whose chart has no local copy
_UNMAPPED = re.compile(
    r"^HelmRelease (?P<ref>\S+): chart (?P<chart>\S+) is not mapped to a local chart "
    r"\(--chart (?P=chart)=PATH\); modelled as Ready (?P<after>\S+) after its dependencies are$"
)


def compact_notes(notes: Iterable[str]) -> list[str]:
    """``notes`` in order, the "not mapped to a local chart" ones of several releases said
    once, at the place of the first, naming every release and its ``--chart`` flag."""
    notes = list(notes)
    unmapped = [(n, m) for n in notes if (m := _UNMAPPED.match(n))]
    afters = {m.group("after") for _, m in unmapped}
    if len(unmapped) < 2 or len(afters) != 1:
        return notes
    each = "; ".join(f"{m.group('ref')} (--chart {m.group('chart')}=PATH)" for _, m in unmapped)
    merged = (
        f"{len(unmapped)} HelmReleases have no local chart and are modelled as Ready "
        f"{afters.pop()} after their dependencies are, not simulated: {each}"
    )
    first = unmapped[0][0]
    skip = {n for n, _ in unmapped}
    return [merged if n == first else n for n in notes if n == first or n not in skip]


def counted(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
