"""CLI conventions (issue 18 item 4): --version, shell completion, help without Python type
placeholders and with examples that parse (and, for the quick ones, run), -o as the output file
everywhere, Helm's --set-string/--set-file/--set-json/--set-literal, and exit codes of status
and plan."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from helmsim import __version__
from helmsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
HELMSIM = Path(sys.executable).with_name("helmsim")
runner = CliRunner()


def run(*args: str, **kw: Any) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), **kw)
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


def _commands() -> Iterator[tuple[tuple[str, ...], Any]]:
    root = typer.main.get_command(app)
    ctx = root.make_context("helmsim", ["--help"], resilient_parsing=True)

    def walk(cmd: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
        if hasattr(cmd, "list_commands"):  # a group (the root loads its commands lazily)
            for name in sorted(cmd.list_commands(ctx)):
                yield from walk(cmd.get_command(ctx, name), (*path, name))
        else:
            yield path, cmd

    yield from walk(root, ())


COMMANDS = dict(_commands())
IDS = [" ".join(p) for p in COMMANDS]


def test_every_command_is_covered() -> None:
    assert {"render", "plan", "simulate", "check", "status", "diff", "test", "fleet"} <= {p[0] for p in COMMANDS}
    assert ("profiles", "show") in COMMANDS


# --- --version and completion ------------------------------------------------------------------


def test_version() -> None:
    code, out, _ = run("--version")
    assert code == 0 and out == f"helmsim {__version__}\n"


def test_shell_completion_script_and_answers() -> None:
    # the script --install-completion installs (Click's protocol; --show-completion prints the
    # same for the shell it detects)
    env = {**os.environ, "_HELMSIM_COMPLETE": "source_bash"}
    script = subprocess.run([HELMSIM], env=env, capture_output=True, text=True, timeout=60)
    assert script.returncode == 0 and "_HELMSIM_COMPLETE=complete_bash" in script.stdout
    assert "complete -o default -F _helmsim_completion helmsim" in script.stdout
    code, out, _ = run("--help")
    assert code == 0 and "--install-completion" in out and "--show-completion" in out

    def complete(words: str) -> list[str]:
        env = {**os.environ, "_HELMSIM_COMPLETE": "complete_bash", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
        done = subprocess.run([HELMSIM], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("helmsim ren") == ["render"]
    assert complete("helmsim render x --set-") == ["--set-string", "--set-file", "--set-json", "--set-literal"]
    assert complete("helmsim check x --format ") == ["text", "json", "sarif", "junit", "html"]


# --- help ---------------------------------------------------------------------------------------

PLACEHOLDER = re.compile(r"<[\w\[\]|.,-]+>")


@pytest.mark.parametrize("path", [(), *COMMANDS], ids=["helmsim", *IDS])
def test_help_shows_no_python_type_placeholders(path: tuple[str, ...]) -> None:
    code, out, _ = run(*path, "--help", env={"COLUMNS": "200"})
    assert code == 0
    assert PLACEHOLDER.findall(out) == []  # <bool>, <str>, <int>, <list[Path]> …


def _examples(cmd: Any, *, standalone: bool = False) -> list[list[str]]:
    """The `helmsim …` command lines of a command's Examples section (after any `&&`; with
    ``standalone`` only those that need no earlier command)."""
    text = cmd.help or ""
    assert "Examples:" in text, "no Examples section"
    lines = []
    for raw in text.split("Examples:", 1)[1].splitlines():
        before, _, after = raw.strip().rpartition("&& ")
        if after.startswith("helmsim ") and not (standalone and before):
            lines.append(shlex.split(after)[1:])
    return lines


@pytest.mark.parametrize("path", list(COMMANDS), ids=IDS)
def test_every_command_has_examples_that_parse(path: tuple[str, ...]) -> None:
    cmd = COMMANDS[path]
    examples = _examples(cmd)
    assert examples, "no `helmsim …` line among the examples"
    for argv in examples:
        assert tuple(argv[: len(path)]) == path, argv
        cmd.make_context(" ".join(path), argv[len(path):])  # a UsageError fails the test


QUICK = [(p, argv) for p, c in COMMANDS.items() if p[0] in ("render", "plan", "profiles") and p != ("profiles", "import")
         for argv in _examples(c, standalone=True) if "--context" not in argv]


@pytest.mark.parametrize(("path", "argv"), QUICK, ids=[" ".join(a) for _, a in QUICK])
def test_quick_examples_run(path: tuple[str, ...], argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    argv = [str(tmp_path / a) if i and argv[i - 1] == "-o" else a for i, a in enumerate(argv)]
    code, out, err = run(*argv)
    assert code in (0, 1), err  # profiles diff exits 1 when they differ
    if "-o" in argv:
        assert out == "" and Path(argv[argv.index("-o") + 1]).stat().st_size > 0


# --- -o is the output file everywhere ----------------------------------------------------------


@pytest.mark.parametrize("path", list(COMMANDS), ids=IDS)
def test_dash_o_means_the_output_file(path: tuple[str, ...]) -> None:
    for p in COMMANDS[path].params:
        if "-o" in p.opts:
            assert "--output" in p.opts, p.opts
        if "--output" in p.opts:
            assert "-o" in p.opts, p.opts


def test_reports_go_to_the_output_file(tmp_path: Path) -> None:
    live = tmp_path / "live.yaml"
    live.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: d}\n")
    for argv in (
        ["render", str(SEED1)],
        ["plan", str(SEED1)],
        ["plan", str(SEED1), "--format", "json"],
        ["status", str(live)],
        ["status", str(live), "--format", "json"],
        ["profiles", "show", "kind"],
    ):
        target = tmp_path / "out.txt"
        code, out, _ = run(*argv)
        assert code == 0
        code, printed, _ = run(*argv, "-o", str(target))
        assert code == 0 and printed == "" and target.read_text() == out, argv
        target.unlink()


# --- Helm's --set flags -------------------------------------------------------------------------


@pytest.fixture()
def echo_chart(tmp_path: Path) -> Path:
    chart = tmp_path / "echo"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: echo\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("a: 0\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: echo}\ndata:\n  values: {{ toJson .Values | quote }}\n"
    )
    return chart


def _values(out: str) -> dict[str, Any]:
    import yaml

    doc = yaml.safe_load(out.split("\n", 2)[2])
    return json.loads(doc["data"]["values"])


def test_set_flags_apply_in_helms_order(echo_chart: Path, tmp_path: Path) -> None:
    """helm/helm pkg/cli/values/options.go MergeValues: -f, --set-json, --set, --set-string,
    --set-file, --set-literal, whatever order the flags are given in."""
    ca = tmp_path / "ca.pem"
    ca.write_text("line one\nline two\n")
    code, out, err = run(
        "render", str(echo_chart),
        "--set-literal", "lit=a,b=c",
        "--set-file", f"tls.ca={ca}",
        "--set-string", "s=true,n=1",
        "--set", "n=2,b=true,j.x=9",
        "--set-json", 'j={"x":[1,2],"y":null}',
        "--set-json", "n=3",
    )
    assert code == 0, err
    assert _values(out) == {
        "a": 0,
        "b": True,
        "j": {"x": 9, "y": None},  # --set after --set-json
        "n": "1",  # --set-string after --set after --set-json
        "s": "true",
        "tls": {"ca": "line one\nline two\n"},
        "lit": "a,b=c",
    }


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--set-json", "a={bad", "bad --set-json 'a={bad': invalid character"),
        ("--set-file", "a=/nonexistent/ca.pem", "/nonexistent/ca.pem: --set-file: file not found"),
        ("--set-string", "a", "bad --set-string 'a': key \"a\" has no value"),
    ],
)
def test_bad_set_flags_are_one_line(echo_chart: Path, flag: str, value: str, message: str) -> None:
    code, out, err = run("render", str(echo_chart), flag, value)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err


def test_set_flags_reach_every_rendering_command(echo_chart: Path) -> None:
    observed = str(ROOT / "examples/explain/seed1-incident.observation.yaml")
    extra = {"check": ["-p", "kind"], "explain": ["-O", observed]}
    for command in ("plan", "simulate", "check", "explain"):
        code, _, err = run(command, str(echo_chart), "--set-json", "a={bad", *extra.get(command, []))
        assert code == 2 and "bad --set-json" in err, (command, err)


# --- status and plan exit codes -----------------------------------------------------------------

FAILED_JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
spec: {backoffLimit: 0}
status:
  failed: 1
  conditions:
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
"""
CURRENT = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: shop}\n"


def test_status_exits_1_when_an_object_is_failed(tmp_path: Path) -> None:
    ok, failed = tmp_path / "ok.yaml", tmp_path / "failed.yaml"
    ok.write_text(CURRENT)
    failed.write_text(CURRENT + "---\n" + FAILED_JOB)
    assert run("status", str(ok))[0] == 0
    code, out, _ = run("status", str(failed))
    assert code == 1 and "Failed" in out
    assert run("status", str(failed), "--format", "json")[0] == 1


def test_plan_exits_1_only_when_the_upgrade_would_fail() -> None:
    same = run("plan", str(SEED1), "-n", "kagent", "--upgrade-from", str(SEED1))
    assert same[0] == 0, same[2]
    # the Job's pod template changes: immutable (the test in test_render_plan_cli checks the text)
    code, out, _ = run("plan", str(SEED1), "-n", "kagent", "--set", "agentManager.image.tag=4.7.1",
                       "--upgrade-from", str(SEED1), "--format", "json")
    assert code == 1 and json.loads(out)["errors"]
