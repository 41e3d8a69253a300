"""``helmsim check``: findings with causal chains and verified fixes across a profile matrix."""

from __future__ import annotations

import tempfile
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from helmsim import render as rendering
from helmsim.cli import options
from helmsim.cli.app import command, emit, report_console
from helmsim.cli.progress import StderrProgress
from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import load_profile
from helmsim.config import config_for, describe
from helmsim.diagnose.check import CheckOptions, CheckReport, run_check
from helmsim.diagnose.sampling import SamplingOptions
from helmsim.errors import InputError
from helmsim.report import findings as text_report
from helmsim.report import junit, sarif
from helmsim.report.safe import text_console
from helmsim.simulate import DEFAULT_HORIZON, with_config

DEFAULT_PROFILES = ("kind", "cilium-default", "cilium-always", "eks-gp3")


class CheckFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    junit = "junit"
    html = "html"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    never = "never"


@command("check")
def check_cmd(
    target: Annotated[
        str,
        typer.Argument(
            help="Chart directory or .tgz, or a directory/file of Flux objects (HelmReleases)."
        ),
    ],
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
    profile: Annotated[
        list[str] | None,
        typer.Option(
            "--profile",
            "-p",
            help="Cluster profile (repeatable); default: kind, cilium-default, cilium-always, eks-gp3.",
            metavar="NAME|FILE",
        ),
    ] = None,
    helmrelease: Annotated[
        list[str] | None,
        typer.Option(
            "--helmrelease",
            help="HelmRelease YAML file or directory (repeatable).",
            metavar="FILE|DIR",
        ),
    ] = None,
    chart: Annotated[
        list[str] | None,
        typer.Option(
            "--chart",
            help="Map a HelmRelease's chart to a local chart (repeatable).",
            metavar="NAME=PATH",
        ),
    ] = None,
    release_name: Annotated[
        str | None,
        typer.Option("--release-name", help="Release name when no HelmRelease is given."),
    ] = None,
    namespace: options.Namespace = rendering.DEFAULT_NAMESPACE,
    repository_root: options.RepositoryRoot = None,
    upgrade_from: Annotated[
        str | None,
        typer.Option(
            "--upgrade-from",
            help="Install this previous chart (or rendered manifest) first, then upgrade.",
            metavar="CHART|FILE|DIR",
        ),
    ] = None,
    upgrade_from_values: Annotated[
        list[str] | None,
        typer.Option(
            "--upgrade-from-values",
            help="Values of the previous release (repeatable).",
            metavar="FILE",
        ),
    ] = None,
    upgrade_from_set: Annotated[
        list[str] | None,
        typer.Option(
            "--upgrade-from-set", help="--set of the previous release (repeatable).", metavar="K=V"
        ),
    ] = None,
    upgrade_from_ref: Annotated[
        str | None,
        typer.Option(
            "--upgrade-from-ref",
            help="Install the chart as it was at this git ref (with its values files as they were there) first, then upgrade to the working tree's.",
            metavar="REF",
        ),
    ] = None,
    fmt: Annotated[CheckFormat, typer.Option("--format", help="Output format.")] = CheckFormat.text,
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", help="Write the report to this file (atomically).", metavar="FILE"
        ),
    ] = None,
    fail_on: Annotated[
        FailOn | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 when a finding is at or above this severity (default error, or failOn in .helmsim.yaml).",
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            help="Config file (default: the nearest .helmsim.yaml from the chart upward).",
            metavar="FILE",
        ),
    ] = None,
    no_verify: Annotated[
        bool, typer.Option("--no-verify", help="Do not re-simulate the fixes.")
    ] = False,
    horizon: Annotated[
        str | None,
        typer.Option(
            "--horizon", help="Simulated time limit per run (default 1h).", metavar="DURATION"
        ),
    ] = None,
    runs: Annotated[
        int,
        typer.Option(
            "--runs",
            help="Monte Carlo: also simulate each profile this many times with latencies drawn from its distributions.",
            min=0,
        ),
    ] = 0,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the sampled runs (with --runs).")
    ] = 0,
    backend: options.Backend = "local",
    ray_address: options.RayAddress = None,
    timeline: options.Timeline = False,
    quiet: options.Quiet = False,
    no_color: options.NoColor = False,
) -> None:
    """Simulate each profile of the matrix, report findings with their causal chains, and check the fixes.

    With --runs N, each profile is also simulated N times with sampled latencies: each outcome's
    probability with its 95 % interval, and a race that fails a sampled run is an error.

    Exit code 0 when no finding is at or above --fail-on, 1 when one is, 2 on bad input.

    Examples:

      helmsim check examples/seed2-hf-cache --helmrelease examples/seed2-hf-cache/flux -p kind
      helmsim check examples/seed1-migrate-race -p cilium-always --runs 40 --seed 1 --format sarif -o helmsim.sarif
    """
    target = options.chart_target(target, repo, chart_version, plain_http, insecure_skip_tls_verify)
    where = options.backend(backend, ray_address)
    cfg = config_for(target, config)
    names = list(profile or cfg.profiles or DEFAULT_PROFILES)
    profiles = [load_profile(n) for n in names]
    seen: set[str] = set()
    for p in profiles:
        if p.name in seen:
            raise InputError(f"--profile {p.name} given twice")
        seen.add(p.name)
    scratch = None  # --upgrade-from-ref's export, read whenever a run renders the previous chart
    if upgrade_from_ref is not None:
        scratch = tempfile.TemporaryDirectory(prefix="helmsim-ref-")
        upgrade_from, upgrade_from_values = _at_ref(
            Path(scratch.name), target, upgrade_from_ref, upgrade_from, values or [], upgrade_from_values
        )
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
    releases = with_config(releases, cfg)
    limit = options.seconds(horizon, DEFAULT_HORIZON, "--horizon", positive=True)
    level = (fail_on.value if fail_on else None) or cfg.fail_on or "error"
    with StderrProgress(enabled=not quiet) as progress:
        report = run_check(
            releases,
            profiles,
            config=cfg,
            options=CheckOptions(
                horizon=limit,
                verify_fixes=not no_verify,
                sampling=SamplingOptions(
                    runs,
                    seed,
                    where.name,
                    ray_address=where.ray_address,
                    profile_args={p.name: n for p, n in zip(profiles, names, strict=False)},
                )
                if runs
                else None,
            ),
            progress=progress.sink,
        )
    if scratch is not None:
        scratch.cleanup()  # every run (fix checks included) has rendered from it
    if fmt is CheckFormat.html:
        if not output:
            raise InputError("--format html writes a file: add --output FILE (or --output - for stdout)")
        emit(html_report(report, fail_on=level), output)
    elif fmt is CheckFormat.json:
        emit(text_report.to_json(report, fail_on=level), output)
    elif fmt is CheckFormat.sarif:
        emit(sarif.to_json(report, base=_repo_root(target)), output)
    elif fmt is CheckFormat.junit:
        emit(junit.to_xml(report, fail_on=level), output)
    elif output and output != "-":
        from io import StringIO

        buf = StringIO()
        text_report.render_text(report, text_console(buf), fail_on=level, timeline=timeline, quiet=quiet)
        emit(buf.getvalue(), output)
    else:
        text_report.render_text(
            report, report_console(no_color=no_color), fail_on=level, timeline=timeline, quiet=quiet
        )
    if report.at_or_above(level):
        raise typer.Exit(1)


