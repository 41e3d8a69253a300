"""Helpers shared by the end-to-end simulations of the seed examples (issues 4 and 5).

Every simulation here goes through the same path as ``helmsim simulate``: ``build_inputs``
pairs the example's Flux objects with the chart, ``simulate`` runs it on a profile. Runs are
deterministic (nominal latencies), so identical runs are cached for the session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import load_profile
from helmsim.cluster.trace import TraceEvent
from helmsim.simulate import ReleaseOutcome, SimulationResult, simulate

ROOT = Path(__file__).resolve().parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
SEED2 = ROOT / "examples" / "seed2-hf-cache"
FIX = ROOT / "tests" / "fixtures" / "e2e"
PROFILES = FIX / "profiles"

MAIN = "agent-platform-connectivity"
MAIN_REF = f"agent-platform/{MAIN}"
SEED1_DEPENDENTS = ("substrate", "kagent", "agent-manager")
SEED2_DEPENDENTS = ("substrate", "kagent", "agent-manager", "model-manager")
# The migrate Job's name: <release>-agent-manager-migrate-<first 8 hex of sha256(4.7.0/from/to)>.
MIGRATE_JOB = "agent-platform-connectivity-agent-manager-migrate-b49599d7"
MIGRATE_FAILS = FIX / "seed1-migrate-fails-values.yaml"


def profile_arg(name: str) -> str:
    """A built-in profile name, or a fixture profile under tests/fixtures/e2e/profiles."""
    path = PROFILES / f"{name}.yaml"
    return str(path) if path.exists() else name


def run_example(
    example: Path,
    profile: str,
    values: Sequence[str | Path] = (),
    *,
    helmreleases: Sequence[str | Path] = (),
    charts: Sequence[str] = (),
    upgrade_from_values: Sequence[str | Path] | None = None,
    setup: Callable[[Any], None] | None = None,
) -> SimulationResult:
    """Simulate ``example`` with its ``flux/`` HelmReleases, as the CLI would."""
    releases = build_inputs(
        str(example),
        values=[str(v) for v in values],
        sets=[],
        helmrelease=[str(example / "flux"), *(str(h) for h in helmreleases)],
        charts=list(charts),
        release_name=None,
        namespace="default",
        upgrade_from=None if upgrade_from_values is None else str(example),
        upgrade_from_values=[str(v) for v in upgrade_from_values or ()],
        upgrade_from_set=[],
    )
    return simulate(load_profile(profile_arg(profile)), releases, setup=setup)


_CACHE: dict[tuple[Any, ...], SimulationResult] = {}


def cached_run(
    example: Path, profile: str, *values: str | Path, upgrade: bool = False
) -> SimulationResult:
    """A cached ``run_example``. ``upgrade=True`` installs the example with
    ci/previous-values.yaml first and then upgrades, like ``--upgrade-from``."""
    key = (str(example), profile, tuple(str(v) for v in values), upgrade)
    if key not in _CACHE:
        previous = [example / "ci" / "previous-values.yaml"] if upgrade else None
        _CACHE[key] = run_example(example, profile, values, upgrade_from_values=previous)
    return _CACHE[key]


def release(result: SimulationResult, name: str = MAIN) -> ReleaseOutcome:
    """The outcome of the HelmRelease ``agent-platform/<name>``."""
    matches = [o for o in result.releases if o.name == name and o.namespace == "agent-platform"]
    assert len(matches) == 1, [o.name for o in result.releases]
    return matches[0]


def events(
    result: SimulationResult, what: str, *, obj_prefix: str = "", **data: Any
) -> list[TraceEvent]:
    """Trace events ``what`` on objects starting with ``obj_prefix`` whose data has ``data``."""
    return [
        e
        for e in result.trace
        if e.what == what
        and e.obj.startswith(obj_prefix)
        and all(e.data.get(k) == v for k, v in data.items())
    ]


def k8s_events(result: SimulationResult, reason: str, obj_prefix: str = "") -> list[TraceEvent]:
    """Kubernetes Events with ``reason`` on objects starting with ``obj_prefix``."""
    return [
        e for e in events(result, "event", obj_prefix=obj_prefix) if e.data.get("reason") == reason
    ]


def object_status(result: SimulationResult, kind: str, name: str) -> dict[str, Any] | None:
    """The report's final ``objects[]`` entry for ``kind``/``name`` (any namespace)."""
    found = [o for o in result.objects if o["kind"] == kind and o["name"] == name]
    return found[0] if found else None
