"""Pods refused by the API server's Pod Security admission.

HS123 pod-security-violation
    A workload's (or hook's, or Helm's own) pods violate the Pod Security level their namespace
    enforces (the namespace's ``pod-security.kubernetes.io/enforce`` label, else the cluster's
    default): the API server refuses every pod (k8s.io/pod-security-admission
    admission/admission.go: ``violates PodSecurity "<level>:<version>": …``). The controller's
    ``FailedCreate`` repeats, no pod ever exists, and Helm's wait times out; a bare Pod in the
    release fails the install at once. The finding names the level, where it comes from, each
    violated check with upstream's text, and the lowest level that would admit the pods.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from helmsim.cluster import podsecurity
from helmsim.cluster.trace import TraceEvent
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix, Severity, Step, step
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


def _events(run: ProfileRun) -> dict[str, list[TraceEvent]]:
    """Release object → the Pod Security refusals of its pods that nothing overcame."""
    out: dict[str, list[TraceEvent]] = {}
    for owner, evs in run.refused_pods.items():
        mine = [e for e in evs if "violates PodSecurity" in e.message]
        if mine:
            out[owner] = mine
    return out


def _admitting_level(body: Mapping[str, Any]) -> str:
    """The lowest level above restricted that admits the object's pods."""
    pod = pod_template(body)
    if pod is None or podsecurity.check_pod(pod, "baseline"):
        return "privileged"
    return "baseline"


@rule(
    "HS123",
    "pod-security-violation",
    "The API server's Pod Security admission refuses the pods",
)
def pod_security_violation(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for owner, evs in _events(run).items():
        located = run.resource(owner)
        if located is None:
            continue
        hr_ref, res = located
        m = _VIOLATES.search(evs[0].message)
        if m is None:
            continue
        ready = run.ready(hr_ref)
        namespace = res.namespace or "default"
        times = f", {len(evs)} times" if len(evs) > 1 else ""
        msg = (
            f"{owner}'s pods are refused by Pod Security admission: namespace {namespace} enforces "
            f'"{m["level"]}:{m["version"]}" {_source(run, namespace)}: {m["detail"]}{times}; no pod is created'
            + (f"; the release ends {run.outcome(hr_ref).outcome}" if not ready else "")
        )
        chain: list[Step] = [step(evs[0], f"FailedCreate: {evs[0].message}")]
        if not ready:
            chain.extend(s for s in run.failure_tail(hr_ref) if s.time >= evs[0].time)
        out.append(
            Candidate(
                "HS123",
                hr_ref,
                owner,
                Severity.error if not ready else Severity.warning,
                msg,
                sorted(chain, key=lambda s: s.time),
                _fixes(m["level"], m["detail"], res.body, namespace),
                run.variant,
            )
        )
    return out


def _fixes(level: str, detail: str, body: Mapping[str, Any], namespace: str) -> list[Fix]:
    settable = [text for reason, text in _SETTABLE if f"{reason} (" in detail]
    baseline_ok = _admitting_level(body) == "baseline"
    out: list[Fix] = []
    if level == "restricted" and baseline_ok and settable:
        out.append(Fix("set in the pod template (the chart's securityContext values): " + "; ".join(settable)))
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
