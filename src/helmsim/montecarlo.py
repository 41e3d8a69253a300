"""Monte Carlo: many seeded runs with sampled latencies, each outcome's probability and interval.

Run ``i`` of a report with seed ``S`` uses the seed :func:`run_seed` ``(S, i)`` (a hash, the same
on every machine and in every process), so the same ``S`` gives the same report whatever the
number of workers, and a failing run is replayed alone with ``--runs 1 --seed <run seed>``.
Runs are spread in chunks over local cores or, with ``backend="ray"``, over a Ray cluster
(``pip install helmsim[ray]``), through :mod:`helmsim.taskpool`. Each outcome's
probability carries a 95 % Wilson score interval (Wilson 1927; it stays inside [0, 1] and
behaves at 0 and n successes, unlike the normal approximation).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

from msgspec import Struct, field

from helmsim import taskpool
from helmsim.errors import InputError

Z95 = 1.959963984540054
"""The 97.5th percentile of the standard normal distribution (two-sided 95 %)."""

Backend = Literal["local", "ray"]


def run_seed(seed: int, index: int) -> int:
    """The seed of run ``index`` of a report seeded ``seed`` (48 bits of a SHA-256)."""
    digest = hashlib.sha256(f"helmsim-montecarlo:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def wilson(successes: int, runs: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for ``successes`` out of ``runs``."""
    if runs <= 0:
        return 0.0, 1.0
    p = successes / runs
    denom = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denom
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


class Observation(Struct, frozen=True):
    """One yes/no fact about a run: ``label`` of ``group`` happened (or not); ``failing`` marks
    facts worth a reproducible seed."""

    group: str
    label: str
    happened: bool = True
    failing: bool = False


class Task(Protocol):
    """What one run does: simulate with ``seed`` (latencies sampled) and report observations.

    Must be picklable for the process and Ray backends.
    """

    def __call__(self, seed: int) -> tuple[Observation, ...]: ...


class Stat(Struct, frozen=True):
    """How often one observation happened."""

    group: str
    label: str
    count: int
    runs: int
    failing: bool
    seed: int | None
    """A run seed in which it happened (the first such run), for failing observations."""

    @property
    def probability(self) -> float:
        return self.count / self.runs if self.runs else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.count, self.runs)

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.interval
        out: dict[str, Any] = {
            "group": self.group,
            "label": self.label,
            "count": self.count,
            "runs": self.runs,
            "probability": round(self.probability, 6),
            "interval95": [round(lo, 6), round(hi, 6)],
        }
        if self.seed is not None:
            out["seed"] = self.seed
        return out


class Report(Struct, frozen=True):
    """The aggregate of ``runs`` runs seeded ``seed``."""

    runs: int
    seed: int
    stats: tuple[Stat, ...] = field(default_factory=tuple)

    def groups(self) -> list[tuple[str, list[Stat]]]:
        out: dict[str, list[Stat]] = {}
        for s in self.stats:
            out.setdefault(s.group, []).append(s)
        return list(out.items())

    def find(self, group: str, label: str) -> Stat | None:
        return next((s for s in self.stats if s.group == group and s.label == label), None)

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "seed": self.seed, "stats": [s.to_dict() for s in self.stats]}


def aggregate(records: Sequence[tuple[int, int, Sequence[Observation]]], seed: int) -> Report:
    """Count each observation over ``(index, run seed, observations)`` records (any order)."""
    ordered = sorted(records, key=lambda r: r[0])
    counts: dict[tuple[str, str], list[Any]] = {}
    for _, rseed, observations in ordered:
        for o in observations:
            entry = counts.setdefault((o.group, o.label), [0, o.failing, None])
            entry[1] = entry[1] or o.failing
            if o.happened:
                entry[0] += 1
                if entry[2] is None:
                    entry[2] = rseed
    stats = tuple(
        Stat(g, label, c, len(ordered), failing, rs if failing else None)
        for (g, label), (c, failing, rs) in counts.items()
    )
    return Report(len(ordered), seed, stats)


# --- running ---------------------------------------------------------------------------------------


def _run_chunk(task: Task, items: Sequence[tuple[int, int]]) -> list[tuple[int, int, tuple[Observation, ...]]]:
    return [(i, s, tuple(task(s))) for i, s in items]


class _Chunk(Struct, frozen=True):
    """A task of the pool: several runs of one Monte-Carlo task (picklable)."""

    task: Task

    def __call__(self, items: Sequence[tuple[int, int]]) -> list[tuple[int, int, tuple[Observation, ...]]]:
        return _run_chunk(self.task, items)


def _chunks(items: list[tuple[int, int]], n: int) -> list[list[tuple[int, int]]]:
    size = max(1, math.ceil(len(items) / n))
    return [items[i : i + size] for i in range(0, len(items), size)]


def default_workers() -> int:
    """Local cores this process may use."""
    return taskpool.default_workers()


