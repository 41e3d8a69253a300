"""The rule registry: stable ids (``HS1xx``), slugs, one-line summaries, the check functions.

A rule is a function ``(run: ProfileRun) -> list[Candidate]`` registered with :func:`rule`.
Ids never change meaning and are never reused; each has a page ``docs/rules/<ID>.md`` (the
test suite checks that every registered rule has one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from msgspec import Struct

if TYPE_CHECKING:
    from helmsim.diagnose.context import ProfileRun
    from helmsim.diagnose.model import Candidate

Check = Callable[["ProfileRun"], "list[Candidate]"]


class RuleSpec(Struct, frozen=True):
    """A rule: id, slug, a one-line summary and its check."""

    id: str
    slug: str
    summary: str
    check: Check

    @property
    def doc(self) -> str:
        """Path of the rule's documentation page, relative to the repository root."""
        return f"docs/rules/{self.id}.md"


RULES: dict[str, RuleSpec] = {}


def rule(rule_id: str, slug: str, summary: str) -> Callable[[Check], Check]:
    """Register ``fn`` as rule ``rule_id``; ids and slugs must be unique."""

    def decorate(fn: Check) -> Check:
        if rule_id in RULES or any(r.slug == slug for r in RULES.values()):
            raise ValueError(f"rule {rule_id} ({slug}) registered twice")
        RULES[rule_id] = RuleSpec(rule_id, slug, summary, fn)
        return fn

    return decorate


def all_rules() -> list[RuleSpec]:
    """Every rule, by id (importing the rule families registers them)."""
    from helmsim.diagnose import rules as _rules  # noqa: F401  (registers every family)

    return [RULES[k] for k in sorted(RULES)]


def lookup(ref: str) -> RuleSpec | None:
    """A rule by id (``HS101``) or slug (``workload-before-policy``)."""
    all_rules()
    key = ref.strip()
    if key.upper() in RULES:
        return RULES[key.upper()]
    return next((r for r in RULES.values() if r.slug == key), None)
