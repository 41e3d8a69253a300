"""Objects a namespace's ResourceQuota or LimitRange refuses.

HS124 quota-or-limit-refused
    The API server's ResourceQuota admission refuses an object the namespace's quota cannot
    hold (``exceeded quota: <name>, requested: …, used: …, limited: …``) or a pod whose
    containers do not set what a cpu/memory quota tracks (``failed quota: <name>: must specify
    …``); LimitRanger refuses a pod outside a LimitRange's bounds (``maximum memory usage per
    Container is 512Mi, but limit is 1Gi``) or a claim outside a ``type: PersistentVolumeClaim``
    item's storage bounds. A controller's pods are its ``FailedCreate`` with
    back-off and Helm's wait times out; an object Helm creates fails the release at once. A
    rolling update that needs a surge pod the quota has no room for never ends: the finding says
    so and its fix (``maxSurge: 0``) is applied and re-simulated.
"""

from __future__ import annotations

import re

from helmsim.diagnose import fixes
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix
from helmsim.diagnose.registry import rule
from helmsim.kube.quantity import canonical, is_binary, parse_quantity
from helmsim.manifests import Resource

# k8s.io/apiserver pkg/admission/plugin/resourcequota/controller.go CheckRequest
_EXCEEDED = re.compile(
    r"exceeded quota: (?P<quota>[^,]+), requested: (?P<requested>\S+), used: (?P<used>\S+), limited: (?P<limited>\S+)"
)
_FAILED = re.compile(r"failed quota: (?P<quota>[^:]+): (?P<reason>must specify .*)$")
# plugin/pkg/admission/limitranger/admission.go minConstraint, maxConstraint, limitRequestRatioConstraint
# and PersistentVolumeClaimValidateLimitFunc (a claim's storage request)
_LIMIT = re.compile(
    r"(?:[Mm]inimum|[Mm]aximum) \S+ usage per (?:Container|Pod|PersistentVolumeClaim)"
    r"|max limit to request ratio per (?:Container|Pod)"
)
_CLAIM_LIMIT = re.compile(r"(?P<bound>minimum|maximum) (?P<resource>\S+) usage per PersistentVolumeClaim is (?P<value>[^,.\s]+)")


def _refusal(text: str) -> bool:
    return bool(_EXCEEDED.search(text) or _FAILED.search(text) or _LIMIT.search(text))


def _values(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split(",") if "=" in part)


_CLAIM = re.compile(r'persistentvolumeclaims "(?P<name>[^"]+)" is forbidden')


def _rollout_consequence(res: Resource) -> str:
    """What a refused surge pod does to a rolling update: with maxUnavailable 0 (25% of fewer
    than 4 replicas rounds down) the old pods stay until the new one is Ready, so the rollout
    never ends; otherwise old pods go first and the rest waits on the ReplicaSet controller's
    back-off (pkg/controller/deployment/rolling.go, util/deployment_util.go ResolveFenceposts)."""
    spec = res.body.get("spec") or {}
    strategy = spec.get("strategy") or {}
    rolling = strategy.get("rollingUpdate") or {}
    replicas = spec.get("replicas", 1)
    unavailable = rolling.get("maxUnavailable", "25%")
    if isinstance(unavailable, str) and unavailable.endswith("%") and isinstance(replicas, int):
        try:
            value = int(unavailable[:-1]) * replicas // 100
        except ValueError:
            value = 0
    else:
        value = unavailable if isinstance(unavailable, int) else 0
    if value == 0:
        return "the rollout cannot add the pod it surges and keeps the old ones until it is Ready, so it never ends"
    return "the rollout replaces what maxUnavailable allows, then waits on the ReplicaSet controller's back-off for room"


def _rollout(run: ProfileRun, owner: str, at: float) -> bool:
    """Whether the refusals came during a rollout of a Deployment that already had pods."""
    if not owner.startswith("Deployment/"):
        return False
    return any(
        e.what == "created" and e.time < at and run.owner_of_pod(e.obj) == owner
        for e in run.trace
        if e.obj.startswith("Pod/")
    )


