"""``helmsim test``: run scenario files and check their expectations (text, JUnit XML or HTML).

Exit code 0 when every expectation holds, 1 when one does not, 2 on bad input.
"""

from __future__ import annotations

import fnmatch
import xml.etree.ElementTree as ET
from collections.abc import Callable
from enum import Enum
from functools import lru_cache
from typing import Annotated, Any

from msgspec import Struct
import typer

from helmsim import montecarlo as mc
from helmsim import taskpool
from helmsim.cli import options
from helmsim.cli.app import command, console, emit
from helmsim.cli.sampled import outcome_distributions, outcome_observations
from helmsim.errors import InputError
from helmsim.expectations import Checked, check, find_release
from helmsim.scenario import (
    ConnectionExpect,
    EventExpect,
    LoadedScenario,
    ObjectExpect,
    ReleaseExpect,
    discover,
    load_scenario,
    prepare,
    run_prepared,
)
from helmsim.report.safe import safe_text, safe_xml
from helmsim.simulate import SimulationResult


class TestFormat(str, Enum):
    text = "text"
    junit = "junit"
    html = "html"


class ScenarioReport(Struct, frozen=True):
    """One scenario's checked expectations (for Monte Carlo: pass rates in ``checked``).

    ``result`` is the run the HTML timeline shows (for Monte Carlo: the nominal run, kept only
    when asked for); ``histograms`` the Monte-Carlo outcome counts behind its histograms.
    """

    loaded: LoadedScenario
    checked: tuple[Checked, ...]
    monte_carlo: tuple[mc.Stat, ...] = ()
    result: SimulationResult | None = None
    histograms: mc.Report | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checked)


def expectation_lines(loaded: LoadedScenario) -> list[int | None]:
    return [loaded.line_of("expect", i) for i in range(len(loaded.scenario.expect))]


def run_once(loaded: LoadedScenario, *, seed: int | None = None, sample: bool | None = None) -> ScenarioReport:
    """Simulate the scenario once and check it."""
    result = run_prepared(prepare(loaded), seed=seed, sample_latencies=sample)
    return ScenarioReport(
        loaded, tuple(check(loaded.scenario.expect, result, expectation_lines(loaded))), result=result
    )


# --- Monte Carlo -----------------------------------------------------------------------------------


@lru_cache(maxsize=16)
def _prepared(path: str) -> Any:
    loaded = load_scenario(path)
    return loaded, prepare(loaded)


class ScenarioTask(Struct, frozen=True):
    """One run of a scenario with sampled latencies: which expectations fail (picklable);
    with ``outcomes``, also each release's outcome and time to Ready (for the HTML histograms)."""

    path: str
    outcomes: bool = False

    def __call__(self, seed: int) -> tuple[mc.Observation, ...]:
        loaded, prepared = _prepared(self.path)
        result = run_prepared(prepared, seed=seed, sample_latencies=True)
        verdicts = tuple(
            mc.Observation(loaded.name, f"#{i} {c.label}", not c.passed, True)
            for i, c in enumerate(check(loaded.scenario.expect, result))
        )
        return verdicts + outcome_observations(result) if self.outcomes else verdicts


