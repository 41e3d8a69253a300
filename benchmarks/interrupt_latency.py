"""How long helmsim takes to stop after Ctrl-C (issue 12: "exits 130 within a second").

Each case starts a command in its own process group, waits for the moment it targets (Helm's
engine rendering, Monte-Carlo workers busy), sends SIGINT to the group as a terminal does and
measures the time until the one "interrupted" line and until the process has exited. Run it
on an otherwise idle machine: `python benchmarks/interrupt_latency.py [REPEATS]`.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "cli"))

from test_interrupt import SEED1, engine_rendering, pool_working  # noqa: E402


def measure(args: list[str], when: Callable[[int], bool]) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [sys.executable, "-m", "helmsim", *args, "--output", str(Path(tmp) / "out")],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )
        while not when(proc.pid):
            if proc.poll() is not None:
                raise SystemExit(f"{args[0]} ended before the moment to interrupt it")
            time.sleep(0.02)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        line_at: list[float] = []

        def read() -> None:
            assert proc.stderr is not None
            for _ in proc.stderr:
                line_at.append(time.monotonic() - sent)

        reader = threading.Thread(target=read)
        reader.start()
        proc.wait()
        exited = time.monotonic() - sent
        reader.join()
    return (line_at[0] if line_at else float("nan")), exited, proc.returncode


CASES = {
    "check, Helm's engine rendering": (["check", *SEED1, "--format", "json"], engine_rendering),
    "check --runs 400, workers busy": (
        ["check", *SEED1, "-p", "cilium-always", "--runs", "400", "--no-verify", "--format", "json"],
        pool_working,
    ),
    "simulate --runs 400, workers busy": (
        ["simulate", *SEED1, "-p", "cilium-always", "--runs", "400", "--format", "json"],
        pool_working,
    ),
}


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for name, (args, when) in CASES.items():
        lines, exits, codes = [], [], set()
        for _ in range(repeats):
            line, exited, code = measure(args, when)
            lines.append(line)
            exits.append(exited)
            codes.add(code)
        print(
            f"{name}: exit codes {sorted(codes)}; 'interrupted' after median {statistics.median(lines):.2f} s "
            f"(max {max(lines):.2f}); process gone after median {statistics.median(exits):.2f} s "
            f"(max {max(exits):.2f}) over {repeats} runs"
        )


if __name__ == "__main__":
    main()
