"""The decision of fluxcd/pkg ssa/manager_wait.go ``WaitForSetWithContext``, as a pure function.

Given the waited ids in order with their latest status, say whether the wait stops now and with
which error. Entry order: Go iterates a map, so its order is random; we keep the input order.

``None`` for an id means the poller has not reported it yet: it is the collector's initial
``Unknown`` (cli-utils polling/collector NewResourceStatusCollector). The message
``can't determine status for <id>`` appears only when no poll event reached the collector at all
(``observed=False``), because the first event records every id, including initial ones.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from msgspec import Struct

from helmsim.kstatus.readers import aggregate
from helmsim.kstatus.types import ObjectId, Result, Status

# fluxcd/pkg ssa/manager_wait.go
FAILED_EARLY = "failed early due to stalled resources"
TIMEOUT = "timeout waiting for"


class WaitDecision(Struct, frozen=True):
    """Whether the wait ends now, and its error text if it ends with one."""

    stop: bool
    error: str | None = None


def decide(
    entries: Sequence[tuple[ObjectId, Result | None]],
    *,
    jobs_with_ttl: Collection[ObjectId] = (),
    fail_fast: bool,
    deadline_exceeded: bool,
    observed: bool = True,
) -> WaitDecision:
    """Model one evaluation of WaitForSetWithContext after a status event (or at the deadline)."""
    if not entries:
        return WaitDecision(True)  # manager_wait.go: empty set returns nil at once
    ttl = set(jobs_with_ttl)
    statuses = [
        (oid, res.status if res is not None else Status.UNKNOWN, res) for oid, res in entries
    ]
    if not deadline_exceeded:
        if not observed or not _observer_cancels(statuses, ttl, fail_fast):
            return WaitDecision(False)
    errs: list[str] = []
    for oid, status, res in statuses:
        if not observed:
            # manager_wait.go: lastStatus[id] == nil → "can't determine status", unless TTL Job
            if oid not in ttl:
                errs.append(f"can't determine status for {oid}")
            continue
        if status is Status.NOT_FOUND and oid in ttl:
            continue  # a Job with TTL deleted after finishing counts as success
        if status is Status.FAILED or (deadline_exceeded and status is not Status.CURRENT):
            entry = f"{oid} status: '{status.value}'"
            if res is not None and res.error is not None:
                entry += f": {res.error}"
            errs.append(entry)
    if not errs:
        return WaitDecision(True)
    msg = TIMEOUT if deadline_exceeded else FAILED_EARLY
    return WaitDecision(True, f"{msg}: [{', '.join(errs)}]")


def _observer_cancels(
    statuses: Sequence[tuple[ObjectId, Status, Result | None]], ttl: set[ObjectId], fail_fast: bool
) -> bool:
    # manager_wait.go observer: NotFound TTL Jobs count as Current for the terminal check only
    effective = {
        Status.CURRENT if (s is Status.NOT_FOUND and oid in ttl) else s for oid, s, _ in statuses
    }
    terminal = effective <= {Status.FAILED, Status.CURRENT}
    failed = Status.FAILED in effective
    agg = aggregate(s for _, s, _ in statuses)
    return agg is Status.CURRENT or (fail_fast and failed) or terminal
