"""``helmsim check --runs N --seed S``: sampled runs per profile, outcome probabilities, and race
findings whose sampled runs fail.

Each profile of the matrix is simulated ``N`` more times with every latency drawn from the
profile's distributions (:func:`helmsim.montecarlo.run_many`; run ``i`` uses the seed
``run_seed(S, i)``, the same one ``helmsim simulate --runs N --seed S`` uses, so ``helmsim
simulate … --profile P --runs 1 --seed <run seed>`` replays it). Per run the task records each
release's outcome, whether its first Helm action failed, and, for every race rule
(:data:`RACE_RULES`), whether the rule sees the race (a connection denied before the granting
policy is in effect) and whether the race fails the release (the rule reports it as an error:
the pod gave up and the release does not end Ready).

:func:`apply_sampling` feeds this into the profile's candidates: a race whose sampled runs fail
becomes an error, with the chain of the first failing run (replayed in this process) and
"fails in k/N sampled runs (p %, 95 % [lo, hi]); replay: …" in its message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from msgspec import Struct, field

from helmsim import montecarlo as mc
from helmsim import taskpool
from helmsim.cluster.profile import ClusterProfile
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import SAMPLED, Candidate, Severity
from helmsim.helm.actions import ChartRelease
from helmsim.simulate import DEFAULT_HORIZON, ReleaseInput, simulate

RACE_RULES = ("HS101", "HS112")
"""Rules about timing races: the ones whose severity the sampled runs decide."""

OUTCOMES = ("Ready", "Failed", "Stalled", "Blocked", "Progressing")
"""Release outcomes in report order (others follow, sorted)."""

_SEP = "\t"  # profile names, release refs and object refs never contain a tab

Charts = tuple[dict[str, ChartRelease], dict[str, ChartRelease]]


class SamplingOptions(Struct, frozen=True):
    """``--runs``, ``--seed`` and ``--backend`` of a check; ``workers`` for the local backend."""

    runs: int
    seed: int = 0
    backend: str = "local"
    workers: int | None = None
    ray_address: str | None = None
    """With ``backend="ray"``: the cluster (``helmsim.taskpool.Backend.ray_address``)."""
    profile_args: Mapping[str, str] = field(default_factory=dict)
    """How the user named each profile (``name -> NAME|FILE``), for the replay command."""


# --- one sampled run -------------------------------------------------------------------------------
def sampled_run(
    profile: ClusterProfile,
    releases: Sequence[ReleaseInput],
    charts: Charts,
    seed: int,
    horizon: float,
) -> ProfileRun:
    """The run ``helmsim simulate … --runs 1 --seed seed`` shows, as the rules query it."""
    result = simulate(profile, list(releases), horizon=horizon, seed=seed, sample_latencies=True)
    return ProfileRun(profile, list(releases), result, charts[0], charts[1], SAMPLED)


def race_candidates(run: ProfileRun, rule_ids: Sequence[str]) -> list[Candidate]:
    """What the race rules ``rule_ids`` report on ``run``."""
    from helmsim.diagnose.registry import RULES, all_rules

    all_rules()
    out: list[Candidate] = []
    for rid in rule_ids:
        out.extend(run.candidates(RULES[rid]))
    return out


def observe_run(run: ProfileRun, rule_ids: Sequence[str]) -> list[mc.Observation]:
    """The facts of one sampled run of one profile (grouped by profile and release)."""
    out: list[mc.Observation] = []
    first_failed: dict[str, bool] = {}
    for o in run.result.releases:
        ref = f"{o.namespace}/{o.name}"
        group = _SEP.join((run.name, ref))
        out.append(mc.Observation(group, f"outcome{_SEP}{o.outcome}", True, o.outcome != "Ready"))
        if o.simulated:
            first_failed[ref] = bool(o.history) and not o.history[0].get("ok", True)
            out.append(mc.Observation(group, "first-attempt-failed", first_failed[ref], True))
    seen: dict[tuple[str, str, str], bool] = {}
    for c in race_candidates(run, rule_ids):
        key = (c.rule, c.release, c.obj)
        seen[key] = seen.get(key, False) or c.severity >= Severity.error
    for (rule, release, obj), fails in sorted(seen.items()):
        group = _SEP.join((run.name, release))
        label = _SEP.join(("race", rule, obj))
        out.append(mc.Observation(group, label + _SEP + "denied", True, True))
        first = first_failed.get(release, False)
        out.append(mc.Observation(group, label + _SEP + "first-attempt", first, True))
        out.append(mc.Observation(group, label + _SEP + "fails", fails, True))
    return out


class CheckSampleTask(Struct, frozen=True):
    """One seed of ``check --runs``: every profile simulated with sampled latencies (picklable)."""

    profiles: tuple[ClusterProfile, ...]
    releases: tuple[ReleaseInput, ...]
    charts: tuple[Charts, ...]
    """Rendered charts per profile (the rules locate objects in them)."""
    rule_ids: tuple[str, ...] = RACE_RULES
    horizon: float = DEFAULT_HORIZON

    def __call__(self, seed: int) -> tuple[mc.Observation, ...]:
        out: list[mc.Observation] = []
        for profile, charts in zip(self.profiles, self.charts, strict=True):
            run = sampled_run(profile, self.releases, charts, seed, self.horizon)
            out.extend(observe_run(run, self.rule_ids))
        return tuple(out)


# --- the aggregate ----------------------------------------------------------------------------------
def stat_dict(s: mc.Stat) -> dict[str, Any]:
    """``count``, ``runs``, ``probability``, ``interval95`` and, when recorded, ``seed``."""
    lo, hi = s.interval
    out: dict[str, Any] = {
        "count": s.count,
        "runs": s.runs,
        "probability": round(s.probability, 6),
        "interval95": [round(lo, 6), round(hi, 6)],
    }
    if s.seed is not None and s.count:
        out["seed"] = s.seed
    return out


def pct(p: float) -> str:
    """``7.50 %``."""
    return f"{100 * p:.2f} %"


def stat_text(s: mc.Stat) -> str:
    """``3/40 (7.50 %, 95 % [2.58 %, 19.86 %])``."""
    lo, hi = s.interval
    return f"{s.count}/{s.runs} ({pct(s.probability)}, 95 % [{pct(lo)}, {pct(hi)}])"


class Distribution(Struct, frozen=True):
    """How often each outcome happened to one release under one profile."""

    release: str
    profile: str
    runs: int
    outcomes: tuple[mc.Stat, ...]
    """``label`` is the outcome (Ready, Failed, …); ``seed`` a run with it (non-Ready only)."""
    first_attempt_failed: mc.Stat | None
    simulated: bool = True

    @property
    def counts(self) -> dict[str, int]:
        return {s.label: s.count for s in self.outcomes}

    def not_ready(self) -> mc.Stat:
        """Runs that did not end Ready (with the first such run's seed)."""
        bad = [s for s in self.outcomes if s.label != "Ready"]
        seed = next((s.seed for s in bad if s.seed is not None), None)
        return mc.Stat(self.release, "not Ready", sum(s.count for s in bad), self.runs, True, seed)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "release": self.release,
            "profile": self.profile,
            "simulated": self.simulated,
            "runs": self.runs,
            "outcomes": [{"outcome": s.label, **stat_dict(s)} for s in self.outcomes],
        }
        if self.first_attempt_failed is not None:
            out["firstAttemptFailed"] = stat_dict(self.first_attempt_failed)
        return out