def _at_ref(
    scratch: Path,
    target: str,
    ref: str,
    upgrade_from: str | None,
    values: list[str],
    upgrade_from_values: list[str] | None,
) -> tuple[str, list[str]]:
    """``--upgrade-from-ref REF``: the chart exported at REF under ``scratch`` and the previous
    values — ``--upgrade-from-values`` if given, else each ``-f`` file as it was at REF."""
    from helmsim import diffing

    if upgrade_from is not None:
        raise InputError("--upgrade-from-ref and --upgrade-from name the previous chart twice: give one")
    at_ref = diffing.export_chart_at(target, ref, scratch)
    previous = upgrade_from_values if upgrade_from_values else diffing.values_at(at_ref.commit, values, scratch)
    return str(at_ref.chart), previous


def html_report(report: CheckReport, *, fail_on: str = "error") -> str:
    """The HTML timeline of every profile's run with the findings linked to their lanes: the
    verdict line and a release × profile table first; per root cause its fixes with their
    re-simulation and the releases it blocks (the dependents are not findings of their own)."""
    from helmsim.report.html import render_html
    from helmsim.report.verdict import counted, fix_check_text, fold_alike

    findings = []
    # root causes alike but for their object are one finding citing every object's lane (the
    # 1,000-object release's 414 root causes, each with Helm's 9 KB timeout message in its chain,
    # made a 32 MB page); the chain is the first's, as in the text
    for fold in fold_alike(report.root_causes(), profiles=report.profiles, rule_id=False):
        f, dependents = fold.first, fold.dependents
        objects = [f.location.obj, *(o.location.obj for o in fold.others)]
        alike = f" The same for {counted(len(fold.others), 'more object')}, each cited below." if fold.others else ""
        fixes = []
        for fx in f.fixes:
            checked, style = fix_check_text(fx) or ("", "")
            fixes.append((fx.summary, checked, {"green": "ok", "yellow": "warn"}.get(style, "")))
        blocks = (
            f" It blocks {', '.join(sorted(d.release for d in dependents))} (dependsOn it, {dependents[0].rule})."
            if dependents
            else ""
        )
        for occ in f.occurrences:
            nominal = occ.variant == "nominal"
            findings.append(
                {
                    "title": f"{f.rule} {f.slug}",
                    "message": occ.message + ("" if nominal else f" (under {occ.variant} timing)") + blocks + alike,
                    "fixes": fixes,
                    "severity": occ.severity.name,
                    "profile": occ.profile,
                    "release": f.release,
                    # event ids belong to the nominal run's trace; other variants cite facts only
                    "chain": [
                        {
                            "time": s.time,
                            "object": s.obj,
                            "text": s.text,
                            "event": s.event_id if nominal else None,
                        }
                        for s in occ.chain
                    ],
                    "objects": objects,
                }
            )
    runs = [report.runs[p] for p in report.profiles if p in report.runs]
    dists = (
        [
            {"release": d.release, "profile": d.profile, "counts": d.counts}
            for d in report.sampling.distributions
        ]
        if report.sampling is not None
        else []
    )
    return render_html(
        runs,
        title="helmsim check",
        findings=findings,
        distributions=dists,
        config=describe(report.config),
        verdict=(text_report.verdict_line(report, fail_on=fail_on).plain, bool(report.at_or_above(fail_on))),
    )


def _repo_root(target: str) -> Path:
    """Where SARIF paths are relative to: the git work tree holding ``target`` (code scanning
    resolves them against the repository root), else the current directory."""
    import subprocess

    start = Path(target)
    start = start if start.is_dir() else start.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(start), "rev-parse", "--show-toplevel"],
            capture_output=True, text=True, check=False, timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return Path.cwd()
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else Path.cwd()
