"""One profile of a check: its nominal simulation, the rules on it, and the tight-timing run when
races may hide; on worker processes when the matrix is large enough to pay for them.

A pass is a function of its inputs (the rendered charts, the HelmReleases, the profile), so the
profiles of a matrix run in any order, anywhere, with the same findings: :func:`run_passes`
returns them in matrix order whatever ran where. Local workers come from
:mod:`helmsim.taskpool`'s fork server; a run sent back from a worker carries its trace and its
rules' answers, not the live simulation (``result.sim`` is ``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import as_completed

from msgspec import Struct

from helmsim import taskpool
from helmsim.cluster.engine import gc_paused
from helmsim.cluster.netstate import POLICY_KINDS
from helmsim.cluster.profile import ClusterProfile
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Severity
from helmsim.diagnose.registry import RULES, RuleSpec, all_rules
from helmsim.diagnose.rules.network import RacesSettled, has_race_window
from helmsim.diagnose.runner import run_nominal, run_tight
from helmsim.diagnose.sampling import RACE_RULES, Charts
from helmsim.simulate import ReleaseInput

PARALLEL_MIN_OBJECTS = 400
"""Rendered objects, summed over the profiles to simulate, from which the passes run on worker
processes: below it, starting the workers (≈ 0.5 s) costs more than they save."""

Tick = Callable[[int, int], None]
OnPass = Callable[[ClusterProfile, ProfileRun, list[Candidate]], None]


def chart_policies(run: ProfileRun) -> set[str]:
    """The network policies the release ships (``Kind/ns/name``)."""
    return {r.ref for chart in run.charts.values() for r in chart.resources if r.kind in POLICY_KINDS}


def has_policies(run: ProfileRun) -> bool:
    """The release ships network policies and the profile enforces them: races may hide."""
    return run.profile.cni.enforces_policies and bool(chart_policies(run))


def run_rules(rules: Sequence[RuleSpec], run: ProfileRun) -> list[Candidate]:
    """What ``rules`` report on ``run``, rule by rule."""
    out: list[Candidate] = []
    for spec in rules:
        out.extend(run.candidates(spec))
    return out


def profile_pass(
    profile: ClusterProfile,
    releases: Sequence[ReleaseInput],
    charts: Charts,
    rules: Sequence[RuleSpec],
    *,
    horizon: float,
    tight: bool,
    given: ProfileRun | None = None,
) -> tuple[ProfileRun, list[Candidate]]:
    """The nominal run of ``profile`` (``given``, or simulated) and what the rules find on it;
    with ``tight``, the race rules on a tight-timing run too, as warnings (a race that only
    bites sometimes: "Ready by luck of timing"). The collector stays paused for the whole
    pass: its passes over the live simulations cost a fifth of a 1,000-object pass."""
    with gc_paused():
        nominal = given or run_nominal(profile, releases, horizon=horizon, charts=charts)
        found = run_rules(rules, nominal)
        if (
            tight
            and not any(c.rule in RACE_RULES for c in found)
            and (has_race_window(nominal) or has_policies(nominal))
        ):
            stop = RacesSettled(chart_policies(nominal))
            tight_run = run_tight(profile, releases, horizon=horizon, charts=charts, stop=stop)
            for c in run_rules([r for r in rules if r.id in RACE_RULES], tight_run):
                c.severity = min(c.severity, Severity.warning)
                found.append(c)
        return nominal, found


class PassTask(Struct, frozen=True):
    """:func:`profile_pass` as a picklable task of the pool: ``(profile, charts) -> (run, found)``."""

    releases: tuple[ReleaseInput, ...]
    rule_ids: tuple[str, ...]
    horizon: float
    tight: bool

    def __call__(self, item: tuple[ClusterProfile, Charts]) -> tuple[ProfileRun, list[Candidate]]:
        all_rules()  # registers the rule families in a fresh worker
        profile, charts = item
        rules = [RULES[i] for i in self.rule_ids]
        run, found = profile_pass(profile, self.releases, charts, rules, horizon=self.horizon, tight=self.tight)
        run.result.sim = None  # the live simulation stays here: generators do not pickle
        return run, found


def pass_workers(
    charts: Sequence[Charts], given: Sequence[ProfileRun | None], workers: int | None
) -> int:
    """:func:`workers_for` the passes :func:`run_passes` makes (the profiles without a run)."""
    todo = [c for c, g in zip(charts, given, strict=True) if g is None]
    return workers_for(sum(len(r.resources) for c in todo for r in c[0].values()), len(todo), workers)


def workers_for(objects: int, passes: int, workers: int | None) -> int:
    """How many local processes run ``passes`` passes of ``objects`` rendered objects in all:
    ``workers`` when given, else every usable core once the work is large enough."""
    if workers is not None:
        return max(1, min(workers, passes))
    if passes < 2 or objects < PARALLEL_MIN_OBJECTS:
        return 1
    return max(1, min(taskpool.default_workers(), passes))


def run_passes(
    profiles: Sequence[ClusterProfile],
    releases: Sequence[ReleaseInput],
    charts: Sequence[Charts],
    rules: Sequence[RuleSpec],
    *,
    horizon: float,
    tight: bool,
    given: Sequence[ProfileRun | None],
    tick: Tick | None = None,
    pool: taskpool.LocalPool | None = None,
    on_pass: OnPass | None = None,
) -> list[tuple[ProfileRun, list[Candidate]]]:
    """:func:`profile_pass` for every profile, in matrix order; the ones without a ``given`` run
    on ``pool`` (:func:`pass_workers` says when one pays), else in this process. ``on_pass`` is
    told each pass made on ``pool`` as it finishes (a check sends the fixed runs it names then)."""
    total = len(profiles)
    out: dict[int, tuple[ProfileRun, list[Candidate]]] = {}

    def record(i: int, result: tuple[ProfileRun, list[Candidate]]) -> None:
        out[i] = result
        if tick is not None:
            tick(len(out), total)

    for i, run in enumerate(given):
        if run is not None:
            record(i, profile_pass(profiles[i], releases, charts[i], rules, horizon=horizon, tight=tight, given=run))
    todo = [i for i in range(total) if i not in out]
    if pool is None:
        for i in todo:
            record(i, profile_pass(profiles[i], releases, charts[i], rules, horizon=horizon, tight=tight))
    elif todo:
        task = PassTask(tuple(releases), tuple(r.id for r in rules), horizon, tight)
        futures = {pool.submit(task, (profiles[i], charts[i])): i for i in todo}
        # the collector is paused while the runs come back: this process only unpickles them
        # (large traces), and its passes over them found nothing to free
        with gc_paused():
            for fut in as_completed(futures):
                i = futures[fut]
                record(i, taskpool.value_of(fut))
                if on_pass is not None:
                    on_pass(profiles[i], *out[i])
    return [out[i] for i in range(total)]
