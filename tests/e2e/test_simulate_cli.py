"""``helmsim simulate`` through the CLI: text and JSON reports, exit codes, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from e2e_helpers import FIX, MAIN, MAIN_REF, ROOT, SEED1, SEED2
from typer.testing import CliRunner

from helmsim.cli import app

runner = CliRunner()
SCHEMA = json.loads((FIX / "simulate-report.schema.json").read_text())
SEED2_ARGS = [str(SEED2), "--helmrelease", str(SEED2 / "flux"), "--profile", "kind"]
SEED1_FAILS = [
    str(SEED1),
    "--helmrelease",
    str(SEED1 / "flux"),
    "--profile",
    "cilium-always",
    "-f",
    str(FIX / "seed1-migrate-fails-values.yaml"),
]
TIMEOUT = "timeout waiting for: [PersistentVolumeClaim/model-serving/hf-cache status: 'InProgress']"


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["simulate", *args])
    return result.exit_code, result.stdout, result.stderr


def run_json(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(*args, "--format", "json")
    assert err == ""
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    return code, doc


def _hr(doc: dict[str, Any], name: str = MAIN) -> dict[str, Any]:
    return next(r for r in doc["releases"] if r["name"] == name)


# --- reports and exit codes ---------------------------------------------------------------------
def test_text_report_for_seed2_exits_1_with_the_stalled_summary() -> None:
    code, out, _ = run(*SEED2_ARGS)
    assert code == 1
    assert out.startswith("Profile kind · simulated until t=")
    flat = " ".join(out.split())
    assert (
        f"{MAIN_REF} Stalled after 5 attempts flux Failed to install after 5 attempt(s); last failure: "
        in flat
    )
    assert TIMEOUT in flat
    # the Helm history and the timeline are behind --timeline
    assert f"Helm history of {MAIN_REF}" not in out and "Timeline" not in out
    # unmapped charts are named once, with the flag that maps each
    assert "note: 5 HelmReleases have no local chart and are modelled as Ready 60s" in flat
    assert "agent-platform/kserve-resources (--chart kserve-resources=PATH)" in flat
    assert out.splitlines()[-1].startswith("FAIL 1 Stalled, 4 Blocked, 1 Ready of 6 HelmReleases under kind (5 not simulated)")
    assert "Traceback" not in out
    _, detailed, _ = run(*SEED2_ARGS, "--timeline")
    assert f"Helm history of {MAIN_REF}" in detailed
    assert (
        "Normal WaitForFirstConsumer: waiting for first consumer to be created before binding"
        in " ".join(detailed.split())
    )


def test_text_report_shows_the_trace_with_full_timeline() -> None:
    _, short, _ = run(*SEED2_ARGS, "--timeline")
    code, full, _ = run(*SEED2_ARGS, "--full-timeline")
    assert code == 1
    assert len(full.splitlines()) > 2 * len(short.splitlines())
    assert (
        "poll" not in short
        and "status: 'InProgress': PVC is not Bound. phase: Pending" in " ".join(full.split())
    )


def test_full_timeline_prints_a_container_exit_once() -> None:
    # the kubelet logs the exit, then writes the pod status with the same words
    code, full, _ = run(str(ROOT / "tests" / "realcharts" / "peer-not-ready"), "--profile", "kind", "--full-timeline")
    assert code == 1
    exits = [line for line in full.splitlines() if "container worker exited with code 1" in line]
    assert len(exits) == len({line.split()[0] for line in exits}) >= 2  # one line per exit time


def test_json_report_for_seed2_follows_the_schema() -> None:
    code, doc = run_json(*SEED2_ARGS)
    assert code == 1
    assert doc["profile"] == "kind"
    main = _hr(doc)
    assert {
        k: main[k] for k in ("name", "namespace", "profile", "outcome", "ready", "attempts")
    } == {
        "name": MAIN,
        "namespace": "agent-platform",
        "profile": "kind",
        "outcome": "Stalled",
        "ready": "False",
        "attempts": 5,
    }
    assert main["message"].endswith(TIMEOUT)
    assert (
        main["summary"] == f"Failed to install after 5 attempt(s); last failure: {main['message']}"
    )
    assert main["helmStatus"][0]["status"] == "failed"
    pvc = next(o for o in doc["objects"] if o["kind"] == "PersistentVolumeClaim")
    assert (pvc["namespace"], pvc["name"], pvc["status"]) == (
        "model-serving",
        "hf-cache",
        "InProgress",
    )
    # the timeline is in time order and its causes point backwards
    times = [e["time"] for e in doc["timeline"]]
    assert times == sorted(times)
    assert all(e["cause"] < e["id"] for e in doc["timeline"] if "cause" in e)
    stalled = [e for e in doc["timeline"] if e["what"] == "stalled"]
    assert stalled[-1]["message"] == "Failed to install after 5 attempt(s)"
    kserve = _hr(doc, "kserve-resources")
    assert kserve["simulated"] is False and kserve["outcome"] == "Ready"
    assert any("kserve-resources is not mapped" in n for n in doc["notes"])


def test_all_ready_exits_0() -> None:
    code, doc = run_json(*SEED2_ARGS, "-f", str(SEED2 / "ci" / "hook-values.yaml"))
    assert code == 0
    assert {r["outcome"] for r in doc["releases"]} == {"Ready"}


def test_seed1_failed_job_json() -> None:
    code, doc = run_json(*SEED1_FAILS)
    assert code == 1
    main = _hr(doc)
    assert "failed early due to stalled resources: [Job/kagent/" in main["message"]
    blocked = [r for r in doc["releases"] if r["outcome"] == "Blocked"]
    assert {r["name"] for r in blocked} == {"substrate", "kagent", "agent-manager"}
    assert {r["message"] for r in blocked} == {f"dependency '{MAIN_REF}' is not ready"}


def test_upgrade_from_reports_when_the_upgrade_started() -> None:
    code, doc = run_json(
        *SEED1_FAILS,
        "--upgrade-from",
        str(SEED1),
        "--upgrade-from-values",
        str(SEED1 / "ci" / "previous-values.yaml"),
    )
    assert code == 1
    assert doc["upgradeStart"] > 0
    assert any(n.startswith(f"previous generation of {MAIN_REF}: Ready at t=") for n in doc["notes"])
    assert f"the change is applied at t={doc['upgradeStart']:g}s" in doc["notes"]
    main = _hr(doc)
    assert main["conditions"]["Released"]["message"].startswith(
        f"Helm upgrade failed for release {MAIN_REF} with chart {MAIN}@4.7.0: "
    )
    assert [h["revision"] for h in main["helmStatus"]] == [5, 6, 7, 8, 9]  # maxHistory 5
    assert main["helmStatus"][1]["description"].startswith(f'Upgrade "{MAIN}" failed: ')


def test_a_chart_without_helmrelease_gets_flux_defaults() -> None:
    """No HelmRelease: one with Flux's defaults (retries 0) named by --release-name."""
    code, doc = run_json(
        str(SEED2), "--release-name", "cache", "--namespace", "ml", "--horizon", "10m"
    )
    assert code == 1
    (r,) = doc["releases"]
    assert (r["name"], r["namespace"], r["outcome"], r["attempts"]) == ("cache", "ml", "Stalled", 1)
    assert r["conditions"]["Stalled"]["message"] == "Failed to install after 1 attempt(s)"
    assert (
        r["message"]
        == f"Helm install failed for release ml/cache with chart {MAIN}@4.28.1: {TIMEOUT}"
    )


