"""Hostile git trees: an export never writes or reads outside its directory (issue 12).

The trees are built with git plumbing (`hash-object`, `mktree`, `commit-tree`), as a fetched
commit can hold them: `git fetch` does not check tree entries (transfer.fsckObjects is false by
default), so names like ``..`` and symlinks like ``zz -> .`` reach the object database.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
from diffrepo import CHART_YAML, git
from typer.testing import CliRunner

from helmsim import gitref
from helmsim.cli import app
from helmsim.errors import InputError

Tree = Mapping[str, "bytes | tuple[str, bytes] | Tree"]
"""name -> blob content, (mode, content) for a symlink/executable, or a sub-tree."""


def _git_in(repo: Path, *args: str, stdin: bytes) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, check=True)
    return proc.stdout.decode().strip()


def mktree(repo: Path, tree: Tree) -> str:
    """Write ``tree`` into the object database as is (no name checks) and return its id."""
    lines = []
    for name, value in tree.items():
        if isinstance(value, Mapping):
            lines.append(f"040000 tree {mktree(repo, value)}\t{name}\n")
            continue
        mode, content = value if isinstance(value, tuple) else ("100644", value)
        sha = _git_in(repo, "hash-object", "-w", "--stdin", stdin=content)
        lines.append(f"{mode} blob {sha}\t{name}\n")
    return _git_in(repo, "mktree", stdin="".join(lines).encode())


def commit_tree(repo: Path, tree: Tree, message: str = "crafted") -> str:
    """A commit of ``tree`` on top of HEAD (if any); returns its id."""
    parent = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    args = ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit-tree", mktree(repo, tree)]
    if parent:
        args += ["-p", parent]
    return _git_in(repo, *args, "-m", message, stdin=b"")


def link(target: str) -> tuple[str, bytes]:
    return ("120000", target.encode())


LEAK = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\ndata:\n  content: LOCAL-FILE-7f3a\n"
)
WORKTREE_CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\ndata:\n  content: here\n"


@pytest.fixture
def scratch_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TMPDIR of the command under test: where `helmsim diff` makes its scratch directory."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setenv("TMPDIR", str(root))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    return root


def worktree_chart(repo: Path) -> None:
    (repo / "chart/templates").mkdir(parents=True, exist_ok=True)
    (repo / "chart/Chart.yaml").write_text(CHART_YAML)
    (repo / "chart/templates/a.yaml").write_text(WORKTREE_CM)


def everything_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# --- paths git would not check out ------------------------------------------------------------


@pytest.mark.parametrize(
    ("tree", "shown"),
    [
        ({"chart": {"Chart.yaml": CHART_YAML.encode(), "..": {"..": {"..": {"x": b"pwned\n"}}}}},
         "'chart/../../../x'"),
        ({"chart": {"Chart.yaml": CHART_YAML.encode(), ".": {"x": b"pwned\n"}}}, "'chart/./x'"),
        ({"chart": {"Chart.yaml": CHART_YAML.encode(), ".git": {"config": b"[core]\n"}}},
         "'.git' component"),
        ({"chart": {"Chart.yaml": CHART_YAML.encode(), ".GIT ": {"hooks": {"x": b"#!/bin/sh\n"}}}},
         "'.GIT ' component"),
        ({"chart": {"Chart.yaml": CHART_YAML.encode(), "git~1": {"x": b"1\n"}}}, "'git~1' component"),
        ({"chart": {"Chart.yaml": CHART_YAML.encode(), ".g\u200cit": {"x": b"1\n"}}}, "component"),
    ],
)
def test_paths_git_refuses_are_bad_input_and_nothing_is_written(
    repo: Path, tmp_path: Path, scratch_root: Path, tree: Tree, shown: str
) -> None:
    sha = commit_tree(repo, tree)
    worktree_chart(repo)
    before = everything_under(tmp_path)
    result = CliRunner().invoke(app, ["diff", str(repo / "chart"), "--against", sha])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and "error: " in result.stderr
    assert shown in result.stderr and "git would refuse to check it out" in result.stderr
    assert everything_under(tmp_path) == before  # no x, no hooks, no leftover scratch
    assert not (tmp_path / "x").exists() and not (scratch_root / "x").exists()


def test_export_refuses_dotdot_before_writing_anything(repo: Path, tmp_path: Path) -> None:
    sha = commit_tree(repo, {"chart": {"a": b"1\n", "..": {"..": {"x": b"pwned\n"}}}})
    r, _ = gitref.find_repo(repo)
    with pytest.raises(InputError, match=r"tree entry 'chart/\.\./\.\./x' with a '\.\.' component"):
        gitref.export_dir(gitref.resolve(r, sha), "chart", tmp_path / "out" / "chart")
    assert not (tmp_path / "x").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("path", "bad"),
    [
        ("chart/values.yaml", False),
        ("chart/.gitignore", False),
        ("chart/.github/x", False),
        ("chart/..x", False),
        ("/etc/passwd", True),
        ("chart//x", True),
        ("chart/./x", True),
        ("chart/../x", True),
        (".git/config", True),
        ("a/.Git/hooks/post-checkout", True),
        ("a/.git./x", True),
        ("a/GIT~1/x", True),
        ("a/.gi\u200dt/x", True),
    ],
)
def test_unsafe_component(path: str, bad: bool) -> None:
    assert (gitref.unsafe_component(path) is not None) is bad


# --- symlinks ---------------------------------------------------------------------------------


def test_a_later_symlink_cannot_redirect_an_earlier_one(
    repo: Path, tmp_path: Path, scratch_root: Path
) -> None:
    """`templates/a.yaml -> zz/zz/zz/zz/../../../../leak.yaml` looks inside the chart while
    `templates/zz` does not exist yet; `templates/zz -> .` (written after it, in path order)
    makes every `zz/..` climb one level, out to $TMPDIR/leak.yaml."""
    (scratch_root / "leak.yaml").write_text(LEAK)
    (tmp_path / "leak.yaml").write_text(LEAK)
    sha = commit_tree(
        repo,
        {
            "chart": {
                "Chart.yaml": CHART_YAML.encode(),
                ".helmignore": b"zz\n",  # Helm's loader does not walk the loop; the kernel does
                "templates": {
                    "a.yaml": link("zz/zz/zz/zz/../../../../leak.yaml"),
                    "zz": link("."),
                },
            }
        },
    )
    worktree_chart(repo)
    for fmt in ("text", "json"):
        result = CliRunner().invoke(
            app, ["diff", str(repo / "chart"), "--against", sha, "--format", fmt]
        )
        assert result.exit_code == 1, result.output
        assert "LOCAL-FILE-7f3a" not in result.output  # the local file is never read
        assert "templates/a.yaml -> zz/zz/zz/zz/../../../../leak.yaml" in result.stdout
        assert "templates/zz -> ." in result.stdout  # a link to a directory is not recreated
    assert "ConfigMap/default/leak (added" in CliRunner().invoke(
        app, ["diff", str(repo / "chart"), "--against", sha]
    ).stdout


def test_export_resolves_links_through_links_as_the_kernel_does(repo: Path, tmp_path: Path) -> None:
    sha = commit_tree(
        repo,
        {
            "chart": {
                "Chart.yaml": b"name: x\n",
                "d": {"e": {"values.yaml": b"a: 1\n"}},
                "a": link("zz/../Chart.yaml"),  # kernel: zz/.. is d, lexically the root
                "b": link("zz/values.yaml"),  # through a link to a directory
                "c": link("d/e/values.yaml"),  # a file: recreated
                "c2": link("c"),  # a link to a link to a file: recreated
                "c3": link("d/../Chart.yaml"),  # `..` through real directories: recreated
                "f": link("d/e/../../../x"),  # one level above the root: skipped
                "loop": link("loop2"),
                "loop2": link("loop"),
                "up": link("../chart/Chart.yaml"),  # leaves the exported directory: skipped
                "abs": link("/etc/passwd"),
                "zz": link("d/e"),
                "gone": link("d/missing.yaml"),
            }
        },
    )
    r, _ = gitref.find_repo(repo)
    out = gitref.export_dir(gitref.resolve(r, sha), "chart", tmp_path / "o" / "chart")
    root = out.path
    assert (root / "c").read_text() == "a: 1\n" and (root / "c2").read_text() == "a: 1\n"
    assert (root / "c3").read_text() == "name: x\n"
    for name in ("a", "b", "f", "loop", "loop2", "up", "abs", "zz", "gone"):
        assert not os.path.lexists(root / name), name
    assert sorted(out.skipped_links) == [
        "a -> zz/../Chart.yaml: goes through a symlink, and links to directories are not recreated",
        "abs -> /etc/passwd: is absolute",
        "b -> zz/values.yaml: goes through a symlink, and links to directories are not recreated",
        "f -> d/e/../../../x: leads outside the directory",
        "gone -> d/missing.yaml: does not lead to a file of the directory",
        "loop -> loop2: loops",
        "loop2 -> loop: loops",
        "up -> ../chart/Chart.yaml: leads outside the directory",
        "zz -> d/e: does not lead to a file of the directory",
    ]
    for p in root.rglob("*"):
        assert os.path.realpath(p).startswith(str(root.resolve()) + os.sep)


@pytest.mark.parametrize("inside", [False, True])
def test_a_symlink_named_like_a_directory_cannot_be_written_through(
    repo: Path, tmp_path: Path, inside: bool
) -> None:
    """A tree holding both a symlink `d` and a directory `d/` (one name twice): files are
    written before any link and never through one; a link that would clash is bad input."""
    outside = tmp_path / "outside"
    outside.mkdir()
    target = "x.yaml" if inside else str(outside)
    blob = _git_in(repo, "hash-object", "-w", "--stdin", stdin=target.encode())
    sub = mktree(repo, {"x.yaml": b"pwned: 1\n"})
    top_file = _git_in(repo, "hash-object", "-w", "--stdin", stdin=b"x: 1\n")
    lines = f"120000 blob {blob}\td\n040000 tree {sub}\td\n100644 blob {top_file}\tx.yaml\n"
    dup = subprocess.run(["git", "mktree"], cwd=repo, input=lines, capture_output=True, text=True)
    if dup.returncode != 0:  # pragma: no cover - depends on the git version's mktree checks
        pytest.skip(f"this git's mktree refuses duplicate names: {dup.stderr.strip()}")
    top = _git_in(repo, "mktree", stdin=f"040000 tree {dup.stdout.strip()}\tchart\n".encode())
    crafted = _git_in(
        repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit-tree", top, "-m", "dup", stdin=b""
    )
    r, _ = gitref.find_repo(repo)
    dest = tmp_path / "o" / "chart"
    if inside:
        with pytest.raises(InputError, match="its tree is malformed"):
            gitref.export_dir(gitref.resolve(r, crafted), "chart", dest)
    else:
        out = gitref.export_dir(gitref.resolve(r, crafted), "chart", dest)
        assert out.skipped_links == (f"d -> {outside}: is absolute",)
    assert (dest / "d").is_dir() and not (dest / "d").is_symlink()
    assert list(outside.iterdir()) == []  # nothing written through the link


def test_exported_files_have_safe_modes(repo: Path, tmp_path: Path) -> None:
    sha = commit_tree(
        repo,
        {
            "chart": {
                "Chart.yaml": b"name: x\n",
                "run.sh": ("100755", b"#!/bin/sh\n"),
                "odd": ("100664", b"group-writable in old git\n"),
                "sub": {"f": b"1\n"},
            }
        },
    )
    r, _ = gitref.find_repo(repo)
    old = os.umask(0o022)
    try:
        root = gitref.export_dir(gitref.resolve(r, sha), "chart", tmp_path / "o" / "chart").path
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.lstat().st_mode) for p in root.rglob("*")}
    assert modes == {"Chart.yaml": 0o644, "run.sh": 0o755, "odd": 0o644, "sub": 0o755, "f": 0o644}


def test_the_ref_values_files_are_written_inside_the_scratch_directory(
    repo: Path, tmp_path: Path, scratch_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A values file at the ref named through a crafted `ci/..` entry is refused, not written."""
    sha = commit_tree(
        repo,
        {
            "chart": {
                "Chart.yaml": CHART_YAML.encode(),
                "templates": {"a.yaml": WORKTREE_CM.encode()},
                "ci": {"..": {"..": {"..": {"x-values.yaml": b"a: 1\n"}}}},
            }
        },
    )
    worktree_chart(repo)
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(app, ["diff", "chart", "--against", sha, "--values-matrix", "ci/**"])
    assert result.exit_code == 2 and "'..' component" in result.stderr
    assert not (tmp_path / "x-values.yaml").exists()
    assert list(scratch_root.iterdir()) == []
