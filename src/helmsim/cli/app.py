"""The Typer application and the conventions every command shares."""

from __future__ import annotations

import difflib
import errno
import functools
import gc
import importlib
import os
import sys
from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

import typer
import typer.core
import typer.main

try:  # Typer ≥ 0.2x vendors Click; older releases use the click package
    from typer import _click as click
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - depends on the installed Typer
    import click  # type: ignore[no-redef]
    from click import exceptions as click_exceptions  # type: ignore[no-redef]
from typer.core import TyperArgument, TyperCommand, TyperGroup

from helmsim.cli.limit_options import with_common_options
from helmsim.errors import InputError, shorten
from helmsim.report.atomic import write_atomic
from helmsim.report.safe import SafeConsole

class _PlainArgument(TyperArgument):
    """An argument whose help shows its name only, not Python's type of it."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


def _plain_metavars(params: list[Any]) -> None:
    """Help shows what a value is, never Python's type (``<bool>``, ``<str>``, ``<list[Path]>``):
    flags show nothing, choices ``a|b``, numbers ``N``, anything else without a metavar its
    name in capitals."""
    for p in params:
        if isinstance(p, TyperArgument):
            p.__class__ = _PlainArgument
        if p.metavar is not None:
            continue
        desc = getattr(p, "type_descriptor", None)
        if getattr(p, "is_flag", False):
            p.metavar = ""
        elif desc is not None and desc.choices is not None:
            p.metavar = "|".join(str(c.value if isinstance(c, Enum) else c) for c in desc.choices)
        elif isinstance(p, TyperArgument):
            p.metavar = (p.name or "ARG").upper()
        elif desc is not None and desc.annotation in (int, float):
            p.metavar = "N"
        else:
            p.metavar = (p.name or "VALUE").upper()


class _PlainHelp:
    """Plain metavars (:func:`_plain_metavars`) for a command's parameters, --help included."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        _plain_metavars(params)
        return params


class HelpCommand(_PlainHelp, TyperCommand):
    """A command whose help has plain metavars."""


class HelpGroup(_PlainHelp, TyperGroup):
    """A command group whose help has plain metavars."""


COMMANDS: dict[str, tuple[str, str]] = {
    "check": (
        "helmsim.cli.check",
        "Simulate each profile of the matrix, report findings with their causal chains, and check the fixes.",
    ),
    "diff": (
        "helmsim.cli.diff",
        "Render a chart as it is in the working tree and as it was at a git ref, per values file.",
    ),
    "explain": (
        "helmsim.cli.explain",
        "Search the faults and latencies helmsim models for those that reproduce an observation.",
    ),
    "fleet": (
        "helmsim.cli.fleet",
        "Rehearse every release × values file of a matrix under every profile, as parallel tasks.",
    ),
    "plan": (
        "helmsim.cli.plan",
        "Print Helm's plan: crds/, hooks in order, the manifest kind group by kind group, the wait.",
    ),
    "render": (
        "helmsim.cli.render",
        "Render a chart with Helm's engine and print the manifest as `helm template` does.",
    ),
    "simulate": (
        "helmsim.cli.simulate",
        "Simulate Helm and helm-controller on a cluster profile and predict each release's outcome.",
    ),
    "status": (
        "helmsim.cli.status",
        "Compute the kstatus status of live objects, as helm-controller's readers see them.",
    ),
    "test": (
        "helmsim.cli.test",
        "Run scenario files and check every expectation, with the trace as evidence.",
    ),
    "profiles": ("helmsim.cli.profiles", "List, show, import, calibrate and diff cluster profiles."),
}
"""Each command: the module that registers it and the summary ``--help`` lists (the first
paragraph of its docstring; tests/cli/test_lazy_commands.py keeps the two equal)."""


RENDERING = frozenset({"check", "diff", "explain", "plan", "render", "simulate", "test"})
"""The commands that render charts in this process (fleet renders in its tasks' processes)."""

_HELP_FLAGS = frozenset({"--help", "-h"})