def test_set_and_horizon() -> None:
    code, doc = run_json(
        *SEED2_ARGS, "--set", "modelServing.cache.enabled=false", "--horizon", "90s"
    )
    assert code == 0 and _hr(doc)["outcome"] == "Ready"
    # a horizon shorter than the first wait leaves the release Progressing: exit 1
    code, doc = run_json(*SEED2_ARGS, "--horizon", "2m")
    assert code == 1 and _hr(doc)["outcome"] == "Progressing" and doc["endTime"] <= 120.0


def test_output_file(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code, stdout, _ = run(*SEED2_ARGS, "--format", "json", "--output", str(out))
    assert code == 1 and stdout == ""
    jsonschema.validate(json.loads(out.read_text()), SCHEMA)
    text = tmp_path / "report.txt"
    code, stdout, _ = run(*SEED2_ARGS, "--output", str(text))
    assert code == 1 and stdout == "" and "Failed to install after 5 attempt(s)" in text.read_text()


def test_profile_from_a_file() -> None:
    code, doc = run_json(
        str(SEED1),
        "--helmrelease",
        str(SEED1 / "flux"),
        "--profile",
        str(FIX / "profiles" / "cilium-always-race.yaml"),
    )
    assert code == 0 and doc["profile"] == "cilium-always-race"
    assert any(e["what"] == "connect-denied" for e in doc["timeline"])


# --- determinism ---------------------------------------------------------------------------------
def _cli_json(tmp_path: Path, hash_seed: str, *args: str) -> bytes:
    out = tmp_path / f"r{hash_seed}.json"
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "helmsim",
            "simulate",
            *args,
            "--format",
            "json",
            "--output",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    return out.read_bytes()


@pytest.mark.parametrize("args", [SEED2_ARGS, SEED1_FAILS], ids=["seed2", "seed1-fails"])
def test_same_inputs_give_byte_identical_json(tmp_path: Path, args: list[str]) -> None:
    """Across processes with different hash seeds (set and dict order must not leak)."""
    assert _cli_json(tmp_path, "1", *args) == _cli_json(tmp_path, "2", *args)


# --- bad input: one line on stderr, exit 2 -------------------------------------------------------
def _hr_file(tmp_path: Path, spec_extra: str, namespace: str = "agent-platform") -> str:
    path = tmp_path / "hr.yaml"
    path.write_text(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\n"
        f"metadata:\n  name: agent-platform-connectivity\n  namespace: {namespace}\n"
        "spec:\n  interval: 10m\n  chart:\n    spec:\n      chart: agent-platform-connectivity\n"
        "      sourceRef: {kind: HelmRepository, name: catalog}\n" + spec_extra
    )
    return str(path)


BAD_INPUTS = {
    "unknown-profile": (
        [str(SEED2), "--profile", "nope"],
        "unknown profile 'nope': not a built-in (aks-cilium, capa-cilium, cilium-always, cilium-default, eks-gp3, eks-vpc-cni, gke-autopilot, gke-dataplane-v2, k3s, kind) and no such file",
    ),
    "missing-chart": (
        [str(ROOT / "examples" / "no-such-chart")],
        "no-such-chart: no such file or directory",
    ),
    "missing-values": ([str(SEED2), "-f", "/nonexistent/values.yaml"], "values file not found"),
    "chart-without-equals": ([str(SEED2), "--chart", "foo"], "--chart 'foo': expected NAME=PATH"),
    "horizon-garbage": ([str(SEED2), "--horizon", "1x"], "--horizon '1x': invalid duration '1x'"),
    "horizon-negative": (
        [str(SEED2), "--horizon", "-5s"],
        "--horizon '-5s': duration '-5s' is negative",
    ),
    "chart-not-used": (
        [str(SEED2), "--helmrelease", str(SEED1 / "flux" / "dependents.yaml")],
        f"none of the HelmReleases uses chart '{MAIN}'",
    ),
}


@pytest.mark.parametrize(("args", "message"), list(BAD_INPUTS.values()), ids=list(BAD_INPUTS))
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    code, out, err = run(*args)
    assert code == 2, out
    assert err.startswith("error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("  timeout: banana\n", "spec.timeout: Value error, invalid duration 'banana'"),
        (
            "  install:\n    remediation:\n      retries: lots\n",
            "spec.install.remediation.retries: Input should be a valid integer",
        ),
    ],
    ids=["timeout", "retries"],
)
def test_helmrelease_with_a_bad_field(tmp_path: Path, spec: str, message: str) -> None:
    hr = _hr_file(tmp_path, spec)
    code, _, err = run(str(SEED2), "--helmrelease", hr)
    assert code == 2
    assert err.startswith(f"error: {hr}:") and message in err and err.count("\n") == 1


