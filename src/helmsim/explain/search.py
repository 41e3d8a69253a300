"""The search: every hypothesis simulated once at nominal latencies and ``runs`` times with
sampled ones, each run compared with the observation; then each candidate fix re-simulated under
every hypothesis that reproduces it.

Runs go through :mod:`helmsim.taskpool` (local processes or Ray), seeded with
:func:`helmsim.montecarlo.run_seed`, so the same inputs and seed give the same explanation
whatever the workers. Posterior weights are ``prior × P(reproduces)``, normalised over the
hypotheses that reproduce.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from helmsim import taskpool
from helmsim.cluster.profile import ClusterProfile, profile_from_mapping
from helmsim.diagnose import fixes as fixlib
from helmsim.diagnose.check import _first_attempt_only
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Step
from helmsim.diagnose.registry import all_rules
from helmsim.explain.hypotheses import Hypothesis, enumerate_hypotheses, limit
from helmsim.explain.match import Fact, facts, first_miss, job_states, reproduces
from helmsim.explain.observation import LoadedObservation
from helmsim.faults import ScenarioFaults
from helmsim.montecarlo import run_seed, wilson
from helmsim.scenario import Fault
from helmsim.simulate import DEFAULT_HORIZON, ReleaseInput, SimulationResult, prepare_charts, simulate

Charts = tuple[dict[str, Any], dict[str, Any]]
DETERMINISTIC = -1
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
SALIENT = (
    "fault",
    "policy-in-effect",
    "connect-timeout",
    "connect-refused",
    "container-exited",
    "condition",
)
SALIENT_REASONS = (
    "BackoffLimitExceeded", "WaitForFirstConsumer", "ProvisioningFailed", "FailedScheduling", "ErrImagePull",
    "InspectFailed", "ErrImageNeverPull",
)


class Options(Struct, frozen=True):
    """How hard to search."""

    runs: int = 10
    """Sampled runs per hypothesis (plus one at nominal latencies)."""
    seed: int = 0
    horizon: float = DEFAULT_HORIZON
    max_hypotheses: int | None = None
    fix_runs: int = 3
    """Sampled runs per fix and hypothesis (plus one at nominal latencies)."""
    verify_fixes: bool = True
    backend: taskpool.Backend = field(default_factory=taskpool.Backend)


class RunRecord(Struct, frozen=True):
    """What one run showed."""

    hypothesis: str
    fix: str | None
    run: int
    seed: int
    facts: tuple[Fact, ...]
    struck: bool
    outcome: str
    message: str
    chain: tuple[Step, ...] = ()
    fixes: tuple[tuple[str, str], ...] = ()
    causes: tuple[str, ...] = ()
    jobs: tuple[tuple[str, str], ...] = ()
    """The observed Jobs' ends (fix runs): Completed, Failed or running."""

    @property
    def converged(self) -> bool:
        """Ready (on the first attempt, for fix runs) and every observed Job completed."""
        return self.outcome == "Ready" and all(state == "Completed" for _, state in self.jobs)


# After a fixed release is Ready, how long the simulation goes on for the observed Jobs to end.
JOB_GRACE = 900.0


