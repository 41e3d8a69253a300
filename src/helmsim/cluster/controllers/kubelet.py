"""The kubelet: runs bound pods through sandbox, image pulls, init and app containers.

One SimPy process per pod and per app container. What a container does when it runs comes from
the behaviour model (:mod:`helmsim.cluster.behaviour`); its connections go through the network
state (:mod:`helmsim.cluster.netstate`). Status is written the way ``kubectl get pod -o yaml``
shows it: phase, conditions with lastTransitionTime, container states, restartCount. The Secrets
and ConfigMaps a pod references (:mod:`helmsim.cluster.podrefs`) gate it as they gate the real
kubelet: volumes before the sandbox (FailedMount, ContainerCreating), environment before each
container start (CreateContainerConfigError), pull secrets as a warning.

Not modelled: liveness probes (they always pass), serialized image pulls, the pod worker's
resync period (a restart happens exactly when its back-off expires), ephemeral and sidecar
(restartable init) containers, resource limits and OOM kills.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import ipaddress
import math
from collections import defaultdict
from collections.abc import Generator, Mapping
from typing import Any

import simpy

from helmsim.cluster import podrefs, registries, running
from helmsim.cluster.programauth import ProgramAuth
from helmsim.cluster.controllers.attach import MAX_WAIT_FOR_UNMOUNT, Attachments, Volume, volumes_to_attach
from helmsim.cluster.controllers.attach import SOURCE as ATTACH_SOURCE
from helmsim.cluster.behaviour import (
    BehaviourContext,
    ContainerModel,
    PodModel,
    PolicyCache,
    model_pod,
)
from helmsim.cluster.engine import Controller, Simulation
from helmsim.cluster.netstate import network_state
from helmsim.cluster.profile import addressing_of
from helmsim.cluster.store import ApiUnreachable, clone, ref_of
from helmsim.kube import imageref
from helmsim.kube.gotime import go_duration
from helmsim.kube.scope import CLUSTER_SCOPED_KINDS
from helmsim.kube.workloads import POD_KINDS, pod_template

SOURCE = "kubelet"
# kubernetes pkg/kubelet/active_deadline.go: reason and message of an expired activeDeadlineSeconds.
DEADLINE_REASON = "DeadlineExceeded"
DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"
# k8s.io/api core/v1/types.go Probe: periodSeconds defaults to 10, successThreshold to 1.
PROBE_PERIOD = 10.0
# Exit codes of a container stopped by the kubelet: SIGTERM on deletion, SIGKILL on deadline.
EXIT_SIGTERM = 143
EXIT_SIGKILL = 137
# kubernetes pkg/kubelet/status/status_manager.go: syncPeriod = 10 s, the status manager's retry
# of pod status updates that failed.
STATUS_SYNC_PERIOD = 10.0
# kubernetes pkg/kubelet/kubelet.go backOffPeriod = 10 s: a pod sync that failed (a container
# whose config could not be generated) is requeued after it (pod_workers.go completeWork; the
# real requeue adds up to 50 % jitter, not modelled).
POD_SYNC_BACKOFF = 10.0
# kubernetes pkg/kubelet/volumemanager/volume_manager.go: WaitForAttachAndMount polls every
# 300 ms for at most 2m3s, then the pod sync fails and is requeued.
MOUNT_POLL_INTERVAL = 0.3
MOUNT_WAIT_TIMEOUT = 123.0
# kubernetes pkg/util/goroutinemap/exponentialbackoff/exponential_backoff.go: a failed mount
# operation is retried after 500 ms, doubling to 2m2s.
MOUNT_RETRY_INITIAL = 0.5
MOUNT_RETRY_CAP = 122.0

Key = tuple[str, str]

# --- a lost node ----------------------------------------------------------------------------------
# kubernetes pkg/controller/nodelifecycle/config/v1alpha1/defaults.go: NodeMonitorGracePeriod 40 s
# (how long a silent kubelet is trusted before its Node's Ready condition turns Unknown).
NODE_MONITOR_GRACE = 40.0
# kubernetes plugin/pkg/admission/defaulttolerationseconds: every pod tolerates the not-ready and
# unreachable NoExecute taints for 300 s unless it says otherwise.
DEFAULT_TOLERATION_SECONDS = 300.0
# kubernetes staging/src/k8s.io/api/core/v1/well_known_taints.go TaintNodeUnreachable.
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
# kubernetes pkg/controller/podgc/gc_controller.go: gcCheckPeriod = 20 s; quarantineTime = 40 s
# (how long a node must stay missing before its pods are force-deleted as orphans).
PODGC_PERIOD = 20.0
PODGC_QUARANTINE = 40.0
# gc_controller.go gcOrphaned: the condition PodGC sets (markFailedAndDeletePodWithCondition
# also sets phase Failed) before the forced deletion (grace 0).
PODGC_CONDITION = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "DeletionByPodGC",
    "message": "PodGC: node no longer exists",
}
# kubernetes pkg/controller/tainteviction/taint_eviction.go addConditionAndDeletePod.
TAINT_EVICTION_CONDITION = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "DeletionByTaintManager",
    "message": "Taint manager: deleting due to NoExecute taint",
}


def default_pull_policy(image: str) -> str:
    """k8s.io/kubernetes pkg/apis/core/v1/defaults.go SetDefaults_Container: Always when the
    tag is ``latest`` (pkg/util/parsers ParseImageName: an image with neither tag nor digest has
    tag ``latest``; ``x:latest@sha256:…`` keeps it), else IfNotPresent."""
    try:
        ref = imageref.parse(image)
    except imageref.ImageRefError:
        return "IfNotPresent"  # the parse error is ignored there: tag ""
    tag = ref.tag or ("" if ref.digest else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


def image_key(image: str) -> str:
    """The reference the runtime stores an image under (its normalised pulled form)."""
    try:
        return imageref.parse(image).pulled
    except imageref.ImageRefError:
        return image


def get_phase(
    spec: Mapping[str, Any],
    init_statuses: list[dict[str, Any]],
    statuses: list[dict[str, Any]],
    *,
    terminal: bool = False,
) -> str:
    """The pod phase from container statuses: kubernetes pkg/kubelet/kubelet_pods.go getPhase."""
    policy = spec.get("restartPolicy") or "Always"
    by_name = {s["name"]: s for s in init_statuses}
    pending_init = failed_init = 0
    for c in spec.get("initContainers") or ():
        st = by_name.get(c.get("name"))
        state = (st or {}).get("state") or {}
        if st is None or "running" in state:
            pending_init += 1
        elif "terminated" in state:
            if state["terminated"].get("exitCode") != 0:
                failed_init += 1
        elif "waiting" in state:
            last = (st.get("lastState") or {}).get("terminated")
            if last is not None:
                if last.get("exitCode") != 0:
                    failed_init += 1
            else:
                pending_init += 1
        else:
            pending_init += 1
    by_name = {s["name"]: s for s in statuses}
    unknown = running = waiting = stopped = succeeded = 0
    for c in spec.get("containers") or ():
        st = by_name.get(c.get("name"))
        if st is None:
            unknown += 1
            continue
        state = st.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            if state["terminated"].get("exitCode") == 0:
                succeeded += 1
        elif "waiting" in state:
            if (st.get("lastState") or {}).get("terminated") is not None:
                stopped += 1
            else:
                waiting += 1
        else:
            unknown += 1
    if failed_init > 0 and policy == "Never":
        return "Failed"
    if pending_init > 0 or waiting > 0:
        return "Pending"
    if running > 0 and unknown == 0:
        return "Running"
    if running == 0 and stopped > 0 and unknown == 0:
        if terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if policy == "Never":
            return "Failed"
        return "Running"
    return "Pending"


def _secret_data(secret: Mapping[str, Any]) -> dict[str, str]:
    """A Secret's files as a mount shows them: ``data`` decoded from base64, ``stringData``
    over it (kubernetes pkg/apis/core/v1/conversion.go: stringData is merged into data on write).
    Read only by checks that look at a key's presence; never printed."""
    out: dict[str, str] = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            out[str(key)] = base64.b64decode(str(value), validate=False).decode("utf-8", "replace")
        except (ValueError, TypeError):
            continue
    for key, value in (secret.get("stringData") or {}).items():
        out[str(key)] = str(value)
    return out