def test_helmrelease_with_an_unknown_field(tmp_path: Path) -> None:
    hr = _hr_file(tmp_path, "  instal:\n    remediation:\n      retries: 4\n")
    code, _, err = run(str(SEED2), "--helmrelease", hr)
    assert code == 2 and "spec.instal" in err


def test_helmrelease_with_a_boolean_namespace(tmp_path: Path) -> None:
    hr = _hr_file(tmp_path, "", namespace="y")
    code, _, err = run(str(SEED2), "--helmrelease", hr)
    assert code == 2 and "metadata.namespace" in err


def test_zero_horizon_is_bad_input() -> None:
    code, _, err = run(*SEED2_ARGS, "--horizon", "0")
    assert code == 2 and "--horizon" in err


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_unwritable_output_is_bad_input(fmt: str) -> None:
    result = runner.invoke(
        app, ["simulate", *SEED2_ARGS, "--format", fmt, "--output", "/nonexistent/dir/report"]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "/nonexistent/dir/report" in result.stderr


def test_a_helmrelease_field_error_names_the_field_line(tmp_path: Path) -> None:
    hr = tmp_path / "hr.yaml"
    hr.write_text(
        "# leading comment\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\n"
        "metadata: {name: x, namespace: apps}\nspec:\n  interval: 10m\n  install:\n"
        "    remediation:\n      retriez: 3\n"
    )
    result = CliRunner().invoke(app, ["simulate", str(SEED2), "--helmrelease", str(hr)])
    assert result.exit_code == 2
    assert result.stderr == f'error: {hr}:9: HelmRelease x: unknown field "spec.install.remediation.retriez"\n'
