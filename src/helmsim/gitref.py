"""Read files as they were at a git ref, without touching the working tree or the index.

Only plumbing that reads the object database is used (``rev-parse``, ``ls-tree``,
``cat-file --batch``): nothing is checked out, stashed or written into the repository. A chart
directory is copied out of a commit into a directory the caller owns (usually a temporary one).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from helmsim.errors import InputError

_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
_SYMLINK_MODE = "120000"


@dataclass(frozen=True)
class Repo:
    """A git work tree, named by its top directory."""

    top: Path


@dataclass(frozen=True)
class Commit:
    """A resolved ref: what the user typed and the commit it names."""

    repo: Repo
    ref: str
    sha: str

    @property
    def short(self) -> str:
        return self.sha[:12]


@dataclass(frozen=True)
class TreeEntry:
    """One blob of a commit's tree (``git ls-tree -r``): mode, object id, repo-relative path."""

    mode: str
    sha: str
    path: str


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, **_GIT_ENV}
    try:
        return subprocess.run(
            ["git", "-C", str(repo), *args], input=stdin, capture_output=True, env=env, check=False
        )
    except FileNotFoundError:
        raise InputError("git is not installed (needed to read --against REF)") from None


def _err(proc: subprocess.CompletedProcess[bytes]) -> str:
    text = proc.stderr.decode("utf-8", "replace").strip()
    return text.splitlines()[-1] if text else f"git exited with {proc.returncode}"


def find_repo(path: str | os.PathLike[str]) -> tuple[Repo, str]:
    """The repository holding directory ``path`` and the repo-relative POSIX path of ``path``
    (``""`` for the top)."""
    p = Path(path)
    if not p.is_dir():
        raise InputError("not a directory", file=str(path))
    proc = _git(p, "rev-parse", "--show-toplevel", "--show-prefix")
    if proc.returncode != 0:
        raise InputError(f"not inside a git work tree ({_err(proc)})", file=str(path))
    lines = proc.stdout.decode("utf-8").splitlines()
    top = Path(lines[0])
    prefix = lines[1].rstrip("/") if len(lines) > 1 else ""
    return Repo(top=top), prefix


def repo_relative(repo: Repo, path: str | os.PathLike[str]) -> str | None:
    """``path`` as a repo-relative POSIX path, or None when it lies outside the work tree."""
    try:
        rel = Path(path).resolve().relative_to(repo.top.resolve())
    except ValueError:
        return None
    return rel.as_posix() if str(rel) != "." else ""


def resolve(repo: Repo, ref: str) -> Commit:
    """Resolve ``ref`` to a commit; a clear error when it names none."""
    if not ref.strip():
        raise InputError("--against needs a git ref (branch, tag or commit)")
    proc = _git(
        repo.top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise InputError(f"git ref {ref!r} does not exist in the repository", file=str(repo.top))
    return Commit(repo=repo, ref=ref, sha=proc.stdout.decode().strip())


def list_tree(commit: Commit, prefix: str = "") -> list[TreeEntry]:
    """Every blob (and symlink) under ``prefix`` in the commit, repo-relative, sorted."""
    args = ["ls-tree", "-r", "-z", "--full-tree", commit.sha]
    if prefix:
        args += ["--", prefix]
    proc = _git(commit.repo.top, *args)
    if proc.returncode != 0:
        raise InputError(f"cannot list {commit.ref}: {_err(proc)}", file=str(commit.repo.top))
    out: list[TreeEntry] = []
    for record in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not record:
            continue
        meta, path = record.split("\t", 1)
        mode, kind, sha = meta.split(" ")
        if kind != "blob":
            continue  # submodules (commit entries) have no content here
        if prefix and not (path == prefix or path.startswith(prefix + "/")):
            continue
        out.append(TreeEntry(mode=mode, sha=sha, path=path))
    return sorted(out, key=lambda e: e.path)


def read_blobs(commit: Commit, shas: list[str]) -> dict[str, bytes]:
    """Contents of the given blob ids, read in one ``git cat-file --batch``."""
    if not shas:
        return {}
    proc = _git(
        commit.repo.top, "cat-file", "--batch", stdin="".join(f"{s}\n" for s in shas).encode()
    )
    if proc.returncode != 0:
        raise InputError(f"cannot read {commit.ref}: {_err(proc)}", file=str(commit.repo.top))
    data = proc.stdout
    out: dict[str, bytes] = {}
    pos = 0
    for sha in shas:
        header_end = data.index(b"\n", pos)
        parts = data[pos:header_end].split(b" ")
        if len(parts) != 3:  # "<sha> missing"
            raise InputError(f"object {sha} missing at {commit.ref}", file=str(commit.repo.top))
        size = int(parts[2])
        start = header_end + 1
        out[sha] = data[start : start + size]
        pos = start + size + 1
    return out


def read_file(commit: Commit, path: str) -> bytes | None:
    """One repo-relative file at the commit, or None when it did not exist there."""
    entries = [e for e in list_tree(commit, path) if e.path == path and e.mode != _SYMLINK_MODE]
    if not entries:
        return None
    return read_blobs(commit, [entries[0].sha])[entries[0].sha]


def export_dir(commit: Commit, prefix: str, dest: Path) -> Path:
    """Write the directory ``prefix`` as it was at the commit into ``dest`` (created).

    Raises InputError when the directory did not exist at the commit. Symlinks are recreated
    only when they point inside the exported directory.
    """
    entries = list_tree(commit, prefix)
    where = prefix or "."
    if not entries:
        raise InputError(
            f"directory {where!r} did not exist at {commit.ref} ({commit.short})",
            file=str(commit.repo.top),
        )
    blobs = read_blobs(commit, [e.sha for e in entries])
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    for entry in entries:
        rel = PurePosixPath(entry.path).relative_to(prefix) if prefix else PurePosixPath(entry.path)
        target = dest.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        content = blobs[entry.sha]
        if entry.mode == _SYMLINK_MODE:
            link = content.decode("utf-8", "surrogateescape")
            resolved = (target.parent / link).resolve()
            if not os.path.isabs(link) and (resolved == root or root in resolved.parents):
                target.symlink_to(link)
            continue
        target.write_bytes(content)
        if entry.mode == "100755":
            target.chmod(0o755)
    return dest
