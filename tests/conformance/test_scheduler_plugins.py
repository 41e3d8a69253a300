"""kube-scheduler Filter plugins against cases ported from their upstream tests.

Data: tests/conformance/data/scheduler/*.yaml, each naming its kubernetes/kubernetes file and
commit. Each case runs one plugin (:func:`helmsim.cluster.scheduling.run_plugin`) on every node
and compares the status code (and reasons) the upstream test expects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from helmsim.cluster.scheduling import NodeInfo, PodInfo, Snapshot, allocatable_amounts, run_plugin

DATA = Path(__file__).parent / "data" / "scheduler"


def _load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DATA / name).read_text())
    assert doc["source"]["repo"] == "kubernetes/kubernetes" and len(doc["source"]["commit"]) == 40
    return doc


def _term(t: dict[str, Any]) -> dict[str, Any]:
    exprs = t.get("exprs") or [
        {"key": t["key"], "operator": t["op"], **({"values": t["values"]} if "values" in t else {})}
    ]
    term: dict[str, Any] = {
        "labelSelector": {"matchExpressions": exprs},
        "topologyKey": t["topologyKey"],
    }
    if "namespaces" in t:
        term["namespaces"] = t["namespaces"]
    return term


def _affinity_spec(p: dict[str, Any]) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    if p.get("affinity"):
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(t) for t in p["affinity"]]
        }
    if p.get("anti"):
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(t) for t in p["anti"]]
        }
    return {"affinity": affinity} if affinity else {}


AFFINITY = _load("interpodaffinity.yaml")


@pytest.mark.parametrize("case", AFFINITY["cases"], ids=lambda c: c["name"][:80])
def test_inter_pod_affinity(case: dict[str, Any]) -> None:
    nodes = [NodeInfo(n["name"], n["labels"]) for n in AFFINITY["nodes"]]
    incoming = PodInfo("", "p", case["pod"].get("labels", {}), _affinity_spec(case["pod"]))
    existing = [
        PodInfo(
            e.get("namespace", ""),
            f"e{i}",
            e["labels"],
            _affinity_spec(e),
            node=e.get("node", "node1"),
        )
        for i, e in enumerate(case["pods"])
    ]
    got = run_plugin(AFFINITY["plugin"], incoming, Snapshot(nodes, existing))["node1"]
    want = case["want"]
    if want is None:
        assert got is None
    else:
        assert got is not None and (got.code, got.reasons) == (want["code"], (want["reason"],))


SPREAD = _load("podtopologyspread.yaml")


def _spread_spec(p: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"topologySpreadConstraints": []}
    for c in p["spread"]:
        selector = (
            {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
            if c["selector"] == "foo"
            else None
        )
        constraint = {
            "maxSkew": c["maxSkew"],
            "topologyKey": c["topologyKey"],
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector,
        }
        if "minDomains" in c:
            constraint["minDomains"] = c["minDomains"]
        spec["topologySpreadConstraints"].append(constraint)
    if p.get("nodeAffinity"):
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": p["nodeAffinity"]}]
                }
            }
        }
    return spec


@pytest.mark.parametrize("case", SPREAD["cases"], ids=lambda c: c["name"][:80])
def test_pod_topology_spread(case: dict[str, Any]) -> None:
    nodes = [NodeInfo(n["name"], n["labels"]) for n in case["nodes"]]
    incoming = PodInfo("", "p", case["pod"]["labels"], _spread_spec(case["pod"]))
    existing = [
        PodInfo(
            "", p["name"], p["labels"], {}, node=p["node"], terminating=p.get("terminating", False)
        )
        for p in case["pods"]
    ]
    got = run_plugin(SPREAD["plugin"], incoming, Snapshot(nodes, existing))
    assert {n: ("Success" if st is None else st.code) for n, st in got.items()} == case["want"]


RESOURCES = _load("noderesources.yaml")


def _containers(reqs: list[dict[str, str]]) -> list[dict[str, Any]]:
    return [{"name": f"c{i}", "resources": {"requests": dict(r)}} for i, r in enumerate(reqs)]


@pytest.mark.parametrize("case", RESOURCES["cases"], ids=lambda c: c["name"][:80])
def test_node_resources_fit(case: dict[str, Any]) -> None:
    node = NodeInfo("n", {}, allocatable=allocatable_amounts(case["allocatable"]))
    spec: dict[str, Any] = {
        "containers": _containers(case["containers"]),
        "initContainers": _containers(case.get("init", [])),
    }
    if "overhead" in case:
        spec["overhead"] = case["overhead"]
    used = PodInfo("", "used", {}, {"containers": _containers([case["used"]])}, node="n")
    got = run_plugin(RESOURCES["plugin"], PodInfo("", "p", {}, spec), Snapshot([node], [used]))["n"]
    want = case["want"]
    if want is None:
        assert got is None
    else:
        assert got is not None and (got.code, list(got.reasons)) == (want["code"], want["reasons"])


def test_unknown_plugin_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown plugin 'VolumeZone'"):
        run_plugin("VolumeZone", PodInfo("", "p", {}, {}), Snapshot([], []))