class ExplainTask(Struct, frozen=True):
    """Simulate one (hypothesis, fix, run) item and compare it with the observation (picklable)."""

    profiles: Mapping[str, ClusterProfile]
    charts: Mapping[str, Charts]
    releases: tuple[ReleaseInput, ...]
    hypotheses: Mapping[str, Hypothesis]
    observation: LoadedObservation
    horizon: float

    def __call__(self, item: tuple[str, str | None, int, int]) -> RunRecord:
        hid, fix, run, seed = item
        h = self.hypotheses[hid]
        profile = self.profiles[h.profile_key]
        result = self.simulate(h, fix, run, seed)
        found = tuple(facts(result, self.observation))
        struck = any(e.what == "fault" for e in result.trace) or bool(h.cni)
        out = _outcome(result)
        rec = RunRecord(hid, fix, run, seed, found, struck, out[0], out[1])
        if fix is not None:
            rec = replace(rec, jobs=tuple(self._finish_jobs(result).items()))
        if fix is None:
            rec = replace(rec, chain=tuple(_chain(result)))
        if run == DETERMINISTIC and fix is None:
            pr = ProfileRun(profile, list(self.releases), result, *self.charts[h.profile_key])
            keys, causes = _rule_fixes(pr)
            rec = replace(rec, fixes=keys, causes=causes)
        return rec

    def _finish_jobs(self, result: SimulationResult) -> dict[str, str]:
        """Let the observed Jobs end: a release can be Ready while its Job still retries."""
        globs = [w.object for w in self.observation.observation.workloads if w.object.startswith(("Job/", "CronJob/"))]
        states = job_states(result, globs)
        sim, end = result.sim, result.end_time + JOB_GRACE
        while sim is not None and "running" in states.values() and sim.now < end and sim.env._queue:
            sim.run(until=min(end, sim.now + 30.0))
            states = job_states(result, globs)
        return states

    def simulate(self, h: Hypothesis, fix: str | None, run: int, seed: int) -> SimulationResult:
        profile = self.profiles[h.profile_key]
        rendered, previous = self.charts[h.profile_key]
        releases = list(self.releases)
        if fix is not None:
            transform = fixlib.transform_for(fix)
            assert transform is not None
            if transform.charts is not None:
                rendered = {ref: transform.charts(ref, c) for ref, c in rendered.items()}
            user = transform.helmreleases
            # a fix must converge on its first attempt, as check verifies it
            releases = [replace(r, hr=_first_attempt_only(user(r.hr) if user else r.hr)) for r in releases]
        faults = ScenarioFaults([Fault.model_validate(dict(f)) for f in h.faults])
        return simulate(
            profile,
            releases,
            horizon=self.horizon,
            seed=seed,
            sample_latencies=run != DETERMINISTIC,
            faults=faults,
            setup=faults.setup,
            prepared=(rendered, previous),
        )


def _outcome(result: SimulationResult) -> tuple[str, str]:
    o = next((r for r in result.releases if r.simulated), result.releases[0] if result.releases else None)
    return (o.outcome, o.message) if o is not None else ("Unknown", "")


# The rule that only restates the outcome; the other findings name a mechanism.
GENERIC_RULES = ("HS100",)


def _rule_fixes(run: ProfileRun) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """The mechanical fixes ``helmsim check``'s rules propose on ``run``, and their findings
    (mechanisms first: ``summary (id slug): message``)."""
    keys: dict[str, str] = {}
    causes: list[str] = []
    for spec in sorted(all_rules(), key=lambda r: r.id in GENERIC_RULES):
        for c in run.candidates(spec):
            causes.append(f"{spec.summary} ({spec.id} {spec.slug}): {c.message}")
            for fx in c.fixes:
                if fx.key and fixlib.transform_for(fx.key) is not None:
                    keys.setdefault(fx.key, fx.summary)
    return tuple(keys.items()), tuple(dict.fromkeys(causes))


def _chain(result: SimulationResult) -> list[Step]:
    """The causal chain of the release's first failure (salient steps), else its salient events."""
    trace = result.trace
    failed = next(
        (e for e in trace if e.what == "condition" and e.data.get("status") == "False" and str(e.data.get("reason", "")).endswith("Failed")),
        None,
    )
    steps = []
    if failed is not None:
        steps = [e for e in trace.chain(failed.id) if e.what in SALIENT or e.data.get("reason") in SALIENT_REASONS]
    if len(steps) < 3:
        until = failed.time if failed is not None else result.end_time
        steps = [
            e
            for e in trace
            if e.time <= until and (e.what in SALIENT[:-1] or e.data.get("reason") in SALIENT_REASONS)
        ]
        steps = steps[:11] + ([failed] if failed is not None else [])
    out: list[Step] = []
    for e in steps:
        if out and out[-1].obj == e.obj and out[-1].text == e.message:
            continue  # a repeated event (a claim's WaitForFirstConsumer every 15 s) once
        out.append(Step(e.time, e.obj, e.message.splitlines()[0], e.id))
    return out[-12:]


# --- the search ---------------------------------------------------------------------------------------
class Verdict(Struct):
    """One hypothesis after the search."""

    hypothesis: Hypothesis
    runs: int
    reproduced: int
    deterministic: bool
    inert: bool
    reason: str = ""
    reason_count: int = 0
    posterior: float = 0.0
    chain: tuple[Step, ...] = ()
    causes: tuple[str, ...] = ()

    @property
    def probability(self) -> float:
        return self.reproduced / self.runs if self.runs else float(self.deterministic)

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.reproduced, self.runs)

    @property
    def reproduces(self) -> bool:
        return not self.inert and (self.reproduced > 0 or self.deterministic)

    @property
    def title(self) -> str:
        """The hypothesis; for the baseline that reproduces, with the mechanism check names."""
        h = self.hypothesis
        if h.family == "baseline" and self.reproduces and self.causes:
            return f"{h.title}: {self.causes[0].split(': ', 1)[0]}"
        return h.title


