"""May this pod reach that target? Resolve the target (DNS, Service DNAT), then check the source's
egress and, for pod destinations, the destination's ingress under the CNI's enforcement rules."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from helmsim.cluster.network import cilium, kubernetes
from helmsim.cluster.network.flows import (
    IPAddress,
    Peer,
    node_peer,
    parse_ip,
    parse_network,
    pod_peer,
    world_peer,
)
from helmsim.cluster.network.model import (
    APISERVER_SERVICE_PORT,
    ClusterView,
    CniConfig,
    Dns,
    External,
    FqdnTarget,
    IpTarget,
    KubeApiServer,
    Node,
    Pod,
    PodsTarget,
    Service,
    ServiceTarget,
    Source,
    Target,
    Verdict,
    World,
    normalize_protocol,
)
from helmsim.cluster.network.policies import PolicySet, as_policy_set
from helmsim.cluster.network.selectors import labels_selector
from helmsim.errors import InputError


class _Leg(Struct, frozen=True):
    dst: Peer
    port: int
    protocol: str


class _Plan(Struct, frozen=True):
    desc: str
    dial: str
    protocol: str
    legs: tuple[_Leg, ...]
    dns_name: str | None = None
    empty_reason: str = ""
    empty_cause: str = "no-endpoints"


class _Side(Struct, frozen=True):
    allowed: bool
    reason: str
    decided_by: tuple[str, ...] = ()
    cause: str = "policy"
    proxied: bool = False


# ---- target resolution ---------------------------------------------------------------------


def _api_node_peer(cluster: ClusterView, node: Node, source: Pod | None) -> Peer:
    labelled = cluster.apiserver_labelled(node)
    return node_peer(
        node, source, apiserver=labelled, unlabelled=node.control_plane and not labelled
    )


def _apiserver_legs(
    cluster: ClusterView, source: Pod | None, port: int, backend: str | None = None
) -> tuple[_Leg, ...]:
    # The `kubernetes` Service has no selector; its endpoints are the API server's host addresses
    # (control-plane node IP:6443). Policy sees this post-DNAT endpoint
    # (network-policies.md, hostNetwork/DNAT caveats; cilium layer4.rst: L4 after service mapping).
    # With ``backend`` the load balancer has picked one endpoint for this connection.
    return tuple(
        _Leg(_api_node_peer(cluster, n, source), port, "TCP")
        for n in cluster.control_plane_nodes()
        if backend is None or n.ip == backend
    )


def _service_port(svc: Service, port: int | str, protocol: str | None):
    matches = [
        sp
        for sp in svc.ports
        if (sp.port == port if isinstance(port, int) else sp.name == port)
        and (protocol is None or sp.protocol == protocol)
    ]
    matches.sort(key=lambda sp: sp.protocol != "TCP")
    return matches[0] if matches else None


def _service_plan(
    svc: Service,
    port: int | str,
    protocol: str | None,
    desc: str,
    cluster: ClusterView,
    source: Pod | None,
) -> _Plan:
    sp = _service_port(svc, port, protocol)
    proto = protocol or (sp.protocol if sp else "TCP")
    dial = f"{svc.cluster_ip}:{sp.port if sp else port}"
    if sp is None:
        return _Plan(
            desc,
            dial,
            proto,
            (),
            empty_reason=f"{desc}: the Service has no port {port}/{proto}",
            # the name resolves (the Service exists): the dial fails, it is not an NXDOMAIN
            empty_cause="no-endpoints",
        )
    target_port = sp.target_port if sp.target_port not in (None, 0, "") else sp.port
    if svc.selector is None:
        if svc.namespace == "default" and svc.name == "kubernetes":
            legs = _apiserver_legs(cluster, source, int(target_port))
            return _Plan(desc, dial, proto, legs, empty_reason=f"{desc}: no API server endpoints")
        return _Plan(
            desc,
            dial,
            proto,
            (),
            empty_reason=(
                f"{desc}: a Service without selector (its EndpointSlices are not modelled)"
            ),
        )
    sel = labels_selector(svc.selector)
    endpoint_legs: list[_Leg] = []
    for pod in cluster.pods:
        if pod.namespace != svc.namespace or pod.key in cluster.not_ready or not sel.matches(pod.labels):
            continue
        tp = (
            target_port
            if isinstance(target_port, int)
            else pod.named_port(target_port, sp.protocol)
        )
        if tp is not None:
            endpoint_legs.append(_Leg(pod_peer(pod, cluster), tp, sp.protocol))
    if str(svc.cluster_ip) in ("None", ""):
        # a headless Service's name resolves to its ready pods' IPs (kubernetes dns spec: A
        # records of the endpoints): the client dials the first of them, not a ClusterIP
        first = next((leg for leg in endpoint_legs if leg.dst.ip is not None), None)
        dial = f"{first.dst.ip}:{first.port}" if first is not None else f"{svc.name}.{svc.namespace}.svc:{sp.port}"
        # without ready endpoints the name has no records: the lookup fails (NXDOMAIN)
        return _Plan(
            desc,
            dial,
            proto,
            tuple(endpoint_legs),
            empty_reason=f"{desc}: the headless Service has no ready endpoints, so its name has no records",
            empty_cause="not-found",
        )
    return _Plan(
        desc, dial, proto, tuple(endpoint_legs), empty_reason=f"{desc}: the Service has no endpoints"
    )


def _ip_plan(
    ip: IPAddress,
    port: int,
    proto: str,
    desc: str,
    cluster: ClusterView,
    source: Pod | None,
    fqdn: str | None = None,
) -> _Plan:
    text = str(ip)
    for svc in cluster.services:
        if svc.cluster_ip == text:
            return _service_plan(svc, port, proto, desc, cluster, source)
    dial = f"{text}:{port}" if ip.version == 4 else f"[{text}]:{port}"
    for pod in cluster.pods:
        if pod.ip == text:
            return _Plan(desc, dial, proto, (_Leg(pod_peer(pod, cluster), port, proto),))
    node = cluster.node_by_ip(text)
    if node is not None:
        return _Plan(
            desc,
            dial,
            proto,
            (_Leg(_api_node_peer(cluster, node, source), port, proto),),
        )
    return _Plan(desc, dial, proto, (_Leg(world_peer(ip, fqdn=fqdn), port, proto),))


def _pods_plan(t: PodsTarget, cluster: ClusterView, desc: str) -> _Plan:
    proto = normalize_protocol(t.protocol)
    sel = labels_selector(t.labels)
    legs = []
    first_dial = ""
    for pod in cluster.pods:
        if t.namespace is not None and pod.namespace != t.namespace:
            continue
        if t.name is not None and pod.name != t.name:
            continue
        if not sel.matches(pod.labels):
            continue
        port = t.port if isinstance(t.port, int) else pod.named_port(t.port, proto)
        if port is None:
            continue
        legs.append(_Leg(pod_peer(pod, cluster), port, proto))
        first_dial = first_dial or f"{pod.ip or pod.key}:{port}"
    return _Plan(
        desc,
        first_dial or desc,
        proto,
        tuple(legs),
        empty_reason=f"{desc}: no such pod (with that port)",
        empty_cause="not-found",
    )


def _in_cluster_service(name: str, cluster: ClusterView) -> tuple[str, str] | None:
    """``svc.ns.svc[.cluster.local]`` → (namespace, name)."""
    host = name.lower().rstrip(".")
    suffix = f".svc.{cluster.cluster_domain}"
    if host.endswith(suffix):
        host = host[: -len(suffix)]
    elif host.endswith(".svc"):
        host = host[:-4]
    else:
        return None
    parts = host.split(".")
    return (parts[1], parts[0]) if len(parts) == 2 else None


def _searched_service(name: str, cluster: ClusterView) -> Service | None:
    """The Service a pod reaches by a two-label ``name.ns`` when the cluster has it: the pod's
    resolver tries ``name.ns.svc.<domain>`` before the name itself (kubernetes
    pkg/kubelet/network/dns/dns.go: search ``<ns>.svc.<domain> svc.<domain> <domain>``,
    ``ndots:5``); None when it has none (the name is then looked up outside the cluster)."""
    labels = name.lower().rstrip(".").split(".")
    if len(labels) != 2 or not all(labels):
        return None
    return cluster.service(labels[1], labels[0])


def describe_target(target: Target) -> str:
    """A short human name for a target, as reasons print it."""
    if isinstance(target, KubeApiServer):
        return "kube-apiserver"
    if isinstance(target, Dns):
        return f"kube-dns ({normalize_protocol(target.protocol, default='UDP')} 53)"
    if isinstance(target, ServiceTarget):
        return f"service {target.namespace}/{target.name}:{target.port}"
    if isinstance(target, PodsTarget):
        where = target.namespace or "*"
        who = (
            target.name
            or "{" + ",".join(f"{k}={v}" for k, v in sorted(target.labels.items())) + "}"
        )
        return f"pod {where}/{who}:{target.port}"
    if isinstance(target, FqdnTarget):
        return f"{target.name}:{target.port}"
    if isinstance(target, IpTarget):
        return f"{target.address}:{target.port}"
    if isinstance(target, World):
        return f"world:{target.port}"
    raise InputError(f"unknown target {target!r}")


def _plan(target: Target, cluster: ClusterView, source: Pod | None) -> _Plan:
    desc = describe_target(target)
    if isinstance(target, KubeApiServer):
        legs = _apiserver_legs(cluster, source, cluster_apiserver_port(cluster), target.backend)
        return _Plan(
            desc,
            f"{cluster.apiserver_service_ip}:{APISERVER_SERVICE_PORT}",
            "TCP",
            legs,
            empty_reason="kube-apiserver: no control-plane node in the cluster view",
        )
    if isinstance(target, Dns):
        proto = normalize_protocol(target.protocol, default="UDP")
        svc = cluster.service("kube-system", "kube-dns")
        if svc is None:
            return _Plan(
                desc,
                f"{cluster.dns_service_ip}:53",
                proto,
                (),
                empty_reason="kube-dns: no Service kube-system/kube-dns",
                empty_cause="not-found",
            )
        plan = _service_plan(svc, 53, proto, desc, cluster, source)
        return replace(plan, dns_name=target.name)
    if isinstance(target, ServiceTarget):
        svc = cluster.service(target.namespace, target.name)
        if svc is None:
            return _Plan(
                desc,
                desc,
                "TCP",
                (),
                empty_reason=f"{desc}: no such Service",
                empty_cause="not-found",
            )
        return _service_plan(svc, target.port, None, desc, cluster, source)
    if isinstance(target, PodsTarget):
        return _pods_plan(target, cluster, desc)
    if isinstance(target, World):
        proto = normalize_protocol(target.protocol)
        return _Plan(
            desc, f"<external>:{target.port}", proto, (_Leg(world_peer(None), target.port, proto),)
        )
    raise InputError(f"cannot plan target {target!r}")  # FQDN/IP handled by the caller


def cluster_apiserver_port(cluster: ClusterView) -> int:
    svc = cluster.service("default", "kubernetes")
    if svc is not None:
        sp = _service_port(svc, APISERVER_SERVICE_PORT, "TCP")
        if sp is not None and isinstance(sp.target_port, int) and sp.target_port:
            return sp.target_port
    return 6443


# ---- one direction ---------------------------------------------------------------------------


def _flow(dst: Peer, port: int, proto: str) -> str:
    where = str(dst.ip) if dst.ip is not None and dst.kind != "pod" else dst.label
    return f"{where}:{port}/{proto}"


def _apiserver_notes(
    pset: PolicySet, subject: Peer, cluster: ClusterView, cni: CniConfig, dst: Peer
) -> str:
    """Explain the usual reasons an apparently matching rule misses the API server."""
    notes: list[str] = []
    svc_ip = parse_ip(cluster.apiserver_service_ip)
    blocks = []
    cps, nps = pset.selecting(subject)
    for np in nps:
        if "egress" in np.types:
            blocks += [p.ip_block for r in np.egress for p in r.peers if p.ip_block is not None]
    svc_rules = False
    for cp in cps:
        for r in cp.egress:
            blocks += list(r.cidrs or ())
            svc_rules |= any(
                s.namespace == "default" and s.name == "kubernetes" for s in r.services or ()
            )
    if any(b.contains(svc_ip) for b in blocks):
        notes.append(
            f"a CIDR covering the ClusterIP {svc_ip} never matches: policy sees the "
            f"post-DNAT endpoint {dst.ip}:{cluster_apiserver_port(cluster)}"
        )
    if (
        cni.type == "cilium"
        and cni.policy_cidr_match_mode != "nodes"
        and any(b.contains(dst.ip) for b in blocks)
    ):
        notes.append(
            "CIDR rules do not select nodes unless policyCIDRMatchMode=nodes; "
            "use toEntities: [kube-apiserver]"
        )
    if svc_rules:
        notes.append(
            "toServices default/kubernetes has no effect; use toEntities: [kube-apiserver]"
        )
    return f" (note: {'; '.join(notes)})" if notes else ""


def _k8s_side(
    pset: PolicySet,
    direction: str,
    subject: Peer,
    other: Peer,
    dst: Peer,
    port: int,
    proto: str,
    cni: CniConfig,
    what: str,
) -> _Side:
    pod = subject.pod
    assert pod is not None
    dec = kubernetes.evaluate_direction(
        pset.selecting(subject)[1], direction, subject, other, dst, port, proto, cni
    )
    if not dec.isolating:
        # network-policies.md "The two sorts of pod isolation": pods are non-isolated by default.
        return _Side(True, f"{direction} of {pod.key} not isolated by any NetworkPolicy")
    if dec.allowed_by is not None:
        pol, rule, why = dec.allowed_by
        return _Side(True, f"allowed by {pol.id} {direction} rule {rule.index} ({why})", (pol.id,))
    ids = tuple(p.id for p in dec.isolating)
    return _Side(
        False,
        f"{what} denied: {direction}-isolated by {', '.join(ids)} and no rule allows "
        f"{_flow(dst, port, proto)}",
        ids,
    )


def _cilium_side(
    pset: PolicySet,
    cluster: ClusterView,
    direction: str,
    subject: Peer,
    other: Peer,
    dst: Peer,
    port: int,
    proto: str,
    cni: CniConfig,
    what: str,
    dns_name: str | None,
    fqdn_active: bool,
) -> _Side:
    pod = subject.pod
    assert pod is not None
    mode = cni.policy_enforcement_mode
    if mode == "never":
        # intro.rst "Policy Enforcement Modes": never = enforcement disabled even if rules select.
        return _Side(True, "cilium policyEnforcementMode=never: nothing is enforced")
    cps, all_nps = pset.selecting(subject)
    # Cilium implements Kubernetes NetworkPolicy too (pkg/k8s/network_policy.go).
    nps = [p for p in all_nps if direction in p.types]
    # deny.rst: deny rules take precedence over allow rules, whatever their kind.
    for p in cps:
        for r in p.deny_rules(direction):
            l3 = cilium.rule_l3_match(r, other, direction, cluster, cni, fqdn_active=fqdn_active)
            if l3 and cilium.rule_port_match(r, port, proto, dst) is not False:
                d = cilium.describe_rule(p, f"{direction}Deny", r, l3)
                return _Side(False, f"{what} denied by {d}", (p.id,))
    allows: list[tuple[str, str, Any]] = []
    for p in cps:
        for r in p.allow_rules(direction):
            l3 = cilium.rule_l3_match(r, other, direction, cluster, cni, fqdn_active=fqdn_active)
            if not l3:
                continue
            pm = cilium.rule_port_match(r, port, proto, dst)
            if pm is not False:
                allows.append((p.id, cilium.describe_rule(p, direction, r, l3), pm))
    for np in nps:
        for rule in np.rules(direction):
            why = kubernetes.rule_allows(rule, np.namespace, other, dst, port, proto, cni)
            if why:
                allows.append((np.id, f"{np.id} {direction} rule {rule.index} ({why})", True))
    # repository.go computePolicyEnforcementAndRules: always → enforce; else default-deny per
    # direction if any selecting rule with that section requests it (enableDefaultDeny).
    deny_ids = [p.id for p in cps if p.has_section[direction] and p.default_deny[direction]]
    deny_ids += [np.id for np in nps]
    enforced = mode == "always" or bool(deny_ids)
    proxied = False
    if dns_name is not None and direction == "egress":
        # layer7.rst DNS policy: queries on a port with rules.dns go to the DNS proxy, which
        # refuses names no pattern matches. intro.rst: EnableDefaultDeny does not apply to L7.
        l7 = [pm for _, _, pm in allows if pm is not True and pm.dns is not None]
        plain = [a for a in allows if a[2] is True or a[2].dns is None]
        # cilium/cilium pkg/fqdn/dnsproxy/proxy.go: such queries are redirected to the agent's
        # DNS proxy (pkg/proxy), which must be up to answer them
        proxied = bool(l7) and not plain and cni.enable_l7_proxy
        if l7 and not plain and not any(m.matches(dns_name) for pm in l7 for m in pm.dns):
            ids = tuple(dict.fromkeys(a[0] for a in allows))
            return _Side(
                False,
                f"DNS query for {dns_name} refused by the cilium DNS proxy: no "
                f"rules.dns pattern of {', '.join(ids)} matches it",
                ids,
                "dns-refused",
            )
    if allows:
        return _Side(True, f"allowed by {allows[0][1]}", (allows[0][0],), proxied=proxied)
    ids_t = tuple(dict.fromkeys(deny_ids))
    if enforced:
        if not ids_t:
            return _Side(
                False, f"{what} denied: cilium policyEnforcementMode=always and no policy allows it"
            )
        verb = "puts" if len(ids_t) == 1 else "put"
        extra = " (policyEnforcementMode=always)" if mode == "always" else ""
        return _Side(
            False,
            f"{what} denied: {', '.join(ids_t)} {verb} {pod.key} in {direction} "
            f"default-deny{extra} and no rule allows {_flow(dst, port, proto)}",
            ids_t,
        )
    selecting = tuple(dict.fromkeys(p.id for p in cps if p.has_section[direction]))
    if selecting:
        return _Side(
            True,
            f"{direction} of {pod.key} not in default-deny: the selecting policies "
            f"set enableDefaultDeny.{direction}: false",
            selecting,
        )
    return _Side(
        True,
        f"{direction} of {pod.key} unrestricted: no policy selects it "
        f"(cilium policyEnforcementMode=default)",
    )


def _side(
    pset: PolicySet,
    cluster: ClusterView,
    cni: CniConfig,
    direction: str,
    subject: Peer,
    other: Peer,
    dst: Peer,
    port: int,
    proto: str,
    what: str,
    dns_name: str | None = None,
    fqdn_active: bool = False,
) -> _Side:
    if cni.type == "none":
        return _Side(True, "no network policy is enforced (cni.type=none)")
    pod = subject.pod
    assert pod is not None
    if pod.host_network:
        # NetworkPolicy behaviour for hostNetwork pods is undefined (network-policies.md); Cilium
        # does not manage them as endpoints.
        return _Side(True, f"{direction} of host-network pod {pod.key} is not policed")
    if cni.type == "kubernetes":
        # Only NetworkPolicy is enforced; Cilium CRDs are inert without Cilium.
        side = _k8s_side(pset, direction, subject, other, dst, port, proto, cni, what)
    else:
        side = _cilium_side(
            pset,
            cluster,
            direction,
            subject,
            other,
            dst,
            port,
            proto,
            cni,
            what,
            dns_name,
            fqdn_active,
        )
    if not side.allowed and side.cause == "policy" and dst.is_apiserver and direction == "egress":
        side = replace(
            side, reason=side.reason + _apiserver_notes(pset, subject, cluster, cni, dst)
        )
    elif not side.allowed and dst.apiserver_unlabelled and direction == "egress":
        ents = "/".join(sorted(dst.entities - {"cluster", "all"}))
        side = replace(
            side,
            reason=side.reason + f" (the API server backend {dst.ip} is without the "
            f"kube-apiserver identity label: its identity is {ents} only)",
        )
    return side


def _fqdn_active(pset: PolicySet, src: Peer, cni: CniConfig) -> bool:
    # layer3.rst "DNS based": toFQDNs only learns IPs from lookups the DNS proxy sees, which needs
    # --enable-l7-proxy and an egress rule with toPorts.rules.dns selecting the pod.
    if cni.type != "cilium" or not cni.enable_l7_proxy or src.kind != "pod":
        return False
    return any(
        pr.dns is not None for p in pset.selecting(src)[0] for r in p.egress for pr in r.port_rules
    )


# ---- whole connection ------------------------------------------------------------------------


def _run(
    plan: _Plan, source: Source, src: Peer, pset: PolicySet, cluster: ClusterView, cni: CniConfig
) -> Verdict:
    if not plan.legs:
        return Verdict(
            False, plan.empty_reason, (), plan.dial, plan.protocol, None, plan.empty_cause
        )
    fqdn_active = _fqdn_active(pset, src, cni)
    src_pod = source if isinstance(source, Pod) else None
    outcomes: list[tuple[bool, list[_Side]]] = []
    for leg in plan.legs:
        sides: list[_Side] = []
        ok = True
        if src_pod is not None and leg.dst.pod is not None and leg.dst.pod.key == src_pod.key:
            outcomes.append((True, [_Side(True, f"{src_pod.key} connecting to itself")]))
            continue
        if src_pod is not None:
            via = f" via {leg.dst.label}" if len(plan.legs) > 1 else ""
            what = f"egress to {plan.desc}{via}"
            e = _side(
                pset,
                cluster,
                cni,
                "egress",
                src,
                leg.dst,
                leg.dst,
                leg.port,
                leg.protocol,
                what,
                plan.dns_name,
                fqdn_active,
            )
            sides.append(e)
            ok = e.allowed
        if ok and leg.dst.kind == "pod":
            # Both ends must allow (network-policies.md; layer3.rst "policy must be configured on
            # both sides"). The API server, nodes and world have no ingress policy here.
            what = f"ingress to {leg.dst.label} from {src.label}"
            i = _side(
                pset, cluster, cni, "ingress", leg.dst, src, leg.dst, leg.port, leg.protocol, what
            )
            sides.append(i)
            ok = i.allowed
        outcomes.append((ok, sides))
    denied = [(ok, s) for ok, s in outcomes if not ok]
    if denied:
        side = denied[0][1][-1]
        reason = side.reason
        if len(outcomes) > 1:
            some = "all" if len(denied) == len(outcomes) else str(len(denied))
            reason += f" [{some} of {len(outcomes)} endpoints denied]"
        return Verdict(False, reason, side.decided_by, plan.dial, plan.protocol, None, side.cause)
    reasons = list(dict.fromkeys(s.reason for s in outcomes[0][1]))
    ids = tuple(dict.fromkeys(i for _, sides in outcomes for s in sides for i in s.decided_by))
    proxied = any(s.proxied for _, sides in outcomes for s in sides)
    return Verdict(True, "; ".join(reasons), ids, plan.dial, plan.protocol, proxied=proxied)


def _cidr_probe_points(net: Any, pset: PolicySet, cluster: ClusterView) -> list[IPAddress]:
    """Addresses inside ``net`` where a verdict may change: its ends, policy CIDR edges and
    the cluster's own addresses. The verdict is constant between consecutive points."""
    pts = {net.network_address, net.broadcast_address}
    edges = []
    for b in pset.cidr_blocks():
        for n in (b.net, *b.excepts):
            edges.append(n.network_address)
            if int(n.broadcast_address) + 1 < 2**n.max_prefixlen:
                edges.append(
                    ipaddress.ip_address(int(n.broadcast_address) + 1)
                    if n.version == 4
                    else ipaddress.IPv6Address(int(n.broadcast_address) + 1)
                )
    for ip in edges:
        if ip.version == net.version and ip in net:
            pts.add(ip)
    own = (
        [p.ip for p in cluster.pods]
        + [n.ip for n in cluster.nodes]
        + [s.cluster_ip for s in cluster.services]
    )
    for text in own:
        if text:
            ip = parse_ip(text)
            if ip.version == net.version and ip in net:
                pts.add(ip)
                nxt = int(ip) + 1
                if nxt <= int(net.broadcast_address):
                    pts.add(ipaddress.ip_address(nxt))
    return sorted(pts)


def evaluate(
    source: Source,
    target: Target,
    policies: PolicySet | Iterable[Mapping[str, Any]],
    cluster: ClusterView,
    cni: CniConfig,
) -> Verdict:
    """May ``source`` open a connection to ``target`` under ``policies``? See the package docs."""
    pset = as_policy_set(policies)
    src_pod = source if isinstance(source, Pod) else None
    if src_pod is not None:
        src = pod_peer(src_pod, cluster)
    elif isinstance(source, External):
        src = world_peer(parse_ip(source.ip, where="source"))
    else:
        raise InputError(f"source must be a Pod or an External address, not {source!r}")

    if isinstance(target, FqdnTarget):
        proto = normalize_protocol(target.protocol)
        desc = describe_target(target)
        svc_ref = _in_cluster_service(target.name, cluster)
        searched = _searched_service(target.name, cluster) if src_pod is not None else None
        if src_pod is not None:
            dns = evaluate(source, Dns("UDP", target.name), pset, cluster, cni)
            if not dns.allowed:
                return replace(
                    dns, reason=f"lookup of {target.name} failed: {dns.reason}", lookup=target.name
                )
        svc = searched
        if svc is None and svc_ref is not None:
            svc = cluster.service(svc_ref[0], svc_ref[1])
            if svc is None:
                return Verdict(
                    False,
                    f"{desc}: no such Service (NXDOMAIN)",
                    (),
                    f"{cluster.dns_service_ip}:53",
                    "UDP",
                    target.name,
                    "not-found",
                )
        if svc is not None:
            return _run(_service_plan(svc, target.port, proto, desc, cluster, src_pod), source, src, pset, cluster, cni)
        ips = cluster.dns_records.get(target.name.lower().rstrip("."), ())
        if not ips:
            plan = _Plan(
                desc, desc, proto, (_Leg(world_peer(None, fqdn=target.name), target.port, proto),)
            )
            return _run(plan, source, src, pset, cluster, cni)
        return _run(
            _ip_plan(
                parse_ip(ips[0], where=f"dns record {target.name}"),
                target.port,
                proto,
                desc,
                cluster,
                src_pod,
                fqdn=target.name,
            ),
            source,
            src,
            pset,
            cluster,
            cni,
        )

    if isinstance(target, IpTarget):
        proto = normalize_protocol(target.protocol)
        desc = describe_target(target)
        if "/" not in target.address:
            return _run(
                _ip_plan(
                    parse_ip(target.address, where="target"),
                    target.port,
                    proto,
                    desc,
                    cluster,
                    src_pod,
                ),
                source,
                src,
                pset,
                cluster,
                cni,
            )
        net = parse_network(target.address, where="target")
        first: Verdict | None = None
        for ip in _cidr_probe_points(net, pset, cluster):
            v = _run(
                _ip_plan(ip, target.port, proto, desc, cluster, src_pod),
                source,
                src,
                pset,
                cluster,
                cni,
            )
            if not v.allowed:
                return replace(v, reason=f"{v.reason} (at {ip} in {net})")
            first = first or v
        assert first is not None
        return first

    verdict = _run(_plan(target, cluster, src_pod), source, src, pset, cluster, cni)
    if isinstance(target, Dns) and target.name and not verdict.allowed:
        verdict = replace(verdict, lookup=target.name)
    return verdict
