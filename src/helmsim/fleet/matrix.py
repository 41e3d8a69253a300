"""The fleet matrix: releases × values files × profiles × seeds, from ``.helmsim.yaml`` or flags.

```yaml
fleet:
  profiles: [kind, cilium-always]        # default: the file's top-level profiles, else check's four
  runs: 20                               # sampled runs per profile of every rehearsal (0: none)
  seed: 1
  horizon: 30m
  releases:
    - name: hf-cache                     # optional; default: the target
      target: examples/seed2-hf-cache    # a chart, or a directory of Flux objects
      helmrelease: examples/seed2-hf-cache/flux
      values:                            # each item is one rehearsal (default: the chart's own values)
        - []                             #   the chart's own values
        - examples/seed2-hf-cache/ci/hook-values.yaml
        - examples/seed2-hf-cache/ci/*-values.yaml   # a glob: one rehearsal per file
        - [base.yaml, overlay.yaml]      #   files layered in order: one rehearsal
```

Paths are relative to the directory of the file. Every (release, values) pair is one
*rehearsal*: what ``helmsim check TARGET -f VALUES… -p P… --runs N --seed S`` does.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct
from pydantic import BaseModel, ConfigDict, Field, field_validator

from helmsim.errors import InputError

MAX_REHEARSALS = 10_000
"""Rehearsals (release × values) one matrix may expand to."""
MAX_RUNS = 100_000
"""Sampled runs per profile of one rehearsal."""
DEFAULTS_LABEL = "(chart values)"
"""The label of a rehearsal without values files."""

ValuesItem = str | tuple[str, ...]


def _as_tuple(v: Any) -> Any:
    """A single string where a list is expected is a list of one."""
    return (v,) if isinstance(v, str) else v


class ReleaseEntry(BaseModel):
    """One release of the platform: a chart or Flux tree and its values files."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, populate_by_name=True)

    name: str | None = Field(default=None, min_length=1)
    target: str = Field(min_length=1)
    helmrelease: tuple[str, ...] = ()
    chart: tuple[str, ...] = ()
    values: tuple[ValuesItem, ...] = ()
    set: tuple[str, ...] = ()
    namespace: str = Field(default="default", min_length=1)
    release_name: str | None = Field(default=None, alias="releaseName", min_length=1)
    upgrade_from: str | None = Field(default=None, alias="upgradeFrom", min_length=1)
    upgrade_from_values: tuple[str, ...] = Field(default=(), alias="upgradeFromValues")

    _lists = field_validator(
        "helmrelease", "chart", "values", "set", "upgrade_from_values", mode="before"
    )(_as_tuple)


