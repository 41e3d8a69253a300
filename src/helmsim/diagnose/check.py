"""``helmsim check``: simulate every profile of a matrix, run the rules, merge, verify fixes.

Per profile: one nominal simulation (:func:`helmsim.simulate.simulate`); when a pod came up
before its granting policy was in effect but nothing was denied, one more under tight timing
(images on the node, policy propagation at its upper bound) so races that only bite sometimes
are reported as warnings ("Ready by luck of timing"). Candidates merge into one finding per
(rule, release, object) with an occurrence per profile. Each mechanical fix is applied to the
rendered resources and re-simulated under every profile of the matrix. With
``CheckOptions.sampling`` (``--runs N --seed S``), every profile is also simulated N times with
sampled latencies (:mod:`helmsim.diagnose.sampling`): the report carries each outcome's
probability, and a race that fails some sampled run becomes an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, as_completed
from contextlib import nullcontext
from typing import Any

from msgspec import Struct, field

from helmsim import taskpool
from helmsim.cluster.engine import gc_paused
from helmsim.cluster.profile import ClusterProfile
from helmsim.config import Config
from helmsim.diagnose import fixes as fixlib
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import CAUSE_ORDER, Candidate, Finding, Fix, FixCheck, Occurrence, Severity, Step
from helmsim.diagnose.registry import RULES, RuleSpec, all_rules
from helmsim.diagnose.rules.network import has_race_window
from helmsim.diagnose.profilepass import pass_workers, run_passes, workers_for
from helmsim.diagnose.runner import render_all, run_transformed
from helmsim.diagnose.sampling import (
    RACE_RULES,
    Charts,
    Sampling,
    SamplingOptions,
    apply_sampling,
    sample,
    sampled_run,
)
from helmsim.flux.helmrelease import HelmRelease
from helmsim.simulate import DEFAULT_HORIZON, ReleaseInput, ReleaseOutcome, SimulationResult, render_key

IGNORE_ANNOTATION = "helmsim.dev/ignore"
Progress = Callable[[str, int, int], None]
"""``(phase, done, total)`` as work finishes (the CLI draws it on stderr)."""
DEPENDENTS_RULE = "HS106"


class CheckOptions(Struct, frozen=True):
    """Knobs of a check run."""

    horizon: float = DEFAULT_HORIZON
    verify_fixes: bool = True
    tight: bool = True
    sampling: SamplingOptions | None = None
    """``--runs N --seed S``: N sampled runs per profile after the deterministic ones."""
    workers: int | None = None
    """Local processes for the profiles' passes (None: every core once the matrix is large,
    :func:`helmsim.diagnose.profilepass.workers_for`)."""


class CheckReport(Struct):
    """Outcomes per (release, profile), findings (worst first) and the suppressed ones."""

    profiles: list[str]
    releases: list[str]
    outcomes: dict[tuple[str, str], ReleaseOutcome]
    findings: list[Finding]
    suppressed: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    runs: dict[str, SimulationResult] = field(default_factory=dict)
    """The nominal simulation per profile (for the HTML timeline)."""
    sampling: Sampling | None = None
    """Outcome probabilities and race figures of the sampled runs (``--runs``)."""
    config: str | None = None
    """The ``.helmsim.yaml`` in effect (its path), ``None`` when there was none."""

    def at_or_above(self, level: str) -> list[Finding]:
        """Unsuppressed findings at or above ``level`` (``never``: none)."""
        if level == "never":
            return []
        floor = Severity.parse(level)
        return [f for f in self.findings if f.severity >= floor]

    def findings_for(self, release: str, profile: str) -> list[Finding]:
        return [f for f in self.findings if f.release == release and profile in f.profiles]

    def cause_of(self, dependent: Finding) -> Finding | None:
        """The root-cause finding a blocked dependent (HS106) is listed under: the worst finding
        of a release that blocks it at the root; ``None`` when no finding explains the block."""
        if not dependent.blocked_by:
            return None
        return next(
            (
                f
                for f in self.findings
                if f.rule != DEPENDENTS_RULE and f.release in dependent.blocked_by
            ),
            None,
        )

    def root_causes(self) -> list[tuple[Finding, list[Finding]]]:
        """Findings grouped by root cause, worst first: each finding that is not explained by
        another, with the blocked dependents (HS106) listed under it."""
        groups: dict[int, list[Finding]] = {}
        roots: list[Finding] = []
        for f in self.findings:
            cause = self.cause_of(f)
            if cause is None:
                roots.append(f)
            else:
                groups.setdefault(id(cause), []).append(f)
        return [(f, groups.get(id(f), [])) for f in roots]


def run_check(
    releases: Sequence[ReleaseInput],
    profiles: Sequence[ClusterProfile],
    *,
    config: Config | None = None,
    options: CheckOptions | None = None,
    simulated: Mapping[str, ProfileRun] | None = None,
    progress: Progress | None = None,
) -> CheckReport:
    """Simulate ``releases`` under each profile, run every rule, and verify the fixes.

    ``simulated`` holds nominal runs already made (by profile name), e.g. ``helmsim simulate``'s
    own run: they are diagnosed as they are instead of being simulated again. ``progress`` is
    told ``(phase, done, total)`` as profiles, sampled runs and fix checks finish."""
    tick = progress or _silent
    config = config or Config()
    options = options or CheckOptions()
    rules = [r for r in all_rules() if config.severity_for(r.id, r.slug) != "off"]
    rendered: list[Charts] = []
    notes: list[str] = []
    phase = f"simulating {len(profiles)} profile{'s' if len(profiles) != 1 else ''} × {len(releases)} HelmRelease{'s' if len(releases) != 1 else ''}"
    tick(phase, 0, len(profiles))
    given = [(simulated or {}).get(p.name) for p in profiles]
    by_key: dict[tuple[Any, ...], Charts] = {}
    for profile, run in zip(profiles, given, strict=True):
        if run is not None:
            rendered.append((run.charts, run.previous))
            continue
        key = render_key(profile, releases)
        if key not in by_key:
            by_key[key] = render_all(profile, releases)
        rendered.append(by_key[key])
    n = pass_workers(rendered, given, options.workers)
    # one pool for the passes and the fixed runs, each fixed run sent as soon as a pass names it
    # (a sampled check sends them after its sampled runs, which use their own pool)
    with taskpool.LocalPool(n) if n > 1 else nullcontext() as pool:
        fixes = None if pool is None else _FixRuns(pool, releases, rules, options, {p.name: p for p in profiles})
        passes = run_passes(
            profiles,
            releases,
            rendered,
            rules,
            horizon=options.horizon,
            tight=options.tight,
            given=given,
            tick=lambda done, total: tick(phase, done, total),
            pool=pool,
            on_pass=fixes.from_pass if fixes and options.verify_fixes and options.sampling is None else None,
        )
        runs: dict[str, ProfileRun] = {}
        found_by: dict[str, list[Candidate]] = {}
        for profile, (nominal, found) in zip(profiles, passes, strict=True):
            runs[profile.name] = nominal
            found_by[profile.name] = found
            for r in nominal.result.notes:
                if r not in notes:
                    notes.append(r)
        tick(phase, len(profiles), len(profiles))
        sampling: Sampling | None = None
        if options.sampling is not None:
            race_ids = [r.id for r in rules if r.id in RACE_RULES]
            sampling = sample(
                profiles,
                releases,
                rendered,
                options.sampling,
                horizon=options.horizon,
                rule_ids=race_ids,
                progress=progress,
            )
            for profile, charts in zip(profiles, rendered, strict=True):

                def replay(
                    seed: int, profile: ClusterProfile = profile, charts: Charts = charts
                ) -> ProfileRun:
                    return sampled_run(profile, releases, charts, seed, options.horizon)

                found_by[profile.name] = apply_sampling(
                    found_by[profile.name], profile.name, sampling, replay, race_ids
                )
        candidates: list[tuple[str, Candidate]] = []
        for profile in profiles:
            found = found_by[profile.name]
            for c in found:
                c.chain = _tidy(c.chain)
            candidates.extend((profile.name, c) for c in _drop_covered(found))
        findings = _merge(candidates, runs, config)
        kept = [f for f in findings if f.suppressed is None]
        suppressed = [f for f in findings if f.suppressed is not None]
        if options.verify_fixes:
            _verify(kept, runs, releases, profiles, options, rules, tick, fixes)
        outcomes = {
            (f"{o.namespace}/{o.name}", name): o
            for name, run in runs.items()
            for o in run.result.releases
        }
        return CheckReport(
            profiles=[p.name for p in profiles],
            releases=[r.hr.ref for r in releases],
            outcomes=outcomes,
            findings=sorted(kept, key=lambda f: f.sort_key),
            suppressed=sorted(suppressed, key=lambda f: f.sort_key),
            notes=notes,
            runs={name: run.result for name, run in runs.items()},
            sampling=sampling,
            config=config.source,
        )


def _silent(phase: str, done: int, total: int) -> None:
    """The default progress: none."""


def _tidy(chain: list[Step]) -> list[Step]:
    """Chronological (stable for equal times), each trace event once."""
    seen: set[int] = set()
    out: list[Step] = []
    for s in sorted(chain, key=lambda s: s.time):
        if s.event_id is not None:
            if s.event_id in seen:
                continue
            seen.add(s.event_id)
        out.append(s)
    return out


def _drop_covered(found: list[Candidate]) -> list[Candidate]:
    """HS100 only where no other error names the release."""
    explained = {c.release for c in found if c.rule != "HS100" and c.severity >= Severity.error}
    return [c for c in found if c.rule != "HS100" or c.release not in explained]


def _annotation_ignores(run: ProfileRun, obj: str) -> dict[str, str]:
    located = run.resource(obj)
    if located is None:
        return {}
    raw = located[1].annotations.get(IGNORE_ANNOTATION, "")
    out: dict[str, str] = {}
    for part in raw.replace(";", "\n").splitlines():
        rule_ref, sep, reason = part.partition("=")
        if rule_ref.strip():
            out[rule_ref.strip()] = reason.strip() if sep else ""
    return out


def _merge(
    candidates: list[tuple[str, Candidate]], runs: dict[str, ProfileRun], config: Config
) -> list[Finding]:
    from helmsim.diagnose.registry import RULES

    merged: dict[tuple[str, str, str], Finding] = {}
    for profile, c in candidates:
        spec = RULES[c.rule]
        configured = config.severity_for(spec.id, spec.slug)
        severity = Severity.parse(configured) if configured and configured != "off" else c.severity
        run = runs[profile]
        key = (c.rule, c.release, c.obj)
        finding = merged.get(key)
        if finding is None:
            located = run.resource(c.obj)
            loc = run.location(c.release, located[1]) if located else run.hr_location(c.release)
            finding = Finding(spec.id, spec.slug, c.release, loc, [])
            ann = _annotation_ignores(run, c.obj)
            reason = ann.get(spec.id, ann.get(spec.slug))
            if reason is not None:
                finding.suppressed = f"{IGNORE_ANNOTATION}: {reason or '(no reason given)'}"
            elif (cfg_reason := config.ignored(spec.id, spec.slug, c.obj, c.release)) is not None:
                finding.suppressed = f"{config.source or '.helmsim.yaml'}: {cfg_reason}"
            merged[key] = finding
        occ = Occurrence(
            profile, severity, run.outcome(c.release).outcome, c.message, c.chain, c.variant
        )
        same = next((i for i, o in enumerate(finding.occurrences) if o.profile == profile), None)
        if same is None:
            finding.occurrences.append(occ)
        elif occ.severity > finding.occurrences[same].severity:
            finding.occurrences[same] = occ
        finding.blocked_by = sorted({*finding.blocked_by, *c.roots})
        for fx in c.fixes:
            if not any(
                f.summary == fx.summary or (fx.key and f.key == fx.key) for f in finding.fixes
            ):
                finding.fixes.append(Fix(fx.summary, fx.key))
    return list(merged.values())


def _verify(
    findings: list[Finding],
    runs: dict[str, ProfileRun],
    releases: Sequence[ReleaseInput],
    profiles: Sequence[ClusterProfile],
    options: CheckOptions,
    rules: Sequence[RuleSpec],
    tick: Progress,
    fixes: _FixRuns | None = None,
) -> None:
    """Re-simulate each mechanical fix under every profile where its finding occurs."""
    memo: dict[tuple[str, str, bool], ProfileRun] = {}
    by_id = {r.id: r for r in rules}
    by_name = {p.name: p for p in profiles}
    total = sum(
        len(f.profiles) for f in findings for fx in f.fixes if fx.key and fixlib.transform_for(fx.key)
    )
    _prefetch_fixes(findings, runs, releases, by_name, options, rules, memo, tick, fixes)
    done = 0
    for finding in findings:
        for fx in finding.fixes:
            transform = fixlib.transform_for(fx.key) if fx.key else None
            if transform is None:
                continue
            for name in finding.profiles:
                tick("re-simulating fixes", done, total)
                done += 1
                fx.checks.append(
                    _check_fix(
                        fx.key or "",
                        transform,
                        by_name[name],
                        releases,
                        options,
                        by_id[finding.rule],
                        finding,
                        memo,
                        rules,
                        runs.get(name),
                    )
                )


class _FixTask(Struct, frozen=True):
    """One fixed run on a worker: ``(fix key, profile, charts to reuse or None) -> ProfileRun``,
    every rule's answer on it computed there (the live simulation does not come back:
    ``result.sim`` is ``None``)."""

    releases: tuple[ReleaseInput, ...]
    rule_ids: tuple[str, ...]
    horizon: float

    def __call__(self, item: tuple[str, ClusterProfile, Charts | None]) -> ProfileRun:
        all_rules()
        key, profile, charts = item
        transform = fixlib.transform_for(key)
        assert transform is not None  # the key came from a fix with a transform
        with gc_paused():  # as in a profile pass (helmsim.diagnose.profilepass.profile_pass)
            run = _fixed_run(
                key, transform, profile, self.releases, CheckOptions(horizon=self.horizon), False, {}, charts
            )
            for rid in self.rule_ids:
                run.candidates(RULES[rid])
        run.result.sim = None
        return run


def _prefetch_fixes(
    findings: list[Finding],
    runs: dict[str, ProfileRun],
    releases: Sequence[ReleaseInput],
    by_name: Mapping[str, ClusterProfile],
    options: CheckOptions,
    rules: Sequence[RuleSpec],
    memo: dict[tuple[str, str, bool], ProfileRun],
    tick: Progress,
    fixes: _FixRuns | None = None,
) -> None:
    """The nominal fixed runs every fix check starts from: on ``fixes``' pool when the passes
    had one (with those it already runs), else on worker processes when there are several and
    the charts are large (:func:`helmsim.diagnose.profilepass.workers_for`)."""
    needed: dict[tuple[str, str], None] = {}
    for finding in findings:
        for fx in finding.fixes:
            if fx.key and fixlib.transform_for(fx.key) is not None:
                for name in finding.profiles:
                    needed.setdefault((fx.key, name), None)
    items = list(needed)
    if fixes is not None:
        _collect(fixes, items, runs, memo, tick)
        return
    objects = sum(len(c.resources) for _k, name in items for c in runs[name].charts.values())
    n = workers_for(objects, len(items), options.workers)
    if n > 1:  # else each is simulated when its first check needs it
        with taskpool.LocalPool(n) as pool:
            _collect(_FixRuns(pool, releases, rules, options, by_name), items, runs, memo, tick)


def _collect(
    fixes: _FixRuns,
    items: Sequence[tuple[str, str]],
    runs: Mapping[str, ProfileRun],
    memo: dict[tuple[str, str, bool], ProfileRun],
    tick: Progress,
) -> None:
    """The fixed runs of ``items`` (fix key, profile) from ``fixes``' pool, into ``memo``."""
    futures = {fixes.send(key, name, runs.get(name)): (key, name) for key, name in items}
    with gc_paused():  # while the runs come back (helmsim.diagnose.profilepass.run_passes)
        for done, fut in enumerate(as_completed(futures), 1):
            key, name = futures[fut]
            memo[(key, name, False)] = taskpool.value_of(fut)
            tick("re-simulating fixes", done, len(items))


