"""The engine's caches answer what a fresh computation answers (issue 15 item 2).

The network view is kept incrementally (ready pods by the Pod watch) and helm's wait re-reads an
object's status only after a write: checked here against a rebuild from the store at every
second of seed 1's rollout, and against kstatus read afresh, on the profiles where they matter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import msgspec
import pytest
from e2e_helpers import SEED1, SEED2, run_example

from helmsim import kstatus
from helmsim.cluster.network.model import ClusterView
from helmsim.cluster.netstate import build_view, network_state
from helmsim.helm.actions import _StatusCache
from helmsim.manifests import Resource


def _plain(value: Any) -> Any:
    """A value with its structs, dataclasses, mappings and sequences as plain tuples (the network
    model's ``Pod`` and ``Service`` compare by identity)."""
    if isinstance(value, msgspec.Struct):
        return (type(value).__name__, *(_plain(getattr(value, f.name)) for f in msgspec.structs.fields(value)))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, *(_plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare))
    if isinstance(value, Mapping):
        return tuple(sorted((k, _plain(v)) for k, v in value.items()))
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value))
    return value


def _same_view(a: ClusterView, b: ClusterView) -> bool:
    return bool(_plain(a) == _plain(b))


def _every_second(check: Any, until: float = 240.0) -> Any:
    def setup(sim: Any) -> None:
        def tick(t: float) -> None:
            check(sim)
            if t < until:
                sim.after(1.0, tick, t + 1.0)

        sim.after(0.0, tick, 0.0)

    return setup


@pytest.mark.parametrize("profile", ["cilium-always", "kind"])
def test_incremental_network_view_equals_a_rebuild(profile: str) -> None:
    checked: list[int] = []

    def check(sim: Any) -> None:
        kept = network_state(sim).view()
        fresh = build_view(sim)
        assert _same_view(kept, fresh), f"t={sim.now}"
        checked.append(len(fresh.pods))

    result = run_example(SEED1, profile, setup=_every_second(check))
    assert result.releases
    # the comparison saw the ready pods change as the release rolled out
    assert max(checked) > min(checked)


def _resource(obj: dict[str, Any]) -> Resource:
    meta = obj["metadata"]
    return Resource(
        obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"), obj, None  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("example", [SEED1, SEED2])
def test_wait_status_cache_equals_kstatus_read_afresh(example: Any) -> None:
    seen: list[str] = []
    caches: dict[int, _StatusCache] = {}

    def check(sim: Any) -> None:
        cache = caches.setdefault(id(sim), _StatusCache(sim, "flux-wait"))
        objects = [o for o in sim.store.all() if o.get("kind") not in ("Event",)]
        resources = [_resource(o) for o in objects]
        for res, cached in zip(resources, cache.read_all(resources), strict=True):
            fresh = kstatus.read(
                sim.store.get(res.kind, res.namespace, res.name), reader="flux-wait", now=sim.datetime(),
                pods=sim.store.list("Pod", res.namespace, (res.body.get("spec") or {}).get("selector"))
                if res.kind in ("ReplicaSet", "StatefulSet")
                else (),
            )
            assert (cached.status, cached.message) == (fresh.status, fresh.message), f"{res.ref} t={sim.now}"
            seen.append(cached.status.value)

    run_example(example, "kind", setup=_every_second(check, until=120.0))
    assert {"InProgress", "Current"} <= set(seen)
