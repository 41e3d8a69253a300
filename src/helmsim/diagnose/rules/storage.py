"""Storage: claims the release waits for but nothing in it can bind.

HS102 unconsumed-wffc-claim
    A PersistentVolumeClaim of the release whose StorageClass binds on ``WaitForFirstConsumer``
    and that no pod of the release mounts. It stays ``Pending`` (kubernetes
    pkg/controller/volume/persistentvolume/pv_controller.go: "waiting for first consumer to be
    created before binding"); kstatus reads an unbound claim as InProgress
    (kubernetes-sigs/cli-utils pkg/kstatus/status/core.go pvcConditions), so Helm's wait can
    only end in "timeout waiting for: [PersistentVolumeClaim/… status: 'InProgress']".
HS117 claim-never-provisioned
    A PersistentVolumeClaim of the release whose volume is never provisioned: its StorageClass
    does not exist, no volume plugin serves it, or the driver refuses the claim (the EBS CSI
    driver refuses ReadWriteMany on a filesystem: aws-ebs-csi-driver pkg/driver/controller.go
    isValidCapability). The claim stays Pending, its consumers are never scheduled, and Helm's
    wait times out.
HS121 volume-multi-attach
    A pod waits for a volume that is attached to another node: its claim's volume allows one
    node at a time (no ReadWriteMany or ReadOnlyMany mode) and is attachable, and another pod
    that mounts it runs on a different node (kubernetes pkg/controller/volume/attachdetach
    reconciler.go: "Multi-Attach error … Volume is already used by pod(s) …"). The pod stays
    ContainerCreating until the other pods are gone; in a rolling update they go only once it is
    Ready, so the rollout never ends.
"""

from __future__ import annotations

from typing import Any

from helmsim.cluster.controllers.provisioner import MODES_NOT_SUPPORTED, MSG_INFEASIBLE
from helmsim.cluster.trace import TraceEvent
from helmsim.diagnose import fixes
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.fixes import pod_spec
from helmsim.diagnose.model import Candidate, Fix, Severity, Step, step
from helmsim.diagnose.registry import rule
from helmsim.kube.workloads import POD_KINDS
from helmsim.manifests import Resource


def consumers(run: ProfileRun, namespace: str | None, claim: str) -> list[str]:
    """Objects of any simulated release whose pods mount ``claim`` while Helm waits: not a
    CronJob (its first pod comes at its schedule) and not a hook (post-install hooks run after
    the wait, pre-install ones before the claim exists: helm pkg/action/install.go)."""
    out: list[str] = []
    for chart in run.charts.values():
        for res in chart.resources:
            if res.namespace != namespace or res.kind == "CronJob" or res.is_hook:
                continue
            spec = pod_spec(res.body)
            vols = (spec or {}).get("volumes") or []
            if any(
                ((v or {}).get("persistentVolumeClaim") or {}).get("claimName") == claim
                for v in vols
            ):
                out.append(res.ref)
            tpls = (res.body.get("spec") or {}).get("volumeClaimTemplates") or []
            if res.kind == "StatefulSet" and any(
                ((t or {}).get("metadata") or {}).get("name") == claim for t in tpls
            ):
                out.append(res.ref)
    return out