def _needed(m: re.Match[str]) -> str:
    """The hard values that would admit the request: used + requested, per resource."""
    requested, used = _values(m["requested"]), _values(m["used"])
    parts = []
    for name, raw in sorted(requested.items()):
        try:
            total = parse_quantity(raw) + parse_quantity(used.get(name, "0"))
        except ValueError:
            continue
        parts.append(f"{name}: {canonical(total, is_binary(raw) or is_binary(used.get(name)))}")
    return ", ".join(parts)


def _fixes(run: ProfileRun, res: Resource, text: str, rollout: bool) -> list[Fix]:
    exceeded = _EXCEEDED.search(text)
    bounds = _CLAIM_LIMIT.findall(text)
    if bounds:
        within = " and ".join(f"{'at least' if b == 'minimum' else 'at most'} {v}" for b, _, v in bounds)
        return [
            Fix(
                f"set the claim's storage request to {within} (the chart's persistence size values), or change the "
                "namespace's LimitRange of type PersistentVolumeClaim"
            )
        ]
    if exceeded is not None and _CLAIM.search(text):
        return [
            Fix(
                f"lower the claim's storage request (the chart's persistence size values), or raise ResourceQuota "
                f"{exceeded['quota']}'s spec.hard to at least {_needed(exceeded)}"
            )
        ]
    if exceeded is not None:
        quota = exceeded["quota"]
        out: list[Fix] = []
        if rollout:
            out.append(
                Fix(
                    f"let the rollout replace pods instead of adding one: strategy.rollingUpdate maxSurge: 0, maxUnavailable: 1 "
                    f"on {res.ref} (the quota holds the current pods, not one more)",
                    fixes.key("no-surge", res.ref),
                )
            )
        out.append(
            Fix(
                f"{'or ' if out else ''}raise ResourceQuota {quota}'s spec.hard to at least {_needed(exceeded)}, or lower what "
                "the objects request (the chart's resources values, replicas)"
            )
        )
        return out
    failed = _FAILED.search(text)
    if failed is not None:
        return [
            Fix(
                f"set the containers' resources ({failed['reason'].removeprefix('must specify ')}) through the chart's resources "
                "values, or give the namespace a LimitRange with default requests and limits"
            )
        ]
    return [Fix("set the containers' resources within the namespace's LimitRange bounds (the chart's resources values)")]


@rule(
    "HS124",
    "quota-or-limit-refused",
    "A namespace's ResourceQuota or LimitRange refuses an object or its pods",
)
def quota_or_limit_refused(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for owner, evs in run.refusals(_refusal).items():
        located = run.resource(owner)
        if located is None:
            continue
        hr_ref, res = located
        first, text = evs[0]
        rollout = _rollout(run, owner, first.time)
        times = f"; refused {len(evs)} times" if len(evs) > 1 else ""
        claim = _CLAIM.search(text)
        if first.data.get("reason") == "FailedCreate" and claim is not None:
            # stateful_pod_control.go createPersistentVolumeClaims: the claim of a pod's volumeClaimTemplate
            subject = f"{owner}'s claim {claim['name']} is refused"
            consequence = "its pod is not created"
        elif first.data.get("reason") == "FailedCreate":
            subject = f"{owner}'s pods are refused"
            consequence = _rollout_consequence(res) if rollout else "no pod is created"
        else:
            previous = run.previous.get(hr_ref)
            patched = previous is not None and any(r.ref == owner for r in previous.resources)
            subject, consequence = f"{owner} is refused", "Helm's patch fails" if patched else "Helm's create fails"
        by = "LimitRanger" if _LIMIT.search(text) else "ResourceQuota admission"
        msg = f"{subject} by {by}: {text.split(' is forbidden: ', 1)[-1]}{times}; {consequence}"
        shown = first.message if first.what == "event" else text
        out.append(run.refusal_candidate("HS124", hr_ref, owner, first, shown, msg, _fixes(run, res, text, rollout)))
    return out

