"""``helmsim profiles list|show``: the built-in cluster profiles and resolved profile files."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer
import yaml

from helmsim.cli.app import HelpGroup, app, command, console, emit, err_console
from helmsim.cluster.profile import list_profiles, load_profile
from helmsim.errors import InputError
from helmsim.report.atomic import write_atomic
from helmsim.report.safe import dump_json, safe_text

profiles_app = typer.Typer(
    name="profiles",
    help="List, show, import, calibrate and diff cluster profiles.",
    no_args_is_help=True,
    add_completion=False,
    cls=HelpGroup,
)
app.add_typer(profiles_app, name="profiles")

class Format(str, enum.Enum):
    """Output formats of ``profiles show``."""

    yaml = "yaml"
    json = "json"


class DiffFormat(str, enum.Enum):
    """Output formats of ``profiles diff``."""

    text = "text"
    json = "json"


@command("list", group=profiles_app)
def list_cmd() -> None:
    """List the built-in profiles with their descriptions.

    Examples:

      helmsim profiles list
    """
    rows = list_profiles()
    width = max([len("NAME"), *(len(name) for name, _ in rows)])
    lines = [f"{'NAME':<{width}}  DESCRIPTION"]
    lines += [f"{name:<{width}}  {desc}".rstrip() for name, desc in rows]
    console.out("\n".join(lines), highlight=False)


@command("show", group=profiles_app)
def show_cmd(
    profile: Annotated[str, typer.Argument(help="Built-in profile name or profile YAML file.")],
    format_: Annotated[
        Format, typer.Option("--format", help="Output format.", case_sensitive=False)
    ] = Format.yaml,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write the profile to this file (atomically) instead of stdout.", metavar="FILE"),
    ] = None,
) -> None:
    """Print a profile fully resolved (extends applied, defaults filled in).

    Examples:

      helmsim profiles show cilium-always
      helmsim profiles show eks-gp3 --format json -o eks.json
    """
    resolved = load_profile(profile)
    data = resolved.to_data()
    if format_ is Format.json:
        emit(dump_json(data), output)
        return
    header = "# resolved from: " + " <- ".join(resolved.sources) + "\n"
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100)
    emit(safe_text(header + body), output)


@command("import", group=profiles_app)
def import_cmd(
    dumps: Annotated[
        list[Path] | None,
        typer.Argument(help="Directories or files of `kubectl get -o yaml|json` dumps."),
    ] = None,
    kubeconfig: Annotated[
        Path | None,
        typer.Option("--kubeconfig", help="Read a live cluster (read-only) through this kubeconfig."),
    ] = None,
    context: Annotated[
        str | None, typer.Option("--context", help="Kubeconfig context (default: the current one).")
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Profile name.")] = None,
    prior: Annotated[
        str,
        typer.Option(
            "--prior",
            metavar="auto|NAME|FILE",
            help="Profile whose latencies are the prior (auto: the built-in closest to the platform).",
        ),
    ] = "auto",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the profile here instead of stdout.")
    ] = None,
) -> None:
    """Import a cluster as a profile: every value with its source in a comment.

    Examples:

      helmsim profiles import tests/data/profiles/kind --name my-kind
      helmsim profiles import --context prod-eu -o profiles/prod-eu.yaml
    """
    from helmsim.profiletools.importer import default_name, import_profile

    if dumps and (kubeconfig is not None or context is not None):
        raise InputError("give dump paths or --kubeconfig/--context, not both")
    if dumps:
        from helmsim.profiletools.dumps import read_dumps

        dump = read_dumps(dumps)
        origin = ", ".join(str(p) for p in dumps)
        profile_name = name or default_name(dumps)
        name_note = "--name" if name else "the dump directory's name (--name)"
    else:
        if kubeconfig is None and context is None:
            raise InputError("give dump paths, or --kubeconfig/--context for a live cluster")
        from helmsim.profiletools.live import read_live

        dump, origin = read_live(kubeconfig, context)
        profile_name = name or (context or "live")
        name_note = "--name" if name else "the kubeconfig context (--name)"
    imported = import_profile(
        dump, name=profile_name, origin=origin, prior=prior, name_note=name_note
    )
    for warning in imported.draft.warnings:
        err_console.print(f"warning: {warning}", markup=False)
    _write(imported.text, output)


def _write(text: str, output: Path | None) -> None:
    if output is None:
        console.out(text, end="", highlight=False)
        return
    write_atomic(output, text)
    err_console.print(f"wrote {output}", markup=False)


@command("calibrate", group=profiles_app)
def calibrate_cmd(
    inputs: Annotated[
        list[Path],
        typer.Argument(
            help="`kubectl get events -A -o json` output, and optionally pods and "
            "CiliumNetworkPolicies (`kubectl get pods,cnp -A -o json`): files or directories."
        ),
    ],
    profile: Annotated[
        str, typer.Option("--profile", "-p", help="The profile to calibrate (its latencies are the prior).")
    ] = "kind",
    name: Annotated[str | None, typer.Option("--name", help="Name of the calibrated profile.")] = None,
    min_samples: Annotated[
        int, typer.Option("--min-samples", help="Fewer samples than this keep the prior.")
    ] = 10,
    max_samples: Annotated[
        int, typer.Option("--max-samples", help="More samples are thinned to this many quantiles.")
    ] = 500,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the profile here instead of stdout.")
    ] = None,
) -> None:
    """Fit latency distributions from the cluster's events into a profile extending --profile.

    Examples:

      helmsim profiles calibrate tests/data/profiles/events -p kind --name kind-measured
      kubectl get events -A -o json > events.json && helmsim profiles calibrate events.json -p eks-gp3 -o eks-measured.yaml
    """
    import os

    from helmsim.profiletools.calibrate import calibrate, calibrated_draft
    from helmsim.profiletools.dumps import read_dumps
    from helmsim.profiletools.emit import render

    base = load_profile(profile)
    dump = read_dumps(inputs)
    if not dump.of("Event") and not dump.of("Pod") and not dump.of("CiliumNetworkPolicy"):
        raise InputError("no Event, Pod or CiliumNetworkPolicy in the inputs (kubectl get events -A -o json)")
    fitted = calibrate(dump, min_samples=min_samples, max_samples=max_samples)
    base_ref = profile
    if Path(profile).is_file() and output is not None:
        base_ref = os.path.relpath(Path(profile).resolve(), output.resolve().parent)
    draft = calibrated_draft(
        fitted,
        base_ref=base_ref,
        base=base,
        name=name or f"{base.name}-calibrated",
        origin=", ".join(str(p) for p in inputs),
    )
    text = render(draft)
    from helmsim.cluster.profile import profile_from_mapping
    from helmsim.yamlio import load_one

    base_dir = output.resolve().parent if output is not None else Path.cwd()
    profile_from_mapping(load_one(text, "calibrated profile"), source="calibrated profile", base_dir=base_dir)
    for f in fitted:
        state = "calibrated" if f.value is not None else "kept the prior"
        err_console.print(f"{f.key}: {f.count} samples, {state}", markup=False)
    _write(text, output)


@command("diff", group=profiles_app)
def diff_cmd(
    a: Annotated[str, typer.Argument(help="Built-in profile name or profile YAML file.")],
    b: Annotated[str, typer.Argument(help="Built-in profile name or profile YAML file.")],
    format_: Annotated[
        DiffFormat, typer.Option("--format", help="Output format.", case_sensitive=False)
    ] = DiffFormat.text,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write the difference to this file (atomically) instead of stdout.", metavar="FILE"),
    ] = None,
) -> None:
    """Show what differs between two resolved profiles (exit 1 when they differ).

    Examples:

      helmsim profiles diff kind cilium-always
      helmsim profiles diff cilium-default cilium-always --format json -o drift.json
    """
    from helmsim.profiletools.compare import diff_profiles, render_json, render_text

    pa, pb = load_profile(a), load_profile(b)
    diffs = diff_profiles(pa, pb)
    text = render_json(pa, pb, diffs) if format_ is DiffFormat.json else render_text(pa, pb, diffs)
    emit(safe_text(text), output)
    if diffs:
        raise typer.Exit(1)
