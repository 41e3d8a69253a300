"""The config file in effect is named in every report, and only a repository's own applies
(issue 12: a `.helmsim.yaml` in /tmp silently changed `check`'s verdict; docs/security.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from typer.testing import CliRunner

from helmsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
FAILING = ROOT / "tests/fixtures/rules/HS102/failing"
runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout


@pytest.fixture()
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp/.helmsim.yaml`` (failOn: never) planted above ``tmp/repo`` (a git work tree
    holding a chart that fails HS102); the current directory is the repository."""
    (tmp_path / ".helmsim.yaml").write_text("failOn: never\nprofiles: [eks-gp3]\n", encoding="utf-8")
    root = tmp_path / "repo"
    shutil.copytree(FAILING, root / "chart")
    (root / ".git").mkdir()
    monkeypatch.chdir(root)
    return root


CHECK = ("check", "chart", "-p", "kind", "--no-verify")


def test_a_config_above_the_repository_does_not_apply(repo: Path) -> None:
    code, out = run(*CHECK)
    assert code == 1  # failOn: never from /tmp would have made it 0
    assert out.startswith("config: no config file\n")
    code, out = run("check", "chart", "--no-verify", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["configFile"] is None and doc["profiles"] != ["eks-gp3"]


def _names(fmt: str, out: str) -> str | None:
    """What the report of format ``fmt`` says the config file is (``None``: not named)."""
    if fmt == "text":  # check: the first line; simulate: under the profile line
        return next(line for line in out.splitlines()[:2] if line.startswith("config: ")).removeprefix("config: ")
    if fmt == "json":
        return json.loads(out)["configFile"] or "no config file"
    if fmt == "sarif":
        run_ = json.loads(out)["runs"][0]
        named = run_["invocations"][0]["properties"]["configFile"]
        roles = [a["location"]["uri"] for a in run_.get("artifacts", []) if "userSpecifiedConfiguration" in a["roles"]]
        assert roles == ([named] if named else [])
        return named or "no config file"
    if fmt == "junit":
        values = {
            p.get("value")
            for s in ET.fromstring(out).iter("testsuite")
            for p in s.iter("property")
            if p.get("name") == "helmsim.config"
        }
        assert len(values) == 1
        return values.pop()
    assert fmt == "html"
    head = out.split('<p class="config">', 1)[1]
    return head.split("</p>", 1)[0].removeprefix("config: ")


FORMATS = ["text", "json", "sarif", "junit", "html"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_check_format_names_the_config(repo: Path, fmt: str) -> None:
    code, out = run(*CHECK, "--format", fmt, "-o", "-")
    assert code == 1 and _names(fmt, out) == "no config file"
    (repo / ".helmsim.yaml").write_text("failOn: never\n", encoding="utf-8")
    code, out = run(*CHECK, "--format", fmt, "-o", "-")
    assert code == 0 and _names(fmt, out) == ".helmsim.yaml"


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_simulate_names_the_config_whose_catalog_it_uses(repo: Path, fmt: str) -> None:
    args = ("simulate", "chart", "--horizon", "2m", "--format", fmt, "-o", "-")
    assert _names(fmt, run(*args)[1]) == "no config file"
    (repo / "chart" / ".helmsim.yaml").write_text("profiles: [kind]\n", encoding="utf-8")
    assert _names(fmt, run(*args)[1]) == "chart/.helmsim.yaml"


def test_monte_carlo_simulate_names_the_config(repo: Path) -> None:
    assert run("simulate", "chart", "--horizon", "2m", "--runs", "2")[1].startswith("config: no config file\n")
    out = run("simulate", "chart", "--horizon", "2m", "--runs", "2", "--format", "json")[1]
    assert json.loads(out)["configFile"] is None
