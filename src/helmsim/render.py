"""The one adapter over helm-python-sdk: Helm v4's own template engine.

``Chart.render()`` of helm-python-sdk always renders with Helm's default capabilities. The native
``helm_render`` call accepts ``kube_version`` and ``api_versions`` in its options, so this module
calls it directly: a chart that emits a CiliumNetworkPolicy only when ``cilium.io/v2`` is served
renders it when the cluster profile says so. The SDK runs in a worker process
(:mod:`helmsim.engine_worker`): a template that recurses or allocates without end hits
``--max-render-memory`` or ``--render-timeout`` instead of aborting helmsim, and Helm's log lines
stay off stderr unless ``--debug``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from msgspec import Struct, field

from helmsim import engine_worker, limits, values_schema, yamlio
from helmsim.errors import InputError

if TYPE_CHECKING:
    from helmsim.helm.record import ChartRecord

DEFAULT_RELEASE_NAME = "release-name"  # helm/helm pkg/cmd/template.go: the name `helm template` uses
DEFAULT_NAMESPACE = "default"


class RenderOptions(Struct, frozen=True):
    """What `helm template` is told: release identity, values and the cluster's capabilities."""

    release_name: str = DEFAULT_RELEASE_NAME
    namespace: str = DEFAULT_NAMESPACE
    values: Mapping[str, Any] = field(default_factory=dict)
    kube_version: str | None = None
    api_versions: Sequence[str] = ()
    is_upgrade: bool = False
    revision: int = 1
    values_files: tuple[str, ...] = ()
    """The files ``values`` came from, in merge order (to name the one a schema error is about)."""
    cluster: tuple[Mapping[str, Any], ...] | None = None
    """The objects ``lookup`` finds, as helm-controller's client would (None: none are asked,
    as in ``helm template``, where ``lookup`` answers an empty map)."""


class RenderedFile(Struct, frozen=True):
    """One rendered template (or ``crds/`` file) as Helm names it: ``<chart>/templates/x.yaml``."""

    path: str
    content: str
    is_crd_file: bool = False


class RenderedChart(Struct, frozen=True):
    """Output of a render: chart identity and files in Helm's path order."""

    chart_name: str
    chart_version: str
    files: tuple[RenderedFile, ...]
    notes: tuple[str, ...] = ()
    """What Helm accepts but a user should know (e.g. a vendored subchart outside its range)."""
    record: ChartRecord | None = None
    """The chart's part of Helm's release record (asked for with ``record=True``)."""
    release_notes: str = ""
    """The top-level chart's rendered ``NOTES.txt`` (Helm stores it in the release's info)."""


class RenderError(InputError):
    """Helm's engine refused the chart (template error, ``fail``, ``required``, values schema).

    ``helm_message`` is Helm's own error text, as helm-controller prints it in the HelmRelease's
    condition; the ``InputError`` text is the one-line form naming the file and line.
    """

    def __init__(self, message: str, *, helm_message: str, file: str | None = None, line: int | None = None) -> None:
        super().__init__(message, file=file, line=line)
        self.helm_message = helm_message
        self.chart_name = ""
        self.chart_version = ""
        self.crd_files: tuple[RenderedFile, ...] = ()


engine_debug = engine_worker.debug
"""``with engine_debug(True):`` copies what Helm's engine logs to stderr (``--debug``)."""


def is_chart_dir(path: Path) -> bool:
    """True when ``path`` is a chart directory or a packaged ``.tgz`` chart."""
    if path.is_dir():
        return (path / "Chart.yaml").is_file()
    return path.is_file() and path.name.endswith((".tgz", ".tar.gz"))


