"""Progress on stderr for work that takes more than a second (Rich), and silence otherwise.

One :class:`StderrProgress` per command: each phase (``simulating 4 profiles × 6 HelmReleases``,
``sampled runs``, ``re-simulating fixes``) is a bar with its count and elapsed time. Nothing is
drawn until the work has taken :data:`DELAY` seconds (``HELMSIM_PROGRESS_DELAY``), nothing at all when stderr is not a
terminal or with ``--quiet``, and the bars are removed when the work is done (``transient``), so
stdout and the report never carry them.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import IO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

DELAY = 1.0
"""Seconds of work before any progress is shown (``HELMSIM_PROGRESS_DELAY`` overrides it)."""


def configured_delay() -> float:
    """``HELMSIM_PROGRESS_DELAY`` in seconds when it is a number ≥ 0, else :data:`DELAY`."""
    raw = os.environ.get("HELMSIM_PROGRESS_DELAY", "")
    try:
        value = float(raw)
    except ValueError:
        return DELAY
    return value if value >= 0 and value == value and value != float("inf") else DELAY

Sink = Callable[[str, int, int], None]
"""``(phase, done, total)``: what the pipeline reports (no Rich below the CLI)."""


class StderrProgress:
    """Bars per phase on stderr after :data:`DELAY` seconds; inert when ``enabled`` is false or
    ``file`` (default stderr) is not a terminal."""

    def __init__(self, *, enabled: bool = True, file: IO[str] | None = None, delay: float | None = None) -> None:
        out = file if file is not None else sys.stderr
        self.enabled = enabled and out.isatty()
        self.delay = configured_delay() if delay is None else delay
        self._file = out
        self._bar: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._started = False

    def __enter__(self) -> StderrProgress:
        if self.enabled:
            console = Console(file=self._file, force_terminal=True, soft_wrap=True)
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self._timer = threading.Timer(self.delay, self._start)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _start(self) -> None:
        with self._lock:
            if self._bar is not None and not self._started:
                self._bar.start()
                self._started = True

    def update(self, phase: str, done: int, total: int) -> None:
        """Set ``phase``'s count (a :data:`Sink`)."""
        if self._bar is None:
            return
        with self._lock:
            task = self._tasks.get(phase)
            if task is None:
                task = self._tasks[phase] = self._bar.add_task(phase, total=total)
            self._bar.update(task, completed=done, total=total)

    def counter(self, phase: str, total: int) -> Callable[[int], None]:
        """A ``done -> None`` callback for one phase (``montecarlo.run_many(progress=…)``)."""
        return lambda done: self.update(phase, done, total)

    @property
    def sink(self) -> Sink | None:
        """:meth:`update` when drawing, else ``None`` (callers skip the bookkeeping)."""
        return self.update if self._bar is not None else None

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._bar is not None and self._started:
                self._bar.stop()
            self._bar = None
