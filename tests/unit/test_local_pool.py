"""helmsim.taskpool.LocalPool: worker processes kept across rounds of tasks (a check sends its
fixed runs to the processes that made its profile passes), a task's error raised where its
value is read, and the workers ended when the block is left on an error."""

from __future__ import annotations

import os
import time

import pytest

from helmsim import taskpool


def _pid(_: int) -> int:
    return os.getpid()


def _fail(message: str) -> None:
    raise ValueError(message)


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_later_rounds_run_on_the_same_workers() -> None:
    with taskpool.LocalPool(2) as pool:
        first = {taskpool.value_of(pool.submit(_pid, i)) for i in range(4)}
        second = {taskpool.value_of(pool.submit(_pid, i)) for i in range(4)}
    assert os.getpid() not in first  # the tasks ran in worker processes
    assert second <= first and len(first) <= 2  # no new process for the second round


def test_a_task_error_is_raised_where_its_value_is_read() -> None:
    with taskpool.LocalPool(2) as pool:
        fut = pool.submit(_fail, "no such chart")
        with pytest.raises(ValueError, match="no such chart"):
            taskpool.value_of(fut)
        assert taskpool.value_of(pool.submit(_pid, 0)) != os.getpid()  # the pool still works


def test_leaving_on_an_error_ends_busy_workers_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with taskpool.LocalPool(2) as pool:
            futures = [pool.submit(_sleep, 600) for _ in range(2)]
            while not any(f.running() for f in futures):
                time.sleep(0.01)
            workers = list(pool._pool._processes.values())  # type: ignore[union-attr]  # noqa: SLF001
            raise KeyboardInterrupt
    assert time.monotonic() - started < 60  # not the 600 s the tasks would take
    assert all(not w.is_alive() for w in workers)
