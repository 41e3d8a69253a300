"""The compact default text of ``simulate`` and ``check`` (issue 18 item 1): per release the
verdict, the cause and the verified fix, notes, one summary line last; the timeline behind
``--timeline``; ``--quiet``; ``--no-color``; wrapped at the terminal width, names never cut."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from helmsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
SEED2 = ROOT / "examples" / "seed2-hf-cache"
MAIN = "agent-platform/agent-platform-connectivity"
DEPENDENTS = ["agent-manager", "kagent", "model-manager", "substrate"]
runner = CliRunner()
COLOUR = re.compile(r"\x1b\[[0-9;]*?(?:3[0-7]|38;[0-9;]+|9[0-7])m")


def run(*args: str, columns: int = 80, **env: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(columns), **env})
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout


def seed2(command: str, *extra: str) -> list[str]:
    return [command, str(SEED2), "--helmrelease", str(SEED2 / "flux"), *extra]


def _names_whole(out: str, names: list[str]) -> None:
    """Each name appears unbroken on one line (never cut to ``agent-platform…``)."""
    assert "…" not in out
    for name in names:
        assert any(name in line for line in out.splitlines()), name


def test_simulate_seed2_at_80_columns_is_short_and_says_cause_fix_and_what_it_blocks() -> None:
    code, out = run(*seed2("simulate", "-p", "kind"))
    assert code == 1
    lines = out.splitlines()
    assert 10 < len(lines) <= 45, len(lines)  # was 441 lines with the timeline
    assert max(len(line) for line in lines) <= 80
    assert all(line == line.rstrip() for line in lines)
    _names_whole(out, [MAIN, "PersistentVolumeClaim/model-serving/hf-cache"])
    flat = " ".join(out.split())
    assert f"{MAIN} Stalled after 5 attempts" in flat
    assert "cause HS102: PersistentVolumeClaim/model-serving/hf-cache binds only when a pod mounts it" in flat
    assert "fix apply PersistentVolumeClaim/model-serving/hf-cache from a post-install,post-upgrade hook Job" in flat
    assert "verified: Ready on the first attempt at t=80s under kind" in flat
    blocks = flat[flat.index(" blocks ") :]
    assert all(f"agent-platform/{d}" in blocks for d in DEPENDENTS)
    # notes come before the one summary line, which is last
    summary = next(i for i, ln in enumerate(lines) if ln.startswith("FAIL "))
    assert summary >= len(lines) - 2  # the last paragraph (wrapped at 80 columns)
    assert max(i for i, ln in enumerate(lines) if ln.startswith("note:")) < summary
    assert flat.endswith("FAIL 1 Stalled, 4 Blocked, 1 Ready of 6 HelmReleases under kind (5 not simulated)")
    assert "Timeline" not in out and "Helm history" not in out


def test_simulate_shows_the_cause_and_verified_fixes_check_reports() -> None:
    _, sim = run(*seed2("simulate", "-p", "cilium-always"), columns=400)
    _, doc_text = run(*seed2("check", "-p", "cilium-always", "--format", "json"), columns=400)
    doc = json.loads(doc_text)
    [root] = [f for f in doc["findings"] if f["rule"] == "HS102"]
    assert f"cause  HS102: {root['message']}" in sim
    for fx in root["fixes"]:
        assert f"fix    {fx['summary']}" in sim
        for chk in fx["checks"]:
            state = "verified" if chk["converges"] else f"not enough under {chk['profile']}"
            assert f"{state}: {chk['detail']}" in sim


def test_timeline_is_behind_the_flag() -> None:
    _, short = run(*seed2("simulate", "-p", "kind"))
    _, long = run(*seed2("simulate", "-p", "kind", "--timeline"))
    assert "Timeline" in long and f"Helm history of {MAIN}" in long
    assert len(long.splitlines()) > 3 * len(short.splitlines())
    assert long.splitlines()[-1] == short.splitlines()[-1]


def test_quiet_prints_only_the_summary_line() -> None:
    code, out = run(*seed2("simulate", "-p", "kind", "--quiet"))
    assert code == 1 and out.startswith("FAIL 1 Stalled") and len(out.splitlines()) <= 2
    code, out = run(*seed2("check", "-p", "kind", "-q"), columns=160)
    assert code == 1 and out.splitlines() == ["FAIL 1 error (4 releases blocked by it) (fail on: error)"]


def test_no_color_drops_the_colours_forced_on() -> None:
    _, coloured = run(*seed2("check", "-p", "kind", "--no-verify"), FORCE_COLOR="1")
    _, plain = run(*seed2("check", "-p", "kind", "--no-verify", "--no-color"), FORCE_COLOR="1")
    assert COLOUR.search(coloured) and not COLOUR.search(plain)
    _, plain = run(*seed2("simulate", "-p", "kind", "--no-color"), FORCE_COLOR="1")
    assert not COLOUR.search(plain)


def test_check_table_at_80_columns_never_cuts_release_names() -> None:
    code, out = run(*seed2("check"))
    assert code == 1
    _names_whole(out, [MAIN] + [f"agent-platform/{d}" for d in DEPENDENTS])
    assert f"{MAIN}  Stalled HS102 (every profile)" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    # wide enough: the release × profile table
    _, wide = run(*seed2("check"), columns=160)
    head = wide.splitlines()[1].split()
    assert head == ["HELMRELEASE", "KIND", "CILIUM-DEFAULT", "CILIUM-ALWAYS", "EKS-GP3"]
    _names_whole(wide, [MAIN])


def test_check_seed1_rows_differ_by_release_and_profile() -> None:
    _, out = run("check", str(SEED1), "--helmrelease", str(SEED1 / "flux"))
    flat = " ".join(out.split())
    assert f"{MAIN} Ready HS103 (kind, cilium-default, eks-gp3); Ready HS101 HS103 (cilium-always)" in flat
    assert flat.endswith("PASS 2 warnings (fail on: error)")
