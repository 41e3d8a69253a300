"""Tenant impersonation (tests/realcharts/README.md: tenant): HelmReleases reconciled as a
ServiceAccount, every Helm call authorized as the API server's RBAC does (fluxcd/helm-controller
internal/kube/impersonate.go; kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go,
pkg/registry/rbac/escalation_check.go)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from helmsim.cluster.profile import load_profile
from helmsim.release_inputs import build_inputs
from helmsim.simulate import ReleaseOutcome, SimulationResult, simulate

HERE = Path(__file__).parent / "tenant"


def _run(profile_update: dict | None = None) -> SimulationResult:
    releases = build_inputs(
        str(HERE / "flux"), values=[], sets=[], helmrelease=[], charts=[f"operator={HERE / 'chart'}"],
        release_name=None, namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    profile = load_profile("kind")
    if profile_update:
        profile = profile.model_copy(update=profile_update)
    return simulate(profile, releases, horizon=1800.0)


@cache
def _tree() -> SimulationResult:
    return _run()


def _release(name: str, result: SimulationResult | None = None) -> ReleaseOutcome:
    return next(r for r in (result or _tree()).releases if r.name == name)


def test_namespace_scoped_chart_installs_as_tenant() -> None:
    rel = _release("scoped")
    assert rel.outcome == "Ready"
    assert rel.message == "Helm install succeeded for release team-a/scoped.v1 with chart operator@0.1.0"


def test_cluster_scoped_object_is_forbidden_before_anything_is_stored() -> None:
    rel = _release("cluster-wide")
    # helm/helm pkg/action/validate.go requireAdoption GETs every object first; the tenant's
    # RoleBinding grants nothing at the cluster scope
    assert rel.message == (
        "Helm install failed for release team-a/cluster-wide with chart operator@0.1.0: unable to continue with "
        'install: could not get information about the resource ClusterRole "cluster-wide-reader" in namespace "": '
        'clusterroles.rbac.authorization.k8s.io "cluster-wide-reader" is forbidden: User '
        '"system:serviceaccount:team-a:team-a" cannot get resource "clusterroles" in API group '
        '"rbac.authorization.k8s.io" at the cluster scope'
    )
    # no release stored, no failure counted: retried with backoff, never Stalled
    assert rel.outcome == "Failed" and rel.helm_status == [] and rel.attempts > 1


def test_role_beyond_the_tenants_rights_is_an_escalation() -> None:
    rel = _release("wildcard")
    assert rel.message.startswith(
        "Helm install failed for release team-b/wildcard with chart operator@0.1.0: server-side apply failed for "
        'object team-b/wildcard-pods rbac.authorization.k8s.io/v1, Kind=Role: roles.rbac.authorization.k8s.io '
        '"wildcard-pods" is forbidden: user "system:serviceaccount:team-b:team-b" (groups=["system:serviceaccounts" '
        '"system:serviceaccounts:team-b" "system:authenticated"]) is attempting to grant RBAC permissions not '
        'currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["*"]}\n'
    )
    # the binding to the Role that was never created: the registry's NotFound
    assert rel.message.endswith(
        "server-side apply failed for object team-b/wildcard-pods rbac.authorization.k8s.io/v1, Kind=RoleBinding: "
        'roles.rbac.authorization.k8s.io "wildcard-pods" not found'
    )
    # the release was stored and failed: retries 0 → Stalled
    assert rel.outcome == "Stalled" and [h["status"] for h in rel.helm_status] == ["failed"]


def test_account_without_storage_access_cannot_determine_state() -> None:
    rel = _release("no-storage")
    assert (rel.reason, rel.message) == (
        "StateError",
        "Could not determine release state: failed to retrieve last release from storage: query: failed to query "
        'with labels: secrets is forbidden: User "system:serviceaccount:team-c:nobody" cannot list resource '
        '"secrets" in API group "" in the namespace "team-c"',
    )
    assert rel.outcome == "Failed" and rel.attempts == 0


def test_profile_rbac_grants_the_account() -> None:
    # the profile's rbac: what the platform granted outside the tree
    grant = [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "nobody"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
         "subjects": [{"kind": "ServiceAccount", "name": "nobody", "namespace": "team-c"}]},
    ]
    result = _run({"rbac": grant})
    assert _release("no-storage", result).outcome == "Ready"


def test_default_service_account_is_the_fallback() -> None:
    from helmsim.flux.impersonation import impersonated_user

    # internal/kube/impersonate.go SetImpersonationConfig: the spec's account wins, the
    # --default-service-account is the fallback, neither → the controller's own identity
    assert impersonated_user("team-a", "team-a", "flux-tenant").name == "system:serviceaccount:team-a:team-a"
    assert impersonated_user("", "apps", "flux-tenant").name == "system:serviceaccount:apps:flux-tenant"
    assert impersonated_user("", "apps", None) is None


def test_missing_permissions_list_every_kind_helm_touches() -> None:
    from helmsim.flux.impersonation import impersonated_user, missing_permissions, static_policy

    releases = build_inputs(
        str(HERE / "flux"), values=[], sets=[], helmrelease=[], charts=[f"operator={HERE / 'chart'}"],
        release_name=None, namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    r = next(x for x in releases if x.hr.name == "cluster-wide")
    user = impersonated_user("team-a", "team-a")
    assert user is not None
    objects = [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": k, "metadata": {}} for k in ("ClusterRole", "ClusterRoleBinding")
    ] + [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "team-a"}}]
    missing = missing_permissions(static_policy(load_profile("kind"), r.tree_objects), user, objects, "team-a")
    # everything in team-a is granted (cluster-admin by RoleBinding); nothing cluster-wide
    assert {(a.verb, a.resource) for a in missing} == {
        (v, res) for v in ("get", "create", "patch", "delete") for res in ("clusterroles", "clusterrolebindings")
    }
