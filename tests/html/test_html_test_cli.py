"""`helmsim test --format html` (issues 7 and 9): one timeline per scenario, the expectations as
findings (a failure with its trace evidence as the chain), and with --runs the outcome histogram."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from html_dom import parse
from typer.testing import CliRunner

from helmsim import montecarlo as mc
from helmsim.cli import app
from helmsim.expectations import check
from helmsim.scenario import discover, load_scenario, prepare, run_prepared, run_scenario

ROOT = Path(__file__).resolve().parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
SEED2 = ROOT / "examples" / "seed2-hf-cache"
SCENARIOS = ROOT / "examples" / "scenarios"
BROKEN_KIND = SCENARIOS / "seed2" / "broken-kind.helmsim.yaml"
runner = CliRunner()

# Seed 2 on kind with a wrong expectation (the release is Stalled, not Ready) and a right one.
WRONG = f"""\
apiVersion: helmsim.dev/v1alpha1
kind: Scenario
metadata:
  name: seed2-expects-ready-on-kind
profile: kind
releases:
  - chart: {SEED2}
    helmRelease: {SEED2 / "flux"}
    valuesFiles: [{SEED2 / "ci" / "default-values.yaml"}]
expect:
  - release: agent-platform/model-manager
    outcome: Blocked
  - release: agent-platform/agent-platform-connectivity
    outcome: Ready
"""

# Seed 1 with a slowly propagating policy, cut at 170 s: some runs Ready, some still Progressing.
MONTE_CARLO = f"""\
apiVersion: helmsim.dev/v1alpha1
kind: Scenario
metadata:
  name: seed1-slow-policy-mc
profile: {SCENARIOS / "profiles" / "cilium-always-slow-policy.yaml"}
horizon: 170s
releases:
  - chart: {SEED1}
    helmRelease: {SEED1 / "flux"}
    valuesFiles: [{SCENARIOS / "seed1" / "values" / "long-warmup-values.yaml"}]
expect:
  - release: agent-platform/agent-platform-connectivity
    outcome: Ready
    minProbability: 0.5
  - release: agent-platform/agent-platform-connectivity
    outcome: Ready