def behaviour_context(sim: Simulation, pod: Mapping[str, Any]) -> BehaviourContext:
    """What the behaviour model may read: the store plus the release being installed.

    ``sim.release_objects`` holds the manifests of the release, so a policy or binding that has
    not been applied yet still says what the workload is meant to reach;
    ``sim.behaviour_overrides`` holds scenario overrides.
    """
    store = sim.store
    def gather(*kinds: str) -> list[Mapping[str, Any]]:
        seen: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        for o in (o for k in kinds for o in sim.release_objects_of(k)):
            kind = str(o.get("kind"))
            doc = o
            meta = doc.get("metadata") or {}
            if kind not in CLUSTER_SCOPED_KINDS and not meta.get("namespace"):
                # Helm installs namespaced objects without a namespace into the release's;
                # copy only what changes (the model never mutates what it reads).
                meta = {**meta, "namespace": str(pod["metadata"].get("namespace") or "default")}
                doc = {**o, "metadata": meta}
            seen[(kind, str(meta.get("namespace") or ""), str(meta.get("name")))] = doc
        for kind in kinds:
            for o in store.list(kind):
                meta = o["metadata"]
                seen[(kind, str(meta.get("namespace") or ""), str(meta.get("name")))] = o
        return [seen[k] for k in sorted(seen)]

    config_maps = {
        (str(o["metadata"].get("namespace") or ""), str(o["metadata"]["name"])): {
            str(k): str(v) for k, v in (o.get("data") or {}).items()
        }
        for o in gather("ConfigMap")
    }
    def secret_data(namespace: str, name: str) -> Mapping[str, str] | None:
        # read when a `file` check asks (rare), from the store, else the release's rendered objects
        live: Mapping[str, Any] | None = store.get("Secret", namespace, name)
        if live is None:
            default_ns = str(pod["metadata"].get("namespace") or "default")
            live = next(
                (
                    o for o in sim.release_objects_of("Secret")
                    if str((o.get("metadata") or {}).get("name")) == name
                    and str((o.get("metadata") or {}).get("namespace") or default_ns) == namespace
                ),
                None,
            )
        return None if live is None else _secret_data(live)

    addressing = addressing_of(sim.profile)
    templates: list[tuple[str, Mapping[str, str], tuple[tuple[str, int], ...]]] = []
    specs: list[tuple[str, Mapping[str, Any]]] = []
    for kind in POD_KINDS:  # the release's pod templates (it does not change during a run)
        for o in sim.release_objects_of(kind):
            tpl = pod_template(o)
            if tpl is None:
                continue
            meta = tpl.get("metadata") or {}
            named = tuple(
                (str(p.get("name")), int(p["containerPort"]))
                for c in [*((tpl.get("spec") or {}).get("containers") or ()), *((tpl.get("spec") or {}).get("initContainers") or ())]
                if isinstance(c, Mapping)
                for p in c.get("ports") or ()
                if isinstance(p, Mapping) and p.get("name") and isinstance(p.get("containerPort"), int)
            )
            ns = str((o.get("metadata") or {}).get("namespace") or pod["metadata"].get("namespace") or "default")
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            templates.append((ns, labels, named))
            specs.append((ns, tpl))
    return BehaviourContext(
        policies=gather("NetworkPolicy", "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy"),
        bindings=gather("RoleBinding", "ClusterRoleBinding"),
        roles=gather("Role", "ClusterRole"),
        service_accounts=gather("ServiceAccount"),
        config_maps=config_maps,
        secret_data=secret_data,
        services=gather("Service"),
        pod_templates=tuple(templates),
        pod_specs=tuple(specs),
        namespace_labels={
            str(n["metadata"]["name"]): n["metadata"].get("labels") or {}
            for n in store.list("Namespace")
        },
        apiserver_cluster_ip=addressing.apiserver_cluster_ip,
        apiserver_endpoint=addressing.apiserver_endpoint,
        kube_dns_ip=addressing.kube_dns_cluster_ip,
        cluster_domain=addressing.cluster_domain,
        overrides=tuple(sim.behaviour_overrides),
        catalog=sim.catalog,
    )


_CONTEXT_KINDS = (
    "NetworkPolicy",
    "CiliumNetworkPolicy",
    "CiliumClusterwideNetworkPolicy",
    "RoleBinding",
    "ClusterRoleBinding",
    "Role",
    "ClusterRole",
    "ServiceAccount",
    "ConfigMap",
    "Service",
    "Namespace",
)
"""The kinds :func:`behaviour_context` reads from the store."""


