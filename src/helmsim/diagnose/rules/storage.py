"""Storage: claims the release waits for but nothing in it can bind.

HS102 unconsumed-wffc-claim
    A PersistentVolumeClaim of the release whose StorageClass binds on ``WaitForFirstConsumer``
    and that no pod of the release mounts. It stays ``Pending`` (kubernetes
    pkg/controller/volume/persistentvolume/pv_controller.go: "waiting for first consumer to be
    created before binding"); kstatus reads an unbound claim as InProgress
    (kubernetes-sigs/cli-utils pkg/kstatus/status/core.go pvcConditions), so Helm's wait can
    only end in "timeout waiting for: [PersistentVolumeClaim/… status: 'InProgress']".
"""

from __future__ import annotations

from helmsim.diagnose import fixes
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.fixes import pod_spec
from helmsim.diagnose.model import Candidate, Fix, Severity, Step, step
from helmsim.diagnose.registry import rule
from helmsim.manifests import Resource


def _claim_class(run: ProfileRun, res: Resource) -> str | None:
    spec = res.body.get("spec") or {}
    name = spec.get("storageClassName")
    if name is None:
        default = run.profile.default_storage_class()
        return default.name if default else None
    return str(name) or None


def consumers(run: ProfileRun, namespace: str | None, claim: str) -> list[str]:
    """Objects of any simulated release whose pods mount ``claim``."""
    out: list[str] = []
    for chart in run.charts.values():
        for res in chart.resources:
            if res.namespace != namespace:
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
            cls_name = _claim_class(run, res)
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
            fix = Fix(
                f"apply {res.ref} from a post-install,post-upgrade hook Job (kubectl apply --server-side) instead of "
                "rendering it as a release resource: hooks are outside Helm's wait and the claim binds with its first consumer",
                fixes.key("claim-via-hook", res.ref, chart.name, chart.namespace),
            )
            out.append(
                Candidate("HS102", hr_ref, res.ref, severity, msg, chain, [fix], run.variant)
            )
    return out
