"""Where a chart calls Helm's ``lookup``, which helmsim's render answers with an empty result.

helmsim renders as ``helm template`` does: Helm's engine without a cluster client, so ``lookup``
returns an empty map (helm/helm pkg/action/action.go renderResources: only with
``interactWithRemote`` is the engine built with ``engine.New(restConfig)``; pkg/engine/engine.go
initFunMap: without a client ``lookup`` answers an empty map). helm-controller's install and
upgrade do read the cluster there. This module finds the calls, with their file and line, so a
simulation can say once that what those templates render may differ.

It does not evaluate templates. It reads the template sources (a chart directory or ``.tgz``
and its subcharts in ``charts/``), drops comments and string literals as Go's text/template lexer
does, and follows ``include``/``template`` by name from the templates Helm executes (the
non-partial files of the charts that rendered) to the ``define`` blocks they reach. ``tpl``
evaluates a string as a template: the strings it can be given (those of the values — the
charts' ``values.yaml`` and the release's own —, the charts' other files, which ``.Files.Get``
reads, and string literals in the templates) that hold ``{{`` are read as templates too, so
bitnami/common's ``common.tplvalues.render`` over values without ``{{`` adds nothing. A name it
cannot follow (``include`` of a computed name) makes every ``define`` count, so a call is never
left out; a call inside an ``if`` that was false still counts.
"""

from __future__ import annotations

import bisect
import io
import os
import re
import tarfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import yaml
from msgspec import Struct, field

SHOWN = 6
"""At most this many call sites are named in the note; the rest are counted."""
FILE_BYTES = 1 << 20
"""A chart file larger than this is not read as text ``tpl`` may evaluate (a binary or data file)."""
TEMPLATE = "{{"
"""What a string must hold for ``tpl`` to find an action in it (text/template's default delimiter)."""


