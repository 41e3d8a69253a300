"""Progress on stderr (issue 18 item 3): shown on a terminal for work over a second, never on
stdout, silent when stderr is not a terminal or with --quiet. The terminal is a real pty."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path

from helmsim.cli.progress import StderrProgress

ROOT = Path(__file__).resolve().parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
CHECK = ["check", str(SEED1), "--helmrelease", str(SEED1 / "flux")]


def _run_on_pty(*args: str) -> tuple[int, str, str]:
    """Run helmsim with stderr on a pty (stdout a pipe): exit code, stdout, what the pty got."""
    master, slave = pty.openpty()
    # bars from the first instant: a fast machine finishes 40 runs inside the default second
    env = {**os.environ, "COLUMNS": "100", "HELMSIM_PROGRESS_DELAY": "0"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "helmsim", *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
        env=env,
    )
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO once the child closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=300)
    reader.join(timeout=10)
    os.close(master)
    return proc.returncode, out.decode(), b"".join(chunks).decode(errors="replace")


def test_check_draws_progress_on_a_terminal_stderr_and_keeps_stdout_clean() -> None:
    # 4 profiles, then 40 sampled runs of each: well over a second
    code, out, tty = _run_on_pty(*CHECK, "--runs", "40")
    assert code == 0
    assert "simulating 4 profiles × 4 HelmReleases" in tty and "sampled runs" in tty
    assert "\x1b" not in out and "simulating" not in out
    assert out.splitlines()[-1].startswith("PASS ")


def test_quiet_draws_nothing() -> None:
    code, out, tty = _run_on_pty(*CHECK, "--quiet")
    assert code == 0 and tty == "" and out == "PASS 2 warnings (fail on: error)\n"


def test_simulate_runs_draws_the_sampled_runs() -> None:
    args = ["simulate", str(SEED1), "--helmrelease", str(SEED1 / "flux"), "-p", "cilium-always", "--runs", "40"]
    code, out, tty = _run_on_pty(*args)
    assert code in (0, 1) and "sampled runs" in tty and "sampled runs" not in out.split("\n", 1)[0]


def test_not_a_terminal_is_silent() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "helmsim", *CHECK], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert result.returncode == 0 and result.stderr == ""


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_drawn_for_work_under_the_delay() -> None:
    fake = _Tty()
    with StderrProgress(file=fake, delay=5.0) as p:
        p.update("quick", 1, 1)
    assert fake.getvalue() == ""
    with StderrProgress(file=fake, delay=0.01) as p:
        p.update("slow", 0, 2)
        time.sleep(0.3)
        p.update("slow", 2, 2)
    assert "slow" in fake.getvalue()
    assert StderrProgress(file=io.StringIO()).sink is None  # not a terminal: inert


def test_progress_delay_comes_from_the_environment(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from helmsim.cli.progress import DELAY, configured_delay

    monkeypatch.setenv("HELMSIM_PROGRESS_DELAY", "0")
    assert StderrProgress(file=_Tty()).delay == 0.0
    monkeypatch.setenv("HELMSIM_PROGRESS_DELAY", "2.5")
    assert configured_delay() == 2.5
    for bad in ("-1", "soon", "nan", "inf", ""):
        monkeypatch.setenv("HELMSIM_PROGRESS_DELAY", bad)
        assert configured_delay() == DELAY, bad
