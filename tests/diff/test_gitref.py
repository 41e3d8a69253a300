"""Reading a chart directory at a git ref without touching the working tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from diffrepo import Commit, git

from helmsim import gitref
from helmsim.errors import InputError


@pytest.fixture
def history(repo: Path, commit: Commit) -> Path:
    commit({"chart/Chart.yaml": "name: old\n", "chart2/x.yaml": "other\n"}, "one")
    run = repo / "chart/run.sh"
    commit({"chart/Chart.yaml": "name: new\n", "chart/run.sh": "#!/bin/sh\n"}, "two")
    run.chmod(0o755)
    (repo / "chart/link.yaml").symlink_to("Chart.yaml")
    (repo / "chart/escape.yaml").symlink_to("../chart2/x.yaml")
    commit({}, "three")
    return repo


def test_resolve_names_the_commit(history: Path) -> None:
    repo, prefix = gitref.find_repo(history / "chart")
    assert prefix == "chart" and repo.top.resolve() == history.resolve()
    head = gitref.resolve(repo, "HEAD~2")
    assert head.sha == git(history, "rev-parse", "HEAD~2").strip() and head.short == head.sha[:12]


@pytest.mark.parametrize("ref", ["nope", "HEAD~9", "--output=/tmp/helmsim-should-not-exist", ""])
def test_unknown_refs_are_input_errors(history: Path, ref: str) -> None:
    repo, _ = gitref.find_repo(history)
    with pytest.raises(InputError):
        gitref.resolve(repo, ref)
    assert not Path("/tmp/helmsim-should-not-exist").exists()


def test_export_writes_the_directory_as_it_was(history: Path, tmp_path: Path) -> None:
    repo, _ = gitref.find_repo(history)
    old = gitref.export_dir(gitref.resolve(repo, "HEAD~2"), "chart", tmp_path / "old").path
    assert sorted(p.name for p in old.iterdir()) == ["Chart.yaml"]  # not chart2's files
    assert (old / "Chart.yaml").read_text() == "name: old\n"
    new = gitref.export_dir(gitref.resolve(repo, "HEAD"), "chart", tmp_path / "new").path
    assert (new / "Chart.yaml").read_text() == "name: new\n"
    assert os.access(new / "run.sh", os.X_OK)
    assert (new / "link.yaml").is_symlink() and (new / "link.yaml").read_text() == "name: new\n"
    assert not (new / "escape.yaml").exists()  # a link out of the chart is not recreated


def test_export_leaves_work_tree_index_and_refs_alone(history: Path, tmp_path: Path) -> None:
    (history / "chart/Chart.yaml").write_text("name: edited\n")
    index = history / ".git/index"
    status, head = git(history, "status", "--porcelain"), git(history, "rev-parse", "HEAD")
    index_before = index.stat().st_mtime_ns  # after `git status`, which may refresh the index
    repo, _ = gitref.find_repo(history)
    gitref.export_dir(gitref.resolve(repo, "HEAD~2"), "chart", tmp_path / "out")
    assert index.stat().st_mtime_ns == index_before
    assert (git(history, "status", "--porcelain"), git(history, "rev-parse", "HEAD")) == (
        status,
        head,
    )
    assert (history / "chart/Chart.yaml").read_text() == "name: edited\n"


def test_a_directory_missing_at_the_ref_is_an_input_error(history: Path, tmp_path: Path) -> None:
    repo, _ = gitref.find_repo(history)
    with pytest.raises(InputError, match="directory 'later' did not exist at HEAD~1"):
        gitref.export_dir(gitref.resolve(repo, "HEAD~1"), "later", tmp_path / "x")


def test_read_file_at_ref(history: Path) -> None:
    repo, _ = gitref.find_repo(history)
    first = gitref.resolve(repo, "HEAD~2")
    assert gitref.read_file(first, "chart/Chart.yaml") == b"name: old\n"
    assert gitref.read_file(first, "chart/run.sh") is None


def test_outside_a_repository(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not inside a git work tree"):
        gitref.find_repo(tmp_path)
