"""The trace: everything that happens in a simulation, with its simulated time and its cause."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from msgspec import Struct, field


class TraceEvent(Struct, frozen=True):
    """One thing that happened.

    ``actor`` is who did it (``helm``, ``kubelet``, ``job-controller``, ``cilium`` …), ``what`` a
    stable machine-readable verb (``created``, ``connect-denied``, ``event`` …), ``obj`` the
    object it concerns (``Kind/ns/name``), ``cause`` the id of the event that led to it.
    Kubernetes Events are ``what == "event"`` with ``data["reason"]`` and ``data["type"]``.
    """

    id: int
    time: float
    actor: str
    what: str
    obj: str
    message: str
    cause: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def __reduce__(self) -> tuple[type[TraceEvent], tuple[Any, ...]]:
        # pickled as its fields: half the time of a frozen dataclass's state (a check sends the
        # traces of its runs back from the pool's workers)
        return TraceEvent, (self.id, self.time, self.actor, self.what, self.obj, self.message, self.cause, self.data)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "time": round(self.time, 3),
            "actor": self.actor,
            "what": self.what,
            "object": self.obj,
            "message": self.message,
        }
        if self.cause is not None:
            out["cause"] = self.cause
        if self.data:
            out["data"] = dict(self.data)
        return out


class Trace:
    """Append-only list of events; ids are positions."""

    def __init__(self) -> None:
        self._events: list[TraceEvent] = []
        self._by_obj: dict[str, list[TraceEvent]] = {}

    def add(
        self,
        time: float,
        actor: str,
        what: str,
        obj: str,
        message: str,
        *,
        cause: int | None = None,
        **data: Any,
    ) -> TraceEvent:
        ev = TraceEvent(len(self._events), time, actor, what, obj, message, cause, data)
        self._events.append(ev)
        self._by_obj.setdefault(obj, []).append(ev)
        return ev

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, index: int) -> TraceEvent:
        return self._events[index]

    def of(self, obj: str) -> Sequence[TraceEvent]:
        """The events of ``obj``, in trace order (kept by :meth:`add`; do not change it)."""
        return self._by_obj.get(obj, ())

    def find(self, *, what: str | None = None, obj: str | None = None, reason: str | None = None) -> list[TraceEvent]:
        """Events matching every given criterion."""
        pool = self._events if obj is None else self.of(obj)
        return [
            e
            for e in pool
            if (what is None or e.what == what)
            and (obj is None or e.obj == obj)
            and (reason is None or e.data.get("reason") == reason)
        ]

    def chain(self, event_id: int) -> list[TraceEvent]:
        """The event and its causes, oldest first."""
        out: list[TraceEvent] = []
        seen: set[int] = set()
        cur: int | None = event_id
        while cur is not None and cur not in seen:
            seen.add(cur)
            ev = self._events[cur]
            out.append(ev)
            cur = ev.cause
        return list(reversed(out))
