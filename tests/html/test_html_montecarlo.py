"""`helmsim simulate --runs N --format html` (issue 9): the Monte-Carlo outcome histogram next to
the nominal (deterministic) timeline, checked without a browser against independent runs."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import pytest
from html_dom import parse
from typer.testing import CliRunner

from helmsim import montecarlo as mc
from helmsim.cli import app
from helmsim.cli.sampled import outcome_distributions, outcome_observations
from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import load_profile
from helmsim.report.html import OutcomeDistribution, render_html
from helmsim.simulate import simulate

ROOT = Path(__file__).resolve().parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
SLOW_POLICY = ROOT / "examples" / "scenarios" / "profiles" / "cilium-always-slow-policy.yaml"
WARMUP = ROOT / "examples" / "scenarios" / "seed1" / "values" / "long-warmup-values.yaml"
CONNECTIVITY = "agent-platform/agent-platform-connectivity"
RUNS, SEED = 20, 1
# A 170 s horizon cuts off the runs whose policy propagates late: some are Ready, others still
# Progressing, so the histogram has two bars.
HORIZON = 170.0
ARGS = [
    "simulate", str(SEED1), "--helmrelease", str(SEED1 / "flux"), "--profile", str(SLOW_POLICY),
    "-f", str(WARMUP), "--runs", str(RUNS), "--horizon", "170s",
]
runner = CliRunner()


def _releases():
    return build_inputs(
        str(SEED1), values=[str(WARMUP)], sets=[], helmrelease=[str(SEED1 / "flux")], charts=[],
        release_name=None, namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )


@cache
def independent_runs(seed: int) -> tuple[list[str], list[float]]:
    """Outcome and time to Ready of the connectivity release in each run, simulated here one by
    one with the seeds the report derives (montecarlo.run_seed), not through run_many."""
    prof, releases = load_profile(str(SLOW_POLICY)), _releases()
    outcomes, ready = [], []
    for i in range(RUNS):
        res = simulate(prof, releases, horizon=HORIZON, seed=mc.run_seed(seed, i), sample_latencies=True)
        o = next(o for o in res.releases if f"{o.namespace}/{o.name}" == CONNECTIVITY)
        outcomes.append(o.outcome)
        if o.outcome == "Ready":
            ready.append(o.ready_at)
    return outcomes, sorted(ready)


@cache
def cli_html(seed: int, tmp: str) -> tuple[int, str]:
    out = Path(tmp) / f"mc-{seed}.html"
    result = runner.invoke(app, [*ARGS, "--seed", str(seed), "--format", "html", "--output", str(out)])
    assert result.exit_code in (0, 1), result.output + result.stderr
    return result.exit_code, out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    return cli_html(SEED, str(tmp_path_factory.mktemp("mc")))


def test_histogram_bars_count_the_outcomes_of_the_sampled_runs(report: tuple[int, str]) -> None:
    _, text = report
    outcomes, _ = independent_runs(SEED)
    doc = parse(text)
    figures = [e for e in doc.elements if e.tag == "figure" and "histogram" in e.classes]
    # one histogram per simulated release; the unmapped (Blocked, not simulated) ones get none
    assert [f.attrs["data-release"] for f in figures] == [CONNECTIVITY]
    assert figures[0].attrs["data-profile"] == "cilium-always-slow-policy"
    rows = re.findall(r'<tr data-outcome="(\w+)">.*?style="width:([\d.]+)%".*?<td>(\d+) \((\d+)%\)</td></tr>', text)
    expected = [
        (k, f"{100 * n / RUNS:.1f}", str(n), f"{100 * n / RUNS:.0f}")
        for k in ("Ready", "Progressing")
        if (n := outcomes.count(k))
    ]
    assert rows == expected
    assert len(expected) == 2  # the horizon splits the runs, so both bars are really exercised


def test_time_to_ready_bars_bin_the_ready_runs(report: tuple[int, str]) -> None:
    _, text = report
    _, ready = independent_runs(SEED)
    lo, hi = ready[0], ready[-1]
    width = (hi - lo) / 10
    bins = [0] * 10
    for t in ready:
        bins[min(9, int((t - lo) / width))] += 1
    bars = [int(n) for n in re.findall(r"<rect [^>]*><title>t=[^<]*: (\d+) runs</title></rect>", text)]
    assert bars == bins and sum(bars) == len(ready)
    assert f"median t={_t(ready[len(ready) // 2])}s" in text
    assert f"range {_t(lo)}–{_t(hi)}s" in text


def _t(seconds: float) -> str:
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


def test_the_histogram_sits_beside_the_nominal_timeline(report: tuple[int, str]) -> None:
    _, text = report
    nominal = simulate(load_profile(str(SLOW_POLICY)), _releases(), horizon=HORIZON)  # nominal latencies
    got, want = parse(text), parse(render_html(nominal))
    assert [(ln.obj, ln.span_states()) for ln in got.lanes] == [(ln.obj, ln.span_states()) for ln in want.lanes]
    verdict = next(m for m in got.lanes[0].markers if m.attrs["data-what"] == "verdict")
    outcome = next(o for o in nominal.releases if f"{o.namespace}/{o.name}" == CONNECTIVITY).outcome
    assert f"Verdict: {outcome}" in verdict.attrs["data-msg"]
    timeline = text.index('<section class="timeline" id="tl-r0-agent-platform-agent-platform-connectivity"')
    side = text.index('<aside class="tl-side"', timeline)
    assert side < text.index(f'<figure class="histogram" data-release="{CONNECTIVITY}"') < text.index("</section>", side)
    assert "nominal latencies; histograms over 20 runs with sampled latencies, seed 1" in text


def test_exit_code_and_the_other_observations_match_the_json_report(report: tuple[int, str], tmp_path: Path) -> None:
    code, text = report
    result = runner.invoke(app, [*ARGS, "--seed", str(SEED), "--format", "json", "-o", str(tmp_path / "mc.json")])
    assert code == result.exit_code == 1  # a run still Progressing at the horizon
    stats = json.loads((tmp_path / "mc.json").read_text())["stats"]
    assert not any(s["group"].startswith("html ") for s in stats)  # the histogram data stays out of json
    doc = parse(text)
    findings = {" ".join(e.text.split()) for e in doc.elements if e.tag == "li" and "finding" in e.classes}
    shown = [s for s in stats if s["label"] != "outcome Ready" and "(not simulated)" not in s["group"]]
    assert len(shown) == len(findings) >= 4
    for s in shown:
        head = f"{s['label']}: {s['count']}/{s['runs']} runs ({100 * s['probability']:.2f} %"
        match = [f for f in findings if head in f]
        assert len(match) == 1, (head, findings)
        if "seed" in s:
            assert f"--runs 1 --seed {s['seed']}" in match[0]


def test_same_seed_same_bytes_another_seed_another_report(report: tuple[int, str], tmp_path: Path) -> None:
    _, text = report
    assert cli_html(SEED, str(tmp_path))[1] == text
    other = cli_html(2, str(tmp_path))[1]
    assert other != text
    outcomes, _ = independent_runs(2)
    assert f"{outcomes.count('Ready')} ({100 * outcomes.count('Ready') / RUNS:.0f}%)" in other


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--format html writes a file: add --output FILE"),
        (["--output", "/nonexistent-dir/mc.html"], "/nonexistent-dir/mc.html: the output directory does not exist"),
    ],
)
def test_bad_output_is_one_line_exit_2(extra: list[str], message: str) -> None:
    result = runner.invoke(app, [*ARGS[:-4], "--runs", "4", "--format", "html", *extra])
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


# --- the pieces ----------------------------------------------------------------------------------
def _result(*releases: tuple[str, str, float | None, bool]) -> SimpleNamespace:
    return SimpleNamespace(
        profile="p",
        releases=[
            SimpleNamespace(namespace="ns", name=name, outcome=outcome, ready_at=ready_at, simulated=simulated)
            for name, outcome, ready_at, simulated in releases
        ],
    )


def test_outcome_distributions_count_outcomes_and_expand_times_to_ready() -> None:
    runs = [
        _result(("a", "Ready", 12.5, True), ("b", "Blocked", None, False)),
        _result(("a", "Ready", 10.0, True), ("b", "Blocked", None, False)),
        _result(("a", "Stalled", None, True), ("b", "Blocked", None, False)),
        _result(("a", "Ready", 12.5, True), ("b", "Blocked", None, False)),
    ]
    report = mc.aggregate([(i, i, outcome_observations(r)) for i, r in enumerate(runs)], seed=0)
    [dist] = outcome_distributions(report, runs[0], run=3)  # b is not simulated: no histogram
    assert dist == OutcomeDistribution("ns/a", "p", {"Ready": 3, "Stalled": 1}, (10.0, 12.5, 12.5), 3)


def test_a_distribution_with_a_run_index_goes_to_that_run_only(race) -> None:
    dist = OutcomeDistribution(CONNECTIVITY, race.profile, {"Ready": 4, "Failed": 1}, run=1)
    text = render_html([race, race], distributions=[dist], run_titles=["first", "second"])
    assert text.count('<figure class="histogram"') == 1
    assert text.index('<figure class="histogram"') > text.index('id="run-1"')
    assert '<span class="run-title">first</span> · Profile' in text
    assert '<span class="run-title">second</span> · Profile' in text
    # without a run index it follows the profile: next to both runs' timelines
    both = render_html([race, race], distributions=[OutcomeDistribution(CONNECTIVITY, race.profile, {"Ready": 4})])
    assert both.count('<figure class="histogram"') == 2
