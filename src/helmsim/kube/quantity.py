"""Resource quantities (``100m``, ``1.5Gi``, ``2e3``) as exact decimals.

k8s.io/apimachinery pkg/api/resource/quantity.go: ``<signedNumber><suffix>`` where the suffix is
a binary SI one (Ki Mi Gi Ti Pi Ei), a decimal SI one (n u m "" k M G T P E) or a decimal exponent
(``e3``, ``E-2``). Values are kept exact (``decimal.Decimal``); the scheduler compares CPU in
millicores and everything else in units, rounding up as Quantity.MilliValue/Value do.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
# quantity.go ParseQuantity: a number with at most one dot, then the suffix.
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]?)$")
# quantity.go ErrFormatWrong (the text the API server returns for a bad quantity).
FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
# Bounds on what is accepted, so a hostile exponent cannot make the decimal huge.
_MAX_EXPONENT = 30


def parse_quantity(value: object) -> Decimal:
    """The quantity ``value`` (a string, or an int/float as YAML reads ``cpu: 2``) as a Decimal.

    Raises ``ValueError`` with the API server's text when ``value`` is not a quantity.
    """
    if isinstance(value, bool):
        raise ValueError(FORMAT_ERROR)
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(FORMAT_ERROR)
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise ValueError(FORMAT_ERROR)
    m = _QUANTITY.match(value.strip())
    if m is None:
        raise ValueError(FORMAT_ERROR)
    number, suffix = m.group(1), m.group(2)
    try:
        base = Decimal(number)
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid decimals
        raise ValueError(FORMAT_ERROR) from None
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        exp = int(suffix[1:])
        if abs(exp) > _MAX_EXPONENT:
            raise ValueError(f"quantity exponent {exp} is out of range (|exponent| <= {_MAX_EXPONENT})")
        return base.scaleb(exp)
    return base * _DECIMAL[suffix]


def milli_value(q: Decimal) -> int:
    """Quantity.MilliValue: the value in thousandths, rounded up (``100m`` → 100, ``0.5`` → 500)."""
    return math.ceil(q * 1000)


def value(q: Decimal) -> int:
    """Quantity.Value: the value rounded up to an integer (``1.5Gi`` bytes, ``1k`` → 1000)."""
    return math.ceil(q)


def scheduler_amount(resource: str, q: Decimal) -> int:
    """What kube-scheduler compares for ``resource``: millicores for ``cpu``, else units.

    kubernetes pkg/scheduler/framework/types.go Resource.Add: MilliCPU from MilliValue, memory,
    ephemeral-storage, pods and scalar resources from Value.
    """
    return milli_value(q) if resource == "cpu" else value(q)


def format_amount(resource: str, amount: int) -> str:
    """An amount from :func:`scheduler_amount` as a short quantity (``250m``, ``2``, ``512Mi``)."""
    if resource == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if amount and amount % unit == 0:
            return f"{amount // unit}{suffix}"
    return str(amount)


def is_binary(text: object) -> bool:
    """Whether a quantity is written with a binary suffix (``512Mi``): Go keeps its BinarySI format."""
    return isinstance(text, str) and text.strip()[-2:] in _BINARY


def canonical(q: Decimal, binary: bool = False) -> str:
    """Quantity.String of ``q``: the largest suffix that leaves an integer (quantity.go
    CanonicalizeBytes), binary (``1536Mi``) for a BinarySI quantity that is a whole number of
    KiB, else decimal with exponents in thousands (``1500m``, ``2``, ``2k``)."""
    if q == 0:
        return "0"
    if binary and q == q.to_integral_value() and abs(q) >= 1024:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = _BINARY[suffix]
            if q % unit == 0:
                return f"{int(q // unit)}{suffix}"
    for suffix in ("E", "P", "T", "G", "M", "k", "", "m", "u", "n"):
        scaled = q / _DECIMAL[suffix]
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    return f"{math.ceil(q / _DECIMAL['n'])}n"  # quantity.go rounds below a nanounit up
