"""helmsim.kube.rbac: the API server's RBAC authorizer, its Forbidden texts and the escalation
check, on the shapes upstream documents (kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go,
pkg/registry/rbac/validation/rule.go and policy_comparator.go, escalation_check.go)."""

from __future__ import annotations

from helmsim.kube import rbac
from helmsim.kube.rbac import Attributes, Policy, Rule

SA = rbac.service_account_user("team-b", "team-b")


def _binding(kind: str, name: str, role_kind: str, role: str, ns: str = "", subjects=None) -> dict:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": subjects if subjects is not None else [{"kind": "ServiceAccount", "name": "team-b", "namespace": "team-b"}],
    }


def _policy(*objs: dict) -> Policy:
    return Policy([*rbac.bootstrap_objects(), *objs])


def test_service_account_identity_has_the_impersonation_groups() -> None:
    assert SA.name == "system:serviceaccount:team-b:team-b"
    assert SA.groups == ("system:serviceaccounts", "system:serviceaccounts:team-b", "system:authenticated")


def test_aggregated_admin_role_holds_edit_and_view_rules() -> None:
    p = _policy()
    admin = p.cluster_roles["admin"]
    # admin aggregates system:aggregate-to-admin and edit (which aggregates view): it may create
    # Deployments and read Pods, but it lists its verbs (no "*")
    assert any(rbac.rule_allows(r, Attributes("create", "apps", "deployments", "x")) for r in admin)
    assert any(rbac.rule_allows(r, Attributes("get", "", "pods", "x")) for r in admin)
    assert not any("*" in r.verbs for r in admin)


def test_rolebinding_grants_only_in_its_namespace() -> None:
    p = _policy(_binding("RoleBinding", "rb", "ClusterRole", "cluster-admin", "team-b"))
    assert rbac.check(p, SA, Attributes("delete", "apps", "deployments", "team-b", "web")) is None
    denied = rbac.check(p, SA, Attributes("get", "apps", "deployments", "other", "web"))
    assert denied == (
        'deployments.apps "web" is forbidden: User "system:serviceaccount:team-b:team-b" cannot get resource '
        '"deployments" in API group "apps" in the namespace "other"'
    )
    cluster = rbac.check(p, SA, Attributes("create", "apiextensions.k8s.io", "customresourcedefinitions"))
    assert cluster == (
        "customresourcedefinitions.apiextensions.k8s.io is forbidden: User \"system:serviceaccount:team-b:team-b\" "
        'cannot create resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope'
    )


def test_core_group_and_subresource_in_the_message() -> None:
    denied = rbac.check(_policy(), SA, Attributes("list", "", "secrets", "team-b"))
    assert denied == (
        'secrets is forbidden: User "system:serviceaccount:team-b:team-b" cannot list resource "secrets" in API group "" '
        'in the namespace "team-b"'
    )
    sub = rbac.check(_policy(), SA, Attributes("create", "", "pods", "team-b", "p", "exec"))
    assert sub is not None and 'cannot create resource "pods/exec"' in sub


def test_binding_to_a_missing_role_is_the_rbac_reason() -> None:
    # rbac.go Authorize: resolution errors become the reason "RBAC: <aggregate>"
    p = _policy(_binding("RoleBinding", "rb", "Role", "gone", "team-b"))
    denied = rbac.check(p, SA, Attributes("get", "", "configmaps", "team-b", "c"))
    assert denied is not None and denied.endswith(': RBAC: role.rbac.authorization.k8s.io "gone" not found')


def test_subjects_match_by_kind() -> None:
    group = _binding("RoleBinding", "g", "ClusterRole", "view", "team-b", [{"kind": "Group", "name": "system:serviceaccounts:team-b"}])
    # a ServiceAccount subject without a namespace is the binding's namespace (rule.go appliesToUser)
    bare = _binding("RoleBinding", "s", "ClusterRole", "view", "team-b", [{"kind": "ServiceAccount", "name": "team-b"}])
    other = _binding("RoleBinding", "u", "ClusterRole", "view", "team-b", [{"kind": "User", "name": "someone"}])
    read = Attributes("get", "", "configmaps", "team-b", "c")
    assert rbac.check(_policy(group), SA, read) is None
    assert rbac.check(_policy(bare), SA, read) is None
    assert rbac.check(_policy(other), SA, read) is not None


def test_resource_names_and_wildcards() -> None:
    rule = Rule(verbs=("get",), api_groups=("",), resources=("configmaps",), resource_names=("one",))
    assert rbac.rule_allows(rule, Attributes("get", "", "configmaps", "ns", "one"))
    assert not rbac.rule_allows(rule, Attributes("get", "", "configmaps", "ns", "two"))
    # a create has no name: resourceNames never match it
    assert not rbac.rule_allows(Rule(("create",), ("",), ("configmaps",), ("one",)), Attributes("create", "", "configmaps", "ns"))
    star_sub = Rule(verbs=("get",), api_groups=("",), resources=("*/status",))
    assert rbac.rule_allows(star_sub, Attributes("get", "", "pods", "ns", "p", "status"))
    assert not rbac.rule_allows(star_sub, Attributes("get", "", "pods", "ns", "p"))


