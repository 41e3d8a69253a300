"""The network over simulated time: which policies are in effect, and timed connection attempts.

A NetworkPolicy / CiliumNetworkPolicy / CiliumClusterwideNetworkPolicy created at ``t0`` takes
effect at ``t0 + policy propagation`` (the profile's ``cni.policyPropagationSeconds``, sampled
once per policy version); a deleted policy is out of effect at once. Under Cilium a new pod's
endpoint is built by the CNI ADD with the policies the agent knows at that moment (cilium
plugins/cilium-cni cmd/cmd.go cmdAdd: SyncBuildEndpoint; runtime reference §5.5); the agent
knows a policy once it has propagated, so a policy the API server accepted a moment before the
pod still reaches that pod only at ``t0 + propagation``. This is the seed-1 race.

Under Cilium every node runs its own agent, each with its own propagation draw (the first node
takes the profile's draw, the others draw from a stream of their own so the main stream is the
same as with one node); a pod is governed by its node's agent. A new label set's security
identity is resolved inside the CNI ADD, which delays the pod's start. Scenario faults keep an
endpoint on ``reserved:init``, stall an agent's policy import, or drop the ``kube-apiserver``
label from API server backends; each connection to the API server goes to one backend.

:func:`connect` is a SimPy process body (``result = yield from connect(...)``) that dials a
:class:`helmsim.cluster.behaviour.Need` the way a Linux client does and asks the pure evaluator
(:mod:`helmsim.cluster.network`) for a verdict at each packet it sends.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import random
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field
from msgspec.structs import replace

from helmsim.cluster.behaviour import Need
from helmsim.cluster.network import (
    ClusterView,
    CniConfig,
    ContainerPort,
    Dns,
    FqdnTarget,
    IpTarget,
    KubeApiServer,
    Node,
    Pod,
    PolicySet,
    Service,
    ServicePort,
    ServiceTarget,
    Target,
    Verdict,
    client_error_text,
    evaluate,
)
from helmsim.cluster.network.labelfilter import DEFAULT_FILTER, LabelFilter
from helmsim.cluster.profile import addressing_of
from helmsim.cluster.store import key_of, ref_of
from helmsim.errors import InputError

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

POLICY_KINDS = ("NetworkPolicy", "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy")

# Linux TCP: the first SYN retransmission fires after TCP_TIMEOUT_INIT = 1 s (include/net/tcp.h)
# and each further one after twice the previous RTO (net/ipv4/tcp_timer.c
# tcp_retransmit_timer); net.ipv4.tcp_syn_retries = 6 (Documentation/networking/ip-sysctl.rst)
# gives SYNs at 0, 1, 3, 7, 15, 31, 63 s and ETIMEDOUT at 127 s.
SYN_OFFSETS: tuple[float, ...] = (0.0, 1.0, 3.0, 7.0, 15.0, 31.0, 63.0)
SYN_GIVE_UP = 127.0
# glibc resolv/resolv.h RES_TIMEOUT = 5 s, RES_DFLRETRY = 2; golang/go src/net/dnsconfig.go
# defaults timeout 5 s, attempts 2: a dropped query is sent twice, 5 s apart, then fails.
DNS_TIMEOUT = 5.0
DNS_ATTEMPTS = 2
# Linux net.ipv4.ip_local_port_range starts at 32768: the client's source ports (deterministic).
EPHEMERAL_PORT_BASE = 32768


class _Version(Struct):
    """One version (generation) of a policy object and when it is in effect."""

    key: tuple[str, str, str]
    doc: dict[str, Any]
    index: int
    created: float
    effective: float
    created_event: int | None
    removed: float | None = None
    effect_event: int | None = None
    # Cilium: when each node's agent enforces it (inf: never); empty: ``effective`` everywhere.
    per_node: dict[str, float] = field(default_factory=dict)
    node_events: dict[str, int] = field(default_factory=dict)


class ConnectResult(Struct, frozen=True):
    """How a connection attempt ended: ``ok``, when, the client's error text, the last event id."""

    ok: bool
    time: float
    error: str = ""
    event: int | None = None
    verdict: Verdict | None = None