"""


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def _findings(doc) -> dict[str, str]:
    """Finding DOM id → its text (whitespace folded)."""
    return {e.attrs["id"]: " ".join(e.text.split()) for e in doc.elements if e.tag == "li" and "finding" in e.classes}


def _headings(text: str) -> list[str]:
    return re.findall(r'<span class="run-title">([^<]*)</span>', text)


@cache
def _html(tmp: str, *args: str) -> tuple[int, str, str]:
    out = Path(tmp) / "report.html"
    result = runner.invoke(app, ["test", *args, "--format", "html", "--output", str(out)])
    return result.exit_code, out.read_text(encoding="utf-8") if out.exists() else "", result.stdout


# --- every scenario passes ---------------------------------------------------------------------
def test_one_timeline_per_scenario_with_its_verdict_and_expectations(tmp_path: Path) -> None:
    code, text, stdout = _html(str(tmp_path), str(SCENARIOS / "seed2"))
    assert code == 0 and stdout == f"PASS: report written to {tmp_path / 'report.html'}\n"
    files = discover([SCENARIOS / "seed2"])
    names = [load_scenario(f).name for f in files]
    assert _headings(text) == [f"PASS scenario {n} ({f})" for n, f in zip(names, files, strict=True)]
    # each scenario's run has its own timelines; the profile in each heading is the scenario's
    for r, f in enumerate(files):
        profile = load_scenario(f).scenario.profile
        assert re.search(rf'<h2 id="run-{r}-h">.*?Profile <code>{profile}</code>', text)
        assert f'id="tl-r{r}-agent-platform-agent-platform-connectivity"' in text
    # the expectations are notes saying "ok", with the same labels as the text report
    labels = re.findall(r"^  ok   (.*)$", runner.invoke(app, ["test", str(SCENARIOS / "seed2")]).stdout, re.MULTILINE)
    found = _findings(parse(text))
    assert len(found) == len(labels) == sum(len(load_scenario(f).scenario.expect) for f in files)
    for (fid, body), label in zip(sorted(found.items(), key=lambda kv: _order(kv[0])), labels, strict=True):
        assert f"note: ok {label}" in body, (fid, body)
    assert 'class="finding sev-fail"' not in text
    assert "http://" not in text and "https://" not in text  # self-contained


def _order(finding_id: str) -> tuple[int, int]:
    s, e = re.fullmatch(r"finding-S(\d+)-E(\d+)", finding_id).groups()
    return int(s), int(e)


def test_verdicts_in_the_timeline_are_each_scenarios_outcome(tmp_path: Path) -> None:
    _, text, _ = _html(str(tmp_path), str(SCENARIOS / "seed2"))
    sections = text.split('<section class="run" id="run-')[1:]
    files = discover([SCENARIOS / "seed2"])
    assert len(sections) == len(files)
    for section, f in zip(sections, files, strict=True):
        outcome = next(o for o in run_scenario(load_scenario(f)).releases if o.name == "agent-platform-connectivity")
        assert load_scenario(f).name in section
        assert re.findall(r"Verdict at t=[\d.]+s: (\w+)</strong>", section)[0] == outcome.outcome


# --- a wrong expectation -----------------------------------------------------------------------
def test_a_failed_expectation_is_an_error_whose_chain_links_its_evidence(tmp_path: Path) -> None:
    wrong = _write(tmp_path, "wrong.helmsim.yaml", WRONG)
    code, text, stdout = _html(str(tmp_path), str(BROKEN_KIND), str(wrong))
    assert code == 1 and stdout.startswith("FAIL: report written to")
    assert _headings(text) == [
        f"PASS scenario seed2-broken-kind ({BROKEN_KIND})",
        f"FAIL scenario seed2-expects-ready-on-kind ({wrong})",
    ]
    doc = parse(text)
    found = _findings(doc)
    body = found["finding-S2-E2"]
    assert "S2-E2 · error: FAIL HelmRelease agent-platform/agent-platform-connectivity is Ready" in body
    line = load_scenario(wrong).line_of("expect", 1)
    assert "expected outcome Ready; simulated outcome Stalled" in body and f"({wrong}:{line})" in body
    assert "note: ok HelmRelease agent-platform/model-manager is Blocked" in found["finding-S2-E1"]
    assert 'id="finding-S2-E2"' in text and 'class="finding sev-fail" id="finding-S2-E2"' in text
    # both scenarios use profile kind: the finding still sits under (and links into) the second run
    assert text.index('id="finding-S2-E2"') > text.index('id="run-1"')
    loaded = load_scenario(wrong)
    [_, failed] = check(loaded.scenario.expect, run_scenario(loaded))
    assert not failed.passed and failed.evidence
    start = text.index('id="finding-S2-E2"')
    item = text[start : text.index("</li></ol></section>", start)]
    steps = re.findall(r'<li>(?:<a href="#([^"]+)"[^>]*>)?([^<]*)', item.split('class="chain"', 1)[1])
    assert len(steps) == len(failed.evidence)  # one step per evidence event, cause first
    markers = {m.attrs["id"]: m for ln in doc.lanes for m in ln.markers}
    linked = [href for href, _ in steps if href]
    assert linked and all(h.startswith("ev-r1-") and h in markers for h in linked)
    for ev, (href, step) in zip(failed.evidence, steps, strict=True):
        assert step.startswith(f"t={ev.time:.3f}".rstrip("0").rstrip(".") + f"s {ev.obj}: ")
        if href:
            assert str(ev.id) in markers[href].attrs["data-ids"].split()
    # the HelmRelease's lane in the second run links back to the finding
    assert "#finding-S2-E2" in doc.hrefs


# --- Monte Carlo -------------------------------------------------------------------------------
def test_runs_show_pass_rates_and_the_outcome_histogram_beside_the_nominal_timeline(tmp_path: Path) -> None:
    sc = _write(tmp_path, "mc.helmsim.yaml", MONTE_CARLO)
    code, text, _ = _html(str(tmp_path), str(sc), "--runs", "20", "--seed", "1")
    assert code == 1  # "Ready in every run" does not hold
    prepared = prepare(load_scenario(sc))
    outcomes = [
        next(o.outcome for o in run_prepared(prepared, seed=mc.run_seed(1, i), sample_latencies=True).releases
             if o.name == "agent-platform-connectivity")
        for i in range(20)
    ]
    ready = outcomes.count("Ready")
    assert 10 <= ready < 20  # both expectations are really exercised: one holds, one fails
    rows = re.findall(r'<tr data-outcome="(\w+)">.*?<td>(\d+) \(\d+%\)</td></tr>', text)
    assert rows == [("Ready", str(ready)), ("Progressing", str(20 - ready))]
    found = _findings(parse(text))
    assert f"holds in {ready}/20 runs" in found["finding-S1-E1"] and "note: ok" in found["finding-S1-E1"]
    assert f"holds in {ready}/20 runs" in found["finding-S1-E2"] and "error: FAIL" in found["finding-S1-E2"]
    assert "--runs 1 --seed " in found["finding-S1-E2"]  # a replayable failing run
    # the histogram is in the side panel of the nominal run's timeline
    nominal = run_prepared(prepared, sample_latencies=False)
    verdict = next(o for o in nominal.releases if o.name == "agent-platform-connectivity").outcome
    assert text.index('<aside class="tl-side"') < text.index('<figure class="histogram"')
    assert f": {verdict}</strong>" in text
    heading = f"FAIL scenario seed1-slow-policy-mc ({sc}): timeline with nominal latencies, expectations and "
    assert _headings(text) == [heading + "outcomes over 20 runs (seed 1)"]
    # same seed, same bytes
    again = tmp_path / "again"
    again.mkdir()
    assert _html(str(again), str(sc), "--runs", "20", "--seed", "1")[1] == text


# --- output ------------------------------------------------------------------------------------
def test_dash_writes_the_html_to_stdout() -> None:
    result = runner.invoke(app, ["test", str(BROKEN_KIND), "--format", "html", "-o", "-"])
    assert result.exit_code == 0
    assert result.stdout.startswith("<!DOCTYPE html>") and "PASS scenario seed2-broken-kind" in result.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--format html writes a file: add --output FILE"),
        (["--output", "/nonexistent-dir/t.html"], "/nonexistent-dir/t.html: the output directory does not exist"),
    ],
)
def test_bad_output_is_one_line_exit_2(extra: list[str], message: str) -> None:
    result = runner.invoke(app, ["test", str(BROKEN_KIND), "--format", "html", *extra])
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
