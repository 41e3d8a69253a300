"""Render a chart in the working tree and at a git ref under a matrix of values files; compare.

Each matrix entry is a values file (or the chart's defaults). Both renders use Helm's engine
(``helmsim.render``). An entry is byte-identical, differs only in formatting (same objects
after parsing: key order, quoting, comments, document separators, template file or document
order) or changes objects: added, removed, or fields changed, with their paths. Secrets are
replaced by a short hash (``helmsim.redaction.redact_object``) before anything is compared or
printed. ``rehearse`` simulates both renders of a changed entry and compares
the predicted outcomes, and rehearses the upgrade from the ref's release to the working tree's.
"""

from __future__ import annotations

import fnmatch
import glob as globlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from msgspec import Struct, field
from msgspec.structs import replace

from helmsim import gitref, render, yamlio
from helmsim.errors import InputError
from helmsim.flux import postrender
from helmsim.flux.helmrelease import HelmRelease
from helmsim.kstatus.wait import TIMEOUT
from helmsim.manifests import Resource, parse_documents, parse_objects, read_objects
from helmsim.redaction import clip, redact_object

DEFAULT_MATRIX = ("ci/*-values.yaml", "ci/*.yaml")
DEFAULTS_ENTRY = "(chart defaults)"

Origin = Literal["defaults", "unchanged", "edited", "renamed", "new", "removed", "external"]
Status = Literal["identical", "formatting", "changed"]
Change = Literal["added", "removed", "changed"]


# --- the matrix ------------------------------------------------------------------------------


class MatrixEntry(Struct, frozen=True):
    """One values file of the matrix and the file each side renders with.

    ``origin``: ``unchanged``/``edited`` (the same path at the ref, same or other content),
    ``renamed`` (same content at another path at the ref, ``ref_name``), ``new`` (not at the
    ref: its working-tree content is used on both sides), ``removed`` (only at the ref: its
    ref content on both sides), ``external`` (outside the repository: the same file on both
    sides), ``defaults`` (no values file).
    """

    name: str
    origin: Origin
    worktree_values: Path | None
    ref_values: Path | None
    ref_name: str | None = None
    aliases: tuple[str, ...] = ()

    def matches(self, pattern: str) -> bool:
        """Whether a ``--expect-identical`` glob names this entry (by any of its names)."""
        names = {self.name, *(self.aliases), *([self.ref_name] if self.ref_name else [])}
        return any(fnmatch.fnmatchcase(n, pattern) for n in names)