class BehaviourContexts:
    """:func:`behaviour_context` per namespace, rebuilt only after a write to a kind it reads;
    every context shares one cache of compiled policies."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self._cached: dict[str, tuple[tuple[int, ...], BehaviourContext]] = {}
        self._policies = PolicyCache()

    def get(self, pod: Mapping[str, Any]) -> BehaviourContext:
        ns = str((pod.get("metadata") or {}).get("namespace") or "default")
        stamp = tuple(self.sim.store.writes(k) for k in _CONTEXT_KINDS)
        hit = self._cached.get(ns)
        if hit is None or hit[0] != stamp:
            ctx = dataclasses.replace(behaviour_context(self.sim, pod), policy_cache=self._policies)
            hit = self._cached[ns] = (stamp, ctx)
        return hit[1]


class Kubelet(Controller):
    """Runs the pods bound to the profile's nodes (one kubelet for all nodes)."""

    name = "kubelet"
    kinds = ("Pod",)

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        self.net = network_state(sim)
        self.runtimes: dict[Key, PodRuntime] = {}
        self.contexts = BehaviourContexts(sim)
        self.images: dict[str, set[str]] = defaultdict(set)
        self._ips: dict[str, int] = {}
        self.auth = ProgramAuth(sim)
        """RBAC of what programs write as their pods' ServiceAccounts."""
        self.said_once: set[str] = set()
        """Keys of the assumptions the trace already says (running.say_once)."""
        self.assumed_images: dict[str, set[str]] = {}
        """Per image whose behaviour the simulation assumed, the notes said about it (each once)."""
        self.attachments = Attachments(sim)
        self.lost: set[str] = set()
        """Nodes whose machine is gone (:meth:`node_lost`): nothing runs or reports there."""

    def node_lost(self, node: str, *, cause: int | None = None, instance_gone: bool = True) -> None:
        """The machine behind ``node`` stops: its containers stop and no kubelet reports from it.

        What follows is the control plane's (:func:`lose_node`): with ``instance_gone`` the Node
        object is deleted and PodGC force-deletes its pods; otherwise the Node goes NotReady after
        the node-monitor grace period and the taint eviction deletes its pods once their
        ``unreachable`` toleration runs out. The scheduler stops choosing it either way (it reads
        the live Node).
        """
        self.lost.add(node)
        for rt in list(self.runtimes.values()):
            if rt.node == node:
                rt.vanish()
        lose_node(self.sim, node, cause=cause, instance_gone=instance_gone)

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        rt = self.runtimes.get(key)
        if rt is not None and rt.uid != meta.get("uid"):
            rt.stop(None, "replaced")
            self.runtimes.pop(key, None)
            rt = None
        if event == "DELETED":
            if rt is not None:
                rt.stop(None, "deleted")
                self.runtimes.pop(key, None)
            return
        if meta.get("deletionTimestamp"):
            if rt is not None:
                found = self.sim.trace.find(what="deleting", obj=ref_of(obj))
                rt.stop(found[-1].id if found else None, "deleted")
            return
        phase = (obj.get("status") or {}).get("phase")
        if (
            rt is None
            and (obj.get("spec") or {}).get("nodeName")
            and (obj.get("spec") or {}).get("nodeName") not in self.lost
            and phase not in ("Succeeded", "Failed")
        ):
            rt = PodRuntime(self, obj)
            self.runtimes[key] = rt
            rt.start()

    def allocate_ip(self, node: str) -> str:
        """The next pod IP on ``node``: the node's /24 of the pod CIDR, from .10 (deterministic)."""
        nodes = [n.name for n in self.sim.profile.nodes]
        index = nodes.index(node) if node in nodes else 0
        cidr = ipaddress.ip_network(addressing_of(self.sim.profile).pod_cidr)
        if cidr.prefixlen <= 24:
            count = 2 ** (24 - cidr.prefixlen)  # the /24s of the pod CIDR, without listing them
            subnet = ipaddress.ip_network((int(cidr.network_address) + (index % count) * 256, 24))
        else:
            subnet = cidr
        n = self._ips.get(node, 10)
        self._ips[node] = n + 1
        return str(subnet.network_address + (n % (subnet.num_addresses - 2)))


