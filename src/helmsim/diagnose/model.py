"""What ``helmsim check`` reports: findings, their causal chains and their verified fixes."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from msgspec import Struct, field

from helmsim.cluster.trace import TraceEvent


# Causes before their effects: a denied connection (HS113), an unmet program need (HS116), a
# forbidden call (HS120), a missing reference, a claim never provisioned or an unschedulable
# pod, an image the kubelet cannot get, a volume held on another node (HS114, HS117, HS115, HS126, HS121)
# explains the failing hook (HS104) or Job (HS103) it makes fail, a probe delay no wait can
# outlast (HS122), and a wait that times out rather than failing fast (HS110); HS100 and HS106 explain nothing.
CAUSE_ORDER = (
    "HS113", "HS116", "HS120", "HS114", "HS117", "HS115", "HS126", "HS121", "HS112", "HS101", "HS111", "HS118", "HS105", "HS102",
    "HS107", "HS108", "HS109", "HS122", "HS110", "HS103", "HS104",
)

SAMPLED = "sampled"
"""The ``variant`` of a candidate taken from a replayed sampled run (``helmsim.diagnose.sampling``)."""


class Severity(IntEnum):
    """Ordered so that ``max()`` picks the worst; ``note`` never fails a run."""

    note = 0
    warning = 1
    error = 2

    @classmethod
    def parse(cls, text: str) -> Severity:
        return cls[text.strip().lower()]


class Step(Struct, frozen=True):
    """One link of a causal chain: a trace event (or a derived fact) at a simulated time."""

    time: float
    obj: str
    text: str
    event_id: int | None = None

    def __str__(self) -> str:
        return f"t={_fmt_time(self.time)} {self.obj} {self.text}".replace("  ", " ")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"time": round(self.time, 3), "object": self.obj, "text": self.text}
        if self.event_id is not None:
            out["event"] = self.event_id
        return out


def step(ev: TraceEvent, text: str | None = None) -> Step:
    """A chain step from a trace event, with its own message unless ``text`` says it better."""
    return Step(ev.time, ev.obj, text if text is not None else ev.message, ev.id)


def _fmt_time(t: float) -> str:
    if t >= 100:
        return f"{t:.0f}s"
    return f"{t:.2f}".rstrip("0").rstrip(".") + "s"


def chain_text(chain: list[Step]) -> str:
    """``t=0.4s A — t=1.3s B — …`` as the issue and the docs write chains."""
    return " — ".join(str(s) for s in chain)


class Location(Struct, frozen=True):
    """The object a finding is about and where it comes from (template file and line)."""

    obj: str
    file: str
    line: int

    def to_dict(self) -> dict[str, Any]:
        return {"object": self.obj, "file": self.file, "line": self.line}


class Occurrence(Struct):
    """A finding under one profile: its severity there, the release outcome, the chain."""

    profile: str
    severity: Severity
    outcome: str
    message: str
    chain: list[Step]
    variant: str = "nominal"

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "severity": self.severity.name,
            "outcome": self.outcome,
            "variant": self.variant,
            "message": self.message,
            "chain": [s.to_dict() for s in self.chain],
        }


class FixCheck(Struct):
    """A fix applied mechanically and re-simulated under one profile."""

    profile: str
    outcome: str
    converges: bool
    detail: str = ""
    resolved: bool = True
    """The rule no longer reports the object (the release may still fail for another reason)."""
    cause: dict[str, str] | None = None
    """Why a resolved fix still does not converge: the other rule's finding in the fixed run
    (``rule``, ``object``, ``message``)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "profile": self.profile,
            "outcome": self.outcome,
            "converges": self.converges,
            "resolved": self.resolved,
            "detail": self.detail,
        }
        if self.cause is not None:
            out["cause"] = dict(self.cause)
        return out


class Fix(Struct):
    """A suggested change; ``key`` names a mechanical transform that can be re-simulated."""

    summary: str
    key: str | None = None
    checks: list[FixCheck] = field(default_factory=list)

    @property
    def verified(self) -> bool | None:
        """True when the fixed variant converges under every profile checked, None if unchecked."""
        if not self.checks:
            return None
        return all(c.converges for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "mechanical": self.key is not None,
            "verified": self.verified,
            "checks": [c.to_dict() for c in sorted(self.checks, key=lambda c: c.profile)],
        }


class Finding(Struct):
    """One rule's verdict on one object of one release, across the profiles where it holds."""

    rule: str
    slug: str
    release: str
    location: Location
    occurrences: list[Occurrence]
    fixes: list[Fix] = field(default_factory=list)
    suppressed: str | None = None
    blocked_by: list[str] = field(default_factory=list)
    """HS106: the releases whose own failure blocks this one (under any profile), sorted."""

    @property
    def severity(self) -> Severity:
        return max(o.severity for o in self.occurrences)

    @property
    def profiles(self) -> list[str]:
        return [o.profile for o in self.occurrences]

    @property
    def worst(self) -> Occurrence:
        """The occurrence with the highest severity (first profile on ties)."""
        return max(self.occurrences, key=lambda o: o.severity)

    @property
    def message(self) -> str:
        return self.worst.message

    @property
    def sort_key(self) -> tuple[Any, ...]:
        # a report lists a release's causes before their effects, then by rule
        rank = CAUSE_ORDER.index(self.rule) if self.rule in CAUSE_ORDER else len(CAUSE_ORDER)
        return (-int(self.severity), rank, self.rule, self.release, self.location.obj)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "slug": self.slug,
            "severity": self.severity.name,
            "release": self.release,
            "object": self.location.obj,
            "file": self.location.file,
            "line": self.location.line,
            "message": self.message,
            "profiles": self.profiles,
            "occurrences": [o.to_dict() for o in self.occurrences],
            "fixes": [f.to_dict() for f in self.fixes],
        }
        if self.blocked_by:
            out["blockedBy"] = list(self.blocked_by)
        if self.suppressed is not None:
            out["suppressed"] = self.suppressed
        return out


class Candidate(Struct):
    """What a rule emits for one profile run, before findings are merged across profiles."""

    rule: str
    release: str
    obj: str
    severity: Severity
    message: str
    chain: list[Step]
    fixes: list[Fix] = field(default_factory=list)
    variant: str = "nominal"
    roots: tuple[str, ...] = ()
    """HS106: the releases that block this one at the root (through other Blocked ones)."""