class _Candidate(Struct, frozen=True):
    name: str
    repo_path: str | None  # repo-relative path; None outside the repository
    aliases: tuple[str, ...] = ()


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A shell glob over POSIX paths: ``*``/``?``/``[..]`` stay within one segment, ``**`` spans."""
    regex = ""
    parts = pattern.split("/")
    for n, seg in enumerate(parts):
        last = n == len(parts) - 1
        if seg == "**":  # zero or more directories, as glob.glob(recursive=True)
            regex += ".*" if last else "(?:.*/)?"
            continue
        out, i = "", 0
        while i < len(seg):
            ch = seg[i]
            close = seg.find("]", i + 2) if ch == "[" else -1
            if ch == "*":
                out += "[^/]*"
            elif ch == "?":
                out += "[^/]"
            elif close != -1:
                body = seg[i + 1 : close]
                body = "^" + body[1:] if body.startswith("!") else body
                out += "[" + body.replace("\\", "\\\\") + "]"
                i = close
            else:
                out += re.escape(ch)
            i += 1
        regex += out if last else out + "/"
    return re.compile(regex + r"\Z", re.DOTALL)


def _name_in_chart(path: Path, chart_dir: Path) -> str | None:
    try:
        return path.resolve().relative_to(chart_dir.resolve()).as_posix()
    except ValueError:
        return None


def _display(path: Path, chart_dir: Path) -> tuple[str, tuple[str, ...]]:
    """Entry name (chart-relative when inside the chart) and its other spellings."""
    cwd_rel = os.path.relpath(path.resolve(), Path.cwd().resolve())
    inside = _name_in_chart(path, chart_dir)
    if inside is not None:
        return inside, (cwd_rel, Path(cwd_rel).as_posix())
    return Path(cwd_rel).as_posix(), (str(path),)


def build_matrix(
    chart_dir: Path,
    commit: gitref.Commit,
    scratch: Path,
    *,
    values: Sequence[str] = (),
    globs: Sequence[str] = (),
) -> list[MatrixEntry]:
    """The matrix: ``-f`` files, then ``--values-matrix`` globs (relative to the chart), or
    by default the chart's ``ci/*-values.yaml`` and ``ci/*.yaml`` (else its defaults)."""
    repo = commit.repo
    explicit_globs = list(globs)
    patterns = explicit_globs or ([] if values else list(DEFAULT_MATRIX))
    ref_tree = {e.path: e for e in gitref.list_tree(commit)} if patterns or values else {}

    entries: list[MatrixEntry] = []
    seen: set[str] = set()  # working-tree repo paths (or absolute paths) already in the matrix
    for file in values:
        path = Path(file)
        if not path.is_file():
            raise InputError("values file not found", file=file)
        name, aliases = _display(path, chart_dir)
        rel = gitref.repo_relative(repo, path)
        key = rel if rel is not None else str(path.resolve())
        if key in seen:
            continue
        seen.add(key)
        entries.append(
            _pair_same_path(
                _Candidate(name, rel, aliases), path, ref_tree, commit, scratch, len(entries)
            )
        )

    worktree: dict[str, tuple[Path, _Candidate]] = {}
    at_ref: dict[str, _Candidate] = {}
    for pattern in patterns:
        absolute = os.path.normpath(os.path.join(chart_dir.resolve(), pattern))
        found_wt = [
            Path(p) for p in sorted(globlib.glob(absolute, recursive=True)) if Path(p).is_file()
        ]
        rel_pattern = gitref.repo_relative(repo, absolute)  # None: outside the repository
        found_ref: list[str] = []
        if rel_pattern is not None:
            rx = _glob_regex(rel_pattern)
            found_ref = [p for p, e in ref_tree.items() if rx.match(p) and e.mode != "120000"]
        if explicit_globs and not found_wt and not found_ref:
            raise InputError(
                f"--values-matrix {pattern!r} matches no file (in the working tree or at {commit.ref})"
            )
        for p in found_wt:
            rel = gitref.repo_relative(repo, p)
            key = rel if rel is not None else str(p.resolve())
            if key in seen or key in worktree:
                continue
            name, aliases = _display(p, chart_dir)
            worktree[key] = (p, _Candidate(name, rel, aliases))
        for rp in found_ref:
            if rp in seen or rp in at_ref:
                continue
            name, aliases = _display(repo.top / rp, chart_dir)
            at_ref[rp] = _Candidate(name, rp, aliases)

    paired: list[MatrixEntry] = []
    wt_only = {k: v for k, v in worktree.items() if k not in at_ref}
    ref_only = {k: v for k, v in at_ref.items() if k not in worktree}
    for key, (path, cand) in worktree.items():
        if key in at_ref:
            paired.append(
                _pair_same_path(cand, path, ref_tree, commit, scratch, len(entries) + len(paired))
            )
    renames = _match_renames(wt_only, ref_only, ref_tree, commit)
    for wt_key, ref_key in renames.items():
        path, cand = wt_only.pop(wt_key)
        ref_cand = ref_only.pop(ref_key)
        ref_file = _write_ref(commit, ref_tree[ref_key], scratch, len(entries) + len(paired))
        paired.append(
            MatrixEntry(
                cand.name, "renamed", path, ref_file, ref_name=ref_cand.name, aliases=cand.aliases
            )
        )
    for _key, (path, cand) in wt_only.items():
        origin: Origin = "new" if cand.repo_path is not None else "external"
        paired.append(MatrixEntry(cand.name, origin, path, path, aliases=cand.aliases))
    for key, cand in ref_only.items():
        ref_file = _write_ref(commit, ref_tree[key], scratch, len(entries) + len(paired))
        paired.append(
            MatrixEntry(
                cand.name, "removed", ref_file, ref_file, ref_name=cand.name, aliases=cand.aliases
            )
        )
    entries.extend(sorted(paired, key=lambda e: e.name))

    if not entries and not values and not explicit_globs:
        entries.append(MatrixEntry(DEFAULTS_ENTRY, "defaults", None, None))
    return entries


