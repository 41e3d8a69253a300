"""Scenario faults applied to one simulation.

:class:`ScenarioFaults` is the ``faults`` object ``simulate`` hands to the kubelet (the
``helmsim.cluster.behaviour.Faults`` protocol: forced exit codes, failed image pulls) and its
:meth:`ScenarioFaults.setup` is the ``setup`` callable that schedules the rest on the fresh
simulation: an API server outage window, a slow or failing provisioner, a delayed policy, a lost
node, slow image pulls. Every fault logs a ``fault`` trace event (actor ``scenario``) when it
strikes, so reports show it beside its effects.

Some faults reach into controllers through their instance attributes (documented per fault):
the simulator has no public hook for them yet (see docs/scenarios.md "Limits").
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from helmsim.errors import InputError
from helmsim.scenario import (
    ApiserverOutage,
    ContainerExit,
    Fault,
    ImagePull,
    NodeLost,
    PolicyPropagation,
    Provisioner,
)

ACTOR = "scenario"

# kubernetes pkg/controller/podgc/gc_controller.go: gcCheckPeriod = 20 s; quarantineTime = 40 s
# (how long a node must stay missing before its pods are force-deleted as orphans).
PODGC_PERIOD = 20.0
PODGC_QUARANTINE = 40.0
# gc_controller.go gcOrphaned: the condition PodGC sets before the forced deletion.
PODGC_CONDITION = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "DeletionByPodGC",
    "message": "PodGC: node no longer exists",
}


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


def _collection_path(obj: Mapping[str, Any]) -> str:
    """The REST path a create posts to (``/apis/batch/v1/namespaces/ns/jobs``)."""
    from helmsim.cluster.profile import guess_plural

    api = str(obj.get("apiVersion") or "v1")
    prefix = f"/api/{api}" if "/" not in api else f"/apis/{api}"
    ns = (obj.get("metadata") or {}).get("namespace")
    where = f"/namespaces/{ns}" if ns else ""
    return f"{prefix}{where}/{guess_plural(str(obj.get('kind', '')))}"


class ScenarioFaults:
    """The faults of one scenario for one simulation run (create one per run)."""

    def __init__(self, faults: Sequence[Fault]) -> None:
        self.faults = list(faults)
        self.sim: Any = None
        # pod creation order per owning workload: the attempt number of a Job's pod
        self._pods: dict[str, list[str]] = defaultdict(list)
        self._pull_counts: dict[tuple[str, str, int], int] = defaultdict(int)

    def _of(self, kind: type) -> list[Any]:
        return [f.spec for f in self.faults if isinstance(f.spec, kind)]

    # --- the kubelet's Faults protocol ------------------------------------------------------------
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
                    meta = pod.get("metadata") or {}
                    ref = f"Pod/{meta.get('namespace', '')}/{meta.get('name', '')}"
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

    def image_pull_error(self, pod: Mapping[str, Any], container: str, attempt: int) -> str | None:
        """The error text of a failing ``imagePull`` fault for this pull (``attempt`` 0-based)."""
        image = _image_of(pod, container)
        for f in self._of(ImagePull):
            if f.error is None or not self._pull_matches(f, pod, container, image, attempt + 1):
                continue
            meta = pod.get("metadata") or {}
            self._log(
                "fault",
                f"Pod/{meta.get('namespace', '')}/{meta.get('name', '')}",
                f"imagePull: pull {attempt + 1} of {image} for {container} fails: {f.error}",
            )
            return f.error
        return None

    @staticmethod
    def _pull_matches(f: ImagePull, pod: Mapping[str, Any], container: str, image: str, attempt: int) -> bool:
        return (
            f.match.matches(pod, container)
            and (f.image is None or fnmatch.fnmatchcase(image, f.image))
            and f.attempts.covers(attempt)
        )

    # --- scheduled faults ---------------------------------------------------------------------------
    def setup(self, sim: Any) -> None:
        """Install every fault on the fresh simulation (``simulate(..., setup=faults.setup)``)."""
        self.sim = sim
        if any(f.delay is not None for f in self._of(ImagePull)):
            self._slow_pulls(sim)
        for outage in self._of(ApiserverOutage):
            self._outage(sim, outage)
        for prov in self._of(Provisioner):
            self._provisioner(sim, prov)
        delays = self._of(PolicyPropagation)
        if delays:
            self._policy_delays(sim, delays)
        for lost in self._of(NodeLost):
            self._node_lost(sim, lost)

    def _log(self, what: str, obj: str, message: str, **data: Any) -> int | None:
        if self.sim is None:
            return None
        return int(self.sim.log(ACTOR, what, obj, message, **data).id)

    # image pulls: the kubelet draws ``image_pull`` right after its "Pulling" event, so the latency
    # lookup is wrapped and the pull it belongs to read from the last trace event.
    def _slow_pulls(self, sim: Any) -> None:
        base: Callable[[str], float] = sim.latency

        def latency(name: str) -> float:
            value = base(name)
            if name != "image_pull" or not len(sim.trace):
                return value
            last = sim.trace[len(sim.trace) - 1]
            if last.data.get("reason") != "Pulling" or not last.obj.startswith("Pod/"):
                return value
            _, ns, pod_name = last.obj.split("/", 2)
            pod = sim.store.get("Pod", ns, pod_name) or {}
            image = last.message.partition('"')[2].rstrip('"')
            spec = pod.get("spec") or {}
            names = [
                str(c.get("name"))
                for c in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ()))
                if c.get("image") == image
            ]
            uid = str((pod.get("metadata") or {}).get("uid", ""))
            for i, f in enumerate(self._of(ImagePull)):
                if f.delay is None:
                    continue
                container = next((n for n in names if f.match.matches(pod, n)), None)
                if container is None:
                    continue
                self._pull_counts[(uid, image, i)] += 1
                if self._pull_matches(f, pod, container, image, self._pull_counts[(uid, image, i)]):
                    self._log("fault", last.obj, f"imagePull: pulling {image} takes {f.delay:g}s longer")
                    value += f.delay
            return value

        sim.latency = latency

    # API server outage: pods' connections to kube-apiserver are dropped and Helm's (and
    # helm-controller's) object creations fail with the client's connection error.
    def _outage(self, sim: Any, f: ApiserverOutage) -> None:
        from helmsim.cluster.netstate import network_state
        from helmsim.cluster.network.model import KubeApiServer
        from helmsim.cluster.store import ApiError

        def down() -> bool:
            return f.from_ <= sim.now < f.to

        window = f"{f.from_:g}s-{f.to:g}s"
        sim.after(f.from_, lambda: self._log("fault", "apiserver", f"apiserverOutage: the API server is unreachable ({window})"))
        sim.after(f.to, lambda: self._log("fault-end", "apiserver", "apiserverOutage: the API server is reachable again"))
        net = network_state(sim)
        verdict = net.verdict

        def outage_verdict(pod: Mapping[str, Any], target: Any) -> Any:
            v = verdict(pod, target)
            if isinstance(target, KubeApiServer) and down():
                return dataclasses.replace(
                    v,
                    allowed=False,
                    reason=f"the API server is down (scenario fault apiserverOutage {window})",
                    decided_by=("fault apiserverOutage",),
                    cause="policy",
                )
            return v

        net.verdict = outage_verdict
        ip = getattr(getattr(sim.profile, "addressing", None), "apiserver_cluster_ip", "10.96.0.1")
        create = sim.store.create

        def failing_create(obj: Mapping[str, Any], *, actor: str, cause: int | None = None) -> Any:
            if actor in ("helm", "helm-controller") and down():
                # golang/go src/net/url/url.go Error.Error: `<Op> "<URL>": <Err>`, as client-go returns a
                # refused TCP connection to the API server's Service address.
                raise ApiError(
                    "ServiceUnavailable",
                    f'Post "https://{ip}:443{_collection_path(obj)}": dial tcp {ip}:443: connect: connection refused',
                )
            return create(obj, actor=actor, cause=cause)

        sim.store.create = failing_create

    # provisioner: ExternalProvisioner._refusal (the driver's error) and ._store_volume (the
    # volume appearing) of matching provisioners are wrapped.
    def _provisioner(self, sim: Any, f: Provisioner) -> None:
        from helmsim.cluster.controllers.provisioner import ExternalProvisioner

        found = [
            c
            for c in sim.controllers
            if isinstance(c, ExternalProvisioner) and fnmatch.fnmatchcase(c.provisioner, f.name)
        ]
        if not found:
            names = sorted(c.provisioner for c in sim.controllers if isinstance(c, ExternalProvisioner))
            raise InputError(
                f"provisioner fault: no provisioner matches {f.name!r} in profile "
                f"{getattr(sim.profile, 'name', '?')} (have: {', '.join(names) or 'none'})"
            )
        for prov in found:
            if f.error is not None:
                self._failing_provisioner(prov, f, f.error)
            elif f.delay is not None:
                self._slow_provisioner(prov, f.delay)

    def _failing_provisioner(self, prov: Any, f: Provisioner, error: str) -> None:
        refusal = prov._refusal
        counts: dict[str, int] = defaultdict(int)

        def failing(claim: Mapping[str, Any]) -> str:
            uid = str((claim.get("metadata") or {}).get("uid", ""))
            counts[uid] += 1
            if f.attempts.covers(counts[uid]):
                meta = claim.get("metadata") or {}
                self._log(
                    "fault",
                    f"PersistentVolumeClaim/{meta.get('namespace', '')}/{meta.get('name', '')}",
                    f"provisioner: {prov.provisioner} fails attempt {counts[uid]}: {error}",
                )
                return error
            return str(refusal(claim))

        prov._refusal = failing

    def _slow_provisioner(self, prov: Any, delay: float) -> None:
        store_volume = prov._store_volume

        def slow(nsname: tuple[str, str], uid: str, cause: int) -> None:
            self._log(
                "fault",
                f"PersistentVolumeClaim/{nsname[0]}/{nsname[1]}",
                f"provisioner: {prov.provisioner} takes {delay:g}s longer",
            )
            self.sim.after(delay, store_volume, nsname, uid, cause)

        prov._store_volume = slow

    # policy propagation: NetworkState._add_version draws the propagation of each new policy
    # version; for a matching policy the draw is increased by the fault's delay.
    def _policy_delays(self, sim: Any, faults: Sequence[PolicyPropagation]) -> None:
        from helmsim.cluster.netstate import network_state
        from helmsim.cluster.store import ref_of

        net = network_state(sim)
        add_version = net._add_version

        def delayed(doc: Mapping[str, Any], t0: float, cause: int | None) -> None:
            ref = ref_of(doc)
            extra = sum(f.delay for f in faults if fnmatch.fnmatchcase(ref, f.policy))
            if not extra:
                add_version(doc, t0, cause)
                return
            ev = self._log("fault", ref, f"policyPropagation: {ref} takes effect {extra:g}s later")
            draw = type(net)._propagation.__get__(net)
            net._propagation = lambda: draw() + extra
            try:
                add_version(doc, t0, ev if ev is not None else cause)
            finally:
                del net._propagation

        net._add_version = delayed

    # a lost node: containers stop at once, the Node object goes (the cloud's node lifecycle
    # controller removes Nodes whose instance is gone), the scheduler stops choosing it, and PodGC
    # force-deletes the orphaned pods after its quarantine.
    def _node_lost(self, sim: Any, f: NodeLost) -> None:
        names = [n.name for n in sim.profile.nodes]
        if f.node not in names:
            raise InputError(
                f"nodeLost: no node {f.node!r} in profile {sim.profile.name} (have: {', '.join(names)})"
            )
        sim.after(f.at, self._lose_node, f.node)

    def _lose_node(self, node: str) -> None:
        from helmsim.cluster.controllers.kubelet import Kubelet

        sim = self.sim
        ev = self._log("fault", f"Node/{node}", f"nodeLost: node {node} is gone")
        remaining = [n for n in sim.profile.nodes if n.name != node]
        sim.profile = sim.profile.model_copy(update={"nodes": remaining})
        for kubelet in (c for c in sim.controllers if isinstance(c, Kubelet)):
            for rt in list(kubelet.runtimes.values()):
                if rt.node != node or rt.stopped:
                    continue
                rt.stopped = True  # nothing runs there any more; no kubelet reports it
                for proc in [rt.main, *rt.procs.values()]:
                    if proc is not None and proc.is_alive and proc is not sim.env.active_process:
                        proc.interrupt("node lost")
        if sim.store.get("Node", None, node) is not None:
            sim.store.delete("Node", None, node, actor="cloud-node-lifecycle-controller", cause=ev)
        # PodGC runs every gcCheckPeriod from its start; the first run after the quarantine deletes.
        at = math.ceil((sim.now + PODGC_QUARANTINE) / PODGC_PERIOD) * PODGC_PERIOD
        sim.after(at - sim.now, self._gc_orphans, node, ev)

    def _gc_orphans(self, node: str, cause: int | None) -> None:
        sim = self.sim
        for pod in sim.store.list("Pod"):
            if (pod.get("spec") or {}).get("nodeName") != node or pod["metadata"].get("deletionTimestamp"):
                continue
            ns, name = pod["metadata"].get("namespace"), pod["metadata"]["name"]
            status = dict(pod.get("status") or {})
            if status.get("phase") not in ("Succeeded", "Failed"):
                status["phase"] = "Failed"
                conds = [c for c in status.get("conditions") or () if c.get("type") != "DisruptionTarget"]
                conds.append({**PODGC_CONDITION, "lastTransitionTime": sim.timestamp()})
                status["conditions"] = conds
                sim.store.update_status("Pod", ns, name, status, actor="pod-garbage-collector", cause=cause)
            sim.store.delete("Pod", ns, name, actor="pod-garbage-collector", cause=cause, grace=0.0)


__all__ = ["ScenarioFaults"]
