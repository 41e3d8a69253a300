"""Semantic versions and ranges exactly as Helm and Flux read them: Masterminds/semver v3.

Helm checks dependency versions and Flux's source-controller picks chart versions with
``github.com/Masterminds/semver/v3`` (helm/helm and fluxcd/source-controller go.mod: v3.5.0). Its
range grammar differs from npm's (``,`` is AND, ``!=`` exists, a prerelease in one comparator lets
the whole AND group match prereleases of any version), so no Python library matches it; this is a
port of its ``version.go`` and ``constraints.go``, checked against its own test tables
(tests/conformance/data/semver/).
"""

from __future__ import annotations

import re
from functools import total_ordering

from msgspec import Struct

_NUM = "0123456789"
_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-" + _NUM)

# version.go looseSemVerRegex (NewVersion with CoerceNewVersion = true, the default)
_LOOSE = re.compile(
    r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?"
    r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$"
)
_MAX_UINT64 = 2**64 - 1


class SemverError(ValueError):
    """A version or a constraint Masterminds/semver refuses (its error text)."""


@total_ordering
class Version(Struct, frozen=True):
    """A parsed version; ordering is semver precedence (build metadata ignored)."""

    major: int
    minor: int
    patch: int
    prerelease: str = ""
    metadata: str = ""
    original: str = ""

    def compare(self, other: Version) -> int:
        """version.go Compare: -1, 0 or 1."""
        for a, b in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if a != b:
                return -1 if a < b else 1
        if not self.prerelease and not other.prerelease:
            return 0
        if not self.prerelease:
            return 1
        if not other.prerelease:
            return -1
        return _compare_prerelease(self.prerelease, other.prerelease)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self.compare(other) == 0

    def __lt__(self, other: Version) -> bool:
        return self.compare(other) < 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.prerelease))

    def __str__(self) -> str:
        out = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            out += f"-{self.prerelease}"
        if self.metadata:
            out += f"+{self.metadata}"
        return out


def parse_version(text: str) -> Version:
    """version.go NewVersion (coercing): ``1``, ``v1.2``, ``01.1.1`` and ``1.2.3-rc.1+b`` parse."""
    m = _LOOSE.match(text)
    if m is None or text.endswith("\n"):
        raise SemverError("invalid semantic version")
    parts = [int(m.group(1)), int((m.group(2) or ".0")[1:]), int((m.group(3) or ".0")[1:])]
    if any(p > _MAX_UINT64 for p in parts):
        raise SemverError("error parsing version segment: value out of range")
    pre, meta = m.group(5) or "", m.group(8) or ""
    if pre:
        _validate_prerelease(pre)
    if meta:
        _validate_metadata(meta)
    return Version(parts[0], parts[1], parts[2], pre, meta, text)


def parse_flux_version(text: str) -> Version:
    """fluxcd/pkg version/version.go ParseVersion: NewVersion, but only with three dot parts
    (source-controller skips index and tag versions that are not)."""
    if len(text.split(".", 2)) != 3:
        raise SemverError("invalid semantic version")
    return parse_version(text)


def _validate_prerelease(pre: str) -> None:
    for part in pre.split("."):
        if not part:
            raise SemverError("invalid prerelease string")
        if all(c in _NUM for c in part):
            if len(part) > 1 and part[0] == "0":
                raise SemverError("version segment starts with 0")
        elif not all(c in _ALLOWED for c in part):
            raise SemverError("invalid prerelease string")


def _validate_metadata(meta: str) -> None:
    for part in meta.split("."):
        if not part or not all(c in _ALLOWED for c in part):
            raise SemverError("invalid metadata string")


def _compare_prerelease(a: str, b: str) -> int:
    sa, sb = a.split("."), b.split(".")
    for i in range(max(len(sa), len(sb))):
        d = _compare_pre_part(sa[i] if i < len(sa) else "", sb[i] if i < len(sb) else "")
        if d:
            return d
    return 0


def _uint(text: str) -> int | None:
    return int(text) if text and all(c in _NUM for c in text) and int(text) <= _MAX_UINT64 else None


def _compare_pre_part(s: str, o: str) -> int:
    """version.go comparePrePart: numbers sort below identifiers, numbers numerically."""
    if s == o:
        return 0
    if s == "":
        return -1 if o != "" else 1
    if o == "":
        return 1
    si, oi = _uint(s), _uint(o)
    if si is None and oi is None:
        return 1 if s > o else -1
    if oi is None:
        return -1
    if si is None:
        return 1
    return 1 if si > oi else -1


# --- constraints ---------------------------------------------------------------------------------

_CV = (
    r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?"
    r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
)
_OPS = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^"
_CONSTRAINT = re.compile(rf"^\s*({_OPS})\s*({_CV})\s*$")
_RANGE = re.compile(rf"\s*({_CV})\s+-\s+({_CV})\s*")
_FIND = re.compile(rf"({_OPS})\s*({_CV})")
_VALID = re.compile(rf"^(\s*({_OPS})\s*({_CV})\s*)((?:\s+|,\s*)({_OPS})\s*({_CV})\s*)*$")


class _Comparator(Struct, frozen=True):
    op: str
    con: Version
    orig: str
    dirty: bool
    minor_dirty: bool
    patch_dirty: bool

    def check(self, v: Version, include_pre: bool) -> bool:
        # every constraint function: a prerelease only matches when the AND group allows them
        if v.prerelease and not include_pre:
            return False
        return _OPERATORS[self.op](v, self)


