"""`helmsim check` end to end: the seed incidents, their fixes, every output format, config."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from junitparser import Failure, JUnitXml, Skipped
from typer.testing import CliRunner

from helmsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
SEED2 = ROOT / "examples" / "seed2-hf-cache"
FIX = ROOT / "tests" / "fixtures"
CHECK = FIX / "rules" / "_check"
SARIF_SCHEMA = json.loads((FIX / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
DEFAULT = ["kind", "cilium-default", "cilium-always", "eks-gp3"]

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["check", *args])
    return result.exit_code, result.stdout, result.stderr


def run_json(*args: str) -> tuple[int, dict]:
    code, out, err = run(*args, "--format", "json")
    assert code in (0, 1), err
    return code, json.loads(out)


def seed1(*extra: str) -> list[str]:
    return [str(SEED1), "--helmrelease", str(SEED1 / "flux"), *extra]


def seed2(*extra: str) -> list[str]:
    return [str(SEED2), "--helmrelease", str(SEED2 / "flux"), *extra]


def by_rule(doc: dict, rule: str) -> list[dict]:
    return [f for f in doc["findings"] if f["rule"] == rule]


# --- seed 1 -------------------------------------------------------------------------------------------
def test_seed1_default_shape_is_a_warning_ready_by_luck_of_timing() -> None:
    code, doc = run_json(*seed1())
    assert code == 0 and doc["passed"] and doc["profiles"] == DEFAULT
    [race] = by_rule(doc, "HS101")
    assert race["severity"] == "warning" and race["profiles"] == ["cilium-always"]
    assert race["object"].startswith(
        "Job/kagent/agent-platform-connectivity-agent-manager-migrate-"
    )
    assert race["file"].endswith("templates/agent-manager/migrate-job.yaml") and race["line"] == 7
    assert "Helm creates the policy after the workload" in race["message"]
    assert "luck of timing" in race["message"]
    [occ] = race["occurrences"]
    assert occ["variant"] == "tight" and occ["outcome"] == "Ready"
    texts = [s["text"] for s in occ["chain"]]
    assert any("denied" in t for t in texts) and any("retransmit" in t for t in texts)
    # both mechanical fixes are re-simulated and converge where the race is
    fixes = {f["summary"].split(" ")[0]: f for f in race["fixes"]}
    assert fixes["render"]["verified"] is True and fixes["add"]["verified"] is True
    # --fail-on warning turns the race into a failing run
    assert run(*seed1("--fail-on", "warning"))[0] == 1


def test_seed1_forced_failure_names_the_race_and_the_cilium_always_outcome() -> None:
    code, doc = run_json(*seed1("-f", str(CHECK / "seed1-forced-failure-values.yaml")))
    assert code == 1 and not doc["passed"]
    [job] = by_rule(doc, "HS103")
    assert job["severity"] == "error" and job["profiles"] == DEFAULT
    assert "disableWaitForJobs: true does not exclude it" in job["message"]
    chain = [s["text"] for s in job["occurrences"][0]["chain"]]
    assert any("BackoffLimitExceeded" in t for t in chain)
    assert any("failed early due to stalled resources" in t for t in chain)
    [out_of_release] = job["fixes"]
    assert out_of_release["verified"] is True
    [race] = by_rule(doc, "HS101")
    assert race["profiles"] == ["cilium-always"] and race["severity"] == "warning"
    # the race's fixes resolve the race but cannot make a Job that always fails converge
    for fix in race["fixes"]:
        assert fix["verified"] is False
        assert all(c["resolved"] and c["outcome"] == "Stalled" for c in fix["checks"])
    blocked = {f["object"] for f in by_rule(doc, "HS106")}
    assert blocked == {
        f"HelmRelease/agent-platform/{n}" for n in ("substrate", "kagent", "agent-manager")
    }
    assert doc["releases"][1]["release"] == "agent-platform/agent-platform-connectivity"
    assert {p["outcome"] for p in doc["releases"][1]["profiles"].values()} == {"Stalled"}


def test_seed1_race_prone_profile_makes_the_race_an_error() -> None:
    code, doc = run_json(
        *seed1(
            "-f",
            str(CHECK / "seed1-slow-rollout-values.yaml"),
            "-p",
            "cilium-always",
            "-p",
            str(CHECK / "cilium-always-slow-policy.yaml"),
        )
    )
    assert code == 1
    [race] = by_rule(doc, "HS101")
    assert race["severity"] == "error" and race["profiles"] == [
        "cilium-always",
        "cilium-always-slow-policy",
    ]
    slow = next(o for o in race["occurrences"] if o["profile"] == "cilium-always-slow-policy")
    assert slow["severity"] == "error" and slow["outcome"] == "Stalled"
    texts = [s["text"] for s in slow["chain"]]
    assert texts[0] == "created by Helm" and "after the workload" in texts[1]
    assert any("i/o timeout" in t for t in texts)
    assert any(t.startswith("BackoffLimitExceeded") for t in texts)
    assert any("failed early due to stalled resources" in t for t in texts)
    times = [s["time"] for s in slow["chain"]]
    assert times == sorted(times)
    hook, init = race["fixes"]
    # the policy as a hook still loses to a 150 s propagation; the bounded init wait does not
    assert {c["profile"]: c["converges"] for c in hook["checks"]} == {
        "cilium-always": True,
        "cilium-always-slow-policy": False,
    }
    assert init["verified"] is True


@pytest.mark.parametrize(
    "variant",
    ["policy-hook", "init-wait", "post-upgrade-hook", "kubernetes-flavour", "migration-disabled"],
)
def test_seed1_fixed_variants_pass_under_the_default_profiles(variant: str) -> None:
    code, doc = run_json(*seed1("-f", str(SEED1 / "ci" / f"{variant}-values.yaml")))
    assert code == 0, doc["findings"]
    assert doc["summary"]["error"] == 0
    assert not by_rule(doc, "HS101")


# --- seed 2 -------------------------------------------------------------------------------------------
def test_seed2_wait_for_first_consumer_claim_fails_the_check() -> None:
    code, doc = run_json(*seed2())
    assert code == 1
    [claim] = by_rule(doc, "HS102")
    assert claim["object"] == "PersistentVolumeClaim/model-serving/hf-cache"
    assert {"kind", "eks-gp3"} <= set(claim["profiles"])
    assert claim["file"].endswith("templates/model-serving/cache-pvc.yaml")
    chain = [s["text"] for s in claim["occurrences"][0]["chain"]]
    assert any(t.startswith("WaitForFirstConsumer") for t in chain)
    assert any(
        "timeout waiting for: [PersistentVolumeClaim/model-serving/hf-cache status: 'InProgress']"
        in t
        for t in chain
    )
    [fix] = claim["fixes"]
    assert {c["profile"] for c in fix["checks"] if c["converges"]} >= {"kind", "eks-gp3"}


def test_seed2_hook_job_variant_passes_where_the_hook_can_reach_the_apiserver() -> None:
    args = seed2("-f", str(SEED2 / "ci" / "hook-values.yaml"))
    code, doc = run_json(*args, "-p", "kind", "-p", "cilium-default", "-p", "eks-gp3")
    assert code == 0 and doc["findings"] == []
    # Under Cilium "always" the hook Job has no policy of its own: its apiserver egress is dropped.
    code, doc = run_json(*args, "-p", "cilium-always")
    assert code == 1
    [egress] = by_rule(doc, "HS113")
    assert egress["object"] == "Job/agent-platform/agent-platform-connectivity-model-serving-cache"


# --- formats --------------------------------------------------------------------------------------------
def test_sarif_validates_against_the_official_schema(tmp_path: Path) -> None:
    out = tmp_path / "check.sarif"
    code, _, err = run(
        *seed1("-f", str(CHECK / "seed1-forced-failure-values.yaml")),
        "--format",
        "sarif",
        "--output",
        str(out),
    )
    assert code == 1, err
    log = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(log, SARIF_SCHEMA)
    [run_] = log["runs"]
    rules = [r["id"] for r in run_["tool"]["driver"]["rules"]]
    assert rules == sorted(rules) and "HS101" in rules
    job = next(r for r in run_["results"] if r["ruleId"] == "HS103")
    assert job["level"] == "error" and rules[job["ruleIndex"]] == "HS103"
    loc = job["locations"][0]["physicalLocation"]
    assert (
        loc["artifactLocation"]["uri"]
        == "examples/seed1-migrate-race/templates/agent-manager/migrate-job.yaml"
    )
    assert loc["region"]["startLine"] == 7
    assert len(job["partialFingerprints"]["helmsimFinding/v1"]) == 64
    # fingerprints are stable across runs
    code, again, _ = run(
        *seed1("-f", str(CHECK / "seed1-forced-failure-values.yaml")), "--format", "sarif"
    )
    fps = {
        r["partialFingerprints"]["helmsimFinding/v1"]
        for r in json.loads(again)["runs"][0]["results"]
    }
    assert {r["partialFingerprints"]["helmsimFinding/v1"] for r in run_["results"]} == fps
    assert not [p for p in tmp_path.iterdir() if p.name != "check.sarif"]  # no temp file left


def test_junit_has_one_case_per_release_and_profile(tmp_path: Path) -> None:
    out = tmp_path / "check.xml"
    code, _, err = run(*seed2(), "--format", "junit", "--output", str(out))
    assert code == 1, err
    xml = JUnitXml.fromfile(str(out))
    suites = list(xml)
    assert [s.name for s in suites] == DEFAULT
    for suite in suites:
        cases = {c.classname: c for c in suite}
        assert len(cases) == 6  # connectivity, kserve-resources and four dependents
        main = cases["agent-platform/agent-platform-connectivity"]
        assert isinstance(main.result[0], Failure) and main.result[0].type == "HS102"
        assert isinstance(cases["agent-platform/kserve-resources"].result[0], Skipped)
        # one failure per root cause: the dependents Blocked by it are skipped, naming it
        blocked = cases["agent-platform/substrate"].result[0]
        assert isinstance(blocked, Skipped)
        assert blocked.message == (
            "blocked by agent-platform/agent-platform-connectivity (HS102 unconsumed-wffc-claim)"
        )
        assert suite.failures == 1 and suite.skipped == 5
        assert main.result[0].text.rstrip().endswith(
            "blocks: agent-platform/agent-manager, agent-platform/kagent, agent-platform/model-manager, "
            "agent-platform/substrate (dependsOn it, HS106)"
        )


def test_text_report_has_the_summary_and_the_chain(tmp_path: Path) -> None:
    code, out, _ = run(*seed2("-p", "kind"))
    assert code == 1
    assert "HELMRELEASE" in out and "KIND" in out and "Stalled HS102" in out
    assert "HS102 unconsumed-wffc-claim error" in out
    chain = "t=360s agent-platform/agent-platform-connectivity.v1 Helm release failed: timeout waiting for"
    assert chain not in out  # the causal chain is behind --timeline
    assert "verified: Ready on the first attempt at t=80s under kind" in out
    assert chain in run(*seed2("-p", "kind", "--timeline"))[1]
    target = tmp_path / "report.txt"
    assert run(*seed2("-p", "kind", "--output", str(target)))[0] == 1
    assert "HS102 unconsumed-wffc-claim error" in target.read_text(encoding="utf-8")


# --- suppression and config -----------------------------------------------------------------------------
def test_ignore_annotation_suppresses_a_finding() -> None:
    code, doc = run_json(str(CHECK / "suppressed"), "-p", "kind")
    assert code == 0 and doc["findings"] == []
    [sup] = doc["suppressed"]
    assert sup["rule"] == "HS102" and "the model release mounts it" in sup["suppressed"]


def _chart_with_config(tmp_path: Path, config: str) -> Path:
    chart = tmp_path / "repo" / "chart"
    shutil.copytree(FIX / "rules" / "HS102" / "failing", chart)
    (tmp_path / "repo" / ".git").mkdir()  # discovery stops at the repository root
    (tmp_path / "repo" / ".helmsim.yaml").write_text(config, encoding="utf-8")
    return chart


def test_config_is_discovered_upward_and_ignores(tmp_path: Path) -> None:
    chart = _chart_with_config(
        tmp_path,
        "profiles: [kind]\nignore:\n  - rule: unconsumed-wffc-claim\n    object: PersistentVolumeClaim/*/cache\n    reason: bound elsewhere\n",
    )
    code, doc = run_json(str(chart))
    assert code == 0 and doc["profiles"] == ["kind"]
    assert doc["suppressed"][0]["suppressed"].endswith(": bound elsewhere")


def test_config_severity_and_fail_on(tmp_path: Path) -> None:
    chart = _chart_with_config(tmp_path, "profiles: [kind]\nrules:\n  HS102: warning\n")
    code, doc = run_json(str(chart))
    assert code == 0 and by_rule(doc, "HS102")[0]["severity"] == "warning"
    chart = _chart_with_config(tmp_path / "b", "profiles: [kind]\nfailOn: never\n")
    assert run(str(chart))[0] == 0
    assert run(str(chart), "--fail-on", "error")[0] == 1  # the flag wins over the file


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            "profiles: [kind]\nrules:\n  HS999: error\n",
            ".helmsim.yaml:3: rules.HS999: no such rule",
        ),
        (
            "profiles: [kind]\nignore:\n  - rule: HS102\n",
            ".helmsim.yaml:3: ignore[0].reason: Field required",
        ),
        (
            "failOn: sometimes\n",
            ".helmsim.yaml:1: failOn: Input should be 'error', 'warning' or 'never'",
        ),
    ],
)
def test_bad_config_is_one_line_with_file_and_line(
    tmp_path: Path, config: str, message: str
) -> None:
    chart = _chart_with_config(tmp_path, config)
    code, out, err = run(str(chart))
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_unknown_profile_is_bad_input() -> None:
    code, _, err = run(str(FIX / "rules" / "HS102" / "failing"), "-p", "no-such-profile")
    assert code == 2 and "no-such-profile" in err


# --- root causes (issue 18 item 2) -----------------------------------------------------------------
def test_dependents_are_listed_under_their_root_cause_not_as_errors_of_their_own() -> None:
    code, out, _ = run(*seed2("-p", "kind", "--no-verify"))
    assert code == 1
    heads = [ln for ln in out.splitlines() if ln.startswith("HS1")]
    assert heads == ["HS102 unconsumed-wffc-claim error  agent-platform/agent-platform-connectivity"]
    assert out.splitlines()[-1] == "FAIL 1 error (4 releases blocked by it) (fail on: error)"
    # JSON keeps every finding; a dependent names the release that blocks it at the root, even
    # through another Blocked release (kagent dependsOn substrate, which dependsOn connectivity)
    _, doc = run_json(*seed2("-p", "kind", "--no-verify"))
    blocked = {f["release"]: f["blockedBy"] for f in by_rule(doc, "HS106")}
    assert blocked == {
        f"agent-platform/{d}": ["agent-platform/agent-platform-connectivity"]
        for d in ("agent-manager", "kagent", "model-manager", "substrate")
    }


def test_a_fix_that_still_fails_says_why() -> None:
    _, doc = run_json(*seed2("-p", "cilium-always", "-p", "kind"))
    [claim] = by_rule(doc, "HS102")
    checks = {c["profile"]: c for c in claim["fixes"][0]["checks"]}
    assert checks["kind"]["converges"] and "cause" not in checks["kind"]
    bad = checks["cilium-always"]
    assert not bad["converges"] and bad["resolved"]
    # the hook Job the fix adds has no egress to the API server under cilium-always
    assert bad["cause"]["rule"] == "HS113"
    assert bad["cause"]["object"] == "Job/agent-platform/agent-platform-connectivity-hf-cache-claim"
    assert bad["detail"].startswith(
        "HS102 resolved, but the release still ends Stalled: HS113 egress-never-allowed: "
        "Job/agent-platform/agent-platform-connectivity-hf-cache-claim needs kube-apiserver"
    )
