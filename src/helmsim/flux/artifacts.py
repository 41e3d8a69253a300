"""ExternalArtifacts an ArtifactGenerator composes from the tree's sources (Flux 2.7's
source-watcher), materialized so a Kustomization whose ``sourceRef`` is one can be built.

fluxcd/source-watcher api/v1beta1/artifactgenerator_types.go (``spec.sources`` by alias,
``spec.artifacts`` with their ``copy`` operations), internal/builder/builder.go
applyCopyOperation: ``from: "@alias/pattern"``, ``to: "@artifact/path"``, in order, later
operations overwriting earlier ones, with ``cp``'s semantics: a directory without a glob is
copied as a subdirectory, ``dir/**`` copies the directory's entries (Go's ``fs.Glob``: ``**`` is
one path segment, as ``*``), a file goes into ``to`` when it ends with ``/`` or is a directory,
``exclude`` patterns (doublestar) match the path from the source root or from the pattern's
literal prefix, and a pattern without ``/`` the file name at any depth. A GitRepository's
content is the local tree (the repository root), as for charts; other source kinds, the
``Merge`` and ``Extract`` strategies and ``pathPattern`` are not modelled and are said.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct, field
from wcmatch import glob as wglob

from helmsim.errors import InputError

GROUP = "source.extensions.fluxcd.io"
MAX_FILES = 20_000
"""Files one artifact may hold (the copy stops with an error naming the limit)."""


class Artifact(Struct):
    """An ExternalArtifact on disk: ``files`` maps each of its files to the file it was copied
    from (reports name that one)."""

    root: Path
    files: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def is_generator(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "ArtifactGenerator" and str(obj.get("apiVersion", "")).startswith(f"{GROUP}/")


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def generated(objects: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """Every ExternalArtifact the ArtifactGenerators among ``objects`` produce, as
    ``(namespace, name)`` → the generator's ``namespace/name``."""
    out: dict[tuple[str, str], str] = {}
    for obj in objects:
        if not is_generator(obj):
            continue
        meta = _map(obj.get("metadata"))
        ns = str(meta.get("namespace") or "default")
        for art in _map(obj.get("spec")).get("artifacts") or ():
            if isinstance(art, Mapping) and art.get("name"):
                out.setdefault((ns, str(art["name"])), f"{ns}/{meta.get('name')}")
    return out


def find(
    objects: Sequence[Mapping[str, Any]], sources: Sequence[tuple[str, int]], namespace: str, name: str
) -> tuple[Mapping[str, Any], Mapping[str, Any], tuple[str, int]] | None:
    """The ArtifactGenerator of namespace ``namespace`` producing artifact ``name``, that artifact
    and the generator's file and line."""
    for obj, where in zip(objects, sources, strict=False):
        meta = _map(obj.get("metadata"))
        if not is_generator(obj) or str(meta.get("namespace") or "default") != namespace:
            continue
        for art in _map(obj.get("spec")).get("artifacts") or ():
            if isinstance(art, Mapping) and art.get("name") == name:
                return obj, art, where
    return None


def materialize(
    generator: Mapping[str, Any], artifact: Mapping[str, Any], where: tuple[str, int], repository_root: Path | None, into: Path
) -> Artifact:
    """Copy what ``artifact`` of ``generator`` holds into ``into`` (emptied first)."""
    meta = _map(generator.get("metadata"))
    ref = f"ArtifactGenerator {meta.get('namespace') or 'default'}/{meta.get('name')}"
    file, line = where
    aliases: dict[str, Path | None] = {}
    out = Artifact(into)
    for src in _map(generator.get("spec")).get("sources") or ():
        if not isinstance(src, Mapping):
            continue
        alias = str(src.get("alias") or "")
        aliases[alias] = None
        if src.get("kind") == "GitRepository" and repository_root is not None:
            aliases[alias] = repository_root
        else:
            out.notes.append(
                f"{ref}: source {alias} ({src.get('kind')}/{src.get('name')}) is not read (not modelled): "
                "its files are missing from the artifacts"
            )
    if _map(generator.get("spec")).get("pathPattern"):
        out.notes.append(f"{ref}: spec.pathPattern not applied (not modelled)")
    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    for op in artifact.get("copy") or ():
        if not isinstance(op, Mapping):
            raise InputError(f"{ref}: a copy operation must be a mapping", file=file, line=line)
        try:
            _copy(op, aliases, out, ref)
        except _CopyError as err:
            # internal/controller: a failed build is the generator's failure; its artifacts are not produced
            raise InputError(f"{ref}: artifact {artifact.get('name')}: {err}", file=file, line=line) from None
    return out


