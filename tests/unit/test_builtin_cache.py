"""The validated built-in data kept beside the bytecode (helmsim.builtin_cache, issue 15): a
cached value is the value a fresh build gives, and a changed input, a damaged file or an
unwritable directory never yields a stale or broken one."""

from __future__ import annotations

import os
import pickle
import stat
import sys
from importlib import resources
from pathlib import Path

import pytest

from helmsim import builtin_cache
from helmsim.cluster import profile as profiles
from helmsim.cluster.catalog import cached_builtin_catalog, parse_builtin_catalog


def _never() -> object:
    raise AssertionError("built although a valid cached value was there")


def _is_list(v: object) -> bool:
    return isinstance(v, list)


def test_a_stored_value_is_read_back_without_building(tmp_path: Path) -> None:
    first = builtin_cache.load("x", [b"data"], lambda: [1, 2], _is_list, write=True, directory=tmp_path)
    again = builtin_cache.load("x", [b"data"], _never, _is_list, directory=tmp_path)
    assert first == again == [1, 2]
    assert len(list(tmp_path.glob("x.*.pickle"))) == 1


def test_changed_inputs_build_again_and_replace_the_old_file(tmp_path: Path) -> None:
    builtin_cache.load("x", [b"v1"], lambda: [1], _is_list, write=True, directory=tmp_path)
    got = builtin_cache.load("x", [b"v2"], lambda: [2], _is_list, write=True, directory=tmp_path)
    assert got == [2]
    files = list(tmp_path.glob("x.*.pickle"))
    assert len(files) == 1 and pickle.loads(files[0].read_bytes()) == [2]


def test_the_key_covers_helmsims_code(monkeypatch: pytest.MonkeyPatch) -> None:
    before = builtin_cache.digest([b"same"])
    monkeypatch.setattr(builtin_cache, "code_stamp", lambda: b"another edit of the code")
    assert builtin_cache.digest([b"same"]) != before


@pytest.mark.parametrize("damage", [b"", b"not a pickle", pickle.dumps({"a": "dict"})])
def test_a_damaged_or_foreign_file_is_rebuilt_and_rewritten(tmp_path: Path, damage: bytes) -> None:
    builtin_cache.load("x", [b"d"], lambda: [1], _is_list, write=True, directory=tmp_path)
    (path,) = tmp_path.glob("x.*.pickle")
    path.write_bytes(damage)
    assert builtin_cache.load("x", [b"d"], lambda: [3], _is_list, write=True, directory=tmp_path) == [3]
    assert pickle.loads(path.read_bytes()) == [3]


def test_nothing_is_written_under_dont_write_bytecode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert builtin_cache.load("x", [b"d"], lambda: [1], _is_list, directory=tmp_path) == [1]
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    builtin_cache.load("x", [b"d"], lambda: [1], _is_list, directory=tmp_path)
    assert len(list(tmp_path.glob("x.*.pickle"))) == 1


def test_a_read_only_directory_still_gives_the_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_a: object, **_k: object) -> int:
        raise PermissionError(13, "Permission denied")  # a root-owned site-packages

    monkeypatch.setattr(builtin_cache.os, "open", refused)
    assert builtin_cache.load("x", [b"d"], lambda: [1], _is_list, write=True, directory=tmp_path) == [1]
    assert list(tmp_path.iterdir()) == []


def test_a_missing_directory_that_cannot_be_made_still_gives_the_value(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the directory would be")
    assert builtin_cache.load("x", [b"d"], lambda: [1], _is_list, write=True, directory=blocker / "sub") == [1]


def test_files_are_written_with_the_umask_as_bytecode_is(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        builtin_cache.load("x", [b"d"], lambda: [1], _is_list, write=True, directory=tmp_path)
    finally:
        os.umask(old)
    (path,) = tmp_path.glob("x.*.pickle")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_cached_builtin_catalog_is_the_parsed_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builtin_cache, "_DIR", tmp_path)
    root = resources.files("helmsim").joinpath("catalog")
    files = [(i.name, i.read_bytes()) for i in sorted(root.iterdir(), key=lambda p: p.name) if i.name.endswith(".yaml")]
    fresh = parse_builtin_catalog(files)
    written = cached_builtin_catalog(write=True)
    read = cached_builtin_catalog()
    assert written == read == fresh
    assert [e.origin for e in read] == [e.origin for e in fresh]  # file:line of each entry kept


@pytest.mark.parametrize("name", profiles.builtin_names())
def test_each_cached_builtin_profile_is_the_resolved_one(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(builtin_cache, "_DIR", tmp_path)
    fresh = profiles._resolve(profiles._open(name, base_dir=None, referrer=None))
    profiles.cached_builtin_profile(name, write=True)
    read = profiles.load_profile(name)
    assert read == fresh and read.to_data() == fresh.to_data()
    assert len(list(tmp_path.glob(f"profile-{name}.*.pickle"))) == 1
