"""``helmsim simulate``: predict each HelmRelease's outcome on a simulated cluster."""

from __future__ import annotations

import io
from enum import Enum
from typing import TYPE_CHECKING, Annotated

import typer

from helmsim import render as rendering
from helmsim.cli import options
from helmsim.cli.app import command, emit, report_console
from helmsim.cluster.profile import ClusterProfile, load_profile
from helmsim.config import Config, config_for, describe
from helmsim.errors import InputError
from helmsim.release_inputs import build_inputs  # noqa: F401 - re-exported for callers
from helmsim.report import simulate as report
from helmsim.report.safe import text_console
from helmsim.simulate import (
    DEFAULT_HORIZON,
    UNMAPPED_READY_AFTER,
    ReleaseInput,
    PreparedCharts,
    SimulationResult,
    prepare_charts,
    simulate,
    with_config,
)

if TYPE_CHECKING:
    from helmsim.diagnose.check import CheckReport, Progress


class SimFormat(str, Enum):
    text = "text"
    json = "json"
    html = "html"


@command("simulate")
def simulate_cmd(
    target: Annotated[str, typer.Argument(help="Chart directory or .tgz, or a directory/file of Flux objects (HelmReleases).")],
    values: options.Values = None,
    set_: options.Set = None,
    set_string: options.SetString = None,
    set_file: options.SetFile = None,
    set_json: options.SetJson = None,
    set_literal: options.SetLiteral = None,
    repo: options.Repo = None,
    chart_version: options.ChartVersion = None,
    plain_http: options.PlainHttp = False,
    insecure_skip_tls_verify: options.InsecureSkipTlsVerify = False,
    profile: Annotated[str, typer.Option("--profile", "-p", help="Cluster profile: built-in name or YAML file.", metavar="NAME|FILE")] = "kind",
    helmrelease: Annotated[
        list[str] | None,
        typer.Option("--helmrelease", help="HelmRelease YAML file or directory (repeatable): its spec drives helm-controller.", metavar="FILE|DIR"),
    ] = None,
    chart: Annotated[
        list[str] | None,
        typer.Option("--chart", help="Map a HelmRelease's chart to a local chart (repeatable).", metavar="NAME=PATH"),
    ] = None,
    release_name: Annotated[str | None, typer.Option("--release-name", help="Release name when no HelmRelease is given.")] = None,
    namespace: options.Namespace = rendering.DEFAULT_NAMESPACE,
    repository_root: options.RepositoryRoot = None,
    upgrade_from: Annotated[
        str | None,
        typer.Option("--upgrade-from", help="Install this previous chart (or rendered manifest) first, then upgrade.", metavar="CHART|FILE|DIR"),
    ] = None,
    upgrade_from_values: Annotated[
        list[str] | None, typer.Option("--upgrade-from-values", help="Values of the previous release (repeatable).", metavar="FILE")
    ] = None,
    upgrade_from_set: Annotated[
        list[str] | None, typer.Option("--upgrade-from-set", help="--set of the previous release (repeatable).", metavar="K=V")
    ] = None,
    horizon: Annotated[str | None, typer.Option("--horizon", help="Simulated time limit (default 1h).", metavar="DURATION")] = None,
    unmapped_ready_after: Annotated[
        str | None,
        typer.Option("--unmapped-ready-after", help="Unmapped charts are modelled Ready this long after their dependencies (default 60s).", metavar="DURATION"),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for sampled latencies (with --runs).")] = 0,
    runs: Annotated[
        int,
        typer.Option("--runs", help="Monte Carlo: this many runs with latencies drawn from the profile's distributions (1: one sampled run with --seed).", min=0),
    ] = 0,
    backend: options.Backend = "local",
    ray_address: options.RayAddress = None,
    fmt: Annotated[SimFormat, typer.Option("--format", help="Output format.")] = SimFormat.text,
    timeline: options.Timeline = False,
    full_timeline: Annotated[bool, typer.Option("--full-timeline", help="With the timeline, print every trace event, not just the notable ones (implies --timeline).")] = False,
    quiet: options.Quiet = False,
    no_color: options.NoColor = False,
    output: Annotated[str | None, typer.Option("--output", "-o", help="Write the report to this file instead of stdout.", metavar="FILE")] = None,
) -> None:
    """Simulate Helm and helm-controller on a cluster profile and predict each release's outcome.

    Exit code 0 when every simulated release gets Ready, 1 when one does not, 2 on bad input.

    Examples:

      helmsim simulate examples/seed2-hf-cache --helmrelease examples/seed2-hf-cache/flux --profile kind
      helmsim simulate examples/seed1-migrate-race -p cilium-always --runs 50 --seed 1 --format html -o runs.html
    """
    target = options.chart_target(target, repo, chart_version, plain_http, insecure_skip_tls_verify)
    if fmt is SimFormat.html and not output:
        raise InputError("--format html writes a file: add --output FILE (or --output - for stdout)")
    prof = load_profile(profile)
    releases = build_inputs(
        target,
        values=values or [],
        sets=options.value_sets(set_, set_string, set_file, set_json, set_literal),
        helmrelease=helmrelease or [],
        charts=chart or [],
        release_name=release_name,
        namespace=namespace,
        upgrade_from=upgrade_from,
        upgrade_from_values=upgrade_from_values or [],
        upgrade_from_set=upgrade_from_set or [],
        repository_root=repository_root,
    )
    # .helmsim.yaml's behaviour catalog (and its rule settings) apply to simulate as to check
    # (docs/behaviour.md)
    cfg = config_for(target)
    releases = with_config(releases, cfg)
    if runs >= 2:
        from helmsim.cli.sampled import monte_carlo  # --runs N: its modules load only then

        monte_carlo(prof, releases, runs, seed, options.backend(backend, ray_address), fmt, output, horizon, unmapped_ready_after, cfg.source, quiet)
        return
    limit = options.seconds(horizon, DEFAULT_HORIZON, "--horizon", positive=True)
    charts = prepare_charts(prof, releases)
    result = simulate(
        prof,
        releases,
        horizon=limit,
        seed=seed,
        sample_latencies=runs == 1,
        unmapped_ready_after=options.seconds(unmapped_ready_after, UNMAPPED_READY_AFTER, "--unmapped-ready-after"),
        prepared=charts,
    )
    failed = report.run_failed(result)
    if fmt is SimFormat.json:
        emit(report.to_json(result, config=cfg.source), output)
    elif fmt is SimFormat.html:
        from helmsim.report.html import render_html

        emit(render_html(result, config=describe(cfg.source), verdict=(report.summary_line(result).plain, failed)), output)
    else:
        diagnosis = None
        if failed and not quiet:
            from helmsim.cli.progress import StderrProgress

            with StderrProgress() as progress:
                diagnosis = diagnose(prof, releases, result, charts, cfg, limit, progress.sink)
        to_file = bool(output and output != "-")
        buf = io.StringIO()
        report.render_text(
            result,
            text_console(buf) if to_file else report_console(no_color=no_color),
            diagnosis=diagnosis,
            timeline=timeline,
            full_timeline=full_timeline,
            quiet=quiet,
            config=cfg.source,
        )
        if to_file:
            emit(buf.getvalue(), output)
    if failed:
        raise typer.Exit(1)


def diagnose(
    prof: ClusterProfile,
    releases: list[ReleaseInput],
    result: SimulationResult,
    charts: PreparedCharts,
    cfg: Config,
    horizon: float,
    progress: Progress | None = None,
) -> CheckReport:
    """The rules ``helmsim check`` runs, on this very run, with the fixes re-simulated: the
    cause and verified fixes simulate prints for a release that is not Ready."""
    from helmsim.diagnose.check import CheckOptions, run_check
    from helmsim.diagnose.context import ProfileRun

    run = ProfileRun(prof, list(releases), result, charts[0], charts[1], "nominal")
    return run_check(
        releases, [prof], config=cfg, options=CheckOptions(horizon=horizon), simulated={prof.name: run}, progress=progress
    )
