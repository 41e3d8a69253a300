"""GKE Autopilot's Warden admission: the constraints Autopilot enforces on workloads and pods.

A profile with ``admissionPolicies: [gke-autopilot]`` refuses, on create and update of a Pod or
a workload (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, ReplicationController),
what GKE's validating webhook refuses (cloud.google.com/kubernetes-engine/docs/concepts/
autopilot-security "Built-in security measures"; the texts are those the webhook returns, as
users quote them: istio/istio.io#16266, CrowdStrike/falcon-helm#310, DataDog/helm-charts#1436,
livekit/livekit-helm#147, SumoLogic/sumologic-kubernetes-collection#3437):

* ``autogke-default-linux-capabilities``: capabilities beyond Autopilot's default set;
* ``autogke-disallow-hostnamespaces``: ``hostPID``, ``hostIPC``, ``hostNetwork``;
* ``autogke-disallow-privilege``: privileged containers;
* ``autogke-no-host-port``: host ports (a hostNetwork pod's container ports are host ports);
* ``autogke-no-write-mode-hostpath``: hostPath volumes outside ``/var/log/``, or mounted
  writable.

The refusal is ``admission webhook "warden-validating.common-webhooks.networking.gke.io" denied
the request: GKE Warden rejected the request because it violates one or more constraints.`` and
``Violations details: {…}`` (a JSON object by constraint); the webhook's trailing ``Requested by
user`` line is left out. Autopilot's resource defaults and limits (its mutating webhook and
``autogke-pod-limit-constraints``) and its node provisioning are not modelled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from helmsim.cluster.store import ApiError

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

AUTOPILOT = "gke-autopilot"
WEBHOOK = "warden-validating.common-webhooks.networking.gke.io"
ALLOWED_CAPABILITIES = (
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT", "SYS_PTRACE",
)
HOSTPATH_PREFIXES = ("/var/log/",)
WORKLOAD_KINDS = frozenset(
    {"Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicationController"}
)


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _seq(v: Any) -> Sequence[Any]:
    return v if isinstance(v, list) else ()


def pod_spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec a Pod has, or a workload's (a CronJob's job's) pod template has."""
    kind = obj.get("kind")
    if kind == "Pod":
        return _map(obj.get("spec"))
    spec = _map(obj.get("spec"))
    if kind == "CronJob":
        spec = _map(_map(spec.get("jobTemplate")).get("spec"))
    template = spec.get("template")
    return _map(_map(template).get("spec")) if isinstance(template, Mapping) else None


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    # the order the webhook lists them in: containers, then init containers
    for field in ("containers", "initContainers"):
        for c in _seq(spec.get(field)):
            if isinstance(c, Mapping):
                yield c