class FleetMatrix(BaseModel):
    """The ``fleet:`` key of ``.helmsim.yaml``."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, populate_by_name=True)

    releases: tuple[ReleaseEntry, ...] = Field(min_length=1)
    profiles: tuple[str, ...] = ()
    runs: int = Field(default=0, ge=0, le=MAX_RUNS)
    seed: int = Field(default=0, ge=0)
    horizon: str | None = None

    _profiles = field_validator("profiles", mode="before")(_as_tuple)


class RehearsalSpec(Struct, frozen=True):
    """One cell of the matrix before its inputs are read: a release entry and one values set."""

    index: int
    name: str
    entry: ReleaseEntry
    values: tuple[str, ...]
    """Values files, layered in order (paths as the user's shell would name them)."""
    where: tuple[str | None, int | None]
    """The matrix file and line that declared it (for errors)."""

    @property
    def label(self) -> str:
        return ", ".join(self.values) if self.values else DEFAULTS_LABEL

    @property
    def key(self) -> str:
        """``NAME [values]``: unique in a matrix, stable across runs."""
        return f"{self.name} [{self.label}]"


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the current directory when it is inside it, else absolute."""
    p = Path(path)
    absolute = p if p.is_absolute() else Path.cwd() / p
    try:
        return absolute.resolve().relative_to(Path.cwd().resolve()).as_posix() or "."
    except ValueError:
        return str(absolute.resolve())


def expand(
    matrix: FleetMatrix,
    *,
    base: Path,
    source: str | None = None,
    lines: Mapping[tuple[Any, ...], int] | None = None,
    prefix: tuple[Any, ...] = ("fleet",),
) -> list[RehearsalSpec]:
    """Every (release, values) rehearsal in matrix order; paths resolved against ``base``.

    A target that does not exist, a values file that does not exist or a glob that matches
    nothing is an error naming the matrix file and line.
    """
    lines = lines or {}

    def fail(message: str, *loc: Any) -> InputError:
        return InputError(message, file=source, line=_line(lines, (*prefix, "releases", *loc)))

    def resolve(path: str) -> Path:
        p = Path(os.path.expanduser(path))
        return p if p.is_absolute() else base / p

    out: list[RehearsalSpec] = []
    names: dict[str, int] = {}
    for i, entry in enumerate(matrix.releases):
        target = resolve(entry.target)
        if not target.exists():
            raise fail(f"releases[{i}].target: {entry.target}: no such chart or directory", i, "target")
        target_shown = display_path(target)
        fixed: dict[str, Any] = {
            "target": target_shown,
            "helmrelease": tuple(display_path(resolve(h)) for h in entry.helmrelease),
            "chart": tuple(_chart_map(c, resolve) for c in entry.chart),
            "upgrade_from": display_path(resolve(entry.upgrade_from)) if entry.upgrade_from else None,
            "upgrade_from_values": tuple(display_path(resolve(v)) for v in entry.upgrade_from_values),
        }
        for k, h in enumerate(entry.helmrelease):
            if not resolve(h).exists():
                raise fail(f"releases[{i}].helmrelease[{k}]: {h}: no such file or directory", i, "helmrelease", k)
        resolved = entry.model_copy(update=fixed)
        name = entry.name or target_shown
        if name in names:
            raise fail(
                f"releases[{i}]: the name {name!r} is already used by releases[{names[name]}] "
                "(give one a distinct name:)",
                i,
            )
        names[name] = i
        variants: list[tuple[tuple[str, ...], int | None]] = []
        for j, item in enumerate(entry.values or ((),)):
            loc = (i, "values", j)
            if isinstance(item, str):
                matches = _glob(resolve(item)) if glob.has_magic(item) else [resolve(item)]
                if not matches:
                    raise fail(f"releases[{i}].values[{j}]: {item}: no file matches", *loc)
                for m in matches:
                    if not m.is_file():
                        raise fail(f"releases[{i}].values[{j}]: {item}: no such file", *loc)
                    variants.append(((display_path(m),), _line(lines, (*prefix, "releases", *loc))))
            else:
                layered: list[str] = []
                for k, path in enumerate(item):
                    p = resolve(path)
                    if not p.is_file():
                        raise fail(f"releases[{i}].values[{j}][{k}]: {path}: no such file", *loc, k)
                    layered.append(display_path(p))
                variants.append((tuple(layered), _line(lines, (*prefix, "releases", *loc))))
        seen: set[tuple[str, ...]] = set()
        for files, line in variants:
            if files in seen:
                continue  # a file named twice (a glob and a path) is rehearsed once
            seen.add(files)
            out.append(RehearsalSpec(len(out), name, resolved, files, (source, line)))
            if len(out) > MAX_REHEARSALS:
                raise InputError(
                    f"the matrix expands to more than {MAX_REHEARSALS} rehearsals (the limit); "
                    "split it into several fleet files",
                    file=source,
                )
    return out


def _glob(pattern: Path) -> list[Path]:
    return sorted(Path(m) for m in glob.glob(str(pattern), recursive=True) if Path(m).is_file())


def _chart_map(item: str, resolve: Any) -> str:
    name, sep, path = item.partition("=")
    return f"{name}={display_path(resolve(path))}" if sep and path else item


def _line(lines: Mapping[tuple[Any, ...], int], loc: Sequence[Any]) -> int | None:
    """The line of the deepest prefix of ``loc`` that the file has."""
    for n in range(len(loc), 0, -1):
        if tuple(loc[:n]) in lines:
            return lines[tuple(loc[:n])]
    return None


def from_flags(
    targets: Sequence[str], values_globs: Sequence[str], *, namespace: str = "default"
) -> FleetMatrix:
    """The matrix ``helmsim fleet TARGET… --values GLOB…`` describes: each target, rehearsed
    once per values file matching a glob inside it (chart-testing's ``ci/*-values.yaml``
    convention), or once with its own values when none matches."""
    # helm/chart-testing pkg/chart/chart.go ValuesFilePathsForCI: ci/*-values.yaml, one install
    # each; with none, installAndTestChartRelease tests the chart's defaults
    entries = []
    for t in targets:
        base = Path(t)
        found: list[str] = []
        for g in values_globs:
            pattern = Path(g) if Path(g).is_absolute() else (base if base.is_dir() else base.parent) / g
            found.extend(str(m) for m in _glob(pattern))
        items: tuple[ValuesItem, ...] = tuple(dict.fromkeys(found)) or ((),)
        entries.append(ReleaseEntry(target=t, values=items, namespace=namespace))
    return FleetMatrix(releases=tuple(entries))


__all__ = [
    "DEFAULTS_LABEL",
    "MAX_REHEARSALS",
    "MAX_RUNS",
    "FleetMatrix",
    "RehearsalSpec",
    "ReleaseEntry",
    "display_path",
    "expand",
    "from_flags",
]
