"""Scenario faults applied to one simulation, through the simulator's public hooks only.

:class:`ScenarioFaults` is the ``faults`` object ``simulate`` stores on the simulation (the
``helmsim.cluster.behaviour.Faults`` protocol): the kubelet asks it for forced exit codes and for
failing or slow image pulls, the network state for a policy's propagation, external provisioners
for a failing or slow provisioning. Its :meth:`ScenarioFaults.setup` is the ``setup`` callable
that installs the rest on the fresh simulation: an API server outage (``Store.availability``) and
a lost node (``Kubelet.node_lost``). Every fault logs a ``fault`` trace event (actor
``scenario``) when it strikes, so reports show it beside its effects.
"""

from __future__ import annotations

import fnmatch
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from helmsim.errors import InputError
from helmsim.scenario import (
    AgentStall,
    ApiserverIdentity,
    ApiserverOutage,
    ContainerExit,
    DnsProxy,
    EndpointInit,
    Fault,
    ImagePull,
    NodeLost,
    ObjectChange,
    PolicyPropagation,
    Provisioner,
)

ACTOR = "scenario"

# Who an API server outage refuses: the clients whose code handles a refused request (Helm and
# helm-controller report it, pods' kubectl exits, the kubelet, the scheduler and external
# provisioners retry). kube-controller-manager's controllers keep writing (not modelled).
OUTAGE_ACTORS = ("helm", "helm-controller", "kubelet", "scheduler")
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


def _controller(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    refs = meta.get("ownerReferences") or ()
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    if ref is None:
        return f"Pod/{meta.get('namespace', '')}/{meta.get('name', '')}"
    return f"{ref.get('kind')}/{meta.get('namespace', '')}/{ref.get('name')}"


def _image_of(pod: Mapping[str, Any], container: str) -> str:
    spec = pod.get("spec") or {}
    for c in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ())):
        if c.get("name") == container:
            return str(c.get("image") or "")
    return ""


def _ref(obj: Mapping[str, Any], kind: str) -> str:
    meta = obj.get("metadata") or {}
    return f"{kind}/{meta.get('namespace', '')}/{meta.get('name', '')}"


