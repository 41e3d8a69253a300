"""Plain, frozen inputs and outputs of the network-policy evaluator.

Everything here is data: the cluster view (namespaces, pods, services, nodes and the well-known
addresses), the CNI configuration, the connection targets and the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from msgspec import Struct, field
from msgspec.structs import force_setattr

from helmsim.cluster.network.labelfilter import DEFAULT_FILTER, LabelFilter
from helmsim.errors import InputError
from helmsim.kube import addresses

Protocol = Literal["TCP", "UDP", "SCTP"]
PROTOCOLS: tuple[str, ...] = ("TCP", "UDP", "SCTP")

# Namespaces get this label from the apiserver (Kubernetes >= 1.22, NamespaceDefaultLabelName).
# kubernetes/website content/en/docs/concepts/services-networking/network-policies.md
# "Targeting a Namespace by its name".
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# kubernetes/kubernetes cmd/kubeadm/app/constants/constants.go GetAPIServerVirtualIP (1st IP of
# the service CIDR 10.96.0.0/12) and GetDNSIP (10th IP); kubeadm defaults: apiserver binds 6443.
DEFAULT_APISERVER_SERVICE_IP = addresses.APISERVER_CLUSTER_IP
DEFAULT_DNS_SERVICE_IP = addresses.KUBE_DNS_CLUSTER_IP
APISERVER_SERVICE_PORT = 443
APISERVER_ENDPOINT_PORT = 6443


def _frozen(mapping: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping or {}))


def normalize_protocol(value: Any, *, default: str = "TCP") -> str:
    """Upper-case a protocol name; raise InputError for anything but TCP, UDP or SCTP."""
    proto = str(value or default).upper()
    if proto not in PROTOCOLS:
        raise InputError(f"unsupported protocol {value!r} (expected TCP, UDP or SCTP)")
    return proto


class ContainerPort(Struct, frozen=True):
    """A named container port, used to resolve named ports in policies and Services."""

    name: str
    port: int
    protocol: str = "TCP"


class Pod(Struct, frozen=True, eq=False):
    """A pod as the network sees it: identity labels, address, node and named ports."""

    namespace: str
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    ip: str | None = None
    node: str | None = None
    ports: tuple[ContainerPort, ...] = ()
    service_account: str = "default"
    host_network: bool = False

    def __post_init__(self) -> None:
        force_setattr(self, "labels", _frozen(self.labels))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def named_port(self, name: str, protocol: str) -> int | None:
        """The number of the container port called ``name`` for ``protocol``, if any."""
        for p in self.ports:
            if p.name == name and p.protocol == protocol:
                return p.port
        return None


class External(Struct, frozen=True):
    """A connection source outside the cluster (for ingress checks), by IP address."""

    ip: str


class ServicePort(Struct, frozen=True):
    port: int
    target_port: int | str | None = None
    protocol: str = "TCP"
    name: str = ""


class Service(Struct, frozen=True, eq=False):
    """A ClusterIP Service; ``selector=None`` is a selector-less one (e.g. default/kubernetes)."""

    namespace: str
    name: str
    cluster_ip: str | None
    ports: tuple[ServicePort, ...] = ()
    selector: Mapping[str, str] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        force_setattr(self, "labels", _frozen(self.labels))
        if self.selector is not None:
            force_setattr(self, "selector", _frozen(self.selector))


class Node(Struct, frozen=True):
    """A node, or (``external``) an API server endpoint outside the cluster (a managed control
    plane): an address in ``default/kubernetes`` that is no node."""

    name: str
    ip: str
    control_plane: bool = False
    external: bool = False


class ClusterView(Struct, frozen=True, eq=False, dict=True):
    """What the evaluator knows about the cluster at one instant.

    ``dns_records`` maps external names to addresses; an unknown name resolves to an unspecified
    public address that only a catch-all CIDR (prefix length 0) contains. ``label_filter`` is
    Cilium's identity label filter (applied to pod labels before Cilium selectors match);
    ``apiserver_unlabelled`` holds the API server backend IPs whose identity lacks the
    ``kube-apiserver`` label at this instant.
    """

    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    pods: tuple[Pod, ...] = ()
    services: tuple[Service, ...] = ()
    nodes: tuple[Node, ...] = ()
    apiserver_service_ip: str = DEFAULT_APISERVER_SERVICE_IP
    dns_service_ip: str = DEFAULT_DNS_SERVICE_IP
    dns_records: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cluster_domain: str = "cluster.local"
    label_filter: LabelFilter = DEFAULT_FILTER
    apiserver_unlabelled: frozenset[str] = frozenset()
    not_ready: frozenset[str] = frozenset()
    """Keys of pods in ``pods`` only so that policies select them (a connection's source that is
    not Ready): no Service has them as endpoints (kubernetes pkg/controller/endpointslice
    reconciler.go: only Ready addresses serve, without publishNotReadyAddresses)."""

    def __post_init__(self) -> None:
        force_setattr(
            self,
            "namespaces",
            MappingProxyType({k: _frozen(v) for k, v in self.namespaces.items()}),
        )
        force_setattr(self, "dns_records", MappingProxyType(dict(self.dns_records)))
        # Derived-value caches (pure: the view is immutable). Pods hash by identity.
        self.__dict__["_ns_cache"] = {}
        self.__dict__["_peer_cache"] = {}

    @classmethod
    def default(
        cls,
        *,
        namespaces: Mapping[str, Mapping[str, str]] | None = None,
        pods: tuple[Pod, ...] = (),
        services: tuple[Service, ...] = (),
        nodes: tuple[Node, ...] | None = None,
        dns_records: Mapping[str, tuple[str, ...]] | None = None,
    ) -> ClusterView:
        """A kubeadm/kind-shaped cluster: one control-plane node, CoreDNS, the two system Services.

        Extra namespaces, pods and services are added to the defaults.
        """
        # kubernetes-sigs/kind: the node container gets 172.18.0.x on the "kind" docker network;
        # pod CIDR 10.244.0.0/16. CoreDNS pods carry k8s-app=kube-dns and ports dns/dns-tcp/metrics
        # (kubernetes/kubernetes cmd/kubeadm/app/phases/addons/dns/manifests.go).
        node_list = (
            nodes if nodes is not None else (Node("kind-control-plane", "172.18.0.2", True),)
        )
        dns_ports = (
            ContainerPort("dns", 53, "UDP"),
            ContainerPort("dns-tcp", 53, "TCP"),
            ContainerPort("metrics", 9153, "TCP"),
        )
        node0 = node_list[0].name if node_list else None
        coredns = tuple(
            Pod(
                "kube-system",
                f"coredns-0{i}",
                {"k8s-app": "kube-dns"},
                f"10.244.0.{i + 2}",
                node0,
                dns_ports,
                "coredns",
            )
            for i in range(2)
        )
        system_services = (
            Service(
                "default",
                "kubernetes",
                DEFAULT_APISERVER_SERVICE_IP,
                (ServicePort(443, APISERVER_ENDPOINT_PORT, "TCP", "https"),),
                None,
                {"component": "apiserver", "provider": "kubernetes"},
            ),
            Service(
                "kube-system",
                "kube-dns",
                DEFAULT_DNS_SERVICE_IP,
                (
                    ServicePort(53, 53, "UDP", "dns"),
                    ServicePort(53, 53, "TCP", "dns-tcp"),
                    ServicePort(9153, 9153, "TCP", "metrics"),
                ),
                {"k8s-app": "kube-dns"},
                {"k8s-app": "kube-dns"},
            ),
        )
        ns: dict[str, Mapping[str, str]] = {
            "default": {},
            "kube-system": {},
            "kube-public": {},
            "kube-node-lease": {},
        }
        ns.update(namespaces or {})
        for p in pods:
            ns.setdefault(p.namespace, {})
        return cls(
            namespaces=ns,
            pods=coredns + tuple(pods),
            services=system_services + tuple(services),
            nodes=tuple(node_list),
            dns_records=dict(dns_records or {}),
        )

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """The namespace's labels, with ``kubernetes.io/metadata.name`` always present."""
        cache: dict[str, Mapping[str, str]] = self._ns_cache  # type: ignore[attr-defined]
        got = cache.get(namespace)
        if got is None:
            labels = dict(self.namespaces.get(namespace, {}))
            labels.setdefault(NAMESPACE_NAME_LABEL, namespace)
            got = cache[namespace] = MappingProxyType(labels)
        return got

    def service(self, namespace: str, name: str) -> Service | None:
        for s in self.services:
            if s.namespace == namespace and s.name == name:
                return s
        return None

    def control_plane_nodes(self) -> tuple[Node, ...]:
        cps = tuple(n for n in self.nodes if n.control_plane)
        return cps or self.nodes[:1]

    def apiserver_labelled(self, node: Node) -> bool:
        """Whether ``node`` serves the API server and its identity carries ``kube-apiserver``."""
        return node.control_plane and node.ip not in self.apiserver_unlabelled

    def node_by_ip(self, ip: str) -> Node | None:
        for n in self.nodes:
            if n.ip == ip:
                return n
        return None


