"""Cluster profiles: what the simulated cluster is (version, APIs, CNI, storage, nodes, timing).

A profile is a YAML mapping validated by ``ClusterProfile``. ``extends:`` names a built-in profile
or a YAML file (relative to the extending file) to start from: mappings are merged key by key,
lists and scalars of the extending file replace the inherited ones. Built-ins live in
``helmsim/profiles/*.yaml``. Validation errors become ``InputError`` with the file and line of the
offending key. docs/profiles.md documents every field and its source.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal, cast

from msgspec import Struct
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from helmsim.cluster.latency import Constant, Empirical, Latency, LogNormal, Uniform, fixed
from helmsim.errors import InputError, Where, shorten
from helmsim.kube import addresses
from helmsim.kube.scope import guess_plural
from helmsim.kube.served import builtin_apis
from helmsim.yamlio import key_lines, load_one, read_text


LatencyValue = Constant | Uniform | LogNormal | Empirical


class _Model(BaseModel):
    """Strict about unknown keys and value types; camelCase keys in YAML."""

    model_config = ConfigDict(
        defer_build=True,
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
    )


# --- API capabilities ---------------------------------------------------------------------------

# "v1", "apps/v1", "apps/v1/Deployment", "v1/Pod", "cilium.io/v2alpha1/CiliumCIDRGroup"
_API_VERSION = re.compile(
    r"^(?:[a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+(?:(?:alpha|beta)[0-9]+)?(?:/[A-Z][A-Za-z0-9]*)?$"
)
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class CRD(_Model):
    """An installed CustomResourceDefinition (one served version)."""

    group: str
    version: str
    kind: str
    plural: str | None = None
    scope: Literal["Namespaced", "Cluster"]

    @field_validator("group")
    @classmethod
    def _group(cls, v: str) -> str:
        if not _DNS_SUBDOMAIN.match(v) or "." not in v:
            # apiextensions validation: spec.group must be a DNS subdomain with at least one dot
            # (kubernetes/apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go)
            raise ValueError(f"{v!r} is not a valid CRD group (a DNS subdomain with a dot)")
        return v

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not re.match(r"^v[0-9]+(?:(?:alpha|beta)[0-9]+)?$", v):
            raise ValueError(f"{v!r} is not a Kubernetes API version such as v1 or v2alpha1")
        return v

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        if not re.match(r"^[A-Z][A-Za-z0-9]*$", v):
            raise ValueError(f"{v!r} is not a Kind (CamelCase, starting with a capital letter)")
        return v

    @property
    def resource(self) -> str:
        """The plural resource name: ``plural`` or the apimachinery guess."""
        return self.plural or guess_plural(self.kind)

    @property
    def group_version(self) -> str:
        """``group/version``."""
        return f"{self.group}/{self.version}"


# --- releases and operators outside the simulation ------------------------------------------------


class UnmappedRelease(_Model):
    """A HelmRelease helmsim does not simulate (its chart is not mapped), and the CRDs its chart
    installs: served once the release is modelled Ready, so releases depending on it map their
    custom resources (``unmappedReleases`` in a profile or ``.helmsim.yaml``)."""

    chart: str | None = Field(default=None, min_length=1)
    """The HelmRelease's chart name (``spec.chart.spec.chart``, or the ``chartRef`` name)."""
    helm_release: str | None = Field(default=None, min_length=1)
    """``namespace/name`` of the HelmRelease; a glob (``*/cert-manager``)."""
    crds: list[CRD] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_selector(self) -> UnmappedRelease:
        if (self.chart is None) == (self.helm_release is None):
            raise ValueError("give exactly one of chart or helmRelease")
        return self

    def matches(self, chart: str, ref: str) -> bool:
        """This entry names the HelmRelease ``ref`` (``ns/name``) of chart ``chart``."""
        import fnmatch

        if self.chart is not None:
            return self.chart == chart
        return fnmatch.fnmatchcase(ref, self.helm_release or "")