class PodRuntime:
    """One pod on its node: the pod process, its container processes and its status."""

    def __init__(self, kubelet: Kubelet, pod: Mapping[str, Any]) -> None:
        self.k = kubelet
        self.sim = kubelet.sim
        self.store = kubelet.store
        meta = pod["metadata"]
        self.key: Key = (str(meta.get("namespace") or ""), str(meta["name"]))
        self.uid = meta.get("uid")
        self.ref = ref_of(pod)
        self.spec = clone(pod.get("spec") or {})
        self.node = str(self.spec.get("nodeName"))
        self.policy = self.spec.get("restartPolicy") or "Always"
        self.inits = list(self.spec.get("initContainers") or ())
        self.apps = list(self.spec.get("containers") or ())
        self.init_status = [self._fresh(c, "PodInitializing") for c in self.inits]
        first = "PodInitializing" if self.inits else "ContainerCreating"
        self.app_status = [self._fresh(c, first) for c in self.apps]
        self.conditions: dict[str, dict[str, Any]] = {}
        self.phase = "Pending"
        self.reason: str | None = None
        self.message: str | None = None
        self.ip: str | None = None
        self.start_time: str | None = None
        self.started_at: float = 0.0
        self.main: simpy.Process | None = None
        self.procs: dict[str, simpy.Process] = {}
        self.stopped = False
        self.vanished = False
        self.detached = False
        self.retrying = False
        self.unsynced = False
        self.model: PodModel | None = None
        self.backoff: dict[str, tuple[float, float]] = {}
        self.runs: dict[str, int] = defaultdict(int)
        self.pending_probes: dict[str, tuple[int, float]] = {}
        """Containers whose probes wait for the process to serve: name → (run, start)."""
        self.serving: dict[str, int] = {}
        """App containers (name → run) whose process serves (listens) in that run."""
        self.gated_serving: dict[str, int] = {}
        """Containers (name → run) that serve while their catalog entry fails their probes
        (``probesFail``): a liveness probe the gate does not cover passes."""
        self.activity: dict[str, str] = {}
        """What each container's program is doing while it does not serve (for the trace)."""
        self.last_event: int | None = None
        found = self.sim.trace.find(what="scheduled", obj=self.ref)
        self.cause = found[-1].id if found else None

    # --- status ----------------------------------------------------------------------------------
    @staticmethod
    def _fresh(c: Mapping[str, Any], reason: str) -> dict[str, Any]:
        return {
            "name": c.get("name"),
            "image": c.get("image"),
            "imageID": "",
            "ready": False,
            "started": False,
            "restartCount": 0,
            "state": {"waiting": {"reason": reason}},
            "lastState": {},
        }

    def _status_of(self, name: str) -> dict[str, Any]:
        for st in (*self.init_status, *self.app_status):
            if st["name"] == name:
                return st
        raise KeyError(name)

    def _cond(
        self, type_: str, ok: bool, reason: str | None = None, message: str | None = None
    ) -> None:
        status = "True" if ok else "False"
        old = self.conditions.get(type_)
        cond: dict[str, Any] = {"type": type_, "status": status, "lastProbeTime": None}
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        same = old is not None and old["status"] == status
        cond["lastTransitionTime"] = (
            old["lastTransitionTime"] if same and old else self.sim.timestamp()
        )
        self.conditions[type_] = cond

    def _derive(self) -> None:
        """Phase and the Initialized / ContainersReady / Ready conditions from container states."""
        if self.phase not in ("Succeeded", "Failed"):
            self.phase = get_phase(
                self.spec, self.init_status, self.app_status, terminal=self.stopped
            )
        # kubernetes pkg/kubelet/status/generate.go GeneratePodInitializedCondition,
        # GenerateContainersReadyCondition, GeneratePodReadyCondition.
        pending = [
            s["name"]
            for s in self.init_status
            if (s["state"].get("terminated") or {}).get("exitCode") != 0
        ]
        if pending:
            self._cond(
                "Initialized",
                False,
                "ContainersNotInitialized",
                f"containers with incomplete status: [{' '.join(pending)}]",
            )
        else:
            self._cond("Initialized", True)
        unready = [s["name"] for s in self.app_status if not s["ready"]]
        if self.phase == "Succeeded":
            self._cond("ContainersReady", False, "PodCompleted")
            self._cond("Ready", False, "PodCompleted")
        elif unready:
            msg = f"containers with unready status: [{' '.join(unready)}]"
            self._cond("ContainersReady", False, "ContainersNotReady", msg)
            self._cond("Ready", False, "ContainersNotReady", msg)
        else:
            self._cond("ContainersReady", True)
            self._cond("Ready", True)

    def push(self, message: str | None = None, cause: int | None = None) -> None:
        """Write the pod status (re-reading the live pod: other writers' conditions are kept)."""
        if self.vanished:
            return  # the node is gone: nobody reports this pod any more
        why = message
        live = self.store.get("Pod", *self.key)
        if live is None or live["metadata"].get("uid") != self.uid:
            return
        old_phase = (live.get("status") or {}).get("phase")
        self._derive()
        if self.phase in ("Succeeded", "Failed"):
            self._detach()
        status = clone(live.get("status") or {})
        mine = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")
        theirs = [c for c in status.get("conditions") or () if c.get("type") not in mine]
        order = {"PodReadyToStartContainers": 0, "Initialized": 1, "Ready": 2, "ContainersReady": 3}
        status["conditions"] = [
            *[self.conditions[t] for t in sorted(self.conditions, key=order.__getitem__)],
            *theirs,
        ]
        status["phase"] = self.phase
        status["hostIP"] = self._host_ip()
        status["hostIPs"] = [{"ip": status["hostIP"]}]
        if self.ip:
            status["podIP"] = self.ip
            status["podIPs"] = [{"ip": self.ip}]
        if self.start_time:
            status["startTime"] = self.start_time
        if self.inits:
            status["initContainerStatuses"] = clone(self.init_status)
        status["containerStatuses"] = clone(self.app_status)
        status.setdefault("qosClass", "BestEffort")
        if self.reason:
            status["reason"] = self.reason
            status["message"] = self.message
        if old_phase != self.phase:
            message = f"{self.ref} phase {old_phase or 'Pending'} -> {self.phase}" + (
                f" ({message})" if message else ""
            )
        try:
            self.store.update_status(
                "Pod", *self.key, status, actor=self.k.name, cause=cause, message=message
            )
        except ApiUnreachable as err:
            # the status manager keeps the latest status and retries it every syncPeriod
            if not self.retrying:
                self.retrying = True
                if not self.unsynced:
                    self.unsynced = True
                    self.log("api-unreachable", f"status update failed: {err.message} ({err.why})", cause)
                self.sim.after(STATUS_SYNC_PERIOD, self._retry_push, why, cause)
            return
        self.unsynced = False

    def _retry_push(self, message: str | None, cause: int | None) -> None:
        self.retrying = False
        if not self.vanished:
            self.push(message, cause)

    def _host_ip(self) -> str:
        for i, n in enumerate(self.sim.profile.nodes):
            if n.name == self.node:
                return str(n.internal_ip or f"172.18.0.{i + 2}")
        return "172.18.0.2"

    def event(self, type_: str, reason: str, message: str, cause: int | None = None) -> int:
        live = self.store.get("Pod", *self.key) or {
            "kind": "Pod",
            "metadata": {"namespace": self.key[0], "name": self.key[1]},
        }
        ev = self.store.record_event(live, type_, reason, message, source=SOURCE, cause=cause)
        self.last_event = ev
        return ev

    def log(self, what: str, message: str, cause: int | None = None, **data: Any) -> int:
        return self.sim.log(self.k.name, what, self.ref, message, cause=cause, **data).id

    def formatted(self) -> str:
        """kubernetes pkg/kubelet/util/format/pod.go Pod: ``name_namespace(uid)``."""
        return f"{self.key[1]}_{self.key[0]}({self.uid})"

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self.main = self.sim.process(self._run())

    def _run(self) -> Generator[Any, Any, None]:
        try:
            self.start_time = self.sim.timestamp()
            self.started_at = self.sim.now
            self._cond("PodReadyToStartContainers", False)
            self.push(f"accepted by the kubelet on {self.node}", self.cause)
            cause = yield from self._wait_for_attach(self.cause)
            cause = yield from self._wait_for_mounts(cause)
            self._warn_pull_secrets(cause)
            if self.k.net.cni.type == "cilium":
                # cilium plugins/cilium-cni cmd/cmd.go cmdAdd: the CNI ADD waits for the endpoint's
                # first regeneration (SyncBuildEndpoint) with the policies the agent knows now.
                regen = self.sim.latency("endpoint_regeneration")
                # the CNI ADD also resolves a new label set's identity (blocking): it may last longer
                regen = self.k.net.endpoint_created(*self.key, self.sim.now, self.sim.now + regen)
                yield self.sim.sleep(regen)
                known = [ref_of(v.doc) for v in self.k.net.in_effect(pod=self.key)]
                cause = self.sim.log(
                    "cilium",
                    "endpoint-ready",
                    self.ref,
                    f"endpoint of {self.ref} regenerated in {regen:g} s with "
                    f"{len(known)} polic{'y' if len(known) == 1 else 'ies'} in effect"
                    + (f": {', '.join(known)}" if known else ""),
                    cause=cause,
                    policies=known,
                ).id
            self.ip = self.k.allocate_ip(self.node)
            self._cond("PodReadyToStartContainers", True)
            self.push(f"sandbox ready, pod IP {self.ip}", cause)
            pod = self.store.get("Pod", *self.key)
            if pod is None:
                return
            self.model = model_pod(pod, self.k.contexts.get(pod))
            for container, note in self.model.notes:
                self.log("behaviour", f"{container}: {note}", cause, container=container)
            running.note_assumptions(self, cause)
            deadline = self.spec.get("activeDeadlineSeconds")
            if isinstance(deadline, int) and not isinstance(deadline, bool) and deadline > 0:
                self.sim.process(self._deadline(float(deadline)))
            for i, c in enumerate(self.inits):
                ok = yield from self._init_container(c, self.init_status[i], cause)
                if not ok or self.stopped:
                    return
            self.push("initialized" if self.inits else None)
            for i, c in enumerate(self.apps):
                self.procs[str(c.get("name"))] = self.sim.process(
                    self._app_container(c, self.app_status[i], cause)
                )
        except simpy.Interrupt:
            return

    def _init_container(
        self, c: Mapping[str, Any], st: dict[str, Any], cause: int | None
    ) -> Generator[Any, Any, bool]:
        """Run one init container to success; False when the pod failed instead."""
        name = str(c.get("name"))
        while True:
            code = yield from self._run_once(c, st, cause)
            if code == 0 or self.stopped:
                return code == 0
            # kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go computeInitContainerActions:
            # a failed init container fails the pod under Never, else it is restarted.
            if self.policy == "Never":
                self.push(f"init container {name} failed", self.last_event)
                return False
            yield from self._backoff(c, st)

    def _app_container(
        self, c: Mapping[str, Any], st: dict[str, Any], cause: int | None
    ) -> Generator[Any, Any, None]:
        try:
            while True:
                code = yield from self._run_once(c, st, cause)
                # kubernetes pkg/kubelet/container/helpers.go ShouldContainerBeRestarted.
                if (
                    self.stopped
                    or self.policy == "Never"
                    or (self.policy == "OnFailure" and code == 0)
                ):
                    return
                yield from self._backoff(c, st)
        except simpy.Interrupt:
            return

    def _run_once(
        self, c: Mapping[str, Any], st: dict[str, Any], cause: int | None
    ) -> Generator[Any, Any, int]:
        """Pull, create, start, behave, exit: one run of a container. Returns its exit code."""
        name = str(c.get("name"))
        assert self.model is not None
        model = self.model.container(name)
        yield from self._pull(c, st, cause)
        yield from self._until_config(c, st, cause)
        yield self.sim.sleep(self.sim.latency("container_start"))
        run = self.runs[name]
        self.runs[name] = run + 1
        if run > 0:
            st["restartCount"] = run
            if st["state"].get("terminated"):
                st["lastState"] = {"terminated": st["state"]["terminated"]}
        cid = "containerd://" + hashlib.sha256(f"{self.uid}/{name}/{run}".encode()).hexdigest()
        started = self.sim.timestamp()
        # kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go startContainer.
        self.event("Normal", "Created", f"Created container {name}", cause)
        ev = self.event("Normal", "Started", f"Started container {name}", cause)
        st["containerID"] = cid
        st["state"] = {"running": {"startedAt": started}}
        st["started"] = not c.get("startupProbe")
        st["ready"] = False
        if not model.init:
            self._schedule_readiness(c, st, run, model)
        self.push(f"container {name} started", ev)
        code = yield from self._behave(model, run, ev)
        finished = self.sim.timestamp()
        st["ready"] = False
        st["started"] = False
        st["state"] = {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": started,
                "finishedAt": finished,
                "containerID": cid,
            }
        }
        done = self.log(
            "container-exited",
            f"container {name} exited with code {code}",
            ev,
            container=name,
            exitCode=code,
        )
        self.push(f"container {name} exited with code {code}", done)
        return code

    # --- references: volumes, environment, pull secrets --------------------------------------------
    def _lookup(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        obj = self.store.get(kind, namespace, name)
        return None if obj is None or obj["metadata"].get("deletionTimestamp") else obj

    def _wait_for_mounts(self, cause: int | None) -> Generator[Any, Any, int | None]:
        """Set the pod's Secret/ConfigMap/projected volumes up before its sandbox exists.

        kubernetes pkg/kubelet/kubelet.go SyncPod waits in volumemanager WaitForAttachAndMount
        (polled every 300 ms, 2m3s at most) while the volume reconciler retries each failed
        SetUp on its exponential back-off (500 ms doubling to 2m2s), recording
        ``FailedMount`` "MountVolume.SetUp failed for volume …" each time
        (pkg/volume/util/operationexecutor/operation_generator.go GenerateMountVolumeFunc). A
        wait that times out fails the sync ("unmounted volumes=[…]": since 1.28 only logged, no
        event) and the pod worker retries 10 s later. The pod stays Pending, its containers
        ContainerCreating, until every volume mounts. Pods whose volumes all resolve at once go
        straight on (the real 300 ms poll tick is not added to them).
        """
        failing = podrefs.mount_errors(self._live_or_spec(), self._lookup)
        if not failing:
            return cause
        retry_at = dict.fromkeys(failing, self.sim.now)
        delay: dict[str, float] = {}
        window_start = self.sim.now
        last = cause
        while retry_at:
            for vol in sorted(v for v, t in retry_at.items() if t <= self.sim.now + 1e-9):
                err = podrefs.mount_errors(self._live_or_spec(), self._lookup).get(vol)
                if err is None:
                    del retry_at[vol]
                    last = self.log("volume-mounted", f"volume {vol} set up", last, volume=vol)
                    continue
                first = vol not in delay
                wait = MOUNT_RETRY_INITIAL if first else min(delay[vol] * 2, MOUNT_RETRY_CAP)
                delay[vol] = wait
                retry_at[vol] = self.sim.now + wait
                last = self.event(
                    "Warning", "FailedMount", f'MountVolume.SetUp failed for volume "{vol}" : {err}', cause
                )
                if first:
                    self.push(f"volume {vol} cannot be set up: {err}", last)
            if not retry_at:
                break
            window_end = window_start + MOUNT_WAIT_TIMEOUT
            nxt = min(retry_at.values())
            if window_end < nxt:
                yield self.sim.sleep(window_end - self.sim.now)
                unmounted = " ".join(sorted(retry_at))
                self.log(
                    "sync-failed",
                    f"Error syncing pod, skipping: unmounted volumes=[{unmounted}], unattached "
                    "volumes=[], failed to process volumes=[]: context deadline exceeded",
                    last,
                )
                window_start = self.sim.now + POD_SYNC_BACKOFF
                continue
            yield self.sim.sleep(nxt - self.sim.now)
        # the pod worker sees the mounts at its next poll, or at the start of its next sync
        if self.sim.now < window_start:
            yield self.sim.sleep(window_start - self.sim.now)
        else:
            ticks = math.ceil((self.sim.now - window_start) / MOUNT_POLL_INTERVAL - 1e-9)
            yield self.sim.sleep(window_start + ticks * MOUNT_POLL_INTERVAL - self.sim.now)
        return last

    def _wait_for_attach(self, cause: int | None) -> Generator[Any, Any, int | None]:
        """Wait until the attach/detach controller has attached the pod's volumes to its node.

        kubernetes pkg/controller/volume/attachdetach/reconciler/reconciler.go reconcile: a volume
        whose access modes forbid a second node (isMultiAttachForbidden) and that is attached to
        another node is not attached here; the pod's events say once "Multi-Attach error …
        Volume is already used by pod(s) …" (reportMultiAttachError) and the kubelet's
        WaitForAttachAndMount times out every 2m3s until the other pods are gone. Otherwise the
        attach takes ``latencies.volumeAttach`` and is reported ``SuccessfulAttachVolume``
        (pkg/volume/util/operationexecutor/operation_generator.go GenerateAttachVolumeFunc).
        """
        pod = self.store.get("Pod", *self.key)
        vols = volumes_to_attach(self.store, pod) if pod is not None else []
        if not vols:
            return cause
        att = self.k.attachments
        for v in vols:
            if v.driver is not None and v.driver not in att.assumed_drivers:
                att.assumed_drivers.add(v.driver)
                self.log(
                    "behaviour-assumed",
                    f"CSI driver {v.driver}: the profile holds no CSIDriver object for it, so its volumes "
                    "are taken to need attaching (the API's default) before pods mount them; add one to "
                    "the profile's objects with spec.attachRequired if the cluster's says otherwise",
                    cause,
                )
        window_start = self.sim.now
        reported: set[str] = set()
        while True:
            blocked = [(v, att.elsewhere(v.pv, self.node)) for v in vols if v.exclusive]
            blocked = [(v, others) for v, others in blocked if others]
            if not blocked:
                break
            for v, others in blocked:
                if v.pv not in reported:
                    reported.add(v.pv)
                    cause = self._multi_attach_error(v, others, cause)
            window_end = window_start + MOUNT_WAIT_TIMEOUT
            waits = [att.released(v.pv) for v, _ in blocked]
            yield self.sim.env.any_of([*waits, self.sim.sleep(window_end - self.sim.now)])
            if self.sim.now >= window_end - 1e-9:
                names = " ".join(sorted(v.name for v, _ in blocked))
                self.log(
                    "sync-failed",
                    f"Error syncing pod, skipping: unmounted volumes=[{names}], unattached "
                    f"volumes=[{names}], failed to process volumes=[]: context deadline exceeded",
                    cause,
                )
                yield self.sim.sleep(POD_SYNC_BACKOFF)
                window_start = self.sim.now
        events = {v.pv: att.hold(v.pv, self.node, self.key, lambda: self.sim.latency("volume_attach")) for v in vols}
        waited = [v for v in vols if not events[v.pv].triggered]
        if not waited:
            return cause
        yield self.sim.env.all_of([events[v.pv] for v in waited])
        live = self.store.get("Pod", *self.key)
        for v in waited:
            if live is not None:
                cause = self.store.record_event(
                    live,
                    "Normal",
                    "SuccessfulAttachVolume",
                    f'AttachVolume.Attach succeeded for volume "{v.pv}"',
                    source=ATTACH_SOURCE,
                    cause=cause,
                )
        return cause

    def _multi_attach_error(self, v: Volume, others: list[tuple[str, str]], cause: int | None) -> int | None:
        """reconciler.go reportMultiAttachError: the pod's event names the pods of its own
        namespace that hold the volume, and counts those of other namespaces."""
        local = [name for ns, name in others if ns == self.key[0]]
        foreign = len(others) - len(local)
        if local:
            msg = f"Volume is already used by pod(s) {', '.join(local)}"
            if foreign:
                msg += f" and {foreign} pod(s) in different namespaces"
        else:
            msg = f"Volume is already used by {foreign} pod(s) in different namespaces"
        live = self.store.get("Pod", *self.key)
        if live is not None:
            cause = self.store.record_event(
                live,
                "Warning",
                "FailedAttachVolume",
                f'Multi-Attach error for volume "{v.pv}" {msg}',
                source=ATTACH_SOURCE,
                cause=cause,
            )
        self.push(f"volume {v.name} is attached to another node: {msg}", cause)
        return cause

    def _live_or_spec(self) -> Mapping[str, Any]:
        return self.store.get("Pod", *self.key) or {
            "metadata": {"namespace": self.key[0], "name": self.key[1]},
            "spec": self.spec,
        }

    def _warn_pull_secrets(self, cause: int | None) -> None:
        """kubelet_pods.go getPullSecretsForPod: a missing pull secret is a warning; the pull goes on."""
        missing = podrefs.missing_pull_secrets(self._live_or_spec(), self._lookup)
        if missing:
            self.event(
                "Warning", "FailedToRetrieveImagePullSecret", podrefs.pull_secrets_message(missing), cause
            )

    def _until_config(
        self, c: Mapping[str, Any], st: dict[str, Any], cause: int | None
    ) -> Generator[Any, Any, None]:
        """Wait until the container's environment can be built (after its image is present).

        kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go startContainer:
        generateContainerConfig fails → event ``Failed`` "Error: <err>", the container waits
        with reason ``CreateContainerConfigError``; the pod sync is retried after
        :data:`POD_SYNC_BACKOFF`, pulling again as its pull policy says.
        """
        name = str(c.get("name"))
        shown = None
        while True:
            err = podrefs.env_error(c, self.key[0], self._lookup) or self._non_root_error(c, cause)
            if err is None or self.stopped:
                return
            st["state"] = {"waiting": {"reason": "CreateContainerConfigError", "message": err}}
            ev = self.event("Warning", "Failed", f"Error: {err}", cause)
            if err != shown:
                shown = err
                self.push(f"container {name}: CreateContainerConfigError: {err}", ev)
            yield self.sim.sleep(POD_SYNC_BACKOFF)
            yield from self._pull(c, st, cause)

    def _non_root_error(self, c: Mapping[str, Any], cause: int | None) -> str | None:
        """pkg/kubelet/kuberuntime/security_context_others.go verifyRunAsNonRoot: with
        runAsNonRoot (the container's, else the pod's) a runAsUser of 0 is refused; without a
        runAsUser the image's USER decides, which the simulation does not know (said once)."""
        pod_sc = self.spec.get("securityContext")
        pod_sc = pod_sc if isinstance(pod_sc, Mapping) else {}
        sc = c.get("securityContext")
        sc = sc if isinstance(sc, Mapping) else {}
        # pkg/securitycontext/util.go DetermineEffectiveSecurityContext: container fields win
        non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
        if non_root is not True:
            return None
        user = sc.get("runAsUser", pod_sc.get("runAsUser"))
        name = str(c.get("name"))
        if user is None:
            image = str(c.get("image") or "")
            text = (
                f"image {image}: its user is not known; assumed not to be root (with runAsNonRoot and no runAsUser, "
                "the kubelet refuses an image whose USER is root or a name: CreateContainerConfigError)"
            )
            running.say_once(self, f"non-root {image}", text, cause, name)
            return None
        if user == 0 and not isinstance(user, bool):
            return f'container\'s runAsUser breaks non-root policy (pod: "{self.formatted()}", container: {name})'
        return None

    def _pull(
        self, c: Mapping[str, Any], st: dict[str, Any], cause: int | None
    ) -> Generator[Any, Any, None]:
        """Image pull as kubernetes pkg/kubelet/images/image_manager.go EnsureImageExists does it."""
        image = str(c.get("image") or "")
        name = str(c.get("name"))
        invalid = imageref.kubelet_error(image)
        if invalid is not None:
            # image_manager.go EnsureImageExists: applyDefaultImageTag fails → ErrInvalidImageName;
            # kuberuntime_container.go startContainer records "Error: InvalidImageName". The pod
            # worker retries each sync, but nothing rewrites a pod's image: it never starts.
            self.event("Warning", "InspectFailed", invalid, cause)
            ev = self.event("Warning", "Failed", "Error: InvalidImageName", cause)
            st["state"] = {"waiting": {"reason": "InvalidImageName", "message": invalid}}
            self.push(f"container {name}: InvalidImageName", ev)
            yield self.sim.env.event()  # never triggered
        policy = c.get("imagePullPolicy") or default_pull_policy(image)
        cache = self.k.images[self.node]
        if policy != "Always" and self._present(image):
            self.event(
                "Normal", "Pulled", f'Container image "{image}" already present on machine', cause
            )
            return
        if policy == "Never":
            # image_manager.go EnsureImageExists: ErrImageNeverPull; the pod worker syncs again and
            # finds the image once another pod (or a sibling container) has pulled it onto the node
            text = f'Container image "{image}" is not present with pull policy of Never'
            self.event("Warning", "ErrImageNeverPull", text, cause)
            ev = self.event("Warning", "Failed", "Error: ErrImageNeverPull", cause)
            st["state"] = {"waiting": {"reason": "ErrImageNeverPull", "message": text}}
            self.push(f"container {name}: ErrImageNeverPull", ev)
            while not self._present(image):
                yield self.sim.sleep(POD_SYNC_BACKOFF)
                if self.stopped:
                    return
            self.event("Normal", "Pulled", f'Container image "{image}" already present on machine', cause)
            return
        gone = self._withdrawn(image, name, cause)
        faults = self.sim.faults
        slower = getattr(faults, "image_pull_delay", None)
        attempt = 0
        backoff = 0.0
        while True:
            self.event("Normal", "Pulling", f'Pulling image "{image}"', cause)
            took = self.sim.latency("image_pull")
            if slower is not None:
                took += max(0.0, float(slower(self.store.get("Pod", *self.key) or {}, name, attempt) or 0.0))
            yield self.sim.sleep(took)
            err = gone or (
                faults.image_pull_error(self.store.get("Pod", *self.key) or {}, name, attempt)
                if faults
                else None
            )
            attempt += 1
            if not err:
                cache.add(image_key(image))
                # 1.30+ appends "Image size: N bytes."; the simulator knows no sizes and omits it.
                self.event(
                    "Normal",
                    "Pulled",
                    # pkg/kubelet/images/image_manager.go EnsureImageExists: Truncate(time.Millisecond)
                    f'Successfully pulled image "{image}" in {go_duration(took, truncate=0.001)} '
                    f"({go_duration(took, truncate=0.001)} including waiting)",
                    cause,
                )
                return
            self.event("Warning", "Failed", f'Failed to pull image "{image}": {err}', cause)
            self.event("Warning", "Failed", "Error: ErrImagePull", cause)
            st["state"] = {"waiting": {"reason": "ErrImagePull", "message": err}}
            self.push(f"container {name}: ErrImagePull")
            # kubernetes pkg/kubelet/kubelet.go: imageBackOff uses the same 10 s → 300 s back-off.
            initial, cap = self._backoff_limits()
            backoff = initial if backoff == 0 else min(backoff * 2, cap)
            st["state"] = {
                "waiting": {
                    "reason": "ImagePullBackOff",
                    "message": f'Back-off pulling image "{image}"',
                }
            }
            self.event("Normal", "BackOff", f'Back-off pulling image "{image}"', cause)
            self.event("Warning", "Failed", "Error: ImagePullBackOff", cause)
            self.push(f"container {name}: ImagePullBackOff")
            yield self.sim.sleep(backoff)

    def _present(self, image: str) -> bool:
        """Whether the node holds ``image``: pulled before (the cache holds normalised references:
        ``nginx:1.25`` is ``docker.io/library/nginx:1.25``) or preloaded by the profile's
        ``images.present``."""
        if image_key(image) in self.k.images[self.node]:
            return True
        present = self.sim.profile.images.present
        return bool(present) and registries.pullable(present, image)

    def _withdrawn(self, image: str, container: str, cause: int | None) -> str | None:
        """The runtime's error when a public registry withdrew ``image`` and the profile's
        registries do not serve it (helmsim.cluster.registries); an image helmsim cannot tell
        about is said once."""
        verdict = registries.withdrawn(image)
        if verdict is None or registries.pullable(self.sim.profile.images.pullable, image):
            return None
        if verdict.note:
            running.say_once(self, f"pull {image}", verdict.note, cause, container)
            return None
        return verdict.error

    def _backoff_limits(self) -> tuple[float, float]:
        p = self.sim.profile
        return (
            float(getattr(p, "kubelet_backoff_initial_seconds", 10.0)),
            float(getattr(p, "kubelet_backoff_cap_seconds", 300.0)),
        )

    def _backoff(self, c: Mapping[str, Any], st: dict[str, Any]) -> Generator[Any, Any, None]:
        """Wait out the crash-loop back-off before a restart.

        kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff with
        k8s.io/client-go util/flowcontrol/backoff.go: the first restart is immediate (no entry
        yet); after that the container waits until finishedAt + the current back-off (10 s,
        doubling to the cap), and an entry older than 2 × cap (10 min of clean running) resets.
        The docs' "10 s before the first restart" (reference §1.3) disagrees; the code wins.
        """
        name = str(c.get("name"))
        term = st["state"].get("terminated") or {}
        finished = self.sim.now
        initial, cap = self._backoff_limits()
        entry = self.backoff.get(name)
        expired = entry is None or finished - entry[1] > 2 * cap
        if not expired and entry is not None and entry[0] > 0:
            wait = entry[0]
            st["state"] = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {go_duration(wait)} restarting failed container={name} pod={self.formatted()}",
                }
            }
            st["lastState"] = {"terminated": term} if term else st.get("lastState") or {}
            ev = self.event(
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {name} in pod {self.formatted()}",
                self.last_event,
            )
            self.push(f"container {name} in CrashLoopBackOff for {go_duration(wait)}", ev)
            yield self.sim.sleep(wait)
        self.backoff[name] = (
            initial if expired else min((entry[0] if entry else initial) * 2, cap),
            self.sim.now,
        )

    def _schedule_readiness(
        self, c: Mapping[str, Any], st: dict[str, Any], run: int, model: ContainerModel
    ) -> None:
        running.schedule_probes(self, c, st, run, model)

    def listener(self, port: int, dialer: str) -> tuple[str | None, bool]:
        """The app container other than ``dialer`` that listens on ``port`` of the pod's
        loopback: one declaring it as a containerPort, else the only one declaring no ports
        (``(name, True)``: taken to listen); ``(None, False)`` when none can."""
        others = [c for c in self.apps if str(c.get("name")) != dialer]
        for c in others:
            if any(isinstance(p, Mapping) and p.get("containerPort") == port for p in c.get("ports") or ()):
                return str(c.get("name")), False
        silent = [c for c in others if not c.get("ports")]
        return (str(silent[0].get("name")), True) if len(silent) == 1 else (None, False)

    def serves(self, name: str) -> bool:
        """Whether app container ``name`` runs and its current run's process serves."""
        st = next((s for s in self.app_status if s["name"] == name), None)
        return st is not None and "running" in st["state"] and self.serving.get(name) == self.runs[name] - 1

    def now_serving(self, name: str, run: int) -> None:
        """Container ``name``'s process serves from now (its needs and checks passed)."""
        self.serving[name] = run
        for c, st in zip(self.apps, self.app_status, strict=True):
            if str(c.get("name")) == name:
                running.now_serving(self, c, st, run)

    def mark(self, st: dict[str, Any], run: int, field: str) -> None:
        if self.stopped or self.runs[st["name"]] != run + 1 or "running" not in st["state"]:
            return
        st[field] = True
        if field == "ready":
            st["started"] = True
        self.push(
            f"container {st['name']} {'ready' if field == 'ready' else 'started (startup probe)'}"
        )

    # --- behaviour -------------------------------------------------------------------------------
    def _behave(self, model: ContainerModel, run: int, cause: int) -> Generator[Any, Any, int]:
        try:
            return (yield from running.behave(self, model, run, cause))
        except simpy.Interrupt as intr:
            if not running.is_probe_kill(intr.cause):
                raise
            # the kubelet stopped it for a failed liveness or startup probe (SIGTERM)
            return EXIT_SIGTERM

    # --- stopping --------------------------------------------------------------------------------
    def _deadline(self, seconds: float) -> Generator[Any, Any, None]:
        yield self.sim.sleep(max(0.0, self.started_at + seconds - self.sim.now))
        if self.stopped or self.phase in ("Succeeded", "Failed"):
            return
        # kubernetes pkg/kubelet/active_deadline.go: the pod is killed and marked Failed.
        ev = self.event("Warning", DEADLINE_REASON, DEADLINE_MESSAGE)
        self._kill(EXIT_SIGKILL, ev)
        self.phase = "Failed"
        self.reason, self.message = DEADLINE_REASON, DEADLINE_MESSAGE
        self.push(f"activeDeadlineSeconds {seconds:g} exceeded", ev)

    def _kill(self, code: int, cause: int | None) -> None:
        self.stopped = True
        for proc in [self.main, *self.procs.values()]:
            # SimPy refuses a process interrupting itself; that one sees ``stopped`` and ends.
            if proc is not None and proc.is_alive and proc is not self.sim.env.active_process:
                proc.interrupt("stop")
        now = self.sim.timestamp()
        for st in (*self.init_status, *self.app_status):
            running = st["state"].get("running")
            if running is not None:
                self.event("Normal", "Killing", f"Stopping container {st['name']}", cause)
                st["state"] = {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Error",
                        "startedAt": running["startedAt"],
                        "finishedAt": now,
                        "containerID": st.get("containerID", ""),
                    }
                }
                st["ready"] = False
                st["started"] = False

    def _detach(self) -> None:
        """The pod no longer uses its volumes: each is detached unless another pod on the node
        uses it (reconciler.go reconcile detaches what the desired state no longer holds; the
        detach is taken to last as long as an attach, ``latencies.volumeAttach``)."""
        att = self.k.attachments
        if self.detached:
            return
        self.detached = True
        if any(self.key in pods for nodes in att.held.values() for pods in nodes.values()):
            att.release(self.key, self.sim.latency("volume_attach"))

    def vanish(self) -> None:
        """The node is gone: every process stops at once and nothing more is reported."""
        self.vanished = True
        self.stopped = True
        # its volumes cannot be unmounted: the controller force-detaches them after 6 minutes
        self.detached = True
        self.k.attachments.release(self.key, MAX_WAIT_FOR_UNMOUNT)
        for proc in [self.main, *self.procs.values()]:
            if proc is not None and proc.is_alive and proc is not self.sim.env.active_process:
                proc.interrupt("node lost")

    def stop(self, cause: int | None, why: str) -> None:
        """The pod is being deleted: stop its containers (SIGTERM) and report the final status."""
        if self.stopped:
            return
        self._kill(EXIT_SIGTERM, cause)
        self._detach()
        if why == "deleted" and self.store.get("Pod", *self.key) is not None:
            self.push("containers stopped (pod deleted)", cause)