class NetworkState:
    """Policies in effect over time and the cluster as the evaluator sees it, for one simulation."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.cni = _cni_config(sim.profile)
        self._versions: dict[tuple[str, str, str], list[_Version]] = {}
        self._endpoints: dict[tuple[str, str], tuple[float, float]] = {}
        # Cilium security identities by label set: when each becomes usable (allocated).
        self._identities: dict[tuple[tuple[str, str], ...], float] = {}
        self._identity_ready: dict[tuple[str, str], float] = {}
        self._sets: dict[tuple[Any, ...], PolicySet] = {}
        self._view: ClusterView | None = None
        self._ports = 0
        self._dials = 0
        # per-node agents' propagation draws and the load balancer's backend picks come from
        # streams of their own, so the simulation's main stream is what it is with one node
        self._agent_rng = random.Random(_stream_seed(sim, "cilium-agents"))
        self._lb_rng = random.Random(_stream_seed(sim, "service-lb"))
        self._pod_nodes: dict[tuple[str, str], str] = {}
        self.actor = "cilium" if self.cni.type == "cilium" else "network-policy"
        for doc in [o for kind in POLICY_KINDS for o in sim.store.list(kind)]:
            self._adopt(doc)
        self._ready_pods: dict[tuple[str, str], Pod] = {}
        """The pods the view holds (ready, with an address), kept by the Pod watch."""
        for p in sim.store.list("Pod"):
            self._track_pod("ADDED", p)
        sim.store.watch(POLICY_KINDS, self._on_policy)
        sim.store.watch(("Pod", "Service", "Namespace"), self._on_cluster)

    # --- policies -----------------------------------------------------------------------------
    def _propagation(self) -> float:
        lat = getattr(getattr(self.sim.profile, "cni", None), "policy_propagation_seconds", None)
        if lat is None:
            return self.sim.latency("policy_propagation")
        value = lat.sample(self.sim.rng) if self.sim.sample_latencies else lat.nominal()
        return max(0.0, float(value))

    def _created_event(self, doc: Mapping[str, Any]) -> tuple[float, int | None]:
        found = self.sim.trace.find(what="created", obj=ref_of(doc))
        return (found[-1].time, found[-1].id) if found else (self.sim.now, None)

    def _adopt(self, doc: Mapping[str, Any]) -> None:
        """A policy that existed before this state was built: in effect from creation + delay.

        The cluster's own baseline policies (created by ``cluster-bootstrap`` at t=0) have been
        in effect all along.
        """
        t0, ev = self._created_event(doc)
        if ev is not None and self.sim.trace[ev].actor == "cluster-bootstrap" and t0 == 0.0:
            key = key_of(doc)
            self._versions.setdefault(key, []).append(_Version(key, dict(doc), 0, 0.0, 0.0, ev))
            self._sets.clear()
            return
        self._add_version(doc, t0, ev)

    def _propagation_of(self, doc: Mapping[str, Any]) -> tuple[float, float]:
        """The propagation of a new version of ``doc``: the profile's draw, as the scenario's
        ``Faults.policy_propagation`` hook adjusts it (when the simulation has one), and the
        hook's addition."""
        sampled = self._propagation()
        hook = getattr(self.sim.faults, "policy_propagation", None)
        delay = sampled if hook is None else max(0.0, float(hook(doc, sampled)))
        return delay, delay - sampled

    def _add_version(self, doc: Mapping[str, Any], t0: float, cause: int | None) -> None:
        try:
            PolicySet.from_manifests([doc])
        except InputError as err:
            # a policy the enforcer cannot parse is not enforced: the Cilium agent refuses to
            # import it (cilium/cilium pkg/k8s/apis/cilium.io/v2 errors.go ErrEmptyCNP "Invalid
            # CiliumNetworkPolicy spec(s): empty policy", rule sanitizing) and nothing of it applies
            ref = ref_of(doc)
            self.sim.log(self.actor, "policy-rejected", ref, f"{ref} is not enforced: {err.message}", cause=cause)
            return
        key = key_of(doc)
        versions = self._versions.setdefault(key, [])
        delay, extra = self._propagation_of(doc)
        per_node = self._agent_times(doc, t0, delay, extra)
        effective = min(per_node.values()) if per_node else t0 + delay
        v = _Version(key, dict(doc), len(versions), t0, effective, cause, per_node=per_node)
        versions.append(v)
        self._sets.clear()
        times = sorted({t for t in per_node.values() if math.isfinite(t)}) or (
            [] if per_node else [effective]
        )
        for t in times:
            self.sim.after(max(0.0, t - self.sim.now), self._take_effect, v, t)

    def _agent_times(
        self, doc: Mapping[str, Any], t0: float, delay: float, extra: float
    ) -> dict[str, float]:
        """Under Cilium, when each node's agent enforces a new policy version: the first node
        after ``delay`` (the profile's draw with its faults), every other after a draw of its own
        plus the same fault delay; a stalled agent only when its stall ends."""
        nodes = [n.name for n in getattr(self.sim.profile, "nodes", ()) or ()]
        if self.cni.type != "cilium" or not nodes:
            return {}
        lat = getattr(getattr(self.sim.profile, "cni", None), "policy_propagation_seconds", None)
        out: dict[str, float] = {}
        for i, node in enumerate(nodes):
            if i == 0 or not self.sim.sample_latencies or lat is None:
                d = delay
            else:
                # cilium/cilium pkg/policy/k8s (the CNP watcher): each agent imports the policy
                # from its own watch, so each node's delay is its own draw
                d = max(0.0, float(lat.sample(self._agent_rng))) + extra
            t = t0 + d
            hook = getattr(self.sim.faults, "agent_policy_time", None)
            out[node] = t if hook is None else float(hook(node, doc, t))
        return out

    def _take_effect(self, v: _Version, t: float | None = None) -> None:
        if v.removed is not None and v.removed <= self.sim.now:
            return
        last = max((x for x in v.per_node.values() if math.isfinite(x)), default=self.sim.now)
        for old in self._versions.get(v.key, ()):
            if old is not v and old.index < v.index and old.removed is None and last <= self.sim.now:
                old.removed = self.sim.now
        self._sets.clear()
        ref = ref_of(v.doc)
        nodes = sorted(n for n, x in v.per_node.items() if x == t)
        everywhere = not v.per_node or len(nodes) == len(v.per_node)
        where = "" if everywhere else f" on {', '.join(nodes)}"
        pending = sorted(n for n, x in v.per_node.items() if not math.isfinite(x))
        tail = f"; never on {', '.join(pending)} (agent stalled)" if pending and v.effect_event is None else ""
        ev = self.sim.log(
            self.actor,
            "policy-in-effect",
            ref,
            f"{ref} in effect{where} (created at {v.created:.3f} s, propagation "
            f"{self.sim.now - v.created:.3f} s){tail}",
            cause=v.created_event,
            created=round(v.created, 3),
            **({"nodes": nodes} if not everywhere else {}),
        )
        if v.effect_event is None:
            v.effect_event = ev.id
        for n in nodes:
            v.node_events[n] = ev.id

    def _on_policy(self, event: str, doc: dict[str, Any]) -> None:
        key = key_of(doc)
        versions = self._versions.get(key)
        if event == "ADDED" or not versions:
            _, ev = self._created_event(doc)
            self._add_version(doc, self.sim.now, ev)
            return
        latest = versions[-1]
        if event == "DELETED" or doc["metadata"].get("deletionTimestamp"):
            for v in versions:
                if v.removed is None:
                    v.removed = self.sim.now
                    self._sets.clear()
                    if v is latest:
                        self.sim.log(
                            self.actor,
                            "policy-out-of-effect",
                            ref_of(doc),
                            f"{ref_of(doc)} no longer in effect (deleted)",
                            cause=v.effect_event,
                        )
            return
        if doc["metadata"].get("generation") != latest.doc["metadata"].get("generation"):
            found = self.sim.trace.find(what="configured", obj=ref_of(doc))
            self._add_version(doc, self.sim.now, found[-1].id if found else None)

    def endpoint_created(self, namespace: str, name: str, start: float, end: float) -> float:
        """Record a pod's Cilium endpoint build (CNI ADD) from ``start``, its regeneration ending
        at ``end``; return how long the CNI ADD takes.

        A pod whose label set has no security identity yet waits inside the CNI ADD for one to
        be allocated (the profile's ``cni.identityAllocationSeconds``): cilium/cilium
        pkg/endpoint/endpoint.go runIdentityResolver blocks ("Resolving identity labels
        (blocking)"), so the pod starts later instead of sending packets as ``reserved:init``.
        An ``endpointInit`` fault keeps the endpoint on ``reserved:init`` after the build.
        """
        if self.cni.type != "cilium":
            self._endpoints[(namespace, name)] = (start, end)
            return end - start
        pod = self.sim.store.get("Pod", namespace, name) or {}
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node:
            self._pod_nodes[(namespace, name)] = node
        labels = {str(k): str(v) for k, v in ((pod.get("metadata") or {}).get("labels") or {}).items()}
        # one security identity per set of identity labels (pkg/labelsfilter/filter.go Filter)
        kept = self.view().label_filter.identity_labels(labels)
        key = (("ns", namespace), *sorted(kept.items()))
        ready = self._identities.get(key)
        wait = 0.0
        if ready is None:
            wait = self.sim.latency("identity_allocation")
            ready = self._identities[key] = start + wait
            if wait > 0:
                self.sim.log(
                    self.actor,
                    "identity-pending",
                    f"Pod/{namespace}/{name}",
                    f"new label set: the CNI ADD resolves its security identity (blocking) for "
                    f"{wait:g}s; the pod starts at t={end + wait:.2f}s",
                    until=round(end + wait, 3),
                )
        else:
            wait = max(0.0, ready - start)
        done = end + wait
        self._endpoints[(namespace, name)] = (start, done)
        hook = getattr(self.sim.faults, "endpoint_init", None)
        stuck = hook(pod) if hook is not None and pod else None
        if stuck:
            self._identity_ready[(namespace, name)] = done + float(stuck)
        return done - start

    def _node_of(self, pod: tuple[str, str] | None) -> str | None:
        if pod is None:
            return None
        node = self._pod_nodes.get(pod)
        if node is None:
            live = self.sim.store.get("Pod", *pod) or {}
            node = str((live.get("spec") or {}).get("nodeName") or "") or None
            if node:
                self._pod_nodes[pod] = node
        return node

    def _effective_for(self, v: _Version, pod: tuple[str, str] | None) -> float:
        """When ``v`` applies to ``pod``: at propagation, whether the agent learns of it before the
        pod's endpoint build (then the build includes it, and the pod sends nothing before the
        build ends) or after (then the existing endpoint is regenerated)."""
        if not v.per_node:
            return v.effective
        node = self._node_of(pod)
        return v.per_node.get(node, v.effective) if node else v.effective

    def in_effect(
        self, t: float | None = None, pod: tuple[str, str] | None = None
    ) -> list[_Version]:
        """The policy versions in effect at ``t`` (default now), as enforced on ``pod`` if given."""
        now = self.sim.now if t is None else t
        out = []
        for versions in self._versions.values():
            live = [
                v
                for v in versions
                if self._effective_for(v, pod) <= now and (v.removed is None or now < v.removed)
            ]
            if live:
                out.append(live[-1])
        return sorted(out, key=lambda v: v.key)

    def policies(self, t: float | None = None, pod: tuple[str, str] | None = None) -> PolicySet:
        """The in-effect policies compiled (cached per distinct set)."""
        versions = self.in_effect(t, pod)
        sig = tuple((v.key, v.index) for v in versions)
        got = self._sets.get(sig)
        if got is None:
            got = self._sets[sig] = PolicySet.from_manifests([v.doc for v in versions])
        return got

    # --- the cluster view ------------------------------------------------------------------------
    def _on_cluster(self, event: str, obj: dict[str, Any]) -> None:
        if obj.get("kind") != "Pod" or self._track_pod(event, obj):
            self._view = None

    def _track_pod(self, event: str, obj: Mapping[str, Any]) -> bool:
        """Keep :attr:`_ready_pods` for one Pod write; True when the view's pods changed (a pod
        that is not ready, or stays as it was, leaves the view as it is)."""
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        ready = event != "DELETED" and (obj.get("status") or {}).get("podIP") and _ready(obj)
        new = net_pod(obj) if ready else None
        old = self._ready_pods.get(key)
        if (old is None and new is None) or (old is not None and new is not None and same_pod(old, new)):
            return False  # the old object stays: the evaluator's caches know pods by identity
        if new is None:
            del self._ready_pods[key]
        else:
            self._ready_pods[key] = new
        return True

    def view(self, source: Pod | None = None) -> ClusterView:
        """The cluster as the evaluator sees it: ready pods (plus ``source``), Services, nodes.
        Built again only after a write changed the ready pods, a Service or a Namespace."""
        if self._view is None:
            pods = [self._ready_pods[k] for k in sorted(self._ready_pods)]
            self._view = build_view(self.sim, pods)
        base = self._view
        if source is None or any(p.key == source.key for p in base.pods):
            return base
        return replace(base, pods=(*base.pods, source), not_ready=frozenset({source.key}))

    def net_pod(self, pod: Mapping[str, Any]) -> Pod:
        return net_pod(pod)

    def verdict(self, pod: Mapping[str, Any], target: Target) -> Verdict:
        """The evaluator's verdict for ``pod`` reaching ``target`` under what is in effect now."""
        src = net_pod(pod)
        ready = self._identity_ready.get((src.namespace, src.name), 0.0)
        if self.sim.now < ready and self.cni.policy_enforcement_mode != "never":
            # cilium/cilium daemon/cmd/endpoint_test.go TestEndpointAddNoLabels: policy is always
            # enforced on an endpoint with the reserved:init identity (identity 5), also in
            # "default" mode; no rule here selects reserved:init, so everything is dropped
            until = "never gets its own" if math.isinf(ready) else f"until t={ready:.2f}s"
            return Verdict(
                False,
                f"dropped: the endpoint has the reserved:init identity (identity 5; {until}) and "
                f"policy is enforced on init endpoints (policyEnforcementMode="
                f"{self.cni.policy_enforcement_mode})",
                dial=_dial_of(target, self.view()),
                cause="policy",
            )
        view = self.view(src)
        hook = getattr(self.sim.faults, "apiserver_unlabelled", None)
        if hook is not None and self.cni.type == "cilium":
            missing = hook(tuple((n.name, n.ip) for n in view.control_plane_nodes()))
            if missing:
                view = replace(view, apiserver_unlabelled=frozenset(missing))
        v = evaluate(src, target, self.policies(pod=(src.namespace, src.name)), view, self.cni)
        down = getattr(self.sim.faults, "dns_proxy_down", None)
        if v.allowed and v.proxied and down is not None and src.node and down(src.node):
            # a query policy sends through the agent's DNS proxy goes unanswered while the
            # proxy is not up (cilium/cilium pkg/fqdn/dnsproxy; #11004, #21059, #29508)
            return replace(
                v,
                allowed=False,
                reason=f"dropped: the cilium DNS proxy on {src.node} is not ready, and policy "
                f"sends this query through it ({', '.join(v.decided_by)})",
                cause="policy",
            )
        if v.allowed and isinstance(target, KubeApiServer):
            # An API server that is down (Store.unavailable) refuses the connection the policies
            # let through: the kubernetes Service still has its endpoint, whose port is closed.
            why = self.sim.store.unavailable(f"system:serviceaccount:{src.namespace}:{src.service_account}")
            if why is not None:
                return replace(v, allowed=False, reason=why, decided_by=(), cause="no-endpoints")
        return v

    def source_port(self) -> int:
        self._ports += 1
        return EPHEMERAL_PORT_BASE + self._ports

    # --- connections ---------------------------------------------------------------------------
    def connect(
        self,
        pod_key: tuple[str, str],
        need: Need,
        timeout: float,
        *,
        cause: int | None = None,
        container: str = "",
    ) -> Generator[Any, Any, ConnectResult]:
        """Dial ``need`` from the pod as a Linux client would; ``yield from`` it inside a process.

        DNS first for names (two queries 5 s apart), then TCP SYNs at 0, 1, 3, 7, 15, 31, 63 s
        until ``timeout`` (i/o timeout) or 127 s (connection timed out). The first packet sent
        while the verdict is "allowed" gets through, so a policy that takes effect inside the
        window lets a retransmitted SYN connect.
        """
        start = self.sim.now
        deadline = start + timeout
        ref = f"Pod/{pod_key[0]}/{pod_key[1]}"
        last = cause
        name = _lookup_name(need, pod_key[0], self._domain())
        if name is not None:
            res = yield from self._lookup(pod_key, need, name, deadline, last, container)
            if not res.ok or need.kind == "dns":
                return res
            last = res.event
        target = self._pick_backend(_target(need))
        syn_start = self.sim.now
        was_denied = False
        v: Verdict | None = None
        for n, offset in enumerate(SYN_OFFSETS):
            at = syn_start + offset
            if at > deadline:
                break
            if at > self.sim.now:
                yield self.sim.sleep(at - self.sim.now)
            pod = self.sim.store.get("Pod", *pod_key)
            if pod is None:
                return ConnectResult(False, self.sim.now, "pod deleted", last)
            v = self.verdict(pod, target)
            if v.allowed:
                why = self._effect_cause(v) if was_denied else None
                ev = self.sim.log(
                    self.actor,
                    "connected",
                    ref,
                    f"{container or ref} connected to {need} ({v.dial}) on attempt {n + 1}: {v.reason}",
                    cause=why if why is not None else last,
                    target=str(need),
                    attempt=n + 1,
                    dial=v.dial,
                    container=container,
                    decided_by=list(v.decided_by),
                )
                return ConnectResult(True, self.sim.now, "", ev.id, v)
            if v.cause in ("no-endpoints", "not-found"):
                err = _refused_text(v, need, self._dns_ip(), self._domain())
                ev = self.sim.log(
                    self.actor,
                    "connect-refused",
                    ref,
                    f"{container or ref}: {err} ({v.reason})",
                    cause=last,
                    target=str(need),
                    dial=v.dial,
                    container=container,
                )
                return ConnectResult(False, self.sim.now, err, ev.id, v)
            was_denied = True
            ev = self.sim.log(
                self.actor,
                "connect-denied",
                ref,
                f"{container or ref}: SYN {n + 1} to {need} ({v.dial}) dropped: {v.reason}",
                cause=last,
                target=str(need),
                attempt=n + 1,
                dial=v.dial,
                container=container,
                decided_by=list(v.decided_by),
                reason=v.reason,
            )
            last = ev.id
        give_up = min(deadline, syn_start + SYN_GIVE_UP)
        if give_up > self.sim.now:
            yield self.sim.sleep(give_up - self.sim.now)
        if v is None:  # the deadline passed during the lookup
            v = self.verdict(self.sim.store.get("Pod", *pod_key) or {}, target)
        if give_up < deadline or (give_up == deadline and timeout >= SYN_GIVE_UP):
            err = f"dial tcp {v.dial}: connect: connection timed out"
        else:
            err = client_error_text(v)
        ev = self.sim.log(
            self.actor,
            "connect-timeout",
            ref,
            f"{container or ref}: {err}",
            cause=last,
            target=str(need),
            dial=v.dial,
            container=container,
            error=err,
        )
        return ConnectResult(False, self.sim.now, err, ev.id, v)

    def _lookup(
        self,
        pod_key: tuple[str, str],
        need: Need,
        name: str,
        deadline: float,
        cause: int | None,
        container: str,
    ) -> Generator[Any, Any, ConnectResult]:
        ref = f"Pod/{pod_key[0]}/{pod_key[1]}"
        start = self.sim.now
        last = cause
        was_denied = False
        v: Verdict | None = None
        for n in range(DNS_ATTEMPTS):
            at = start + n * DNS_TIMEOUT
            if at > deadline:
                break
            if at > self.sim.now:
                yield self.sim.sleep(at - self.sim.now)
            pod = self.sim.store.get("Pod", *pod_key)
            if pod is None:
                return ConnectResult(False, self.sim.now, "pod deleted", last)
            v = self.verdict(pod, Dns("UDP", name))
            if v.allowed:
                why = self._effect_cause(v) if was_denied else None
                ev = self.sim.log(
                    self.actor,
                    "connected",
                    ref,
                    f"{container or ref} resolved {name} via {v.dial} on attempt {n + 1}: {v.reason}",
                    cause=why if why is not None else last,
                    target="dns",
                    lookup=name,
                    attempt=n + 1,
                    dial=v.dial,
                    container=container,
                    decided_by=list(v.decided_by),
                )
                return ConnectResult(True, self.sim.now, "", ev.id, v)
            if v.cause in ("dns-refused", "not-found"):
                err = _prefixed(client_error_text(replace(v, lookup=name)), need)
                ev = self.sim.log(
                    self.actor,
                    "connect-refused",
                    ref,
                    f"{container or ref}: {err} ({v.reason})",
                    cause=last,
                    target="dns",
                    lookup=name,
                    container=container,
                )
                return ConnectResult(False, self.sim.now, err, ev.id, v)
            was_denied = True
            ev = self.sim.log(
                self.actor,
                "connect-denied",
                ref,
                f"{container or ref}: DNS query {n + 1} for {name} to {v.dial} dropped: {v.reason}",
                cause=last,
                target="dns",
                lookup=name,
                attempt=n + 1,
                dial=v.dial,
                container=container,
                decided_by=list(v.decided_by),
                reason=v.reason,
            )
            last = ev.id
        give_up = min(deadline, start + DNS_ATTEMPTS * DNS_TIMEOUT)
        if give_up > self.sim.now:
            yield self.sim.sleep(give_up - self.sim.now)
        assert v is not None
        pod = self.sim.store.get("Pod", *pod_key) or {}
        ip = str((pod.get("status") or {}).get("podIP") or "0.0.0.0")
        err = _prefixed(
            client_error_text(
                replace(v, lookup=name), source_ip=ip, source_port=self.source_port()
            ),
            need,
        )
        ev = self.sim.log(
            self.actor,
            "connect-timeout",
            ref,
            f"{container or ref}: {err}",
            cause=last,
            target="dns",
            lookup=name,
            container=container,
            error=err,
        )
        return ConnectResult(False, self.sim.now, err, ev.id, v)

    def _pick_backend(self, target: Target) -> Target:
        """One API server backend per connection: the service load balancer translates the
        ClusterIP once, at connect (cilium/cilium bpf/bpf_sock.c sock4_connect with
        kube-proxy replacement; kube-proxy's iptables rules once per conntrack entry), so the
        SYN retransmissions of one dial go to the same backend. Deterministic runs go round
        robin; Monte Carlo runs pick at random (bpf/lib/lb.h lb4_select_backend_id)."""
        if not isinstance(target, KubeApiServer) or self.cni.type != "cilium":
            return target
        backends = self.view().control_plane_nodes()
        if len(backends) < 2:
            return target
        if self.sim.sample_latencies:
            i = self._lb_rng.randrange(len(backends))
        else:
            i = self._dials % len(backends)
        self._dials += 1
        return KubeApiServer(backend=backends[i].ip)

    def _effect_cause(self, v: Verdict) -> int | None:
        """The policy-in-effect event of the (first) policy that allowed ``v``, if it has one."""
        for pid in v.decided_by:
            for versions in self._versions.values():
                latest = versions[-1]
                if _policy_id(latest.doc) == pid:
                    for ver in reversed(versions):
                        if ver.effect_event is not None:
                            return ver.effect_event
                    return latest.created_event
        return None

    def _dns_ip(self) -> str:
        return addressing_of(self.sim.profile).kube_dns_cluster_ip

    def _domain(self) -> str:
        return addressing_of(self.sim.profile).cluster_domain