class Call(Struct, frozen=True):
    """One ``lookup`` call: the template's path (from the chart's root) and its line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


TAIL = (
    "helmsim renders it as helm template does (an empty result); helm-controller's install and "
    "upgrade read the cluster there, so what those templates render may differ"
)


UPGRADE_TAIL = (
    "on the upgrade helmsim answers it, as helm-controller's client would, with the objects the "
    "previous revision left (its crds/, manifest and kept install hooks); objects that controllers, "
    "other releases or people made are not seen"
)


def note(
    chart_path: str | os.PathLike[str],
    chart: str,
    rendered: Iterable[str] | None = None,
    *,
    tail: str = TAIL,
    values: Mapping[str, object] | None = None,
) -> str | None:
    """The report's sentence for ``chart`` (``name@version``) at ``chart_path``, or None when it
    calls no ``lookup`` (see :func:`calls`); ``tail`` says how helmsim answered it."""
    try:
        found = calls(chart_path, rendered, values)
    except (OSError, tarfile.TarError, yaml.YAMLError, UnicodeDecodeError, ValueError) as err:
        # Helm loaded the chart, but it cannot be read again here: say so rather than nothing
        return f"chart {chart}: its templates cannot be read to find lookup calls ({err}); if it calls lookup, {tail}"
    if not found:
        return None
    shown = ", ".join(str(c) for c in found[:SHOWN])
    if len(found) > SHOWN:
        shown += f" and {len(found) - SHOWN} more"
    return f"chart {chart} may call lookup ({shown}): {tail}"  # a call under an if that was false counts


def calls(
    chart_path: str | os.PathLike[str], rendered: Iterable[str] | None = None, values: Mapping[str, object] | None = None
) -> tuple[Call, ...]:
    """The ``lookup`` calls of the chart at ``chart_path`` that this render may have evaluated;
    ``values``: the release's own values (the charts' defaults are read with the chart).

    ``rendered`` are the names of the templates Helm's engine returned (``<chart>/templates/…``,
    partials and ``NOTES.txt`` left out): a subchart none of whose templates is among them was
    disabled (helm/helm pkg/chart/v2/util/dependencies.go ProcessDependencies removes it before
    rendering). ``None``: every subchart counts. Raises ``OSError`` (and the archive's or
    Chart.yaml's parse errors) when the chart cannot be read.
    """
    sources = list(_sources(Path(chart_path)))
    given = [("values", text, 0) for text in template_strings(values or {})]
    return _reachable_calls(sources, None if rendered is None else set(rendered), given)


def template_strings(value: object) -> list[str]:
    """The strings (keys included) in ``value`` that hold ``{{``, in document order."""
    out: list[str] = []
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            if TEMPLATE in item:
                out.append(item)
        elif isinstance(item, Mapping):
            todo.extend(reversed([x for kv in item.items() for x in kv]))
        elif isinstance(item, list | tuple):
            todo.extend(reversed(item))
    return out


# --- reading the chart ---------------------------------------------------------------------------


class _Source(Struct):
    """One chart as stored: its metadata, its templates and its vendored subcharts."""

    name: str
    library: bool
    dependencies: list[tuple[str, str]]
    """(name, alias or name) of each entry of ``dependencies`` in its Chart.yaml."""
    templates: list[tuple[str, str, str]] = field(default_factory=list)
    """(path under the chart, e.g. ``templates/x.yaml``; the path shown; source text)."""
    texts: list[tuple[str, str, int]] = field(default_factory=list)
    """What ``tpl`` may evaluate: (path shown, text holding ``{{``, its first line)."""
    subcharts: list[_Source] = field(default_factory=list)


class _Chart(Struct):
    """One chart as Helm renders it (a subchart vendored once may render under several aliases)."""

    helm_id: str
    """The chart's path as Helm names its templates: ``root`` or ``root/charts/sub``."""
    library: bool
    parent: _Chart | None
    templates: list[tuple[str, str, str]]
    """(Helm's template name, the path shown, source text)."""
    texts: list[tuple[str, str, int]] = field(default_factory=list)


def _sources(path: Path) -> Iterator[_Chart]:
    if path.is_dir():
        root = _dir_source(path, "", set())
    else:
        with tarfile.open(path, "r:*") as tar:
            root = _tar_source(tar, "", top_shown=False)
    if root is not None:
        yield from _instances(root, None)


def _instances(source: _Source, parent: _Chart | None, names: Sequence[str] = ()) -> Iterator[_Chart]:
    # helm/helm pkg/chart/v2/chart.go ChartFullPath: "<parent>/charts/<name>", the name being the
    # alias once pkg/chart/v2/util/dependencies.go processDependencyEnabled has applied it
    for name in names or (source.name,):
        helm_id = name if parent is None else f"{parent.helm_id}/charts/{name}"
        chart = _Chart(
            helm_id,
            source.library,
            parent,
            [(f"{helm_id}/{rel}", shown, text) for rel, shown, text in source.templates],
            source.texts,
        )
        yield chart
        for sub in source.subcharts:
            # processDependencyEnabled: a subchart Chart.yaml lists renders under each alias (or its
            # name); one it does not list keeps its own name
            aliases = [alias for dep, alias in source.dependencies if dep == sub.name]
            yield from _instances(sub, chart, aliases)


def _source(chart_yaml: str) -> _Source:
    meta = yaml.safe_load(chart_yaml) or {}
    if not isinstance(meta, dict):
        meta = {}
    deps = [
        (str(d.get("name") or ""), str(d.get("alias") or d.get("name") or ""))
        for d in meta.get("dependencies") or ()
        if isinstance(d, dict)
    ]
    return _Source(str(meta.get("name") or ""), str(meta.get("type") or "") == "library", deps)


def _dir_source(root: Path, shown: str, seen: set[str]) -> _Source | None:
    real = os.path.realpath(root)
    if real in seen:
        return None
    seen.add(real)
    source = _source((root / "Chart.yaml").read_text(encoding="utf-8"))
    templates = root / "templates"
    for dirpath, dirnames, filenames in os.walk(templates, followlinks=True):
        dirnames.sort()
        for fname in sorted(filenames):
            file = Path(dirpath) / fname
            rel = file.relative_to(templates).as_posix()
            text = file.read_bytes().decode("utf-8", "replace")
            source.templates.append((f"templates/{rel}", f"{shown}templates/{rel}", text))
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        if Path(dirpath) == root:
            dirnames[:] = [d for d in dirnames if d not in ("templates", "charts")]
        dirnames.sort()
        for fname in sorted(filenames):
            file = Path(dirpath) / fname
            if file.stat().st_size <= FILE_BYTES:
                rel = file.relative_to(root).as_posix()
                _add_text(source, rel, f"{shown}{rel}", file.read_bytes())
    subcharts = root / "charts"
    if not subcharts.is_dir():
        return source
    # helm/helm pkg/chart/v2/loader/load.go LoadFiles: charts/ holds chart directories and archives
    for entry in sorted(subcharts.iterdir()):
        where = f"{shown}charts/{entry.name}"
        sub: _Source | None = None
        if entry.is_dir() and (entry / "Chart.yaml").is_file():
            sub = _dir_source(entry, where + "/", seen)
        elif entry.is_file() and entry.name.endswith((".tgz", ".tar.gz")):
            with tarfile.open(entry, "r:*") as tar:
                sub = _tar_source(tar, where + ":")
        if sub is not None:
            source.subcharts.append(sub)
    return source


def _tar_source(tar: tarfile.TarFile, shown: str, *, top_shown: bool = True) -> _Source | None:
    files: dict[str, bytes] = {}
    top = ""
    for member in tar.getmembers():
        if not member.isfile():
            continue
        name = member.name.removeprefix("./")
        # the archive's files are under one top directory, the chart's (pkg/chart/v2/loader/archive.go)
        top, _, inner = name.partition("/") if "/" in name else ("", "", name)
        f = tar.extractfile(member)
        if f is not None and member.size <= FILE_BYTES:
            files[inner] = f.read()
    return _files_source(files, f"{shown}{top}/" if top and top_shown else shown)


def _files_source(files: dict[str, bytes], shown: str) -> _Source | None:
    if "Chart.yaml" not in files:
        return None
    source = _source(files["Chart.yaml"].decode("utf-8"))
    for inner in sorted(files):
        if inner.startswith("templates/"):
            source.templates.append((inner, f"{shown}{inner}", files[inner].decode("utf-8", "replace")))
        elif not inner.startswith("charts/"):
            _add_text(source, inner, f"{shown}{inner}", files[inner])
    subdirs: dict[str, dict[str, bytes]] = {}
    for inner in sorted(files):
        if not inner.startswith("charts/"):
            continue
        rest = inner[len("charts/") :]
        sub: _Source | None = None
        if "/" in rest:
            name, _, tail = rest.partition("/")
            subdirs.setdefault(name, {})[tail] = files[inner]
        elif rest.endswith((".tgz", ".tar.gz")):
            with tarfile.open(fileobj=io.BytesIO(files[inner]), mode="r:*") as tar:
                sub = _tar_source(tar, f"{shown}charts/{rest}:")
        if sub is not None:
            source.subcharts.append(sub)
    for name, sub_files in sorted(subdirs.items()):
        sub = _files_source(sub_files, f"{shown}charts/{name}/")
        if sub is not None:
            source.subcharts.append(sub)
    return source


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's composer when PyYAML has it (values.yaml of a large chart: ~10× faster), else PyYAML's."""


def _add_text(source: _Source, rel: str, shown: str, data: bytes) -> None:
    """Record what of the chart file ``rel`` ``tpl`` may evaluate: each string of values.yaml
    holding ``{{`` (with its line), any other file holding ``{{`` whole (``.Files.Get``)."""
    if TEMPLATE.encode() not in data or rel in ("Chart.yaml", "Chart.lock"):
        return
    text = data.decode("utf-8", "replace")
    if rel != "values.yaml":
        source.texts.append((shown, text, 1))
        return
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError:
        source.texts.append((shown, text, 1))  # Helm read it; count what it holds, unparsed
        return
    todo = [root] if root is not None else []
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.ScalarNode):
            if TEMPLATE in str(node.value):
                # a block scalar (| or >) starts on the line after its indicator
                first = node.start_mark.line + (2 if node.style in ("|", ">") else 1)
                source.texts.append((shown, str(node.value), first))
        elif isinstance(node, yaml.MappingNode):
            todo.extend(reversed([n for kv in node.value for n in kv]))
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(reversed(node.value))


# --- reading the templates -----------------------------------------------------------------------

# Go text/template lexer (text/template/parse/lex.go): an action is "{{" [ "- " ] … [ " -" ] "}}";
# a comment is "{{/*" … "*/}}" (with the same trim markers), never a call.
_OPEN = re.compile(r"\{\{(- )?")
_COMMENT_END = re.compile(r"\*/(?: -)?\}\}")
_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"'  # interpreted string
    r"|`[^`]*`"  # raw string
    r"|'(?:[^'\\\n]|\\.)*'"  # character constant
    r"|[$.]?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"  # identifier, field, variable
    r"|-?\}\}"  # end of the action (" -}}" trims)
    r"|\S",
    re.S,
)


class _Segment(Struct):
    """What one template body does: its lookup calls, the names it includes, and whether it
    includes a name only known at render time."""

    calls: list[Call] = field(default_factory=list)
    refs: set[str] = field(default_factory=set)
    dynamic: bool = False
    tpl: bool = False
    """It calls ``tpl``: the strings ``tpl`` may be given are templates it reaches."""
    files: bool = False
    """It includes a template file by a computed path (``include (print $.Template.BasePath
    "/secret.yaml") .``, bitnami/common's ``common.utils.checksumTemplate``), not a define."""
    literals: list[tuple[str, str, int]] = field(default_factory=list)
    """Its string literals holding ``{{`` (``tpl "{{ include \"x\" . }}" .``), with their lines."""


class _Parsed(Struct):
    top: _Segment
    defines: list[tuple[str, _Segment]]
    broken: bool = False


def _actions(text: str) -> Iterator[tuple[int, list[tuple[str, int]]]]:
    """Each action's tokens with their offsets (comments and text left out)."""
    pos = 0
    while True:
        m = _OPEN.search(text, pos)
        if m is None:
            return
        start = m.end()
        rest = text[start:].lstrip(" \t\r\n") if m.group(1) else text[start:]
        if rest.startswith("/*"):
            end = _COMMENT_END.search(text, start)
            if end is None:
                raise ValueError("unclosed comment")
            pos = end.end()
            continue
        tokens: list[tuple[str, int]] = []
        for t in _TOKEN.finditer(text, start):
            if t.group() in ("}}", "-}}"):
                pos = t.end()
                break
            tokens.append((t.group(), t.start()))
        else:
            raise ValueError("unclosed action")
        yield m.start(), tokens


def _parse(text: str, shown: str, first_line: int = 1) -> _Parsed:
    lines = [0, *(m.end() for m in re.finditer("\n", text))]

    def line_of(offset: int) -> int:
        return bisect.bisect_right(lines, offset) + first_line - 1

    top = _Segment()
    parsed = _Parsed(top, [])
    stack: list[_Segment | None] = []  # a define's segment, or None for if/range/with
    current = top
    try:
        for _, tokens in _actions(text):
            if not tokens:
                continue
            first = tokens[0][0]
            if first in ("define", "block"):
                name = tokens[1][0] if len(tokens) > 1 else ""
                segment = _Segment()
                if name[:1] in ('"', "`"):
                    parsed.defines.append((name[1:-1], segment))
                    if first == "block":  # a block is a define executed where it stands
                        current.refs.add(name[1:-1])
                stack.append(segment)
                current = segment
                tokens = tokens[2:]
            elif first in ("if", "range", "with"):
                stack.append(None)
            elif first == "end":
                if not stack:
                    raise ValueError("unbalanced end")
                if stack.pop() is not None:
                    current = next((s for s in reversed(stack) if s is not None), top)
                continue
            for i, (tok, offset) in enumerate(tokens):
                nxt = tokens[i + 1][0] if i + 1 < len(tokens) else ""
                if tok == "lookup":
                    current.calls.append(Call(shown, line_of(offset)))
                elif tok in ("include", "template"):
                    if nxt[:1] in ('"', "`") and "%" not in nxt:
                        current.refs.add(nxt[1:-1])
                    elif nxt == "(" and _names_a_file(tokens[i + 2 :]):
                        current.files = True
                    else:
                        current.dynamic = True  # a computed name (printf "x.%s") may be any define
                elif tok == "tpl":
                    current.tpl = True  # a string evaluated as a template: see _reachable_calls
                elif tok[:1] in ('"', "`") and TEMPLATE in tok:
                    current.literals.append((shown, _unquote(tok), line_of(offset)))
    except (ValueError, IndexError):
        # Helm parsed this file, so the fault is this reader's: every word "lookup" counts
        calls = [Call(shown, line_of(m.start())) for m in _WORD.finditer(text)]
        return _Parsed(_Segment(calls=calls), [], broken=True)
    return parsed


_WORD = re.compile(r"(?<![\w.$])lookup\b")


def _names_a_file(tokens: Sequence[tuple[str, int]]) -> bool:
    """Whether the parenthesised name after ``include`` is built from ``.Template.BasePath``
    (pkg/engine/engine.go: a template file is a template named by its path)."""
    depth = 1
    for tok, _ in tokens:
        depth += (tok == "(") - (tok == ")")
        if depth == 0:
            return False
        if tok.endswith("Template.BasePath"):
            return True
    return False
_ESCAPE = re.compile(r"\\(.)")


def _unquote(token: str) -> str:
    """A Go string literal's text (an interpreted string's backslash escapes undone)."""
    inner = token[1:-1]
    return inner if token[0] == "`" else _ESCAPE.sub(lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), inner)


def _is_executed(name: str) -> bool:
    # helm/helm pkg/engine/engine.go render: partials ("_*") are not executed, only included;
    # pkg/action/action.go renderResources: NOTES.txt is no manifest
    base = name.rsplit("/", 1)[-1]
    return not base.startswith("_") and not name.endswith("NOTES.txt")


def _enabled(charts: Sequence[_Chart], rendered: set[str] | None) -> list[_Chart]:
    out: list[_Chart] = []
    kept: set[int] = set()
    for chart in charts:  # parents come before their subcharts
        if chart.parent is not None and id(chart.parent) not in kept:
            continue
        executed = [t for t in chart.templates if _is_executed(t[0])]
        if (
            rendered is None
            or chart.parent is None
            or chart.library
            or not executed
            or any(t[0] in rendered for t in executed)
        ):
            out.append(chart)
            kept.add(id(chart))
    return out


def _reachable_calls(
    charts: Sequence[_Chart], rendered: set[str] | None, given: Sequence[tuple[str, str, int]] = ()
) -> tuple[Call, ...]:
    defines: dict[str, list[_Segment]] = {}
    roots: list[_Segment] = []
    every: list[_Segment] = []
    broken = False
    order: dict[str, int] = {}
    texts = list(given)
    tops: list[_Segment] = []
    enabled = _enabled(charts, rendered)
    for chart in enabled:
        texts.extend(chart.texts)
    for chart in enabled:
        for name, shown, text in chart.templates:
            executed = _is_executed(name)
            if executed and rendered is not None and name not in rendered:
                continue  # not loaded by Helm (.helmignore) or not a template it rendered
            order.setdefault(shown, len(order))
            parsed = _parse(text, shown)
            broken = broken or parsed.broken
            if executed or parsed.broken:
                roots.append(parsed.top)
            if not name.rsplit("/", 1)[-1].startswith("_"):
                tops.append(parsed.top)
            for define, segment in parsed.defines:
                # a name defined twice: Helm keeps one (pkg/engine/engine.go sortTemplates decides
                # the parse order); both are followed here
                defines.setdefault(define, []).append(segment)
                every.append(segment)
    reached: list[_Segment] = []
    seen: set[int] = set()
    todo = list(roots)
    files_added = False
    evaluated = False  # the strings tpl may be given, read as templates once tpl is reached
    literals = 0  # the literals of reached segments read so far
    while todo:
        while todo:
            segment = todo.pop()
            if id(segment) in seen:
                continue
            seen.add(id(segment))
            reached.append(segment)
            for ref in segment.refs:
                todo.extend(defines.get(ref, ()))
        if not files_added and any(s.files for s in reached):
            files_added = True
            todo.extend(tops)  # every template file a computed path may name, rendered or not
            continue
        if not any(s.tpl for s in reached):
            break
        pending = [] if evaluated else texts
        evaluated = True
        lits = [lit for s in reached for lit in s.literals]
        pending = [*pending, *lits[literals:]]
        literals = len(lits)
        for where, text, line in pending:
            order.setdefault(where, len(order))
            # a value given on the command line: line 1. A text that does not parse is no template
            # tpl evaluated (Helm's render would have failed); its lookup words still count.
            parsed = _parse(text, where, max(line, 1))
            todo.append(parsed.top)
            for define, segment in parsed.defines:
                defines.setdefault(define, []).append(segment)
                every.append(segment)
            for define, _ in parsed.defines:
                if any(define in s.refs for s in reached):
                    todo.extend(defines[define])
    if broken or any(s.dynamic for s in reached):
        reached.extend(s for s in every if id(s) not in seen)
    found = {c for s in reached for c in s.calls}
    return tuple(sorted(found, key=lambda c: (order.get(c.path, 0), c.line)))