def _first_attempt_only(hr: HelmRelease) -> HelmRelease:
    """No remediation retries: a fix must converge on its first attempt, not by luck of a retry."""
    spec = hr.spec
    updates = {
        a: getattr(spec, a).model_copy(
            update={"remediation": getattr(spec, a).remediation.model_copy(update={"retries": 0})}
        )
        for a in ("install", "upgrade")
    }
    return hr.model_copy(update={"spec": spec.model_copy(update=updates)})


class _FixRuns:
    """Fixed runs (:class:`_FixTask`) on a check's pool, each sent once, as soon as it is known
    to be needed: a profile's pass names fixes for the findings it found there, and each of
    those is checked under that profile. A run sent for a finding that is later suppressed is
    not used; the findings are the same."""

    def __init__(
        self,
        pool: taskpool.LocalPool,
        releases: Sequence[ReleaseInput],
        rules: Sequence[RuleSpec],
        options: CheckOptions,
        by_name: Mapping[str, ClusterProfile],
    ) -> None:
        self.pool = pool
        self.task = _FixTask(tuple(releases), tuple(r.id for r in rules), options.horizon)
        self.by_name = by_name
        self.sent: dict[tuple[str, str], Future[list[taskpool.Done[ProfileRun]]]] = {}

    def send(self, key: str, name: str, base: ProfileRun | None) -> Future[list[taskpool.Done[ProfileRun]]]:
        """The fixed run of fix ``key`` under profile ``name`` (sent now unless already sent)."""
        if (key, name) not in self.sent:
            self.sent[(key, name)] = self.pool.submit(self.task, (key, self.by_name[name], _reusable(key, base)))
        return self.sent[(key, name)]

    def from_pass(self, profile: ClusterProfile, run: ProfileRun, found: list[Candidate]) -> None:
        """Send the fixed runs the candidates of ``profile``'s pass name."""
        for c in found:
            for fx in c.fixes:
                if fx.key and fixlib.transform_for(fx.key) is not None:
                    self.send(fx.key, profile.name, run)