def _pair_same_path(
    cand: _Candidate,
    path: Path,
    ref_tree: Mapping[str, gitref.TreeEntry],
    commit: gitref.Commit,
    scratch: Path,
    index: int,
) -> MatrixEntry:
    if cand.repo_path is None:
        return MatrixEntry(cand.name, "external", path, path, aliases=cand.aliases)
    entry = ref_tree.get(cand.repo_path)
    if entry is None or entry.mode == "120000":
        return MatrixEntry(cand.name, "new", path, path, aliases=cand.aliases)
    ref_file = _write_ref(commit, entry, scratch, index)
    origin: Origin = "unchanged" if ref_file.read_bytes() == path.read_bytes() else "edited"
    return MatrixEntry(cand.name, origin, path, ref_file, aliases=cand.aliases)


def _write_ref(commit: gitref.Commit, entry: gitref.TreeEntry, scratch: Path, index: int) -> Path:
    content = gitref.read_blobs(commit, [entry.sha])[entry.sha]
    folder = scratch / "values" / str(index)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / PurePosixPath(entry.path).name  # list_tree refused "..", "/" and ".git"
    gitref.write_new(target, content, 0o644)
    return target


def _parsed(content: bytes) -> Any:
    try:
        return ("yaml", yamlio.load_one(content.decode("utf-8"), "<values>"))
    except (InputError, UnicodeDecodeError):
        return ("bytes", content)


def _match_renames(
    wt_only: Mapping[str, tuple[Path, _Candidate]],
    ref_only: Mapping[str, _Candidate],
    ref_tree: Mapping[str, gitref.TreeEntry],
    commit: gitref.Commit,
) -> dict[str, str]:
    """Pair files that exist only in the working tree with files only at the ref: the same
    bytes first, then the same values after parsing (a reformatted rename)."""
    if not wt_only or not ref_only:
        return {}
    ref_bytes = gitref.read_blobs(commit, [ref_tree[k].sha for k in ref_only])
    ref_content = {k: ref_bytes[ref_tree[k].sha] for k in ref_only}
    wt_content = {k: p.read_bytes() for k, (p, _) in wt_only.items()}
    out: dict[str, str] = {}
    for same in (lambda a, b: a == b, lambda a, b: _parsed(a) == _parsed(b)):
        for wk in sorted(wt_content):
            if wk in out:
                continue
            for rk in sorted(ref_content):
                if rk not in out.values() and same(wt_content[wk], ref_content[rk]):
                    out[wk] = rk
                    break
    return out


# --- object diff ----------------------------------------------------------------------------


class FieldChange(Struct, frozen=True):
    """One field that differs: its path (``spec.template.spec.containers[0].image``)."""

    path: str
    change: Change
    old: Any = None
    new: Any = None


class ObjectChange(Struct, frozen=True):
    """An object added, removed or changed between the ref render and the working-tree one."""

    ref: str
    change: Change
    source: str
    fields: tuple[FieldChange, ...] = ()


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    text = str(key)
    if _PLAIN_KEY.match(text):
        return f"{path}.{text}" if path else text
    return f"{path}[{json.dumps(text)}]"


def _same_scalar(a: Any, b: Any) -> bool:
    # 1 and 1.0 are the same JSON number (sigs.k8s.io/yaml converts YAML to JSON); true is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def diff_values(old: Any, new: Any, path: str = "") -> list[FieldChange]:
    """Fields added, removed or changed from ``old`` to ``new``; lists compared by index."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[FieldChange] = []
        for key in [*old, *(k for k in new if k not in old)]:
            sub = _join(path, key)
            if key not in new:
                out.append(FieldChange(sub, "removed", old=old[key]))
            elif key not in old:
                out.append(FieldChange(sub, "added", new=new[key]))
            else:
                out.extend(diff_values(old[key], new[key], sub))
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        for i in range(max(len(old), len(new))):
            sub = _join(path, i)
            if i >= len(new):
                out.append(FieldChange(sub, "removed", old=old[i]))
            elif i >= len(old):
                out.append(FieldChange(sub, "added", new=new[i]))
            else:
                out.extend(diff_values(old[i], new[i], sub))
        return out
    if isinstance(old, (dict, list)) or isinstance(new, (dict, list)):
        return [FieldChange(path, "changed", old=old, new=new)] if old != new else []
    return [] if _same_scalar(old, new) else [FieldChange(path, "changed", old=old, new=new)]


def _index(resources: Iterable[Resource]) -> dict[str, Resource]:
    """Objects by identity (group, kind, namespace, name); a repeated identity gets ``#n``."""
    out: dict[str, Resource] = {}
    for res in resources:
        ident = "/".join(res.key)
        n = 1
        key = ident
        while key in out:
            n += 1
            key = f"{ident}#{n}"
        out[key] = res
    return out


