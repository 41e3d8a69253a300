"""Helpers for the tests of tests/realcharts: simulate a chart there as ``helmsim simulate`` does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from helmsim.cluster.profile import ClusterProfile, load_profile
from helmsim.diagnose.check import CheckOptions, CheckReport, run_check
from helmsim.release_inputs import build_inputs
from helmsim.simulate import SimulationResult, simulate

HERE = Path(__file__).resolve().parent


def simulate_chart(
    name: str,
    profile: str | ClusterProfile = "kind",
    *,
    values: tuple[str, ...] = (),
    sets: tuple[str, ...] = (),
    helmrelease: tuple[str, ...] = (),
    upgrade_from_values: tuple[str, ...] | None = None,
    **kw: Any,
) -> SimulationResult:
    """Simulate the chart ``tests/realcharts/<name>`` (with HelmReleases from ``helmrelease``)."""
    chart = str(HERE / name)
    releases = build_inputs(
        chart,
        values=[str(HERE / name / v) for v in values],
        sets=list(sets),
        helmrelease=[str(HERE / name / h) for h in helmrelease],
        charts=[],
        release_name=None,
        namespace="default",
        upgrade_from=None if upgrade_from_values is None else chart,
        upgrade_from_values=[str(HERE / name / v) for v in upgrade_from_values or ()],
        upgrade_from_set=[],
    )
    cluster = load_profile(profile) if isinstance(profile, str) else profile
    return simulate(cluster, releases, **kw)


def check_chart(
    name: str, profile: str = "kind", *, release_name: str, verify_fixes: bool = False, values: tuple[str, ...] = ()
) -> CheckReport:
    """``helmsim check`` of the chart ``tests/realcharts/<name>`` under one profile (namespace
    ``default``, with the chart's ``values`` files); ``verify_fixes`` simulates each fix, as the
    command does by default."""
    releases = build_inputs(
        str(HERE / name), values=[str(HERE / name / v) for v in values], release_name=release_name, namespace="default"
    )
    return run_check(releases, [load_profile(profile)], options=CheckOptions(verify_fixes=verify_fixes))


def behaviour_notes(result: SimulationResult, container: str) -> list[str]:
    """What the behaviour model said of ``container`` (trace ``behaviour``, its name stripped)."""
    prefix = f"{container}: "
    return [
        e.message.removeprefix(prefix)
        for e in result.trace
        if e.what == "behaviour" and e.message.startswith(prefix)
    ]


_ENTRY = re.compile(r"^behaviour from catalog entry (\S+) ")


def catalog_entries(result: SimulationResult, container: str) -> set[str]:
    """The catalog entries ``container`` matched in the run (its ``behaviour`` trace lines)."""
    return {m[1] for n in behaviour_notes(result, container) if (m := _ENTRY.match(n))}


def restarts(result: SimulationResult, namespace: str = "default") -> dict[str, int]:
    """``pod/container`` → restartCount of every container (init containers too) of the pods
    of ``namespace`` at the end of the run."""
    assert result.sim is not None
    out: dict[str, int] = {}
    for pod in result.sim.store.list("Pod", namespace):
        status = pod.get("status") or {}
        for s in [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]:
            out[f"{pod['metadata']['name']}/{s['name']}"] = int(s.get("restartCount") or 0)
    return out
