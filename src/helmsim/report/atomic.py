"""Atomic file writes: a reader sees the old file or the whole new one, never a partial one.

Every file a command writes (``--output``, ``profiles import -o``, fleet stats) goes through
:func:`write_atomic`: a temporary file in the same directory, written and fsync'd, renamed over
the target, then the directory fsync'd. A symlink at the target — even a dangling one — is
replaced by the new file, never written through; a failed write (a full disk, a file size
limit, Ctrl-C) removes the temporary file and leaves the previous file as it was. A character
device or FIFO (``-o /dev/null``, ``-o /dev/stdout``, a named pipe) is written to in place.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from helmsim.errors import InputError


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` via a temporary file in the same directory, fsync'd
    and renamed over the target (``os.replace`` is atomic on POSIX and Windows)."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError("the output directory does not exist", file=str(target))
    existing = _lstat(target)
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise InputError("cannot write the report: is a directory", file=str(target))
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        if _is_stream(target):
            _write_stream(target, text)
            return
        if not stat.S_ISLNK(existing.st_mode):
            raise InputError("cannot write the report: not a regular file", file=str(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as err:
        raise InputError(f"cannot write the report: {err.strerror}", file=str(target)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(existing))
        os.replace(tmp, target)  # rename(2) replaces a symlink itself, not what it points to
        _fsync_dir(directory)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(err, OSError):
            raise InputError(f"cannot write the report: {err.strerror or err}", file=str(target)) from None
        raise


def _is_stream(target: Path) -> bool:
    """A character device or a FIFO (``/dev/null``, ``/dev/stdout``, a named pipe), directly
    or through a symlink: written to, never renamed over (that would replace ``/dev/null``
    with a regular file). A block device or a symlink to anything else is not a stream."""
    try:
        mode = target.stat().st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _write_stream(target: Path, text: str) -> None:
    try:
        with open(target, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    except OSError as err:
        raise InputError(f"cannot write the report: {err.strerror or err}", file=str(target)) from None


def _lstat(target: Path) -> os.stat_result | None:
    try:
        return target.lstat()
    except FileNotFoundError:
        return None


def _mode_for(existing: os.stat_result | None) -> int:
    """Keep an existing regular file's mode; a new file (or one replacing a symlink) gets 0666
    minus the umask, like open() would."""
    if existing is not None and stat.S_ISREG(existing.st_mode):
        return existing.st_mode & 0o777
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable (POSIX: the directory entry is in the directory's data)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # not supported here (Windows): the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
