"""Cilium policy table (tests/conformance/data/netpol/cilium_cases.yaml): every enforcement mode and
every peer type, each case citing the Cilium document or code it follows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from helmsim.cluster.network import (
    ClusterView,
    CniConfig,
    ContainerPort,
    External,
    Node,
    Pod,
    PolicySet,
    Service,
    ServicePort,
    client_error_text,
    evaluate,
    parse_target,
)

TABLE = yaml.safe_load(
    (Path(__file__).parent / "data" / "netpol" / "cilium_cases.yaml").read_text()
)
CASES: list[dict[str, Any]] = TABLE["cases"]

CLIENT = Pod("app", "client", {"app": "client"}, "10.244.1.10", "worker")
WEB = Pod("app", "web", {"app": "web"}, "10.244.1.11", "worker", (ContainerPort("http", 8080),))
DB = Pod("other", "db", {"app": "db"}, "10.244.2.10", "worker", (ContainerPort("pg", 5432),))
CLUSTER = ClusterView.default(
    namespaces={"app": {"team": "a"}, "other": {"team": "b"}},
    pods=(CLIENT, WEB, DB),
    services=(
        Service(
            "app", "web", "10.96.10.10", (ServicePort(80, "http", "TCP", "http"),), {"app": "web"}
        ),
        Service(
            "other", "db", "10.96.20.20", (ServicePort(5432, 5432, "TCP", "pg"),), {"app": "db"}
        ),
    ),
    nodes=(Node("kind-control-plane", "172.18.0.2", True), Node("worker", "172.18.0.3")),
    dns_records={
        "api.github.com": ("140.82.112.5",),
        "example.com": ("93.184.216.34",),
        "github.com": ("140.82.112.3",),
        "a.b.github.com": ("140.82.112.9",),
    },
)
PODS = {p.key: p for p in CLUSTER.pods}


def _source(text: str):
    if text.startswith("external:"):
        return External(text.split(":", 1)[1])
    return PODS[text]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_cilium_case(case: dict[str, Any]) -> None:
    assert case.get("cite"), "every case names its source"
    cni = CniConfig(
        type=case.get("cni", "cilium"),
        policy_enforcement_mode=case.get("mode", "default"),
        policy_cidr_match_mode=case.get("cidr_match_mode", ""),
    )
    policies = PolicySet.from_manifests(case.get("policies", []))
    verdict = evaluate(
        _source(case.get("source", "app/client")),
        parse_target(case["target"]),
        policies,
        CLUSTER,
        cni,
    )
    assert verdict.allowed is case["allowed"], verdict.reason
    if "reason" in case:
        assert case["reason"] in verdict.reason
    if "decided_by" in case:
        assert list(verdict.decided_by) == case["decided_by"], verdict.reason
    if "cause" in case:
        assert verdict.cause == case["cause"], verdict.reason
    if "error" in case:
        assert client_error_text(verdict) == case["error"]


def test_table_covers_every_mode_and_peer_type() -> None:
    modes = {c.get("mode", "default") for c in CASES if c.get("cni", "cilium") == "cilium"}
    assert modes == {"default", "always", "never"}
    text = yaml.safe_dump(TABLE["policies"])
    for field in (
        "toEndpoints",
        "fromEndpoints",
        "toEntities",
        "fromEntities",
        "toCIDR",
        "toCIDRSet",
        "fromCIDRSet",
        "toFQDNs",
        "toPorts",
        "toServices",
        "egressDeny",
        "enableDefaultDeny",
        "CiliumClusterwideNetworkPolicy",
    ):
        assert field in text, field
