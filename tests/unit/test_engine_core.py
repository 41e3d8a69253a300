"""The engine core: clock, store semantics, trace causality."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from helmsim.cluster.engine import Simulation
from helmsim.cluster.store import ApiError, owner_reference


class _Fixed:
    def __init__(self, v: float) -> None:
        self.v = v

    def nominal(self) -> float:
        return self.v

    def sample(self, rng: random.Random) -> float:
        return rng.uniform(0, 2 * self.v)


def _sim(**kw: object) -> Simulation:
    lat = SimpleNamespace(controller_sync=_Fixed(0.5), api_write=_Fixed(0.05))
    return Simulation(SimpleNamespace(latencies=lat), **kw)  # type: ignore[arg-type]


def _cm(name: str, data: dict[str, str] | None = None) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": data or {}}


def test_create_sets_server_fields_and_refuses_duplicates() -> None:
    sim = _sim()
    obj = sim.store.create(_cm("a"), actor="helm")
    assert obj["metadata"]["generation"] == 1
    assert obj["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00.000Z"
    with pytest.raises(ApiError) as err:
        sim.store.create(_cm("a"), actor="helm")
    assert err.value.reason == "AlreadyExists" and err.value.message == 'configmaps "a" already exists'


def test_apply_bumps_generation_only_on_spec_change() -> None:
    sim = _sim()
    sim.store.apply(_cm("a", {"k": "1"}), actor="helm")
    same, created = sim.store.apply(_cm("a", {"k": "1"}), actor="helm")
    assert not created and same["metadata"]["generation"] == 1
    changed, _ = sim.store.apply(_cm("a", {"k": "2"}), actor="helm")
    assert changed["metadata"]["generation"] == 2 and changed["data"] == {"k": "2"}


def test_delete_with_grace_and_garbage_collection() -> None:
    sim = _sim()
    owner = sim.store.create(_cm("owner"), actor="helm")
    dep = _cm("dep")
    dep["metadata"]["ownerReferences"] = [owner_reference(owner)]  # type: ignore[index]
    sim.store.create(dep, actor="controller")
    sim.store.delete("ConfigMap", "ns", "owner", actor="helm", grace=2)
    assert sim.store.get("ConfigMap", "ns", "owner")["metadata"]["deletionTimestamp"]  # type: ignore[index]
    sim.run(until=2.1)
    assert sim.store.get("ConfigMap", "ns", "owner") is None
    assert sim.store.get("ConfigMap", "ns", "dep") is not None  # GC after controller_sync
    sim.run(until=3)
    assert sim.store.get("ConfigMap", "ns", "dep") is None
    deleted = sim.trace.find(what="deleted", obj="ConfigMap/ns/dep")[0]
    assert [e.what for e in sim.trace.chain(deleted.id)] == ["deleting", "deleted", "deleting", "deleted"]


def test_watchers_see_writes_and_time_advances() -> None:
    sim = _sim()
    seen: list[tuple[float, str, str]] = []
    sim.store.watch(["ConfigMap"], lambda ev, obj: seen.append((sim.now, ev, obj["metadata"]["name"])))
    sim.after(1.5, lambda: sim.store.create(_cm("late"), actor="helm"))
    sim.run(until=10)
    assert seen == [(1.5, "ADDED", "late")]


def test_latency_nominal_or_sampled_reproducibly() -> None:
    assert _sim().latency("controller_sync") == 0.5
    a = [_sim(seed=7, sample_latencies=True).latency("controller_sync") for _ in range(2)]
    assert a[0] == a[1] and a[0] != 0.5
    with pytest.raises(KeyError):
        _sim().latency("nope")


def test_a_trace_sent_between_processes_keeps_its_events_and_their_index() -> None:
    import pickle

    from helmsim.cluster.trace import Trace

    trace = Trace()
    trace.add(1.0, "helm", "created", "Pod/ns/a", "Pod/ns/a created")
    trace.add(2.5, "kubelet", "event", "Pod/ns/a", "Pulling", cause=0, reason="Pulling", type="Normal")
    trace.add(3.0, "kubelet", "event", "Pod/ns/b", "Started", reason="Started")
    back = pickle.loads(pickle.dumps(trace, protocol=pickle.HIGHEST_PROTOCOL))
    assert list(back) == list(trace)
    assert back.find(obj="Pod/ns/a", reason="Pulling") == [back[1]]  # the per-object index survives
    assert back.find(obj="Pod/ns/a")[1] is back[1]  # one event, not two copies
    assert back.chain(1) == [back[0], back[1]]
