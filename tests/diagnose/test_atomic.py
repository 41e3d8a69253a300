"""Report files are replaced atomically: never partial, no temporary file left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helmsim.errors import InputError
from helmsim.report import atomic


def test_replaces_the_file_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    atomic.write_atomic(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_failed_write_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(atomic.os, "replace", boom)
    with pytest.raises(InputError, match="cannot write the report: disk full"):
        atomic.write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_missing_directory_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        atomic.write_atomic(tmp_path / "nope" / "r.json", "x")