def network_state(sim: Simulation) -> NetworkState:
    """The simulation's network state (``sim.network``, created on first use, then shared)."""
    if sim.network is None:
        sim.network = NetworkState(sim)
    return sim.network


def connect(
    sim: Any,
    pod: Mapping[str, Any],
    target: Need,
    timeout: float,
    *,
    cause: int | None = None,
    container: str = "",
) -> Generator[Any, Any, ConnectResult]:
    """``result = yield from connect(sim, pod, need, 30)`` inside a SimPy process."""
    meta = pod.get("metadata") or {}
    key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    return network_state(sim).connect(key, target, timeout, cause=cause, container=container)


# --- helpers ---------------------------------------------------------------------------------------


def _policy_id(doc: Mapping[str, Any]) -> str:
    kind, ns, name = key_of(doc)
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def _stream_seed(sim: Any, name: str) -> int:
    """A seed for a side stream of random draws, derived from the simulation's main stream's
    state without consuming from it."""
    state = sim.rng.getstate()[1]
    # a digest, not hash(): str hashes are salted per process (PYTHONHASHSEED), which made the
    # agents' draws and the load balancer's picks differ from one process to the next
    text = f"{name}:{','.join(map(str, state[:8]))}:{state[-1]}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def _dial_of(target: Target, view: ClusterView) -> str:
    if isinstance(target, KubeApiServer):
        return f"{view.apiserver_service_ip}:443"
    if isinstance(target, Dns):
        return f"{view.dns_service_ip}:53"
    if isinstance(target, IpTarget):
        return f"{target.address}:{target.port}"
    return ""


