"""Pods that cannot start: a missing reference, or no node the scheduler may use.

HS114 pod-reference-missing
    A workload's (or hook's) pods need an object that does not exist when they start: the API
    server refuses pods whose ServiceAccount or PriorityClass is missing (the controller's
    ``FailedCreate``), the kubelet cannot mount a Secret/ConfigMap volume (``FailedMount``, the
    pod stays ContainerCreating) or build the environment (``CreateContainerConfigError``), the
    scheduler cannot bind a pod whose claim is missing. The finding names the reference, the rule
    that enforced it (admission plugin, kubelet volume or env, scheduler), and who creates the
    object (a later hook, the manifest after the pre-* hooks, or nothing in the release).
HS115 pod-unschedulable
    Pods stay Pending because no node passes kube-scheduler's filters: the finding names each
    filter that rejected nodes (pod anti-affinity, topology spread, resources against
    allocatable, taints, node affinity) with the scheduler's own FailedScheduling text.

Evidence is the trace: the controllers', kubelet's and scheduler's Events (``FailedCreate``,
``FailedMount``, ``Failed`` "Error: …", ``FailedScheduling``) and whether the pods got past
them (a later pod created, ``Started``, ``scheduled``).
"""

from __future__ import annotations

import re

from msgspec import Struct

from helmsim.cluster.trace import TraceEvent
from helmsim.diagnose import fixes
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix, Severity, Step, step
from helmsim.diagnose.registry import rule
from helmsim.manifests import Resource

_SA = re.compile(
    r'error looking up service account (?P<ns>[^/\s]+)/(?P<name>\S+): serviceaccount "'
)
_PC = re.compile(r"no PriorityClass with name (?P<name>\S+) was found")
_NOT_FOUND = re.compile(
    r'(?P<kind>secret|configmap|persistentvolumeclaim) "(?P<name>[^"]+)" not found'
)
_KEY = re.compile(
    r"couldn't find key (?P<key>\S+) in (?P<kind>ConfigMap|Secret) (?P<ns>[^/\s]+)/(?P<name>\S+)"
)
_ITEM = re.compile(
    r"(?:references non-existent secret key|configmap references non-existent config key): (?P<key>\S+)"
)
_MOUNT = re.compile(r'MountVolume\.SetUp failed for volume "(?P<vol>[^"]+)" : (?P<err>.*)$')
_KINDS = {
    "secret": "Secret",
    "configmap": "ConfigMap",
    "persistentvolumeclaim": "PersistentVolumeClaim",
}


class _Blocked(Struct, frozen=True):
    """One reference that kept an owner's pods from starting."""

    owner: str
    ref: str  # Kind/ns/name of the missing object
    enforcer: str  # what refused it
    state: str  # what the pods show
    detail: str  # the upstream text
    first: TraceEvent
    count: int


def _missing_refs(text: str, namespace: str) -> list[str]:
    out = [f"ServiceAccount/{m['ns']}/{m['name']}" for m in _SA.finditer(text)]
    out += [f"PriorityClass//{m['name']}" for m in _PC.finditer(text)]
    out += [f"{_KINDS[m['kind']]}/{namespace}/{m['name']}" for m in _NOT_FOUND.finditer(text)]
    out += [f"{m['kind']}/{m['ns']}/{m['name']}" for m in _KEY.finditer(text)]
    return out


def _ns(obj: str) -> str:
    parts = obj.split("/")
    return parts[1] if len(parts) > 2 else ""


def _started_after(run: ProfileRun, pod: str, t: float) -> bool:
    return any(
        e.time >= t and e.what == "event" and e.data.get("reason") == "Started"
        for e in run.events(obj=pod)
    )