def _reusable(fix_key: str, base: ProfileRun | None) -> Charts | None:
    """The charts of ``base`` (the finding's run under the same profile) when the fix's run
    renders the same ones, else ``None`` (render again)."""
    transform = fixlib.transform_for(fix_key)
    if base is None or transform is None or transform.renders_anew:
        return None
    return base.charts, base.previous


def _fixed_run(
    fix_key: str,
    transform: fixlib.FixTransform,
    profile: ClusterProfile,
    releases: Sequence[ReleaseInput],
    options: CheckOptions,
    tight: bool,
    memo: dict[tuple[str, str, bool], ProfileRun],
    charts: Charts | None = None,
) -> ProfileRun:
    """The run with the fix applied (memoized by fix, profile and timing); ``charts``: the
    rendered charts to start from, when the fix does not change what renders."""
    key = (fix_key, profile.name, tight)
    if key not in memo:
        user = transform.helmreleases

        def hrs(hr: HelmRelease) -> HelmRelease:
            return _first_attempt_only(user(hr) if user else hr)

        memo[key] = run_transformed(
            profile,
            releases,
            transform=transform.charts,
            hr_transform=hrs,
            tight=tight,
            horizon=options.horizon,
            variant="fix-tight" if tight else "fix",
            charts=charts,
        )
    return memo[key]