def _label(res: Resource, key: str) -> str:
    suffix = key[key.rfind("#") :] if "#" in key.rsplit("/", 1)[-1] else ""
    return res.ref + suffix


def diff_objects(old: Sequence[Resource], new: Sequence[Resource]) -> list[ObjectChange]:
    """Object-level changes, ref side ``old`` to working-tree side ``new``, in a stable order."""
    before, after = _index(old), _index(new)
    out: list[ObjectChange] = []
    for key, res in before.items():
        if key not in after:
            out.append(ObjectChange(_label(res, key), "removed", res.source.path))
            continue
        fields = diff_values(redact_object(res.body), redact_object(after[key].body))
        if fields:
            out.append(
                ObjectChange(_label(res, key), "changed", after[key].source.path, tuple(fields))
            )
    for key, res in after.items():
        if key not in before:
            out.append(ObjectChange(_label(res, key), "added", res.source.path))
    return out


# --- rendering and comparing one entry -------------------------------------------------------


class Rendered(Struct, frozen=True):
    """One side of an entry: the `helm template` text and its objects, or why it failed.

    ``failure`` is the error with the chart's and the values file's paths taken out, so the
    same failure on both sides compares equal.
    """

    text: str = ""
    resources: tuple[Resource, ...] = ()
    error: str | None = None
    failure: str | None = None


def render_side(
    chart: Path,
    values: Path | None,
    opts: render.RenderOptions,
    *,
    chart_label: str | None = None,
    values_label: str | None = None,
    strict_values: bool = False,
    hr: HelmRelease | None = None,
) -> Rendered:
    """Render ``chart`` with one values file; render errors are captured, not raised.

    The labels replace the (temporary) chart and values paths in error messages. With
    ``strict_values`` a values file that does not load (the user's own, in the working tree) is
    bad input, raised, rather than a render difference.
    """
    if strict_values and values is not None:
        render.load_values([values])
    try:
        merged = render.load_values([values] if values else [])
        out = render.render_chart(chart, replace(opts, values=merged), include_crds=True)
        files = [(f.path, f.content) for f in out.files]
        if hr is not None:
            # what helm-controller applies: the render after its post-renderers
            crds = [f for f, c in zip(files, out.files, strict=True) if c.is_crd_file]
            objects = read_objects(crds) + postrender.post_render(
                hr, [f for f, c in zip(files, out.files, strict=True) if not c.is_crd_file],
                kube_version=opts.kube_version or "1.31.0",
            )
            parsed = parse_objects(objects, namespace=opts.namespace)
            return Rendered(text=postrender.as_template(objects), resources=tuple(parsed.resources))
        parsed = parse_documents(files, namespace=opts.namespace)
    except postrender.PostRenderError as err:
        return Rendered(error=str(err), failure=str(err))
    except InputError as err:
        text = failure = str(err)
        for path, label, token in (
            (values, values_label, "<values>"),
            (chart, chart_label, "<chart>"),
        ):
            if path is not None:
                text = text.replace(str(path), label or str(path))
                failure = failure.replace(str(path), token)
        return Rendered(error=text, failure=failure)
    return Rendered(
        text=render.format_like_helm_template(out.files), resources=tuple(parsed.resources)
    )


