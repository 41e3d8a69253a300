"""Workloads a managed platform's own admission refuses.

HS125 autopilot-constraint-violation
    GKE Autopilot's Warden webhook (profile ``admissionPolicies: [gke-autopilot]``) refuses a
    workload or its pods: privileged containers, host namespaces, host ports, hostPath volumes
    outside ``/var/log/`` or mounted writable, capabilities beyond Autopilot's set. Helm's apply
    of the workload fails at once (``admission webhook "warden-validating…" denied the
    request``); the finding lists each constraint with the webhook's text and what to change.
    Also reported: an object in the namespace Autopilot manages (``kube-system``), which its
    authorizer refuses (``GKEAutopilot authz: the namespace "kube-system" is managed``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from helmsim.cluster import warden
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix
from helmsim.diagnose.registry import rule

_DETAILS = re.compile(r"Violations details: (?P<json>\{.*\})", re.S)
# what a chart's values usually turn off for each constraint
_ADVICE = {
    "autogke-default-linux-capabilities": "drop the added capabilities Autopilot does not allow (securityContext.capabilities.add)",
    "autogke-disallow-hostnamespaces": "turn off hostNetwork, hostPID and hostIPC (the chart's hostNetwork values)",
    "autogke-disallow-privilege": "run the containers unprivileged (securityContext.privileged)",
    "autogke-no-host-port": "remove the host ports (the chart's hostPort values; a hostNetwork pod's ports are host ports)",
    "autogke-no-write-mode-hostpath": "mount hostPath volumes read-only and only under /var/log/, or use emptyDir or a claim",
}


_AUTHZ = "GKEAutopilot authz: the namespace"


def _managed_namespace(run: ProfileRun, hr_ref: str, owner: str, first: Any, text: str) -> Candidate:
    """A release object in a namespace Autopilot manages (kube-system): its authorizer refuses it."""
    namespace = owner.split("/")[1] if owner.count("/") >= 2 else "kube-system"
    msg = (
        f"{owner} is refused by GKE Autopilot's authorizer: the namespace {namespace} is managed by the platform "
        f"({text.split(' is forbidden: ', 1)[-1]})"
    )
    fix = Fix(
        f"create it in another namespace (the chart's values for {namespace} objects, e.g. cert-manager's "
        "global.leaderElection.namespace, kube-prometheus-stack's kubeControllerManager/kubeScheduler/kubeEtcd/kubeProxy/coreDns)"
    )
    return run.refusal_candidate("HS125", hr_ref, owner, first, text, msg, [fix])


@rule(
    "HS125",
    "autopilot-constraint-violation",
    "GKE Autopilot's Warden admission refuses a workload or its pods",
)
def autopilot_constraint_violation(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for owner, evs in run.refusals(lambda text: warden.WEBHOOK in text or _AUTHZ in text).items():
        located = run.resource(owner)
        if located is None:
            continue
        hr_ref, res = located
        first, text = evs[0]
        if _AUTHZ in text:
            out.append(_managed_namespace(run, hr_ref, owner, first, text))
            continue
        m = _DETAILS.search(text)
        try:
            details = json.loads(m["json"]) if m else {}
        except ValueError:
            details = {}
        groups = {
            str(k).removeprefix("[denied by ").removesuffix("]"): v if isinstance(v, list) else [v]
            for k, v in (details.items() if isinstance(details, dict) else ())
        }
        constraints = list(groups)
        listed = " ".join(f"[{c}] {' '.join(str(m) for m in groups[c])}" for c in constraints)
        msg = (
            f"{owner} is refused by GKE Autopilot's Warden admission ({len(constraints)} "
            f"constraint{'s' if len(constraints) != 1 else ''}): {listed}"
        )
        fixes = [Fix(f"{_ADVICE[c]} ({c})") for c in constraints if c in _ADVICE]
        fixes.append(
            Fix("or run it on GKE Standard (a node agent that needs the host usually has an Autopilot mode in its chart's values)")
        )
        out.append(run.refusal_candidate("HS125", hr_ref, owner, first, text, msg, fixes))
    return out