def _blocked(run: ProfileRun) -> list[_Blocked]:
    """Every (owner, missing reference) that kept pods from starting and was never overcome."""
    found: dict[tuple[str, str], list[tuple[TraceEvent, str, str, str]]] = {}
    pod_created = [e for e in run.trace if e.what == "created" and e.obj.startswith("Pod/")]
    for ev in run.events(what="event"):
        reason = ev.data.get("reason")
        if reason == "FailedCreate" and "is forbidden:" in ev.message:
            owner = run.release_object_of(ev) or ev.obj
            # overcome when a pod of the same owner was created later
            if any(p.time > ev.time and run.owner_of_pod(p.obj) == owner for p in pod_created):
                continue
            enforcer = (
                "the API server's ServiceAccount admission refuses them (plugin/pkg/admission/serviceaccount)"
                if "service account" in ev.message
                else "the API server's Priority admission refuses them (plugin/pkg/admission/priority)"
            )
            for ref in _missing_refs(ev.message, _ns(ev.obj)):
                found.setdefault((owner, ref), []).append(
                    (ev, enforcer, "no pod created (FailedCreate)", ev.message)
                )
            continue
        if not ev.obj.startswith("Pod/"):
            continue
        if reason == "FailedMount":
            m = _MOUNT.search(ev.message)
            if m is None or _started_after(run, ev.obj, ev.time):
                continue
            err, vol = m["err"], m["vol"]
            refs = _missing_refs(err, _ns(ev.obj))
            if not refs and _ITEM.search(err):
                refs = [f"key {_ITEM.search(err)['key']} of volume {vol}"]  # type: ignore[index]
            enforcer = f"the kubelet cannot set up their volume {vol} (pkg/kubelet/volumemanager)"
            state = "ContainerCreating"
        elif (
            reason == "Failed"
            and ev.message.startswith("Error: ")
            and "ImagePull" not in ev.message
        ):
            if _started_after(run, ev.obj, ev.time):
                continue
            err = ev.message.removeprefix("Error: ")
            refs = _missing_refs(err, _ns(ev.obj))
            enforcer = "the kubelet cannot build their environment (kubelet_pods.go makeEnvironmentVariables)"
            state = "CreateContainerConfigError"
        elif reason == "FailedScheduling" and "persistentvolumeclaim" in ev.message:
            if any(e.time > ev.time for e in run.events(what="scheduled", obj=ev.obj)):
                continue
            err = ev.message
            refs = _missing_refs(err, _ns(ev.obj))
            enforcer = "the scheduler cannot bind them (volumebinding PreFilter)"
            state = "Pending"
        else:
            continue
        owner = run.owner_of_pod(ev.obj) or ev.obj
        for ref in refs:
            found.setdefault((owner, ref), []).append((ev, enforcer, state, err))
    out = []
    for (owner, ref), evs in found.items():
        first, enforcer, state, detail = evs[0]
        out.append(_Blocked(owner, ref, enforcer, state, detail, first, len(evs)))
    return out


def _issuing_certificate(run: ProfileRun, ref: str) -> str | None:
    """The cert-manager Certificate of a release whose ``spec.secretName`` is Secret ``ref``
    (cert-manager pkg/apis/certmanager/v1 CertificateSpec.SecretName: the Secret it issues)."""
    kind, _, rest = ref.partition("/")
    ns, _, name = rest.partition("/")
    if kind != "Secret":
        return None
    for chart in run.charts.values():
        for res in chart.manifest:
            spec = res.body.get("spec") or {}
            if (
                res.kind == "Certificate"
                and res.api_version.startswith("cert-manager.io/")
                and res.namespace == ns
                and spec.get("secretName") == name
            ):
                return res.ref
    return None


def _who_creates(run: ProfileRun, ref: str, owner_start: float) -> tuple[str, TraceEvent | None]:
    created = run.created_by_helm(ref)
    if run.resource(ref) is None and created is None:
        issuer = _issuing_certificate(run, ref)
        if issuer is not None:
            return (
                f"{issuer} of the release names it as its secretName, but nothing in this simulation runs "
                "cert-manager to issue it"
            ), None
        return "nothing in the release creates it", None
    if created is None:
        return "the release creates it only after the pods' wait ended", None
    if created.time > owner_start:
        return f"Helm creates it at t={created.time:.2f}s, after the pods needed it", created
    return f"Helm created it at t={created.time:.2f}s", created


