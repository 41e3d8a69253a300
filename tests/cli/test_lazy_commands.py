"""Commands are imported when they run, not at start-up (issue 15: ``helmsim --help`` fast)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.cli.app import COMMANDS, LazyGroup

_PROBE = """
import sys
sys.argv = ["helmsim", *sys.argv[1:]]
from helmsim.entry import main
try:
    main()
except SystemExit:
    pass
import gc
prefixes = ("helmsim.cli.", "helmsim.simulate", "helmsim.cluster", "helmsim.montecarlo", "helmsim.diagnose", "rich.progress")
loaded = sorted(m for m in sys.modules if m.startswith(prefixes))
sys.stderr.write("LOADED " + " ".join(loaded) + "\\n")
sys.stderr.write(f"FROZEN {gc.get_freeze_count()}\\n")
"""


def _probe(*args: str) -> tuple[set[str], int]:
    """The modules a real ``helmsim ARGS`` process loaded, and how many objects it had frozen."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, check=False)
    (line,) = [line for line in proc.stderr.splitlines() if line.startswith("LOADED")]
    (frozen,) = [line for line in proc.stderr.splitlines() if line.startswith("FROZEN")]
    return set(line.split()[1:]), int(frozen.split()[1])


def _loaded(*args: str) -> set[str]:
    return _probe(*args)[0]


def test_help_lists_every_command_without_importing_any() -> None:
    loaded = _loaded("--help")
    assert not {module for module, _ in COMMANDS.values()} & loaded
    assert not any(m.startswith(("helmsim.simulate", "helmsim.cluster")) for m in loaded)


def test_running_a_command_imports_only_its_module() -> None:
    loaded = _loaded("profiles", "list")
    assert "helmsim.cli.profiles" in loaded
    assert "helmsim.cli.check" not in loaded and "helmsim.cli.fleet" not in loaded


SEED1 = [str(Path(__file__).resolve().parents[2] / "examples" / "seed1-migrate-race"), "--release-name", "r", "--namespace", "n", "--profile", "kind"]


def test_one_simulate_loads_neither_sampling_nor_the_progress_bar() -> None:
    # start-up (issue 15): --runs N and the diagnosis of a failed run bring their own modules
    loaded, frozen = _probe("simulate", *SEED1, "--format", "json")
    assert "helmsim.cli.simulate" in loaded and "helmsim.cluster.engine" in loaded
    assert not {"helmsim.cli.sampled", "helmsim.montecarlo", "helmsim.diagnose.sampling", "rich.progress"} & loaded
    # what the imports made went to the permanent generation when the command began
    assert frozen > 10_000


def test_sampled_runs_load_their_modules() -> None:
    loaded, _ = _probe("simulate", *SEED1, "--runs", "2", "--quiet")
    assert {"helmsim.cli.sampled", "helmsim.montecarlo"} <= loaded


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_listed_summary_is_the_commands_own(name: str) -> None:
    import typer.main

    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    ctx = group.make_context("helmsim", [name, "--help"], resilient_parsing=True)
    command = group.get_command(ctx, name)
    assert command is not None
    assert (command.short_help or command.help or "").split("\n\n")[0].strip() == COMMANDS[name][1]


def test_root_help_shows_each_summary() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    rows = {" ".join(line.strip("│ ").split()) for line in result.output.splitlines()}
    for name, (_, summary) in COMMANDS.items():
        assert f"{name} {summary}" in rows


def test_a_mistyped_command_suggests_the_near_ones() -> None:
    proc = subprocess.run([sys.executable, "-m", "helmsim", "simulte"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "No such command 'simulte'. Did you mean 'simulate'?" in proc.stderr
