"""A chart's dependencies as Helm checks them before it renders.

Helm's engine (helm-python-sdk, in :mod:`helmsim.render`) already applies ``condition``,
``tags``, ``alias``, ``import-values`` and library subcharts (pkg/chart/v2/util/dependencies.go
ProcessDependencies runs inside its render). What it skips is the check ``helm install`` /
``helm template`` / ``helm upgrade`` make first (pkg/cmd/install.go, upgrade.go):
``action.CheckDependencies``, by name, whatever the condition says. This module is that check,
plus the version comparison ``helm dependency list`` shows (Helm installs a subchart whose version
is outside the declared range, so that is a note, not an error).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct

from helmsim import semver, yamlio
from helmsim.errors import InputError

# helm/helm pkg/cmd/install.go runInstall (and upgrade.go): the wrapping of CheckDependencies' error
CHECK_PREFIX = (
    "an error occurred while checking for chart dependencies. You may need to run "
    "'helm dependency build' to fetch missing dependencies: "
)


class Declared(Struct, frozen=True):
    """One ``dependencies:`` entry of Chart.yaml (Helm's parsed metadata) and its line."""

    name: str
    version: str
    repository: str
    alias: str
    line: int | None


def declared(chart_path: Path, metadata: Mapping[str, Any]) -> list[Declared]:
    """Chart.yaml's dependencies with the line of each entry (directory charts)."""
    lines: dict[tuple[Any, ...], int] = {}
    chart_yaml = chart_path / "Chart.yaml"
    if chart_path.is_dir() and chart_yaml.is_file():
        lines = yamlio.key_lines(yamlio.read_text(chart_yaml, "Chart.yaml"))
    out = []
    for i, dep in enumerate(metadata.get("dependencies") or ()):
        if not isinstance(dep, Mapping):
            continue
        out.append(
            Declared(
                name=str(dep.get("name") or ""),
                version=str(dep.get("version") or ""),
                repository=str(dep.get("repository") or ""),
                alias=str(dep.get("alias") or ""),
                line=lines.get(("dependencies", i, "name")) or lines.get(("dependencies", i)),
            )
        )
    return out


def missing(deps: Sequence[Declared], loaded: Sequence[Mapping[str, Any]]) -> list[Declared]:
    """helm/helm pkg/action/install.go CheckDependencies: declared names with no loaded subchart
    of that name (the subchart's own Chart.yaml name; aliases and conditions do not count)."""
    names = {str(sub.get("name") or "") for sub in loaded}
    return [d for d in deps if d.name not in names]


def missing_error(chart_path: Path, absent: Sequence[Declared]) -> InputError:
    """Helm's error for ``absent`` dependencies, naming Chart.yaml and the first entry's line."""
    text = "found in Chart.yaml, but missing in charts/ directory: " + ", ".join(d.name for d in absent)
    if chart_path.is_dir():
        return InputError(CHECK_PREFIX + text, file=str(chart_path / "Chart.yaml"), line=absent[0].line)
    return InputError(CHECK_PREFIX + text, file=str(chart_path))


def is_compatible_range(constraint: str, version: str) -> bool:
    """helm/helm pkg/chart/v2/util/compatible.go IsCompatibleRange (an empty range is ``*``)."""
    try:
        return semver.parse_constraint(constraint).check(semver.parse_version(version))
    except semver.SemverError:
        return False


def version_notes(
    deps: Sequence[Declared], loaded: Sequence[Mapping[str, Any]], chart: str, *, rendered_subcharts: Container[str] | None = None
) -> list[str]:
    """A note per declared dependency whose vendored subchart is outside its range, saying what
    Helm's render then does (pkg/chart/v2/util/dependencies.go processDependencyEnabled): the
    entry gets no subchart (getAliasDependency skips an incompatible version), and a vendored
    chart no entry accepts is still rendered, under its own name, as if undeclared.
    ``helm dependency list`` calls both "wrong version"; CheckDependencies compares names only.
    ``rendered_subcharts``: the subchart directories the render kept — a dependency disabled by
    its condition or tags is removed by name whatever its version (None: not known)."""
    notes = []
    for dep in deps:
        subs = [str(sub.get("version") or "") for sub in loaded if str(sub.get("name") or "") == dep.name]
        if not subs or any(is_compatible_range(dep.version, v) for v in subs):
            continue
        entry = f"{dep.name} (alias {dep.alias})" if dep.alias else dep.name
        have = ", ".join(subs)
        accepted = [
            v
            for v in subs
            if any(is_compatible_range(other.version, v) for other in deps if other.name == dep.name)
        ]
        if accepted:
            what = f"Helm renders no subchart for {dep.alias or dep.name}"
        elif (
            rendered_subcharts is not None
            and dep.name not in rendered_subcharts
            # a library chart renders no file of its own even when kept
            and all(str(sub.get("type") or "") != "library" for sub in loaded if str(sub.get("name") or "") == dep.name)
        ):
            what = f"it is disabled here (its condition or tags), so Helm renders no charts/{dep.name}"
        else:
            what = f"Helm still renders charts/{dep.name} {have} under its own name, as an undeclared subchart"
        notes.append(
            f"chart {chart}: dependency {entry} asks for version {dep.version!r} but charts/ holds "
            f"{dep.name} {have} (helm dependency list: wrong version); {what}"
        )
    return notes


__all__ = ["CHECK_PREFIX", "Declared", "declared", "is_compatible_range", "missing", "missing_error", "version_notes"]