def merge_values(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``override`` into ``base`` as Helm merges values files: maps recursively, else replace.

    helm/helm pkg/cli/values/options.go: mergeMaps.
    """
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_values(dict(out[key]), value)
        else:
            out[key] = value
    return out


SetFlag = Literal["--set", "--set-string", "--set-file", "--set-json", "--set-literal"]
# helm/helm pkg/cli/values/options.go MergeValues: values files in order, then every --set-json,
# every --set, every --set-string, every --set-file, every --set-literal (each flag in its order).
SET_ORDER: tuple[SetFlag, ...] = ("--set-json", "--set", "--set-string", "--set-file", "--set-literal")


class SetValue(Struct, frozen=True):
    """One ``--set``-like expression and the flag it came from (a bare ``str`` is ``--set``)."""

    flag: SetFlag
    expression: str


def set_values(**by_flag: Iterable[str] | None) -> list[SetValue]:
    """``set_values(set=[…], set_string=[…], set_file=[…], set_json=[…], set_literal=[…])``:
    the expressions of each flag, in the order Helm applies them."""
    out = [
        SetValue(flag, expr)
        for flag in SET_ORDER
        for expr in by_flag.get(flag[2:].replace("-", "_")) or ()
    ]
    unknown = set(by_flag) - {f[2:].replace("-", "_") for f in SET_ORDER}
    if unknown:
        raise TypeError(f"unknown set flags: {sorted(unknown)}")
    return out


def load_values(
    files: Iterable[str | os.PathLike[str]], sets: Iterable[str | SetValue] = ()
) -> dict[str, Any]:
    """Values from ``-f`` files merged in order, then the ``--set`` flags in Helm's order
    (:data:`SET_ORDER`), each parsed by Helm's strvals (``helm_strvals_parse*``)."""
    values: dict[str, Any] = {}
    for file in files:
        if str(file) == "-":
            raise InputError("values from stdin are not supported; pass a file", file="-")
        source = str(file)
        text = yamlio.read_text(source, "values file")
        # helm/helm pkg/chart/v2/loader/load.go LoadValues: every document of the file, merged
        for doc in yamlio.load_documents(text, source):
            if doc.value is None:
                continue
            if not isinstance(doc.value, dict):
                kind = "list" if isinstance(doc.value, list) else "scalar"
                raise InputError(
                    f"values must be a YAML mapping, not a {kind} (Helm: cannot unmarshal "
                    "into map[string]interface {})",
                    file=source,
                    line=doc.line,
                )
            yamlio.check_json_numbers(doc.value, text, doc, source, "value")
            values = merge_values(values, doc.value)
    typed = [s if isinstance(s, SetValue) else SetValue("--set", s) for s in sets]
    for item in sorted(typed, key=lambda s: SET_ORDER.index(s.flag)):  # stable: each flag in order
        values = merge_values(values, parse_set(item))
    return values


def parse_set(item: SetValue) -> dict[str, Any]:
    """One expression parsed by Helm's strvals; ``--set-file`` reads each file (bounded)."""
    from helmsim.redaction import scrub

    # helm/helm pkg/strvals/parser.go ParseFile: the --set-string grammar, each value a path
    # whose content (pkg/cli/values/options.go readFile) becomes the string value.
    flag = "--set-string" if item.flag == "--set-file" else item.flag
    try:
        parsed: dict[str, Any] = engine_worker.call("set", subject=item.flag, expression=item.expression, flag=flag)["value"]
    except engine_worker.EngineError as err:
        raise InputError(scrub(f"bad {item.flag} {item.expression!r}: {_sdk_message(err)}")) from None
    if item.flag == "--set-file":
        parsed = _read_set_files(parsed)
    return parsed


def _read_set_files(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _read_set_files(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_read_set_files(v) for v in tree]
    if not isinstance(tree, str):
        return tree
    if tree == "-":
        raise InputError("--set-file from stdin is not supported; pass a file", file="-")
    path = Path(tree)
    try:
        limits.check("max_file_size", path.stat().st_size, "--set-file file", file=tree)
        with path.open("rb") as f:
            limit = limits.current().max_file_size
            data = f.read(limit + 1) if limit else f.read()
        limits.check("max_file_size", len(data), "--set-file file", file=tree)
        return data.decode("utf-8")
    except FileNotFoundError:
        raise InputError("--set-file: file not found", file=tree) from None
    except IsADirectoryError:
        raise InputError("--set-file: is a directory", file=tree) from None
    except UnicodeDecodeError as err:
        raise InputError(f"--set-file: not UTF-8 text (byte {err.start})", file=tree) from None
    except OSError as err:
        raise InputError(f"--set-file: cannot read: {err.strerror or err}", file=tree) from None


def _sdk_message(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def render_chart(
    chart_path: str | os.PathLike[str], opts: RenderOptions, *, include_crds: bool = False, record: bool = False
) -> RenderedChart:
    """Render a chart directory or ``.tgz`` with Helm's engine and the given capabilities;
    ``record``: also build the chart's part of the release record Helm would store."""
    path = Path(chart_path)
    if not path.exists():
        raise InputError("chart not found", file=str(chart_path))
    if not is_chart_dir(path):
        raise InputError("not a Helm chart (no Chart.yaml)", file=str(chart_path))
    subject = str(chart_path)
    try:
        chart = engine_worker.call("load", subject=subject, path=str(path), crds=include_crds)
    except engine_worker.EngineError as err:
        raise InputError(f"cannot load chart: {_sdk_message(err)}", file=subject) from None
    meta = chart["metadata"]
    _check_chart(path, meta, chart["dependencies"])  # the chart stays loaded for the render
    stored: ChartRecord | None = None
    if record:
        from helmsim.helm.record import ChartRecord

        part = engine_worker.call("record", subject=subject)
        stored = ChartRecord(part["json"], tuple((str(n), int(b)) for n, b in part["largest"]))
    native_opts: dict[str, Any] = {
        "name": opts.release_name,
        "namespace": opts.namespace,
        "revision": opts.revision,
        "is_install": not opts.is_upgrade,
        "is_upgrade": opts.is_upgrade,
    }
    if opts.kube_version:
        native_opts["kube_version"] = opts.kube_version
    if opts.api_versions:
        native_opts["api_versions"] = list(opts.api_versions)
    crd_files: list[RenderedFile] = []
    if include_crds:
        # helm/helm pkg/chart/v2/chart.go CRDObjects: crds/ of the chart, then its subcharts
        for crd in chart["crds"]:
            crd_files.append(
                RenderedFile(path=crd.get("filename") or crd["name"], content=crd["data"], is_crd_file=True)
            )
    try:
        values = json.dumps(dict(opts.values), allow_nan=False)
    except ValueError:
        raise InputError(
            "values hold NaN or an infinite number, which Helm cannot convert to JSON "
            "(json: unsupported value)",
            file=subject,
        ) from None
    if crd_files and chart["dependencies"]:
        # helm/helm pkg/action/install.go RunWithContext: ProcessDependencies drops disabled
        # subcharts before CRDObjects (helmsim.helm.subcharts)
        from helmsim.helm import subcharts

        merged = engine_worker.call("merge", subject=subject, values=values)["values"]
        disabled = subcharts.disabled_subcharts(path, merged)
        crd_files = [f for f in crd_files if subcharts.crd_kept(f.path, disabled)]
    try:
        cluster = None if opts.cluster is None else list(opts.cluster)
        rendered: dict[str, str] = engine_worker.call(
            "render", subject=subject, values=values, options=json.dumps(native_opts), cluster=cluster
        )["rendered"]
    except engine_worker.EngineError as err:
        failure = _render_error(err, path, opts.values_files, str(meta.get("name", "")))
        failure.chart_name = str(meta.get("name", ""))
        failure.chart_version = str(meta.get("version", ""))
        failure.crd_files = tuple(crd_files)
        raise failure from None
    limits.check(
        "max_file_size", sum(len(c) for c in rendered.values()), "rendered manifest", file=subject
    )
    notes = _version_notes(path, meta, chart["dependencies"], rendered)
    files = [
        RenderedFile(path=name, content=content)
        for name, content in sorted(rendered.items())
        if _is_manifest_template(name)
    ]
    return RenderedChart(
        chart_name=str(meta.get("name", "")),
        chart_version=str(meta.get("version", "")),
        files=tuple(crd_files + files),
        notes=tuple(notes),
        record=stored,
        release_notes=rendered.get(f"{meta.get('name', '')}/templates/NOTES.txt", "") if record else "",
    )


def _check_chart(path: Path, meta: Mapping[str, Any], loaded: Sequence[Mapping[str, Any]]) -> None:
    """What ``helm install``/``template`` check before rendering."""
    from helmsim.helm import dependencies

    chart_type = str(meta.get("type") or "")
    if chart_type not in ("", "application"):
        # helm/helm pkg/cmd/install.go checkIfInstallable
        raise InputError(f"{chart_type} charts are not installable", file=str(path))
    absent = dependencies.missing(dependencies.declared(path, meta), loaded)
    if absent:
        raise dependencies.missing_error(path, absent)


def _version_notes(
    path: Path, meta: Mapping[str, Any], loaded: Sequence[Mapping[str, Any]], rendered: Mapping[str, str]
) -> list[str]:
    """The notes on vendored subcharts outside their declared range, knowing which subcharts
    the render kept (a disabled one is removed by name, its version aside)."""
    from helmsim.helm import dependencies

    name = str(meta.get("name", ""))
    kept = {key.split("/", 3)[2] for key in rendered if key.startswith(f"{name}/charts/") and key.count("/") >= 3}
    return dependencies.version_notes(
        dependencies.declared(path, meta), loaded, f"{name}@{meta.get('version', '')}", rendered_subcharts=kept
    )


_TEMPLATE_POS = re.compile(r"^(?:template: )?([^:\s]+):(\d+)(?::\d+)?:?\s*")
# helm/helm pkg/engine/engine.go reformatExecErrorMsg / cleanupParseError: "execution error at
# (chart/templates/x.yaml:3:4): msg", "parse error at (chart/templates/x.yaml:3): msg"
_EXEC_POS = re.compile(r"^(?:execution|parse) error at \(([^:\s]+):(\d+)(?::\d+)?\):?\s*")


def _one_line(lines: Sequence[str]) -> str:
    """A multi-line message on one line: after a line ending in punctuation a blank, else ``; `` — not
    ``: ``, which made ``auth.tls`` and the sentence after it read as a key and its value (and
    the sentence redacted) in bitnami's VALUES VALIDATION messages."""
    out = ""
    for line in lines:
        if out:
            out += " " if out.endswith((":", ".", ";", ",", "!", "?")) else "; "
        out += line
    return out


def _render_error(
    err: Exception, chart_path: Path, values_files: Sequence[str] = (), chart_name: str = ""
) -> RenderError:
    """One line naming the template file (on disk, when it is a directory chart) and line, or for
    a values schema violation the values file and line; the error keeps Helm's own text
    (``helm_message``) for helm-controller's condition."""
    helm_message = str(err).strip() or type(err).__name__
    if values_schema.is_schema_error(helm_message):
        where = values_schema.locate(
            helm_message, chart_name, values_files, str(chart_path) if chart_path.is_dir() else None
        )
        file, line = where if where is not None else (str(chart_path), None)
        return RenderError(values_schema.one_line(helm_message), helm_message=helm_message, file=file, line=line)
    lines = [part.strip() for part in helm_message.splitlines() if part.strip()]
    text = _one_line(lines)
    m = _TEMPLATE_POS.match(text) or _EXEC_POS.match(text)
    if m is None:
        return RenderError(f"render failed: {text}", helm_message=helm_message, file=str(chart_path))
    template, line = m.group(1), int(m.group(2))
    rest = text[m.end() :].lstrip(": ")
    file = str(chart_path / template.split("/", 1)[1]) if chart_path.is_dir() and "/" in template else template
    return RenderError(f"render failed: {rest}", helm_message=helm_message, file=file, line=line)


def _is_manifest_template(name: str) -> bool:
    # helm/helm pkg/action/action.go renderResources: NOTES.txt is not a manifest;
    # pkg/release/v1/util/manifest_sorter.go: partials (basename "_*") are skipped.
    base = name.rsplit("/", 1)[-1]
    return not base.startswith("_") and not name.endswith("NOTES.txt")


class TemplateDocument(Struct, frozen=True):
    """One document of ``helm template``'s output: the file it came from, its text and line."""

    path: str
    body: str
    line: int


def helm_template_order(files: Iterable[RenderedFile], *, from_chart: bool = True) -> list[TemplateDocument]:
    """Documents in the order ``helm template`` prints them.

    helm/helm pkg/action/action.go renderResources: the chart's CRDs first (with
    ``--include-crds``), then the manifest as ``releaseutil.SortManifests`` sorts it (template
    paths in ``sort.Strings`` order, documents in file order, then the stable kind sort of
    ``InstallOrder``), then (pkg/cmd/template.go) every hook, kind-sorted the same way. A
    document with an unknown hook event is dropped, as Helm drops it. Without a chart
    (already-rendered YAML) the documents keep their input order.
    """
    from helmsim.helm.order import sort_by_kind
    from helmsim.manifests import parse_hook

    listed = list(files)
    if not from_chart:
        return [TemplateDocument(f.path, body, line) for f in listed for body, line in yamlio.split_documents(f.content)]
    crds = [TemplateDocument(f.path, b, n) for f in listed if f.is_crd_file for b, n in yamlio.split_documents(f.content)]
    manifest: list[tuple[str, TemplateDocument]] = []
    hooks: list[tuple[str, TemplateDocument]] = []
    for f in sorted((f for f in listed if not f.is_crd_file and _is_manifest_template(f.path)), key=lambda f: f.path):
        for body, line in yamlio.split_documents(f.content):
            head = yamlio.load_one(body, f.path, line, last_key_wins=True)
            head = head if isinstance(head, dict) else {}
            meta = head.get("metadata")
            annotations = meta.get("annotations") if isinstance(meta, dict) else None
            hook = parse_hook({str(k): str(v) for k, v in annotations.items()} if isinstance(annotations, dict) else {})
            if hook is False:
                continue
            kind = head.get("kind")
            entry = (kind if isinstance(kind, str) else "", TemplateDocument(f.path, body, line))
            (manifest if hook is None else hooks).append(entry)
    ordered = sort_by_kind(manifest, lambda e: e[0]) + sort_by_kind(hooks, lambda e: e[0])
    return crds + [doc for _, doc in ordered]


def show_only(docs: Sequence[TemplateDocument], patterns: Sequence[str], chart_name: str) -> list[TemplateDocument]:
    """``helm template -s PATTERN …``: for each pattern in turn, the documents whose template
    path (without the chart's name) matches it, as Go's ``filepath.Match`` matches.

    helm/helm pkg/cmd/template.go: a pattern that matches nothing is the error "could not
    find template PATTERN in chart".
    """
    import fnmatch

    out: list[TemplateDocument] = []
    for pattern in patterns:
        # the regexp "# Source: [^/]+/(.+)": the path after its first component
        found = [d for d in docs if "/" in d.path and _go_match(pattern, d.path.split("/", 1)[1], fnmatch)]
        if not found:
            raise InputError(f"-s/--show-only {pattern}: could not find template {pattern} in chart {chart_name}")
        out.extend(found)
    return out


def _go_match(pattern: str, name: str, fnmatch: Any) -> bool:
    # Go's filepath.Match: `*` and `?` never cross a `/`; the whole name must match.
    if pattern.count("/") != name.count("/"):
        return False
    return all(fnmatch.fnmatchcase(n, p) for p, n in zip(pattern.split("/"), name.split("/"), strict=True))


def format_like_helm_template(
    files: Iterable[RenderedFile] | Sequence[TemplateDocument], *, redact_secrets: bool = False
) -> str:
    """Print documents as `helm template` does: ``---`` and a ``# Source:`` comment per doc
    (``RenderedFile``s are printed in their order, each split into its documents).

    With ``redact_secrets`` every secret (``helmsim.redaction``: Secret data, the last-applied
    annotation, secret-like keys and values, also inside a ``kind: List``) is replaced by
    ``<redacted:sha256:…>``; a document holding one is printed re-serialized (without its
    comments), every other document verbatim (with secret-like values in comments hashed).
    """
    docs = [
        d
        for item in files
        for d in (
            [item]
            if isinstance(item, TemplateDocument)
            else [TemplateDocument(item.path, b, n) for b, n in yamlio.split_documents(item.content)]
        )
    ]
    out: list[str] = []
    for d in docs:
        body = d.body.strip(chr(10))
        if redact_secrets:
            body = _redacted(body, d.path, d.line)
        out.append(f"---\n# Source: {d.path}\n{body}\n")
    return "".join(out)


def _redacted(body: str, path: str, line: int) -> str:
    import yaml

    from helmsim.redaction import redact_object, scrub

    doc = yamlio.load_one(body, path, line, last_key_wins=True) if body.strip() else None
    if isinstance(doc, (Mapping, list)):
        hidden = redact_object(doc)
        if hidden != doc:
            dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when installed
            text = yaml.dump(
                hidden, Dumper=dumper, sort_keys=False, default_flow_style=False,
                allow_unicode=True, width=2**31 - 1,
            )
            return str(text).rstrip("\n")
    return scrub(body)