def run_many(
    task: Task,
    runs: int,
    seed: int,
    *,
    workers: int | None = None,
    backend: Backend | taskpool.Backend = "local",
    progress: Callable[[int], None] | None = None,
    stats: taskpool.PoolStats | None = None,
) -> Report:
    """Run ``task`` ``runs`` times with the derived seeds and aggregate the observations.

    ``backend`` is ``local``/``ray`` or a :class:`helmsim.taskpool.Backend` (with a Ray
    address); ``stats`` receives what each worker did (tasks, Helm loads, peak memory, retries).
    """
    if runs < 1:
        raise InputError(f"--runs {runs}: need at least 1 run")
    where = backend if isinstance(backend, taskpool.Backend) else taskpool.Backend(backend, workers)
    n = where.workers or taskpool.default_workers()
    items = [(i, run_seed(seed, i)) for i in range(runs)]
    if where.name == "local" and (n <= 1 or runs < 4):
        where = taskpool.Backend("local", 1)
    if where.name == "ray":  # one run per item: the pool batches them by the cluster's CPUs
        chunks = [[item] for item in items]
    else:
        chunks = _chunks(items, 1 if where.workers == 1 else n * 8)
    sizes = [len(c) for c in chunks]

    def step(done: int, total: int) -> None:
        if progress is not None:
            progress(sum(sizes[:done]))

    records: list[tuple[int, int, tuple[Observation, ...]]] = []
    for chunk in taskpool.run_tasks(_Chunk(task), chunks, where, progress=step, stats=stats):
        records.extend(chunk)
    return aggregate(records, seed)


# --- what a simulate run tells ---------------------------------------------------------------------


def observe(result: Any) -> tuple[Observation, ...]:
    """The facts of one simulation: each HelmRelease's outcome and whether its first attempt
    failed; for each Job whether its first pod had a connection dropped and whether it failed."""
    out: list[Observation] = []
    for o in result.releases:
        group = f"HelmRelease {o.namespace}/{o.name}" + ("" if o.simulated else " (not simulated)")
        out.append(Observation(group, f"outcome {o.outcome}", True, o.outcome != "Ready"))
        if o.simulated:
            first_failed = bool(o.history) and not o.history[0].get("ok", True)
            out.append(Observation(group, "first attempt failed", first_failed, True))
    first_pod: dict[str, str] = {}
    failed: set[str] = set()
    denied: set[str] = set()
    for e in result.trace:
        if e.what == "event" and e.obj.startswith("Job/") and e.data.get("reason") == "SuccessfulCreate":
            ns = e.obj.split("/")[1]
            first_pod.setdefault(e.obj, f"Pod/{ns}/{e.message.removeprefix('Created pod: ').strip()}")
        elif e.what == "status" and e.actor == "job-controller" and "; Failed=True" in e.message:
            failed.add(e.obj)
        elif e.what == "connect-denied":
            denied.add(e.obj)
    for job, pod in first_pod.items():
        group = job.replace("/", " ", 1)
        out.append(Observation(group, "first attempt denied (a connection of its first pod dropped)", pod in denied, True))
        out.append(Observation(group, "Failed", job in failed, True))
    return tuple(out)


class SimulateTask(Struct, frozen=True):
    """One ``simulate`` with sampled latencies (the ``helmsim simulate --runs`` task)."""

    profile: Any
    releases: tuple[Any, ...]
    horizon: float
    unmapped_ready_after: float

    def __call__(self, seed: int) -> tuple[Observation, ...]:
        return observe(self.run(seed))

    def run(self, seed: int) -> Any:
        """The simulation of run ``seed`` (``helmsim.simulate.SimulationResult``)."""
        from helmsim.simulate import simulate

        return simulate(
            self.profile,
            self.releases,
            horizon=self.horizon,
            seed=seed,
            sample_latencies=True,
            unmapped_ready_after=self.unmapped_ready_after,
            prepared=_prepared(self),
        )


_PREPARED: dict[int, tuple[Any, Any]] = {}


def _prepared(task: Any) -> Any:
    """The task's charts, rendered once per task object in this process (a worker runs many
    seeds of one task; the render is the same for every seed)."""
    from helmsim.simulate import prepare_charts

    cached = _PREPARED.get(id(task))
    if cached is None or cached[0] is not task:
        cached = (task, prepare_charts(task.profile, task.releases))
        _PREPARED.clear()
        _PREPARED[id(task)] = cached
    return cached[1]


# --- text ------------------------------------------------------------------------------------------


def percent(p: float) -> str:
    return f"{100 * p:6.2f} %"


def render_text(report: Report, *, title: str, replay: str) -> str:
    """The report as plain text (identical for identical reports)."""
    width = max((len(s.label) for s in report.stats), default=10) + 2
    lines = [
        f"{title}: {report.runs} runs, seed {report.seed}, latencies drawn from the profile's distributions",
        f"probability with its 95 % Wilson interval; 'seed' replays one such run: {replay}",
    ]
    for group, stats in report.groups():
        lines.append("")
        lines.append(group)
        for s in stats:
            lo, hi = s.interval
            count = f"{s.count}/{s.runs}"
            line = f"  {s.label:<{width}}{count:>11}  {percent(s.probability)}  [{percent(lo).strip()}, {percent(hi).strip()}]"
            if s.seed is not None:
                line += f"  seed {s.seed}"
            lines.append(line)
    return "\n".join(lines) + "\n"


__all__ = [
    "Observation",
    "Report",
    "SimulateTask",
    "Stat",
    "Task",
    "aggregate",
    "default_workers",
    "observe",
    "render_text",
    "run_many",
    "run_seed",
    "wilson",
]
