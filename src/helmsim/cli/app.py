"""The Typer application and the conventions every command shares."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from helmsim.cli.limit_options import with_common_options
from helmsim.errors import InputError
from helmsim.report.atomic import write_atomic
from helmsim.report.safe import SafeConsole

app = typer.Typer(
    name="helmsim",
    help="Rehearse Helm and Flux rollouts offline: render, plan, simulate and explain.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

# Not on a terminal (CI, pipes, tests): a fixed 160 columns keeps reports stable and unclipped,
# unless COLUMNS says otherwise (Rich reads it). Both consoles redact secrets and escape control
# characters in everything they print (helmsim.report.safe).
console = SafeConsole(
    soft_wrap=True,
    width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160,
)
err_console = SafeConsole(stderr=True, soft_wrap=True)


def _version(value: bool) -> None:
    if value:
        from helmsim import __version__

        console.print(f"helmsim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Rehearse Helm and Flux rollouts offline: render, plan, simulate and explain."""


def emit(text: str, output: str | None) -> None:
    """Write a finished report — already redacted and escaped by its reporter — to ``output``
    atomically (``helmsim.report.atomic``), or to stdout when ``output`` is None or ``-``."""
    if output and output != "-":
        write_atomic(output, text)
    else:
        console.document(text)


F = TypeVar("F", bound=Callable[..., Any])

EXIT_BAD_INPUT = 2


def command(*args: Any, group: typer.Typer | None = None, **kwargs: Any) -> Callable[[F], F]:
    """Register a command (on ``group``, default the root app) whose ``InputError`` becomes one
    line on stderr and exit code 2; every command also takes the limit flags and ``--debug``
    (helmsim.cli.limit_options)."""

    def decorate(fn: F) -> F:
        inner = with_common_options(fn)

        @functools.wraps(inner)
        def wrapper(*a: Any, **k: Any) -> Any:
            try:
                return inner(*a, **k)
            except InputError as err:
                err_console.print(f"error: {err}", markup=False)
                raise typer.Exit(EXIT_BAD_INPUT) from None

        (group or app).command(*args, **kwargs)(wrapper)
        return fn

    return decorate