class RaceSample(Struct, frozen=True):
    """A race rule's object under one profile: runs where it was denied, runs it failed."""

    profile: str
    rule: str
    release: str
    obj: str
    denied: mc.Stat
    fails: mc.Stat
    first_attempt: mc.Stat
    """Runs where it was denied and the release's first attempt failed (remediation may
    still have made the release Ready)."""

    def figures(self) -> dict[str, Any]:
        """``denied``, ``firstAttemptFailed`` and ``fails`` as JSON."""
        return {
            "denied": stat_dict(self.denied),
            "firstAttemptFailed": stat_dict(self.first_attempt),
            "fails": stat_dict(self.fails),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "rule": self.rule,
            "release": self.release,
            "object": self.obj,
            "runs": self.fails.runs,
            **self.figures(),
        }


class Sampling(Struct, frozen=True):
    """The sampled runs of a check: ``runs`` per profile seeded ``seed``."""

    runs: int
    seed: int
    distributions: tuple[Distribution, ...]
    races: tuple[RaceSample, ...]
    replay: Mapping[str, str] = field(default_factory=dict)
    """The replay command per profile, ending in ``--seed`` (the run seed follows)."""

    def distribution(self, release: str, profile: str) -> Distribution | None:
        return next(
            (d for d in self.distributions if d.release == release and d.profile == profile), None
        )

    def race(self, profile: str, rule: str, obj: str) -> RaceSample | None:
        return next(
            (r for r in self.races if r.profile == profile and r.rule == rule and r.obj == obj),
            None,
        )

    def races_of(self, rule: str, release: str, obj: str) -> list[RaceSample]:
        return [r for r in self.races if (r.rule, r.release, r.obj) == (rule, release, obj)]

    def replay_command(self, profile: str, seed: int) -> str:
        return (
            f"{self.replay.get(profile, f'helmsim simulate … -p {profile} --runs 1 --seed')} {seed}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "seed": self.seed,
            "distributions": [d.to_dict() for d in self.distributions],
            "races": [r.to_dict() for r in self.races],
        }