@rule(
    "HS114",
    "pod-reference-missing",
    "Pods cannot start because an object they reference does not exist",
)
def pod_reference_missing(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    refused = run.refusals(lambda _text: True)  # Helm's create of the object the API server refused
    for b in _blocked(run):
        located = run.resource(b.owner)
        if located is None:
            continue
        hr_ref, res = located
        if _hs107_covers(run, res, b.ref) or b.ref in refused:
            continue  # HS107 names the hook order; a refused create is the refusal's finding (HS124, HS104)
        ready = run.ready(hr_ref)
        source, created = _who_creates(run, b.ref, b.first.time)
        what = b.ref.replace("PriorityClass//", "PriorityClass/")
        times = f", {b.count} times" if b.count > 1 else ""
        msg = (
            f"{b.owner}'s pods cannot start: {what} is missing when they need it ({source}); "
            f"{b.enforcer}: {b.detail}{times}; they stay {b.state}"
            + (f"; the release ends {run.outcome(hr_ref).outcome}" if not ready else "")
        )
        chain: list[Step] = [step(b.first, f"{b.first.data.get('reason')}: {b.first.message}")]
        if created is not None and created.time >= b.first.time:
            chain.append(step(created, f"{created.obj} created by Helm"))
        if not ready:
            chain.extend(s for s in run.failure_tail(hr_ref) if s.time >= b.first.time)
        fix_list = [_reference_fix(run, res, b, what)]
        out.append(
            Candidate(
                "HS114",
                hr_ref,
                b.owner,
                Severity.error if not ready else Severity.warning,
                msg,
                sorted(chain, key=lambda s: s.time),
                fix_list,
                run.variant,
            )
        )
    return out


def _hs107_covers(run: ProfileRun, user: Resource, ref: str) -> bool:
    """A pre-* hook using an ordinary object of its release is HS107's finding (same cause, same fix)."""
    target = run.resource(ref)
    pre = user.hook is not None and any(
        e in ("pre-install", "pre-upgrade") for e in user.hook.events
    )
    return pre and target is not None and target[1].hook is None


def _reference_fix(run: ProfileRun, user: Resource, b: _Blocked, what: str) -> Fix:
    """Create the object first: as a hook before the hook that needs it, or outside the release."""
    located = run.resource(b.ref)
    if user.hook is not None and located is not None:
        events, weight = ",".join(user.hook.events), user.hook.weight - 1
        if located[1].hook is None:
            return Fix(
                f"make {what} a hook too ({events}, weight {weight}) so it exists before {b.owner}'s pods start",
                fixes.key("make-hook", b.ref, events, weight),
            )
        return Fix(
            f'give {what} a lower weight than {b.owner} (helm.sh/hook-weight: "{weight}")',
            fixes.key("hook-weight", b.ref, weight),
        )
    issuer = _issuing_certificate(run, b.ref) if located is None else None
    if issuer is not None:
        return Fix(
            f"install cert-manager before this release (a HelmRelease it dependsOn) so {issuer} is issued, or model "
            "cert-manager in the cluster profile's operators (profiles.md#operators)"
        )
    if located is None:
        optional = (
            ""
            if what.startswith(("ServiceAccount", "PriorityClass", "PersistentVolumeClaim"))
            else (", or mark the reference optional: true if the pods can run without it")
        )
        return Fix(f"create {what} before the release (nothing in it does){optional}")
    return Fix(f"create {what} before {b.owner} (an earlier kind group or hook)")


# --- HS115 ------------------------------------------------------------------------------------------
_EXPLAIN = (
    (
        "didn't match pod anti-affinity rules",
        "required pod anti-affinity allows one matching pod per topology domain, and every domain already has one",
        (
            "use preferredDuringSchedulingIgnoredDuringExecution for the anti-affinity, or run no more replicas than the "
            "profile has domains of its topologyKey"
        ),
    ),
    (
        "didn't satisfy existing pods anti-affinity rules",
        "pods already running have required anti-affinity against this pod's labels",
        "relax the other pods' anti-affinity, or change this pod's labels",
    ),
    (
        "didn't match pod affinity rules",
        "required pod affinity: no pod its terms select runs in a reachable topology domain",
        "create the pods it follows first, or use preferredDuringSchedulingIgnoredDuringExecution",
    ),
    (
        "(missing required label)",
        "the nodes lack the topology spread constraint's topologyKey label",
        "spread on a label the nodes have (kubernetes.io/hostname, topology.kubernetes.io/zone)",
    ),
    (
        "didn't match pod topology spread constraints",
        "a whenUnsatisfiable: DoNotSchedule constraint would exceed its maxSkew on every node",
        "use whenUnsatisfiable: ScheduleAnyway, raise maxSkew, or add topology domains",
    ),
    (
        "didn't have free ports for the requested pod ports",
        "its host ports (hostPort, or every containerPort under hostNetwork) are taken on every node",
        "run at most one such pod per node (fewer replicas, a DaemonSet, or required pod anti-affinity on "
        "kubernetes.io/hostname), or drop hostPort / hostNetwork",
    ),
    (
        "Insufficient ",
        "the pod's resource requests exceed what the nodes' allocatable has left",
        "lower the requests, or run on larger nodes (the profile's nodes[].allocatable)",
    ),
    (
        "Too many pods",
        "the nodes run their maximum number of pods (allocatable pods)",
        "run fewer pods, or on more nodes",
    ),
    (
        "untolerated taint",
        "the nodes carry taints the pod does not tolerate",
        "add a toleration for the taint, or schedule onto untainted nodes",
    ),
    (
        "didn't match Pod's node affinity/selector",
        "no node has the labels its nodeSelector / required node affinity asks for",
        "fix the nodeSelector or node affinity to labels the nodes have",
    ),
    (
        "were unschedulable",
        "the nodes are cordoned (spec.unschedulable)",
        "uncordon a node or add one",
    ),
    (
        "had volume node affinity conflict",
        "the volume its claim is bound to is pinned by node affinity (a zone, a node) to nodes it cannot use",
        _SHARED_CLAIM_FIX := (
            "give each replica its own claim (a StatefulSet's volumeClaimTemplates), keep the pods sharing a "
            "ReadWriteOnce claim on one node (no required anti-affinity between them), or use ReadWriteMany storage"
        ),
    ),
    (
        "didn't find available persistent volumes to bind",
        "its WaitForFirstConsumer claim is already being provisioned for the node another pod was given",
        _SHARED_CLAIM_FIX,
    ),
)


# Topology keys a spread constraint commonly names (kubernetes.io/hostname, the well-known zone
# and region labels: k8s.io/api core/v1 well_known_labels.go).
_TOPOLOGY_KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region")


def _spread_fix(run: ProfileRun) -> str:
    """The fix for a spread on a label the nodes lack: the topology keys every node of the
    profile carries."""
    have = [k for k in _TOPOLOGY_KEYS if all(k in n.labels for n in run.profile.nodes)]
    return f"spread on a label the nodes have ({', '.join(have)})" if have else "label the nodes with the constraint's topologyKey"


def _last_unscheduled(run: ProfileRun) -> dict[str, list[TraceEvent]]:
    """FailedScheduling events of pods that were never bound after them, by owner."""
    by_pod: dict[str, list[TraceEvent]] = {}
    for ev in run.events(what="event"):
        if ev.data.get("reason") != "FailedScheduling" or not ev.obj.startswith("Pod/"):
            continue
        if "persistentvolumeclaim" in ev.message.lower() or "PreBind" in ev.message:
            continue  # missing or unbound claims: HS114 and the storage rules
        by_pod.setdefault(ev.obj, []).append(ev)
    out: dict[str, list[TraceEvent]] = {}
    for pod, evs in by_pod.items():
        if any(e.time >= evs[-1].time for e in run.events(what="scheduled", obj=pod)):
            continue
        owner = run.owner_of_pod(pod) or pod
        out.setdefault(owner, []).extend(evs)
    return out


@rule(
    "HS115",
    "pod-unschedulable",
    "Pods stay Pending because no node passes the scheduler's filters",
)
def pod_unschedulable(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for owner, evs in _last_unscheduled(run).items():
        located = run.resource(owner)
        if located is None:
            continue
        hr_ref, _res = located
        ready = run.ready(hr_ref)
        last = max(evs, key=lambda e: e.id)
        fit = last.message.split(" preemption: ", 1)[0]
        why = [(frag, text, fix) for frag, text, fix in _EXPLAIN if frag in fit]
        if "(missing required label)" in fit:
            why = [w for w in why if w[0] != "didn't match pod topology spread constraints"]
        reasons = "; ".join(text for _f, text, _x in why) or "no node passes its filters"
        names = sorted({e.obj.rsplit("/", 1)[1] for e in evs})
        msg = (
            f"{owner}: {len(names)} pod{'s' if len(names) > 1 else ''} never scheduled ({', '.join(names)}): {reasons} "
            f"(the scheduler: {last.message})"
            + (f"; the release ends {run.outcome(hr_ref).outcome}" if not ready else "")
        )
        first = min(evs, key=lambda e: e.id)
        chain = [step(first, f"FailedScheduling: {first.message}")]
        if not ready:
            chain.extend(s for s in run.failure_tail(hr_ref) if s.time >= first.time)
        fix_list = [Fix(_spread_fix(run) if frag == "(missing required label)" else fix) for frag, _t, fix in why] or [
            Fix("make a node pass the scheduler's filters")
        ]
        out.append(
            Candidate(
                "HS115",
                hr_ref,
                owner,
                Severity.error if not ready else Severity.warning,
                msg,
                sorted(chain, key=lambda s: s.time),
                fix_list,
                run.variant,
            )
        )
    return out
