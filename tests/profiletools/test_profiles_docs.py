"""The commands docs/profiles.md shows for import, calibrate and diff run as documented."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from profiletools_helpers import ROOT, runner

from helmsim.cli import app

DOC = (ROOT / "docs" / "profiles.md").read_text()
SECTION = DOC[DOC.index("## Importing a cluster") :]


def _commands() -> list[str]:
    out = []
    for block in re.findall(r"```console\n(.*?)```", SECTION, re.DOTALL):
        for line in block.splitlines():
            if not line.startswith("$ "):
                continue
            for cmd in line[2:].split(" && "):
                cmd = cmd.strip()
                # a real cluster (kubectl, a kubeconfig) is not here; --runs is the slow
                # Monte-Carlo example test_calibrate.py runs with the same profiles
                if cmd.startswith("helmsim ") and "--kubeconfig" not in cmd and "--runs" not in cmd:
                    out.append(cmd)
    return out


def test_the_documented_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("tests", "examples"):
        os.symlink(ROOT / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    commands = _commands()
    assert len(commands) >= 6, commands
    for cmd in commands:
        result = runner.invoke(app, shlex.split(cmd)[1:])
        assert result.exit_code in (0, 1), f"{cmd}: {result.output}"
        if cmd.startswith("helmsim profiles calibrate tests/data/profiles/events -p kind"):
            block = SECTION[SECTION.index(cmd) :].split("```")[0]
            shown = [ln for ln in block.splitlines()[1:] if ln.strip()]
            assert shown and all(ln in result.stderr.splitlines() for ln in shown), result.stderr
    assert (tmp_path / "my-kind.yaml").is_file() and (tmp_path / "kind-calibrated.yaml").is_file()
