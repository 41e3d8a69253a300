"""pytest plugin: scenario files as tests, and fixtures to render, simulate and assert from Python.

Registered through the ``pytest11`` entry point ``helmsim`` (or ``-p helmsim.pytest_plugin``).

* Every ``*.helmsim.yaml`` file pytest collects becomes one test per expectation; the scenario
  is simulated once per file. A failure shows expected vs simulated and the trace evidence.
* ``helmsim_simulate(chart, profile=..., values=..., faults=[...])`` simulates a chart (or a
  HelmRelease tree) and returns a :class:`SimRun`; ``SimRun.expect(...)`` asserts.
* ``helmsim_render(chart, values=...)`` renders with Helm's engine and returns the manifests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct
import pytest
from pydantic import TypeAdapter, ValidationError

from helmsim.errors import InputError
from helmsim.expectations import Checked, check, find_release
from helmsim.scenario import (
    is_scenario_name,
    Behaviour,
    Expectation,
    Fault,
    LoadedScenario,
    Scenario,
    load_scenario,
    run_scenario,
)
from helmsim.report.safe import safe_text
from helmsim.simulate import ReleaseOutcome, SimulationResult

_EXPECTATION: TypeAdapter[Any] = TypeAdapter(Expectation)


class ExpectationFailed(AssertionError):
    """An expectation that does not hold; ``checked`` has the evidence."""

    def __init__(self, checked: Checked) -> None:
        super().__init__(f"{checked.label}\n{checked.explain()}")
        self.checked = checked


class SimRun(Struct, frozen=True):
    """The result of ``helmsim_simulate``: the simulation and assertions over it."""

    result: SimulationResult
    scenario: LoadedScenario

    @property
    def trace(self) -> Any:
        return self.result.trace

    def release(self, name: str | None = None) -> ReleaseOutcome:
        """The outcome of HelmRelease ``name`` (``ns/name`` or ``name``; default: the first)."""
        if name is None:
            return self.result.releases[0]
        found = find_release(self.result, name)
        if found is None:
            have = ", ".join(f"{o.namespace}/{o.name}" for o in self.result.releases)
            raise KeyError(f"no HelmRelease {name!r} (have: {have})")
        return found

    def check(self, *expectations: Mapping[str, Any]) -> list[Checked]:
        """Check expectations written as in a scenario's ``expect`` list."""
        parsed = [_EXPECTATION.validate_python(dict(e)) for e in expectations]
        return check(parsed, self.result)

    def expect(self, expectation: Mapping[str, Any] | None = None, /, **fields: Any) -> Checked:
        """Assert one expectation (``run.expect(release="app", outcome="Ready")``)."""
        data = dict(expectation or {}) | fields
        if "from_" in data:
            data["from"] = data.pop("from_")
        try:
            checked = self.check(data)[0]
        except ValidationError as err:
            raise InputError(f"bad expectation {data!r}: {err.errors(include_url=False)[0]['msg']}") from None
        if not checked.passed:
            raise ExpectationFailed(checked)
        return checked


def simulate_chart(
    chart: str | Path | None = None,
    *,
    profile: str | Mapping[str, Any] = "kind",
    values: Mapping[str, Any] | None = None,
    values_files: Sequence[str | Path] = (),
    helmrelease: str | Path | Sequence[str | Path] = (),
    charts: Mapping[str, str] | None = None,
    upgrade_from: str | Mapping[str, Any] | None = None,
    faults: Sequence[Fault | Mapping[str, Any]] = (),
    behaviours: Sequence[Behaviour | Mapping[str, Any]] = (),
    catalog: Sequence[Mapping[str, Any]] = (),
    release_name: str | None = None,
    namespace: str = "default",
    horizon: float | str | None = None,
    seed: int = 0,
    sample_latencies: bool = False,
    base_dir: str | Path = ".",
) -> SimRun:
    """Simulate like a scenario file would (paths relative to ``base_dir``)."""
    hrs = [helmrelease] if isinstance(helmrelease, (str, Path)) else list(helmrelease)
    release: dict[str, Any] = {
        "helmRelease": [str(h) for h in hrs],
        "valuesFiles": [str(f) for f in values_files],
        "values": dict(values or {}),
        "charts": dict(charts or {}),
        "namespace": namespace,
    }
    if chart is not None:
        release["chart"] = str(chart)
    if release_name:
        release["releaseName"] = release_name
    if upgrade_from is not None:
        release["upgradeFrom"] = {"chart": upgrade_from} if isinstance(upgrade_from, str) else dict(upgrade_from)
    data: dict[str, Any] = {
        "apiVersion": "helmsim.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "helmsim_simulate"},
        "profile": profile if isinstance(profile, str) else dict(profile),
        "releases": [release],
        "faults": [f.model_dump(by_alias=True, exclude_none=True) if isinstance(f, Fault) else dict(f) for f in faults],
        "behaviours": [
            b.model_dump(by_alias=True, exclude_none=True) if isinstance(b, Behaviour) else dict(b) for b in behaviours
        ],
        "catalog": [dict(e) for e in catalog],
        "seed": seed,
        "sampleLatencies": sample_latencies,
    }
    if horizon is not None:
        data["horizon"] = horizon
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"helmsim_simulate: {where}: {first['msg']}") from None
    loaded = LoadedScenario(scenario, Path(base_dir).resolve() / "helmsim_simulate.helmsim.yaml")
    return SimRun(run_scenario(loaded), loaded)


