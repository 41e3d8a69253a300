"""Read a directory (or files) of ``kubectl get -o yaml|json`` dumps into located objects.

Accepted: single objects, multi-document YAML, ``kind: List`` (and ``*List``) with ``items``,
and the output of ``kubectl version -o json|yaml`` (``serverVersion``). Every object keeps the
file and line it came from, so the imported profile can cite it. Anything else is bad input: one
line naming the file (and line), exit 2. Work is bounded: ``--max-file-size`` and
``--max-objects`` per file (helmsim.limits), ``MAX_FILES`` files and ``MAX_OBJECTS`` in all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from helmsim import limits, yamlio
from helmsim.errors import InputError

MAX_FILES = 1000
MAX_OBJECTS = 1_000_000  # over all files; one file is bounded by --max-objects
_SUFFIXES = (".yaml", ".yml", ".json")


class Located(Struct, frozen=True):
    """One object and where it was read: ``source`` is a file path or a live API path."""

    obj: Mapping[str, Any]
    source: str
    line: int | None = None
    item: str = ""  # "items[3]" for an object of a List

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind") or "")

    @property
    def name(self) -> str:
        return str(_meta(self.obj).get("name") or "")

    @property
    def namespace(self) -> str:
        return str(_meta(self.obj).get("namespace") or "")

    def cite(self) -> str:
        """``file:line Kind/ns/name`` for provenance comments."""
        where = f"{self.source}:{self.line}" if self.line and self.line > 1 else self.source
        if self.item:
            where += f" {self.item}"
        ref = "/".join(p for p in (self.kind, self.namespace, self.name) if p)
        return f"{where} {ref}"


class Dump(Struct):
    """Every object read, plus the server version when a ``kubectl version`` output was given."""

    objects: list[Located] = field(default_factory=list)
    server_version: Mapping[str, Any] | None = None
    version_source: str = ""

    def of(self, kind: str, namespace: str | None = None) -> list[Located]:
        """Objects of ``kind`` (in ``namespace`` when given), in reading order."""
        return [
            o
            for o in self.objects
            if o.kind == kind and (namespace is None or o.namespace == namespace)
        ]

    def get(self, kind: str, namespace: str, name: str) -> Located | None:
        """The first object ``kind`` ``namespace/name``, if read."""
        return next(
            (o for o in self.of(kind, namespace) if o.name == name),
            None,
        )


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def dump_files(paths: Iterable[Path]) -> list[Path]:
    """The dump files under ``paths`` (directories are walked, sorted), bounded by MAX_FILES."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in _SUFFIXES)
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise InputError("no such file or directory", file=str(path))
        if len(out) > MAX_FILES:
            raise InputError(f"more than {MAX_FILES} dump files (limit MAX_FILES)", file=str(path))
    if not out:
        shown = ", ".join(str(p) for p in paths) or "(none)"
        raise InputError(f"no .yaml, .yml or .json dump files in {shown}")
    return out


def read_dumps(paths: Iterable[Path]) -> Dump:
    """Read every dump file under ``paths``."""
    dump = Dump()
    for path in dump_files(list(paths)):
        read_file_into(dump, path)
    return dump


def read_file_into(dump: Dump, path: Path) -> None:
    """Add the objects of one dump file to ``dump`` (UTF-8, at most ``--max-file-size``)."""
    add_text(dump, yamlio.read_text(path, "dump"), str(path))


def add_text(dump: Dump, text: str, source: str) -> None:
    """Add the objects of one dump's text (YAML or JSON) to ``dump``."""
    try:
        docs = yamlio.load_documents(text, source)
    except InputError as err:  # one line, whatever the parser's message holds
        first = err.message.splitlines()[0] if err.message else "invalid YAML"
        raise InputError(first, file=err.file, line=err.line) from None
    for doc in docs:
        value = doc.value
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise InputError(
                "not a Kubernetes object or List (a mapping)", file=source, line=doc.line
            )
        if "serverVersion" in value and "kind" not in value:
            _version(dump, value, source, doc.line)
            continue
        kind = value.get("kind")
        if not isinstance(kind, str) or not kind:
            raise InputError("object has no kind", file=source, line=doc.line)
        if kind == "List" or (kind.endswith("List") and "items" in value):
            items = value.get("items")
            if items is None:
                items = []
            if not isinstance(items, list):
                raise InputError("items of a List is not a list", file=source, line=doc.line)
            # An API list response (kubectl get --raw) names the kind on the list only.
            item_kind = kind[: -len("List")] if kind != "List" else ""
            limits.check("max_objects", len(items), "objects in one file", file=source, line=doc.line)
            for i, item in enumerate(items):
                if item_kind and isinstance(item, Mapping) and "kind" not in item:
                    item = {"kind": item_kind, "apiVersion": value.get("apiVersion"), **item}
                _add(dump, item, source, doc.line, f"items[{i}]")
        else:
            _add(dump, value, source, doc.line, "")


def _add(dump: Dump, obj: Any, source: str, line: int, where: str) -> None:
    prefix = f"{where}: " if where else ""
    if not isinstance(obj, Mapping):
        raise InputError(f"{prefix}not a Kubernetes object (a mapping)", file=source, line=line)
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError(f"{prefix}object has no kind", file=source, line=line)
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        raise InputError(f"{prefix}metadata is not a mapping", file=source, line=line)
    if kind == "Secret":
        # Secrets are never read: their data is dropped on sight (docs/profiles.md).
        return
    if len(dump.objects) >= MAX_OBJECTS:
        raise InputError(f"more than {MAX_OBJECTS} objects (limit MAX_OBJECTS)", file=source)
    dump.objects.append(Located(obj, source, line, where))


def _version(dump: Dump, value: Mapping[str, Any], source: str, line: int) -> None:
    server = value.get("serverVersion")
    if not isinstance(server, Mapping) or not isinstance(server.get("gitVersion"), str):
        raise InputError(
            "serverVersion.gitVersion is missing (expected `kubectl version -o json`)",
            file=source,
            line=line,
        )
    dump.server_version = server
    dump.version_source = f"{source}:{line}" if line > 1 else source