# --- a lost node: the control plane's side ----------------------------------------------------------
def lose_node(sim: Simulation, node: str, *, cause: int | None = None, instance_gone: bool = True) -> None:
    """What the control plane does about a node whose kubelet went silent at ``sim.now``.

    ``instance_gone``: the machine was terminated and the Node object is deleted at once (as
    Karpenter or a cloud's termination handler does; k8s.io/cloud-provider's node lifecycle
    controller would first wait for NotReady), then PodGC force-deletes its pods. Otherwise the
    node lifecycle controller marks it NotReady after :data:`NODE_MONITOR_GRACE` and the taint
    eviction deletes its pods when their ``unreachable`` toleration expires.
    """
    if instance_gone:
        if sim.store.get("Node", None, node) is not None:
            sim.store.delete("Node", None, node, actor="cloud-node-lifecycle-controller", cause=cause)
        # gc_controller.go gcOrphaned: a pod whose node is missing at a PodGC run is quarantined
        # for 40 s; the first run after that deletes it. Runs are every 20 s from t=0.
        first = math.ceil(sim.now / PODGC_PERIOD) * PODGC_PERIOD
        sim.after(first + PODGC_QUARANTINE - sim.now, _gc_orphans, sim, node, cause)
    else:
        sim.after(NODE_MONITOR_GRACE, _mark_unreachable, sim, node, cause)