class LazyGroup(_PlainHelp, typer.core.TyperGroup):
    """The root command group, importing a command's module only when that command runs.

    ``helmsim --help`` lists :data:`COMMANDS` without importing any of them (importing them all
    loads the whole simulator and tripled start-up).
    """

    _listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *(n for n in self.commands if n not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = self.commands.get(cmd_name)
        if found is not None or cmd_name not in COMMANDS:
            return found
        module, summary = COMMANDS[cmd_name]
        if self._listing:  # the summary is all --help shows
            return HelpCommand(name=cmd_name, short_help=summary, rich_markup_mode=self.rich_markup_mode)
        importlib.import_module(module)
        built = _registered(cmd_name)
        if built is not None:
            self.commands[cmd_name] = built
        return built

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] in RENDERING and not _HELP_FLAGS.intersection(args[1:]):
            from helmsim import engine_worker

            engine_worker.prestart()  # Helm's engine loads while the command's modules import
        try:
            return super().resolve_command(ctx, args)
        except click_exceptions.UsageError as err:  # Typer suggests among the loaded commands only
            close = difflib.get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if close and "Did you mean" not in err.message:
                err.message = err.message.rstrip(".") + ". Did you mean " + ", ".join(map(repr, close)) + "?"
            raise

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def _registered(name: str) -> click.Command | None:
    """The click command of ``name`` as registered on :data:`app` by its module."""
    for info in app.registered_commands:
        if info.name == name:
            return typer.main.get_command_from_info(
                info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
            )
    for group in app.registered_groups:
        if group.name == name:
            return typer.main.get_group_from_info(
                group,
                pretty_exceptions_short=app.pretty_exceptions_short,
                suggest_commands=app.suggest_commands,
                rich_markup_mode=app.rich_markup_mode,
            )
    return None


app = typer.Typer(
    cls=LazyGroup,
    name="helmsim",
    help="Rehearse Helm and Flux rollouts offline: render, plan, simulate and explain.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

# Not on a terminal (CI, pipes, tests): a fixed 160 columns keeps reports stable and unclipped,
# unless COLUMNS says otherwise (Rich reads it). Both consoles redact secrets and escape control
# characters in everything they print (helmsim.report.safe).
def _stdout_width() -> int | None:
    return None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160


console = SafeConsole(soft_wrap=True, width=_stdout_width())
err_console = SafeConsole(stderr=True, soft_wrap=True)


def report_console(*, no_color: bool = False) -> SafeConsole:
    """A stdout console for one report, at the terminal's width (or ``COLUMNS``, else 160) as
    it is now; ``--no-color`` drops colours as the ``NO_COLOR`` environment variable does."""
    return SafeConsole(soft_wrap=True, width=_stdout_width(), no_color=no_color or None)


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

_BAD_PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ELOOP})
"""A path the operating system refuses to look up (a name past NAME_MAX/PATH_MAX, a symlink
loop): the input is bad, whichever reader met it first."""


def path_error(err: OSError) -> InputError | None:
    """The one-line bad-input error for a path the system cannot look up, else None."""
    if err.errno not in _BAD_PATH_ERRNOS:
        return None
    name = str(err.filename) if err.filename is not None else "a path"
    return InputError(f"{shorten(name)}: {err.strerror or 'cannot look the path up'}")

EXIT_BAD_INPUT = 2


def command(*args: Any, group: typer.Typer | None = None, **kwargs: Any) -> Callable[[F], F]:
    """Register a command (on ``group``, default the root app) whose ``InputError`` becomes one
    line on stderr and exit code 2; every command also takes the limit flags and ``--debug``
    (helmsim.cli.limit_options)."""

    def decorate(fn: F) -> F:
        inner = with_common_options(fn)

        @functools.wraps(inner)
        def wrapper(*a: Any, **k: Any) -> Any:
            if not gc.isenabled():
                # helmsim.entry paused the collector while the modules imported; what they made
                # lives as long as the process, so it goes to the permanent generation rather than
                # be traced by the first collection (CPython Modules/gcmodule.c gc_freeze_impl)
                gc.freeze()
                gc.enable()
            try:
                return inner(*a, **k)
            except InputError as err:
                err_console.print(f"error: {err}", markup=False)
                raise typer.Exit(EXIT_BAD_INPUT) from None
            except OSError as err:
                bad = path_error(err)
                if bad is None:
                    raise
                err_console.print(f"error: {bad}", markup=False)
                raise typer.Exit(EXIT_BAD_INPUT) from None

        kwargs.setdefault("cls", HelpCommand)
        (group or app).command(*args, **kwargs)(wrapper)
        return fn

    return decorate