def _is_x(part: str) -> bool:
    return part in ("x", "*", "X")


def _parse_comparator(text: str) -> _Comparator:
    """constraints.go parseConstraint."""
    if not text:
        return _Comparator("", Version(0, 0, 0), "", True, False, False)
    m = _CONSTRAINT.match(text)
    if m is None:
        raise SemverError(f"improper constraint: {_go_quote(text)}")
    op, ver = m.group(1), m.group(2)
    major, minor, patch, pre = m.group(3), m.group(4) or "", m.group(5) or "", m.group(6) or ""
    dirty = minor_dirty = patch_dirty = False
    if _is_x(major) or major == "":
        ver, dirty = f"0.0.0{pre}", True
    elif _is_x(minor.removeprefix(".")) or minor == "":
        ver, dirty, minor_dirty = f"{major}.0.0{pre}", True, True
    elif _is_x(patch.removeprefix(".")) or patch == "":
        ver, dirty, patch_dirty = f"{major}{minor}.0{pre}", True, True
    try:
        con = parse_version(ver)
    except SemverError:
        raise SemverError("constraint parser error") from None
    return _Comparator(op, con, m.group(2), dirty, minor_dirty, patch_dirty)


def _not_equal(v: Version, c: _Comparator) -> bool:
    if c.dirty:
        if c.con.major != v.major:
            return True
        if c.con.minor != v.minor and not c.minor_dirty:
            return True
        if c.minor_dirty:
            return False
        if c.con.patch != v.patch and not c.patch_dirty:
            return True
        if c.patch_dirty:
            if v.prerelease or c.con.prerelease:
                return _compare_prerelease(v.prerelease, c.con.prerelease) != 0
            return False
    return v.compare(c.con) != 0


def _greater(v: Version, c: _Comparator) -> bool:
    if not c.dirty:
        return v.compare(c.con) == 1
    if v.major != c.con.major:
        return v.major > c.con.major
    if c.minor_dirty:
        return False
    if c.patch_dirty:
        return v.minor > c.con.minor
    return v.compare(c.con) == 1


def _less_equal(v: Version, c: _Comparator) -> bool:
    if not c.dirty:
        return v.compare(c.con) <= 0
    if v.major > c.con.major:
        return False
    return not (v.major == c.con.major and v.minor > c.con.minor and not c.minor_dirty)


def _tilde(v: Version, c: _Comparator) -> bool:
    if v.compare(c.con) < 0:
        return False
    if (c.con.major, c.con.minor, c.con.patch) == (0, 0, 0) and not c.minor_dirty and not c.patch_dirty:
        return True  # ~0.0.0 accepts everything
    if v.major != c.con.major:
        return False
    return v.minor == c.con.minor or c.minor_dirty


def _tilde_or_equal(v: Version, c: _Comparator) -> bool:
    return _tilde(v, c) if c.dirty else v.compare(c.con) == 0


def _caret(v: Version, c: _Comparator) -> bool:
    if v.compare(c.con) < 0:
        return False
    if c.con.major > 0 or c.minor_dirty:
        return v.major == c.con.major
    if v.major > 0:
        return False
    if c.con.minor > 0 or c.patch_dirty:
        return v.minor == c.con.minor
    if v.minor > 0:
        return False
    return c.con.patch == v.patch


_OPERATORS = {
    "": _tilde_or_equal,
    "=": _tilde_or_equal,
    "!=": _not_equal,
    ">": _greater,
    "<": lambda v, c: v.compare(c.con) < 0,
    ">=": lambda v, c: v.compare(c.con) >= 0,
    "=>": lambda v, c: v.compare(c.con) >= 0,
    "<=": _less_equal,
    "=<": _less_equal,
    "~": _tilde,
    "~>": _tilde,
    "^": _caret,
}


class Constraints(Struct, frozen=True):
    """A parsed range: OR groups of AND-ed comparators (constraints.go Constraints)."""

    text: str
    groups: tuple[tuple[_Comparator, ...], ...]
    group_has_pre: tuple[bool, ...]

    def check(self, v: Version) -> bool:
        """constraints.go Check."""
        return any(
            all(c.check(v, has_pre) for c in group) for group, has_pre in zip(self.groups, self.group_has_pre, strict=False)
        )


def parse_constraint(text: str) -> Constraints:
    """constraints.go NewConstraint: ``1.2 - 1.4``, ``>=1, <2 || ^3``, ``~1.2.x``, ``*``."""
    rewritten = _RANGE.sub(lambda m: f">= {m.group(1)}, <= {m.group(11)} ", text)
    groups: list[tuple[_Comparator, ...]] = []
    has_pre: list[bool] = []
    for part in rewritten.split("||"):
        if not _VALID.match(part):
            raise SemverError(f"improper constraint: {_go_quote(part)}")
        found = [m.group(0) for m in _FIND.finditer(part)] or [part]
        comps = tuple(_parse_comparator(s) for s in found)
        groups.append(comps)
        has_pre.append(any(c.con.prerelease for c in comps))
    return Constraints(text, tuple(groups), tuple(has_pre))


def _go_quote(text: str) -> str:
    """Go's %q for the printable ASCII texts constraints are made of."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


__all__ = [
    "Constraints",
    "SemverError",
    "Version",
    "parse_constraint",
    "parse_flux_version",
    "parse_version",
]