def _cni_config(profile: Any) -> CniConfig:
    cni = getattr(profile, "cni", None)
    if cni is None:
        return CniConfig()
    return CniConfig(
        type=cni.type,
        policy_enforcement_mode=cni.policy_enforcement_mode,
        policy_cidr_match_mode=getattr(cni, "policy_cidr_match_mode", "") or "",
        enable_l7_proxy=bool(getattr(cni, "enable_l7_proxy", True)),
    )


def _label_filter(profile: Any) -> LabelFilter:
    prefixes = getattr(getattr(profile, "cni", None), "identity_labels", None) or ()
    return LabelFilter.build(prefixes) if prefixes else DEFAULT_FILTER


def _lookup_name(need: Need, namespace: str, domain: str) -> str | None:
    if need.kind == "fqdn":
        return need.host
    if need.kind == "service":
        ns, name = need.host.split("/", 1)
        return f"{name}.{ns}.svc.{domain}"
    if need.kind == "dns":
        # a Service's name.namespace.svc is sent as the search path completes it (resolv.conf)
        return (f"{need.host}.{domain}" if need.host.endswith(".svc") else need.host) or f"kubernetes.default.svc.{domain}"
    return None


def _target(need: Need) -> Target:
    if need.kind == "kube-apiserver":
        return KubeApiServer()
    if need.kind == "fqdn":
        return FqdnTarget(need.host, need.port, need.protocol)
    if need.kind == "service":
        ns, name = need.host.split("/", 1)
        return ServiceTarget(ns, name, need.port)
    if need.kind == "cidr":
        net = ipaddress.ip_network(need.host, strict=False)
        addr = str(net.network_address) if net.num_addresses == 1 else need.host
        return IpTarget(addr, need.port, need.protocol)
    return Dns("UDP", need.host or None)


