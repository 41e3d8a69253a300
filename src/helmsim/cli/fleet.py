"""``helmsim fleet``: rehearse a matrix of releases × values files × profiles × seeds, as tasks on
the local pool or on a Ray cluster, with one report for the whole matrix (docs/fleet.md)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from helmsim import taskpool
from helmsim.cli import options
from helmsim.cli.app import command, console, emit, err_console
from helmsim.cli.check import DEFAULT_PROFILES, FailOn, _repo_root
from helmsim.cluster.latency import to_seconds
from helmsim.cluster.profile import ClusterProfile, load_profile
from helmsim.config import Config, config_for, discover, load_config
from helmsim.diagnose.check import CheckOptions
from helmsim.diagnose.sampling import SamplingOptions
from helmsim.errors import InputError
from helmsim.fleet import matrix as fm
from helmsim.fleet.run import FleetReport, Rehearsal, prepare, run_fleet
from helmsim.report import findings as text_report
from helmsim.report import junit, sarif
from helmsim.report.atomic import write_atomic
from helmsim.report.safe import dump_json, text_console
from helmsim.simulate import DEFAULT_HORIZON
from helmsim.yamlio import key_lines


class FleetFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    junit = "junit"


@command("fleet")
def fleet_cmd(
    targets: Annotated[
        list[str] | None,
        typer.Argument(
            help="Charts or Flux trees to rehearse (default: the `fleet:` matrix of .helmsim.yaml).",
            metavar="[TARGET]...",
        ),
    ] = None,
    values_glob: Annotated[
        list[str] | None,
        typer.Option(
            "--values",
            "-f",
            help="With TARGETs: a values-file glob inside each target (e.g. 'ci/*-values.yaml'); one rehearsal per match (repeatable).",
            metavar="GLOB",
        ),
    ] = None,
    profile: Annotated[
        list[str] | None,
        typer.Option(
            "--profile",
            "-p",
            help="Cluster profile (repeatable); default: the matrix's, else kind, cilium-default, cilium-always, eks-gp3.",
            metavar="NAME|FILE",
        ),
    ] = None,
    namespace: options.Namespace = "default",
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            help="Config file with the `fleet:` matrix (default: the nearest .helmsim.yaml from the current directory upward).",
            metavar="FILE",
        ),
    ] = None,
    runs: Annotated[
        int | None,
        typer.Option("--runs", help="Sampled runs per profile of every rehearsal (default: the matrix's, else 0).", min=0),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the sampled runs.", min=0)] = None,
    horizon: Annotated[
        str | None,
        typer.Option("--horizon", help="Simulated time limit per run (default: the matrix's, else 1h).", metavar="DURATION"),
    ] = None,
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Do not re-simulate the fixes.")] = False,
    backend: options.Backend = "local",
    ray_address: options.RayAddress = None,
    ray_upload: Annotated[
        bool,
        typer.Option(
            "--ray-upload",
            help="With --backend ray: Ray uploads the current directory to the cluster (runtime_env working_dir) and runs every rehearsal in that copy; the charts must be inside it.",
        ),
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option("--workers", help="Local worker processes (default: the usable cores).", min=1),
    ] = None,
    fmt: Annotated[FleetFormat, typer.Option("--format", help="Output format.")] = FleetFormat.text,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write the report to this file (atomically).", metavar="FILE"),
    ] = None,
    stats: Annotated[
        str | None,
        typer.Option(
            "--stats",
            help="Write how the run went (workers, tasks, Helm loads, peak memory, retried tasks) as JSON.",
            metavar="FILE",
        ),
    ] = None,
    fail_on: Annotated[
        FailOn | None,
        typer.Option("--fail-on", help="Exit 1 when a finding of any rehearsal is at or above this severity (default error, or failOn)."),
    ] = None,
) -> None:
    """Rehearse every release × values file of a matrix under every profile, as parallel tasks.

    Each rehearsal is what `helmsim check TARGET -f VALUES -p PROFILE… --runs N --seed S`
    reports; the fleet report merges them in matrix order, the same bytes on either backend.
    Progress goes to stderr when it is a terminal.

    Exit code 0 when no finding is at or above --fail-on, 1 when one is, 2 on bad input.

    Examples:

      helmsim fleet
      helmsim fleet charts/app -f 'ci/*-values.yaml' -p kind -p cilium-always --format sarif -o fleet.sarif
    """
    where = options.backend(backend, ray_address, workers)
    if ray_upload:
        where = taskpool.Backend(where.name, where.workers, where.ray_address, str(Path.cwd()))
    cfg, specs, matrix = _matrix(targets or [], values_glob or [], config, namespace)
    base = Path(cfg.source).parent if cfg.source else Path.cwd()
    names = list(profile or (matrix.profiles if matrix else ()) or cfg.profiles or DEFAULT_PROFILES)
    profiles = _profiles(names, base)
    n_runs = runs if runs is not None else (matrix.runs if matrix else 0)
    if n_runs > fm.MAX_RUNS:
        raise InputError(f"--runs {n_runs}: at most {fm.MAX_RUNS} sampled runs per profile (the limit)")
    n_seed = seed if seed is not None else (matrix.seed if matrix else 0)
    limit = _horizon(horizon if horizon is not None else (matrix.horizon if matrix else None))
    level = (fail_on.value if fail_on else None) or cfg.fail_on or "error"
    rehearsals = prepare(specs)
    if where.upload:
        _inside_upload(rehearsals)
    check_options = CheckOptions(
        horizon=limit,
        verify_fixes=not no_verify,
        sampling=SamplingOptions(
            n_runs, n_seed, profile_args={p.name: n for p, n in zip(profiles, names, strict=False)}
        )
        if n_runs
        else None,
    )
    pool = taskpool.PoolStats(where.name)
    with _progress(len(rehearsals)) as step:
        fleet = run_fleet(
            rehearsals, profiles, config=cfg, options=check_options, backend=where, progress=step, stats=pool
        )
    if stats:
        write_atomic(stats, dump_json(pool.to_dict()))
    if sys.stderr.isatty() or pool.retries:
        for line in pool.lines("rehearsal"):
            err_console.print(line, markup=False, highlight=False)
    _report(fleet, fmt, output, level)
    if fleet.at_or_above(level):
        raise typer.Exit(1)


def _matrix(
    targets: list[str], globs: list[str], config: str | None, namespace: str
) -> tuple[Config, list[fm.RehearsalSpec], fm.FleetMatrix | None]:
    """The config and the rehearsals: from the TARGETs and --values, else the file's matrix."""
    if targets:
        cfg = config_for(targets[0], config)
        flags = fm.from_flags(targets, globs, namespace=namespace)
        return cfg, fm.expand(flags, base=Path.cwd()), cfg.fleet
    if globs:
        raise InputError("--values GLOB needs TARGETs (a matrix file lists each release's values)")
    path = config or discover(Path.cwd())
    if path is None:
        raise InputError(
            "nothing to rehearse: name TARGETs, or add a `fleet:` matrix to .helmsim.yaml (docs/fleet.md)"
        )
    cfg = load_config(path)
    if cfg.fleet is None:
        raise InputError("no `fleet:` matrix in this file (docs/fleet.md)", file=str(path))
    text = Path(path).read_text(encoding="utf-8")
    specs = fm.expand(cfg.fleet, base=Path(path).resolve().parent, source=str(path), lines=key_lines(text))
    return cfg, specs, cfg.fleet