class _CopyError(Exception):
    pass


def _copy(op: Mapping[str, Any], aliases: Mapping[str, Path | None], out: Artifact, ref: str) -> None:
    source, to = str(op.get("from") or ""), str(op.get("to") or "")
    # builder.go parseCopySource, parseCopyDestinationRelative
    if not source.startswith("@"):
        raise _CopyError(f"invalid copy source '{source}': source must start with '@'")
    if "/" not in source:
        raise _CopyError(f"invalid copy source '{source}': source format must be '@alias/pattern'")
    if not to.startswith("@artifact/"):
        raise _CopyError(f"invalid copy destination '{to}': destination must start with '@artifact/'")
    alias, pattern = source[1:].split("/", 1)
    dest = to.removeprefix("@artifact/")
    if alias not in aliases:
        raise _CopyError(f"source alias '{alias}' not found")
    root = aliases[alias]
    if root is None:
        return  # a source not read here: said once, its files are missing
    strategy = str(op.get("strategy") or "Overwrite")
    if strategy != "Overwrite":
        out.notes.append(f"{ref}: copy strategy {strategy} of '{source}' not modelled: copied as Overwrite")
    excludes = [str(e) for e in op.get("exclude") or ()]
    for e in excludes:
        if not _valid(e, braces=True):  # doublestar.Match(pattern, ".") fails on a malformed pattern
            raise _CopyError(f"invalid exclude pattern '{e}'")
    if not any(c in pattern for c in "*?[]"):
        clean = os.path.normpath(pattern) if pattern else "."  # filepath.Clean
        if clean == ".." or clean.startswith(("../", "/")):
            raise _CopyError(f"failed to stat source '{clean}': statat {clean}: path escapes from parent")  # os.Root
        src = root / clean
        if not src.exists():
            raise _CopyError(f"source '{clean}' does not exist")
        if src.is_dir():
            # applySingleDirectoryCopy: into to/<base name>; the root itself ("@alias/") into to/
            name = "" if clean == "." else Path(clean).name
            _tree(src, out.root / dest / name, excludes, Path(clean), out, root)
        elif not _excluded(Path(clean), Path("."), excludes):
            target = out.root / dest
            if to.endswith("/") or target.is_dir():
                target = target / src.name
            _file(src, target, out)
        return
    if not all(_valid(part) for part in pattern.split("/")):
        raise _CopyError(f"invalid glob pattern '{pattern}': syntax error in pattern")  # path.ErrBadPattern
    base = _literal_prefix(pattern)
    found = _glob(root, pattern)
    if not found:
        raise _CopyError(f"no files match pattern '{pattern}' in source '{alias}'")
    matches = [m for m in found if not _excluded(m, base, excludes)]
    if not matches:
        raise _CopyError(f"all files matching pattern '{pattern}' in source '{alias}' were excluded")
    prefix = pattern[: -len("/**")] if pattern.endswith("/**") else None
    for m in matches:
        rel = m.relative_to(prefix) if prefix is not None and m.is_relative_to(prefix) else m
        target = out.root / dest / rel
        if (root / m).is_dir():
            _tree(root / m, target, excludes, base, out, root)
        else:
            _file(root / m, target, out)