def run_monte_carlo(
    loaded: LoadedScenario,
    runs: int,
    seed: int,
    backend: str | taskpool.Backend = "local",
    *,
    timeline: bool = False,
) -> ScenarioReport:
    """Each expectation must hold in every run (or in ``minProbability`` of them).

    With ``timeline``, the report also carries the nominal (deterministic) run and the
    outcome counts for the HTML report.
    """
    task = ScenarioTask(str(loaded.path), outcomes=timeline)
    where = backend if isinstance(backend, taskpool.Backend) else taskpool.Backend(backend)  # type: ignore[arg-type]
    report = mc.run_many(task, runs, seed, backend=where)
    mine = tuple(s for s in report.stats if s.group == loaded.name)
    lines = expectation_lines(loaded)
    checked = []
    for i, exp in enumerate(loaded.scenario.expect):
        fails = next((s for s in mine if s.label.startswith(f"#{i} ")), None)
        count = fails.count if fails else 0
        label = fails.label.split(" ", 1)[1] if fails else f"expectation {i}"
        holds = runs - count
        lo, hi = mc.wilson(holds, runs)
        need = exp.min_probability
        ok = count == 0 if need is None else holds / runs >= need
        expected = "holds in every run" if need is None else f"holds in at least {100 * need:g} % of runs"
        simulated = (
            f"holds in {holds}/{runs} runs ({100 * holds / runs:.2f} %, 95 % interval "
            f"[{100 * lo:.2f} %, {100 * hi:.2f} %])"
        )
        if fails is not None and fails.seed is not None and count:
            simulated += f"; fails e.g. with --runs 1 --seed {fails.seed}"
        checked.append(Checked(label, ok, expected, simulated, (), lines[i]))
    if not timeline:
        return ScenarioReport(loaded, tuple(checked), mine)
    nominal = run_prepared(_prepared(str(loaded.path))[1], sample_latencies=False)
    return ScenarioReport(loaded, tuple(checked), mine, result=nominal, histograms=report)


# --- output ----------------------------------------------------------------------------------------


def render_text(reports: list[ScenarioReport]) -> str:
    out: list[str] = []
    total = sum(len(r.checked) for r in reports)
    failed = sum(1 for r in reports for c in r.checked if not c.passed)
    for r in reports:
        out.append(f"{'PASS' if r.passed else 'FAIL'} {r.loaded.name} ({r.loaded.path})")
        for c in r.checked:
            out.append(f"  {'ok  ' if c.passed else 'FAIL'} {c.label}")
            if not c.passed:
                where = f"{r.loaded.path}:{c.line}: " if c.line else ""
                out.append(f"       {where}expectation failed")
                out.extend("       " + line for line in c.explain().splitlines())
    bad = sum(1 for r in reports if not r.passed)
    out.append("")
    out.append(
        f"{len(reports)} scenario(s), {total} expectation(s): {total - failed} passed, {failed} failed"
        + (f" ({bad} scenario(s) failing)" if bad else "")
    )
    return "\n".join(out) + "\n"