def test_patch_that_creates_needs_create() -> None:
    patch_only = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "p", "namespace": "team-b"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}],
    }
    p = _policy(patch_only, _binding("RoleBinding", "rb", "Role", "p", "team-b"))
    attrs = Attributes("patch", "", "configmaps", "team-b", "c")
    assert rbac.check(p, SA, attrs) is None
    # handlers/patch.go withAuthorization: NewForbidden with the (empty) authorizer reason
    assert rbac.create_on_patch(p, SA, attrs) == 'configmaps "c" is forbidden: '


def _role(name: str, rules: list[dict], kind: str = "Role", ns: str = "team-b") -> dict:
    meta = {"name": name, **({"namespace": ns} if kind == "Role" else {})}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules}


def test_role_granting_more_than_held_is_an_escalation() -> None:
    p = _policy(_binding("RoleBinding", "rb", "ClusterRole", "admin", "team-b"))
    wildcard = _role("w", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}])
    err = rbac.escalation_error(p, SA, wildcard)
    assert err == (
        'roles.rbac.authorization.k8s.io "w" is forbidden: user "system:serviceaccount:team-b:team-b" '
        '(groups=["system:serviceaccounts" "system:serviceaccounts:team-b" "system:authenticated"]) is attempting to '
        'grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["*"]}'
    )
    # what admin holds can be granted
    held = _role("ok", [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "create", "delete"]}])
    assert rbac.escalation_error(p, SA, held) is None


def test_missing_rules_are_compacted_and_sorted() -> None:
    p = _policy(_binding("RoleBinding", "rb", "ClusterRole", "view", "team-b"))
    role = _role("r", [
        {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": ["get", "delete", "patch"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["s"], "verbs": ["get"]},
    ])
    err = rbac.escalation_error(p, SA, role)
    assert err is not None
    lines = err.split("not currently held:\n", 1)[1].split("\n")
    # BreakdownRule, then CompactRules by group+resource+name (verbs in order), a sorted set
    assert lines == [
        '{APIGroups:[""], Resources:["secrets"], ResourceNames:["s"], Verbs:["get"]}',
        '{APIGroups:["apps"], Resources:["deployments"], Verbs:["delete" "patch"]}',
        '{APIGroups:["apps"], Resources:["statefulsets"], Verbs:["delete" "patch"]}',
    ]


def test_escalate_and_bind_verbs_skip_the_check() -> None:
    escalate = _role("esc", [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate", "bind"]}])
    p = _policy(escalate, _binding("RoleBinding", "rb", "Role", "esc", "team-b"))
    wildcard = _role("w", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
    assert rbac.escalation_error(p, SA, wildcard) is None
    # bind on roles covers a binding to a Role, not to a ClusterRole (escalation_check.go BindingAuthorized)
    assert rbac.escalation_error(p, SA, _binding("RoleBinding", "to-w", "Role", "w", "team-b")) is None
    to_admin = _binding("RoleBinding", "to-admin", "ClusterRole", "cluster-admin", "team-b")
    assert rbac.escalation_error(p, SA, to_admin) is not None


def test_binding_to_a_role_not_held_or_missing() -> None:
    p = _policy(_binding("RoleBinding", "rb", "ClusterRole", "view", "team-b"))
    to_edit = _binding("RoleBinding", "to-edit", "ClusterRole", "edit", "team-b")
    err = rbac.escalation_error(p, SA, to_edit)
    assert err is not None and err.startswith('rolebindings.rbac.authorization.k8s.io "to-edit" is forbidden: user ')
    # rolebinding/policybased/storage.go: the registry's NotFound, as is
    missing = _binding("RoleBinding", "to-missing", "Role", "nope", "team-b")
    assert rbac.escalation_error(p, SA, missing) == 'roles.rbac.authorization.k8s.io "nope" not found'


def test_aggregation_rule_needs_cluster_admin() -> None:
    p = _policy(_binding("ClusterRoleBinding", "crb", "ClusterRole", "admin"))
    agg = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "agg"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}, "rules": [],
    }
    assert rbac.escalation_error(p, SA, agg) == (
        'clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule'
    )
    root = _policy(_binding("ClusterRoleBinding", "crb", "ClusterRole", "cluster-admin"))
    assert rbac.escalation_error(root, SA, agg) is None


def test_system_masters_is_never_refused() -> None:
    root = rbac.User("admin", ("system:masters", "system:authenticated"))
    assert rbac.check(Policy([]), root, Attributes("delete", "", "nodes", "", "n")) is None
