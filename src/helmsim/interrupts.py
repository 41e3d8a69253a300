"""Ctrl-C: one line, exit 130 within a second, every worker stopped, no partial file.

The CLI installs :func:`install` once. The first SIGINT raises :class:`Interrupted` in the main
thread — a ``BaseException`` that no ``except Exception`` swallows and that Click does not turn
into its own message — so ``finally`` blocks and context managers clean up on the way out:
report files are only ever renamed into place (``helmsim.report.atomic``), temporary
directories are removed, and process pools terminate their workers instead of waiting for
them (:func:`stop_pool`). A second Ctrl-C during that cleanup ends the process at once.

Worker processes ignore SIGINT (a terminal sends it to the whole process group): only the
parent decides, so no worker prints a traceback of its own.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported by every command at start-up; multiprocessing costs ~30 ms
    from concurrent.futures import ProcessPoolExecutor

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a process ended by Ctrl-C
MESSAGE = "interrupted"


class Interrupted(BaseException):
    """Ctrl-C (SIGINT) arrived; the command stops."""


_CLEANUPS: list[Callable[[], None]] = []


def on_stop(cleanup: Callable[[], None]) -> None:
    """Run ``cleanup`` when this process is stopped by Ctrl-C or by its pool's SIGTERM (e.g.
    end Helm's engine worker at once rather than after its render)."""
    _CLEANUPS.append(cleanup)


def run_cleanups() -> None:
    """Run the :func:`on_stop` callbacks, newest first; their errors are ignored."""
    for cleanup in reversed(_CLEANUPS):
        try:
            cleanup()
        except Exception:  # noqa: BLE001 - stopping must not fail
            pass


def _second(signum: int, frame: FrameType | None) -> None:
    os.write(2, f"{MESSAGE}\n".encode())
    os._exit(EXIT_INTERRUPTED)


def _first(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGINT, _second)
    raise Interrupted


def install() -> None:
    """Make SIGINT raise :class:`Interrupted` (main thread only; a no-op elsewhere)."""
    try:
        signal.signal(signal.SIGINT, _first)
    except ValueError:  # not the main thread of the main interpreter
        pass


@contextmanager
def deferred() -> Iterator[None]:
    """Hold a Ctrl-C until the block ends, then act on it as the handler in place would: for
    steps that must not stop half-way, like starting worker processes (a worker forked while
    its pool is torn down would fail to start and print a traceback)."""
    try:
        previous = signal.getsignal(signal.SIGINT)
        held: list[int] = []
        signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    except ValueError:  # not the main thread: signals are not delivered here anyway
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held and callable(previous):
            previous(signal.SIGINT, None)


def _terminated(signum: int, frame: FrameType | None) -> None:
    run_cleanups()
    os._exit(128 + signum)


def ignore_in_worker() -> None:
    """A pool worker's initializer: Ctrl-C is the parent's to handle; the parent's SIGTERM
    (:func:`stop_pool`) runs the :func:`on_stop` cleanups and ends the worker quietly."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminated)


def start_fork_server(mp_context: Any) -> None:
    """Start the fork server (if the context uses one) with SIGINT ignored. An ignored signal
    survives exec, so the server does not take a Ctrl-C while it imports the simulator
    (multiprocessing/forkserver.py ignores SIGINT only after its preload), and the workers it
    forks start ignoring it too. A Ctrl-C in the moment of the spawn itself is not seen."""
    if getattr(mp_context, "get_start_method", lambda: "")() != "forkserver":
        return
    from multiprocessing import forkserver

    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: nothing to protect here
        forkserver.ensure_running()
        return
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)


def stop_pool(pool: ProcessPoolExecutor, *, grace: float = 0.3) -> None:
    """End the workers now — SIGTERM (SIGKILL after ``grace`` seconds) — instead of waiting
    for their running tasks, then cancel what has not started. Workers are signalled before
    the pool is shut down: shutting down releases the queues a worker still starting needs."""
    processes = list(getattr(pool, "_processes", {}).values())  # concurrent.futures internals
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        proc.join(grace)
        if proc.is_alive():
            proc.kill()
            # SIGKILL cannot be caught or ignored: the wait is the kernel's, not the task's, and
            # a loaded machine can take longer than ``grace`` to reap the process
            proc.join()


def report() -> None:
    """Run the cleanups, print the one line and end the process with exit code 130 (the CLI's
    handler of :class:`Interrupted`).

    The exit handlers run (they unlink multiprocessing's semaphores, end Helm's engine worker),
    then the process ends without tearing the interpreter down: that teardown of a large import
    graph is what a user would otherwise wait for after the line.
    """
    try:
        signal.signal(signal.SIGINT, _second)
    except ValueError:  # not the main thread
        pass
    run_cleanups()
    try:
        sys.stderr.write(MESSAGE + "\n")
        sys.stderr.flush()
    except OSError:
        pass
    import atexit

    try:
        atexit._run_exitfuncs()  # what a normal exit runs first
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(EXIT_INTERRUPTED)


__all__ = [
    "EXIT_INTERRUPTED",
    "Interrupted",
    "deferred",
    "ignore_in_worker",
    "install",
    "on_stop",
    "run_cleanups",
    "start_fork_server",
    "report",
    "stop_pool",
]
