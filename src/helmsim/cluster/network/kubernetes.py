"""Kubernetes NetworkPolicy (networking.k8s.io/v1): compile a manifest, match one direction.

Semantics follow kubernetes/api networking/v1/types.go (commit 10b39a39) and
kubernetes/website content/en/docs/concepts/services-networking/network-policies.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from helmsim.cluster.network.flows import CidrBlock, Peer, PortSpec, compile_cidr, parse_port_number
from helmsim.cluster.network.model import PROTOCOLS, CniConfig
from helmsim.cluster.network.selectors import Selector, compile_selector
from helmsim.errors import InputError

KIND = "NetworkPolicy"


class NPPeer(Struct, frozen=True):
    pod_selector: Selector | None
    ns_selector: Selector | None
    ip_block: CidrBlock | None


class NPRule(Struct, frozen=True):
    index: int  # 1-based, as reasons print it
    ports: tuple[PortSpec, ...]  # empty: every port
    peers: tuple[NPPeer, ...]  # empty: every peer


class NetworkPolicy(Struct, frozen=True):
    id: str
    namespace: str
    pod_selector: Selector
    types: frozenset[str]
    ingress: tuple[NPRule, ...]
    egress: tuple[NPRule, ...]

    def selects(self, peer: Peer) -> bool:
        pod = peer.pod
        return (
            pod is not None
            and pod.namespace == self.namespace
            and self.pod_selector.matches(pod.labels)
        )

    def rules(self, direction: str) -> tuple[NPRule, ...]:
        return self.egress if direction == "egress" else self.ingress


def _ports(items: Any, where: str) -> tuple[PortSpec, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise InputError(f"{where}.ports must be a list")
    out = []
    for i, p in enumerate(items):
        w = f"{where}.ports[{i}]"
        if not isinstance(p, Mapping):
            raise InputError(f"{w} must be a mapping")
        # types.go NetworkPolicyPort: protocol defaults to TCP; port unset = all ports;
        # endPort needs a numeric port.
        proto = str(p.get("protocol") or "TCP").upper()
        if proto not in PROTOCOLS:
            raise InputError(f"{w}: unsupported protocol {p.get('protocol')!r}")
        port = parse_port_number(p.get("port"), where=w)
        end = p.get("endPort")
        if end is not None:
            if not isinstance(port, int) or not isinstance(end, int) or end < port:
                raise InputError(f"{w}: endPort needs a numeric port not above it")
        if isinstance(port, str):
            out.append(PortSpec(proto, name=port))
        else:
            out.append(PortSpec(proto, port, end))
    return tuple(out)


def _peers(items: Any, where: str) -> tuple[NPPeer, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise InputError(f"{where} must be a list")
    out = []
    for i, p in enumerate(items):
        w = f"{where}[{i}]"
        if not isinstance(p, Mapping):
            raise InputError(f"{w} must be a mapping")
        block = p.get("ipBlock")
        has_sel = "podSelector" in p or "namespaceSelector" in p
        if block is not None:
            # types.go NetworkPolicyPeer: ipBlock cannot be combined with the selectors.
            if has_sel:
                raise InputError(
                    f"{w}: ipBlock cannot be combined with podSelector/namespaceSelector"
                )
            if not isinstance(block, Mapping):
                raise InputError(f"{w}.ipBlock must be a mapping")
            out.append(
                NPPeer(
                    None,
                    None,
                    compile_cidr(block.get("cidr"), block.get("except"), where=f"{w}.ipBlock"),
                )
            )
        elif has_sel:
            pod_sel = p.get("podSelector")
            ns_sel = p.get("namespaceSelector")
            out.append(
                NPPeer(
                    compile_selector(pod_sel, where=f"{w}.podSelector")
                    if "podSelector" in p
                    else None,
                    compile_selector(ns_sel, where=f"{w}.namespaceSelector")
                    if "namespaceSelector" in p
                    else None,
                    None,
                )
            )
        else:
            raise InputError(f"{w}: a peer needs podSelector, namespaceSelector or ipBlock")
    return tuple(out)


def _rules(items: Any, peer_key: str, where: str) -> tuple[NPRule, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise InputError(f"{where} must be a list")
    out = []
    for i, r in enumerate(items):
        w = f"{where}[{i}]"
        if r is None:
            r = {}
        if not isinstance(r, Mapping):
            raise InputError(f"{w} must be a mapping")
        out.append(
            NPRule(i + 1, _ports(r.get("ports"), w), _peers(r.get(peer_key), f"{w}.{peer_key}"))
        )
    return tuple(out)


def compile_network_policy(doc: Mapping[str, Any]) -> NetworkPolicy:
    meta = doc.get("metadata") or {}
    name = meta.get("name") or "<unnamed>"
    namespace = meta.get("namespace") or "default"
    pid = f"{KIND} {namespace}/{name}"
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        raise InputError(f"{pid}: spec must be a mapping")
    types_raw = spec.get("policyTypes")
    if types_raw:
        if not isinstance(types_raw, list) or any(
            t not in ("Ingress", "Egress") for t in types_raw
        ):
            raise InputError(f"{pid}: policyTypes items must be Ingress or Egress")
        types = frozenset(t.lower() for t in types_raw)
    else:
        # types.go NetworkPolicySpec.PolicyTypes: unset means Ingress, plus Egress when the
        # policy has an egress section.
        types = frozenset({"ingress"} | ({"egress"} if spec.get("egress") else set()))
    return NetworkPolicy(
        id=pid,
        namespace=namespace,
        pod_selector=compile_selector(spec.get("podSelector") or {}, where=f"{pid} podSelector"),
        types=types,
        ingress=_rules(spec.get("ingress"), "from", f"{pid} ingress"),
        egress=_rules(spec.get("egress"), "to", f"{pid} egress"),
    )


def peer_matches(peer: NPPeer, policy_ns: str, other: Peer, cni: CniConfig) -> str | None:
    """A short description of why ``other`` matches this peer, or None."""
    if peer.ip_block is not None:
        if other.kind == "pod":
            # ipBlock is meant for cluster-external addresses; pod IPs are not matched (as
            # np-guard/netpol-analyzer and Cilium do; other CNIs may differ).
            return None
        if other.kind == "node" and cni.type == "cilium" and cni.policy_cidr_match_mode != "nodes":
            # cilium layer3.rst "Selecting nodes with CIDR / ipBlock": by default CIDR selectors
            # do not match nodes; policyCIDRMatchMode=nodes makes ipBlock select node IPs.
            return None
        if peer.ip_block.contains(other.ip):
            return f"ipBlock {peer.ip_block}"
        return None
    if other.kind != "pod" or other.pod is None:
        return None  # selectors only select pods (host-network processes are not selectable)
    if peer.ns_selector is None:
        if other.pod.namespace != policy_ns:
            return None
    elif not peer.ns_selector.matches(other.ns_labels):
        return None
    if peer.pod_selector is not None and not peer.pod_selector.matches(other.pod.labels):
        return None
    if peer.ns_selector is not None and peer.pod_selector is not None:
        return "namespaceSelector+podSelector"
    return "namespaceSelector" if peer.ns_selector is not None else "podSelector"


def rule_allows(
    rule: NPRule, policy_ns: str, other: Peer, dst: Peer, port: int, protocol: str, cni: CniConfig
) -> str | None:
    """Whether one rule allows the flow; returns a description of the matching peer."""
    # types.go NetworkPolicyIngressRule/EgressRule: ports AND peers; empty lists match all.
    if rule.ports and not any(p.matches(port, protocol, dst) for p in rule.ports):
        return None
    if not rule.peers:
        return "any peer"
    for p in rule.peers:
        why = peer_matches(p, policy_ns, other, cni)
        if why:
            return why
    return None


class NPDecision(Struct, frozen=True):
    isolating: tuple[NetworkPolicy, ...]
    allowed_by: tuple[NetworkPolicy, NPRule, str] | None


def evaluate_direction(
    policies: tuple[NetworkPolicy, ...],
    direction: str,
    subject: Peer,
    other: Peer,
    dst: Peer,
    port: int,
    protocol: str,
    cni: CniConfig,
) -> NPDecision:
    """Which policies isolate ``subject`` in ``direction``, and the first rule allowing the flow."""
    isolating = tuple(p for p in policies if direction in p.types and p.selects(subject))
    for pol in isolating:
        for rule in pol.rules(direction):
            why = rule_allows(rule, pol.namespace, other, dst, port, protocol, cni)
            if why:
                return NPDecision(isolating, (pol, rule, why))
    return NPDecision(isolating, None)
