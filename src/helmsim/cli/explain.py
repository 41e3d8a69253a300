"""``helmsim explain``: from what was observed on a real cluster to the causes that reproduce it."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from helmsim import render as rendering
from helmsim.cli import options
from helmsim.cli.app import command, console, emit, err_console
from helmsim.cluster.profile import load_profile
from helmsim.errors import InputError
from helmsim.explain import report
from helmsim.explain.observation import load_observation
from helmsim.explain.search import Options, explain
from helmsim.release_inputs import build_inputs
from helmsim.config import config_for
from helmsim.simulate import DEFAULT_HORIZON, with_config


class ExplainFormat(str, Enum):
    text = "text"
    json = "json"
    html = "html"


def _progress(what: str, done: int, total: int) -> None:
    """Progress on stderr while searching; silent when stderr is not a terminal."""
    if not sys.stderr.isatty():
        return
    end = "\n" if done == total else ""
    err_console.file.write(f"\rexplain: {what}: {done}/{total} runs{end}")
    err_console.file.flush()


@command("explain")
def explain_cmd(
    target: Annotated[
        str, typer.Argument(help="Chart directory or .tgz, or a directory/file of Flux objects (HelmReleases).")
    ],
    observed: Annotated[
        str,
        typer.Option("--observed", "-O", help="Observation file: what was seen (docs/explain.md).", metavar="FILE"),
    ],
    values: options.Values = None,
    set_: options.Set = None,
    set_string: options.SetString = None,
    set_file: options.SetFile = None,
    set_json: options.SetJson = None,
    set_literal: options.SetLiteral = None,
    profile: Annotated[
        str, typer.Option("--profile", "-p", help="Cluster profile: built-in name or YAML file.", metavar="NAME|FILE")
    ] = "kind",
    helmrelease: Annotated[
        list[str] | None,
        typer.Option("--helmrelease", help="HelmRelease YAML file or directory (repeatable).", metavar="FILE|DIR"),
    ] = None,
    chart: Annotated[
        list[str] | None,
        typer.Option("--chart", help="Map a HelmRelease's chart to a local chart (repeatable).", metavar="NAME=PATH"),
    ] = None,
    release_name: Annotated[
        str | None, typer.Option("--release-name", help="Release name when no HelmRelease is given.")
    ] = None,
    namespace: options.Namespace = rendering.DEFAULT_NAMESPACE,
    upgrade_from: Annotated[
        str | None,
        typer.Option("--upgrade-from", help="Install this previous chart first, then upgrade.", metavar="CHART|FILE|DIR"),
    ] = None,
    upgrade_from_values: Annotated[
        list[str] | None,
        typer.Option("--upgrade-from-values", help="Values of the previous release (repeatable).", metavar="FILE"),
    ] = None,
    upgrade_from_set: Annotated[
        list[str] | None,
        typer.Option("--upgrade-from-set", help="--set of the previous release (repeatable).", metavar="K=V"),
    ] = None,
    runs: Annotated[
        int, typer.Option("--runs", help="Sampled runs per hypothesis (plus one at nominal latencies).", min=1)
    ] = 10,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sampled runs.")] = 0,
    max_hypotheses: Annotated[
        int | None,
        typer.Option("--max-hypotheses", help="Search only the baseline and the N-1 likeliest hypotheses a priori.", min=1),
    ] = None,
    fix_runs: Annotated[
        int, typer.Option("--fix-runs", help="Sampled runs per fix and reproducing hypothesis.", min=0)
    ] = 3,
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Do not re-simulate the candidate fixes.")] = False,
    horizon: Annotated[
        str | None, typer.Option("--horizon", help="Simulated time limit per run (default 1h).", metavar="DURATION")
    ] = None,
    fmt: Annotated[ExplainFormat, typer.Option("--format", help="Output format.")] = ExplainFormat.text,
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Write the report to this file (atomically).", metavar="FILE")
    ] = None,
    backend: options.Backend = "local",
    ray_address: options.RayAddress = None,
    repository_root: options.RepositoryRoot = None,
) -> None:
    """Search the faults and latencies helmsim models for those that reproduce an observation.

    Reports the hypotheses that reproduce it (ranked, with the probability and the causal
    chain), those ruled out with the reason in trace terms, and which of the fixes `check`
    proposes converge under every reproducing hypothesis.

    Exit code 0 when a hypothesis reproduces the observation, 1 when none does, 2 on bad input.

    Examples:

      helmsim explain examples/seed1-migrate-race --helmrelease examples/seed1-migrate-race/flux -O examples/explain/seed1-incident.observation.yaml -p capa-cilium
      helmsim explain examples/seed2-hf-cache --helmrelease examples/seed2-hf-cache/flux -O examples/explain/seed2-incident.observation.yaml --format html -o explain.html
    """
    loaded = load_observation(observed)
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
    # .helmsim.yaml's catalog and declared CRDs apply to explain as to simulate and check
    cfg = config_for(target)
    releases = with_config(releases, cfg)
    limit = options.seconds(horizon, DEFAULT_HORIZON, "--horizon", positive=True)
    ex = explain(
        releases,
        prof,
        loaded,
        Options(
            runs=runs,
            seed=seed,
            horizon=limit,
            max_hypotheses=max_hypotheses,
            fix_runs=fix_runs,
            verify_fixes=not no_verify,
            backend=options.backend(backend, ray_address),
        ),
        progress=_progress,
    )
    if fmt is ExplainFormat.html:
        if not output:
            raise InputError("--format html writes a file: add --output FILE (or --output - for stdout)")
        emit(report.to_html(ex, config=cfg.source), output)
    elif fmt is ExplainFormat.json:
        emit(report.to_json(ex, config=cfg.source), output)
    elif output and output != "-":
        emit(report.to_text(ex, config=cfg.source), output)
    else:
        for line in report.text_lines(ex, config=cfg.source):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    if not ex.reproducing:
        raise typer.Exit(1)