CniType = Literal["cilium", "kubernetes", "none"]
EnforcementMode = Literal["default", "always", "never"]


class CniConfig(Struct, frozen=True):
    """Which policies are enforced, and how (the profile's ``cni`` section)."""

    type: CniType = "kubernetes"
    policy_enforcement_mode: EnforcementMode = "default"
    # cilium Helm value policyCIDRMatchMode ("" or "nodes"): CIDR/ipBlock selectors match nodes.
    policy_cidr_match_mode: str = ""
    # cilium --enable-l7-proxy (default true): needed for the DNS proxy that feeds toFQDNs.
    enable_l7_proxy: bool = True

    def __post_init__(self) -> None:
        if self.type not in ("cilium", "kubernetes", "none"):
            raise InputError(f"cni.type must be cilium, kubernetes or none, not {self.type!r}")
        if self.policy_enforcement_mode not in ("default", "always", "never"):
            raise InputError(
                "cni.policyEnforcementMode must be default, always or never, "
                f"not {self.policy_enforcement_mode!r}"
            )
        if self.policy_cidr_match_mode not in ("", "nodes"):
            raise InputError(
                "cni.policyCIDRMatchMode must be empty or 'nodes', "
                f"not {self.policy_cidr_match_mode!r}"
            )

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> CniConfig:
        """Build from a profile's ``cni:`` mapping (camelCase keys; unknown keys are ignored)."""
        mode = data.get("policyCIDRMatchMode", "")
        if isinstance(mode, list):  # the Helm value is a list in some chart versions
            mode = "nodes" if "nodes" in mode else ""
        return cls(
            type=data.get("type", "kubernetes"),
            policy_enforcement_mode=data.get("policyEnforcementMode", "default"),
            policy_cidr_match_mode=mode or "",
            enable_l7_proxy=bool(data.get("enableL7Proxy", True)),
        )


