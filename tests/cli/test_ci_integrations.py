"""CI integrations (issue 18 item 7): SARIF whose paths resolve from any working directory with
a helpUri per rule, the composite GitHub Action (action.yml) and the pre-commit hooks
(.pre-commit-hooks.yaml, run with `pre-commit try-repo`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from helmsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
FAILING = ROOT / "tests/fixtures/rules/HS102/failing"
SARIF_SCHEMA = json.loads((ROOT / "tests/fixtures/sarif/sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
BIN = Path(sys.executable).parent
runner = CliRunner()


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false", *args],
        cwd=repo, check=True, capture_output=True,
    )


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A git repository with a chart that fails HS102 at charts/app."""
    root = tmp_path / "repo"
    shutil.copytree(FAILING, root / "charts" / "app")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "chart")
    return root


# --- SARIF --------------------------------------------------------------------------------------


def _sarif(cwd: Path, target: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(cwd)
    result = runner.invoke(app, ["check", target, "-p", "kind", "--no-verify", "--format", "sarif"])
    assert result.exit_code == 1, result.output
    log = json.loads(result.stdout)
    jsonschema.validate(log, SARIF_SCHEMA)
    return log


def _resolve(run_: dict[str, Any], location: dict[str, str]) -> Path:
    """What a SARIF consumer opens: the uri against its uriBaseId (§3.4.4)."""
    base = run_["originalUriBaseIds"][location["uriBaseId"]]["uri"] if "uriBaseId" in location else ""
    return Path(unquote(urlparse(base + location["uri"]).path))


@pytest.mark.parametrize("where", ["root", "subdirectory", "chart", "outside"])
def test_sarif_paths_resolve_from_any_working_directory(repo: Path, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cwd, target = {
        "root": (repo, "charts/app"),
        "subdirectory": (repo / "charts", "app"),
        "chart": (repo / "charts" / "app", "."),
        "outside": (repo.parent, "repo/charts/app"),
    }[where]
    log = _sarif(cwd, target, monkeypatch)
    [run_] = log["runs"]
    assert run_["originalUriBaseIds"]["SRCROOT"]["uri"] == repo.resolve().as_uri() + "/"
    [result] = [r for r in run_["results"] if r["ruleId"] == "HS102"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]
    # relative to the repository root, as code scanning reads it, whatever the directory
    assert location == {"uri": "charts/app/templates/claim.yaml", "uriBaseId": "SRCROOT"}
    assert _resolve(run_, location) == (repo / "charts/app/templates/claim.yaml").resolve()


def test_every_rule_has_a_help_uri_to_its_page(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = _sarif(repo, "charts/app", monkeypatch)["runs"][0]["tool"]["driver"]["rules"]
    for rule in rules:
        uri = urlparse(rule["helpUri"])
        assert uri.scheme == "https" and uri.path.endswith(f"/rules/{rule['id']}.md"), rule["helpUri"]
        assert (ROOT / "docs" / "rules" / f"{rule['id']}.md").is_file()  # the page it names exists
    monkeypatch.setenv("HELMSIM_DOCS_URL", "https://git.example.com/helmsim/blob/main/docs")
    rules = _sarif(repo, "charts/app", monkeypatch)["runs"][0]["tool"]["driver"]["rules"]
    assert rules[0]["helpUri"] == f"https://git.example.com/helmsim/blob/main/docs/rules/{rules[0]['id']}.md"


# --- the GitHub Action ----------------------------------------------------------------------------

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXPR = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


def test_the_action_is_composite_and_injection_safe() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) >= {"target", "profiles", "args", "fail-on", "sarif-file", "upload"}
    assert ACTION["inputs"]["target"]["required"] is True
    steps = ACTION["runs"]["steps"]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses == ["actions/setup-python@v5", "github/codeql-action/upload-sarif@v3"]
    for step in steps:
        if "run" in step:
            assert step["shell"] == "bash"
            # inputs reach scripts through env only: an input can never become shell code
            assert not EXPR.search(step["run"]), step["name"]


def _expr(text: str, ctx: dict[str, str]) -> str:
    """The `${{ inputs.x }}` / `${{ github.action_path }}` / `${{ steps.id.outputs.x }}`
    substitutions GitHub makes in env and with values."""
    return EXPR.sub(lambda m: ctx[m.group(1)], text)


def _condition(text: str, ctx: dict[str, str]) -> bool:
    """The step conditions of action.yml: ==, && and || over contexts and quoted strings."""
    expr = EXPR.fullmatch(text.strip())
    body = expr.group(1) if expr else text
    py = re.sub(r"[\w.-]+\.[\w.-]+", lambda m: repr(ctx.get(m.group(0), "")), body)
    py = py.replace("&&", " and ").replace("||", " or ")
    return bool(eval(py, {"__builtins__": {}}))  # noqa: S307 - our own action.yml, parsed above


def _run_action(workspace: Path, inputs: dict[str, str], tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """Run action.yml's shell steps as a runner does (inputs defaulted, env expressions
    substituted, GITHUB_OUTPUT collected), with helmsim already installed: the install step
    and the `uses:` steps are recorded, not run. Returns the steps run and the outputs."""
    ctx = {f"inputs.{k}": str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    ctx.update({f"inputs.{k}": v for k, v in inputs.items()})
    ctx["github.action_path"] = str(ROOT)
    ran: list[str] = []
    outputs: dict[str, str] = {}
    for step in ACTION["runs"]["steps"]:
        if "if" in step and not _condition(step["if"], ctx):
            continue
        ran.append(step.get("name") or step["uses"])
        if "uses" in step or step["name"] == "Install helmsim":
            continue
        out_file = tmp_path / f"output-{len(ran)}"
        out_file.write_text("")
        env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "GITHUB_OUTPUT": str(out_file),
               **{k: _expr(str(v), ctx) for k, v in step.get("env", {}).items()}}
        done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=workspace, env=env,
                              capture_output=True, text=True, timeout=300)
        for line in out_file.read_text().splitlines():
            key, _, value = line.partition("=")
            outputs[key] = value
            ctx[f"steps.{step.get('id')}.outputs.{key}"] = value
        if done.returncode != 0:
            ran.append(f"failed {done.returncode}")
            break
    return ran, outputs


def test_the_action_checks_uploads_the_sarif_and_fails_on_findings(repo: Path, tmp_path: Path) -> None:
    ran, outputs = _run_action(repo, {"target": "charts/app", "profiles": "kind", "args": "--no-verify"}, tmp_path)
    assert ran == ["actions/setup-python@v5", "Install helmsim", "helmsim check",
                   "Upload SARIF to code scanning", "Verdict", "failed 1"]
    assert outputs == {"exit-code": "1", "sarif-file": "helmsim.sarif"}
    log = json.loads((repo / "helmsim.sarif").read_text())
    jsonschema.validate(log, SARIF_SCHEMA)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == {"HS102"}


def test_the_action_passes_with_fail_on_never_and_stops_on_bad_input(repo: Path, tmp_path: Path) -> None:
    ran, outputs = _run_action(repo, {"target": "charts/app", "profiles": "kind", "fail-on": "never",
                                      "args": "--no-verify", "upload": "false"}, tmp_path)
    assert ran == ["actions/setup-python@v5", "Install helmsim", "helmsim check"] and outputs["exit-code"] == "0"
    ran, outputs = _run_action(repo, {"target": "charts/missing", "profiles": "kind"}, tmp_path)
    assert ran[-1] == "failed 2" and outputs["exit-code"] == "2"  # no upload of a report never written


# --- pre-commit ---------------------------------------------------------------------------------

HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))