def _inside_upload(rehearsals: list[Rehearsal]) -> None:
    """With --ray-upload every chart must be inside the uploaded (current) directory."""
    for r in rehearsals:
        for release in r.releases:
            for source in (release.chart, release.previous):
                if source is None:
                    continue
                p = Path(source.path)
                if p.is_absolute() or ".." in p.parts:
                    raise InputError(
                        f"--ray-upload uploads the current directory, and the chart {source.path} "
                        f"of HelmRelease {release.hr.ref} is outside it (run from a directory "
                        "that holds every chart)"
                    )


def _profiles(names: list[str], base: Path) -> list[ClusterProfile]:
    """Profiles by name or file (a relative file is looked up next to the matrix first)."""
    out: list[ClusterProfile] = []
    for n in names:
        candidate = base / n
        out.append(load_profile(fm.display_path(candidate) if not Path(n).is_absolute() and candidate.is_file() else n))
    seen: set[str] = set()
    for p in out:
        if p.name in seen:
            raise InputError(f"--profile {p.name} given twice")
        seen.add(p.name)
    return out


def _horizon(text: str | None) -> float:
    if text is None:
        return DEFAULT_HORIZON
    try:
        value = to_seconds(text)
    except ValueError as err:
        raise InputError(f"--horizon {text!r}: {err}") from None
    if value <= 0:
        raise InputError(f"--horizon {text!r}: must be longer than 0s")
    return value


class _progress:
    """A progress bar on stderr while rehearsals finish; nothing when stderr is not a terminal."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.bar: object | None = None

    def __enter__(self) -> taskpool.Progress | None:
        if not sys.stderr.isatty():
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        bar = Progress(
            "rehearsals", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err_console, transient=True
        )
        task = bar.add_task("fleet", total=self.total)
        bar.start()
        self.bar = bar

        def step(done: int, total: int) -> None:
            bar.update(task, completed=done)

        return step

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()  # type: ignore[attr-defined]


def _report(fleet: FleetReport, fmt: FleetFormat, output: str | None, level: str) -> None:
    if fmt is FleetFormat.json:
        emit(text_report.fleet_to_json(fleet, fail_on=level), output)
    elif fmt is FleetFormat.sarif:
        emit(sarif.fleet_to_json(fleet, base=_repo_root(".")), output)
    elif fmt is FleetFormat.junit:
        emit(junit.fleet_to_xml(fleet, fail_on=level), output)
    elif output and output != "-":
        from io import StringIO

        buf = StringIO()
        text_report.render_fleet_text(fleet, text_console(buf), fail_on=level)
        emit(buf.getvalue(), output)
    else:
        text_report.render_fleet_text(fleet, console, fail_on=level)