class FixVerdict(Struct):
    """A candidate fix re-simulated under each reproducing hypothesis."""

    key: str
    summary: str
    converges: dict[str, bool] = field(default_factory=dict)
    detail: dict[str, str] = field(default_factory=dict)

    @property
    def everywhere(self) -> bool:
        return bool(self.converges) and all(self.converges.values())


class Explanation(Struct):
    """The result: verdicts (reproducing first, by posterior), fixes, notes."""

    observation: str
    profile: str
    verdicts: list[Verdict]
    fixes: list[FixVerdict]
    runs: int
    seed: int
    ignored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def reproducing(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.reproduces]

    @property
    def ruled_out(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.reproduces]


Progress = Callable[[str, int, int], None]


def explain(
    releases: Sequence[ReleaseInput],
    profile: ClusterProfile,
    loaded: LoadedObservation,
    options: Options | None = None,
    progress: Progress | None = None,
) -> Explanation:
    """Search the hypothesis space for what reproduces ``loaded`` under ``profile``."""
    options = options or Options()
    base_charts = prepare_charts(profile, list(releases))
    baseline = simulate(profile, list(releases), horizon=options.horizon, prepared=base_charts)
    provisioners = _provisioners(baseline)
    hs = limit(
        enumerate_hypotheses(loaded.observation, profile, base_charts[0], provisioners=provisioners, start=baseline.upgrade_start, trace=baseline.trace),
        options.max_hypotheses,
    )
    profiles, charts = _variants(profile, hs, releases, base_charts)
    task = ExplainTask(profiles, charts, tuple(releases), {h.id: h for h in hs}, loaded, options.horizon)
    items = [(h.id, None, DETERMINISTIC, 0) for h in hs]
    items += [(h.id, None, i, run_seed(options.seed, i)) for h in hs for i in range(options.runs)]
    records = _run(task, items, options.backend, "hypotheses", progress)
    ignored = _unmodelled(records)
    verdicts = [_verdict(h, [r for r in records if r.hypothesis == h.id], ignored) for h in hs]
    _posteriors(verdicts)
    verdicts.sort(key=lambda v: (not v.reproduces, -v.posterior, -v.hypothesis.prior if not v.reproduces else 0))
    fixes: list[FixVerdict] = []
    if options.verify_fixes and any(v.reproduces for v in verdicts):
        fixes = _check_fixes(task, verdicts, records, options, progress)
    notes = [f"ignored: {f}, which no hypothesis simulates (not modelled)" for f in ignored]
    return Explanation(loaded.observation.name, profile.name, verdicts, fixes, options.runs, options.seed, sorted(ignored), notes)


def _provisioners(result: SimulationResult) -> list[str]:
    from helmsim.cluster.controllers.provisioner import ExternalProvisioner

    sim = result.sim
    if sim is None:
        return []
    return sorted({c.provisioner for c in sim.controllers if isinstance(c, ExternalProvisioner)})


def _variants(
    profile: ClusterProfile, hs: Sequence[Hypothesis], releases: Sequence[ReleaseInput], base: Charts
) -> tuple[dict[str, ClusterProfile], dict[str, Charts]]:
    """One profile (and its rendered charts) per distinct profile change of the hypotheses."""
    profiles: dict[str, ClusterProfile] = {}
    charts: dict[str, Charts] = {}
    for h in hs:
        if h.profile_key in profiles:
            continue
        if not h.cni:
            profiles[h.profile_key], charts[h.profile_key] = profile, base
            continue
        data = profile.model_dump(mode="json", by_alias=True, exclude_none=True)
        data["cni"] = {**data.get("cni", {}), **h.cni}
        data.pop("extends", None)
        variant = profile_from_mapping(data, source=f"{profile.name} under {h.id}")
        profiles[h.profile_key] = variant
        charts[h.profile_key] = prepare_charts(variant, list(releases))
    return profiles, charts


def _run(task: ExplainTask, items: list[Any], backend: taskpool.Backend, what: str, progress: Progress | None) -> list[RunRecord]:
    def step(done: int, total: int) -> None:
        if progress is not None:
            progress(what, done, total)

    return taskpool.run_tasks(task, items, backend, progress=step)