@rule(
    "HS102",
    "unconsumed-wffc-claim",
    "A claim under WaitForFirstConsumer with no consumer in the release, inside Helm's wait",
)
def unconsumed_wffc_claim(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for hr_ref, chart in run.charts.items():
        for res in chart.manifest:
            if res.kind != "PersistentVolumeClaim":
                continue
            cls_name = _class_of(run, dict(res.body.get("spec") or {}))
            cls = run.profile.storage_class(cls_name) if cls_name else None
            if cls is None or cls.volume_binding_mode != "WaitForFirstConsumer":
                continue
            if consumers(run, res.namespace, res.name):
                continue
            polls = [
                e
                for e in run.events(what="poll", obj=res.ref)
                if e.data.get("status") == "InProgress"
            ]
            if not polls:
                continue  # the wait does not cover it (disableWait) or never ran
            waiting = run.first(what="event", obj=res.ref)
            ready = run.ready(hr_ref)
            o = run.outcome(hr_ref)
            chain: list[Step] = []
            created = run.created_by_helm(res.ref)
            if created is not None:
                chain.append(step(created, "created by Helm as a release resource"))
            if waiting is not None and waiting.data.get("reason") == "WaitForFirstConsumer":
                chain.append(step(waiting, f"{waiting.data.get('reason')}: {waiting.message}"))
            chain.append(
                step(polls[0], f"Helm's wait reads it {polls[0].message.split('status: ', 1)[-1]}")
            )
            if not ready:
                chain.extend(run.failure_tail(hr_ref))
            severity = Severity.error if not ready else Severity.warning
            msg = (
                f"{res.ref} binds only when a pod mounts it (StorageClass {cls.name}: WaitForFirstConsumer) and no pod of "
                f"the release mounts it, yet Helm's wait covers it"
                + (f": the release ends {o.outcome} ({o.attempts} attempt(s))" if not ready else "")
            )
            hook_fix = Fix(
                f"apply {res.ref} from a post-install,post-upgrade hook Job (kubectl apply --server-side) instead of "
                "rendering it as a release resource: hooks are outside Helm's wait and the claim binds with its first consumer",
                fixes.key("claim-via-hook", res.ref, chart.name, chart.namespace),
            )
            found = [hook_fix]
            if not any(r.kind in POD_KINDS for r in chart.resources):
                # bitnami kibana without elasticsearch.hosts renders its PVC and no Deployment
                msg += "; with these values the release renders no workload at all, so nothing of it could ever mount it"
                found.insert(0, Fix(
                    f"set the values under which the chart renders the workload that mounts {res.ref} (with these "
                    "values it renders no Pod, Deployment, StatefulSet, DaemonSet, Job or CronJob, hooks included)"
                ))
            out.append(
                Candidate("HS102", hr_ref, res.ref, severity, msg, chain, found, run.variant)
            )
    return out




def _class_of(run: ProfileRun, spec: dict[str, Any]) -> str | None:
    """The StorageClass a claim's spec names, else the profile's default class."""
    name = spec.get("storageClassName")
    if name is None:
        default = run.profile.default_storage_class()
        return default.name if default else None
    return str(name) or None


def _claim_fix(what: str, spec: dict[str, Any], reason: str, cls_name: str | None, run: ProfileRun) -> str:
    modes = list(spec.get("accessModes") or ())
    if "not found" in reason and cls_name:
        have = ", ".join(sc.name for sc in run.profile.storage_classes) or "none"
        return f"create StorageClass {cls_name}, or set {what}'s storageClassName to one the cluster has (here: {have})"
    if MODES_NOT_SUPPORTED in reason:
        return (
            f"ask for an access mode the driver serves (ReadWriteOnce; {', '.join(modes)} is refused), or use a class "
            "whose driver serves it (ReadWriteMany: a file system such as efs.csi.aws.com, an NFS provisioner)"
        )
    return f"make {what} provisionable by its class's driver ({reason})"


_MULTI_ATTACH = "Multi-Attach error for volume "


@rule(
    "HS121",
    "volume-multi-attach",
    "A pod waits for a one-node volume that another pod holds on another node",
)
def volume_multi_attach(run: ProfileRun) -> list[Candidate]:
    first: dict[str, TraceEvent] = {}
    for ev in run.events(what="event"):
        if ev.data.get("reason") == "FailedAttachVolume" and ev.message.startswith(_MULTI_ATTACH):
            first.setdefault(ev.obj, ev)
    by_owner: dict[str, list[TraceEvent]] = {}
    for pod, ev in first.items():
        attached = [e for e in run.events(what="event", obj=pod) if e.data.get("reason") == "SuccessfulAttachVolume"]
        if any(e.time >= ev.time for e in attached):
            continue  # the other pods went and the volume followed
        by_owner.setdefault(run.owner_of_pod(pod) or pod, []).append(ev)
    out: list[Candidate] = []
    for owner, evs in sorted(by_owner.items()):
        located = run.resource(owner)
        if located is None:
            continue
        hr_ref, res = located
        ready = run.ready(hr_ref)
        ev = min(evs, key=lambda e: e.id)
        pod = ev.obj.rsplit("/", 1)[1]
        rollout = res.kind == "Deployment" and ((res.body.get("spec") or {}).get("strategy") or {}).get("type") != "Recreate"
        msg = (
            f"{owner}: pod {pod} waits for a volume attached to another node ({ev.message}): the claim's volume is "
            "attached to one node at a time, and the pods holding it stay"
            + (" until the new pods are Ready (a rolling update keeps the old ones meanwhile)" if rollout else "")
            + (f"; the release ends {run.outcome(hr_ref).outcome}" if not ready else "")
        )
        chain = [step(ev, f"FailedAttachVolume: {ev.message}")]
        if not ready:
            chain.extend(s for s in run.failure_tail(hr_ref) if s.time >= ev.time)
        fix_list: list[Fix] = []
        if rollout:
            fix_list.append(
                Fix(
                    f"set {owner}'s strategy to Recreate: its old pods go, and the volume is detached, before the new ones start",
                    fixes.key("recreate", owner),
                )
            )
        fix_list.append(
            Fix(
                "or use ReadWriteMany storage, or keep every pod that mounts the claim on one node (required pod affinity "
                "on kubernetes.io/hostname), or give each replica its own claim (a StatefulSet's volumeClaimTemplates)"
            )
        )
        out.append(
            Candidate(
                "HS121",
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


@rule(
    "HS117",
    "claim-never-provisioned",
    "A claim of the release is never provisioned (no such class, or the driver refuses it)",
)
def claim_never_provisioned(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for hr_ref, chart in run.charts.items():
        for res, claim, spec, what in _release_claims(run, chart.manifest):
            reasons = [(e, e.data.get("reason")) for e in run.events(what="event", obj=claim)]
            failed = [e for e, reason in reasons if reason == "ProvisioningFailed"]
            if not failed or any(reason == "ProvisioningSucceeded" for _, reason in reasons):
                continue  # never refused, or a later attempt made it
            ready = run.ready(hr_ref)
            o = run.outcome(hr_ref)
            reason = failed[0].message.removeprefix(MSG_INFEASIBLE)
            cls_name = _class_of(run, spec)
            if res.kind == "PersistentVolumeClaim":
                users = consumers(run, res.namespace, res.name)
                created = run.created_by_helm(res.ref)
                origin = "created by Helm as a release resource"
            else:
                users = [res.ref]
                created = run.first(what="created", obj=claim)
                origin = f"created by the StatefulSet controller from {what}"
            chain: list[Step] = []
            if created is not None:
                chain.append(step(created, origin))
            chain.append(step(failed[0], f"ProvisioningFailed: {failed[0].message}"))
            if not ready:
                chain.extend(run.failure_tail(hr_ref))
            msg = (
                f"{claim if res.kind == 'PersistentVolumeClaim' else f'{claim} (from {what})'} is never provisioned: {reason}"
                + (f" (StorageClass {cls_name})" if cls_name and "not found" not in reason else "")
                + "; it stays Pending"
                + (f", so {', '.join(users)} never start{'s' if len(users) == 1 else ''}" if users else "")
                + (f"; the release ends {o.outcome} ({o.attempts} attempt(s))" if not ready else "")
            )
            fix = Fix(_claim_fix(what, spec, reason, cls_name, run))
            out.append(
                Candidate(
                    "HS117", hr_ref, res.ref, Severity.error if not ready else Severity.warning, msg, chain, [fix], run.variant
                )
            )
    return out


def _release_claims(run: ProfileRun, manifest: list[Resource]) -> list[tuple[Resource, str, dict[str, Any], str]]:
    """(the release object, the claim's ref, the claim's spec, how to name it in a fix) for each
    claim of the release: its PersistentVolumeClaims, and the first claim the StatefulSet
    controller made from each volumeClaimTemplate (kubernetes pkg/controller/statefulset
    stateful_set_utils.go getPersistentVolumeClaimName: ``<template>-<set>-<ordinal>``)."""
    out: list[tuple[Resource, str, dict[str, Any], str]] = []
    for res in manifest:
        if res.kind == "PersistentVolumeClaim":
            out.append((res, res.ref, dict(res.body.get("spec") or {}), res.ref))
        elif res.kind == "StatefulSet":
            for tpl in (res.body.get("spec") or {}).get("volumeClaimTemplates") or ():
                name = str(((tpl or {}).get("metadata") or {}).get("name") or "")
                made = sorted(
                    (e.obj for e in run.events(what="created") if e.obj.startswith(f"PersistentVolumeClaim/{res.namespace}/{name}-{res.name}-")),
                    key=lambda ref: (len(ref), ref),
                )
                if name and made:
                    out.append((res, made[0], dict((tpl or {}).get("spec") or {}), f"{res.ref}'s volumeClaimTemplates {name}"))
    return out