class EntryResult(Struct):
    """The comparison of one matrix entry."""

    entry: MatrixEntry
    status: Status
    expect_identical: bool
    objects: list[ObjectChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rehearsals: list[Rehearsal] = field(default_factory=list)

    def violates(self, semantic: bool) -> bool:
        """Whether this entry counts as "differs" for the exit code."""
        return self.status == "changed" or (self.status == "formatting" and not semantic)

    @property
    def upgrade_fails(self) -> bool:
        """The rehearsed upgrade from the ref fails under some profile (fails the diff too)."""
        return any(r.upgrade_fails for r in self.rehearsals)


def compare(
    entry: MatrixEntry, ref: Rendered, worktree: Rendered, *, expect_identical: bool
) -> EntryResult:
    """Byte-identical, formatting only, or the object changes from ``ref`` to ``worktree``."""
    result = EntryResult(entry, "identical", expect_identical)
    if ref.error or worktree.error:
        if ref.failure == worktree.failure:
            result.notes.append(f"both sides fail to render: {ref.error}")
            return result
        result.status = "changed"
        if ref.error:
            result.notes.append(f"ref render fails: {ref.error}")
        if worktree.error:
            result.notes.append(f"working-tree render fails: {worktree.error}")
        return result
    if ref.text == worktree.text:
        return result
    result.objects = diff_objects(ref.resources, worktree.resources)
    if result.objects:
        result.status = "changed"
        return result
    result.status = "formatting"
    result.notes.extend(_formatting_notes(ref.resources, worktree.resources))
    return result


def _formatting_notes(old: Sequence[Resource], new: Sequence[Resource]) -> list[str]:
    notes: list[str] = []
    before, after = _index(old), _index(new)
    moved = [
        f"{_label(r, k)} moved from {r.source.path} to {after[k].source.path}"
        for k, r in before.items()
        if k in after and after[k].source.path != r.source.path
    ]
    notes.extend(moved)
    if not moved and list(before) != list(after):
        notes.append("objects are rendered in another order")
    if not notes:
        notes.append(
            "same objects; only formatting differs (key order, quoting, comments, separators)"
        )
    return notes


# --- rehearsal ------------------------------------------------------------------------------


class ReleaseChange(Struct, frozen=True):
    """One HelmRelease's predicted outcome at the ref and in the working tree (fresh installs),
    and of the upgrade from the ref's release to the working tree's."""

    release: str
    ref: str
    worktree: str
    upgrade: str = ""
    """The upgrade's outcome (``""``: not rehearsed)."""
    upgrade_cause: str = ""
    """Why the upgrade does not get Ready: the rule that explains it (HS105 for an immutable
    field), else empty."""
    upgrade_fails: bool = False
    """The upgrade of a simulated release does not get Ready where a fresh install of the
    working tree ends otherwise (an immutable field, a hook that only runs on upgrade, …)."""

    @property
    def changed(self) -> bool:
        return self.ref != self.worktree or self.upgrade_fails


class Rehearsal(Struct, frozen=True):
    """Both renders of an entry simulated under one cluster profile, and the upgrade."""

    profile: str
    releases: tuple[ReleaseChange, ...]
    note: str = ""
    """Why the upgrade was not rehearsed (the ref's release does not install cleanly)."""

    @property
    def upgrade_fails(self) -> bool:
        return any(r.upgrade_fails for r in self.releases)

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.releases)


_WAIT_TIMEOUT = re.compile(re.escape(TIMEOUT) + r": \[(.*)\]")
_WAIT_OBJECT = re.compile(r"([A-Za-z0-9.]+/[^\s,\]]+) status:")


def outcome_summary(outcome: Any, limit: int = 240) -> str:
    """``Ready``, ``Stalled: times out on PersistentVolumeClaim/ns/x``, or outcome and message.

    The wait error names the objects still waited for (fluxcd/pkg ssa/manager_wait.go:
    "timeout waiting for: [Kind/ns/name status: 'InProgress']").
    """
    if outcome.outcome == "Ready":
        return "Ready" if outcome.simulated else "Ready (not simulated)"
    m = _WAIT_TIMEOUT.search(outcome.message)
    if m:
        objs = _WAIT_OBJECT.findall(m.group(1))
        if objs:
            return f"{outcome.outcome}: times out on {', '.join(objs)}"
    message = clip(outcome.message, limit)
    return f"{outcome.outcome}: {message}" if message else outcome.outcome


