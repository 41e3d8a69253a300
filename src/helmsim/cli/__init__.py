"""Command-line interface. Each command lives in its own module and registers itself on ``app``
when first run (``helmsim.cli.app.COMMANDS``)."""

from __future__ import annotations

import os
import sys

import typer

from helmsim.cli.app import app
from helmsim import interrupts
from helmsim.errors import one_line
from helmsim.interrupts import Interrupted
from helmsim.report.safe import safe_text

EXIT_INTERNAL = 3


def main() -> None:
    """Entry point of the ``helmsim`` script and ``python -m helmsim``.

    Usage errors are one line and exit 2, like bad input; an unexpected exception is one line
    and exit 3 (``HELMSIM_DEBUG=1`` shows the traceback), so CI never mistakes a crash for a
    prediction; Ctrl-C is one line and exit 130 (``helmsim.interrupts``).
    """
    try:  # Typer ≥ 0.2x vendors Click; older releases use the click package
        from typer._click import exceptions as click_exc
    except ImportError:  # pragma: no cover - depends on the installed Typer
        from click import exceptions as click_exc  # type: ignore[no-redef]

    try:
        code = app(standalone_mode=False)
    except click_exc.UsageError as err:
        message = err.format_message()
        if message:  # empty for a bare command, whose help was just shown
            where = f" (see '{err.ctx.command_path} --help')" if err.ctx is not None else ""
            sys.stderr.write(one_line(safe_text(f"error: {message}{where}")) + "\n")
        sys.exit(2)
    except click_exc.ClickException as err:
        sys.stderr.write(one_line(safe_text(f"error: {err.format_message()}")) + "\n")
        sys.exit(err.exit_code)
    except Interrupted:  # Ctrl-C, once helmsim.entry installed the handler
        interrupts.report()
    except typer.Abort:
        sys.stderr.write("aborted\n")
        sys.exit(interrupts.EXIT_INTERRUPTED)
    except Exception as err:  # noqa: BLE001 - the last line of defence
        if os.environ.get("HELMSIM_DEBUG"):
            raise
        sys.stderr.write(
            one_line(
                safe_text(
                    f"internal error: {type(err).__name__}: {err} — a bug in helmsim; rerun with "
                    "HELMSIM_DEBUG=1 for the traceback and please report it"
                )
            )
            + "\n"
        )
        sys.exit(EXIT_INTERNAL)
    sys.exit(code if isinstance(code, int) else 0)


__all__ = ["app", "main"]