def test_the_hooks_are_declared_for_charts() -> None:
    by_id = {h["id"]: h for h in HOOKS}
    assert set(by_id) == {"helmsim-check", "helmsim-render"}
    for hook in HOOKS:
        assert hook["language"] == "python" and hook["pass_filenames"] is True
        assert hook["entry"] == f"python -m helmsim.precommit {hook['id'].removeprefix('helmsim-')}"
        files = re.compile(hook["files"])
        assert files.search("charts/app/templates/job.yaml") and files.search("charts/app/values.yaml")
        assert files.search("Chart.yaml") and not files.search("src/main.py")


def test_changed_files_map_to_their_charts(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from helmsim.precommit import charts_of, split_args

    shutil.copytree(FAILING, repo / "charts" / "other")
    (repo / "README.md").write_text("x")
    (repo / "charts" / "app" / "values.yaml").write_text("a: 1\n")
    monkeypatch.chdir(repo)
    files = ["charts/app/templates/claim.yaml", "charts/app/values.yaml", "charts/other/Chart.yaml", "README.md"]
    assert charts_of(files) == ["charts/app", "charts/other"]
    assert split_args(["-p", "kind", *files]) == (["-p", "kind"], files)
    assert split_args(["-f", "charts/app/values.yaml", *files[:1]]) == (["-f", "charts/app/values.yaml"], files[:1])
    assert split_args(["-f", "charts/app/values.yaml", "--", *files]) == (["-f", "charts/app/values.yaml"], files)


def test_pre_commit_try_repo_runs_the_hooks(repo: Path) -> None:
    """`pre-commit try-repo ROOT --all-files` in a repository with a failing chart: pre-commit
    builds the hooks' environment from this checkout (pip install, as on a user's machine:
    about a minute, hence CI only) and runs both hooks."""
    if not (os.environ.get("CI") or os.environ.get("HELMSIM_PRECOMMIT")):
        pytest.skip("builds a fresh pip environment (~1 min): runs in CI, or with HELMSIM_PRECOMMIT=1")
    pytest.importorskip("pre_commit", reason="pre-commit is a dev extra: pip install -e '.[dev]'")
    (repo / ".helmsim.yaml").write_text("profiles: [kind]\n")  # the repository's matrix
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "config")
    env = {**os.environ, "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home"), "PRE_COMMIT_COLOR": "never"}
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "--all-files", "--verbose"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900,
    )
    out = done.stdout
    assert done.returncode == 1, out[-3000:] + done.stderr[-3000:]  # the check hook fails
    render = out[out.index("helmsim render...") :]
    assert render.split("\n", 1)[0].endswith("Passed") and "helmsim render charts/app" in render
    check = out[out.index("helmsim check...") :]
    assert check.split("\n", 1)[0].endswith("Failed") and "helmsim check charts/app" in check
    assert "HS102 unconsumed-wffc-claim" in check
