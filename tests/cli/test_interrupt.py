"""Ctrl-C for real (issue 12): SIGINT sent to the process group of a running `check` or
`simulate --runs`, as a terminal sends it. The command ends with one line and exit 130, its
worker processes are gone, the previous report is intact and no partial file is left.

Ctrl-C 2–5 s into `check` or `simulate --runs` used to hang until killed, or to print up to
69 lines of worker tracebacks. The tests wait for the moment they target (Helm's engine
rendering, Monte-Carlo workers running) rather than for a fixed time. How fast the command
ends is measured by `benchmarks/interrupt_latency.py`, not asserted here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helmsim import interrupts

ROOT = Path(__file__).resolve().parents[2]
SEED1 = ["examples/seed1-migrate-race", "--helmrelease", "examples/seed1-migrate-race/flux"]
HANG = 60.0  # a command still running this long after Ctrl-C hangs

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="finds the worker processes through /proc (Linux)"
)


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def descendants(pid: int) -> list[int]:
    kids = _children()
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def engine_rendering(pid: int) -> bool:
    return any("helmsim.engine_worker" in cmdline(p) for p in descendants(pid))


def cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime + stime


def pool_working(pid: int) -> bool:
    """Monte-Carlo workers (children of the fork server) have simulated for a while."""
    kids = _children()
    servers = [p for p in kids.get(pid, []) if "forkserver" in cmdline(p)]
    workers = [w for s in servers for w in kids.get(s, [])]
    return any(cpu_ticks(w) > 20 for w in workers)


def interrupt(args: list[str], when: Callable[[int], bool], out: Path) -> tuple[int, str, list[int]]:
    """Start ``helmsim ARGS`` in its own process group, wait until ``when(pid)``, send SIGINT
    to the group; return the exit code, stderr and every process it had started."""
    out.write_text("the previous report\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "helmsim", *args, "--output", str(out)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while not when(proc.pid):
            assert proc.poll() is None, "the command ended before the moment to interrupt it"
            assert time.monotonic() < deadline, "the moment to interrupt never came"
            seen.update(descendants(proc.pid))
            time.sleep(0.05)
        seen.update(descendants(proc.pid))
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err.decode(), sorted(seen)


def assert_clean_stop(code: int, err: str, processes: list[int], out: Path) -> None:
    assert code == interrupts.EXIT_INTERRUPTED, err
    assert err == "interrupted\n"  # one line: no traceback from us or from a worker
    deadline = time.monotonic() + 10
    while any(running(p) for p in processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in processes if running(p)] == []  # every worker stopped
    assert out.read_text() == "the previous report\n"
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]  # no partial file


def test_ctrl_c_while_helms_engine_renders_in_check(tmp_path: Path) -> None:
    out = tmp_path / "check.json"
    code, err, procs = interrupt(["check", *SEED1, "--format", "json"], engine_rendering, out)
    assert procs, "the engine worker was running"
    assert_clean_stop(code, err, procs, out)


def test_ctrl_c_while_check_runs_monte_carlo_workers(tmp_path: Path) -> None:
    out = tmp_path / "check.sarif"
    args = ["check", *SEED1, "-p", "cilium-always", "--runs", "400", "--no-verify", "--format", "sarif"]
    code, err, procs = interrupt(args, pool_working, out)
    assert len(procs) >= 2  # the fork server and its workers (and their engines)
    assert_clean_stop(code, err, procs, out)


def test_ctrl_c_while_simulate_runs_monte_carlo_workers(tmp_path: Path) -> None:
    out = tmp_path / "runs.json"
    args = ["simulate", *SEED1, "-p", "cilium-always", "--runs", "400", "--format", "json"]
    code, err, procs = interrupt(args, pool_working, out)
    assert len(procs) >= 2  # the fork server and its workers (and their engines)
    assert_clean_stop(code, err, procs, out)


_WIDE_TEMPLATE = """{{- range $i := until 120 }}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-{{ $i }}}
data: {key: v}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-{{ $i }}}
spec:
  replicas: 2
  selector: {matchLabels: {app: app-{{ $i }}}}
  template:
    metadata: {labels: {app: app-{{ $i }}}}
    spec:
      containers: [{name: app, image: registry.example/app:1.0.0}]
{{- end }}
"""


def test_ctrl_c_while_check_passes_run_on_workers(tmp_path: Path) -> None:
    # 240 objects under two profiles: the passes (then the fixed runs) run on one local pool
    chart = tmp_path / "charts" / "wide"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: wide\nversion: 0.1.0\n")
    (chart / "templates" / "objects.yaml").write_text(_WIDE_TEMPLATE)
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "check.json"
    args = ["check", str(chart), "--release-name", "wide", "-p", "kind", "-p", "eks-gp3", "--format", "json"]
    code, err, procs = interrupt(args, pool_working, out)
    assert len(procs) >= 2  # the fork server and its workers
    assert_clean_stop(code, err, procs, out)


# --- the pieces ---------------------------------------------------------------------------------


def test_deferred_holds_a_ctrl_c_until_the_block_ends() -> None:
    previous = signal.getsignal(signal.SIGINT)
    interrupts.install()
    try:
        reached_end = False
        with pytest.raises(interrupts.Interrupted):
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.01)  # let the handler run: it only records
                reached_end = True
        assert reached_end
    finally:
        signal.signal(signal.SIGINT, previous)


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_stop_pool_ends_busy_workers_without_waiting_for_them() -> None:
    from concurrent.futures import ProcessPoolExecutor

    from helmsim.taskpool import mp_context

    ctx = mp_context()
    interrupts.start_fork_server(ctx)
    pool = ProcessPoolExecutor(max_workers=2, mp_context=ctx, initializer=interrupts.ignore_in_worker)
    futures = [pool.submit(_sleep, 600) for _ in range(4)]
    while not any(f.running() for f in futures):
        time.sleep(0.01)
    workers = list(pool._processes.values())  # noqa: SLF001 - what stop_pool must end
    started = time.monotonic()
    interrupts.stop_pool(pool)
    assert time.monotonic() - started < 30  # not the 600 s the tasks would take
    assert all(not w.is_alive() for w in workers)
    # the executor's management thread marks the futures of the broken pool; give it a moment
    deadline = time.monotonic() + 10
    while not all(f.done() for f in futures) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(f.done() for f in futures)  # cancelled, or failed with the broken pool


_LEAK = """
import os, sys, multiprocessing as mp
if sys.argv[1] == "helmsim":
    from helmsim.entry import quiet_resource_tracker
    quiet_resource_tracker()
lock = mp.get_context("forkserver").Lock()  # registered with the resource tracker
os._exit(0)  # as after a Ctrl-C: the lock is never finalised
"""


@pytest.mark.parametrize("setup", ["plain", "helmsim"])
def test_the_resource_tracker_adds_no_line_after_a_ctrl_c(setup: str) -> None:
    # The tracker outlives the process and reports what it cleans up on the stderr it inherited
    # (run() returns once the tracker has closed it too): a plain interpreter shows the warning,
    # helmsim's start-up keeps it off the user's terminal.
    done = subprocess.run([sys.executable, "-c", _LEAK, setup], capture_output=True, text=True, timeout=60)
    if setup == "plain":
        assert "leaked semaphore" in done.stderr
    else:
        assert done.stderr == ""