class OperatorModel(_Model):
    """How an operator helmsim does not run makes its custom resources Ready (``operators``):
    each created (or changed) resource of ``kinds`` reads ``Ready=False`` (reason
    ``Progressing``) until ``ready`` has passed, then ``Ready=True``, or ``status`` when given
    (the resource's own conditions, read by kstatus), and ``creates`` exist. ``ready: never``
    keeps it not Ready."""

    kinds: list[str] = Field(min_length=1)
    """``group/Kind`` (``monitoring.coreos.com/Prometheus``) or a bare ``Kind`` (any group)."""
    name: str = ""
    """The operator, as reports name it (default: the first kind's)."""
    ready: float | str = 0.0
    status: dict[str, Any] | None = None
    creates: list[dict[str, Any]] = Field(default_factory=list)
    """Objects the operator creates when a resource gets Ready (e.g. cert-manager's Secret):
    ``${spec.secretName}`` in a string is that field of the resource; the namespace defaults
    to the resource's."""

    @field_validator("creates")
    @classmethod
    def _creates(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for obj in v:
            meta = obj.get("metadata")
            if not obj.get("apiVersion") or not obj.get("kind") or not isinstance(meta, dict) or not meta.get("name"):
                raise ValueError("each object needs apiVersion, kind and metadata.name")
        return v

    @field_validator("kinds")
    @classmethod
    def _kinds(cls, v: list[str]) -> list[str]:
        for item in v:
            group, _, kind = item.rpartition("/")
            if not re.match(r"^[A-Z][A-Za-z0-9]*$", kind) or (group and not _DNS_SUBDOMAIN.match(group)):
                raise ValueError(f"{item!r} is not a Kind or group/Kind (e.g. monitoring.coreos.com/Prometheus)")
        return v

    @field_validator("ready")
    @classmethod
    def _ready(cls, v: float | str) -> float | str:
        if v == "never":
            return v
        from helmsim.cluster.latency import to_seconds

        return to_seconds(v)

    @property
    def ready_after(self) -> float | None:
        """Seconds from creation to Ready; None for ``never``."""
        return None if self.ready == "never" else float(self.ready)

    @property
    def label(self) -> str:
        return self.name or f"the {self.kinds[0].rpartition('/')[2]} operator"

    def covers(self, group: str, kind: str) -> bool:
        """This model reconciles ``kind`` of API ``group``."""
        return any(k in (kind, f"{group}/{kind}") for k in self.kinds)


# --- CNI ----------------------------------------------------------------------------------------


class CNI(_Model):
    """The network plugin and how it enforces policies."""

    # cilium: CiliumNetworkPolicy/CCNP and NetworkPolicy enforced by Cilium;
    # kubernetes: NetworkPolicy enforced (kindnet + kube-network-policies, VPC CNI agent, ...);
    # none: no policy enforcement at all (policies are accepted by the API server and ignored).
    type: Literal["cilium", "kubernetes", "none"] = "kubernetes"
    # cilium/cilium Documentation/security/policy/intro.rst: default | always | never.
    policy_enforcement_mode: Literal["default", "always", "never"] = "default"
    # Time from a policy's creation until it is enforced on the selected endpoints.
    # cilium/cilium pkg/metrics/metrics.go policy_implementation_delay has no documented bound;
    # U(0.1 s, 2 s) is the reference's UNVERIFIED simulator guidance (runtime reference §5.5).
    policy_propagation_seconds: Latency = Field(
        default_factory=lambda: Uniform(dist="uniform", min=0.1, max=2.0)
    )
    # How much longer the CNI ADD of a pod whose label set has no Cilium identity yet takes: the
    # agent resolves the identity inside the call (cilium/cilium pkg/endpoint/endpoint.go
    # runIdentityResolver, "Resolving identity labels (blocking)"), so the pod starts later; it
    # is not a window of dropped packets. identity-max-jitter defaults to 30 s (UNVERIFIED how
    # much of it a new pod waits).
    identity_allocation_seconds: Latency = Field(default_factory=lambda: fixed(0.0))
    # Helm policyCIDRMatchMode / agent --policy-cidr-match-mode: "nodes" lets CIDR rules
    # match node IPs (cilium/cilium Documentation/security/policy/layer3.rst).
    policy_cidr_match_mode: Literal["", "nodes"] = Field(default="", alias="policyCIDRMatchMode")
    # The agent's identity label filter (Helm value / agent option ``labels``): prefixes added to
    # the defaults of cilium/cilium pkg/labelsfilter/filter.go; "!" ignores, an inclusive prefix
    # makes the filter a whitelist. Applied before policy selectors match.
    identity_labels: list[str] = Field(default_factory=list)
    # --enable-l7-proxy (default true): the DNS proxy that feeds toFQDNs needs it
    # (cilium/cilium pkg/option/config.go EnableL7Proxy).
    enable_l7_proxy: bool = Field(default=True, alias="enableL7Proxy")
    # Recorded for the reader; the simulation's service translation is the same either way
    # (kubeProxyReplacement: socket-level load balancing picks one backend per connection).
    kube_proxy_replacement: bool = False
    # identity-allocation-mode: crd (CiliumIdentity objects) or kvstore (cilium/cilium
    # pkg/option/config.go IdentityAllocationMode). Recorded; allocation time is
    # identityAllocationSeconds.
    identity_allocation_mode: Literal["crd", "kvstore"] = "crd"

    @model_validator(mode="after")
    def _cilium_only(self) -> CNI:
        if self.type != "cilium":
            if self.policy_enforcement_mode != "default":
                raise ValueError(
                    "policyEnforcementMode applies only to cni.type cilium; "
                    f"use type none for no enforcement (got type {self.type})"
                )
            if self.policy_cidr_match_mode:
                raise ValueError("policyCIDRMatchMode applies only to cni.type cilium")
            if self.identity_labels:
                raise ValueError("identityLabels applies only to cni.type cilium")
        if self.identity_labels:
            from helmsim.cluster.network.labelfilter import LabelFilter

            try:
                LabelFilter.build(self.identity_labels)
            except InputError as err:
                raise ValueError(err.message.removeprefix(": ")) from None
        return self

    @property
    def enforces_policies(self) -> bool:
        """Whether NetworkPolicies (and, for Cilium, its policies) are enforced at all."""
        return self.type != "none" and self.policy_enforcement_mode != "never"


# --- Storage ------------------------------------------------------------------------------------


class StorageClass(_Model):
    """A StorageClass (storage.k8s.io/v1); field defaults are the API defaults."""

    name: str
    provisioner: str
    # kubernetes/api storage/v1/types.go: volumeBindingMode defaults to Immediate.
    volume_binding_mode: Literal["Immediate", "WaitForFirstConsumer"] = "Immediate"
    allow_volume_expansion: bool = False
    # storageclass.kubernetes.io/is-default-class: "true"
    default: bool = False
    # kubernetes/api storage/v1/types.go: reclaimPolicy defaults to Delete.
    reclaim_policy: Literal["Delete", "Retain"] = "Delete"
    parameters: dict[str, str] = Field(default_factory=dict)


# --- Nodes --------------------------------------------------------------------------------------

ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"


class Taint(_Model):
    """A node taint."""

    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Node(_Model):
    """A node. The kubelet's own labels are filled in when absent."""

    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    zone: str | None = None
    internal_ip: str | None = Field(default=None, alias="internalIP")
    # Node status.allocatable: resource name → quantity ({cpu: "4", memory: 16Gi, pods: "110"}).
    allocatable: dict[str, str] = Field(default_factory=dict)

    @field_validator("internal_ip")
    @classmethod
    def _ip(cls, v: str | None) -> str | None:
        if v is not None:
            ipaddress.ip_address(v)
        return v

    @model_validator(mode="after")
    def _kubelet_labels(self) -> Node:
        labels = dict(self.labels)
        # kubernetes/kubernetes pkg/kubelet/kubelet_node_status.go initialNode: the kubelet sets
        # kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch on its Node.
        labels.setdefault(HOSTNAME_LABEL, self.name)
        labels.setdefault("kubernetes.io/os", "linux")
        labels.setdefault("kubernetes.io/arch", "amd64")
        if self.zone is not None:
            if labels.get(ZONE_LABEL, self.zone) != self.zone:
                raise ValueError(
                    f"zone {self.zone!r} disagrees with label {ZONE_LABEL}={labels[ZONE_LABEL]!r}"
                )
            labels[ZONE_LABEL] = self.zone
        object.__setattr__(self, "labels", labels)
        if self.zone is None and ZONE_LABEL in labels:
            object.__setattr__(self, "zone", labels[ZONE_LABEL])
        return self


# --- Timing -------------------------------------------------------------------------------------


class Latencies(_Model):
    """How long the cluster takes for each step. Defaults and their sources: docs/profiles.md."""

    api_write: Latency = Field(default_factory=lambda: fixed(0.01))
    controller_sync: Latency = Field(default_factory=lambda: fixed(0.05))
    scheduling: Latency = Field(default_factory=lambda: fixed(0.1))
    image_pull: Latency = Field(default_factory=lambda: fixed(2.0))
    container_start: Latency = Field(default_factory=lambda: fixed(0.5))
    pod_deletion_grace: Latency = Field(default_factory=lambda: fixed(1.0))
    volume_provisioning: Latency = Field(default_factory=lambda: fixed(2.0))
    volume_attach: Latency = Field(default_factory=lambda: fixed(0.0))
    crd_establish: Latency = Field(default_factory=lambda: fixed(1.0))
    endpoint_regeneration: Latency = Field(default_factory=lambda: fixed(0.5))
    load_balancer_provisioning: Latency = Field(default_factory=lambda: fixed(5.0))
    """From a LoadBalancer Service's creation to its ``status.loadBalancer.ingress`` (with a
    ``loadBalancer`` controller in the profile)."""

    # The CNI's latencies, visible here too so every latency is reachable by one name
    # (set by ClusterProfile from its ``cni`` section).
    _cni: CNI | None = PrivateAttr(default=None)

    @property
    def policy_propagation(self) -> LatencyValue:
        """``cni.policyPropagationSeconds``."""
        return (self._cni or CNI()).policy_propagation_seconds

    @property
    def identity_allocation(self) -> LatencyValue:
        """``cni.identityAllocationSeconds``."""
        return (self._cni or CNI()).identity_allocation_seconds


# --- Addressing ---------------------------------------------------------------------------------


def _host_port(v: str) -> tuple[str, int]:
    host, sep, port = v.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{v!r} is not host:port")
    ipaddress.ip_address(host.strip("[]"))
    return host.strip("[]"), int(port)


class Addressing(_Model):
    """Cluster addresses. Defaults: kubeadm's (cmd/kubeadm/app/apis/kubeadm/v1beta4/defaults.go)."""

    service_cidr: str = Field(default=addresses.SERVICE_CIDR, alias="serviceCIDR")
    pod_cidr: str = Field(default=addresses.POD_CIDR, alias="podCIDR")
    apiserver_cluster_ip: str = Field(default=addresses.APISERVER_CLUSTER_IP, alias="apiserverClusterIP")
    apiserver_endpoint: str = addresses.APISERVER_ENDPOINT
    # Several API server endpoints (an HA control plane: each control-plane node's IP:6443, as
    # kube-apiserver's endpoint reconciler publishes them in default/kubernetes); empty: just
    # ``apiserverEndpoint``. Endpoints on node IPs place the API server on those nodes; others
    # place it outside the cluster (a managed control plane).
    apiserver_endpoints: list[str] = Field(default_factory=list)
    kube_dns_cluster_ip: str = Field(default=addresses.KUBE_DNS_CLUSTER_IP, alias="kubeDNSClusterIP")
    cluster_domain: str = addresses.CLUSTER_DOMAIN

    @field_validator("service_cidr", "pod_cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        ipaddress.ip_network(v, strict=True)
        return v

    @field_validator("apiserver_cluster_ip", "kube_dns_cluster_ip")
    @classmethod
    def _ip(cls, v: str) -> str:
        ipaddress.ip_address(v)
        return v

    @field_validator("apiserver_endpoint")
    @classmethod
    def _endpoint(cls, v: str) -> str:
        _host_port(v)
        return v

    @field_validator("apiserver_endpoints")
    @classmethod
    def _endpoints(cls, v: list[str]) -> list[str]:
        for item in v:
            _host_port(item)
        return v

    @property
    def apiserver_backends(self) -> list[tuple[str, int]]:
        """Every API server endpoint as (host, port): ``apiserverEndpoints`` or the one."""
        return [_host_port(e) for e in (self.apiserver_endpoints or [self.apiserver_endpoint])]

    @model_validator(mode="after")
    def _in_subnet(self) -> Addressing:
        net = ipaddress.ip_network(self.service_cidr)
        for field, ip in (
            ("apiserverClusterIP", self.apiserver_cluster_ip),
            ("kubeDNSClusterIP", self.kube_dns_cluster_ip),
        ):
            if ipaddress.ip_address(ip) not in net:
                raise ValueError(f"{field} {ip} is not inside serviceCIDR {self.service_cidr}")
        return self

    @property
    def apiserver_host(self) -> str:
        """Host part of ``apiserverEndpoint``."""
        return _host_port(self.apiserver_endpoint)[0]

    @property
    def apiserver_port(self) -> int:
        """Port of ``apiserverEndpoint`` (what policies see after the ClusterIP is translated)."""
        return _host_port(self.apiserver_endpoint)[1]


# --- The profile --------------------------------------------------------------------------------

_KUBE_VERSION = re.compile(r"^v?[0-9]+\.[0-9]+(\.[0-9]+)?([-+][0-9A-Za-z.+-]+)?$")


def addressing_of(profile: Any) -> Addressing:
    """``profile``'s addresses; kubeadm's defaults for a profile without any (test doubles)."""
    found = getattr(profile, "addressing", None)
    return Addressing() if found is None else cast(Addressing, found)


class FluxSettings(_Model):
    """The Flux controllers' flags on this cluster."""

    # fluxcd/helm-controller main.go --default-service-account (and kustomize-controller's):
    # the account impersonated for a HelmRelease or Kustomization without serviceAccountName
    default_service_account: str | None = None


class PodSecurityDefaults(_Model):
    """The API server's Pod Security defaults for namespaces without labels."""

    # pod-security-admission admission/api/v1 defaults.go: privileged:latest unless configured
    enforce: Literal["privileged", "baseline", "restricted"] = "privileged"
    enforce_version: str = Field(default="latest", pattern=r"^(latest|v1\.(0|[1-9][0-9]*))$")


class PodSecurityExemptions(_Model):
    """Requests Pod Security admission never evaluates (PodSecurityConfiguration exemptions)."""

    namespaces: list[str] = Field(default_factory=list)
    runtime_classes: list[str] = Field(default_factory=list)


class PodSecurity(_Model):
    """The API server's PodSecurity plugin configuration (its AdmissionConfiguration file:
    not readable through the API, so ``profiles import`` cannot see it)."""

    defaults: PodSecurityDefaults = Field(default_factory=lambda: PodSecurityDefaults())
    exemptions: PodSecurityExemptions = Field(default_factory=lambda: PodSecurityExemptions())


class Images(_Model):
    """What the nodes can pull or already hold beyond helmsim's knowledge of public registries
    (helmsim.cluster.registries): patterns over normalised image names, ``*`` any run of
    characters (``docker.io/bitnami/*``, ``bitnami/*`` is the same)."""

    pullable: list[str] = Field(default_factory=list)
    """Images the nodes can pull even where a public registry withdrew them: a registry mirror
    or pull-through cache that still holds them (containerd's hosts.toml, a Harbor proxy)."""
    present: list[str] = Field(default_factory=list)
    """Images already on every node (``kind load docker-image``, a node image that bakes them
    in): a pull under ``IfNotPresent`` or ``Never`` finds them; ``Always`` still pulls."""


class ClusterProfile(_Model):
    """A simulated cluster. Load with ``load_profile``; fields documented in docs/profiles.md."""

    name: str = Field(min_length=1)
    description: str = ""
    extends: str | None = None
    kubernetes_version: str = "1.31.0"
    api_versions: list[str] = Field(default_factory=list)
    crds: list[CRD] = Field(default_factory=list)
    cni: CNI = Field(default_factory=CNI)
    storage_classes: list[StorageClass] = Field(default_factory=list)
    nodes: list[Node] = Field(min_length=1)
    latencies: Latencies = Field(default_factory=Latencies)
    # kubernetes/kubernetes pkg/controller/job/job_controller.go: DefaultJobPodFailureBackOff
    # = 10 s, MaxJobPodFailureBackOff = 10 min; older controllers capped at MaxJobBackOff = 360 s.
    job_backoff_initial_seconds: float = Field(default=10.0, ge=0)
    job_backoff_cap_seconds: float = Field(default=600.0, ge=0)
    # kubernetes/kubernetes pkg/kubelet/kubelet.go: backOffPeriod = 10 s,
    # MaxContainerBackOff = 300 s (CrashLoopBackOff and image pull back-off).
    kubelet_backoff_initial_seconds: float = Field(default=10.0, ge=0)
    kubelet_backoff_cap_seconds: float = Field(default=300.0, ge=0)
    addressing: Addressing = Field(default_factory=Addressing)
    kubelet_serving_certificates: Literal["self-signed", "cluster-ca"] = "cluster-ca"
    """How the kubelets' serving certificates are signed: ``self-signed`` (kubeadm's default:
    kind, Cluster API's kubeadm bootstrap), or by the cluster's CA (managed clusters, k3s), so a
    client that verifies them (metrics-server) can reach the kubelets."""
    metadata_server: Literal["none", "gce"] = "none"
    """What answers a pod at the link-local metadata address: ``gce``, the GKE metadata server
    (GKE docs, concepts/workload-identity: it serves every pod, giving the node's or the bound
    Google service account's credentials), so Google's Application Default Credentials are found
    without a key file (golang.org/x/oauth2 google/default.go FindDefaultCredentials:
    metadata.OnGCE); ``none`` off Google Cloud."""
    load_balancer: Literal["none", "hostname", "ip"] = "none"
    """What fills a LoadBalancer Service's ``status.loadBalancer.ingress``: ``none`` (kind and a
    bare cluster: nothing, EXTERNAL-IP stays <pending>), or a controller (the cloud provider's
    service controller, the AWS Load Balancer Controller, MetalLB, k3s's ServiceLB) that writes a
    ``hostname`` (AWS ELB) or an ``ip`` after ``latencies.loadBalancerProvisioning``."""
    # Policies the platform installed before any release (e.g. the baseline a cluster in Cilium
    # "always" mode needs so CoreDNS accepts queries). Created at t=0 and in effect from the start.
    cluster_policies: list[dict[str, Any]] = Field(default_factory=list)
    objects: list[dict[str, Any]] = Field(default_factory=list)
    """Other objects the platform holds before any release (the APIService a managed
    metrics-server registers), created at t=0; a release object of the same kind and name is
    then not Helm's to take (helm/helm pkg/action/validate.go checkOwnership)."""
    # Roles, ClusterRoles and bindings the platform holds beside the API server's defaults
    # (helmsim.kube.rbac): what an impersonated tenant is authorized by (docs/flux.md).
    rbac: list[dict[str, Any]] = Field(default_factory=list)
    flux: FluxSettings = Field(default_factory=lambda: FluxSettings())
    admission_policies: list[Literal["gke-autopilot"]] = Field(default_factory=list)
    """Admission the managed platform adds to the API server's (``gke-autopilot``: Autopilot's
    Warden constraints, helmsim.cluster.warden)."""
    pod_security: PodSecurity = Field(default_factory=lambda: PodSecurity())
    """Pod Security admission's cluster defaults and exemptions; a namespace's
    ``pod-security.kubernetes.io/enforce`` label overrides the default (docs/profiles.md)."""
    unmapped_releases: list[UnmappedRelease] = Field(default_factory=list)
    """CRDs that HelmReleases helmsim does not simulate install (docs/profiles.md)."""
    operators: list[OperatorModel] = Field(default_factory=list)
    """Models of operators that reconcile custom resources (docs/profiles.md)."""
    images: Images = Field(default_factory=lambda: Images())
    """What the nodes can pull or hold beyond the public registries (docs/profiles.md)."""

    _sources: tuple[str, ...] = PrivateAttr(default=())

    @field_validator("objects")
    @classmethod
    def _objects(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for obj in v:
            if not isinstance(obj.get("apiVersion"), str) or not isinstance(obj.get("kind"), str):
                raise ValueError("each object needs apiVersion and kind")
            if not isinstance(obj.get("metadata"), dict) or not obj["metadata"].get("name"):
                raise ValueError("each object needs metadata.name")
        return v

    @field_validator("kubernetes_version")
    @classmethod
    def _kube_version(cls, v: str) -> str:
        if not _KUBE_VERSION.match(v):
            raise ValueError(f"{v!r} is not a Kubernetes version such as 1.31.0")
        return v

    @field_validator("api_versions")
    @classmethod
    def _api_versions(cls, v: list[str]) -> list[str]:
        for item in v:
            if not _API_VERSION.match(item):
                raise ValueError(
                    f"{item!r} is not group/version or group/version/Kind (e.g. cilium.io/v2)"
                )
        return v

    @model_validator(mode="after")
    def _link_cni_latencies(self) -> ClusterProfile:
        self.latencies._cni = self.cni
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> ClusterProfile:
        for what, names in (
            ("storageClasses", [c.name for c in self.storage_classes]),
            ("nodes", [n.name for n in self.nodes]),
            ("crds", [f"{c.resource}.{c.group}/{c.version}" for c in self.crds]),
        ):
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValueError(f"{what}: duplicate name {dup[0]!r}")
        return self

    # --- derived views ---------------------------------------------------------------------------

    @property
    def sources(self) -> tuple[str, ...]:
        """Where the profile came from, base first (built-in names and file paths)."""
        return self._sources

    def latency(self, name: str) -> LatencyValue:
        """A latency by snake_case or YAML name (``image_pull``, ``imagePull``).

        Covers every ``latencies`` field plus ``policy_propagation`` and ``identity_allocation``
        (from ``cni``). Unknown names raise ``KeyError``.
        """
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().removesuffix("_seconds")
        if snake in Latencies.model_fields:
            return getattr(self.latencies, snake)  # type: ignore[no-any-return]
        if snake in ("policy_propagation", "identity_allocation"):
            return getattr(self.cni, f"{snake}_seconds")  # type: ignore[no-any-return]
        raise KeyError(f"the cluster profile has no latency {name!r}")

    def helm_api_versions(self) -> list[str]:
        """Extra API versions for Helm's ``.Capabilities.APIVersions`` (added to Helm's defaults).

        ``apiVersions`` first, then for each CRD ``group/version`` and ``group/version/Kind``,
        without duplicates (helm/helm pkg/chart/common/capabilities.go: VersionSet.Has matches
        both forms).
        """
        out: dict[str, None] = dict.fromkeys(self.api_versions)
        for crd in self.crds:
            out.setdefault(crd.group_version, None)
            out.setdefault(f"{crd.group_version}/{crd.kind}", None)
        return list(out)

    def capability_api_versions(self, kube_version: str | None = None) -> list[str]:
        """``.Capabilities.APIVersions`` as Helm sees this cluster: ``helm_api_versions`` plus
        every built-in group/version and group/version/Kind its Kubernetes version serves
        (helm/helm pkg/action/action.go GetVersionSet reads them from discovery;
        ``helmsim.kube.served``; ``kube_version`` overrides the profile's). Helm's engine adds them
        to its own default set."""
        out: dict[str, None] = dict.fromkeys(self.helm_api_versions())
        for entry in builtin_apis(kube_version or self.kubernetes_version).capability_entries():
            out.setdefault(entry, None)
        return list(out)

    def storage_class(self, name: str) -> StorageClass | None:
        """The class called ``name``, if installed."""
        return next((c for c in self.storage_classes if c.name == name), None)

    def default_storage_classes(self) -> list[StorageClass]:
        """Every class marked default, in list (creation) order."""
        return [c for c in self.storage_classes if c.default]

    def default_storage_class(self) -> StorageClass | None:
        """The class a PVC without ``storageClassName`` gets.

        kubernetes/kubernetes pkg/volume/util/storageclass.go GetDefaultClass (≥ 1.26): with
        several defaults the newest wins; the list order is creation order, so the last listed.
        Before 1.26 several defaults made such PVCs forbidden; that is the simulator's concern.
        """
        defaults = self.default_storage_classes()
        return defaults[-1] if defaults else None

    def crd(self, group: str, kind: str) -> CRD | None:
        """The installed CRD serving ``kind`` in ``group``, if any."""
        return next((c for c in self.crds if c.group == group and c.kind == kind), None)

    def to_data(self) -> dict[str, Any]:
        """The resolved profile as plain data with YAML key names (``extends`` dropped)."""
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        data.pop("extends", None)
        return data


# --- Loading ------------------------------------------------------------------------------------

_BUILTIN_PACKAGE = "helmsim"
_BUILTIN_DIR = "profiles"
_Path = tuple[Any, ...]


class _Source(Struct, frozen=True):
    """One parsed profile document: its data and where each key is (path → line)."""

    label: str
    data: dict[str, Any]
    lines: dict[_Path, int]
    base_dir: Path | None
    ident: str


def _builtin_files() -> dict[str, Any]:
    root = resources.files(_BUILTIN_PACKAGE).joinpath(_BUILTIN_DIR)
    out: dict[str, Any] = {}
    if root.is_dir():
        for entry in root.iterdir():
            if entry.name.endswith(".yaml") and entry.is_file():
                out[entry.name[: -len(".yaml")]] = entry
    return dict(sorted(out.items()))


def builtin_names() -> list[str]:
    """Names of the built-in profiles, sorted."""
    return list(_builtin_files())


def list_profiles() -> list[tuple[str, str]]:
    """``(name, description)`` of every built-in profile, sorted by name."""
    return [(name, load_profile(name).description) for name in builtin_names()]


def load_profile(name_or_path: str) -> ClusterProfile:
    """Load a built-in profile by name or a profile YAML file, with ``extends`` resolved."""
    if isinstance(name_or_path, str) and not _looks_like_path(name_or_path) and name_or_path in _builtin_files():
        return cached_builtin_profile(name_or_path)
    source = _open(name_or_path, base_dir=None, referrer=None)
    return _resolve(source)


def cached_builtin_profile(name: str, *, write: bool | None = None) -> ClusterProfile:
    """The built-in profile ``name`` resolved, read from the validated copy
    :mod:`helmsim.builtin_cache` keeps while the built-in files are unchanged (``extends`` may
    name any of them); ``write``: see builtin_cache.load."""
    from helmsim import builtin_cache

    files = _builtin_files()
    return builtin_cache.load(
        f"profile-{name}",
        [name.encode(), *(part for n, entry in files.items() for part in (n.encode(), entry.read_bytes()))],
        lambda: _resolve(_open(name, base_dir=None, referrer=None)),
        lambda v: isinstance(v, ClusterProfile) and v.name == name,
        write=write,
    )


def profile_from_mapping(
    data: Mapping[str, Any], *, source: str, base_dir: Path | None = None
) -> ClusterProfile:
    """Validate an in-memory profile (e.g. inline in a scenario), resolving its ``extends``.

    Errors name ``source`` without a line; relative ``extends`` paths resolve from ``base_dir``;
    without ``name`` the profile is named after ``source`` (its file name without extension).
    """
    if not isinstance(data, Mapping):
        raise InputError("a cluster profile must be a mapping", file=source)
    src = _Source(source, dict(data), {}, base_dir, f"inline:{source}")
    return _resolve(src)


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or "\\" in ref or ref.endswith((".yaml", ".yml")) or ref.startswith(".")


def _open(ref: str, *, base_dir: Path | None, referrer: tuple[str, int | None] | None) -> _Source:
    builtins = _builtin_files()
    where: Where = {"file": referrer[0], "line": referrer[1]} if referrer else {}
    if not isinstance(ref, str) or not ref:
        raise InputError("a profile reference must be a non-empty string", **where)
    if not _looks_like_path(ref) and ref in builtins:
        entry = builtins[ref]
        label = f"{_BUILTIN_DIR}/{ref}.yaml"
        return _parse(entry.read_text(encoding="utf-8"), label, None, f"builtin:{ref}")
    path = Path(ref)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    try:
        found = path.is_file()
    except OSError as err:  # a name past NAME_MAX, a symlink loop: no such profile either
        raise InputError(f"profile {shorten(ref)!r}: {err.strerror or err}", **where) from None
    if not found:
        if _looks_like_path(ref):
            raise InputError(f"profile file {ref!r} not found ({path})", **where)
        names = ", ".join(builtins) or "none"
        raise InputError(
            f"unknown profile {ref!r}: not a built-in ({names}) and no such file", **where
        )
    text = read_text(path, "profile")
    return _parse(text, str(path), path.resolve().parent, str(path.resolve()))


def _parse(text: str, label: str, base_dir: Path | None, ident: str) -> _Source:
    data = load_one(text, label)
    if data is None:
        raise InputError("the profile is empty", file=label, line=1)
    if not isinstance(data, dict):
        raise InputError("a cluster profile must be a YAML mapping", file=label, line=1)
    return _Source(label, data, key_lines(text), base_dir, ident)


def _resolve(leaf: _Source) -> ClusterProfile:
    chain = _chain(leaf)  # base first
    data: dict[str, Any] = {}
    origins = _Origins()
    for src in chain:
        data = _merge(data, src.data)
        _merge_origins(origins, src, src.data, ())
    if "name" not in leaf.data and not leaf.ident.startswith("builtin:"):
        data["name"] = Path(leaf.label).stem  # a file (or inline source) names its profile
    try:
        profile = ClusterProfile.model_validate(data)
    except ValidationError as err:
        raise _input_error(err, origins, leaf.label) from None
    profile._sources = tuple(s.label if s.base_dir else s.ident.split(":", 1)[1] for s in chain)
    return profile


def _chain(leaf: _Source) -> list[_Source]:
    chain = [leaf]
    seen = {leaf.ident: leaf.label}
    current = leaf
    while "extends" in current.data and current.data["extends"] is not None:
        ref = current.data["extends"]
        line = current.lines.get(("extends",))
        if not isinstance(ref, str):
            raise InputError(
                "extends: expected a built-in profile name or a file path",
                file=current.label,
                line=line,
            )
        parent = _open(ref, base_dir=current.base_dir, referrer=(current.label, line))
        if parent.ident in seen:
            loop = " -> ".join([*(s.label for s in chain), parent.label])
            raise InputError(f"extends: cycle {loop}", file=current.label, line=line)
        seen[parent.ident] = parent.label
        chain.append(parent)
        current = parent
    chain.reverse()
    return chain


def _is_leaf_mapping(value: Any) -> bool:
    """A latency distribution (``{dist: ...}``) is one value: replaced whole, never merged."""
    return isinstance(value, dict) and "dist" in value


def _merge(base: Any, override: Any) -> Any:
    """Deep-merge mappings; lists, scalars and distributions in ``override`` replace ``base``."""
    if isinstance(base, dict) and isinstance(override, dict) and not _is_leaf_mapping(override):
        out = dict(base)
        for key, value in override.items():
            out[key] = _merge(base.get(key), value) if key in base else value
        return out
    return override


class _Origins:
    """Where each key path of the merged profile comes from (file, line), kept as a trie: a
    value that replaces a subtree drops everything under it in one step, so recording the
    origins of a chain of profiles is linear in their size."""

    def __init__(self) -> None:
        self._root: list[Any] = [None, {}]  # [origin, children by key]

    def _node(self, path: _Path, *, create: bool) -> list[Any] | None:
        node = self._root
        for part in path:
            children = node[1]
            if part not in children:
                if not create:
                    return None
                children[part] = [None, {}]
            node = children[part]
        return node

    def __contains__(self, path: _Path) -> bool:
        node = self._node(path, create=False)
        return node is not None and node[0] is not None

    def get(self, path: _Path, default: tuple[str, int | None]) -> tuple[str, int | None]:
        node = self._node(path, create=False)
        return node[0] if node is not None and node[0] is not None else default


def _merge_origins(origins: _Origins, src: _Source, value: Any, path: _Path) -> None:
    """Record ``src`` as the origin of every key path of ``value`` (at ``path``)."""
    start = origins._node(path, create=True)
    assert start is not None
    stack: list[tuple[Any, _Path, list[Any]]] = [(value, path, start)]
    while stack:
        item, at, node = stack.pop()
        if at:
            node[0] = (src.label, src.lines.get(at))
            if not isinstance(item, dict) or _is_leaf_mapping(item):
                node[1] = {}  # a replaced value: nothing under it comes from an earlier file
        if isinstance(item, dict):
            entries: Any = item.items()
        elif isinstance(item, list):
            entries = enumerate(item)
        else:
            continue
        children = node[1]
        for key, sub in entries:
            child = children.get(key)
            if child is None:
                child = children[key] = [None, {}]
            stack.append((sub, (*at, key), child))


def _input_error(
    err: ValidationError, origins: _Origins, leaf_label: str
) -> InputError:
    """The first validation error as ``InputError`` with the file and line of its key."""
    first = err.errors(include_url=False)[0]
    loc = tuple(first["loc"])
    matched: _Path = ()
    for part in loc:  # skip pydantic's union tags, which are not YAML keys
        if (*matched, part) in origins:
            matched = (*matched, part)
    shown = list(matched)
    if first["type"] == "missing" and loc and loc[-1] not in matched:
        shown.append(loc[-1])
    file, line = origins.get(matched, (leaf_label, None)) if matched else (leaf_label, None)
    msg = first["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    if first["type"] in ("string_type", "literal_error") and isinstance(first.get("input"), bool):
        # go-yaml v2 reads y/yes/on/true as booleans, as Kubernetes does (helmsim.yamlio)
        msg += f" (got the boolean {str(first['input']).lower()}; quote the value)"
    where = _format_path(shown)
    return InputError(f"{where}: {msg}" if where else msg, file=file, line=line)


def _format_path(parts: list[Any]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def iter_latencies(profile: ClusterProfile) -> Iterator[tuple[str, LatencyValue]]:
    """``(YAML path, latency)`` for every latency of the profile, the CNI's included."""
    for field, info in Latencies.model_fields.items():
        yield f"latencies.{info.alias or field}", getattr(profile.latencies, field)
    yield "cni.policyPropagationSeconds", profile.cni.policy_propagation_seconds
    yield "cni.identityAllocationSeconds", profile.cni.identity_allocation_seconds
