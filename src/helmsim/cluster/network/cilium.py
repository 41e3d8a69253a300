"""CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy (cilium.io/v2): compile and match.

Sources: cilium/cilium pkg/policy/api/{rule,egress,ingress,l4,fqdn,service,entity}.go,
pkg/k8s/apis/cilium.io/utils/utils.go (namespace scoping of selectors), pkg/policy/repository.go
(default-deny per direction) and Documentation/security/policy/{intro,layer3,layer4,kubernetes}.rst.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from helmsim.cluster.network.flows import (
    CILIUM_NS_LABEL,
    CILIUM_NS_LABELS_PREFIX,
    CidrBlock,
    Peer,
    PortSpec,
    compile_cidr,
    parse_ip,
    parse_port_number,
)
from helmsim.cluster.network.model import ClusterView, CniConfig
from helmsim.cluster.network.selectors import (
    RESERVED_PREFIX,
    Requirement,
    Selector,
    compile_selector,
    labels_selector,
)
from helmsim.errors import InputError

CNP = "CiliumNetworkPolicy"
CCNP = "CiliumClusterwideNetworkPolicy"

# Documentation/security/policy/layer3.rst "Entities based".
ENTITIES = frozenset(
    {
        "host",
        "remote-node",
        "kube-apiserver",
        "ingress",
        "cluster",
        "init",
        "health",
        "unmanaged",
        "world",
        "world-ipv4",
        "world-ipv6",
        "all",
    }
)


class FqdnMatcher(Struct, frozen=True):
    text: str
    regex: re.Pattern[str]

    def matches(self, name: str) -> bool:
        return bool(self.regex.fullmatch(name.lower().rstrip(".")))


def compile_fqdn(item: Any, where: str) -> FqdnMatcher:
    """``matchName`` (exact) or ``matchPattern`` (``*`` within one label, ``**.`` any depth)."""
    if not isinstance(item, Mapping):
        raise InputError(f"{where} must be a mapping")
    name, pattern = item.get("matchName"), item.get("matchPattern")
    if name:
        text = str(name).lower().rstrip(".")
        return FqdnMatcher(f"matchName {text}", re.compile(re.escape(text)))
    if pattern:
        # layer3.rst "DNS based": "*" alone matches all names; "*" inside a name matches 0 or more
        # DNS characters but not "."; the "**." prefix matches any depth of subdomains.
        text = str(pattern).lower().rstrip(".")
        if text == "*":
            rx = r".*"
        else:
            prefix = ""
            if text.startswith("**."):
                prefix, text = r"(?:[-a-z0-9_]+\.)+", text[3:]
            rx = prefix + "".join(r"[-a-z0-9_]*" if c == "*" else re.escape(c) for c in text)
        return FqdnMatcher(f"matchPattern {pattern}", re.compile(rx))
    raise InputError(f"{where}: needs matchName or matchPattern")


class CiliumPortRule(Struct, frozen=True):
    ports: tuple[PortSpec, ...]  # empty: every port
    dns: tuple[FqdnMatcher, ...] | None  # rules.dns, if any
    l7: bool  # has any L7 rules (dns/http/kafka/l7)


class ServiceRef(Struct, frozen=True):
    namespace: str | None
    name: str | None
    selector: Selector | None


class CiliumRule(Struct, frozen=True):
    index: int
    endpoints: tuple[Selector, ...] | None
    entities: tuple[str, ...] | None
    cidrs: tuple[CidrBlock, ...] | None
    services: tuple[ServiceRef, ...] | None
    fqdns: tuple[FqdnMatcher, ...] | None
    unsupported: tuple[str, ...]  # toNodes/toGroups/cidrGroupRef...: match nothing here
    port_rules: tuple[CiliumPortRule, ...]

    @property
    def has_l3(self) -> bool:
        return not (
            self.endpoints is None
            and self.entities is None
            and self.cidrs is None
            and self.services is None
            and self.fqdns is None
            and not self.unsupported
        )


class CiliumPolicy(Struct, frozen=True):
    id: str
    where: str  # "" or "specs[2] " (which rule of a multi-spec CNP)
    namespace: str | None  # None for clusterwide
    subject: Selector | None  # None: a nodeSelector (host) policy, which selects no pod
    ingress: tuple[CiliumRule, ...]
    ingress_deny: tuple[CiliumRule, ...]
    egress: tuple[CiliumRule, ...]
    egress_deny: tuple[CiliumRule, ...]
    default_deny: Mapping[str, bool]
    has_section: Mapping[str, bool]

    def selects(self, peer: Peer) -> bool:
        return (
            self.subject is not None
            and peer.kind == "pod"
            and self.subject.matches(peer.cilium_labels)
        )

    def allow_rules(self, direction: str) -> tuple[CiliumRule, ...]:
        return self.egress if direction == "egress" else self.ingress

    def deny_rules(self, direction: str) -> tuple[CiliumRule, ...]:
        return self.egress_deny if direction == "egress" else self.ingress_deny


def _scoped_selector(spec: Any, namespace: str | None, where: str) -> Selector:
    sel = compile_selector(spec, cilium=True, where=where)
    keys = sel.keys()
    # utils.go getEndpointSelector: a selector naming a reserved: label is left alone.
    if any(k.startswith(RESERVED_PREFIX) for k in keys):
        return sel
    if namespace is not None:
        # kubernetes.rst: io.cilium.k8s.namespace.labels is ignored in a CiliumNetworkPolicy.
        sel = sel.without_keys(lambda k: k.startswith(CILIUM_NS_LABELS_PREFIX))
    if CILIUM_NS_LABEL in keys:
        return sel
    # utils.go getEndpointSelector: without a namespace label, a CNP peer selector is limited to
    # the policy's namespace; a CCNP one to any endpoint that has a namespace (a pod).
    if namespace is None:
        return sel.with_requirement(Requirement(CILIUM_NS_LABEL, "Exists", frozenset()))
    return sel.with_requirement(Requirement(CILIUM_NS_LABEL, "In", frozenset({namespace})))


def _list(value: Any, where: str) -> list[Any] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputError(f"{where} must be a list")
    return value


def _port_rules(items: Any, where: str) -> tuple[CiliumPortRule, ...]:
    out = []
    for i, pr in enumerate(_list(items, f"{where}.toPorts") or []):
        w = f"{where}.toPorts[{i}]"
        if not isinstance(pr, Mapping):
            raise InputError(f"{w} must be a mapping")
        specs = []
        for j, p in enumerate(_list(pr.get("ports"), f"{w}.ports") or []):
            pw = f"{w}.ports[{j}]"
            if not isinstance(p, Mapping):
                raise InputError(f"{pw} must be a mapping")
            # l4.go PortProtocol: protocol empty or ANY matches every protocol; port "0" or empty
            # means every port; a non-numeric port is a named port.
            proto = str(p.get("protocol") or "ANY").upper()
            if proto not in ("TCP", "UDP", "SCTP", "ANY", "ICMP", "ICMPV6"):
                raise InputError(f"{pw}: unsupported protocol {p.get('protocol')!r}")
            if proto.startswith("ICMP"):
                continue  # ICMP is not a connection target here
            port = parse_port_number(p.get("port") or None, where=pw)
            end = p.get("endPort")
            if isinstance(port, str):
                specs.append(PortSpec(None if proto == "ANY" else proto, name=port))
            else:
                specs.append(
                    PortSpec(
                        None if proto == "ANY" else proto,
                        port or None,
                        int(end) if end and port else None,
                    )
                )
        rules = pr.get("rules") or {}
        if not isinstance(rules, Mapping):
            raise InputError(f"{w}.rules must be a mapping")
        dns = None
        if rules.get("dns") is not None:
            dns = tuple(
                compile_fqdn(d, f"{w}.rules.dns[{k}]")
                for k, d in enumerate(_list(rules.get("dns"), f"{w}.rules.dns") or [])
            )
        out.append(CiliumPortRule(tuple(specs), dns, bool(rules)))
    return tuple(out)


def _cidr_rules(
    rule: Mapping[str, Any], plain: str, sets: str, where: str, unsupported: list[str]
) -> tuple[CidrBlock, ...] | None:
    if rule.get(plain) is None and rule.get(sets) is None:
        return None
    blocks = [
        compile_cidr(c, None, where=f"{where}.{plain}")
        for c in _list(rule.get(plain), f"{where}.{plain}") or []
    ]
    for i, s in enumerate(_list(rule.get(sets), f"{where}.{sets}") or []):
        if not isinstance(s, Mapping):
            raise InputError(f"{where}.{sets}[{i}] must be a mapping")
        if s.get("cidr") is None:
            unsupported.append(f"{sets}[{i}] (cidrGroupRef/cidrGroupSelector)")
            continue
        blocks.append(compile_cidr(s.get("cidr"), s.get("except"), where=f"{where}.{sets}[{i}]"))
    return tuple(blocks)


def _rules(
    items: Any, direction: str, namespace: str | None, where: str, *, deny: bool
) -> tuple[CiliumRule, ...]:
    pre = "to" if direction == "egress" else "from"
    out = []
    for i, r in enumerate(_list(items, where) or []):
        w = f"{where}[{i}]"
        if r is None:
            r = {}
        if not isinstance(r, Mapping):
            raise InputError(f"{w} must be a mapping")
        unsupported: list[str] = []
        eps = _list(r.get(f"{pre}Endpoints"), f"{w}.{pre}Endpoints")
        endpoints = (
            None
            if eps is None
            else tuple(
                _scoped_selector(e or {}, namespace, f"{w}.{pre}Endpoints[{k}]")
                for k, e in enumerate(eps)
            )
        )
        ents = _list(r.get(f"{pre}Entities"), f"{w}.{pre}Entities")
        if ents is not None:
            bad = [e for e in ents if e not in ENTITIES]
            if bad:
                raise InputError(f"{w}.{pre}Entities: unknown entity {bad[0]!r}")
        cidrs = _cidr_rules(r, f"{pre}CIDR", f"{pre}CIDRSet", w, unsupported)
        services = fqdns = None
        if direction == "egress":
            svcs = _list(r.get("toServices"), f"{w}.toServices")
            if svcs is not None:
                services = tuple(
                    _service_ref(s, namespace, f"{w}.toServices[{k}]") for k, s in enumerate(svcs)
                )
            fq = _list(r.get("toFQDNs"), f"{w}.toFQDNs")
            if fq is not None:
                fqdns = tuple(compile_fqdn(f, f"{w}.toFQDNs[{k}]") for k, f in enumerate(fq))
        for key in (f"{pre}Nodes", f"{pre}Groups", f"{pre}Requires"):
            if r.get(key):
                unsupported.append(key)
        out.append(
            CiliumRule(
                i + 1,
                endpoints,
                None if ents is None else tuple(ents),
                cidrs,
                services,
                fqdns,
                tuple(unsupported),
                _port_rules(r.get("toPorts"), w),
            )
        )
    return tuple(out)


def _service_ref(item: Any, namespace: str | None, where: str) -> ServiceRef:
    if not isinstance(item, Mapping):
        raise InputError(f"{where} must be a mapping")
    # service.go: k8sService {serviceName, namespace} or k8sServiceSelector {selector, namespace}.
    if isinstance(item.get("k8sService"), Mapping):
        s = item["k8sService"]
        return ServiceRef(s.get("namespace") or namespace, s.get("serviceName"), None)
    if isinstance(item.get("k8sServiceSelector"), Mapping):
        s = item["k8sServiceSelector"]
        return ServiceRef(
            s.get("namespace") or namespace,
            None,
            compile_selector(s.get("selector") or {}, where=f"{where}.selector"),
        )
    raise InputError(f"{where}: needs k8sService or k8sServiceSelector")


def _compile_rule(
    spec: Mapping[str, Any], pid: str, where: str, namespace: str | None
) -> CiliumPolicy:
    w = f"{pid} {where}".rstrip()
    if spec.get("endpointSelector") is not None and spec.get("nodeSelector") is not None:
        raise InputError(f"{w}: endpointSelector and nodeSelector are mutually exclusive")
    subject = None
    if spec.get("endpointSelector") is not None:
        subject = compile_selector(
            spec["endpointSelector"], cilium=True, where=f"{w} endpointSelector"
        )
        if namespace is not None:
            # utils.go ParseToCiliumRule: a CNP endpointSelector always applies in its namespace.
            subject = subject.without_keys(lambda k: k == CILIUM_NS_LABEL).with_requirement(
                Requirement(CILIUM_NS_LABEL, "In", frozenset({namespace}))
            )
    elif spec.get("nodeSelector") is None:
        raise InputError(f"{w}: needs endpointSelector or nodeSelector")
    rules = {
        "ingress": _rules(spec.get("ingress"), "ingress", namespace, f"{w} ingress", deny=False),
        "ingressDeny": _rules(
            spec.get("ingressDeny"), "ingress", namespace, f"{w} ingressDeny", deny=True
        ),
        "egress": _rules(spec.get("egress"), "egress", namespace, f"{w} egress", deny=False),
        "egressDeny": _rules(
            spec.get("egressDeny"), "egress", namespace, f"{w} egressDeny", deny=True
        ),
    }
    has = {
        "ingress": bool(rules["ingress"] or rules["ingressDeny"]),
        "egress": bool(rules["egress"] or rules["egressDeny"]),
    }
    edd = spec.get("enableDefaultDeny") or {}
    if not isinstance(edd, Mapping):
        raise InputError(f"{w}: enableDefaultDeny must be a mapping")
    # rule.go EnableDefaultDeny / Sanitize: unset means true for each direction the rule has
    # rules in (allow or deny), false otherwise.
    default_deny = {
        d: bool(edd[d]) if edd.get(d) is not None else has[d] for d in ("ingress", "egress")
    }
    return CiliumPolicy(
        id=pid,
        where=where,
        namespace=namespace,
        subject=subject,
        ingress=rules["ingress"],
        ingress_deny=rules["ingressDeny"],
        egress=rules["egress"],
        egress_deny=rules["egressDeny"],
        default_deny=default_deny,
        has_section=has,
    )


def compile_cilium_policy(doc: Mapping[str, Any]) -> tuple[CiliumPolicy, ...]:
    """One CiliumPolicy per rule (``spec`` and each of ``specs``)."""
    kind = doc.get("kind")
    meta = doc.get("metadata") or {}
    name = meta.get("name") or "<unnamed>"
    namespace = None if kind == CCNP else (meta.get("namespace") or "default")
    pid = f"{kind} {name}" if namespace is None else f"{kind} {namespace}/{name}"
    out = []
    if doc.get("spec") is not None:
        if not isinstance(doc["spec"], Mapping):
            raise InputError(f"{pid}: spec must be a mapping")
        out.append(_compile_rule(doc["spec"], pid, "", namespace))
    for i, s in enumerate(_list(doc.get("specs"), f"{pid} specs") or []):
        if not isinstance(s, Mapping):
            raise InputError(f"{pid} specs[{i}] must be a mapping")
        out.append(_compile_rule(s, pid, f"specs[{i}]", namespace))
    if not out:
        raise InputError(f"{pid}: needs spec or specs")
    return tuple(out)


# ---- matching --------------------------------------------------------------------------------


def _entity_matches(entity: str, peer: Peer) -> bool:
    if entity == "all":
        return True
    if entity == "cluster":
        return peer.kind != "world"
    return entity in peer.entities


def _cidr_applies(peer: Peer, cni: CniConfig) -> bool:
    # layer3.rst "IP/CIDR based": CIDR rules apply only to peers without a Cilium identity;
    # nodes (incl. the API server host) only with policyCIDRMatchMode=nodes.
    return peer.kind == "world" or (peer.kind == "node" and cni.policy_cidr_match_mode == "nodes")


def _service_peer_match(
    ref: ServiceRef, peer: Peer, cluster: ClusterView, cni: CniConfig
) -> str | None:
    for svc in cluster.services:
        if ref.namespace is not None and svc.namespace != ref.namespace:
            continue
        if ref.name is not None and svc.name != ref.name:
            continue
        if ref.selector is not None and not ref.selector.matches(svc.labels):
            continue
        desc = f"toServices {svc.namespace}/{svc.name}"
        if svc.selector is not None:
            # layer3.rst "Services based": the Service's selector is used as an endpoint selector.
            if (
                peer.kind == "pod"
                and peer.pod is not None
                and peer.pod.namespace == svc.namespace
                and labels_selector(svc.selector).matches(peer.pod.labels)
            ):
                return desc
        elif _cidr_applies(peer, cni) and peer.ip is not None:
            # Selector-less Services become CIDR rules over their endpoint IPs, which cannot
            # select pods or (by default) nodes: hence toServices default/kubernetes has no
            # effect (layer3.rst note; cilium/cilium#35459).
            if svc.namespace == "default" and svc.name == "kubernetes":
                eps = [parse_ip(n.ip) for n in cluster.control_plane_nodes()]
            else:
                eps = []
            if peer.ip in eps:
                return desc
    return None


def rule_l3_match(
    rule: CiliumRule,
    peer: Peer,
    direction: str,
    cluster: ClusterView,
    cni: CniConfig,
    *,
    fqdn_active: bool,
) -> str | None:
    """Why ``peer`` is selected by the rule's L3 part (any field may match), or None."""
    pre = "to" if direction == "egress" else "from"
    if not rule.has_l3:
        # layer4.rst: toPorts without an L3 selector applies "to any layer 3 destination"; a rule
        # with neither (``{}``) selects nothing, which is the default-deny idiom
        # (examples/policies/l3/egress-default-deny/egress-default-deny.yaml).
        return "any peer" if rule.port_rules else None
    if rule.endpoints is not None:
        for sel in rule.endpoints:
            reserved = any(k.startswith(RESERVED_PREFIX) for k in sel.keys())
            if reserved:
                labels = {f"{RESERVED_PREFIX}{e}": "" for e in peer.entities}
                if peer.kind == "pod":
                    labels.update(peer.cilium_labels)
                if sel.matches(labels):
                    return f"{pre}Endpoints (reserved)"
            elif peer.kind == "pod" and sel.matches(peer.cilium_labels):
                return f"{pre}Endpoints"
    if rule.entities is not None:
        for e in rule.entities:
            if _entity_matches(e, peer):
                return f"{pre}Entities {e}"
    if rule.cidrs is not None and _cidr_applies(peer, cni):
        for block in rule.cidrs:
            if block.contains(peer.ip):
                return f"{pre}CIDR{'Set' if block.excepts else ''} {block}"
    if rule.services is not None:
        for ref in rule.services:
            why = _service_peer_match(ref, peer, cluster, cni)
            if why:
                return why
    if rule.fqdns is not None and fqdn_active and peer.kind == "world" and peer.fqdn:
        # layer3.rst "DNS based": IPs are learnt from DNS answers seen by the DNS proxy.
        for m in rule.fqdns:
            if m.matches(peer.fqdn):
                return f"toFQDNs {m.text}"
    return None


def rule_port_match(
    rule: CiliumRule, port: int, protocol: str, dst: Peer
) -> CiliumPortRule | None | bool:
    """The matching toPorts entry, True when the rule has no toPorts, False when none matches."""
    if not rule.port_rules:
        return True
    for pr in rule.port_rules:
        if not pr.ports or any(p.matches(port, protocol, dst) for p in pr.ports):
            return pr
    return False


def describe_rule(pol: CiliumPolicy, section: str, rule: CiliumRule, why: str) -> str:
    where = f"{pol.where} " if pol.where else ""
    return f"{pol.id} {where}{section} rule {rule.index} ({why})"