@pytest.fixture
def helmsim_simulate() -> Callable[..., SimRun]:
    """``helmsim_simulate(chart, profile="kind", values={...}, faults=[...]) -> SimRun``."""
    return simulate_chart


@pytest.fixture
def helmsim_render() -> Callable[..., list[dict[str, Any]]]:
    """``helmsim_render(chart, values={...}, profile=None) -> [manifest, ...]`` (Helm's engine)."""

    def render_chart(
        chart: str | Path,
        *,
        values: Mapping[str, Any] | None = None,
        profile: str | None = None,
        release_name: str = "release-name",
        namespace: str = "default",
    ) -> list[dict[str, Any]]:
        from helmsim import render
        from helmsim.cluster.profile import load_profile
        from helmsim.inputs import load_release

        prof = load_profile(profile) if profile else None
        opts = render.RenderOptions(
            release_name=release_name,
            namespace=namespace,
            values=dict(values or {}),
            kube_version=prof.kubernetes_version if prof else None,
            api_versions=tuple(prof.capability_api_versions()) if prof else (),
        )
        rel = load_release(str(chart), opts)
        return [dict(r.body) for r in rel.parse(namespace).resources]

    return render_chart


# --- scenario files as tests -------------------------------------------------------------------


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if is_scenario_name(file_path.name):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    """A ``*.helmsim.yaml`` file: simulated once, one item per expectation."""

    _result: SimulationResult | None = None
    _checked: list[Checked] | None = None

    def collect(self) -> Iterator[pytest.Item]:
        try:
            self.loaded = load_scenario(self.path)
        except InputError as err:
            raise self.CollectError(str(err)) from None
        if not self.loaded.scenario.expect:
            yield ScenarioItem.from_parent(self, name=f"{self.loaded.name}: simulates", index=-1)
            return
        for i, exp in enumerate(self.loaded.scenario.expect):
            label = exp.name or f"expect[{i}]"
            yield ScenarioItem.from_parent(self, name=f"{self.loaded.name}: {label}", index=i)

    def checked(self) -> list[Checked]:
        if self._checked is None:
            self._result = run_scenario(self.loaded)
            lines = [self.loaded.line_of("expect", i) for i in range(len(self.loaded.scenario.expect))]
            self._checked = check(self.loaded.scenario.expect, self._result, lines)
        return self._checked


class ScenarioItem(pytest.Item):
    """One expectation of a scenario file."""

    def __init__(self, *, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index = index

    @property
    def scenario_file(self) -> ScenarioFile:
        assert isinstance(self.parent, ScenarioFile)
        return self.parent

    def runtest(self) -> None:
        try:
            checked = self.scenario_file.checked()
        except InputError as err:
            raise ScenarioInputError(str(err)) from None
        if self.index < 0:
            return
        result = checked[self.index]
        if not result.passed:
            raise ExpectationFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        err = excinfo.value
        if isinstance(err, ExpectationFailed):
            c = err.checked
            where = f"{self.path}:{c.line}: " if c.line else f"{self.path}: "
            return safe_text(f"{where}expectation failed: {c.label}\n{c.explain()}")
        if isinstance(err, ScenarioInputError):
            return safe_text(f"{self.path}: {err}")
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = None
        if self.index >= 0:
            found = self.scenario_file.loaded.line_of("expect", self.index)
            line = found - 1 if found else None
        return self.path, line, self.name


class ScenarioInputError(Exception):
    """The scenario could not be simulated (bad chart, values, profile …)."""


__all__ = ["ExpectationFailed", "SimRun", "helmsim_render", "helmsim_simulate", "simulate_chart"]
