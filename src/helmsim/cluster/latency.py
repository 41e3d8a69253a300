"""Latencies of a cluster profile: a fixed duration or a distribution to sample from.

A latency is written in YAML as

* a number of seconds (``2``, ``0.5``) or a Go-style duration string (``"500ms"``, ``"1m30s"``);
* ``{dist: constant, value: 2}``;
* ``{dist: uniform, min: 0.1, max: 2}``;
* ``{dist: lognormal, median: 3, sigma: 0.5}`` (``mu = ln(median)``; the median is easier to
  read off a measurement than ``mu``);
* ``{dist: empirical, samples: [1.2, 0.8, 3.1]}`` (each sample equally likely).

Every distribution may carry ``nominal:``, the value deterministic runs use; without it the
nominal is the central value: the uniform midpoint, the lognormal median, the empirical median.
Durations inside distributions accept the same number-or-string forms.
"""

from __future__ import annotations

import math
from abc import abstractmethod
import random
import re
import statistics
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

# Go's time.ParseDuration units (go/src/time/format.go: unitMap), in seconds.
_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # U+00B5 micro sign
    "μs": 1e-6,  # U+03BC Greek mu
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Parse a Go duration string (``"1m30s"``, ``"500ms"``) into seconds; negatives are refused.

    Mirrors go/src/time/format.go ParseDuration: a sequence of decimal numbers each with a unit,
    ``"0"`` alone is allowed, any other number needs a unit.
    """
    s = text.strip()
    if s in ("0", "+0", "-0"):
        return 0.0
    if s.startswith("-"):
        raise ValueError(f"duration {text!r} is negative; latencies must be >= 0")
    body = s[1:] if s.startswith("+") else s
    if not body:
        raise ValueError(f"invalid duration {text!r}")
    total = 0.0
    pos = 0
    while pos < len(body):
        m = _PART.match(body, pos)
        if m is None or m.group(1) in ("", "."):
            if re.fullmatch(r"[0-9.]+", body[pos:]):
                raise ValueError(f"missing unit in duration {text!r} (e.g. {body[pos:]}s)")
            raise ValueError(
                f"invalid duration {text!r}: use a number of seconds "
                "or Go syntax like 500ms, 2s, 1m30s"
            )
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return total


def to_seconds(value: Any) -> float:
    """A number of seconds or a Go duration string → seconds (finite, >= 0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(
            "expected a number of seconds or a duration string such as 500ms, 2s or 1m30s"
        )
    seconds = parse_duration(value) if isinstance(value, str) else float(value)
    if math.isnan(seconds) or math.isinf(seconds):
        raise ValueError("a latency must be a finite number of seconds")
    if seconds < 0:
        raise ValueError(f"{value} is negative; latencies must be >= 0")
    return seconds


Seconds = Annotated[float, BeforeValidator(to_seconds)]
"""A duration in seconds, written as a number or a Go duration string; never negative."""


class _Dist(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    nominal_override: Seconds | None = Field(default=None, alias="nominal")

    def nominal(self) -> float:
        """The value deterministic runs use."""
        if self.nominal_override is not None:
            return self.nominal_override
        return self._central()

    @abstractmethod
    def _central(self) -> float:
        """The distribution's central value (each distribution defines it)."""

    @abstractmethod
    def sample(self, rng: random.Random) -> float:
        """Draw one value with ``rng`` (seeded by the caller for reproducible runs)."""

    @model_serializer(mode="wrap")
    def _dist_first(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        out = {"dist": data.pop("dist")}
        nominal = data.pop("nominal", data.pop("nominal_override", None))
        out.update(data)
        if nominal is not None:
            out["nominal"] = nominal
        return out

    def _check_nominal_within(self, low: float, high: float) -> None:
        n = self.nominal_override
        if n is not None and not low <= n <= high:
            raise ValueError(
                f"nominal {n:g} is outside the distribution's range [{low:g}, {high:g}]"
            )


class Constant(_Dist):
    """Always the same value: ``{dist: constant, value: 2}`` or just ``2`` / ``"2s"``."""

    dist: Literal["constant"] = "constant"
    value: Seconds

    @model_validator(mode="after")
    def _check(self) -> Constant:
        if self.nominal_override is not None and self.nominal_override != self.value:
            raise ValueError("a constant latency cannot have a different nominal value")
        return self

    def _central(self) -> float:
        return self.value

    def sample(self, rng: random.Random) -> float:  # noqa: ARG002 - same signature as others
        return self.value

    @model_serializer
    def _as_number(self) -> float:
        return self.value


class Uniform(_Dist):
    """Uniform on ``[min, max]``; nominal: the midpoint."""

    dist: Literal["uniform"]
    min: Seconds
    max: Seconds

    @model_validator(mode="after")
    def _check(self) -> Uniform:
        if self.min > self.max:
            raise ValueError(f"min ({self.min:g}) is greater than max ({self.max:g})")
        self._check_nominal_within(self.min, self.max)
        return self

    def _central(self) -> float:
        return (self.min + self.max) / 2

    def sample(self, rng: random.Random) -> float:
        return rng.uniform(self.min, self.max)


class LogNormal(_Dist):
    """Log-normal with the given median (``mu = ln(median)``) and ``sigma``; nominal: the median."""

    dist: Literal["lognormal"]
    median: Seconds
    sigma: float = Field(ge=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _check(self) -> LogNormal:
        if self.median <= 0:
            raise ValueError("median must be > 0 for a lognormal latency")
        return self

    def _central(self) -> float:
        return self.median

    def sample(self, rng: random.Random) -> float:
        return rng.lognormvariate(math.log(self.median), self.sigma)


class Empirical(_Dist):
    """One of the measured ``samples``, each equally likely; nominal: their median."""

    dist: Literal["empirical"]
    samples: list[Seconds]

    @model_validator(mode="after")
    def _check(self) -> Empirical:
        if not self.samples:
            raise ValueError("samples must not be empty")
        self._check_nominal_within(min(self.samples), max(self.samples))
        return self

    def _central(self) -> float:
        return float(statistics.median(self.samples))

    def sample(self, rng: random.Random) -> float:
        return rng.choice(self.samples)


_DISTS = ("constant", "uniform", "lognormal", "empirical")


def _coerce(value: Any) -> Any:
    """A bare number or duration string is a constant; a mapping must name its ``dist``."""
    if isinstance(value, (Constant, Uniform, LogNormal, Empirical)):
        return value
    if isinstance(value, dict):
        if "dist" not in value:
            raise ValueError(
                "a latency mapping needs 'dist': one of " + ", ".join(_DISTS)
            )
        return value
    return {"dist": "constant", "value": to_seconds(value)}


Latency = Annotated[
    Annotated[Constant | Uniform | LogNormal | Empirical, Field(discriminator="dist")],
    BeforeValidator(_coerce),
]
"""A fixed latency or a distribution; each has ``nominal()`` and ``sample(rng)``."""


def fixed(seconds: float) -> Constant:
    """A constant latency of ``seconds``."""
    return Constant(value=seconds)
