"""Every command that writes a file writes it atomically (issue 12; docs/security.md).

`simulate` and `test` used ``Path.write_text``: a full disk replaced the previous report with a
truncated one, and a planted symlink — even a dangling one — was written through.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.report import atomic

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "tests/fixtures/charts/caps"
SCENARIO = ROOT / "examples/scenarios/seed2"

runner = CliRunner()

# (command line without --output, what a complete report holds)
WRITERS = [
    (["simulate", str(CHART), "--format", "json"], '"releases"'),
    (["simulate", str(CHART)], "PASS 1 Ready of 1 HelmRelease under kind"),
    (["simulate", str(CHART), "--format", "html"], "</html>"),
    (["check", str(CHART), "-p", "kind", "--no-verify", "--format", "sarif"], '"version": "2.1.0"'),
    (["check", str(CHART), "-p", "kind", "--no-verify"], "PASS"),
]


def _test_writer() -> tuple[list[str], str]:
    scenario = next(SCENARIO.glob("*.helmsim.yaml"))
    return (["test", str(scenario), "--format", "junit"], "<testsuites")


def _all_writers() -> list[tuple[list[str], str]]:
    return [*WRITERS, _test_writer()]


def _id(args: list[str]) -> str:
    fmt = args[args.index("--format") + 1] if "--format" in args else "text"
    return f"{args[0]}-{fmt}"


IDS = [_id(a) for a, _ in _all_writers()]


@pytest.mark.parametrize(("args", "complete"), _all_writers(), ids=IDS)
@pytest.mark.parametrize("link", ["dangling", "to-a-file"])
def test_a_planted_symlink_is_replaced_not_written_through(
    tmp_path: Path, args: list[str], complete: str, link: str
) -> None:
    victim = tmp_path / "elsewhere" / "victim.txt"
    victim.parent.mkdir()
    if link == "to-a-file":
        victim.write_text("must stay\n")
    out = tmp_path / "report.out"
    out.symlink_to(victim)
    result = runner.invoke(app, [*args, "--output", str(out)])
    assert result.exit_code in (0, 1), result.output
    assert not out.is_symlink() and complete in out.read_text()
    if link == "to-a-file":
        assert victim.read_text() == "must stay\n"
    else:
        assert not victim.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "report.out"]


def _limited(limit: int) -> None:
    # A file size limit makes write(2) fail with EFBIG, as a full disk fails with ENOSPC: the
    # signal it would raise is ignored so the write returns the error.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


# Each runs a subprocess; the writers share one path (cli.app.emit), so three of them suffice:
# the two that used Path.write_text and one that was already atomic.
FAILING = [w for w in _all_writers() if _id(w[0]) in ("simulate-json", "test-junit", "check-text")]


@pytest.mark.parametrize(("args", "complete"), FAILING, ids=[_id(a) for a, _ in FAILING])
def test_a_failed_write_leaves_the_previous_report(tmp_path: Path, args: list[str], complete: str) -> None:
    out = tmp_path / "report.out"
    out.write_text("the previous report\n")
    proc = subprocess.run(
        [sys.executable, "-m", "helmsim", *args, "--output", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        preexec_fn=lambda: _limited(150),  # smaller than any of these reports
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert f"{out}: cannot write the report: File too large" in proc.stderr
    assert out.read_text() == "the previous report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.out"]  # no temporary file left


def test_the_same_run_without_the_limit_writes_the_report(tmp_path: Path) -> None:
    """The control for the test above: the limit, not the command, made the write fail."""
    out = tmp_path / "report.out"
    args, complete = WRITERS[0]
    proc = subprocess.run(
        [sys.executable, "-m", "helmsim", *args, "--output", str(out)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert complete in out.read_text()


def test_write_atomic_keeps_a_regular_files_mode_but_not_a_symlink_targets(tmp_path: Path) -> None:
    target = tmp_path / "secret-mode"
    target.write_text("x")
    os.chmod(target, 0o600)
    link = tmp_path / "r.json"
    link.symlink_to(target)
    old = os.umask(0o022)
    try:
        atomic.write_atomic(link, "new")
    finally:
        os.umask(old)
    assert not link.is_symlink() and link.stat().st_mode & 0o777 == 0o644
    assert target.read_text() == "x"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    result = runner.invoke(app, [*WRITERS[0][0], "--output", str(tmp_path / "d")])
    assert result.exit_code == 2 and "is a directory" in result.stderr