def _unmodelled(records: Sequence[RunRecord]) -> frozenset[str]:
    """Observed events no run of any hypothesis simulates at all."""
    by_id: dict[str, list[Fact]] = {}
    for r in records:
        for f in r.facts:
            by_id.setdefault(f.id, []).append(f)
    return frozenset(fid for fid, fs in by_id.items() if fs and all(f.absent for f in fs))


def _verdict(h: Hypothesis, recs: Sequence[RunRecord], ignored: frozenset[str]) -> Verdict:
    det = next(r for r in recs if r.run == DETERMINISTIC)
    sampled = [r for r in recs if r.run != DETERMINISTIC]
    ok = [r for r in sampled if reproduces(r.facts, ignored)]
    inert = h.family != "baseline" and not any(r.struck for r in recs)
    # runs disagree on the numbers, not on the story: count reasons with their numbers masked and
    # show the story of the first run that tells it (the nominal one when it does)
    misses: Counter[str] = Counter()
    told: dict[str, str] = {}
    for r in [det, *sampled]:
        miss = first_miss(r.facts, ignored)
        if miss is not None:
            text = f"{miss.text}: {miss.detail}" if miss.detail else miss.text
            story = _DIGITS.sub("#", text)
            misses[story] += 1
            told.setdefault(story, text)
    story, count = misses.most_common(1)[0] if misses else ("", 0)
    reason = told.get(story, "")
    if inert:
        reason, count = "the fault never takes effect in this run (no fault event in the trace): it is the baseline again", len(recs)
    # the story of a run that reproduces: the nominal one's when it does, else the first sampled
    # one that does (a hypothesis reproducing in some runs only, e.g. one API server backend of
    # three unlabelled and the load balancer's pick)
    shown = det if reproduces(det.facts, ignored) or not ok else ok[0]
    return Verdict(h, len(sampled), len(ok), reproduces(det.facts, ignored), inert, reason, count, 0.0, shown.chain, det.causes)


def _posteriors(verdicts: Sequence[Verdict]) -> None:
    weights = {id(v): v.hypothesis.prior * max(v.probability, 0.0) for v in verdicts if v.reproduces}
    total = sum(weights.values())
    for v in verdicts:
        v.posterior = weights.get(id(v), 0.0) / total if total else 0.0


def _why_not(r: RunRecord) -> str:
    if r.outcome != "Ready":
        return f"the release ends {r.outcome}: {r.message}"
    words = {
        "Failed": "fails",
        "running": "has not finished when the simulation ends",
        "absent": "is no longer run by the release",
    }
    stuck = [f"{g} {words.get(state, state)}" for g, state in r.jobs if state != "Completed"]
    return "the release is Ready but " + ", ".join(stuck)


def _check_fixes(
    task: ExplainTask, verdicts: Sequence[Verdict], records: Sequence[RunRecord], options: Options, progress: Progress | None
) -> list[FixVerdict]:
    """Each fix the rules propose on a reproducing (or the baseline) run, under every reproducing
    hypothesis: converged = Ready on the first attempt in every run."""
    repro = [v.hypothesis.id for v in verdicts if v.reproduces]
    proposals: dict[str, str] = {}
    for r in records:
        if r.run == DETERMINISTIC and (r.hypothesis in repro or r.hypothesis == "baseline"):
            for k, summary in r.fixes:
                proposals.setdefault(k, summary)
    if not proposals:
        return []
    items = [
        (hid, k, i, run_seed(options.seed, 1000 + i) if i >= 0 else 0)
        for k in proposals
        for hid in repro
        for i in range(DETERMINISTIC, options.fix_runs)
    ]
    recs = _run(task, items, options.backend, "fixes", progress)
    out = []
    for k, summary in proposals.items():
        fv = FixVerdict(k, summary)
        for hid in repro:
            mine = [r for r in recs if r.fix == k and r.hypothesis == hid]
            bad = [r for r in mine if not r.converged]
            fv.converges[hid] = not bad
            jobs = " and the observed Jobs complete" if any(r.jobs for r in mine) else ""
            fv.detail[hid] = (
                f"Ready on the first attempt{jobs} in {len(mine)} of {len(mine)} runs"
                if not bad
                else f"not in {len(bad)} of {len(mine)} runs: {_why_not(bad[0])}"
            )
        out.append(fv)
    out.sort(key=lambda f: (-sum(f.converges.values()), f.key))
    return out
