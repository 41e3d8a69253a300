"""The resolved ends of a connection (peers), CIDR blocks and L4 port specs (both engines)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from msgspec import Struct, field
from msgspec.structs import replace

from helmsim.cluster.network.model import ClusterView, Node, Pod
from helmsim.errors import InputError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Cilium endpoint labels derived from Kubernetes metadata (cilium/cilium pkg/k8s/apis/cilium.io
# const.go: PodNamespaceLabel, PodNamespaceMetaLabels, PolicyLabelServiceAccount,
# PolicyLabelCluster).
CILIUM_NS_LABEL = "io.kubernetes.pod.namespace"
CILIUM_NS_LABELS_PREFIX = "io.cilium.k8s.namespace.labels."
CILIUM_SA_LABEL = "io.cilium.k8s.policy.serviceaccount"
CILIUM_CLUSTER_LABEL = "io.cilium.k8s.policy.cluster"


def parse_ip(text: str, *, where: str = "address") -> IPAddress:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        raise InputError(f"{where}: {text!r} is not an IP address") from None


def parse_network(text: str, *, where: str = "cidr") -> IPNetwork:
    try:
        return ipaddress.ip_network(str(text), strict=False)
    except ValueError:
        raise InputError(f"{where}: {text!r} is not a CIDR") from None


class CidrBlock(Struct, frozen=True):
    """A CIDR minus its ``except`` subnets (NetworkPolicy ipBlock, Cilium toCIDRSet)."""

    net: IPNetwork
    excepts: tuple[IPNetwork, ...] = ()

    def contains(self, ip: IPAddress | None) -> bool:
        if ip is None:
            # An unspecified public address: only a catch-all prefix is sure to contain it.
            return self.net.prefixlen == 0 and self.net.version == 4
        if ip.version != self.net.version or ip not in self.net:
            return False
        return not any(ip in e for e in self.excepts)

    def __str__(self) -> str:
        if self.excepts:
            return f"{self.net} except {', '.join(str(e) for e in self.excepts)}"
        return str(self.net)


def compile_cidr(cidr: object, excepts: object = None, *, where: str) -> CidrBlock:
    if not isinstance(cidr, str):
        raise InputError(f"{where}: cidr must be a string")
    if excepts is not None and not isinstance(excepts, list):
        raise InputError(f"{where}: except must be a list")
    return CidrBlock(
        parse_network(cidr, where=where),
        tuple(parse_network(e, where=where) for e in (excepts or [])),
    )


class Peer(Struct, frozen=True, eq=False):
    """One end of a connection as policy sees it (after Service DNAT).

    ``kind`` is ``pod`` (has a Cilium identity and Kubernetes labels), ``node`` (a node IP or a
    host-network process such as the API server) or ``world`` (outside the cluster).
    ``entities`` are the Cilium entities the peer belongs to.
    """

    kind: Literal["pod", "node", "world"]
    ip: IPAddress | None
    label: str
    pod: Pod | None = None
    ns_labels: Mapping[str, str] = field(default_factory=dict)
    cilium_labels: Mapping[str, str] = field(default_factory=dict)
    entities: frozenset[str] = frozenset()
    fqdn: str | None = None
    is_apiserver: bool = False
    # an API server backend whose identity lacks the kube-apiserver label (a fault)
    apiserver_unlabelled: bool = False


def pod_peer(pod: Pod, cluster: ClusterView) -> Peer:
    cache: dict[Pod, Peer] = cluster._peer_cache  # type: ignore[attr-defined]
    peer = cache.get(pod)
    if peer is None:
        peer = cache[pod] = _make_pod_peer(pod, cluster)
    return peer


def _make_pod_peer(pod: Pod, cluster: ClusterView) -> Peer:
    ns_labels = cluster.namespace_labels(pod.namespace)
    labels = dict(pod.labels)
    labels[CILIUM_NS_LABEL] = pod.namespace
    labels[CILIUM_SA_LABEL] = pod.service_account
    labels[CILIUM_CLUSTER_LABEL] = "default"
    for k, v in ns_labels.items():
        labels[CILIUM_NS_LABELS_PREFIX + k] = v
    # cilium/cilium pkg/labelsfilter/filter.go Filter: only the labels the identity label filter
    # keeps are identity labels, and selectors match identities (pkg/policy/api selector.go).
    labels = cluster.label_filter.identity_labels(labels)
    # cilium Documentation/security/policy/layer3.rst "Entities based": cluster = all endpoints of
    # the local cluster; all = cluster + world.
    return Peer(
        kind="pod",
        ip=parse_ip(pod.ip, where=f"pod {pod.key} ip") if pod.ip else None,
        label=pod.key,
        pod=pod,
        ns_labels=ns_labels,
        cilium_labels=MappingProxyType(labels),
        entities=frozenset({"cluster", "all"}),
    )


def node_peer(
    node: Node, source: Pod | None, *, apiserver: bool = False, unlabelled: bool = False
) -> Peer:
    """A node as a peer; ``unlabelled``: an API server backend whose identity lacks the label."""
    # layer3.rst: "host" is the local host (the source pod's node), "remote-node" any other node;
    # kube-apiserver is an extra identity label on the node(s) running the API server: the agent
    # puts it on the addresses of the default/kubernetes endpoints (cilium/cilium
    # pkg/k8s/watchers/endpoint.go addKubeAPIServerServiceEndpoints), and a remote node's IP then
    # resolves to identity 7 = kube-apiserver + remote-node (pkg/identity/numericidentity.go,
    # pkg/ipcache/metadata.go resolveIdentity). Without the label it is plain remote-node (6).
    note = ", without the kube-apiserver identity label" if unlabelled else ""
    if node.external:
        # an endpoint of default/kubernetes that is no node (a managed control plane) resolves to
        # a CIDR identity: world plus the kube-apiserver label (pkg/ipcache/metadata.go
        # resolveIdentity), so toEntities [world] and toCIDR rules match it, cluster does not
        ip = parse_ip(node.ip, where=f"API server endpoint {node.name}")
        peer = world_peer(ip)
        return replace(
            peer,
            label=f"{node.name} ({node.ip}{note})",
            entities=peer.entities | ({"kube-apiserver"} if apiserver else set()),
            is_apiserver=apiserver,
            apiserver_unlabelled=unlabelled,
        )
    local = source is not None and source.node is not None and source.node == node.name
    entities = {"host" if local else "remote-node", "cluster", "all"}
    if apiserver:
        entities.add("kube-apiserver")
    return Peer(
        kind="node",
        ip=parse_ip(node.ip, where=f"node {node.name} ip"),
        label=f"{node.name} ({node.ip}{note})",
        entities=frozenset(entities),
        is_apiserver=apiserver,
        apiserver_unlabelled=unlabelled,
    )


def world_peer(ip: IPAddress | None, *, fqdn: str | None = None) -> Peer:
    # layer3.rst: world = everything outside the cluster (0.0.0.0/0); world-ipv4/-ipv6 split it.
    fam = "world-ipv6" if ip is not None and ip.version == 6 else "world-ipv4"
    label = fqdn or (str(ip) if ip is not None else "an external address")
    return Peer(
        kind="world", ip=ip, label=label, entities=frozenset({"world", fam, "all"}), fqdn=fqdn
    )


class PortSpec(Struct, frozen=True):
    """One L4 match: ``protocol=None`` is any protocol, ``port=None`` any port, ``name`` a named
    port."""

    protocol: str | None
    port: int | None = None
    end_port: int | None = None
    name: str | None = None

    def matches(self, port: int, protocol: str, dst: Peer) -> bool:
        if self.protocol is not None and self.protocol != protocol:
            return False
        if self.name is not None:
            # Named ports resolve on the destination pod's container ports
            # (kubernetes/api networking/v1/types.go NetworkPolicyPort.Port; cilium layer4.rst).
            if dst.pod is None:
                return False
            return dst.pod.named_port(self.name, protocol) == port
        if self.port is None:
            return True
        if self.end_port is not None:
            return self.port <= port <= self.end_port
        return port == self.port

    def __str__(self) -> str:
        proto = self.protocol or "ANY"
        if self.name is not None:
            return f"{self.name}/{proto}"
        if self.port is None:
            return f"all {proto} ports"
        if self.end_port is not None:
            return f"{self.port}-{self.end_port}/{proto}"
        return f"{self.port}/{proto}"


def parse_port_number(value: object, *, where: str) -> int | str | None:
    """An int port, a named port (str) or None; digits-only strings become ints."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"{where}: port must be a number or a name, got {value!r}")
    if isinstance(value, int):
        if not 0 <= value <= 65535:
            raise InputError(f"{where}: port {value} is out of range")
        return value
    if isinstance(value, str):
        if value.isdigit():
            return parse_port_number(int(value), where=where)
        if value:
            return value
    raise InputError(f"{where}: port must be a number or a name, got {value!r}")
