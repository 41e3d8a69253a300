"""The issue's acceptance: explain on the seeds' observations (docs/explain.md shows both).

Few runs keep these quick; the claims checked hold in every run (probability 1 or 0), so they do
not depend on how many runs are drawn.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from explain_helpers import SEED1_ARGS, SEED2_ARGS
from typer.testing import CliRunner

from helmsim.cli import app

ROOT = Path(__file__).resolve().parents[2]

runner = CliRunner()


@pytest.fixture(scope="module")
def seed1() -> dict:
    result = runner.invoke(app, ["explain", *SEED1_ARGS, "--runs", "2", "--fix-runs", "0", "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _ids(items: list[dict]) -> list[str]:
    return [v["id"] for v in items]


def test_seed1_rules_out_the_ordering_race_alone_with_the_pods_story(seed1: dict) -> None:
    baseline = next(v for v in seed1["ruledOut"] if v["id"] == "baseline")
    assert baseline["title"].startswith("the ordering race alone (CiliumNetworkPolicy/kagent/")
    assert baseline["probability"] == 0
    # the reason is told in the trace's terms: the pod starts after the policy and connects
    assert "after CiliumNetworkPolicy kagent/agent-platform-connectivity-agent-manager-migrate is in effect" in baseline["reason"]
    assert "connects to kube-apiserver on SYN 1" in baseline["reason"]


def test_seed1_reproducing_mechanisms_are_the_three_of_the_reference(seed1: dict) -> None:
    repro = _ids(seed1["reproducing"])
    assert any(i.startswith("label-filter:CiliumNetworkPolicy/kagent/") for i in repro)  # policy not applying
    assert "apiserver-identity:all" in repro  # the kube-apiserver identity missing on the backends
    assert {"agent-stall:120s", "agent-stall:300s"} <= set(repro)  # a stall of two minutes or more
    assert not {"agent-stall:30s", "agent-stall:60s"} & set(repro)
    for v in seed1["reproducing"]:
        assert v["chain"] and v["chain"][-1]["text"].startswith("Ready=False UpgradeFailed")
    posts = [v["posterior"] for v in seed1["reproducing"]]
    assert posts == sorted(posts, reverse=True) and sum(posts) == pytest.approx(1, abs=1e-3)


def test_seed1_short_stalls_are_ruled_out_by_a_later_pod_connecting(seed1: dict) -> None:
    short = next(v for v in seed1["ruledOut"] if v["id"] == "agent-stall:30s")
    assert "pod 2" in short["reason"] and "connects to kube-apiserver" in short["reason"]


def test_seed1_the_bounded_init_wait_only_helps_against_the_stall(seed1: dict) -> None:
    wait = next(f for f in seed1["fixes"] if f["key"].startswith("init-wait|"))
    helped = {u["hypothesis"] for u in wait["under"] if u["converges"]}
    # a wait helps where the API server becomes reachable later: a stall that ends (or, when it
    # reproduces at all, one unlabelled backend that a later dial avoids); never where it stays
    assert any(h.startswith("agent-stall:") for h in helped)
    assert helped <= {h for h in helped if h.startswith("agent-stall:")} | {"apiserver-identity:one"}
    assert not wait["convergesUnderEvery"]
    assert not any(f["convergesUnderEvery"] for f in seed1["fixes"])


@pytest.mark.parametrize("profile", ["kind", "eks-gp3"])
def test_seed2_the_one_cause_is_the_claim_without_a_consumer(profile: str) -> None:
    result = runner.invoke(app, ["explain", *SEED2_ARGS, "-p", profile, "--runs", "2", "--fix-runs", "0", "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (only,) = report["reproducing"]
    assert only["id"] == "baseline" and "WaitForFirstConsumer with no consumer" in only["title"]
    assert "HS102" in only["title"]
    # the provisioner faults never act: WaitForFirstConsumer never asks the provisioner
    inert = [v for v in report["ruledOut"] if v["inert"]]
    assert inert and all(v["family"] == "provisioner" for v in inert)
    hook = next(f for f in report["fixes"] if f["key"].startswith("claim-via-hook|"))
    assert hook["convergesUnderEvery"]


def test_text_and_html_reports(tmp_path: Path) -> None:
    out = tmp_path / "explain.html"
    args = ["explain", *SEED2_ARGS, "-p", "kind", "--runs", "1", "--no-verify"]
    text = runner.invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "Reproduces it (1), most probable first:" in text.stdout and "Ruled out (3):" in text.stdout
    assert "explain:" not in text.stderr  # progress only on a terminal
    html = runner.invoke(app, [*args, "--format", "html", "-o", str(out)])
    assert html.exit_code == 0, html.output
    page = out.read_text()
    assert page.startswith("<!doctype html>") and "WaitForFirstConsumer" in page


def test_same_inputs_same_bytes() -> None:
    args = ["explain", *SEED2_ARGS, "-p", "kind", "--runs", "2", "--no-verify", "--format", "json"]
    assert runner.invoke(app, args).stdout == runner.invoke(app, args).stdout


def test_nothing_reproduces_exits_1(tmp_path: Path) -> None:
    obs = tmp_path / "o.yaml"
    obs.write_text("apiVersion: helmsim.dev/v1alpha1\nkind: Observation\nhelmRelease:\n  messageContains: no such message\n")
    args = ["explain", SEED2_ARGS[0], *SEED2_ARGS[1:3], "-O", str(obs), "-p", "kind", "--runs", "1", "--no-verify"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "Nothing in the hypothesis space reproduces it." in result.stdout


def test_a_bad_observation_is_one_line_and_exit_2(tmp_path: Path) -> None:
    obs = tmp_path / "o.yaml"
    obs.write_text("apiVersion: helmsim.dev/v1alpha1\nkind: Observation\nworkloads: 3\n")
    result = runner.invoke(app, ["explain", *SEED2_ARGS[:3], "-O", str(obs)])
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and f"{obs}:3:" in result.stderr


def test_the_seed2_example_in_the_docs_is_what_explain_prints() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "explain.md").read_text()
    block = doc.split("-p eks-gp3 -O examples/explain/seed2-incident.observation.yaml\n", 1)[1].split("```", 1)[0]
    result = runner.invoke(
        app,
        ["explain", *SEED2_ARGS, "-p", "eks-gp3"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0
    assert [line.rstrip() for line in result.stdout.splitlines()] == [line.rstrip() for line in block.splitlines()]


def test_explain_reads_the_config_as_simulate_and_check_do(tmp_path: Path) -> None:
    # .helmsim.yaml's behaviour catalog and declared CRDs shape every run explain makes: a broken
    # one is the same one-line error simulate gives, not ignored
    chart = tmp_path / "chart"
    shutil.copytree(ROOT / "tests/realcharts/duplicate-keys", chart)
    (chart / ".helmsim.yaml").write_text("catalog: 5\n")
    observed = str(ROOT / "examples/explain/seed2-incident.observation.yaml")
    for args in (["explain", str(chart), "-O", observed], ["simulate", str(chart)]):
        done = subprocess.run([sys.executable, "-m", "helmsim", *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2
        assert done.stderr == f"error: {chart / '.helmsim.yaml'}:1: catalog: must be a list of catalog entries\n"


def test_explain_names_the_config_in_effect_and_reads_the_repository_root(tmp_path: Path) -> None:
    chart = tmp_path / "chart"
    shutil.copytree(ROOT / "tests/realcharts/duplicate-keys", chart)
    (chart / ".helmsim.yaml").write_text("profiles: [kind]\n")
    observed = str(ROOT / "examples/explain/seed2-incident.observation.yaml")
    base = ["explain", str(chart), "-O", observed, "--runs", "1", "--no-verify"]
    text = runner.invoke(app, base)
    assert text.exit_code in (0, 1), text.output
    assert text.stdout.splitlines()[1] == f"config: {chart / '.helmsim.yaml'}"
    data = json.loads(runner.invoke(app, [*base, "--format", "json"]).stdout)
    assert data["configFile"] == str(chart / ".helmsim.yaml")
    bare = runner.invoke(app, ["explain", *SEED2_ARGS, "-p", "kind", "--runs", "1", "--no-verify", "--format", "json"])
    assert json.loads(bare.stdout)["configFile"] is None
    # --repository-root reaches the chart-source resolution as in simulate
    missing = runner.invoke(app, [*base, "--repository-root", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "--repository-root: not a directory" in missing.stderr