def rehearse(
    worktree_chart: Path,
    ref_chart: Path,
    entry: MatrixEntry,
    *,
    profiles: Sequence[str],
    helmrelease: Sequence[str],
    release_name: str | None,
    namespace: str,
) -> list[Rehearsal]:
    """Simulate both renders of ``entry`` under each profile as fresh installs, and the upgrade
    a rollout performs: the ref's release installed, then upgraded to the working tree's
    (``--upgrade-from``), with the rules of ``helmsim check`` naming why an upgrade fails (an
    immutable field: HS105). Nominal latencies, seed 0."""
    from helmsim.cluster.profile import load_profile
    from helmsim.diagnose.check import CheckOptions, first_clause, run_check
    from helmsim.release_inputs import build_inputs  # the CLI's HelmRelease/chart pairing
    from helmsim.simulate import simulate

    def inputs(chart: Path, values: Path | None, *, upgrade: bool = False) -> Any:
        previous = [str(entry.ref_values)] if upgrade and entry.ref_values else []
        return build_inputs(
            str(chart),
            values=[str(values)] if values else [],
            sets=[],
            helmrelease=list(helmrelease),
            charts=[],
            release_name=release_name,
            namespace=namespace,
            upgrade_from=str(ref_chart) if upgrade else None,
            upgrade_from_values=previous,
            upgrade_from_set=[],
        )

    def outcomes(chart: Path, values: Path | None, prof: Any) -> dict[str, str]:
        result = simulate(prof, inputs(chart, values))
        return {f"{o.namespace}/{o.name}": outcome_summary(o) for o in result.releases}

    def upgrade(prof: Any) -> tuple[dict[str, tuple[str, str, bool]], str]:
        try:
            releases = inputs(worktree_chart, entry.worktree_values, upgrade=True)
            report = run_check(releases, [prof], options=CheckOptions(verify_fixes=False, tight=False))
        except InputError as err:  # e.g. the ref's release does not install cleanly
            return {}, f"upgrade from the ref not rehearsed: {err}"
        out: dict[str, tuple[str, str, bool]] = {}
        for (ref, _), o in report.outcomes.items():
            cause = next(
                (f for f in report.findings if f.release == ref and f.rule not in ("HS100", "HS106")), None
            )
            why = f"{cause.rule} {cause.slug}: {first_clause(cause.message)}" if cause else ""
            out[ref] = (outcome_summary(o, 400), why, o.simulated and o.outcome != "Ready")
        return out, ""

    out: list[Rehearsal] = []
    for name in profiles:
        prof = load_profile(name)
        before = outcomes(ref_chart, entry.ref_values, prof)
        after = outcomes(worktree_chart, entry.worktree_values, prof)
        upgraded, note = upgrade(prof)
        names = [*before, *(n for n in after if n not in before)]
        changes = []
        for n in names:
            summary, why, fails = upgraded.get(n, ("", "", False))
            # an upgrade failure of its own: a fresh install of the working tree ends otherwise
            fails = fails and summary != after.get(n)
            changes.append(ReleaseChange(n, before.get(n, "absent"), after.get(n, "absent"), summary, why, fails))
        out.append(Rehearsal(profile=name, releases=tuple(changes), note=note))
    return out


# --- the chart at a ref ---------------------------------------------------------------------


class ChartAtRef(Struct, frozen=True):
    """A chart directory exported from a git ref into a scratch directory."""

    commit: gitref.Commit
    chart: Path
    prefix: str
    notes: tuple[str, ...] = ()


def export_chart_at(chart: str, against: str, scratch: Path) -> ChartAtRef:
    """Export chart directory ``chart`` as it was at git ref ``against`` under ``scratch``
    (``gitref.export_dir``: nothing written outside it); bad refs and paths are one-line
    errors."""
    chart_dir = Path(chart)
    if not chart_dir.is_dir():
        if chart_dir.exists():
            raise InputError(
                "a packaged chart has no git history: give the chart directory", file=chart
            )
        raise InputError("chart not found", file=chart)
    if not render.is_chart_dir(chart_dir):
        raise InputError("not a Helm chart (no Chart.yaml)", file=chart)
    repo, prefix = gitref.find_repo(chart_dir)
    commit = gitref.resolve(repo, against)
    ref_chart = scratch / "ref" / (chart_dir.resolve().name or "chart")
    if not gitref.list_tree(commit, prefix):
        raise InputError(
            f"chart directory {prefix or '.'!r} did not exist at {against} ({commit.short})",
            file=chart,
        )
    exported = gitref.export_dir(commit, prefix, ref_chart)
    notes = tuple(
        f"symlink {link} at {against} not recreated in its export" for link in exported.skipped_links
    )
    if not (ref_chart / "Chart.yaml").is_file():
        raise InputError(
            f"{prefix or '.'!r} was not a Helm chart at {against} (no Chart.yaml)", file=chart
        )
    return ChartAtRef(commit, ref_chart, prefix, notes)