def _prefixed(text: str, need: Need) -> str:
    # golang/go src/net/net.go OpError.Error: a failed resolution inside Dial prints
    # "dial tcp: lookup …".
    return f"dial tcp: {text}" if need.kind in ("fqdn", "service") else text


def _refused_text(v: Verdict, need: Need, dns_ip: str, domain: str) -> str:
    if v.cause == "not-found" and need.is_name:
        # golang/go src/net/dnsclient_unix.go: NXDOMAIN is "no such host".
        return f"dial tcp: lookup {_lookup_name(need, '', domain)} on {dns_ip}:53: no such host"
    # kube-proxy and Cilium reject connections to a Service without endpoints (ICMP unreachable).
    return f"dial tcp {v.dial}: connect: connection refused"


def net_pod(pod: Mapping[str, Any]) -> Pod:
    """A Pod manifest as the evaluator sees it."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    ports = tuple(
        ContainerPort(
            str(p.get("name")), int(p["containerPort"]), str(p.get("protocol") or "TCP").upper()
        )
        for c in spec.get("containers") or ()
        for p in c.get("ports") or ()
        if p.get("name") and isinstance(p.get("containerPort"), int)
    )
    return Pod(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        ip=status.get("podIP") or None,
        node=spec.get("nodeName"),
        ports=ports,
        service_account=str(
            spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        ),
        host_network=bool(spec.get("hostNetwork")),
    )


def same_pod(a: Pod, b: Pod) -> bool:
    """Whether two network pods say the same (``Pod`` compares by identity)."""
    return (a.namespace, a.name, dict(a.labels), a.ip, a.node, a.ports, a.service_account, a.host_network) == (
        b.namespace, b.name, dict(b.labels), b.ip, b.node, b.ports, b.service_account, b.host_network
    )


def _ready(pod: Mapping[str, Any]) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def build_view(sim: Any, ready_pods: Sequence[Pod] | None = None) -> ClusterView:
    """The evaluator's ClusterView of the simulated cluster: profile nodes and addresses, CoreDNS,
    the ``kubernetes`` and ``kube-dns`` Services, Namespaces, ready pods and Services.
    ``ready_pods`` are the ready pods with an address, by key, when the caller keeps them."""
    profile = sim.profile
    addressing = addressing_of(profile)
    api_ip = addressing.apiserver_cluster_ip
    dns_ip = addressing.kube_dns_cluster_ip
    domain = addressing.cluster_domain
    endpoint = addressing.apiserver_endpoint
    ep_host, _, ep_port = endpoint.rpartition(":")
    listed = [str(e) for e in getattr(addressing, "apiserver_endpoints", None) or ()]
    hosts = [e.rpartition(":")[0].strip("[]") for e in listed] or [ep_host.strip("[]")]
    if listed:
        ep_port = listed[0].rpartition(":")[2]
    nodes = []
    for i, n in enumerate(getattr(profile, "nodes", ()) or ()):
        ip = n.internal_ip or f"172.18.0.{i + 2}"
        # the default/kubernetes endpoints name the nodes serving the API server; with a single
        # endpoint, control-plane labelled nodes are taken to serve it too (kind, k3s)
        labelled = "node-role.kubernetes.io/control-plane" in n.labels and not listed
        nodes.append(Node(n.name, ip, labelled or ip in hosts))
    if not any(n.ip in hosts for n in nodes):
        # A managed control plane (EKS): the API server is not on a node; model its endpoints.
        nodes = [replace(n, control_plane=False) for n in nodes]
        for j, h in enumerate(hosts):
            nodes.append(
                Node("kube-apiserver" if len(hosts) == 1 else f"kube-apiserver-{j}", h, True, external=True)
            )
    node0 = nodes[0].name if nodes else None
    pod_cidr = ipaddress.ip_network(str(getattr(addressing, "pod_cidr", "10.244.0.0/16")))
    dns_ports = (
        ContainerPort("dns", 53, "UDP"),
        ContainerPort("dns-tcp", 53, "TCP"),
        ContainerPort("metrics", 9153, "TCP"),
    )
    # kubernetes cmd/kubeadm/app/phases/addons/dns/manifests.go: CoreDNS pods k8s-app=kube-dns.
    coredns = tuple(
        Pod(
            "kube-system",
            f"coredns-{i}",
            {"k8s-app": "kube-dns"},
            str(pod_cidr.network_address + 2 + i),
            node0,
            dns_ports,
            "coredns",
        )
        for i in range(2)
    )
    services = [
        Service(
            "default",
            "kubernetes",
            api_ip,
            (ServicePort(443, int(ep_port or 6443), "TCP", "https"),),
            None,
            {"component": "apiserver", "provider": "kubernetes"},
        ),
        Service(
            "kube-system",
            "kube-dns",
            dns_ip,
            (
                ServicePort(53, 53, "UDP", "dns"),
                ServicePort(53, 53, "TCP", "dns-tcp"),
                ServicePort(9153, 9153, "TCP", "metrics"),
            ),
            {"k8s-app": "kube-dns"},
            {"k8s-app": "kube-dns"},
        ),
    ]
    for svc in sim.store.list("Service"):
        meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
        if (meta.get("namespace"), meta.get("name")) in (
            ("default", "kubernetes"),
            ("kube-system", "kube-dns"),
        ):
            continue
        ports = tuple(
            ServicePort(
                int(p["port"]),
                p.get("targetPort"),
                str(p.get("protocol") or "TCP").upper(),
                str(p.get("name") or ""),
            )
            for p in spec.get("ports") or ()
            if isinstance(p.get("port"), int)
        )
        ip = spec.get("clusterIP")
        services.append(
            Service(
                str(meta.get("namespace") or "default"),
                str(meta.get("name")),
                None if ip in (None, "", "None") else str(ip),
                ports,
                spec.get("selector") or None if "selector" in spec else None,
                meta.get("labels") or {},
            )
        )
    namespaces: dict[str, Mapping[str, str]] = {
        "default": {},
        "kube-system": {},
        "kube-public": {},
        "kube-node-lease": {},
    }
    for ns in sim.store.list("Namespace"):
        namespaces[str(ns["metadata"]["name"])] = ns["metadata"].get("labels") or {}
    if ready_pods is None:
        ready_pods = [
            net_pod(p) for p in sim.store.list("Pod") if (p.get("status") or {}).get("podIP") and _ready(p)
        ]
    pods = list(ready_pods)
    for np_ in pods:
        namespaces.setdefault(np_.namespace, {})
    return ClusterView(
        namespaces=namespaces,
        pods=coredns + tuple(pods),
        services=tuple(services),
        nodes=tuple(nodes),
        apiserver_service_ip=api_ip,
        dns_service_ip=dns_ip,
        cluster_domain=domain,
        label_filter=_label_filter(profile) if getattr(getattr(profile, "cni", None), "type", "") == "cilium" else DEFAULT_FILTER,
    )
