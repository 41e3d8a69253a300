"""Upgrades: changes the API server refuses.

HS105 immutable-field-change
    The upgrade patches a field the API server does not let change (a Job's pod template, a
    Deployment's selector, a claim's class …). The patch is rejected ("field is immutable"),
    Helm collects the error and the upgrade fails (helm/helm pkg/kube/client.go update); the
    field lists come from helmsim.helm.immutable (the API server's validation texts).
"""

from __future__ import annotations

from helmsim.cluster.controllers.storage import storage_class_object
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix, Severity, Step, step
from helmsim.diagnose.registry import rule
from helmsim.helm.plan import plan_upgrade


@rule(
    "HS105",
    "immutable-field-change",
    "An upgrade changes a field the API server does not let change",
)
def immutable_field_change(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for hr_ref, previous in run.previous.items():
        chart = run.charts.get(hr_ref)
        if chart is None:
            continue
        plan = plan_upgrade(
            previous.resources,
            chart.resources,
            server_side=True,
            kube_version=run.profile.kubernetes_version,
            # a claim's resize is allowed by its class (resize/admission.go allowResize)
            storage_classes={sc.name: storage_class_object(sc) for sc in run.profile.storage_classes},
        )
        planned = {s.resource.ref: s.errors for s in plan.steps if s.errors}
        # only the refusals the plan foresees: another admission's (a LimitRange bounding a
        # resized claim, a quota) is its own rule's finding
        errors = [
            e
            for e in run.events(what="apply-error")
            if any(e.message in p or p in e.message for p in planned.get(e.obj, ())) or "immutable" in e.message
        ]
        seen: set[str] = set()
        ready = run.ready(hr_ref)
        for ev in errors:
            if ev.obj in seen or run.resource(ev.obj) is None:
                continue
            seen.add(ev.obj)
            chain: list[Step] = [step(ev, ev.message)]
            if not ready:
                chain.extend(run.failure_tail(hr_ref))
            msg = f"the upgrade changes an immutable field of {ev.obj}: {ev.message}"
            fix = Fix(
                f"keep the field stable, or give {ev.obj} a new name when it changes (a hash of the field in the name, "
                "so Helm creates the new object and deletes the old one), or delete it in a pre-upgrade hook"
            )
            out.append(
                Candidate(
                    "HS105",
                    hr_ref,
                    ev.obj,
                    Severity.error if not ready else Severity.warning,
                    msg,
                    chain,
                    [fix],
                    run.variant,
                )
            )
    return out
