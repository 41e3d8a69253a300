"""The ``helmsim`` entry point: usage errors are one line (exit 2), crashes are one line (exit 3)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import helmsim.cli.render as render_cmd
from helmsim.cli import main


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "helmsim", *args], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "--bogus"], "error: No such option: --bogus"),
        (["simulate", "x", "--format", "xml"], "error: Invalid value for '--format'"),
        (["render"], "error: Missing argument"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    proc = _run(*args)
    assert proc.returncode == 2
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1


def test_an_internal_error_is_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(render_cmd, "load_release", boom)
    monkeypatch.setattr(sys, "argv", ["helmsim", "render", "tests/fixtures/charts/caps"])
    monkeypatch.delenv("HELMSIM_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 3
    err = capsys.readouterr().err
    assert err.startswith("internal error: RuntimeError: kaboom") and err.count("\n") == 1


def test_exit_codes_pass_through() -> None:
    assert _run("--version").returncode == 0
    assert _run("render", "/nonexistent/chart").returncode == 2