def _glob(root: Path, pattern: str) -> list[Path]:
    """Go's fs.Glob: the paths with as many segments as the pattern, each segment matched as
    path.Match matches it (``*`` within a segment; ``**`` is the same)."""
    parts = Path(pattern).parts
    found: list[Path] = [Path()]
    for part in parts:
        nxt: list[Path] = []
        for p in found:
            d = root / p
            if not d.is_dir():
                continue
            for entry in sorted(d.iterdir(), key=lambda e: e.name):
                if entry.name != ".git" and wglob.globmatch(entry.name, part.replace("**", "*"), flags=wglob.DOTMATCH):
                    nxt.append(p / entry.name)
        found = nxt
    return found


def _valid(pattern: str, *, braces: bool = False) -> bool:
    """Whether Go's path.Match (or doublestar, with ``braces``) accepts the pattern: every ``[``
    closed by a ``]`` after at least one character, ``\\`` escaping the next one, and every
    ``{`` closed."""
    i, depth = 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 >= len(pattern):
                return False
            i += 2
            continue
        if c == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] in "^!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                return False  # path.Match getEsc: an empty class (or a leading ]) is ErrBadPattern
            while j < len(pattern) and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            if j >= len(pattern):
                return False
            i = j + 1
            continue
        if braces and c == "{":
            depth += 1
        elif braces and c == "}":
            depth -= 1
            if depth < 0:
                return False
        i += 1
    return depth == 0


def _literal_prefix(pattern: str) -> Path:
    """sourceSelectionRoot: the segments before the first with a glob."""
    out: list[str] = []
    for part in Path(pattern).parts:
        if any(c in part for c in "*?[]"):
            break
        out.append(part)
    return Path(*out) if out else Path(".")


def _excluded(path: Path, base: Path, excludes: Sequence[str]) -> bool:
    """shouldExcludePath: the path from the source root, or from ``base``; a pattern without
    ``/`` also against the file name."""
    if not excludes:
        return False
    candidates = [path]
    if base != Path(".") and path.is_relative_to(base) and path != base:
        candidates.append(path.relative_to(base))
    flags = wglob.GLOBSTAR | wglob.DOTMATCH | wglob.BRACE
    for c in candidates:
        for pattern in excludes:
            # doublestar: a trailing /** matches zero segments too, so "a/**" excludes a itself
            forms = [pattern, pattern[: -len("/**")]] if pattern.endswith("/**") else [pattern]
            if any(f and wglob.globmatch(str(c), f, flags=flags) for f in forms):
                return True
            if "/" not in pattern and wglob.globmatch(c.name, pattern, flags=flags):
                return True
    return False


def _tree(src: Path, target: Path, excludes: Sequence[str], base: Path, out: Artifact, root: Path) -> None:
    """copyDirWithRoots: every file under ``src``, an excluded directory skipped whole."""
    if not target.resolve().is_relative_to(out.root.resolve()):
        shown = os.path.relpath(target, out.root)
        raise _CopyError(f"failed to create directory '{shown}': mkdirat {shown}: path escapes from parent")
    target.mkdir(parents=True, exist_ok=True)
    for entry in sorted(src.iterdir(), key=lambda e: e.name):
        rel = entry.relative_to(root)
        if entry.name == ".git" or _excluded(rel, base, excludes):
            continue
        if entry.is_dir():
            _tree(entry, target / entry.name, excludes, base, out, root)
        elif entry.is_file():
            _file(entry, target / entry.name, out)


def _file(src: Path, target: Path, out: Artifact) -> None:
    if not target.resolve().is_relative_to(out.root.resolve()):
        # os.Root (builder.go copies through the staging root): nothing is written outside it
        rel = os.path.relpath(target, out.root)
        raise _CopyError(f"failed to copy file '{src.name}' to '{rel}': openat {rel}: path escapes from parent")
    if len(out.files) >= MAX_FILES:
        raise _CopyError(f"more than {MAX_FILES} files in one artifact (limit)")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, target)
    out.files[str(target.resolve())] = str(src)


__all__ = ["Artifact", "GROUP", "find", "generated", "is_generator", "materialize"]
