"""Command-line interface. Each command lives in its own module and registers itself on ``app``."""

from __future__ import annotations

from helmsim.cli import check as _check  # noqa: F401
from helmsim.cli import diff as _diff  # noqa: F401
from helmsim.cli import plan as _plan  # noqa: F401
from helmsim.cli import profiles as _profiles  # noqa: F401
from helmsim.cli import render as _render  # noqa: F401
from helmsim.cli import simulate as _simulate  # noqa: F401
from helmsim.cli import status as _status  # noqa: F401
from helmsim.cli import test as _test  # noqa: F401
from helmsim.cli.app import app


def main() -> None:
    """Entry point of the ``helmsim`` script and ``python -m helmsim``."""
    app()


__all__ = ["app", "main"]