def violations(spec: Mapping[str, Any], *, pod: bool = True) -> dict[str, list[str]]:
    """Constraint → the webhook's messages for ``spec`` (empty: admitted); ``pod``: the spec is
    a Pod's (decoding made a hostNetwork pod's container ports host ports), not a template's."""
    out: dict[str, list[str]] = {}

    def add(constraint: str, message: str) -> None:
        out.setdefault(f"[denied by {constraint}]", []).append(message)

    allowed = ",".join(ALLOWED_CAPABILITIES)
    for c in _containers(spec):
        added = [str(a) for a in _seq(_map(_map(c.get("securityContext")).get("capabilities")).get("add"))]
        extra = [a for a in added if a not in ALLOWED_CAPABILITIES]
        if extra:
            add(
                "autogke-default-linux-capabilities",
                f"linux capability '{','.join(extra)}' on container '{c.get('name')}' not allowed; "
                f"Autopilot only allows the capabilities: '{allowed}'.",
            )
    for field in ("hostPID", "hostIPC", "hostNetwork"):
        if spec.get(field) is True:
            add("autogke-disallow-hostnamespaces", f"enabling {field} is not allowed in Autopilot.")
    for c in _containers(spec):
        if _map(c.get("securityContext")).get("privileged") is True:
            add("autogke-disallow-privilege", f"container {c.get('name')} is privileged; not allowed in Autopilot")
    # pkg/apis/core/v1/defaults.go defaultHostNetworkPorts: on Pods only since 1.28 (the
    # DefaultHostNetworkHostPortsInPodTemplates gate is off for templates)
    host_network = spec.get("hostNetwork") is True and pod
    for c in _containers(spec):
        ports = []
        for p in _seq(c.get("ports")):
            if not isinstance(p, Mapping):
                continue
            port = p.get("hostPort") or (p.get("containerPort") if host_network else None)
            if port:
                ports.append(str(port))
        if ports:
            add(
                "autogke-no-host-port",
                f"container {c.get('name')} specifies host ports [{' '.join(ports)}], which are disallowed in Autopilot.",
            )
    host_paths = {
        str(v.get("name")): str(_map(v.get("hostPath")).get("path") or "")
        for v in _seq(spec.get("volumes"))
        if isinstance(v, Mapping) and isinstance(v.get("hostPath"), Mapping)
    }
    prefixes = ", ".join(HOSTPATH_PREFIXES)
    for c in _containers(spec):
        mounts = [m for m in _seq(c.get("volumeMounts")) if str(_map(m).get("name")) in host_paths]
        # the webhook reports writable mounts first (whatever their path), then read-only ones on
        # paths outside the allowed prefixes (istio/istio.io#16266, lfn-cnti#1675)
        for m in mounts:
            if _map(m).get("readOnly") is not True:
                add(
                    "autogke-no-write-mode-hostpath",
                    f"hostPath volume {_map(m).get('name')} in container {c.get('name')} is accessed in write mode; "
                    "disallowed in Autopilot.",
                )
        for m in mounts:
            name = str(_map(m).get("name"))
            path = host_paths[name]
            if _map(m).get("readOnly") is True and not (path.rstrip("/") + "/").startswith(HOSTPATH_PREFIXES):
                add(
                    "autogke-no-write-mode-hostpath",
                    f"hostPath volume {name} used in container {c.get('name')} uses path {path} which is not allowed in "
                    f"Autopilot. Allowed path prefixes for hostPath volumes are: [{prefixes}].",
                )
    return out


def _go_json(value: Any) -> str:
    """encoding/json Marshal: keys sorted, compact, <, > and & escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def enforced(sim: Simulation) -> bool:
    """Whether the profile's platform runs Autopilot's Warden."""
    return AUTOPILOT in (getattr(sim.profile, "admission_policies", None) or ())


MANAGED_NAMESPACES = ("kube-system",)
# the writers whose requests Autopilot's authorizer judges (the platform's own controllers are
# allowed in its managed namespaces)
_USER_ACTORS = {"helm": "system:serviceaccount:flux-system:helm-controller",
                "kustomize-controller": "system:serviceaccount:flux-system:kustomize-controller"}


def check(sim: Simulation, obj: Mapping[str, Any], actor: str = "") -> None:
    """Raise the webhook's denial (``ApiError``) when ``obj`` violates Autopilot's constraints,
    or Autopilot's authorizer's when a user writes to a namespace it manages."""
    if not enforced(sim):
        return
    namespace = str(_map(obj.get("metadata")).get("namespace") or "")
    if namespace in MANAGED_NAMESPACES and actor in _USER_ACTORS:
        from helmsim.cluster.controllers.crd import resource_name

        api_version = str(obj.get("apiVersion") or "")
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        resource = resource_name(sim, api_version, str(obj.get("kind") or ""))
        qualified = resource + (f".{group}" if group else "")
        name = _map(obj.get("metadata")).get("name")
        # GKE Autopilot's authorizer (prometheus-community/helm-charts#4833, cert-manager#3713)
        raise ApiError(
            "Forbidden",
            f'{qualified} "{name}" is forbidden: User "{_USER_ACTORS[actor]}" cannot create resource "{resource}" in API '
            f'group "{group}" in the namespace "{namespace}": GKEAutopilot authz: the namespace "{namespace}" is managed '
            "and the request's verb \"create\" is denied",
        )
    if str(obj.get("kind") or "") not in WORKLOAD_KINDS:
        return
    spec = pod_spec_of(obj)
    if spec is None:
        return
    found = violations(spec, pod=obj.get("kind") == "Pod")
    if found:
        raise ApiError(
            "Forbidden",
            f'admission webhook "{WEBHOOK}" denied the request: GKE Warden rejected the request because it violates '
            f"one or more constraints.\nViolations details: {_go_json(found)}",
        )