def values_at(commit: gitref.Commit, files: Sequence[str], scratch: Path) -> list[str]:
    """Each values file as it was at ``commit`` (written under ``scratch``); a file outside the
    repository or not there at the ref is used as it is now."""
    out: list[str] = []
    for i, file in enumerate(files):
        rel = gitref.repo_relative(commit.repo, Path(file))
        entry = next((e for e in gitref.list_tree(commit, rel) if e.path == rel), None) if rel else None
        if entry is None or entry.mode == "120000":
            out.append(file)
        else:
            out.append(str(_write_ref(commit, entry, scratch, 1000 + i)))
    return out


# --- the whole command ----------------------------------------------------------------------


class DiffReport(Struct):
    """Everything `helmsim diff` reports, and its verdict."""

    chart: str
    against: str
    commit: str
    semantic: bool
    expect_identical: tuple[str, ...]
    entries: list[EntryResult]
    notes: tuple[str, ...] = ()
    """What the report could not compare as it is (e.g. symlinks of the ref not exported)."""

    @property
    def differing(self) -> list[EntryResult]:
        """Entries that must not differ and do: the expected-identical ones when globs were
        given, otherwise every entry."""
        gated = (
            [e for e in self.entries if e.expect_identical]
            if self.expect_identical
            else self.entries
        )
        return [e for e in gated if e.violates(self.semantic)]

    @property
    def failing(self) -> list[EntryResult]:
        """What fails the command: the differing entries and those whose rehearsed upgrade
        from the ref fails."""
        differ = {id(e) for e in self.differing}
        return [e for e in self.entries if id(e) in differ or e.upgrade_fails]


def diff_chart(
    chart: str,
    against: str,
    *,
    values: Sequence[str] = (),
    globs: Sequence[str] = (),
    expect_identical: Sequence[str] = (),
    semantic: bool = False,
    opts: render.RenderOptions | None = None,
    rehearse_profiles: Sequence[str] | None = None,
    helmrelease: Sequence[str] = (),
    release_name: str | None = None,
    scratch: Path,
) -> DiffReport:
    """Render ``chart`` in the working tree and at git ref ``against`` for every matrix entry.

    ``scratch`` is an empty directory the caller owns and removes (the chart at the ref and
    the ref's values files are written there). ``rehearse_profiles`` (when not None) simulates
    both renders of every changed entry under each profile.
    """
    chart_dir = Path(chart)
    at_ref = export_chart_at(chart, against, scratch)
    commit, ref_chart, prefix = at_ref.commit, at_ref.chart, at_ref.prefix
    notes = list(at_ref.notes)
    entries = build_matrix(chart_dir, commit, scratch, values=values, globs=globs)
    for pattern in expect_identical:
        if not any(e.matches(pattern) for e in entries):
            names = ", ".join(e.name for e in entries)
            raise InputError(
                f"--expect-identical {pattern!r} matches no matrix entry (entries: {names})"
            )
    opts = opts or render.RenderOptions()
    hr = postrender.helmrelease_for_chart(helmrelease, chart)
    label = f"{against}:{prefix}" if prefix else f"{against}:."
    results: list[EntryResult] = []
    for entry in entries:
        gated = any(entry.matches(p) for p in expect_identical)
        ref_label = f"{against}:{entry.ref_name or entry.name}"
        in_scratch = entry.origin == "removed"  # the ref's copy on both sides
        before = render_side(
            ref_chart,
            entry.ref_values,
            opts,
            chart_label=label,
            values_label=ref_label
            if entry.ref_values != entry.worktree_values or in_scratch
            else None,
            hr=hr,
        )
        after = render_side(
            chart_dir.resolve(),
            entry.worktree_values,
            opts,
            chart_label=chart,
            values_label=ref_label if in_scratch else None,
            strict_values=not in_scratch,
            hr=hr,
        )
        result = compare(entry, before, after, expect_identical=gated)
        if (
            rehearse_profiles is not None
            and result.status == "changed"
            and not (before.error or after.error)
        ):
            result.rehearsals = rehearse(
                chart_dir,
                ref_chart,
                entry,
                profiles=rehearse_profiles,
                helmrelease=helmrelease,
                release_name=release_name,
                namespace=opts.namespace,
            )
        results.append(result)
    return DiffReport(
        chart, against, commit.sha, semantic, tuple(expect_identical), results, tuple(notes)
    )