def render_junit(reports: list[ScenarioReport]) -> str:
    """JUnit XML: one testsuite per scenario, one testcase per expectation."""
    root = ET.Element("testsuites", name="helmsim test")
    total = failures = 0
    for r in reports:
        suite = ET.SubElement(
            root,
            "testsuite",
            name=r.loaded.name,
            tests=str(len(r.checked)),
            failures=str(sum(1 for c in r.checked if not c.passed)),
            errors="0",
            skipped="0",
            time="0",
            file=str(r.loaded.path),
        )
        for c in r.checked:
            case = ET.SubElement(suite, "testcase", classname=r.loaded.name, name=c.label, time="0", file=str(r.loaded.path))
            if c.line:
                case.set("line", str(c.line))
            if not c.passed:
                fail = ET.SubElement(case, "failure", message=f"expected {c.expected}; simulated {c.simulated}", type="ExpectationFailed")
                fail.text = c.explain()
        total += len(r.checked)
        failures += sum(1 for c in r.checked if not c.passed)
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", "0")
    ET.indent(root)
    safe_xml(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_html_report(reports: list[ScenarioReport], *, runs: int = 0, seed: int = 0) -> str:
    """One HTML page: per scenario its timeline, its expectations as findings (a failed one an
    error with its evidence as the chain, a passed one a note) and, with Monte Carlo, the
    outcome histograms next to the nominal timeline."""
    from helmsim.report.html import Finding, render_html

    results: list[SimulationResult] = []
    findings: list[Finding] = []
    dists = []
    titles = []
    for r, rep in enumerate(reports):
        if rep.result is None:  # pragma: no cover - the CLI keeps every run for HTML
            raise ValueError(f"scenario {rep.loaded.name}: no run to draw")
        results.append(rep.result)
        title = f"{'PASS' if rep.passed else 'FAIL'} scenario {rep.loaded.name} ({rep.loaded.path})"
        if rep.histograms is not None:
            title += f": timeline with nominal latencies, expectations and outcomes over {runs} runs (seed {seed})"
        elif runs == 1:
            title += f": one run with sampled latencies (seed {seed})"
        titles.append(title)
        for i, c in enumerate(rep.checked):
            where = f" ({rep.loaded.path}:{c.line})" if c.line else ""
            findings.append(
                Finding(
                    title=f"{'ok' if c.passed else 'FAIL'} {c.label}",
                    message=f"expected {c.expected}; simulated {c.simulated}{where}",
                    severity="note" if c.passed else "error",
                    chain=tuple(e.id for e in c.evidence),
                    objects=_cited(rep.loaded.scenario.expect[i], rep.result),
                    id=f"S{r + 1}-E{i + 1}",
                    run=r,
                )
            )
        if rep.histograms is not None:
            dists.extend(outcome_distributions(rep.histograms, rep.result, run=r))
    total = sum(len(r.checked) for r in reports)
    failed = sum(1 for r in reports for c in r.checked if not c.passed)
    page = f"helmsim test: {len(reports)} scenario(s), {total} expectation(s): {total - failed} passed, {failed} failed"
    return render_html(results, title=page, findings=findings, distributions=dists, run_titles=titles)


MAX_CITED = 5


def _cited(exp: Any, result: SimulationResult) -> tuple[str, ...]:
    """The objects (lanes) an expectation is about: its HelmRelease, or what its glob matches."""
    if isinstance(exp, ReleaseExpect):
        o = find_release(result, exp.release)
        return (f"HelmRelease/{o.namespace}/{o.name}",) if o else ()
    cited: dict[type, Callable[[Any], str | None]] = {
        ObjectExpect: lambda e: e.object,
        EventExpect: lambda e: e.object,
        ConnectionExpect: lambda e: e.from_,
    }
    pattern = cited.get(type(exp), lambda e: None)(exp)
    if not pattern:
        return ()
    seen = dict.fromkeys(e.obj for e in result.trace)
    return tuple(sorted(o for o in seen if fnmatch.fnmatchcase(o, pattern))[:MAX_CITED])


@command("test")
def test_cmd(
    targets: Annotated[list[str], typer.Argument(help="Scenario files, or directories searched for *.helmsim.yaml.", metavar="SCENARIO|DIR...")],
    fmt: Annotated[TestFormat, typer.Option("--format", help="Output format (html: the timelines, needs --output).")] = TestFormat.text,
    output: Annotated[str | None, typer.Option("--output", "-o", help="Write the report to this file instead of stdout.", metavar="FILE")] = None,
    runs: Annotated[int, typer.Option("--runs", help="Monte Carlo: runs per scenario with sampled latencies (1: one sampled run with --seed).", min=0)] = 0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sampled runs (with --runs).")] = 0,
    backend: options.Backend = "local",
    ray_address: options.RayAddress = None,
) -> None:
    """Run scenario files and check every expectation, with the trace as evidence.

    Exit code 0 when every expectation holds, 1 when one fails, 2 on bad input.

    Examples:

      helmsim test examples/scenarios/seed1
      helmsim test examples/scenarios --format junit -o scenarios.xml
    """
    where = options.backend(backend, ray_address)
    html = fmt is TestFormat.html
    if html and not output:
        raise InputError("--format html writes a file: add --output FILE (or --output - for stdout)")
    files = discover(targets)
    if not files:
        raise InputError(f"no scenario files (*.helmsim.yaml) in {', '.join(targets)}")
    loaded = [load_scenario(f) for f in files]  # validate every file before running any
    reports = []
    for sc in loaded:
        if runs >= 2:
            reports.append(run_monte_carlo(sc, runs, seed, where, timeline=html))
        elif runs == 1:
            reports.append(run_once(sc, seed=seed, sample=True))
        else:
            reports.append(run_once(sc))
    if html:
        text = render_html_report(reports, runs=runs, seed=seed)
    else:
        text = render_junit(reports) if fmt is TestFormat.junit else safe_text(render_text(reports))
    emit(text, output)
    if output and output != "-":
        console.print(f"{'PASS' if all(r.passed for r in reports) else 'FAIL'}: report written to {output}")
    if not all(r.passed for r in reports):
        raise typer.Exit(1)
