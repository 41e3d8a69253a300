"""Tenant RBAC: what the impersonated ServiceAccount may not do.

HS120 tenant-rbac-forbidden
    A HelmRelease reconciled as a ServiceAccount (``spec.serviceAccountName`` or helm-controller's
    ``--default-service-account``; fluxcd/helm-controller internal/kube/impersonate.go) lacks a
    permission Helm uses: the API server refuses the call (kubernetes
    plugin/pkg/auth/authorizer/rbac/rbac.go), or refuses a Role or binding the chart grants
    beyond what the account holds (pkg/registry/rbac/escalation_check.go, validation/rule.go
    ConfirmNoEscalation).
"""

from __future__ import annotations

from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix, Severity, Step, step
from helmsim.diagnose.registry import rule
from helmsim.flux.impersonation import impersonated_user, missing_permissions, static_policy
from helmsim.kube.rbac import Attributes, qualified_resource


def _needed(run: ProfileRun, hr_ref: str) -> list[Attributes]:
    """Every request of the release's objects the account is denied before any release (not
    only the first Helm stopped at)."""
    r = run.input(hr_ref)
    user = impersonated_user(r.hr.spec.service_account_name or "", r.hr.namespace, run.profile.flux.default_service_account)
    if user is None:
        return []
    chart = run.charts.get(hr_ref)
    objects = [
        {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"namespace": res.namespace or ""}}
        for res in ((*chart.crds, *chart.resources) if chart else ())
    ]
    return missing_permissions(static_policy(run.profile, r.tree_objects), user, objects, r.hr.storage_namespace)


def _what(data: dict[str, object]) -> str:
    """``get clusterroles.rbac.authorization.k8s.io at the cluster scope``."""
    resource = qualified_resource(str(data.get("group") or ""), str(data.get("resource") or ""))
    ns = str(data.get("namespace") or "")
    return f"{data.get('verb')} {resource} " + (f'in namespace "{ns}"' if ns else "at the cluster scope")


def _fix(user: str, denied: list[dict[str, object]], needed: list[Attributes] | None = None) -> Fix:
    account = user.removeprefix("system:serviceaccount:").replace(":", "/", 1)
    if any(d.get("escalation") for d in denied):
        return Fix(
            f"the chart grants RBAC that ServiceAccount {account} does not hold: grant the account those "
            "permissions itself (a Role or ClusterRole bound to it), or the escalate/bind verbs on roles; or "
            "reconcile this HelmRelease as an account that holds them"
        )
    lines: dict[tuple[str, str], list[str]] = {}
    for a in needed or ():
        where = f'in namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
        lines.setdefault((where, qualified_resource(a.group, a.resource)), []).append(a.verb)
    if not lines:
        for d in denied:
            ns = str(d.get("namespace") or "")
            where = f'in namespace "{ns}"' if ns else "at the cluster scope"
            key = (where, qualified_resource(str(d.get("group") or ""), str(d.get("resource") or "")))
            lines.setdefault(key, []).append(str(d.get("verb")))
    grants = "; ".join(f"{', '.join(dict.fromkeys(v))} {res} {where}" for (where, res), v in sorted(lines.items()))
    holder = (
        "a ClusterRole bound by a ClusterRoleBinding for what is at the cluster scope, a Role (or ClusterRole) bound "
        "by a RoleBinding in its namespace for the rest"
    )
    # helmsim.flux.impersonation.HELM_VERBS: what Helm does to each object of the release
    return Fix(f"grant ServiceAccount {account} what Helm needs and it lacks: {grants} ({holder})")


@rule(
    "HS120",
    "tenant-rbac-forbidden",
    "The ServiceAccount a HelmRelease is reconciled as lacks a permission Helm needs",
)
def tenant_rbac_forbidden(run: ProfileRun) -> list[Candidate]:
    by_release: dict[str, list] = {}
    for ev in run.events(what="forbidden"):
        hr_ref = str(ev.data.get("helmrelease") or "")
        if hr_ref and any(r.hr.ref == hr_ref for r in run.inputs):
            by_release.setdefault(hr_ref, []).append(ev)
    out: list[Candidate] = []
    for hr_ref, events in sorted(by_release.items()):
        seen: dict[tuple[object, ...], dict[str, object]] = {}
        chain: list[Step] = []
        for ev in events:
            key = (ev.data.get("verb"), ev.data.get("group"), ev.data.get("resource"), ev.data.get("namespace"), ev.obj)
            if key not in seen:
                seen[key] = dict(ev.data)
                chain.append(step(ev, ev.message))
        ready = run.ready(hr_ref)
        if not ready:
            chain.extend(run.failure_tail(hr_ref, after=events[-1].time))
        denied = list(seen.values())
        user = str(denied[0].get("user") or "")
        first = events[0]
        located = run.resource(first.obj)
        obj = first.obj if located is not None and located[0] == hr_ref else f"HelmRelease/{hr_ref}"
        verbs = "; ".join(sorted({_what(d) for d in denied}))
        msg = f"HelmRelease {hr_ref} is reconciled as {user}, which may not {verbs}"
        if any(d.get("escalation") for d in denied):
            msg += " (or grant the RBAC the chart creates)"
        severity = Severity.warning if ready else Severity.error
        out.append(Candidate("HS120", hr_ref, obj, severity, msg, chain, [_fix(user, denied, _needed(run, hr_ref))], run.variant))
    return out
