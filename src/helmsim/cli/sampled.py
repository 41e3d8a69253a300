"""``helmsim simulate --runs N``: sampled runs, their outcome distribution, and the same in HTML
(also ``helmsim test --format html --runs N``). Imported only when runs are sampled."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from helmsim import montecarlo, taskpool
from helmsim.cli import options
from helmsim.cli.app import emit
from helmsim.cli.progress import StderrProgress
from helmsim.cli.simulate import SimFormat
from helmsim.cluster.profile import ClusterProfile
from helmsim.config import config_file, describe
from helmsim.report.safe import dump_json, safe_text
from helmsim.simulate import DEFAULT_HORIZON, UNMAPPED_READY_AFTER, ReleaseInput, SimulationResult, simulate

if TYPE_CHECKING:
    from helmsim.report.html import Finding, OutcomeDistribution


def monte_carlo(
    prof: ClusterProfile,
    releases: list[ReleaseInput],
    runs: int,
    seed: int,
    backend: taskpool.Backend,
    fmt: SimFormat,
    output: str | None,
    horizon: str | None,
    unmapped_ready_after: str | None,
    config: str | None = None,
    quiet: bool = False,
) -> None:
    """``--runs N``: each outcome's probability with its 95 % interval (helmsim.montecarlo).

    With ``--format html``: the nominal (deterministic) run's timeline with each release's
    outcome histogram and time to Ready over the sampled runs next to it.
    """
    limit = options.seconds(horizon, DEFAULT_HORIZON, "--horizon", positive=True)
    unmapped = options.seconds(unmapped_ready_after, UNMAPPED_READY_AFTER, "--unmapped-ready-after")
    task_type = HtmlSimulateTask if fmt is SimFormat.html else montecarlo.SimulateTask
    task = task_type(prof, tuple(releases), limit, unmapped)
    with StderrProgress(enabled=not quiet) as progress:
        count = progress.counter("sampled runs", runs) if progress.sink else None
        result = montecarlo.run_many(task, runs, seed, backend=backend, progress=count)
    if fmt is SimFormat.html:
        from helmsim.report.html import render_html

        nominal = simulate(prof, releases, horizon=limit, seed=seed, sample_latencies=False, unmapped_ready_after=unmapped)
        emit(
            render_html(
                nominal,
                title=f"helmsim simulate on {prof.name}: nominal timeline and {runs} Monte-Carlo runs (seed {seed})",
                findings=monte_carlo_findings(result, replay="the same command with --runs 1 --seed"),
                distributions=outcome_distributions(result, nominal),
                run_titles=[f"timeline with nominal latencies; histograms over {runs} runs with sampled latencies, seed {seed}"],
                config=describe(config),
            ),
            output,
        )
    elif fmt is SimFormat.json:
        emit(dump_json({"profile": prof.name, "configFile": config_file(config), **result.to_dict()}), output)
    else:
        text = montecarlo.render_text(
            result, title=f"Monte Carlo on profile {prof.name}", replay="the same command with --runs 1 --seed SEED"
        )
        emit(safe_text(f"{describe(config)}\n{text}"), output)
    if any(s.count and s.label.startswith("outcome ") and s.label != "outcome Ready" and "(not simulated)" not in s.group for s in result.stats):
        raise typer.Exit(1)


# --- Monte Carlo in HTML (also used by ``helmsim test --format html --runs N``) ---------------------

_OUTCOME = "html outcome of "
_READY_AT = "html time to Ready of "


def outcome_observations(result: SimulationResult) -> tuple[montecarlo.Observation, ...]:
    """Each simulated release's outcome and, when Ready, its time to Ready (the label, in
    simulated seconds to the millisecond): the counts :func:`outcome_distributions` reads."""
    out = []
    for o in result.releases:
        if not o.simulated:
            continue
        rel = f"{o.namespace}/{o.name}"
        out.append(montecarlo.Observation(_OUTCOME + rel, o.outcome))
        if o.outcome == "Ready" and o.ready_at is not None:
            out.append(montecarlo.Observation(_READY_AT + rel, f"{o.ready_at:.3f}"))
    return tuple(out)


def outcome_distributions(
    report: montecarlo.Report, nominal: SimulationResult, run: int | None = None
) -> list[OutcomeDistribution]:
    """One histogram per release simulated in ``nominal``, from :func:`outcome_observations`."""
    from helmsim.report.html import OutcomeDistribution

    out = []
    for o in nominal.releases:
        rel = f"{o.namespace}/{o.name}"
        counts = {s.label: s.count for s in report.stats if s.group == _OUTCOME + rel and s.count}
        if not counts:
            continue
        ready_at = sorted(float(s.label) for s in report.stats if s.group == _READY_AT + rel for _ in range(s.count))
        out.append(OutcomeDistribution(rel, nominal.profile, counts, tuple(ready_at), run))
    return out


def monte_carlo_findings(report: montecarlo.Report, *, replay: str, run: int | None = None) -> list[Finding]:
    """The other observations of :func:`helmsim.montecarlo.observe` (first attempt failed,
    denied, a Job Failed, a non-Ready outcome) with their interval and a replay seed."""
    from helmsim.report.html import Finding

    out = []
    for s in report.stats:
        if s.group.startswith("html ") or s.group.endswith("(not simulated)") or s.label == "outcome Ready":
            continue
        lo, hi = s.interval
        kind, _, ref = s.group.partition(" ")
        message = f"{s.group}: {s.label} in {s.count} of {s.runs} runs."
        if s.seed is not None:
            message += f" Replay one such run: {replay} {s.seed}"
        out.append(
            Finding(
                title=f"{s.label}: {s.count}/{s.runs} runs ({100 * s.probability:.2f} %, 95 % interval "
                f"[{100 * lo:.2f} %, {100 * hi:.2f} %])",
                message=message,
                severity="warning" if s.count and s.failing else "note",
                objects=(f"{kind}/{ref}",),
                run=run,
            )
        )
    return out


class HtmlSimulateTask(montecarlo.SimulateTask, frozen=True):
    """A ``simulate --runs`` run that also reports outcomes and times to Ready (picklable)."""

    def __call__(self, seed: int) -> tuple[montecarlo.Observation, ...]:
        result = self.run(seed)
        return montecarlo.observe(result) + outcome_observations(result)
