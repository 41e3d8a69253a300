"""Atomic file writes: a reader sees the old file or the whole new one, never a partial one."""

from __future__ import annotations

import os
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
    if target.is_dir():
        raise InputError("cannot write the report: is a directory", file=str(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as err:
        raise InputError(f"cannot write the report: {err.strerror}", file=str(target)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(err, OSError):
            raise InputError(f"cannot write the report: {err.strerror or err}", file=str(target)) from None
        raise


def _mode_for(target: Path) -> int:
    """Keep an existing file's mode; a new file gets 0666 minus the umask, like open() would."""
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask
