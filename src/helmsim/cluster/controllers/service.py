"""Services: ClusterIP/NodePort allocation, Endpoints and EndpointSlices, and the cluster's built-ins.

* ``ServiceController`` plays the API server's part for Services (pkg/registry/core/service:
  ipallocator, portallocator, defaults.go SetDefaults_Service): right after a Service is written
  (same simulated instant) it gets ``spec.clusterIP``/``clusterIPs`` from the profile's service
  CIDR, defaulted fields, and NodePorts for NodePort/LoadBalancer Services. Allocation is
  deterministic: a hash of ``namespace/name`` into the dynamic band (above the first
  ``min(max(16, size/16), 256)`` addresses, ipallocator bitmap.go calcRangeOffset), probing
  forward on collisions. A LoadBalancer Service gets ``status.loadBalancer.ingress`` only when
  the profile has a ``loadBalancer`` controller, after ``loadBalancerProvisioning`` (a hostname
  or a TEST-NET-3 address); without one (kind, a bare cluster) it stays empty. kstatus ignores
  ingress (cli-utils core.go serviceConditions), so such a Service is Current once it has a
  ClusterIP; programs reading the address (Bitnami's auto-discovery) wait for it.
* ``EndpointsController`` (actors ``endpoint-controller`` and ``endpointslice-controller``) keeps
  ``Endpoints/<svc>`` and one ``EndpointSlice`` per port set up to date from the pods matching the
  Service selector that have a ``status.podIP`` (pkg/controller/endpoint, pkg/controller/
  endpointslice): Ready pods as ready addresses, others under ``notReadyAddresses`` /
  ``conditions.ready: false`` (ready when ``publishNotReadyAddresses``). Services without a selector
  and ExternalName Services are left alone. Syncs run ``controller_sync`` after the change.
* ``seed_cluster`` writes what exists before any release: namespaces, Nodes, the ``kubernetes``
  Service and its endpoints, kube-dns and (optionally) its CoreDNS pods.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from helmsim.cluster.controllers.workloads import (
    KeyedQueue,
    generate_name,
    is_pod_ready,
    is_terminating,
    pod_phase,
    template_hash,
    trigger_cause,
)
from helmsim.cluster.engine import Controller
from helmsim.cluster.profile import addressing_of
from helmsim.cluster.selectors import matches_map
from helmsim.cluster.store import clone, owner_reference, ref_of

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

APISERVER = "apiserver"
ENDPOINTS_ACTOR = "endpoint-controller"
SLICE_ACTOR = "endpointslice-controller"
BOOTSTRAP_ACTOR = "cluster-bootstrap"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
HEADLESS_LABEL = "service.kubernetes.io/headless"
# kube-apiserver --service-node-port-range default
NODE_PORT_RANGE = (30000, 32767)

Key = tuple[str, str]


def _range_offset(size: int) -> int:
    """ipallocator bitmap.go calcRangeOffset: the static band reserved at the range start."""
    return min(max(16, size // 16), 256)


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


class ServiceController(Controller):
    """Allocates ClusterIPs and NodePorts and applies Service defaults (the API server's job)."""

    name = "service-controller"
    kinds = ("Service",)

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        self.addressing = addressing_of(sim.profile)
        self._reported_lb: set[str] = set()
        # the Service IP index: who holds each ClusterIP and NodePort, kept by every Service write
        self._ips: dict[str, set[Key]] = {}
        self._ports: dict[int, set[Key]] = {}
        self._held: dict[Key, tuple[str | None, tuple[int, ...]]] = {}
        for svc in self.store.list("Service"):
            self._index("ADDED", svc)

    def _index(self, event: str, svc: Mapping[str, Any]) -> None:
        meta = svc["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        spec = svc.get("spec") or {}
        ip = spec.get("clusterIP")
        held = (
            None if event == "DELETED" or not ip or ip == "None" else str(ip),
            () if event == "DELETED" else tuple(int(p["nodePort"]) for p in spec.get("ports") or [] if p.get("nodePort")),
        )
        before = self._held.get(key, (None, ()))
        if held == before:
            return
        if before[0] is not None:
            self._ips[before[0]].discard(key)
        for port in before[1]:
            self._ports[port].discard(key)
        self._held[key] = held
        if held[0] is not None:
            self._ips.setdefault(held[0], set()).add(key)
        for port in held[1]:
            self._ports.setdefault(port, set()).add(key)

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        self._index(event, obj)
        if event == "DELETED":
            return
        meta = obj["metadata"]
        # the API server fills these in within the write itself: same simulated instant
        self.sim.after(
            0.0,
            self._reconcile,
            meta.get("namespace") or "",
            meta["name"],
            trigger_cause(self.sim, obj),
        )

    def _ip_taken(self, ip: str, exclude: Key) -> bool:
        if ip in (self.addressing.apiserver_cluster_ip, self.addressing.kube_dns_cluster_ip):
            return True
        return bool(self._ips.get(ip, set()) - {exclude})

    def allocate_ip(self, key: Key) -> str:
        """A free ClusterIP for ``key`` in the dynamic band of the service CIDR (deterministic)."""
        net = ipaddress.ip_network(self.addressing.service_cidr)
        size = net.num_addresses - 2 if net.version == 4 else min(net.num_addresses - 1, 2**16)
        offset = _range_offset(size)
        band = max(1, size - offset)
        start = _hash(f"{key[0]}/{key[1]}") % band
        for i in range(band):
            ip = str(net.network_address + 1 + offset + (start + i) % band)
            if not self._ip_taken(ip, key):
                return ip
        for i in range(offset):  # dynamic band full: the static band is used as well
            ip = str(net.network_address + 1 + i)
            if not self._ip_taken(ip, key):
                return ip
        raise RuntimeError(f"service CIDR {net} is exhausted")

    def _used_ports(self, exclude: Key) -> set[int]:
        return {port for port, holders in self._ports.items() if holders - {exclude}}

    def _reconcile(self, ns: str, name: str, cause: int | None) -> None:
        svc = self.store.get("Service", ns, name)
        if svc is None:
            return
        new = clone(svc)
        spec = new.setdefault("spec", {})
        stype = spec.setdefault("type", "ClusterIP")
        # pkg/apis/core/v1/defaults.go SetDefaults_Service
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            port.setdefault("protocol", "TCP")
            if stype != "ExternalName":
                port.setdefault("targetPort", port.get("port"))
        allocated: list[str] = []
        if stype != "ExternalName":
            if not spec.get("clusterIP"):
                spec["clusterIP"] = self.allocate_ip((ns, name))
                allocated.append(f"clusterIP {spec['clusterIP']}")
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("internalTrafficPolicy", "Cluster")
        if stype in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
            used = self._used_ports((ns, name))
            low, high = NODE_PORT_RANGE
            size = high - low + 1
            offset = _range_offset(size)
            for port in spec.get("ports") or []:
                if port.get("nodePort"):
                    continue
                start = _hash(f"{ns}/{name}/{port.get('port')}/{port.get('protocol')}") % (
                    size - offset
                )
                for i in range(size - offset):
                    cand = low + offset + (start + i) % (size - offset)
                    if cand not in used:
                        port["nodePort"] = cand
                        used.add(cand)
                        allocated.append(f"nodePort {cand}")
                        break
        if stype == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
            new["status"] = {"loadBalancer": dict((svc.get("status") or {}).get("loadBalancer") or {})}
        if new != svc:
            self.store.update(new, actor=APISERVER, cause=cause, quiet=True)
            if allocated:
                self.sim.log(
                    APISERVER,
                    "allocated",
                    ref_of(new),
                    f"{ref_of(new)}: allocated {', '.join(allocated)}",
                    cause=cause,
                )
        lb_key = f"{ref_of(new)}@{(new.get('metadata') or {}).get('uid')}"  # a re-created Service is new
        if stype == "LoadBalancer" and lb_key not in self._reported_lb:
            self._reported_lb.add(lb_key)
            provider = getattr(self.sim.profile, "load_balancer", "none")
            if provider == "none":
                self.sim.log(
                    "service-controller",
                    "no-load-balancer",
                    ref_of(new),
                    f"{ref_of(new)}: no cloud load-balancer controller; status.loadBalancer.ingress stays empty "
                    "(EXTERNAL-IP <pending>)",
                    cause=cause,
                )
            else:
                uid = (new.get("metadata") or {}).get("uid")
                self.sim.after(
                    self.sim.latency("load_balancer_provisioning"), self._ensure_lb, ns, name, uid, provider, cause
                )

    def _ensure_lb(self, ns: str, name: str, uid: Any, provider: str, cause: int | None) -> None:
        """The load-balancer controller writes the address it provisioned (k8s.io/cloud-provider
        controllers/service/controller.go syncLoadBalancerIfNeeded → patchStatus)."""
        svc = self.store.get("Service", ns, name)
        if svc is None or (svc.get("metadata") or {}).get("uid") != uid:
            return
        if ((svc.get("spec") or {}).get("type")) != "LoadBalancer":
            return
        digest = _hash(f"{ns}/{name}")
        if provider == "hostname":
            ingress = {"hostname": f"{name}-{digest % 16**10:010x}.{ns}.elb.helmsim.test"}
        else:  # an address of TEST-NET-3 (RFC 5737), one per Service
            ingress = {"ip": f"203.0.113.{1 + digest % 254}", "ipMode": "VIP"}
        new = clone(svc)
        new["status"] = {"loadBalancer": {"ingress": [ingress]}}
        self.store.update(new, actor="service-controller", cause=cause, quiet=True)
        address = ingress.get("hostname") or ingress.get("ip")
        self.sim.log(
            "service-controller",
            "load-balancer",
            ref_of(new),
            f"{ref_of(new)}: Ensured load balancer; status.loadBalancer.ingress {address} "
            "(the profile's loadBalancer controller, latencies.loadBalancerProvisioning)",
            cause=cause,
            address=address,
        )


def _resolve_port(port: Mapping[str, Any], pod: Mapping[str, Any]) -> int | None:
    """pkg/api/v1/pod FindPort: a numeric targetPort, or a named container port of the pod."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for c in (pod.get("spec") or {}).get("containers") or []:
        for cp in c.get("ports") or []:
            if cp.get("name") == target and cp.get("protocol", "TCP") == port.get(
                "protocol", "TCP"
            ):
                return int(cp["containerPort"])
    return None


class EndpointsController(Controller):
    """Endpoints and EndpointSlices for selector Services (syncs through ``EndpointsWriter``)."""

    name = ENDPOINTS_ACTOR
    kinds = ("Service", "Pod")

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        self.writer = EndpointsWriter(sim)
        self.queue = KeyedQueue(sim, self.writer.sync)
        self._pod_labels: dict[Key, Mapping[str, str]] = {}
        # Services by each label pair of their selector, per namespace: the Services a pod's
        # labels can match are among those indexed under one of its pairs
        self._selectors: dict[Key, Mapping[str, str]] = {}
        self._by_pair: dict[tuple[str, str, str], set[str]] = {}

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        sync = self.sim.latency("controller_sync")
        ns = obj["metadata"].get("namespace") or ""
        cause = trigger_cause(self.sim, obj)
        key = (ns, obj["metadata"]["name"])
        if obj.get("kind") == "Service":
            self._index_service(key, None if event == "DELETED" else (obj.get("spec") or {}).get("selector"))
            self.queue.add_after(key, sync, cause)
            return
        # pkg/controller/endpoint endpoints_controller.go addPod/updatePod/deletePod: only the
        # Services whose selector matches the pod's labels, old and new
        # (pkg/controller/util/endpoint controller_utils.go GetServicesToUpdateOnPodChange).
        labels = obj["metadata"].get("labels") or {}
        old = self._pod_labels.get(key, labels)
        if event == "DELETED":
            self._pod_labels.pop(key, None)
        else:
            self._pod_labels[key] = labels
        for name in self._services_selecting(ns, labels, old):
            self.queue.add_after((ns, name), sync, cause)

    def _index_service(self, key: Key, selector: Mapping[str, str] | None) -> None:
        ns, name = key
        for k, v in (self._selectors.pop(key, None) or {}).items():
            self._by_pair[(ns, str(k), str(v))].discard(name)
        if selector:
            self._selectors[key] = selector
            for k, v in selector.items():
                self._by_pair.setdefault((ns, str(k), str(v)), set()).add(name)

    def _services_selecting(self, ns: str, *label_sets: Mapping[str, str]) -> list[str]:
        """Names of the Services of ``ns`` whose selector matches any of ``label_sets``, sorted."""
        found: set[str] = set()
        for labels in label_sets:
            for k, v in labels.items():
                for name in self._by_pair.get((ns, str(k), str(v)), ()):
                    if name not in found and matches_map(self._selectors[(ns, name)], labels):
                        found.add(name)
        return sorted(found)


class EndpointsWriter:
    """Computes and writes one Service's Endpoints and EndpointSlices."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.store = sim.store

    def sync(self, key: Key, cause: int | None) -> None:
        ns, name = key
        svc = self.store.get("Service", ns, name)
        if svc is None:
            # the Endpoints object has no owner; slices are garbage-collected through ownerReferences
            self.store.delete("Endpoints", ns, name, actor=ENDPOINTS_ACTOR, cause=cause)
            return
        spec = svc.get("spec") or {}
        selector = spec.get("selector")
        if not selector or spec.get("type") == "ExternalName":
            return
        publish = bool(spec.get("publishNotReadyAddresses"))
        groups: dict[tuple[Any, ...], list[tuple[dict[str, Any], bool]]] = {}
        for pod in self.store.select("Pod", ns, selector):
            ip = (pod.get("status") or {}).get("podIP")
            if not ip or pod_phase(pod) in ("Succeeded", "Failed"):
                continue
            ports = tuple(
                (p.get("name") or "", _resolve_port(p, pod), p.get("protocol", "TCP"))
                for p in spec.get("ports") or []
            )
            ports = tuple(p for p in ports if p[1] is not None)
            groups.setdefault(ports, []).append(
                (pod, publish or (is_pod_ready(pod) and not is_terminating(pod)))
            )
        self._write_endpoints(svc, groups, cause)
        self._write_slices(svc, groups, cause)

    def _write_endpoints(
        self,
        svc: dict[str, Any],
        groups: Mapping[tuple[Any, ...], list[tuple[dict[str, Any], bool]]],
        cause: int | None,
    ) -> None:
        """pkg/controller/endpoint endpoints_controller.go syncService."""
        ns, name = svc["metadata"].get("namespace") or "", svc["metadata"]["name"]
        subsets = []
        for ports, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
            ready = [_address(p) for p, ok in members if ok and not is_terminating(p)]
            not_ready = [_address(p) for p, ok in members if not ok and not is_terminating(p)]
            if not ready and not not_ready:
                continue
            subset: dict[str, Any] = {
                "ports": [
                    {"name": n, "port": port, "protocol": proto}
                    if n
                    else {"port": port, "protocol": proto}
                    for n, port, proto in ports
                ]
            }
            if ready:
                subset["addresses"] = sorted(ready, key=lambda a: a["ip"])
            if not_ready:
                subset["notReadyAddresses"] = sorted(not_ready, key=lambda a: a["ip"])
            subsets.append(subset)
        labels = dict(svc["metadata"].get("labels") or {})
        if (svc.get("spec") or {}).get("clusterIP") == "None":
            labels[HEADLESS_LABEL] = ""
        desired: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
        }
        if subsets:
            desired["subsets"] = subsets
        live = self.store.get("Endpoints", ns, name)
        if live is None:
            self.store.create(desired, actor=ENDPOINTS_ACTOR, cause=cause)
            self._log(svc, subsets, cause)
        elif (
            live.get("subsets") != desired.get("subsets")
            or (live["metadata"].get("labels") or {}) != labels
        ):
            upd = clone(live)
            upd["metadata"]["labels"] = labels
            upd.pop("subsets", None)
            if subsets:
                upd["subsets"] = subsets
            self.store.update(upd, actor=ENDPOINTS_ACTOR, cause=cause, quiet=True)
            self._log(svc, subsets, cause)

    def _log(
        self, svc: Mapping[str, Any], subsets: list[dict[str, Any]], cause: int | None
    ) -> None:
        ready = [a["ip"] for s in subsets for a in s.get("addresses", [])]
        not_ready = [a["ip"] for s in subsets for a in s.get("notReadyAddresses", [])]
        text = (
            f"{ref_of(svc)}: ready endpoints [{', '.join(ready)}]"
            if ready
            else f"{ref_of(svc)}: no ready endpoints"
        )
        if not_ready:
            text += f", not ready [{', '.join(not_ready)}]"
        self.sim.log(
            ENDPOINTS_ACTOR,
            "endpoints",
            ref_of(svc),
            text,
            cause=cause,
            ready=ready,
            not_ready=not_ready,
        )

    def _write_slices(
        self,
        svc: dict[str, Any],
        groups: Mapping[tuple[Any, ...], list[tuple[dict[str, Any], bool]]],
        cause: int | None,
    ) -> None:
        """pkg/controller/endpointslice reconciler.go: one slice per port set (≤ 100 endpoints)."""
        ns, name = svc["metadata"].get("namespace") or "", svc["metadata"]["name"]
        existing = self.store.list("EndpointSlice", ns, {"matchLabels": {SERVICE_NAME_LABEL: name}})
        by_ports = {str(s.get("ports")): s for s in existing}
        labels = {
            **(svc["metadata"].get("labels") or {}),
            SERVICE_NAME_LABEL: name,
            MANAGED_BY_LABEL: MANAGED_BY,
        }
        if (svc.get("spec") or {}).get("clusterIP") == "None":
            labels[HEADLESS_LABEL] = ""
        keep: set[str] = set()
        for ports, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
            slice_ports = [{"name": n, "port": port, "protocol": proto} for n, port, proto in ports]
            endpoints = sorted(
                (
                    {
                        "addresses": [(p.get("status") or {})["podIP"]],
                        "conditions": {
                            "ready": ok and not is_terminating(p),
                            "serving": is_pod_ready(p),
                            "terminating": is_terminating(p),
                        },
                        **(
                            {"nodeName": p["spec"]["nodeName"]}
                            if (p.get("spec") or {}).get("nodeName")
                            else {}
                        ),
                        "targetRef": {
                            "kind": "Pod",
                            "namespace": ns,
                            "name": p["metadata"]["name"],
                            "uid": p["metadata"].get("uid"),
                        },
                    }
                    for p, ok in members
                ),
                key=lambda e: e["addresses"][0],
            )
            live = by_ports.get(str(slice_ports))
            if live is None:
                obj = {
                    "apiVersion": "discovery.k8s.io/v1",
                    "kind": "EndpointSlice",
                    "metadata": {
                        "name": generate_name(
                            f"{name}-",
                            f"{svc['metadata'].get('uid')}/{template_hash({'p': slice_ports})}",
                        ),
                        "generateName": f"{name}-",
                        "namespace": ns,
                        "labels": labels,
                        "ownerReferences": [owner_reference(svc)],
                    },
                    "addressType": "IPv4",
                    "endpoints": endpoints,
                    "ports": slice_ports,
                }
                created = self.store.create(obj, actor=SLICE_ACTOR, cause=cause)
                keep.add(created["metadata"]["name"])
            else:
                keep.add(live["metadata"]["name"])
                if (
                    live.get("endpoints") != endpoints
                    or (live["metadata"].get("labels") or {}) != labels
                ):
                    upd = clone(live)
                    upd["endpoints"] = endpoints
                    upd["metadata"]["labels"] = labels
                    self.store.update(upd, actor=SLICE_ACTOR, cause=cause, quiet=True)
        stale = [s for s in existing if s["metadata"]["name"] not in keep]
        if not groups:
            # no endpoints at all: the controller keeps one empty placeholder slice
            if existing:
                first, stale = existing[0], existing[1:]
                if first.get("endpoints"):
                    upd = clone(first)
                    upd["endpoints"] = []
                    self.store.update(upd, actor=SLICE_ACTOR, cause=cause, quiet=True)
            else:
                self.store.create(
                    {
                        "apiVersion": "discovery.k8s.io/v1",
                        "kind": "EndpointSlice",
                        "metadata": {
                            "name": generate_name(
                                f"{name}-", f"{svc['metadata'].get('uid')}/placeholder"
                            ),
                            "generateName": f"{name}-",
                            "namespace": ns,
                            "labels": labels,
                            "ownerReferences": [owner_reference(svc)],
                        },
                        "addressType": "IPv4",
                        "endpoints": [],
                    },
                    actor=SLICE_ACTOR,
                    cause=cause,
                )
        for s in stale:
            self.store.delete(
                "EndpointSlice", ns, s["metadata"]["name"], actor=SLICE_ACTOR, cause=cause
            )


def _address(pod: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"ip": (pod.get("status") or {})["podIP"]}
    if (pod.get("spec") or {}).get("nodeName"):
        out["nodeName"] = pod["spec"]["nodeName"]
    meta = pod.get("metadata") or {}
    out["targetRef"] = {
        "kind": "Pod",
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
    }
    return out


def install_service_controllers(sim: Simulation) -> list[Any]:
    """Start the Service allocator and the Endpoints/EndpointSlice controller on ``sim``."""
    return [ServiceController(sim), EndpointsController(sim)]


# --- the cluster's built-in objects ---------------------------------------------------------------

COREDNS_REPLICAS = (
    2  # kubeadm's CoreDNS Deployment (cmd/kubeadm/app/phases/addons/dns/manifests.go)
)


def seed_cluster(sim: Simulation, *, dns_pods: bool = True) -> list[dict[str, Any]]:
    """Write the objects a fresh cluster of ``sim.profile`` already has; returns them.

    Namespaces ``default``, ``kube-system``, ``kube-public``, ``kube-node-lease`` (labelled
    ``kubernetes.io/metadata.name``, set by the NamespaceDefaultLabelName admission since 1.21);
    a Node per profile node (Ready); the ``kubernetes`` Service at the apiserver ClusterIP with its
    Endpoints and EndpointSlice pointing at ``apiserverEndpoint``; the ``kube-dns`` Service at the
    DNS ClusterIP; with ``dns_pods`` the CoreDNS Deployment, ReplicaSet and two Running, Ready pods
    and their endpoints. Call it before applying a release.
    """
    profile = sim.profile
    addr = addressing_of(profile)
    store = sim.store
    out: list[dict[str, Any]] = []

    def create(obj: dict[str, Any]) -> dict[str, Any]:
        created = store.create(obj, actor=BOOTSTRAP_ACTOR)
        out.append(created)
        return created

    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        create(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }
        )
    version = str(getattr(profile, "kubernetes_version", "1.31.0"))
    nodes = list(getattr(profile, "nodes", []) or [])
    for n in nodes:
        ip = getattr(n, "internal_ip", None)
        addresses = ([{"type": "InternalIP", "address": ip}] if ip else []) + [
            {"type": "Hostname", "address": n.name}
        ]
        ts = sim.timestamp()
        create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": n.name, "labels": dict(n.labels)},
                "spec": {"taints": [t.model_dump() for t in n.taints]} if n.taints else {},
                "status": {
                    "addresses": addresses,
                    # the profile's allocatable when it states one (the scheduler reads the same)
                    "capacity": dict(n.allocatable) or {"cpu": "8", "memory": "16Gi", "pods": "110"},
                    "allocatable": dict(n.allocatable) or {"cpu": "8", "memory": "16Gi", "pods": "110"},
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "KubeletReady",
                            "message": "kubelet is posting ready status",
                            "lastTransitionTime": ts,
                            "lastHeartbeatTime": ts,
                        }
                    ],
                    "nodeInfo": {
                        "kubeletVersion": f"v{version.lstrip('v')}",
                        "operatingSystem": "linux",
                        "architecture": "amd64",
                    },
                },
            }
        )
    # pkg/controlplane/reconcilers: the `kubernetes` Service, its Endpoints and EndpointSlice
    api_port = addr.apiserver_port
    create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kubernetes",
                "namespace": "default",
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "type": "ClusterIP",
                "clusterIP": addr.apiserver_cluster_ip,
                "clusterIPs": [addr.apiserver_cluster_ip],
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "sessionAffinity": "None",
                "internalTrafficPolicy": "Cluster",
                "ports": [
                    {"name": "https", "port": 443, "protocol": "TCP", "targetPort": api_port}
                ],
            },
            "status": {"loadBalancer": {}},
        }
    )
    create(
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {
                "name": "kubernetes",
                "namespace": "default",
                "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
            },
            "subsets": [
                {
                    "addresses": [{"ip": addr.apiserver_host}],
                    "ports": [{"name": "https", "port": api_port, "protocol": "TCP"}],
                }
            ],
        }
    )
    create(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "kubernetes",
                "namespace": "default",
                "labels": {SERVICE_NAME_LABEL: "kubernetes"},
            },
            "addressType": "IPv4",
            "endpoints": [
                {
                    "addresses": [addr.apiserver_host],
                    "conditions": {"ready": True, "serving": True, "terminating": False},
                }
            ],
            "ports": [{"name": "https", "port": api_port, "protocol": "TCP"}],
        }
    )
    dns_labels = {
        "k8s-app": "kube-dns",
        "kubernetes.io/cluster-service": "true",
        "kubernetes.io/name": "CoreDNS",
    }
    dns_ports = [
        {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
        {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
        {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
    ]
    dns_svc = create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kube-dns",
                "namespace": "kube-system",
                "labels": dns_labels,
                "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
            },
            "spec": {
                "type": "ClusterIP",
                "clusterIP": addr.kube_dns_cluster_ip,
                "clusterIPs": [addr.kube_dns_cluster_ip],
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "sessionAffinity": "None",
                "internalTrafficPolicy": "Cluster",
                "selector": {"k8s-app": "kube-dns"},
                "ports": dns_ports,
            },
            "status": {"loadBalancer": {}},
        }
    )
    if dns_pods and nodes:
        _seed_coredns(sim, create, dns_svc, nodes[0].name, addr.pod_cidr)
    return out