def _check_fix(
    fix_key: str,
    transform: fixlib.FixTransform,
    profile: ClusterProfile,
    releases: Sequence[ReleaseInput],
    options: CheckOptions,
    spec: RuleSpec,
    finding: Finding,
    memo: dict[tuple[str, str, bool], ProfileRun],
    rules: Sequence[RuleSpec] = (),
    base: ProfileRun | None = None,
) -> FixCheck:
    charts = _reusable(fix_key, base)
    fixed = _fixed_run(fix_key, transform, profile, releases, options, False, memo, charts)
    outcome = fixed.outcome(finding.release)
    again = [
        c
        for c in fixed.candidates(spec)
        if c.obj == finding.location.obj and c.release == finding.release
    ]
    if transform.tight and not again and has_race_window(fixed):
        tight = _fixed_run(fix_key, transform, profile, releases, options, True, memo, charts)
        again = [
            c
            for c in tight.candidates(spec)
            if c.obj == finding.location.obj and c.release == finding.release
        ]
    resolved = not again
    converges = outcome.outcome == "Ready" and resolved
    blocker = None
    if again:
        detail = f"{spec.id} still reported: {again[0].message}"
    elif outcome.outcome != "Ready":
        blocker = _why_still_failing(fixed, finding.release, spec.id, rules)
        why = (
            f"{blocker.rule} {RULES[blocker.rule].slug}: {first_clause(blocker.message)}"
            if blocker is not None
            else outcome.message
        )
        detail = f"{spec.id} resolved, but the release still ends {outcome.outcome}: {why}"
    else:
        detail = "Ready on the first attempt" + (
            f" at t={outcome.ready_at:.0f}s" if outcome.ready_at is not None else ""
        )
    cause = (
        {"rule": blocker.rule, "object": blocker.obj, "message": blocker.message}
        if blocker is not None
        else None
    )
    return FixCheck(profile.name, outcome.outcome, converges, detail, resolved, cause)


def _why_still_failing(
    run: ProfileRun, release: str, fixed_rule: str, rules: Sequence[RuleSpec]
) -> Candidate | None:
    """The deepest error another rule reports for ``release`` in a fixed run that still fails:
    what the fix did not address (e.g. the hook Job it adds has no egress: HS113)."""
    found = [
        c
        for r in rules
        if r.id in CAUSE_ORDER and r.id != fixed_rule
        for c in run.candidates(r)
        if c.release == release and c.severity >= Severity.error
    ]
    return min(found, key=lambda c: CAUSE_ORDER.index(c.rule), default=None)


def first_clause(message: str) -> str:
    """A rule message up to its first ``": "`` or ``". "`` (its statement, without the
    elaboration)."""
    cuts = [i for i in (message.find(": ", 20), message.find(". ", 20)) if i >= 0]
    return message[: min(cuts)] if cuts else message
