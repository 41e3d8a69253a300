"""The entry of helmsim's pre-commit hooks (``.pre-commit-hooks.yaml``, docs/ci.md).

pre-commit runs ``python -m helmsim.precommit check|render [ARGS…] [--] FILES…`` with the
changed files last. Each file belongs to the nearest chart at or above it (a directory with
``Chart.yaml``); every such chart is checked (or rendered) once, with ARGS, in path order. The
exit code is the worst of the runs (0, 1 findings, 2 bad input).

ARGS come from the hook's ``args:``; the changed files are the trailing arguments that name
existing files. When the last of ARGS is itself a file (``-f ci/values.yaml``), end ARGS with
``--``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

COMMANDS = ("check", "render")


def split_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(ARGS, FILES)`` of the hook's command line (see the module docstring)."""
    items = list(argv)
    if "--" in items:
        cut = len(items) - 1 - items[::-1].index("--")
        return items[:cut], items[cut + 1 :]
    cut = len(items)
    while cut > 0 and not items[cut - 1].startswith("-") and Path(items[cut - 1]).is_file():
        cut -= 1
    if 0 < cut < len(items) and items[cut - 1].startswith("-") and not items[cut - 1].startswith("--"):
        cut += 1  # a short option's value (`-f values.yaml`) is not a changed file
    return items[:cut], items[cut:]


def charts_of(files: Sequence[str]) -> list[str]:
    """The charts the files belong to: for each, the nearest directory at or above it holding a
    ``Chart.yaml``, not above the current directory; each once, sorted."""
    top = Path.cwd().resolve()
    found: set[str] = set()
    for name in files:
        here = (Path.cwd() / name).resolve().parent
        for d in (here, *here.parents):
            if (d / "Chart.yaml").is_file():
                found.add(d.relative_to(top).as_posix() if d.is_relative_to(top) else str(d))
                break
            if d == top:
                break
    return sorted(found)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``helmsim COMMAND CHART ARGS…`` for every chart the changed files belong to."""
    import subprocess

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in COMMANDS:
        sys.stderr.write(f"usage: python -m helmsim.precommit {{{'|'.join(COMMANDS)}}} [ARGS…] [--] FILES…\n")
        return 2
    command, (options, files) = args[0], split_args(args[1:])
    worst = 0
    for chart in charts_of(files):
        print(f"helmsim {command} {chart}", flush=True)
        # render's manifest is not the point of the hook: only its errors (stderr) are shown
        quiet = subprocess.DEVNULL if command == "render" else None
        done = subprocess.run([sys.executable, "-m", "helmsim", command, chart, *options], stdout=quiet, check=False)
        worst = max(worst, done.returncode)
    return worst


if __name__ == "__main__":
    sys.exit(main())
