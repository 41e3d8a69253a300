"""Read files as they were at a git ref, without touching the working tree or the index.

Only plumbing that reads the object database is used (``rev-parse``, ``ls-tree``,
``cat-file --batch``): nothing is checked out, stashed or written into the repository. A chart
directory is copied out of a commit into a directory the caller owns (usually a temporary one).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath

from msgspec import Struct

from helmsim.errors import InputError

_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
_SYMLINK_MODE = "120000"


class Repo(Struct, frozen=True):
    """A git work tree, named by its top directory."""

    top: Path


class Commit(Struct, frozen=True):
    """A resolved ref: what the user typed and the commit it names."""

    repo: Repo
    ref: str
    sha: str

    @property
    def short(self) -> str:
        return self.sha[:12]


class TreeEntry(Struct, frozen=True):
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
    """Every blob (and symlink) under ``prefix`` in the commit, repo-relative, sorted.

    A path git would not check out (see :func:`unsafe_component`) is bad input.
    """
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
        why = unsafe_component(path)
        if why is not None:
            raise InputError(
                f"{commit.ref} ({commit.short}) holds the tree entry {path!r} with {why}: git "
                "would refuse to check it out, and helmsim does not export it",
                file=str(commit.repo.top),
            )
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


# --- safe exports --------------------------------------------------------------------------------

# git/git read-cache.c verify_path/verify_dotfile: a checked-out path has no empty, ".", ".."
# or ".git" component (".git" case-insensitively); path.c is_ntfs_dotgit and utf8.c
# is_hfs_dotgit also refuse ".git" spelled with trailing dots/spaces, as "git~1", or with
# code points HFS+ ignores. `git fetch` does not check trees (transfer.fsckObjects is false by
# default), so a commit can hold such entries; they are refused here as git's checkout would.
_HFS_IGNORABLE = dict.fromkeys(
    [*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)
_MAX_LINK_HOPS = 40  # Linux fs/namei.c MAXSYMLINKS: ELOOP after 40 links


def unsafe_component(path: str) -> str | None:
    """Why a tree path would not be checked out by git (``None`` when it is a safe relative
    path): an absolute path, or an empty, ``.``, ``..`` or ``.git`` component."""
    if path.startswith("/"):
        return "an absolute path"
    for part in path.split("/"):
        if part in ("", ".", ".."):
            return f"a {part!r} component" if part else "an empty component"
        folded = part.translate(_HFS_IGNORABLE).rstrip(". ").lower()
        if folded in (".git", "git~1"):
            return f"a {part!r} component"
    return None


class Export(Struct, frozen=True):
    """A directory written by :func:`export_dir` and the symlinks of the ref's tree that were
    not recreated (``path -> target: why``)."""

    path: Path
    skipped_links: tuple[str, ...] = ()


def _link_target(start: list[str], target: str, links: dict[str, str], hops: int = 0) -> list[str] | str:
    """Where ``target``, read in directory ``start`` (components below the export root),
    leads — following the tree's own symlinks as the kernel would — or why it does not lead to a
    path inside the root. Only links to files are ever recreated, so a path that goes *through*
    a symlink (``dirlink/x``, ``dirlink/..``) can never resolve and is refused as well."""
    if target.startswith("/"):
        return "is absolute"
    if hops > _MAX_LINK_HOPS:
        return "loops"
    here = list(start)
    parts = [p for p in target.split("/") if p not in ("", ".")]
    for n, part in enumerate(parts):
        if part == "..":
            if not here:
                return "leads outside the directory"
            here.pop()
            continue
        here.append(part)
        nested = links.get("/".join(here))
        if nested is None:
            continue
        if n < len(parts) - 1:
            return "goes through a symlink, and links to directories are not recreated"
        here.pop()
        return _link_target(here, nested, links, hops + 1)
    return here


def write_new(path: Path, content: bytes, mode: int) -> None:
    """Create ``path`` (never through a symlink, never over an existing entry) with ``mode``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(content)


def _make_dirs(root: Path, parts: tuple[str, ...]) -> Path:
    """``root/parts…`` as real directories (an existing symlink or file on the way is an error)."""
    here = root
    for part in parts:
        here = here / part
        try:
            os.mkdir(here, 0o755)
        except FileExistsError:
            if not here.is_dir() or here.is_symlink():
                raise
    return here


def export_dir(commit: Commit, prefix: str, dest: Path) -> Export:
    """Write the directory ``prefix`` as it was at the commit into ``dest`` (created, empty).

    Nothing is written outside ``dest``: a tree path that git would not check out (``..``,
    absolute, ``.git``) is bad input; regular files are written first, never through a
    symlink, with mode 0644 (0755 when executable at the ref) under the umask; then a symlink
    is recreated only when it leads, through the tree's other symlinks, to a regular file of
    the export — links out of the directory, to directories, dangling or looping are skipped
    and named in :attr:`Export.skipped_links`. Raises InputError when the directory did not
    exist at the commit.
    """
    entries = list_tree(commit, prefix)
    where = prefix or "."
    if not entries:
        raise InputError(
            f"directory {where!r} did not exist at {commit.ref} ({commit.short})",
            file=str(commit.repo.top),
        )
    rels: list[tuple[TreeEntry, PurePosixPath]] = []
    for entry in entries:
        rel = PurePosixPath(entry.path).relative_to(prefix) if prefix else PurePosixPath(entry.path)
        rels.append((entry, rel))
    blobs = read_blobs(commit, [e.sha for e, _ in rels])
    dest.mkdir(parents=True, exist_ok=False)
    files = {rel.as_posix() for e, rel in rels if e.mode != _SYMLINK_MODE}
    links = {
        rel.as_posix(): blobs[e.sha].decode("utf-8", "surrogateescape")
        for e, rel in rels
        if e.mode == _SYMLINK_MODE
    }
    try:
        for entry, rel in rels:
            if entry.mode == _SYMLINK_MODE:
                continue
            parent = _make_dirs(dest, rel.parts[:-1])
            # git/git object.h: a blob is 100644 or 100755; any other mode is written 0644.
            write_new(parent / rel.name, blobs[entry.sha], 0o755 if entry.mode == "100755" else 0o644)
        skipped: list[str] = []
        for rel_text, target in sorted(links.items()):
            rel = PurePosixPath(rel_text)
            lands = _link_target(list(rel.parts[:-1]), target, links)
            if isinstance(lands, str):
                why = lands
            elif "/".join(lands) not in files:
                why = "does not lead to a file of the directory"
            else:
                parent = _make_dirs(dest, rel.parts[:-1])
                os.symlink(target, parent / rel.name)
                continue
            skipped.append(f"{rel_text} -> {target}: {why}")
    except OSError as err:
        raise InputError(
            f"cannot export {where!r} at {commit.ref} ({commit.short}): its tree is malformed "
            f"({err.strerror}: {err.filename})",
            file=str(commit.repo.top),
        ) from None
    return Export(dest, tuple(skipped))
