"""`helmsim check --runs N --seed S`: outcome probabilities per profile, races decided by the
sampled runs, reproducible seeds, and the figures in every output format."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import jsonschema
import pytest
import yaml
from junitparser import Failure, JUnitXml
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import ClusterProfile, load_profile, profile_from_mapping
from helmsim.diagnose.check import CheckOptions, CheckReport, run_check
from helmsim.diagnose.model import Severity
from helmsim.diagnose.runner import render_all
from helmsim.diagnose.sampling import SAMPLED, SamplingOptions, apply_sampling, sampled_run
from helmsim.montecarlo import run_seed, wilson
from helmsim.report import findings as text_report
from helmsim.simulate import ReleaseInput, simulate

ROOT = Path(__file__).resolve().parents[2]
HS101 = ROOT / "tests" / "fixtures" / "rules" / "HS101" / "failing"  # Job before its CNP
SARIF_SCHEMA = json.loads(
    (ROOT / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)
JOB = "Job/default/migrate"
RELEASE = "default/hs101"

# cilium-always where a policy reaches the agent after 0.5 s or after 150 s, equally likely.
# 150 s outlasts the Job's three 30 s connect attempts with back-off, so about half the sampled
# runs fail; the nominal value 0.5 s keeps the deterministic run Ready (the race is then only a
# tight-timing warning).
COIN = {
    "name": "coin-flip-policy",
    "description": "cilium-always, policy propagation 0.5 s or 150 s (test)",
    "extends": "cilium-always",
    "cni": {
        "policyPropagationSeconds": {"dist": "empirical", "samples": [0.5, 150], "nominal": 0.5}
    },
}
RUNS = 24


def coin() -> ClusterProfile:
    return profile_from_mapping(COIN, source="coin-flip-policy")


@cache
def releases() -> list[ReleaseInput]:
    return build_inputs(
        str(HS101),
        values=[],
        sets=[],
        helmrelease=[],
        charts=[],
        release_name=None,
        namespace="default",
        upgrade_from=None,
        upgrade_from_values=[],
        upgrade_from_set=[],
    )


def check(
    profiles: list[ClusterProfile], runs: int, seed: int, workers: int | None = 1
) -> CheckReport:
    return run_check(
        releases(),
        profiles,
        options=CheckOptions(
            verify_fixes=False, sampling=SamplingOptions(runs, seed, workers=workers)
        ),
    )


@cache
def coin_report() -> CheckReport:
    return check([coin()], RUNS, 7)


# --- the distribution and the race -----------------------------------------------------------------
def test_each_outcome_has_a_probability_interval_and_a_failing_seed() -> None:
    sampling = coin_report().sampling
    assert sampling is not None and (sampling.runs, sampling.seed) == (RUNS, 7)
    dist = sampling.distribution(RELEASE, "coin-flip-policy")
    assert dist is not None and dist.runs == RUNS
    assert sum(s.count for s in dist.outcomes) == RUNS
    counts = dist.counts
    assert counts.get("Ready", 0) > 0 and counts.get("Stalled", 0) > 0  # both sides of the coin
    seeds = {run_seed(7, i) for i in range(RUNS)}
    for s in dist.outcomes:
        assert s.interval == wilson(s.count, RUNS)
        assert s.interval[0] <= s.probability <= s.interval[1]
        # a non-Ready outcome names one of the report's run seeds; Ready needs none
        assert (s.seed in seeds) if s.label != "Ready" else s.seed is None


def test_a_race_that_fails_sampled_runs_becomes_an_error_with_its_figures() -> None:
    report = coin_report()
    [finding] = [f for f in report.findings if f.rule == "HS101"]
    assert finding.severity is Severity.error
    [occ] = finding.occurrences
    assert occ.variant == SAMPLED
    race = report.sampling.race("coin-flip-policy", "HS101", JOB)  # type: ignore[union-attr]
    assert race is not None and 0 < race.fails.count <= race.denied.count <= RUNS
    lo, hi = race.fails.interval
    assert (
        f"fails in {race.fails.count}/{RUNS} sampled runs ({100 * race.fails.probability:.2f} %, "
        f"95 % [{100 * lo:.2f} %, {100 * hi:.2f} %])" in occ.message
    )
    assert occ.message.endswith(
        f"replay: helmsim simulate … -p coin-flip-policy --runs 1 --seed {race.fails.seed}"
    )
    # the chain is the failing run's: the Job gives up before its policy is in effect
    texts = [s.text for s in occ.chain]
    assert any("BackoffLimitExceeded" in t for t in texts)
    assert not any(t == "in effect" for t in texts)
    assert report.at_or_above("error") == [finding]


def test_the_replay_seed_reproduces_the_failing_run() -> None:
    race = coin_report().sampling.race("coin-flip-policy", "HS101", JOB)  # type: ignore[union-attr]
    assert race is not None and race.fails.seed is not None
    result = simulate(coin(), releases(), seed=race.fails.seed, sample_latencies=True)
    assert result.releases[0].outcome == "Stalled"
    # check itself replays it with --runs 1: that one run is the given seed, not a derived one
    one = check([coin()], 1, race.fails.seed)
    assert one.sampling is not None
    dist = one.sampling.distribution(RELEASE, "coin-flip-policy")
    assert dist is not None and dist.counts == {"Stalled": 1}
    assert [f.severity for f in one.findings if f.rule == "HS101"] == [Severity.error]


def test_a_race_that_never_fails_stays_a_warning_and_says_so() -> None:
    # cilium-always: policies propagate within 0.1–2 s, inside the SYN retransmissions
    report = check([load_profile("cilium-always")], 12, 3)
    [finding] = [f for f in report.findings if f.rule == "HS101"]
    assert finding.severity is Severity.warning
    assert "fails in 0/12 sampled runs (0.00 %, 95 % [0.00 %, 24.25 %])" in finding.message
    dist = report.sampling.distribution(RELEASE, "cilium-always")  # type: ignore[union-attr]
    assert dist is not None and dist.counts == {"Ready": 12}
    assert report.at_or_above("error") == []


def test_a_race_seen_only_in_sampled_runs_gets_a_finding_from_its_run() -> None:
    sampling = coin_report().sampling
    assert sampling is not None
    profile = coin()
    charts = render_all(profile, releases())
    added = apply_sampling(
        [],
        profile.name,
        sampling,
        lambda seed: sampled_run(profile, releases(), charts, seed, 3600),
    )
    [cand] = added
    assert (cand.rule, cand.obj, cand.severity, cand.variant) == (
        "HS101",
        JOB,
        Severity.error,
        SAMPLED,
    )
    assert "fails in" in cand.message and cand.chain


def test_a_race_that_a_retry_absorbs_still_counts_its_failed_first_attempts(tmp_path: Path) -> None:
    # the same chart under a HelmRelease with install retries: helm-controller uninstalls and
    # retries, and a retry draws a new propagation delay, so most failed first attempts recover
    hr = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "hs101", "namespace": "default"},
        "spec": {
            "interval": "10m",
            "chart": {
                "spec": {"chart": "hs101", "sourceRef": {"kind": "HelmRepository", "name": "r"}}
            },
            "install": {"remediation": {"retries": 3}},
        },
    }
    (tmp_path / "hr.yaml").write_text(yaml.safe_dump(hr), encoding="utf-8")
    inputs = build_inputs(
        str(HS101),
        values=[],
        sets=[],
        helmrelease=[str(tmp_path / "hr.yaml")],
        charts=[],
        release_name=None,
        namespace="default",
        upgrade_from=None,
        upgrade_from_values=[],
        upgrade_from_set=[],
    )
    report = run_check(
        inputs,
        [coin()],
        options=CheckOptions(verify_fixes=False, sampling=SamplingOptions(RUNS, 7, workers=1)),
    )
    race = report.sampling.race("coin-flip-policy", "HS101", JOB)  # type: ignore[union-attr]
    assert race is not None and race.fails.count < race.first_attempt.count <= race.denied.count
    dist = report.sampling.distribution(RELEASE, "coin-flip-policy")  # type: ignore[union-attr]
    assert dist is not None and dist.first_attempt_failed is not None
    assert dist.first_attempt_failed.count == race.first_attempt.count
    assert dist.counts["Ready"] > RUNS - race.first_attempt.count  # retries recovered some
    [finding] = [f for f in report.findings if f.rule == "HS101"]
    assert f"its first attempt in {race.first_attempt.count}/{RUNS}" in finding.message


# --- reproducible -----------------------------------------------------------------------------------
def test_same_seed_same_bytes_whatever_the_number_of_workers() -> None:
    one = check([coin()], RUNS, 7, workers=1)
    two = check([coin()], RUNS, 7, workers=2)  # forkserver worker processes
    assert text_report.to_json(one, fail_on="error") == text_report.to_json(two, fail_on="error")
    assert text_report.sampling_lines(one.sampling) == text_report.sampling_lines(two.sampling)  # type: ignore[arg-type]


# --- outputs -------------------------------------------------------------------------------------------
runner = CliRunner()


@pytest.fixture
def coin_file(tmp_path: Path) -> Path:
    path = tmp_path / "coin-flip-policy.yaml"
    path.write_text(yaml.safe_dump(COIN), encoding="utf-8")
    return path


def cli(coin_file: Path, *extra: str) -> tuple[int, str, str]:
    args = [
        "check",
        str(HS101),
        "-p",
        str(coin_file),
        "--no-verify",
        "--runs",
        "16",
        "--seed",
        "5",
        *extra,
    ]
    result = runner.invoke(app, args)
    return result.exit_code, result.stdout, result.stderr


def test_json_carries_the_documented_monte_carlo_block(coin_file: Path) -> None:
    code, out, err = cli(coin_file, "--format", "json")
    assert code == 1, err
    doc = json.loads(out)
    mc = doc["monteCarlo"]
    assert (mc["runs"], mc["seed"]) == (16, 5)
    [dist] = mc["distributions"]
    assert (dist["release"], dist["profile"], dist["runs"], dist["simulated"]) == (
        RELEASE,
        "coin-flip-policy",
        16,
        True,
    )
    assert sum(o["count"] for o in dist["outcomes"]) == 16
    assert [o["outcome"] for o in dist["outcomes"]] == ["Ready", "Stalled"]
    assert "seed" in dist["outcomes"][1] and "seed" not in dist["outcomes"][0]
    [race] = mc["races"]
    assert (race["rule"], race["object"]) == ("HS101", JOB) and race["fails"]["count"] > 0
    [finding] = [f for f in doc["findings"] if f["rule"] == "HS101"]
    assert finding["severity"] == "error" and finding["occurrences"][0]["variant"] == "sampled"
    figures = {k: race[k] for k in ("denied", "firstAttemptFailed", "fails")}
    assert finding["monteCarlo"] == [{"profile": "coin-flip-policy", **figures}]
    # the replay command names the profile as it was given
    assert f"-p {coin_file} --runs 1 --seed {race['fails']['seed']}" in finding["message"]
    # identical bytes on a second run
    assert cli(coin_file, "--format", "json")[1] == out


def test_without_runs_the_json_has_no_monte_carlo_block(coin_file: Path) -> None:
    result = runner.invoke(
        app, ["check", str(HS101), "-p", str(coin_file), "--no-verify", "--format", "json"]
    )
    doc = json.loads(result.stdout)
    assert "monteCarlo" not in doc
    assert [f["severity"] for f in doc["findings"] if f["rule"] == "HS101"] == ["warning"]
    assert result.exit_code == 0


def test_sarif_carries_the_figures_in_property_bags_and_validates(coin_file: Path) -> None:
    code, out, err = cli(coin_file, "--format", "sarif")
    assert code == 1, err
    log = json.loads(out)
    jsonschema.validate(log, SARIF_SCHEMA)
    [run_] = log["runs"]
    assert run_["invocations"][0]["properties"]["monteCarlo"] == {"runs": 16, "seed": 5}
    [result] = [r for r in run_["results"] if r["ruleId"] == "HS101"]
    assert result["level"] == "error"
    mc = result["properties"]["monteCarlo"]
    assert mc["outcomes"][0]["profile"] == "coin-flip-policy"
    assert sum(o["count"] for o in mc["outcomes"][0]["outcomes"]) == 16
    assert mc["races"][0]["fails"]["count"] > 0


def test_junit_parses_with_the_figures_as_properties_and_output(
    coin_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "check.xml"
    code, _, err = cli(coin_file, "--format", "junit", "--output", str(out))
    assert code == 1, err
    [suite] = list(JUnitXml.fromfile(str(out)))
    props = {p.name: p.value for p in suite.properties()}
    assert props["helmsim.monteCarlo.runs"] == "16" and props["helmsim.monteCarlo.seed"] == "5"
    ready, stalled = (props[f"helmsim.monteCarlo.{RELEASE}.{o}"] for o in ("Ready", "Stalled"))
    shape = re.compile(r"^(\d+)/16 \(\d+\.\d\d %, 95 % \[\d+\.\d\d %, \d+\.\d\d %\]\)$")
    assert (m := shape.match(ready)) and (n := shape.match(stalled))
    assert int(m[1]) + int(n[1]) == 16
    [case] = list(suite)
    assert isinstance(case.result[0], Failure) and case.result[0].type == "HS101"
    assert "sampled (16 runs): Ready " in case.system_out and "Stalled " in case.system_out


def test_text_shows_the_distribution_and_the_summary_cell(coin_file: Path) -> None:
    code, out, _ = cli(coin_file)
    assert code == 1
    assert "Monte Carlo: 16 sampled runs per profile, seed 5" in out
    assert f"{RELEASE} under coin-flip-policy" in out
    assert "HS101 Job/default/migrate fails the release" in out
    assert "% not Ready) HS101" in out  # the nominal Ready cell says how often it is not
    assert "(error, Ready, sampled run)" in out


def test_html_shows_the_outcome_histogram(coin_file: Path, tmp_path: Path) -> None:
    target = tmp_path / "check.html"
    code, _, err = cli(coin_file, "--format", "html", "--output", str(target))
    assert code == 1, err
    html = target.read_text(encoding="utf-8")
    assert f'data-release="{RELEASE}" data-profile="coin-flip-policy"' in html
    assert '<tr data-outcome="Stalled">' in html


def test_unknown_backend_is_bad_input(coin_file: Path) -> None:
    code, _, err = cli(coin_file, "--backend", "gpu")
    assert code == 2 and "--backend 'gpu': expected local or ray" in err