class ScenarioFaults:
    """The faults of one scenario for one simulation run (create one per run)."""

    def __init__(self, faults: Sequence[Fault]) -> None:
        self.faults = list(faults)
        self.sim: Any = None
        # pod creation order per owning workload: the attempt number of a Job's pod
        self._pods: dict[str, list[str]] = defaultdict(list)
        self._provisioners: set[str] = set()
        self._stalled: set[tuple[str, int]] = set()

    def _of(self, kind: type) -> list[Any]:
        return [f.spec for f in self.faults if isinstance(f.spec, kind)]

    def _log(self, what: str, obj: str, message: str, **data: Any) -> int | None:
        if self.sim is None:
            return None
        return int(self.sim.log(ACTOR, what, obj, message, **data).id)

    # --- kubelet hooks ----------------------------------------------------------------------------
    def _attempt(self, pod: Mapping[str, Any], run: int) -> int:
        """1-based attempt: the pod's position among its workload's pods, plus its restarts."""
        owner = _controller(pod)
        name = str((pod.get("metadata") or {}).get("name", ""))
        pods = self._pods[owner]
        if name not in pods:
            pods.append(name)
        return pods.index(name) + 1 + run

    def exit_code(self, pod: Mapping[str, Any], container: str, run: int) -> int | None:
        """A forced exit code (and its log line) for ``containerExit`` faults."""
        attempt = self._attempt(pod, run)
        for f in self._of(ContainerExit):
            if f.match.matches(pod, container) and f.attempts.covers(attempt):
                if self.sim is not None:
                    ref = _ref(pod, "Pod")
                    ev = self._log(
                        "fault",
                        ref,
                        f"containerExit: {container} exits {f.exit_code} on attempt {attempt} "
                        f"({f.attempts.describe()})",
                    )
                    if f.message:
                        self.sim.log(
                            "kubelet",
                            "container-log",
                            ref,
                            f"{container}: {f.message}",
                            cause=ev,
                            container=container,
                            line=f.message,
                        )
                return f.exit_code
        return None

    def _pulls(self, pod: Mapping[str, Any], container: str, attempt: int, *, slow: bool) -> list[ImagePull]:
        image = _image_of(pod, container)
        return [
            f
            for f in self._of(ImagePull)
            if (f.delay is not None) == slow
            and f.match.matches(pod, container)
            and (f.image is None or fnmatch.fnmatchcase(image, f.image))
            and f.attempts.covers(attempt + 1)
        ]

    def image_pull_error(self, pod: Mapping[str, Any], container: str, attempt: int) -> str | None:
        """The error text of a failing ``imagePull`` fault for this pull (``attempt`` 0-based)."""
        for f in self._pulls(pod, container, attempt, slow=False):
            self._log(
                "fault",
                _ref(pod, "Pod"),
                f"imagePull: pull {attempt + 1} of {_image_of(pod, container)} for {container} fails: {f.error}",
            )
            return f.error
        return None

    def image_pull_delay(self, pod: Mapping[str, Any], container: str, attempt: int) -> float | None:
        """Extra seconds for this pull from slow ``imagePull`` faults (``attempt`` 0-based)."""
        extra = sum((float(f.delay or 0.0) for f in self._pulls(pod, container, attempt, slow=True)), 0.0)
        if not extra:
            return None
        self._log(
            "fault",
            _ref(pod, "Pod"),
            f"imagePull: pulling {_image_of(pod, container)} for {container} takes {extra:g}s longer",
        )
        return extra

    # --- network state hook ----------------------------------------------------------------------
    def policy_propagation(self, doc: Mapping[str, Any], sampled: float) -> float:
        """The profile's propagation of a new policy version plus the matching faults' delays."""
        from helmsim.cluster.store import ref_of

        ref = ref_of(doc)
        extra = sum(float(f.delay) for f in self._of(PolicyPropagation) if fnmatch.fnmatchcase(ref, f.policy))
        if extra:
            self._log("fault", ref, f"policyPropagation: {ref} takes effect {extra:g}s later")
        return sampled + extra

    # --- Cilium hooks -----------------------------------------------------------------------------
    def endpoint_init(self, pod: Mapping[str, Any]) -> float | None:
        """Seconds the pod's endpoint keeps ``reserved:init`` after its build (inf: never)."""
        attempt = self._attempt(pod, 0)
        for f in self._of(EndpointInit):
            if f.match.matches(pod, f.match.container or "") and f.attempts.covers(attempt):
                secs = math.inf if f.seconds is None else float(f.seconds)
                how = "for good (it never gets its own)" if f.seconds is None else f"for {secs:g}s"
                self._log(
                    "fault",
                    _ref(pod, "Pod"),
                    f"endpointInit: the endpoint keeps the reserved:init identity {how} "
                    f"(attempt {attempt})",
                )
                return secs
        return None

    def agent_policy_time(self, node: str, doc: Mapping[str, Any], t: float) -> float:
        """When the agent on ``node`` enforces a policy it would otherwise enforce at ``t``: a
        stalled agent imports it only when the stall ends (inf: never)."""
        from helmsim.cluster.store import ref_of

        for i, f in enumerate(self._of(AgentStall)):
            end = math.inf if f.to is None else float(f.to)
            if fnmatch.fnmatchcase(node, f.node) and f.from_ <= t < end:
                ref = ref_of(doc)
                if (ref, i) not in self._stalled:
                    self._stalled.add((ref, i))
                    when = "never" if f.to is None else f"only at t={end:g}s"
                    self._log(
                        "fault",
                        ref,
                        f"agentStall: the cilium agent on {f.node} is stalled; {ref} is enforced "
                        f"there {when}",
                    )
                t = end
        return t

    def dns_proxy_down(self, node: str) -> bool:
        """Whether the agent's DNS proxy on ``node`` is not ready now (a ``dnsProxy`` fault)."""
        now = self.sim.now if self.sim is not None else 0.0
        return any(
            fnmatch.fnmatchcase(node, f.node) and f.from_ <= now and (f.to is None or now < f.to)
            for f in self._of(DnsProxy)
        )

    def apiserver_unlabelled(self, backends: Sequence[tuple[str, str]]) -> frozenset[str]:
        """The backend IPs (of ``(node name, ip)`` pairs) lacking the kube-apiserver label now."""
        out: set[str] = set()
        now = self.sim.now if self.sim is not None else 0.0
        for f in self._of(ApiserverIdentity):
            if not (f.from_ <= now and (f.to is None or now < f.to)):
                continue
            if f.backends == "all":
                out.update(ip for _, ip in backends)
            elif isinstance(f.backends, int):
                out.update(ip for _, ip in backends[: f.backends])
            else:
                out.update(ip for name, ip in backends if name in f.backends or ip in f.backends)
        return frozenset(out)

    # --- provisioner hooks -----------------------------------------------------------------------
    def _provisioner_faults(self, provisioner: str) -> list[Provisioner]:
        return [f for f in self._of(Provisioner) if fnmatch.fnmatchcase(provisioner, f.name)]

    def provision_error(self, claim: Mapping[str, Any], provisioner: str, attempt: int) -> str | None:
        """The driver's error for provisioning attempt ``attempt`` (1-based) of ``claim``."""
        for f in self._provisioner_faults(provisioner):
            if f.error is not None and f.attempts.covers(attempt):
                self._log(
                    "fault",
                    _ref(claim, "PersistentVolumeClaim"),
                    f"provisioner: {provisioner} fails attempt {attempt}: {f.error}",
                )
                return str(f.error)
        return None

    def provision_delay(self, claim: Mapping[str, Any], provisioner: str) -> float | None:
        """Extra seconds before ``claim``'s volume exists."""
        extra = sum(float(f.delay) for f in self._provisioner_faults(provisioner) if f.delay is not None)
        if not extra:
            return None
        self._log("fault", _ref(claim, "PersistentVolumeClaim"), f"provisioner: {provisioner} takes {extra:g}s longer")
        return extra

    # --- scheduled faults ------------------------------------------------------------------------
    def setup(self, sim: Any) -> None:
        """Install every fault on the fresh simulation (``simulate(..., setup=faults.setup)``)."""
        self.sim = sim
        self._check_provisioners(sim)
        outages = self._of(ApiserverOutage)
        if outages:
            self._outages(sim, outages)
        for lost in self._of(NodeLost):
            self._node_lost(sim, lost)
        for f in self._of(ApiserverIdentity):
            which = f.backends if isinstance(f.backends, str) else (
                f"the first {f.backends}" if isinstance(f.backends, int) else ", ".join(f.backends)
            )
            until = "" if f.to is None else f" until t={f.to:g}s"
            sim.after(
                f.from_,
                self._log,
                "fault",
                "Service/default/kubernetes",
                f"apiserverIdentity: the kube-apiserver identity label is missing on {which} "
                f"API server backend(s){until}",
            )
        for d in self._of(DnsProxy):
            until = "" if d.to is None else f" until t={d.to:g}s"
            sim.after(d.from_, self._log, "fault", f"Node/{d.node}", f"dnsProxy: the cilium DNS proxy on {d.node} is not ready{until}")
        for change in self._of(ObjectChange):
            sim.after(change.at, self._change_object, change)
        for g in self._of(AgentStall):
            until = "never recovers" if g.to is None else f"until t={g.to:g}s"
            sim.after(g.from_, self._log, "fault", f"Node/{g.node}", f"agentStall: the cilium agent on {g.node} imports no policy ({until})")

    def _check_provisioners(self, sim: Any) -> None:
        from helmsim.cluster.controllers.provisioner import ExternalProvisioner

        have = sorted(c.provisioner for c in sim.controllers if isinstance(c, ExternalProvisioner))
        self._provisioners = {c.name for c in sim.controllers if isinstance(c, ExternalProvisioner)}
        for f in self._of(Provisioner):
            if not any(fnmatch.fnmatchcase(p, f.name) for p in have):
                raise InputError(
                    f"provisioner fault: no provisioner matches {f.name!r} in profile "
                    f"{getattr(sim.profile, 'name', '?')} (have: {', '.join(have) or 'none'})"
                )

    # API server outage: the store refuses the writes (and Helm's polls) of the clients in
    # OUTAGE_ACTORS, pods' service accounts and external provisioners; pods' connections to the
    # API server are refused by the network state, which asks the same hook.
    def _outages(self, sim: Any, outages: Sequence[ApiserverOutage]) -> None:
        for f in outages:
            window = f"{f.from_:g}s-{f.to:g}s"
            sim.after(f.from_, self._log, "fault", "apiserver", f"apiserverOutage: the API server is unreachable ({window})")
            sim.after(f.to, self._log, "fault-end", "apiserver", "apiserverOutage: the API server is reachable again")
        refused = set(OUTAGE_ACTORS) | self._provisioners

        def availability(actor: str) -> str | None:
            if actor not in refused and not actor.startswith(SERVICE_ACCOUNT_PREFIX):
                return None
            for f in outages:
                if f.from_ <= sim.now < f.to:
                    return f"the API server is down (scenario fault apiserverOutage {f.from_:g}s-{f.to:g}s)"
            return None

        sim.store.availability = availability

    def settle_after(self) -> float:
        """The last time a fault changes an object: the run goes on past it (drift detection
        sees the change at the next interval)."""
        return max((c.at for c in self._of(ObjectChange)), default=0.0)

    def _change_object(self, change: ObjectChange) -> None:
        """Another manager edits or deletes a live object (drift for helm-controller)."""
        from helmsim.cluster.store import clone

        parts = change.object.split("/")
        kind, ns, name = (parts[0], parts[1], parts[2]) if len(parts) == 3 else (parts[0], None, parts[1])
        live = self.sim.store.get(kind, ns, name)
        if live is None:
            self._log("fault", change.object, f"objectChange: {change.object} does not exist at t={change.at:g}s")
            return
        if change.delete:
            self._log("fault", change.object, f"objectChange: {change.manager} deletes {change.object}")
            self.sim.store.delete(kind, ns, name, actor=change.manager)
            return
        new = clone(live)
        for pointer, value in sorted(change.set.items()):
            _set_pointer(new, pointer, value)
        what = ", ".join(f"{p}={v!r}" for p, v in sorted(change.set.items()))
        self._log("fault", change.object, f"objectChange: {change.manager} sets {what} on {change.object}")
        self.sim.store.update(new, actor=change.manager)

    # a lost node: Kubelet.node_lost stops its pods, deletes the Node and lets PodGC collect them.
    def _node_lost(self, sim: Any, f: NodeLost) -> None:
        names = [n.name for n in sim.profile.nodes]
        if f.node not in names:
            raise InputError(
                f"nodeLost: no node {f.node!r} in profile {sim.profile.name} (have: {', '.join(names)})"
            )
        sim.after(f.at, self._lose_node, f.node)

    def _lose_node(self, node: str) -> None:
        from helmsim.cluster.controllers.kubelet import Kubelet

        ev = self._log("fault", f"Node/{node}", f"nodeLost: node {node} is gone")
        for kubelet in (c for c in self.sim.controllers if isinstance(c, Kubelet)):
            kubelet.node_lost(node, cause=ev, instance_gone=True)


def _set_pointer(doc: dict[str, Any], pointer: str, value: Any) -> None:
    """Set the value at a JSON pointer, creating the maps on the way (list indexes must exist)."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    node: Any = doc
    for part in parts[:-1]:
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node.setdefault(part, {})
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


__all__ = ["OUTAGE_ACTORS", "ScenarioFaults"]
