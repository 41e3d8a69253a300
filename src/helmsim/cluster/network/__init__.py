"""Pure network-policy evaluator: may pod P reach target T under the policies in effect?

Public API (no clock, no I/O, no globals; every input is a frozen value)::

    from helmsim.cluster.network import (
        ClusterView, CniConfig, Pod, External, PolicySet, evaluate, client_error_text,
        KubeApiServer, Dns, ServiceTarget, PodsTarget, FqdnTarget, IpTarget, World, parse_target,
    )

    cluster = ClusterView.default(pods=(job_pod,))          # kind-like: 10.96.0.1, CoreDNS ...
    cni = CniConfig.from_mapping({"type": "cilium", "policyEnforcementMode": "always"})
    policies = PolicySet.from_manifests(manifest_dicts)      # compile once, reuse per attempt
    v = evaluate(job_pod, KubeApiServer(), policies, cluster, cni)
    v.allowed, v.reason, v.decided_by                        # False, "egress to kube-apiserver
                                                             #  denied: cilium ... always ...", ()
    client_error_text(v)                                     # "dial tcp 10.96.0.1:443: i/o timeout"

``evaluate(source, target, policies, cluster, cni) -> Verdict``
    ``source``: a :class:`Pod` (its egress is checked) or :class:`External` (for ingress checks).
    ``target``: :class:`KubeApiServer`, :class:`Dns` (UDP/TCP 53, optional looked-up name),
    :class:`ServiceTarget`, :class:`PodsTarget`, :class:`FqdnTarget` (looked up through kube-dns
    first), :class:`IpTarget` (an IP, or a CIDR meaning every address in it) or :class:`World`;
    :func:`parse_target` reads the short text form (``kube-apiserver``, ``dns``,
    ``api.github.com:443``, ``service:ns/name:80`` ...).
    ``policies``: a :class:`PolicySet` or an iterable of manifest dicts (NetworkPolicy,
    CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy; other kinds are skipped).
    Services are followed to their endpoints (DNAT) before policy applies; the source's egress
    and, for pod destinations, the destination's ingress must both allow. When a target has
    several endpoints, every one must be allowed.

``Verdict``: ``allowed``, ``reason`` (one human line), ``decided_by`` (policy ids such as
``CiliumNetworkPolicy ns/name``), ``dial``/``protocol`` (what the client dialled), ``lookup``
(the DNS name, when the lookup was what failed) and ``cause``.

``client_error_text(verdict, source_ip=..., source_port=..., kubectl=False) -> str``: the
client-side error of a silently dropped connection.

Malformed policies raise :class:`helmsim.errors.InputError` naming the policy. The model, its
citations and what it leaves out are in docs/network.md.
"""

from helmsim.cluster.network.client_errors import client_error_text
from helmsim.cluster.network.evaluate import describe_target, evaluate
from helmsim.cluster.network.model import (
    ClusterView,
    CniConfig,
    ContainerPort,
    Dns,
    External,
    FqdnTarget,
    IpTarget,
    KubeApiServer,
    Node,
    Pod,
    PodsTarget,
    Service,
    ServicePort,
    ServiceTarget,
    Source,
    Target,
    Verdict,
    World,
)
from helmsim.cluster.network.policies import PolicySet
from helmsim.cluster.network.targets import parse_target

__all__ = [
    "ClusterView",
    "CniConfig",
    "ContainerPort",
    "Dns",
    "External",
    "FqdnTarget",
    "IpTarget",
    "KubeApiServer",
    "Node",
    "Pod",
    "PodsTarget",
    "PolicySet",
    "Service",
    "ServicePort",
    "ServiceTarget",
    "Source",
    "Target",
    "Verdict",
    "World",
    "client_error_text",
    "describe_target",
    "evaluate",
    "parse_target",
]
