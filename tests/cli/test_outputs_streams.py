"""`-o` to a character device or a FIFO writes into it, never renames a file over it (issue 12
item 5, docs/security.md#files-written): as root, `check -o /dev/null` used to replace /dev/null
with a regular file. The tests use named pipes of their own, never the machine's /dev/null."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.report.atomic import write_atomic

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _drain(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t, got


@pytest.mark.parametrize("through_symlink", [False, True])
def test_a_fifo_receives_the_report_and_stays_a_fifo(tmp_path: Path, through_symlink: bool) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    target = fifo
    if through_symlink:  # like /dev/stdout -> /proc/self/fd/1
        target = tmp_path / "stdout"
        target.symlink_to(fifo)
    reader, got = _drain(fifo)
    result = runner.invoke(app, ["profiles", "show", "kind", "-o", str(target)])
    reader.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert got and got[0].startswith(b"# resolved from: kind\n")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert not through_symlink or target.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"pipe", target.name})  # no temp file


def test_other_special_files_are_refused(tmp_path: Path) -> None:
    import socket

    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        with pytest.raises(Exception, match="not a regular file"):
            write_atomic(sock_path, "x")
        assert stat.S_ISSOCK(sock_path.lstat().st_mode)


def test_a_symlink_to_a_regular_file_is_still_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    link = tmp_path / "out.txt"
    link.symlink_to(victim)
    write_atomic(link, "report")
    assert victim.read_text() == "keep" and not link.is_symlink() and link.read_text() == "report"