def _seed_coredns(
    sim: Simulation,
    create: Callable[[dict[str, Any]], dict[str, Any]],
    svc: dict[str, Any],
    node: str,
    pod_cidr: str,
) -> None:
    from helmsim.cluster.controllers.deployment import HASH_LABEL, REVISION

    ts = sim.timestamp()
    template: dict[str, Any] = {
        "metadata": {"labels": {"k8s-app": "kube-dns"}},
        "spec": {
            "containers": [
                {
                    "name": "coredns",
                    "image": "registry.k8s.io/coredns/coredns:v1.11.3",
                    "ports": [
                        {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                        {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                        {"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
                    ],
                }
            ],
            "priorityClassName": "system-cluster-critical",
            "serviceAccountName": "coredns",
        },
    }
    n = COREDNS_REPLICAS
    ready_status = {
        "replicas": n,
        "readyReplicas": n,
        "availableReplicas": n,
        "observedGeneration": 1,
    }

    def cond(type_: str, reason: str, message: str) -> dict[str, str]:
        return {
            "type": type_,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastUpdateTime": ts,
            "lastTransitionTime": ts,
        }

    dep = create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "coredns",
                "namespace": "kube-system",
                "labels": {"k8s-app": "kube-dns"},
                "annotations": {REVISION: "1"},
            },
            "spec": {
                "replicas": n,
                "selector": {"matchLabels": {"k8s-app": "kube-dns"}},
                "template": template,
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"},
                },
            },
            "status": {
                **ready_status,
                "updatedReplicas": n,
                "conditions": [
                    cond(
                        "Available",
                        "MinimumReplicasAvailable",
                        "Deployment has minimum availability.",
                    ),
                    cond(
                        "Progressing",
                        "NewReplicaSetAvailable",
                        'ReplicaSet "coredns" has successfully progressed.',
                    ),
                ],
            },
        }
    )
    h = template_hash(template)
    rs_template = clone(template)
    rs_template["metadata"]["labels"][HASH_LABEL] = h
    rs = create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"coredns-{h}",
                "namespace": "kube-system",
                "labels": dict(rs_template["metadata"]["labels"]),
                "annotations": {REVISION: "1"},
                "ownerReferences": [owner_reference(dep)],
            },
            "spec": {
                "replicas": n,
                "selector": {"matchLabels": {"k8s-app": "kube-dns", HASH_LABEL: h}},
                "template": rs_template,
            },
            "status": {**ready_status, "fullyLabeledReplicas": n},
        }
    )
    net = ipaddress.ip_network(pod_cidr)
    for i in range(n):
        name = generate_name(f"coredns-{h}-", f"coredns/{i}")
        create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": "kube-system",
                    "generateName": f"coredns-{h}-",
                    "labels": dict(rs_template["metadata"]["labels"]),
                    "ownerReferences": [owner_reference(rs)],
                },
                "spec": {**clone(rs_template["spec"]), "nodeName": node},
                "status": {
                    "phase": "Running",
                    "podIP": str(net.network_address + 2 + i),
                    "podIPs": [{"ip": str(net.network_address + 2 + i)}],
                    "startTime": ts,
                    "conditions": [
                        {"type": t, "status": "True", "lastTransitionTime": ts}
                        for t in (
                            "PodReadyToStartContainers",
                            "Initialized",
                            "Ready",
                            "ContainersReady",
                            "PodScheduled",
                        )
                    ],
                    "containerStatuses": [
                        {
                            "name": "coredns",
                            "ready": True,
                            "started": True,
                            "restartCount": 0,
                            "image": "registry.k8s.io/coredns/coredns:v1.11.3",
                            "state": {"running": {"startedAt": ts}},
                        }
                    ],
                },
            }
        )
    # what the endpoint controllers would write, so it exists even before they run
    EndpointsWriter(sim).sync(("kube-system", svc["metadata"]["name"]), None)
