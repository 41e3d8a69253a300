"""``helmsim profiles list|show``: the built-in cluster profiles and resolved profile files."""

from __future__ import annotations

import enum
import json
from typing import Annotated

import typer
import yaml

from helmsim.cli.app import app, command, console
from helmsim.cluster.profile import list_profiles, load_profile

profiles_app = typer.Typer(
    name="profiles",
    help="List the built-in cluster profiles or show a resolved profile.",
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
        console.out(json.dumps(data, indent=2), highlight=False)
        return
    header = "# resolved from: " + " <- ".join(resolved.sources) + "\n"
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100)
    console.out(header + body, end="", highlight=False)
