"""The ``helmsim`` script: Ctrl-C is handled from the first instant, then the CLI runs.

Importing the CLI loads every command (and the simulator) and takes a moment; a Ctrl-C during
it is one line and exit 130 like any other (``helmsim.interrupts``), never a traceback.
"""

from __future__ import annotations


def main() -> None:
    """Install the Ctrl-C handler, import the CLI, run it."""
    from helmsim import interrupts

    interrupts.install()
    try:
        from helmsim.cli import main as cli_main
    except interrupts.Interrupted:
        interrupts.report()
        return
    cli_main()


if __name__ == "__main__":  # pragma: no cover - `python -m helmsim` goes through __main__
    main()
