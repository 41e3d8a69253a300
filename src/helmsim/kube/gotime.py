"""Go's ``time.Duration`` printed as Go prints it (``%v``, ``String()``), written once.

golang/go src/time/time.go ``Duration.String``/``format``: under a second in the largest of
ns, µs or ms with the fraction trimmed (``500ms``, ``1.5µs``); from a second on as
``[<h>h][<m>m]<s>[.<frac>]s`` where minutes are printed once hours are (``1h0m0s``), the
fraction of the seconds with up to 9 digits, trailing zeros trimmed (``1m30.5s``).
"""

from __future__ import annotations

_SECOND = 1_000_000_000


def go_duration(seconds: float, *, truncate: float | None = None) -> str:
    """``seconds`` as Go's ``time.Duration(seconds·1e9).String()``; ``truncate`` first rounds
    toward zero to a multiple of it (Go's ``Duration.Truncate``, e.g. ``0.001`` for the
    kubelet's millisecond-truncated image pull times)."""
    ns = round(seconds * _SECOND)
    if truncate:
        step = round(truncate * _SECOND)
        if step > 0:
            ns -= ns % step if ns >= 0 else -((-ns) % step)
    return go_duration_ns(ns)


def go_duration_ns(ns: int) -> str:
    """A ``time.Duration`` of ``ns`` nanoseconds as Go's ``String()`` prints it."""
    neg, u = ns < 0, abs(ns)
    if u < _SECOND:
        if u == 0:
            return "0s"
        if u < 1_000:
            text = f"{u}ns"
        elif u < 1_000_000:
            text = _fixed(u, 3) + "µs"
        else:
            text = _fixed(u, 6) + "ms"
    else:
        whole, frac = divmod(u, _SECOND)
        h, rem = divmod(whole, 3600)
        m, s = divmod(rem, 60)
        text = (f"{h}h" if h else "") + (f"{m}m" if h or m else "") + str(s) + _fraction(frac, 9) + "s"
    return "-" + text if neg else text


def _fixed(u: int, prec: int) -> str:
    whole, frac = divmod(u, 10**prec)
    return str(whole) + _fraction(frac, prec)


def _fraction(frac: int, prec: int) -> str:
    # time.go fmtFrac: the digits of the fraction, trailing zeros (and then the point) omitted
    return "." + f"{frac:0{prec}d}".rstrip("0") if frac else ""
