"""Run a fleet: one task per rehearsal (a release × one values set), each the whole
``helmsim check`` of it across the matrix's profiles with its sampled runs, on the local pool or
on Ray; the reports come back in any order and are merged in matrix order.

The task interface: a task carries one rehearsal's :class:`~helmsim.simulate.ReleaseInput`\\ s
(HelmReleases, chart paths, values already read); :class:`RehearsalTask` (shared by every task,
sent once) carries the profiles, the config and the check options; the result is the
rehearsal's :class:`~helmsim.diagnose.check.CheckReport` without its simulations. Nothing in a
result depends on the process that computed it, so the merged report is the same bytes on every
backend. A faster engine (issue 15) changes what happens inside :meth:`RehearsalTask.__call__`,
not this interface.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct, field
from msgspec.structs import replace

from helmsim import taskpool
from helmsim.cluster.profile import ClusterProfile
from helmsim.config import Config
from helmsim.diagnose.check import CheckOptions, CheckReport, run_check
from helmsim.diagnose.model import Finding
from helmsim.fleet.matrix import RehearsalSpec
from helmsim.release_inputs import build_inputs
from helmsim.simulate import ReleaseInput


class Rehearsal(Struct, frozen=True):
    """One cell of the matrix with its inputs read (HelmReleases, values) on the driver."""

    spec: RehearsalSpec
    releases: tuple[ReleaseInput, ...]


def prepare(specs: Sequence[RehearsalSpec]) -> list[Rehearsal]:
    """Read every rehearsal's inputs before any task runs: bad input stops the fleet at once,
    as one line naming the file."""
    out = []
    for spec in specs:
        e = spec.entry
        releases = build_inputs(
            e.target,
            values=list(spec.values),
            sets=list(e.set),
            helmrelease=list(e.helmrelease),
            charts=list(e.chart),
            release_name=e.release_name,
            namespace=e.namespace,
            upgrade_from=e.upgrade_from,
            upgrade_from_values=list(e.upgrade_from_values),
            upgrade_from_set=[],
        )
        out.append(Rehearsal(spec, tuple(releases)))
    return out


class RehearsalTask(Struct, frozen=True):
    """``helmsim check`` of one rehearsal under every profile (picklable; sent once per run).

    The sampled runs of a rehearsal stay in its task (one process, in seed order), so a
    rehearsal's figures do not depend on where it ran.
    """

    profiles: tuple[ClusterProfile, ...]
    config: Config
    options: CheckOptions

    def __call__(self, releases: tuple[ReleaseInput, ...]) -> CheckReport:
        report = run_check(releases, self.profiles, config=self.config, options=self.options)
        report.runs = {}  # the simulations stay in the worker: heavy, and in no fleet report
        return report


def in_task(options: CheckOptions) -> CheckOptions:
    """``options`` with the profiles, the fixed runs and the sampled runs kept in the task's own
    process (the fleet's pool already has one task per core)."""
    options = replace(options, workers=1)
    if options.sampling is None:
        return options
    return replace(options, sampling=replace(options.sampling, backend="local", workers=1))


class FleetReport(Struct):
    """Every rehearsal's check report in matrix order."""

    profiles: list[str]
    runs: int
    seed: int
    rehearsals: list[tuple[RehearsalSpec, CheckReport]]
    notes: list[str] = field(default_factory=list)
    config: str | None = None
    """The ``.helmsim.yaml`` in effect (its path), ``None`` when there was none."""

    def at_or_above(self, level: str) -> list[tuple[RehearsalSpec, Finding]]:
        """Unsuppressed findings at or above ``level`` in any rehearsal."""
        return [(s, f) for s, r in self.rehearsals for f in r.at_or_above(level)]

    @property
    def findings(self) -> list[tuple[RehearsalSpec, Finding]]:
        return [(s, f) for s, r in self.rehearsals for f in r.findings]


def run_fleet(
    rehearsals: Sequence[Rehearsal],
    profiles: Sequence[ClusterProfile],
    *,
    config: Config,
    options: CheckOptions,
    backend: taskpool.Backend,
    progress: taskpool.Progress | None = None,
    stats: taskpool.PoolStats | None = None,
) -> FleetReport:
    """Run every rehearsal as a task on ``backend`` and merge the reports in matrix order."""
    task = RehearsalTask(tuple(profiles), config, in_task(options))
    reports = taskpool.run_tasks(
        task, [r.releases for r in rehearsals], backend, progress=progress, stats=stats
    )
    sampling = options.sampling
    return FleetReport(
        profiles=[p.name for p in profiles],
        runs=sampling.runs if sampling is not None else 0,
        seed=sampling.seed if sampling is not None else 0,
        rehearsals=[(r.spec, rep) for r, rep in zip(rehearsals, reports, strict=True)],
        config=config.source,
    )


__all__ = ["FleetReport", "Rehearsal", "RehearsalTask", "in_task", "prepare", "run_fleet"]
