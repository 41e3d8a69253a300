"""Which subcharts a release leaves out, from their ``condition`` and ``tags``, for the CRDs Helm
installs.

Helm drops disabled subcharts before it collects CRDs: helm/helm pkg/action/install.go
RunWithContext calls chartutil.ProcessDependencies (pkg/chart/v2/util/dependencies.go) before
``chrt.CRDObjects()``, and helm-controller's internal/action/crds.go applyCRDs does the same. The
chart helmsim loads still holds every subchart's ``crds/``, so the render filters them here. The
values are Helm's own coalesced values (the engine's ``merge_values``); the rules are upstream's:
tags first (any tag true enables, all present tags false disables), then the first condition path
whose value is a bool (processDependencyTags, processDependencyConditions), recursively under an
enabled parent only.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from msgspec import Struct, field


class _Dep(Struct, frozen=True):
    """One entry of a Chart.yaml ``dependencies`` list."""

    name: str
    alias: str
    condition: str = ""
    tags: tuple[str, ...] = ()


class _Node(Struct):
    """A chart as stored: its id as Helm names its files, its dependency entries and subcharts."""

    helm_id: str
    deps: list[_Dep]
    subcharts: dict[str, _Node] = field(default_factory=dict)
    """Subchart name → its node."""


def _deps(chart_yaml: bytes) -> tuple[str, list[_Dep]]:
    meta = yaml.safe_load(chart_yaml) or {}
    if not isinstance(meta, dict):
        return "", []
    out: list[_Dep] = []
    for d in meta.get("dependencies") or ():
        if isinstance(d, dict) and d.get("name"):
            tags = d.get("tags") or ()
            out.append(
                _Dep(
                    str(d["name"]), str(d.get("alias") or d["name"]), str(d.get("condition") or ""),
                    tuple(str(t) for t in tags) if isinstance(tags, list) else (),
                )
            )
    return str(meta.get("name") or ""), out


def _from_files(files: Mapping[str, bytes], helm_id: str) -> _Node | None:
    if "Chart.yaml" not in files:
        return None
    _, deps = _deps(files["Chart.yaml"])
    node = _Node(helm_id, deps)
    grouped: dict[str, dict[str, bytes]] = {}
    for inner, data in files.items():
        if not inner.startswith("charts/"):
            continue
        rest = inner[len("charts/") :]
        if "/" in rest:
            sub, _, tail = rest.partition("/")
            grouped.setdefault(sub, {})[tail] = data
        elif rest.endswith((".tgz", ".tar.gz")):
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
                child = _from_tar(tar, helm_id)
            if child is not None:
                node.subcharts[child.helm_id.rsplit("/", 1)[-1]] = child
    for sub, sub_files in grouped.items():
        name, _ = _deps(sub_files.get("Chart.yaml", b""))
        child = _from_files(sub_files, f"{helm_id}/charts/{name or sub}")
        if child is not None:
            node.subcharts[name or sub] = child
    return node


def _from_tar(tar: tarfile.TarFile, parent: str) -> _Node | None:
    files: dict[str, bytes] = {}
    for member in tar.getmembers():
        if not member.isfile():
            continue
        name = member.name.removeprefix("./")
        _, _, inner = name.partition("/")
        if inner == "Chart.yaml" or inner.startswith("charts/"):
            f = tar.extractfile(member)
            if f is not None:
                files[inner] = f.read()
    if "Chart.yaml" not in files:
        return None
    name, _ = _deps(files["Chart.yaml"])
    return _from_files(files, f"{parent}/charts/{name}" if parent else name)


def _read(path: Path) -> _Node | None:
    if path.is_dir():
        files: dict[str, bytes] = {}
        for dirpath, dirnames, filenames in os.walk(path, followlinks=True):
            rel = Path(dirpath).relative_to(path).as_posix()
            if rel == ".":
                dirnames[:] = [d for d in dirnames if d == "charts"]
            for fname in filenames:
                inner = fname if rel == "." else f"{rel}/{fname}"
                if inner == "Chart.yaml" or (inner.startswith("charts/") and (fname == "Chart.yaml" or fname.endswith((".tgz", ".tar.gz")))):
                    files[inner] = (Path(dirpath) / fname).read_bytes()
        name, _ = _deps(files.get("Chart.yaml", b""))
        return _from_files(files, name)
    with tarfile.open(path, "r:*") as tar:
        return _from_tar(tar, "")


def _path_value(values: Any, path: str) -> tuple[bool, Any]:
    """chartutil Values.PathValue: the value at a dotted path, or (False, None) when absent."""
    node = values
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _enabled(dep: _Dep, values: Any, prefix: str) -> bool:
    enabled = True
    tags = values.get("tags") if isinstance(values, Mapping) else None
    if isinstance(tags, Mapping) and dep.tags:
        flags = [tags[t] for t in dep.tags if isinstance(tags.get(t), bool)]
        if flags and not any(flags):
            enabled = False
    for cond in (c.strip() for c in dep.condition.split(",")):
        if not cond:
            continue
        found, value = _path_value(values, prefix + cond)
        if found and isinstance(value, bool):
            enabled = value
            break
    return enabled


def disabled_subcharts(chart_path: str | os.PathLike[str], values: Mapping[str, Any]) -> frozenset[str]:
    """The Helm ids (``parent/charts/sub``) of the subcharts ``values`` (Helm's coalesced values
    of the whole chart) leave out; a subchart of a disabled one is left out with it."""
    root = _read(Path(chart_path))
    if root is None:
        return frozenset()
    out: set[str] = set()

    def walk(node: _Node, scope: Any, prefix: str) -> Iterator[None]:
        for dep in node.deps:
            child = node.subcharts.get(dep.name)
            if child is None:
                continue
            if not _enabled(dep, scope, prefix):
                out.add(child.helm_id)
                continue
            yield from walk(child, scope, f"{prefix}{dep.alias}.")
        return
        yield

    for _ in walk(root, values, ""):
        pass
    return frozenset(out)


def crd_kept(filename: str, disabled: frozenset[str]) -> bool:
    """Whether a ``crds/`` file (``parent/charts/sub/crds/x.yaml``) belongs to no left-out subchart."""
    return not any(filename.startswith(d + "/") for d in disabled)


__all__ = ["crd_kept", "disabled_subcharts"]
