"""The text reports shown in the docs are what the commands print: every ```console block whose
first line is ``$ COLUMNS=N helmsim …`` is run from the repository root and compared byte for
byte (regenerate a block by running its command)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helmsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```console\n\$ COLUMNS=(\d+) helmsim ([^\n]+)\n(.*?)```", re.S)


def _examples() -> list[tuple[str, int, str, str]]:
    out = []
    for doc in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        for m in BLOCK.finditer(doc.read_text(encoding="utf-8")):
            out.append((doc.name, int(m.group(1)), m.group(2), m.group(3)))
    return out


EXAMPLES = _examples()


def test_the_docs_show_both_compact_reports() -> None:
    commands = {cmd.split()[0] for _, _, cmd, _ in EXAMPLES}
    assert {"simulate", "check"} <= commands


@pytest.mark.parametrize(("doc", "columns", "command", "shown"), EXAMPLES, ids=[f"{d}:{c[:40]}" for d, _, c, _ in EXAMPLES])
def test_a_documented_report_is_what_the_command_prints(
    doc: str, columns: int, command: str, shown: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, shlex.split(command), env={"COLUMNS": str(columns)})
    assert result.exit_code in (0, 1), result.output
    assert result.stdout == shown, f"{doc}: regenerate the block of `helmsim {command}`"