# ---- targets -------------------------------------------------------------------------------


class KubeApiServer(Struct, frozen=True):
    """The API server, dialled through the ``kubernetes`` Service ClusterIP on 443.

    ``backend`` (an endpoint IP) is the one backend the load balancer picked for this connection;
    ``None`` checks every backend (each must be allowed).
    """

    backend: str | None = None


class Dns(Struct, frozen=True):
    """The cluster DNS Service (kube-dns) on port 53; ``name`` is the name being looked up."""

    protocol: str = "UDP"
    name: str | None = None


class ServiceTarget(Struct, frozen=True):
    namespace: str
    name: str
    port: int | str


class PodsTarget(Struct, frozen=True, eq=False):
    """Pods by labels (``namespace=None``: any namespace) or one pod by ``name``, dialled."""

    namespace: str | None
    labels: Mapping[str, str] = field(default_factory=dict)
    port: int | str = 0
    protocol: str = "TCP"
    name: str | None = None

    def __post_init__(self) -> None:
        force_setattr(self, "labels", _frozen(self.labels))


class FqdnTarget(Struct, frozen=True):
    """An external name and port, e.g. api.github.com:443 (resolved through cluster DNS first)."""

    name: str
    port: int
    protocol: str = "TCP"


class IpTarget(Struct, frozen=True):
    """An IP address or a CIDR (every address in it must be reachable) and a port."""

    address: str
    port: int
    protocol: str = "TCP"


class World(Struct, frozen=True):
    """Some address outside the cluster, not named by any policy."""

    port: int = 443
    protocol: str = "TCP"


Target = KubeApiServer | Dns | ServiceTarget | PodsTarget | FqdnTarget | IpTarget | World
Source = Pod | External


class Verdict(Struct, frozen=True):
    """The answer for one connection attempt.

    ``decided_by`` names the policies that decided (``Kind namespace/name``); ``dial`` is the
    address the client dials and ``lookup`` the DNS name whose resolution failed, if that was the
    denied step; ``cause`` is ``allowed``, ``policy`` (dropped by policy: the client times out),
    ``dns-refused`` (the Cilium DNS proxy refused the name), ``no-endpoints`` or ``not-found``.
    """

    allowed: bool
    reason: str
    decided_by: tuple[str, ...] = ()
    dial: str = ""
    protocol: str = "TCP"
    lookup: str | None = None
    cause: str = "allowed"
    proxied: bool = False
    """An allowed DNS query that policy sends through the agent's DNS proxy (``rules.dns``)."""
