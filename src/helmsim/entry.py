"""The ``helmsim`` script: Ctrl-C is handled from the first instant, then the CLI runs.

Importing the CLI loads every command (and the simulator) and takes a moment; a Ctrl-C during
it is one line and exit 130 like any other (``helmsim.interrupts``), never a traceback.
"""

from __future__ import annotations


# The filter multiprocessing's resource tracker is started with (below).
TRACKER_FILTER = "ignore:resource_tracker:UserWarning"


def quiet_resource_tracker() -> None:
    """Keep multiprocessing's resource tracker from printing after a Ctrl-C.

    A Ctrl-C ends the worker pools at once; the semaphores of their queues are then left to the
    tracker (a separate process), which unlinks them and warns "There appear to be N leaked
    semaphore objects to clean up at shutdown" on stderr, after our one line. It is started with
    this interpreter's warning options (CPython Lib/multiprocessing/util.py
    _args_from_interpreter_flags), so the filter is added to them before any pool exists; the
    tracker still unlinks what it finds.
    """
    import sys

    if TRACKER_FILTER not in sys.warnoptions:
        sys.warnoptions.append(TRACKER_FILTER)


def main() -> None:
    """Install the Ctrl-C handler, import the CLI, run it."""
    import gc

    from helmsim import interrupts

    # Importing the CLI and a command's modules allocates much and frees little: the collector's
    # passes over it find nothing to free. It runs again from the command's first line.
    gc.disable()

    quiet_resource_tracker()
    interrupts.install()
    try:
        from helmsim.cli import main as cli_main
    except interrupts.Interrupted:
        interrupts.report()
        return
    try:
        cli_main()
    finally:
        skip_final_collection()


def skip_final_collection() -> None:
    """The process is ending: move every object to the garbage collector's permanent generation,
    so the collection the interpreter runs at exit does not trace a simulation's objects only to
    free them (0.17 s of a 1,000-object simulate); their memory goes back with the process."""
    import gc

    gc.freeze()


if __name__ == "__main__":  # pragma: no cover - `python -m helmsim` goes through __main__
    main()