def summarize(
    report: mc.Report,
    profiles: Sequence[str],
    releases: Sequence[ReleaseInput],
    replay: Mapping[str, str] | None = None,
) -> Sampling:
    """Distributions per (release, profile) in matrix order and the race samples."""
    simulated = {r.hr.ref: r.chart is not None for r in releases}
    by_group: dict[tuple[str, str], dict[str, mc.Stat]] = {}
    for s in report.stats:
        profile, release = s.group.split(_SEP, 1)
        by_group.setdefault((profile, release), {})[s.label] = s
    order = {p: i for i, p in enumerate(profiles)}
    dists: list[Distribution] = []
    races: list[RaceSample] = []
    for (profile, release), stats in sorted(
        by_group.items(), key=lambda kv: (order.get(kv[0][0], len(order)), kv[0][1])
    ):
        outcomes = {
            label.split(_SEP, 1)[1]: s
            for label, s in stats.items()
            if label.startswith("outcome" + _SEP)
        }
        keys = [k for k in OUTCOMES if k in outcomes] + sorted(
            k for k in outcomes if k not in OUTCOMES
        )
        dists.append(
            Distribution(
                release,
                profile,
                report.runs,
                tuple(_relabel(outcomes[k], k) for k in keys),
                stats.get("first-attempt-failed"),
                simulated.get(release, True),
            )
        )
        for label, s in sorted(stats.items()):
            parts = label.split(_SEP)
            if parts[0] == "race" and parts[-1] == "denied":
                fails = stats[_SEP.join([*parts[:-1], "fails"])]  # recorded together
                first = stats[_SEP.join([*parts[:-1], "first-attempt"])]
                races.append(RaceSample(profile, parts[1], release, parts[2], s, fails, first))
    return Sampling(report.runs, report.seed, tuple(dists), tuple(races), dict(replay or {}))


def _relabel(s: mc.Stat, label: str) -> mc.Stat:
    return mc.Stat(s.group, label, s.count, s.runs, s.failing, s.seed)


def sample(
    profiles: Sequence[ClusterProfile],
    releases: Sequence[ReleaseInput],
    charts: Sequence[Charts],
    options: SamplingOptions,
    *,
    horizon: float = DEFAULT_HORIZON,
    rule_ids: Sequence[str] = RACE_RULES,
    progress: Callable[[str, int, int], None] | None = None,
) -> Sampling:
    """Run ``options.runs`` seeds of every profile and aggregate them.

    ``--runs 1`` is the run seeded ``options.seed`` itself (as for ``helmsim simulate``), so a
    replay seed from a report can be checked alone; more runs use the derived run seeds.
    """
    task = CheckSampleTask(
        tuple(profiles), tuple(releases), tuple(charts), tuple(rule_ids), horizon
    )
    if options.runs == 1:
        report = mc.aggregate([(0, options.seed, task(options.seed))], options.seed)
    else:
        report = mc.run_many(
            task,
            options.runs,
            options.seed,
            backend=taskpool.Backend(options.backend, options.workers, options.ray_address),  # type: ignore[arg-type]
            progress=None if progress is None else lambda done: progress("sampled runs", done, options.runs),
        )
    suffix = "" if horizon == DEFAULT_HORIZON else f" --horizon {horizon:g}s"
    replay = {
        p.name: f"helmsim simulate … -p {options.profile_args.get(p.name, p.name)}{suffix} --runs 1 --seed"
        for p in profiles
    }
    return summarize(report, [p.name for p in profiles], releases, replay)


