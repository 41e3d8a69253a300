"""Benchmark: the discrete-event clock. SimPy against a small heapq scheduler, on the two
shapes the simulator uses (issue 4, "SimPy or a small heap scheduler: measure and choose").

* processes: N generator processes, each sleeping K times (Helm actions, the kubelet, the
  poller are written this way);
* callbacks: N x K one-shot callbacks scheduled ahead (``Simulation.after``: controllers
  reacting to store writes after a latency).

Both clocks run the same deterministic workload (delays from ``random.Random(0)``) and must end
at the same simulated time, so the figures compare like with like. The choice it documents
(SimPy, src/helmsim/cluster/engine.py) trades some speed for SimPy's events, ``any_of`` /
``all_of`` conditions, interrupts and process return values, which the Helm actions and the
helm-controller reconciler use.

Run: python benchmarks/engine_clock.py [--processes N] [--steps K] [--repeat R]
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import random
import time
from collections.abc import Callable, Generator
from typing import Any

import simpy


class HeapClock:
    """A minimal scheduler: a heap of (time, seq, action); generators yield delays."""

    def __init__(self) -> None:
        self.now = 0.0
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()

    def after(self, delay: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (self.now + delay, next(self._seq), fn))

    def process(self, gen: Generator[float, None, None]) -> None:
        def step() -> None:
            try:
                delay = next(gen)
            except StopIteration:
                return
            self.after(delay, step)

        self.after(0.0, step)

    def run(self) -> int:
        n = 0
        queue = self._queue
        while queue:
            self.now, _, fn = heapq.heappop(queue)
            fn()
            n += 1
        return n


def _delays(processes: int, steps: int) -> list[list[float]]:
    rng = random.Random(0)
    return [[rng.uniform(0.01, 5.0) for _ in range(steps)] for _ in range(processes)]


def simpy_processes(delays: list[list[float]]) -> tuple[float, int]:
    env = simpy.Environment()

    def proc(ds: list[float]) -> Generator[Any, Any, None]:
        for d in ds:
            yield env.timeout(d)

    for ds in delays:
        env.process(proc(ds))
    env.run()
    return float(env.now), sum(len(ds) for ds in delays)


def heap_processes(delays: list[list[float]]) -> tuple[float, int]:
    clock = HeapClock()

    def proc(ds: list[float]) -> Generator[float, None, None]:
        yield from ds

    for ds in delays:
        clock.process(proc(ds))
    clock.run()
    return clock.now, sum(len(ds) for ds in delays)


def simpy_callbacks(delays: list[list[float]]) -> tuple[float, int]:
    env = simpy.Environment()
    fired = [0]

    def bump(_ev: Any) -> None:
        fired[0] += 1

    for ds in delays:
        for d in ds:
            env.timeout(d).callbacks.append(bump)
    env.run()
    return float(env.now), fired[0]


def heap_callbacks(delays: list[list[float]]) -> tuple[float, int]:
    clock = HeapClock()
    fired = [0]

    def bump() -> None:
        fired[0] += 1

    for ds in delays:
        for d in ds:
            clock.after(d, bump)
    clock.run()
    return clock.now, fired[0]


def _best(
    fn: Callable[[list[list[float]]], tuple[float, int]], delays: list[list[float]], repeat: int
) -> tuple[float, float, int]:
    best = float("inf")
    end, count = 0.0, 0
    for _ in range(repeat):
        start = time.perf_counter()
        end, count = fn(delays)
        best = min(best, time.perf_counter() - start)
    return best, end, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    delays = _delays(args.processes, args.steps)
    print(
        f"workload: {args.processes} x {args.steps} = {args.processes * args.steps:,} timed events, best of {args.repeat}"
    )
    for shape, pair in (
        ("processes", (simpy_processes, heap_processes)),
        ("callbacks", (simpy_callbacks, heap_callbacks)),
    ):
        results = {}
        for name, fn in zip(("simpy", "heapq"), pair, strict=True):
            wall, end, count = _best(fn, delays, args.repeat)
            results[name] = (wall, end)
            print(
                f"{shape:10s} {name:6s} {count / wall:>12,.0f} events/s  ({wall:.3f} s wall, ends at t={end:.3f})"
            )
        assert abs(results["simpy"][1] - results["heapq"][1]) < 1e-9, "the two clocks disagree"
        ratio = results["simpy"][0] / results["heapq"][0]
        print(f"{shape:10s} simpy takes {ratio:.2f}x the heapq time")


if __name__ == "__main__":
    main()
