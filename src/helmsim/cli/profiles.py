"""``helmsim profiles list|show``: the built-in cluster profiles and resolved profile files."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer
import yaml

from helmsim.cli.app import app, command, console, err_console
from helmsim.cluster.profile import list_profiles, load_profile
from helmsim.errors import InputError
from helmsim.report.atomic import write_atomic
from helmsim.report.safe import dump_json

profiles_app = typer.Typer(
    name="profiles",
    help="List, show, import, calibrate and diff cluster profiles.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(profiles_app, name="profiles")

class Format(str, enum.Enum):
    """Output formats of ``profiles show``."""

    yaml = "yaml"
    json = "json"


@command("list", group=profiles_app)
def list_cmd() -> None:
    """List the built-in profiles with their descriptions."""
    rows = list_profiles()
    width = max([len("NAME"), *(len(name) for name, _ in rows)])
    lines = [f"{'NAME':<{width}}  DESCRIPTION"]
    lines += [f"{name:<{width}}  {desc}".rstrip() for name, desc in rows]
    console.out("\n".join(lines), highlight=False)


@command("show", group=profiles_app)
def show_cmd(
    profile: Annotated[str, typer.Argument(help="Built-in profile name or profile YAML file.")],
    format_: Annotated[
        Format, typer.Option("--format", "-o", help="Output format.", case_sensitive=False)
    ] = Format.yaml,
) -> None:
    """Print a profile fully resolved (extends applied, defaults filled in)."""
    resolved = load_profile(profile)
    data = resolved.to_data()
    if format_ is Format.json:
        console.document(dump_json(data))
        return
    header = "# resolved from: " + " <- ".join(resolved.sources) + "\n"
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100)
    console.out(header + body, end="", highlight=False)


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
    """Import a cluster as a profile: every value with its source in a comment."""
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