# --- feeding the findings -----------------------------------------------------------------------------
def race_note(sampling: Sampling, race: RaceSample) -> str:
    """``fails in k/N sampled runs (p %, 95 % [lo, hi]), …; replay: …`` for a race's message.

    The replay names the first run where the race failed the release, else the first where it
    failed a first attempt, else the first where it was denied.
    """
    f = race.fails
    lo, hi = f.interval
    text = f"fails in {f.count}/{f.runs} sampled runs ({pct(f.probability)}, 95 % [{pct(lo)}, {pct(hi)}])"
    if race.first_attempt.count > f.count:
        text += f", its first attempt in {race.first_attempt.count}/{f.runs}"
    text += f", denied in {race.denied.count}/{race.denied.runs}"
    seed = next((s.seed for s in (f, race.first_attempt, race.denied) if s.count), None)
    if seed is not None:
        text += f"; replay: {sampling.replay_command(race.profile, seed)}"
    return text


def apply_sampling(
    found: list[Candidate],
    profile: str,
    sampling: Sampling,
    replay: Callable[[int], ProfileRun],
    rule_ids: Sequence[str] = RACE_RULES,
) -> list[Candidate]:
    """``found`` (one profile's candidates) with the sampled races fed in.

    Every race candidate's message gains its sampled figures. A race that fails the release in
    some sampled run and is not already an error gets an error candidate from the first failing
    run (replayed with ``replay(seed)``); a race seen only in sampled runs gets a candidate from
    the first run that saw it. Candidates of one (rule, object) keep the worst severity when the
    findings are merged.
    """
    out = list(found)
    cache: dict[int, list[Candidate]] = {}

    def from_run(seed: int, race: RaceSample) -> Candidate | None:
        if seed not in cache:
            cache[seed] = race_candidates(replay(seed), rule_ids)
        hits = [
            c
            for c in cache[seed]
            if (c.rule, c.release, c.obj) == (race.rule, race.release, race.obj)
        ]
        return max(hits, key=lambda c: c.severity) if hits else None

    races = [r for r in sampling.races if r.profile == profile and r.rule in rule_ids]
    unseen = {(c.rule, c.release, c.obj) for c in found if c.rule in rule_ids} - {
        (r.rule, r.release, r.obj) for r in races
    }
    for rule, release, obj in sorted(unseen):
        never = mc.Stat(release, "", 0, sampling.runs, True, None)
        races.append(RaceSample(profile, rule, release, obj, never, never, never))
    for race in races:
        note = race_note(sampling, race)
        mine = [c for c in out if (c.rule, c.release, c.obj) == (race.rule, race.release, race.obj)]
        for c in mine:
            c.message = f"{c.message}; {note}"
        worst = max((c.severity for c in mine), default=None)
        seed: int | None = None
        if race.fails.count and (worst is None or worst < Severity.error):
            seed = race.fails.seed
        elif not mine and race.denied.count:
            seed = race.denied.seed
        if seed is None:
            continue
        replayed = from_run(seed, race)
        if replayed is None:  # the replay disagrees with the worker (never expected): keep the figures
            if mine and race.fails.count:
                for m in mine:
                    m.severity = Severity.error
            continue
        replayed.variant = SAMPLED
        replayed.message = f"{replayed.message}; {note}"
        out.append(replayed)
    return out


__all__ = [
    "OUTCOMES",
    "RACE_RULES",
    "SAMPLED",
    "CheckSampleTask",
    "Distribution",
    "RaceSample",
    "Sampling",
    "SamplingOptions",
    "apply_sampling",
    "observe_run",
    "race_candidates",
    "race_note",
    "sample",
    "sampled_run",
    "stat_dict",
    "stat_text",
    "summarize",
]
