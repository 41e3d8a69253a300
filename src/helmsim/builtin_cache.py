"""Built-in data validated once, kept beside the bytecode (``helmsim/__pycache__``).

The built-in behaviour catalog and profiles are YAML that every simulation validates with
pydantic; building the validators and validating the entries costs more than simulating a small
release (issue 15). :func:`load` keeps the validated value as a pickle named by a digest of
everything it can depend on: the data files' bytes, the size and modification time of every
module of helmsim, and the versions of Python, pydantic and msgspec. A change to any of them
names another file, so a stale value is never read. A file that cannot be read back (corrupt, truncated, of another shape) is built
again. Files are written as Python writes bytecode: atomically, not under
``PYTHONDONTWRITEBYTECODE``, and not at all where the package directory is read-only (the value
is then built each run). ``python -m helmsim.builtin_cache`` (run by ``make install``) writes
them regardless, as ``compileall`` does for bytecode.

The cache lives in helmsim's own package directory: whoever can write it can already change
helmsim's code, so reading a pickle from it trusts no one new (docs/security.md).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import secrets
import sys
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_DIR = Path(__file__).resolve().parent / "__pycache__"
_FORMAT = b"helmsim-builtin-cache/1"


@lru_cache(maxsize=1)
def code_stamp() -> bytes:
    """Path, size and modification time of every module of helmsim (as bytecode is checked):
    any edit of the code that builds or defines a cached value changes it."""
    root = _DIR.parent
    stamps: list[str] = []
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(base, name))
                stamps.append(f"{os.path.relpath(os.path.join(base, name), root)}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(stamps).encode()


def digest(inputs: Iterable[bytes]) -> str:
    """The key of a value built from ``inputs``, helmsim's code and the libraries' versions."""
    import msgspec
    import pydantic

    h = hashlib.sha256(_FORMAT)
    versions = (sys.version.encode(), pydantic.VERSION.encode(), msgspec.__version__.encode())
    for part in (*versions, code_stamp(), *inputs):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:32]


def load(
    name: str,
    inputs: Iterable[bytes],
    build: Callable[[], T],
    valid: Callable[[object], bool],
    *,
    write: bool | None = None,
    directory: Path | None = None,
) -> T:
    """The value ``build()`` returns, read from the cache when ``inputs`` are unchanged.

    ``valid`` checks what was read (its type); ``write`` forces (True) or forbids (False)
    writing, by default written unless ``sys.dont_write_bytecode``.
    """
    where = directory or _DIR
    path = where / f"{name}.{digest(inputs)}.pickle"
    try:
        with path.open("rb") as fh:
            value = pickle.load(fh)
        if valid(value):
            return value  # type: ignore[no-any-return]
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - a damaged or foreign file is rebuilt, never trusted
        pass
    value = build()
    if write if write is not None else not sys.dont_write_bytecode:
        _store(path, value)
    return value


def _store(path: Path, value: object) -> None:
    """Write ``value`` to ``path`` atomically and drop the same name's older files; any OS error
    (a read-only site-packages) leaves the cache unwritten."""
    try:
        path.parent.mkdir(exist_ok=True)
        tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
        # O_EXCL: never through a planted file; 0o666 less the umask, as bytecode is written
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        stem = path.name.split(".", 1)[0]
        for old in path.parent.glob(f"{stem}.*.pickle"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass


def main() -> None:
    """Write every built-in cache (``make install``), whatever ``PYTHONDONTWRITEBYTECODE`` says."""
    from helmsim.cluster.catalog import cached_builtin_catalog
    from helmsim.cluster.profile import builtin_names, cached_builtin_profile

    cached_builtin_catalog(write=True)
    for name in builtin_names():
        cached_builtin_profile(name, write=True)


if __name__ == "__main__":
    main()
