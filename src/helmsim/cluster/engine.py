"""The simulation: a SimPy clock, the API store, the trace, and the controllers.

SimPy was chosen by measurement (``benchmarks/engine_clock.py`` prints SimPy against a bare heapq
scheduler): the clock is a small share of a run's cost either way, and processes written as
generators suit Helm actions and the kubelet. Time is in simulated seconds from 0; objects carry
RFC3339 timestamps from a fixed epoch.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import simpy

from helmsim import limits
from helmsim.cluster.store import Store
from helmsim.cluster.trace import Trace, TraceEvent

if TYPE_CHECKING:
    from helmsim.cluster.behaviour import BehaviourOverride, Faults
    from helmsim.cluster.netstate import NetworkState

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""Simulated time 0 as a wall-clock instant, for objects' timestamps."""


class LatencyLike(Protocol):
    def nominal(self) -> float: ...

    def sample(self, rng: random.Random) -> float: ...


class Simulation:
    """One run: a clock, a store, a trace and the controllers reacting to the store.

    ``profile`` is the cluster profile (``helmsim.cluster.profile.ClusterProfile``); its latencies
    are looked up by snake_case name (``api_write``, ``scheduling``, ``image_pull`` …) and have
    ``nominal()`` and ``sample(rng)``: deterministic runs use the nominal values, Monte-Carlo runs
    (``sample_latencies=True``) draw from ``rng`` seeded with ``seed``.

    What the run is about is given here, once (``helmsim.cluster.cluster.build_cluster`` passes
    it): ``release_objects``, the manifests of the releases to be applied (the behaviour model
    reads a policy or binding before it is applied); ``overrides``, the scenario's behaviour
    overrides; ``catalog``, the behaviour catalog entries (None: the built-in catalog);
    ``faults``, the fault injection hooks (``helmsim.cluster.behaviour.Faults``).
    """

    def __init__(
        self,
        profile: Any,
        *,
        seed: int = 0,
        sample_latencies: bool = False,
        pod_grace_default: float = 1.0,
        release_objects: Iterable[Mapping[str, Any]] = (),
        overrides: Iterable[BehaviourOverride] = (),
        catalog: Sequence[Any] | None = None,
        faults: Faults | None = None,
    ) -> None:
        self.profile = profile
        self.release_objects: list[Mapping[str, Any]] = list(release_objects)
        self.behaviour_overrides: list[BehaviourOverride] = list(overrides)
        self.catalog: Sequence[Any] | None = catalog
        self.faults: Faults | None = faults
        self.network: NetworkState | None = None
        self.release_records: Any = None
        """Helm's release storage (``helmsim.helm.release.ReleaseStorage``): each revision is a
        Secret in its namespace, which ``count/secrets`` quotas count (helmsim.cluster.quota)."""
        self.quota_ledger: Any = None
        """What the objects of each namespace charge its ResourceQuotas, kept by store writes
        (``helmsim.cluster.quota.Ledger``, made on the first quota admission)."""
        self.external_state: set[str] = set()
        """State programs left outside the cluster (a catalog entry's ``writes``: a database
        schema migrated) and facts of the cluster's setup (kubelet serving certificates signed by
        its CA), which programs' ``state`` checks and ``probesFail`` read."""
        """The network state (``helmsim.cluster.netstate.network_state`` makes it on first use)."""
        self._release_by_kind: dict[str, list[Mapping[str, Any]]] | None = None
        self._latencies: dict[str, LatencyLike] = {}  # the profile's, looked up once per name
        self._stamp: tuple[float, str] = (float("nan"), "")  # the last instant formatted
        self.env = simpy.Environment()
        self.rng = random.Random(seed)
        self.sample_latencies = sample_latencies
        self.trace = Trace()
        self.store = Store(self)
        self._pod_grace_default = pod_grace_default
        self.controllers: list[Any] = []
        self.events_processed = 0
        """SimPy events processed so far; past ``--max-events`` the run stops (helmsim.limits)."""
        self._max_events = limits.current().max_events
        if self._max_events:
            self.env.step = self._counted_step  # type: ignore[method-assign]

    def release_objects_of(self, kind: str) -> list[Mapping[str, Any]]:
        """The release manifests of ``kind``, in release order."""
        if self._release_by_kind is None:
            self._release_by_kind = {}
            for o in self.release_objects:
                if isinstance(o, Mapping):
                    self._release_by_kind.setdefault(str(o.get("kind")), []).append(o)
        return self._release_by_kind.get(kind, [])

    @property
    def now(self) -> float:
        """Simulated seconds since the start."""
        return float(self.env.now)

    def datetime(self, t: float | None = None) -> datetime:
        """Simulated time ``t`` (default: now) as an aware datetime."""
        return EPOCH + timedelta(seconds=self.now if t is None else t)

    def timestamp(self, t: float | None = None) -> str:
        """RFC3339 timestamp with millisecond precision, as metav1.Time prints (to the second)."""
        at = self.now if t is None else t
        if at != self._stamp[0]:  # many writes share an instant: format each instant once
            dt = self.datetime(at)
            self._stamp = (at, dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{dt.microsecond // 1000:03d}Z")
        return self._stamp[1]

    def latency(self, name: str) -> float:
        """A latency of the profile: nominal, or drawn when sampling."""
        lat = self._latencies.get(name)
        if lat is None:
            lat = self._latencies[name] = profile_latency(self.profile, name)
        value = lat.sample(self.rng) if self.sample_latencies else lat.nominal()
        return max(0.0, float(value))

    def pod_grace(self, pod: dict[str, Any]) -> float:
        """How long a deleted pod takes to go away: its processes exit on SIGTERM (assumption)."""
        spec = pod.get("spec") or {}
        declared = spec.get("terminationGracePeriodSeconds")
        if isinstance(declared, int) and declared < self._pod_grace_default:
            return float(declared)
        return self._pod_grace_default

    def log(
        self, actor: str, what: str, obj: str, message: str, *, cause: int | None = None, **data: Any
    ) -> TraceEvent:
        """Append to the trace at the current time."""
        return self.trace.add(self.now, actor, what, obj, message, cause=cause, **data)

    def after(self, delay: float, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` ``delay`` simulated seconds from now."""
        ev = self.env.timeout(max(0.0, delay))
        ev.callbacks.append(lambda _ev: fn(*args))

    def process(self, gen: Generator[simpy.Event, Any, Any]) -> simpy.Process:
        """Start a SimPy process (a generator yielding ``sim.env.timeout(...)`` and events)."""
        return self.env.process(gen)

    def sleep(self, seconds: float) -> simpy.Timeout:
        """An event that fires ``seconds`` from now (``yield sim.sleep(2)`` in a process)."""
        return self.env.timeout(max(0.0, seconds))

    def _counted_step(self) -> None:
        self.events_processed += 1
        if self.events_processed > self._max_events:
            name = getattr(self.profile, "name", "?")
            raise limits.exceeded(
                "max_events",
                f"simulation on profile {name}: {self.events_processed:,} events by "
                f"t={self.now:g}s (does something retry without end?)",
            )
        simpy.Environment.step(self.env)

    def add_controller(self, controller: Any) -> None:
        self.controllers.append(controller)

    def run(self, until: float) -> None:
        """Advance the clock until ``until`` or until nothing is scheduled."""
        self.env.run(until=until)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a simulation runs (it spent 20–35 % of a
    1,000-object run tracing the store's objects, which are freed by reference counting or at
    the end); it is back on, as it was, afterwards."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def profile_latency(profile: Any, name: str) -> LatencyLike:
    """The profile's latency ``name`` (snake_case, or the camelCase YAML spelling)."""
    if hasattr(profile, "latency"):
        return profile.latency(name)  # type: ignore[no-any-return]
    lats = profile.latencies
    if hasattr(lats, name):
        return getattr(lats, name)  # type: ignore[no-any-return]
    camel = name.split("_")[0] + "".join(p.title() for p in name.split("_")[1:])
    if hasattr(lats, camel):
        return getattr(lats, camel)  # type: ignore[no-any-return]
    raise KeyError(f"the cluster profile has no latency {name!r}")


class Controller:
    """Base for controllers: watches kinds on the store and reacts after a latency."""

    name = "controller"
    kinds: tuple[str, ...] = ()

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.store = sim.store
        sim.store.watch(self.kinds, self.on_event)
        sim.add_controller(self)

    def on_event(self, event: str, obj: dict[str, Any]) -> None:  # pragma: no cover - interface
        """Called synchronously after each write to a watched kind; schedule work, don't block."""