def _gc_orphans(sim: Simulation, node: str, cause: int | None) -> None:
    if sim.store.get("Node", None, node) is not None:
        return  # the node came back within the quarantine
    for pod in sim.store.list("Pod"):
        if (pod.get("spec") or {}).get("nodeName") != node or pod["metadata"].get("deletionTimestamp"):
            continue
        ns, name = pod["metadata"].get("namespace"), pod["metadata"]["name"]
        status = clone(pod.get("status") or {})
        if status.get("phase") not in ("Succeeded", "Failed"):
            status["phase"] = "Failed"
            conds = [c for c in status.get("conditions") or () if c.get("type") != "DisruptionTarget"]
            conds.append({**PODGC_CONDITION, "lastTransitionTime": sim.timestamp()})
            status["conditions"] = conds
            sim.store.update_status("Pod", ns, name, status, actor="pod-garbage-collector", cause=cause)
        sim.store.delete("Pod", ns, name, actor="pod-garbage-collector", cause=cause, grace=0.0)


def _mark_unreachable(sim: Simulation, node: str, cause: int | None) -> None:
    """kubernetes pkg/controller/nodelifecycle/node_lifecycle_controller.go tryUpdateNodeHealth:
    Ready turns Unknown (NodeStatusUnknown), the unreachable NoSchedule and NoExecute taints are
    added (doNoExecuteTaintingPass), and the node's pods get Ready=False (MarkPodsNotReady)."""
    live = sim.store.get("Node", None, node)
    if live is None:
        return
    now = sim.timestamp()
    status = clone(live.get("status") or {})
    for cond in status.get("conditions") or ():
        if cond.get("status") != "Unknown":
            cond.update(
                status="Unknown",
                reason="NodeStatusUnknown",
                message="Kubelet stopped posting node status.",
                lastTransitionTime=now,
            )
    actor = "node-lifecycle-controller"
    updated = sim.store.update_status(
        "Node", None, node, status, actor=actor, cause=cause, message=f"Node/{node} Ready Unknown: Kubelet stopped posting node status."
    ) or live
    tainted = clone(updated)
    taints = [t for t in (tainted.get("spec") or {}).get("taints") or () if t.get("key") != TAINT_UNREACHABLE]
    taints += [
        {"key": TAINT_UNREACHABLE, "effect": "NoSchedule"},
        {"key": TAINT_UNREACHABLE, "effect": "NoExecute", "timeAdded": now},
    ]
    tainted.setdefault("spec", {})["taints"] = taints
    sim.store.update(tainted, actor=actor, cause=cause)
    for pod in sim.store.list("Pod"):
        if (pod.get("spec") or {}).get("nodeName") != node or pod["metadata"].get("deletionTimestamp"):
            continue
        ns, name = pod["metadata"].get("namespace"), pod["metadata"]["name"]
        pstatus = clone(pod.get("status") or {})
        for cond in pstatus.get("conditions") or ():
            if cond.get("type") == "Ready" and cond.get("status") != "False":
                cond.update(status="False", lastTransitionTime=now)
        sim.store.update_status("Pod", ns, name, pstatus, actor=actor, cause=cause)
        wait = _unreachable_toleration(pod)
        if wait is not None:
            sim.after(wait, _taint_evict, sim, node, ns, name, pod["metadata"].get("uid"), cause)


