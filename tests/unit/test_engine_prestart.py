"""Helm's engine started ahead (helmsim.engine_worker.prestart): the worker a rendering
command starts while it imports the simulator is the one that answers its first render, and
one nobody asked anything is killed at exit instead of waited for."""

from __future__ import annotations

import signal

import pytest
from typer.testing import CliRunner

from helmsim import engine_worker
from helmsim.cli import app


@pytest.fixture(autouse=True)
def _no_worker() -> None:
    engine_worker._shutdown()


def test_the_prestarted_worker_answers_the_first_call() -> None:
    engine_worker.prestart()
    pid = engine_worker.current_pid()
    assert pid is not None
    answer = engine_worker.call("set", subject="--set", expression="a.b=1", flag="--set")
    assert answer["value"] == {"a": {"b": 1}}
    assert engine_worker.current_pid() == pid  # no second worker was started
    engine_worker.prestart()  # a live worker is kept, not replaced
    assert engine_worker.current_pid() == pid


def test_a_worker_never_asked_is_killed_at_exit() -> None:
    engine_worker.prestart()
    worker = engine_worker._worker
    assert worker is not None
    engine_worker._shutdown()
    assert worker.proc.returncode == -signal.SIGKILL  # not left to finish loading Helm first


def test_a_worker_that_answered_is_let_end_on_end_of_input(monkeypatch: pytest.MonkeyPatch) -> None:
    engine_worker.call("set", subject="--set", expression="a=1", flag="--set")
    worker = engine_worker._worker
    assert worker is not None
    how: list[str] = []
    real_close, real_stop = worker.close, worker.stop
    monkeypatch.setattr(worker, "close", lambda: (how.append("close"), real_close())[1])
    monkeypatch.setattr(worker, "stop", lambda: (how.append("stop"), real_stop())[1])
    engine_worker._shutdown()
    assert how[0] == "close"  # end of input first (it is killed only if it does not end in 1 s)
    assert worker.proc.returncode is not None


@pytest.mark.parametrize("command", ["render", "simulate", "check"])
def test_help_starts_no_engine(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert engine_worker.current_pid() is None


def test_a_rendering_command_starts_the_engine_before_it_reads_its_input() -> None:
    result = CliRunner().invoke(app, ["render", "/nonexistent/chart"])
    assert result.exit_code == 2
    assert engine_worker.current_pid() is not None


def test_a_worker_that_cannot_start_ahead_is_left_to_the_first_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(engine_worker, "_Worker", refuse)
    engine_worker.prestart()  # no exception: the command goes on
    assert engine_worker.current_pid() is None
