"""Pods refused by the API server's Pod Security admission.

HS123 pod-security-violation
    A workload's (or hook's, or Helm's own) pods violate the Pod Security level their namespace
    enforces (the namespace's ``pod-security.kubernetes.io/enforce`` label, else the cluster's
    default): the API server refuses every pod (k8s.io/pod-security-admission
    admission/admission.go: ``violates PodSecurity "<level>:<version>": …``). The controller's
    ``FailedCreate`` repeats, no pod ever exists, and Helm's wait times out; a bare Pod in the
    release fails the install at once. The finding names the level, where it comes from, each
    violated check with upstream's text, and the lowest level that would admit the pods.
    Also reported: pods whose containers the kubelet never creates because they set
    ``runAsNonRoot`` and run as user 0 (``container's runAsUser breaks non-root policy``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from helmsim.cluster import podsecurity
from helmsim.diagnose import fixes
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix
from helmsim.diagnose.registry import rule
from helmsim.kube.workloads import pod_template

_VIOLATES = re.compile(r'violates PodSecurity "(?P<level>[a-z]+):(?P<version>[^"]+)": (?P<detail>.*)$')
# the fields a restricted pod must set, as upstream's details name them
_SETTABLE = (
    ("allowPrivilegeEscalation != false", "securityContext.allowPrivilegeEscalation: false in each container"),
    ("unrestricted capabilities", 'securityContext.capabilities.drop: ["ALL"] in each container (and add nothing but NET_BIND_SERVICE)'),
    ("runAsNonRoot != true", "securityContext.runAsNonRoot: true in the pod, with a runAsUser the image can run as (the kubelet refuses runAsNonRoot for an image whose user is root)"),
    ("runAsUser=0", "a runAsUser other than 0"),
    ("seccompProfile", "securityContext.seccompProfile.type: RuntimeDefault in the pod"),
)


def _source(run: ProfileRun, namespace: str) -> str:
    """Where the namespace's enforced level comes from."""
    sim = run.result.sim
    ns = sim.store.get("Namespace", None, namespace) if sim is not None else None
    labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
    if podsecurity.ENFORCE_LABEL in labels:
        return f"by its label {podsecurity.ENFORCE_LABEL}={labels[podsecurity.ENFORCE_LABEL]}"
    return f"by the cluster's default (podSecurity.defaults.enforce of profile {run.profile.name})"


def _admitting_level(body: Mapping[str, Any]) -> str:
    """The lowest level above restricted that admits the object's pods."""
    pod = pod_template(body)
    if pod is None or podsecurity.check_pod(pod, "baseline"):
        return "privileged"
    return "baseline"


# pkg/kubelet/kuberuntime/security_context_others.go verifyRunAsNonRoot
_NON_ROOT = ("breaks non-root policy", "has runAsNonRoot and image")


def _non_root(run: ProfileRun) -> list[Candidate]:
    """Pods whose containers the kubelet never creates: runAsNonRoot with runAsUser 0."""
    out: list[Candidate] = []
    for owner, evs in run.unstartable_pods.items():
        mine = [e for e in evs if any(k in e.message for k in _NON_ROOT)]
        located = run.resource(owner)
        if not mine or located is None:
            continue
        hr_ref, res = located
        times = f", {len(mine)} times" if len(mine) > 1 else ""
        msg = (
            f"{owner}'s containers are never created: the kubelet enforces runAsNonRoot and the pod runs as user 0: "
            f"{mine[0].message.removeprefix('Error: ')}{times}; they stay CreateContainerConfigError"
        )
        fix = Fix("set a runAsUser other than 0 (one the image can run as), or drop runAsNonRoot: true")
        out.append(run.refusal_candidate("HS123", hr_ref, owner, mine[0], mine[0].message, msg, [fix]))
    return out


@rule(
    "HS123",
    "pod-security-violation",
    "The API server's Pod Security admission refuses the pods",
)
def pod_security_violation(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for owner, evs in run.refusals(lambda text: "violates PodSecurity" in text).items():
        located = run.resource(owner)
        if located is None:
            continue
        hr_ref, res = located
        first, text = evs[0]
        m = _VIOLATES.search(text)
        if m is None:
            continue
        namespace = res.namespace or "default"
        times = f", {len(evs)} times" if len(evs) > 1 else ""
        refused = "are refused" if res.kind != "Pod" else "is refused"
        subject = f"{owner}'s pods" if res.kind != "Pod" else owner
        created = "no pod is created" if res.kind != "Pod" else "Helm's create fails"
        msg = (
            f"{subject} {refused} by Pod Security admission: namespace {namespace} enforces "
            f'"{m["level"]}:{m["version"]}" {_source(run, namespace)}: {m["detail"]}{times}; {created}'
        )
        fixes = _fixes(m["level"], m["detail"], res.body, namespace, res.ref)
        out.append(run.refusal_candidate("HS123", hr_ref, owner, first, text, msg, fixes))
    return out + _non_root(run)


# check_runAsNonRoot.go / check_runAsUser.go: a container that asks for root itself
_ROOT_BY_CHOICE = re.compile(
    r'(?:containers?|pod and containers?) (?P<names>"[^)]*?") must not set (?:securityContext\.runAsNonRoot=false|runAsUser=0)'
)


def _root_containers(detail: str) -> list[str]:
    """Containers that set runAsNonRoot: false or runAsUser: 0 themselves."""
    names: list[str] = []
    for m in _ROOT_BY_CHOICE.finditer(detail):
        names += [n for n in re.findall(r'"([^"]*)"', m["names"]) if n not in names]
    return names


def _fixes(level: str, detail: str, body: Mapping[str, Any], namespace: str, ref: str = "") -> list[Fix]:
    settable = [text for reason, text in _SETTABLE if f"{reason} (" in detail]
    baseline_ok = _admitting_level(body) == "baseline"
    root = _root_containers(detail)
    out: list[Fix] = []
    if level == "restricted" and baseline_ok and root:
        # a container's own runAsNonRoot/runAsUser wins over the pod's (DetermineEffectiveSecurityContext)
        quoted = ", ".join(f'"{n}"' for n in root)
        out.append(
            Fix(
                f"{_plural_containers(root)} {quoted} {'ask' if len(root) > 1 else 'asks'} for root {'themselves' if len(root) > 1 else 'itself'} (runAsNonRoot: false "
                "or runAsUser: 0; a pod-level setting cannot override a container's): if it is a volume-permissions "
                "init container, disable it (the chart's volumePermissions values) and give the pod an fsGroup instead"
            )
        )
    elif level == "restricted" and baseline_ok and settable:
        # applied to the rendered pod template and re-simulated by check
        key = fixes.key("restricted-context", ref) if ref and "restricted volume types (" not in detail else None
        out.append(Fix("set in the pod template (the chart's securityContext values): " + "; ".join(settable), key))
    lowest = _admitting_level(body)
    out.append(
        Fix(
            f"or run it in a namespace whose {podsecurity.ENFORCE_LABEL} level admits it ({lowest}): "
            f"label namespace {namespace} {podsecurity.ENFORCE_LABEL}={lowest}, or install it into one that has it"
            if out
            else f"run it in a namespace whose {podsecurity.ENFORCE_LABEL} level admits it ({lowest}): label namespace "
            f"{namespace} {podsecurity.ENFORCE_LABEL}={lowest} (its pods need what {level} forbids), or install it "
            "into one that has it"
        )
    )
    return out


def _plural_containers(names: list[str]) -> str:
    return "container" if len(names) == 1 else "containers"