def _unreachable_toleration(pod: Mapping[str, Any]) -> float | None:
    """Seconds ``pod`` stays on an unreachable node (None: forever).

    taint_eviction.go getMinTolerationTime over the tolerations matching the NoExecute taint; the
    DefaultTolerationSeconds admission adds 300 s to pods that tolerate it no other way.
    """
    matching = [
        t
        for t in (pod.get("spec") or {}).get("tolerations") or ()
        if (t.get("effect") in (None, "", "NoExecute"))
        and (t.get("key") in (None, "", TAINT_UNREACHABLE))
        and (t.get("operator") == "Exists" or (t.get("key") == TAINT_UNREACHABLE and not t.get("value")))
    ]
    if not matching:
        return DEFAULT_TOLERATION_SECONDS
    seconds = [t.get("tolerationSeconds") for t in matching]
    if any(s is None for s in seconds):
        return None
    return max(0.0, float(min(seconds)))


def _taint_evict(
    sim: Simulation, node: str, ns: str, name: str, uid: str | None, cause: int | None
) -> None:
    pod = sim.store.get("Pod", ns, name)
    live = sim.store.get("Node", None, node)
    if pod is None or pod["metadata"].get("uid") != uid or pod["metadata"].get("deletionTimestamp"):
        return
    if live is None or not any(
        t.get("key") == TAINT_UNREACHABLE for t in (live.get("spec") or {}).get("taints") or ()
    ):
        return
    actor = "taint-eviction-controller"
    status = clone(pod.get("status") or {})
    conds = [c for c in status.get("conditions") or () if c.get("type") != "DisruptionTarget"]
    conds.append({**TAINT_EVICTION_CONDITION, "lastTransitionTime": sim.timestamp()})
    status["conditions"] = conds
    sim.store.update_status("Pod", ns, name, status, actor=actor, cause=cause)
    # taint_eviction.go: the TaintManagerEviction event, then a graceful delete. The kubelet is
    # gone, so a real pod stays Terminating until PodGC or a force delete; the store removes it
    # after its grace period (not modelled).
    ev = sim.store.record_event(
        pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {ns}/{name}", source=actor, cause=cause
    )
    sim.store.delete("Pod", ns, name, actor=actor, cause=ev, grace=sim.pod_grace(pod))
