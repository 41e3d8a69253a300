"""Budgets: how much work one helmsim command may do, each with a default, a flag and a variable.

Every reader and the simulator consult :func:`current`. A limit that is hit is bad input (exit 2)
reported on one line that names the limit and the flag raising it, e.g.
``error: deploy.yaml:3: Deployment/default/web: 1,000,000 replicas exceeds --max-pods 20,000``.
Each limit is also read from an environment variable (``HELMSIM_MAX_PODS=50000``), so worker
processes see what the command line set; ``0`` switches a limit off. docs/security.md lists them.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from helmsim.errors import InputError

Unit = Literal["count", "bytes", "seconds"]

_MiB = 1024 * 1024


def _limit(default: float, flag: str, unit: Unit, help: str) -> Any:
    return field(default=default, metadata={"flag": flag, "unit": unit, "help": help})


@dataclass(frozen=True)
class Limits:
    """The budgets of one command. Defaults sit well above what real platforms ship (the
    measurements behind each are in docs/security.md)."""

    max_objects: int = _limit(
        10_000, "--max-objects", "count", "Kubernetes objects in one file or one release."
    )
    max_pods: int = _limit(
        20_000, "--max-pods", "count", "Pods a simulation may create (replicas of all workloads)."
    )
    max_file_size: int = _limit(
        32 * _MiB, "--max-file-size", "bytes", "Size of one input file or rendered release manifest."
    )
    max_document_size: int = _limit(
        8 * _MiB, "--max-document-size", "bytes", "Size of one YAML document."
    )
    max_depth: int = _limit(
        128, "--max-depth", "count", "Nesting depth of mappings and lists in one YAML document."
    )
    max_aliases: int = _limit(
        100_000, "--max-aliases", "count", "Nodes one YAML document may expand to through aliases."
    )
    max_events: int = _limit(
        500_000, "--max-events", "count", "Events one simulation run may process."
    )
    max_render_memory: int = _limit(
        1024 * _MiB, "--max-render-memory", "bytes", "Memory Helm's template engine may use for one render."
    )
    render_timeout: float = _limit(
        60.0, "--render-timeout", "seconds", "Time Helm's template engine may take for one render."
    )


FIELDS: tuple[dataclasses.Field[Any], ...] = dataclasses.fields(Limits)
"""Every limit, in documentation order; ``metadata`` holds ``flag``, ``unit`` and ``help``."""


def env_var(f: dataclasses.Field[Any]) -> str:
    """``HELMSIM_MAX_PODS`` for ``--max-pods``."""
    return "HELMSIM_" + f.metadata["flag"].removeprefix("--").replace("-", "_").upper()


class LimitExceeded(InputError):
    """A budget was exhausted: bad input (exit 2) naming the limit and its flag."""


# --- reading and writing values ------------------------------------------------------------------

_SIZE = re.compile(r"^([0-9][0-9_,]*(?:\.[0-9]+)?)\s*([KMGT]?i?)B?$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4,
               "ki": 1024, "mi": 1024**2, "gi": 1024**3, "ti": 1024**4}


def parse_value(f: dataclasses.Field[Any], text: str) -> float:
    """A flag's or variable's text as the limit's value: counts (``20000``, ``20,000``), sizes
    (``64Mi``, ``2GiB``, ``500M``, bytes) or durations (``90s``, ``2m``, seconds)."""
    raw = text.strip()
    unit: Unit = f.metadata["unit"]
    value: float
    if unit == "seconds":
        from helmsim.cluster.latency import to_seconds

        try:
            value = to_seconds(float(raw) if re.fullmatch(r"[0-9]+(?:\.[0-9]*)?", raw) else raw)
        except ValueError as err:
            raise InputError(f"{f.metadata['flag']} {text!r}: {err}") from None
        return value
    m = _SIZE.match(raw) if unit == "bytes" else re.match(r"^([0-9][0-9_,]*)$", raw)
    if m is None:
        example = "64Mi, 2Gi or a number of bytes" if unit == "bytes" else "a whole number such as 20000"
        raise InputError(f"{f.metadata['flag']} {text!r}: expected {example} (0: no limit)")
    number = float(m.group(1).replace(",", "").replace("_", ""))
    if unit == "bytes":
        number *= _SIZE_UNITS[m.group(2).lower()]
    if not math.isfinite(number) or number > 2**62:
        raise InputError(f"{f.metadata['flag']} {text!r}: too large")
    return int(number)


def from_env(environ: Any = None) -> Limits:
    """The defaults, overridden by ``HELMSIM_MAX_*`` variables."""
    env = os.environ if environ is None else environ
    changes: dict[str, Any] = {}
    for f in FIELDS:
        text = env.get(env_var(f))
        if text is not None and text.strip():
            try:
                changes[f.name] = parse_value(f, text)
            except InputError as err:
                raise InputError(f"{env_var(f)}: {err.message}") from None
    return Limits(**changes)


_active: Limits | None = None
_from_environment: Limits | None = None


def current() -> Limits:
    """The limits in effect: those of the running command, else the defaults overridden by the
    environment (read once per process; :func:`refresh` reads it again)."""
    global _from_environment
    if _active is not None:
        return _active
    if _from_environment is None:
        _from_environment = from_env()
    return _from_environment


def refresh() -> None:
    """Forget the limits read from the environment (after changing ``HELMSIM_MAX_*``)."""
    global _from_environment
    _from_environment = None


@contextmanager
def use(limits: Limits) -> Iterator[Limits]:
    """Run with ``limits`` in effect, exported to the environment for child processes."""
    global _active
    previous, saved = _active, {env_var(f): os.environ.get(env_var(f)) for f in FIELDS}
    _active = limits
    for f in FIELDS:
        value = getattr(limits, f.name)
        if value != f.default:
            os.environ[env_var(f)] = str(value)
    try:
        yield limits
    finally:
        _active = previous
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


# --- messages ------------------------------------------------------------------------------------


def _field(name: str) -> dataclasses.Field[Any]:
    return next(f for f in FIELDS if f.name == name)


def show(name: str, value: float) -> str:
    """A value of limit ``name`` as people read it: ``20,000``, ``32 MiB``, ``2m0s``."""
    unit = _field(name).metadata["unit"]
    if unit == "bytes":
        return size_text(int(value))
    if unit == "seconds":
        return f"{value:g}s"
    return f"{int(value):,}"


def size_text(n: int) -> str:
    """``52,428,800`` bytes → ``50 MiB``; small sizes in bytes."""
    for unit, scale in (("GiB", 1024**3), ("MiB", _MiB), ("KiB", 1024)):
        if n >= scale:
            amount = n / scale
            return f"{amount:.1f} {unit}".replace(".0 ", " ")
    return f"{n:,} bytes"


def amount_text(name: str, value: float, noun: str) -> str:
    """``1,000,000 replicas``, ``a 50 MiB manifest``: an amount of limit ``name``'s unit."""
    if _field(name).metadata["unit"] == "bytes":
        limit = getattr(current(), name)
        if size_text(int(value)) == size_text(int(limit)):  # 32 MiB and one byte
            return f"a {noun} of more than {size_text(int(limit))}"
        return f"a {size_text(int(value))} {noun}"
    return f"{show(name, value)} {noun}"


def exceeded(name: str, amount: str, **where: Any) -> LimitExceeded:
    """``<amount> exceeds --flag <limit>`` as a :class:`LimitExceeded` (``where``: file, line)."""
    f = _field(name)
    limit = getattr(current(), name)
    return LimitExceeded(f"{amount} exceeds {f.metadata['flag']} {show(name, limit)}", **where)


def check(name: str, value: float, noun: str, *, subject: str = "", **where: Any) -> None:
    """Refuse ``value`` (``noun``: what it counts) when it is over limit ``name`` (0: no limit);
    ``subject`` prefixes the message (``Deployment/default/web: 1,000,000 replicas exceeds …``)."""
    limit = getattr(current(), name)
    if limit and value > limit:
        amount = amount_text(name, value, noun)
        raise exceeded(name, f"{subject}: {amount}" if subject else amount, **where)


__all__ = [
    "FIELDS",
    "LimitExceeded",
    "Limits",
    "amount_text",
    "check",
    "current",
    "env_var",
    "exceeded",
    "from_env",
    "parse_value",
    "refresh",
    "show",
    "size_text",
    "use",
]
