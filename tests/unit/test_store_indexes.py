"""The store's indexes answer exactly what a scan of every object answers (issue 15).

Random sequences of creates, label and owner changes, applies and deletes; after each, every
indexed read (``list`` with and without a namespace and selector, ``select``, ``owned_by``, the
garbage collector's dependents) is compared with a brute-force scan of ``Store.all()``.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.cluster.engine import Simulation
from helmsim.cluster.selectors import matches_map, matches_selector
from helmsim.cluster.store import key_of, owner_reference


class _Fixed:
    def nominal(self) -> float:
        return 0.0

    def sample(self, rng: random.Random) -> float:
        return 0.0


def _sim() -> Simulation:
    lat = SimpleNamespace(controller_sync=_Fixed(), api_write=_Fixed())
    return Simulation(SimpleNamespace(latencies=lat))  # type: ignore[arg-type]


KINDS = ("Pod", "ConfigMap")
NAMESPACES = ("a", "b")
NAMES = ("x", "y", "z", "w")
LABELS = st.dictionaries(st.sampled_from(("app", "tier")), st.sampled_from(("1", "2")), max_size=2)
SELECTORS = [
    None,
    {},
    {"matchLabels": {"app": "1"}},
    {"matchLabels": {"app": "1", "tier": "2"}},
    {"matchLabels": {"tier": "1"}, "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["2"]}]},
    {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
]
STEP = st.tuples(
    st.sampled_from(("create", "relabel", "apply", "delete", "adopt")),
    st.sampled_from(KINDS),
    st.sampled_from(NAMESPACES),
    st.sampled_from(NAMES),
    LABELS,
)


def _obj(kind: str, ns: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": ns, "labels": labels}}


def _check(sim: Simulation) -> None:
    store = sim.store
    every = store.all()
    for kind in KINDS:
        for ns in (None, *NAMESPACES):
            for selector in SELECTORS:
                expected = [
                    o
                    for o in every
                    if key_of(o)[0] == kind
                    and (ns is None or key_of(o)[1] == ns)
                    and (selector is None or matches_selector(selector, o["metadata"].get("labels") or {}))
                ]
                assert store.list(kind, ns, selector) == expected
        for ns in NAMESPACES:
            for selector in ({}, {"app": "1"}, {"app": "2", "tier": "1"}):
                expected = [
                    o
                    for o in every
                    if key_of(o)[:2] == (kind, ns) and matches_map(selector, o["metadata"].get("labels") or {})
                ]
                assert store.select(kind, ns, selector) == expected
    for owner in every:
        uid = owner["metadata"]["uid"]
        for kind in KINDS:
            expected = [
                o
                for o in every
                if key_of(o)[0] == kind and any(r["uid"] == uid for r in o["metadata"].get("ownerReferences") or ())
            ]
            assert store.owned_by(kind, uid) == expected


@settings(max_examples=150, deadline=None)
@given(st.lists(STEP, max_size=30))
def test_indexed_reads_equal_a_scan(steps: list[tuple[str, str, str, str, dict[str, str]]]) -> None:
    sim = _sim()
    store = sim.store
    for verb, kind, ns, name, labels in steps:
        live = store.get(kind, ns, name)
        if verb == "create" and live is None:
            store.create(_obj(kind, ns, name, labels), actor="t")
        elif verb == "apply":
            store.apply(_obj(kind, ns, name, labels), actor="t")
        elif verb == "relabel" and live is not None:
            store.update({**live, "metadata": {**live["metadata"], "labels": labels}}, actor="t")
        elif verb == "delete" and live is not None:
            store.delete(kind, ns, name, actor="t")
        elif verb == "adopt" and live is not None:
            owners = [o for o in store.list("ConfigMap", ns) if o is not live]
            refs = [owner_reference(o) for o in owners[:2]]
            store.update({**live, "metadata": {**live["metadata"], "ownerReferences": refs}}, actor="t")
        sim.run(until=sim.now + 1.0)  # garbage collection of dependents
        _check(sim)


def test_deleting_an_owner_collects_its_dependents_in_store_order() -> None:
    sim = _sim()
    store = sim.store
    owner = store.create(_obj("ConfigMap", "a", "owner", {}), actor="t")
    for name in ("z", "x", "y"):
        store.create({**_obj("Pod", "a", name, {}), "metadata": {"name": name, "namespace": "a", "ownerReferences": [owner_reference(owner)]}}, actor="t")
    store.delete("ConfigMap", "a", "owner", actor="t")
    sim.run(until=5.0)
    deleted = [e.obj for e in sim.trace if e.what == "deleted" and e.obj.startswith("Pod/")]
    assert deleted == ["Pod/a/z", "Pod/a/x", "Pod/a/y"]  # the order they were created in


def test_node_load_counts_bound_pods_that_have_not_finished() -> None:
    sim = _sim()
    store = sim.store

    def pod(name: str, node: str | None, phase: str) -> dict[str, Any]:
        return {**_obj("Pod", "a", name, {}), "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}

    store.create(pod("p1", "n1", "Running"), actor="t")
    store.create(pod("p2", "n1", "Pending"), actor="t")
    store.create(pod("p3", None, "Pending"), actor="t")
    store.create(pod("p4", "n2", "Succeeded"), actor="t")
    assert {n: c for n, c in store.node_load().items() if c} == {"n1": 2}
    store.update_status("Pod", "a", "p1", {"phase": "Failed"}, actor="t")
    store.update(pod("p3", "n2", "Pending"), actor="t")
    assert {n: c for n, c in store.node_load().items() if c} == {"n1": 1, "n2": 1}
    store.delete("Pod", "a", "p2", actor="t")
    assert {n: c for n, c in store.node_load().items() if c} == {"n2": 1}
