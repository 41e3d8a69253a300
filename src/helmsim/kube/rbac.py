"""Kubernetes RBAC as the API server decides it: who may do what, and who may grant what.

kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go (Authorize, RuleAllows),
pkg/registry/rbac/validation/rule.go (DefaultRuleResolver: VisitRulesFor, appliesTo,
GetRoleReferenceRules, ConfirmNoEscalation), validation/policy_comparator.go (Covers),
validation/policy_compact.go (CompactRules), pkg/registry/rbac/escalation_check.go and the
policybased storages of roles, clusterroles and their bindings, pkg/controller/clusterroleaggregation.
Pure: a :class:`Policy` is built from RBAC objects and answers questions; nothing is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

import yaml
from msgspec import Struct

from helmsim.cluster.selectors import matches_selector
from helmsim.kube.errors import aggregate

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
PRIVILEGED_GROUP = "system:masters"  # k8s.io/apiserver pkg/authentication/user/user.go SystemPrivilegedGroup


def go_quote(s: str) -> str:
    """Go's ``%q`` of a string (printable ASCII and UTF-8 as is)."""
    return json.dumps(s, ensure_ascii=False)


def go_quote_list(items: Sequence[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(i) for i in items) + "]"


class User(Struct, frozen=True):
    """An authenticated identity: its user name and groups."""

    name: str
    groups: tuple[str, ...]


def service_account_user(namespace: str, name: str) -> User:
    """The user a ServiceAccount is, impersonated or by token.

    k8s.io/apiserver pkg/authentication/serviceaccount/util.go MakeUsername, MakeGroupNames;
    pkg/endpoints/filters/impersonation.go adds system:authenticated to an impersonated user.
    """
    return User(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )


class Attributes(Struct, frozen=True):
    """One resource request (k8s.io/apiserver pkg/authorization/authorizer AttributesRecord)."""

    verb: str
    group: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""


class Rule(Struct, frozen=True):
    """An rbac/v1 PolicyRule."""

    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Rule:
        def strs(key: str) -> tuple[str, ...]:
            return tuple(str(x) for x in _list(d.get(key)))

        return cls(strs("verbs"), strs("apiGroups"), strs("resources"), strs("resourceNames"), strs("nonResourceURLs"))

    def compact_string(self) -> str:
        """k8s.io/component-helpers auth/rbac CompactString: ``{APIGroups:["apps"], …}``."""
        parts = []
        for label, value in (
            ("APIGroups", self.api_groups),
            ("Resources", self.resources),
            ("NonResourceURLs", self.non_resource_urls),
            ("ResourceNames", self.resource_names),
            ("Verbs", self.verbs),
        ):
            if value:
                parts.append(f"{label}:{go_quote_list(value)}")
        return "{" + ", ".join(parts) + "}"


FULL_AUTHORITY = (
    Rule(verbs=("*",), api_groups=("*",), resources=("*",)),
    Rule(verbs=("*",), non_resource_urls=("*",)),
)


# --- matching (plugin/pkg/auth/authorizer/rbac/rbac.go RuleAllows) ---------------------------------
def rule_allows(rule: Rule, attrs: Attributes) -> bool:
    """VerbMatches, APIGroupMatches, ResourceMatches and ResourceNameMatches all hold."""
    if not ("*" in rule.verbs or attrs.verb in rule.verbs):
        return False
    if not ("*" in rule.api_groups or attrs.group in rule.api_groups):
        return False
    combined = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    resource_ok = False
    for r in rule.resources:
        if r == "*" or r == combined or (attrs.subresource and r == f"*/{attrs.subresource}"):
            resource_ok = True
            break
    if not resource_ok:
        return False
    return not rule.resource_names or attrs.name in rule.resource_names


# --- the policy ------------------------------------------------------------------------------------
def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _list(value: Any) -> list[Any]:
    """``value`` when it is a list; nothing otherwise (a malformed field grants nothing)."""
    return value if isinstance(value, list) else []


def _rules(obj: Mapping[str, Any]) -> tuple[Rule, ...]:
    return tuple(Rule.from_dict(r) for r in _list(obj.get("rules")) if isinstance(r, Mapping))


class Policy:
    """The RBAC objects of a cluster, with aggregated ClusterRoles filled in."""

    def __init__(self, objects: Iterable[Mapping[str, Any]]) -> None:
        self.roles: dict[tuple[str, str], tuple[Rule, ...]] = {}
        self._cluster_roles: dict[str, Mapping[str, Any]] = {}
        self.role_bindings: list[Mapping[str, Any]] = []
        self.cluster_role_bindings: list[Mapping[str, Any]] = []
        for obj in objects:
            kind, meta = obj.get("kind"), _meta(obj)
            name, ns = str(meta.get("name") or ""), str(meta.get("namespace") or "")
            if kind == "Role":
                self.roles[(ns, name)] = _rules(obj)
            elif kind == "ClusterRole":
                self._cluster_roles[name] = obj
            elif kind == "RoleBinding":
                self.role_bindings.append(obj)
            elif kind == "ClusterRoleBinding":
                self.cluster_role_bindings.append(obj)
        self.cluster_roles: dict[str, tuple[Rule, ...]] = {}
        for name in sorted(self._cluster_roles):
            self.cluster_roles[name] = self._aggregated(name, frozenset())

    def _aggregated(self, name: str, seen: frozenset[str]) -> tuple[Rule, ...]:
        """pkg/controller/clusterroleaggregation: an aggregationRule's role holds the rules of
        every ClusterRole its selectors match (by name order, each rule once), itself excluded."""
        obj = self._cluster_roles[name]
        agg = obj.get("aggregationRule")
        if not isinstance(agg, Mapping):
            return _rules(obj)
        out: list[Rule] = []
        for other in sorted(self._cluster_roles):
            if other == name or other in seen:
                continue
            labels = _meta(self._cluster_roles[other]).get("labels")
            labels = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}
            if any(
                isinstance(sel, Mapping) and _selects(sel, labels)
                for sel in _list(agg.get("clusterRoleSelectors"))
            ):
                for rule in self._aggregated(other, seen | {name}):
                    if rule not in out:
                        out.append(rule)
        return tuple(out)

    # --- rule resolution (validation/rule.go) --------------------------------------------------
    def role_reference_rules(
        self, ref: Mapping[str, Any], namespace: str, *, registry: bool = False
    ) -> tuple[tuple[Rule, ...], str | None]:
        """GetRoleReferenceRules: the rules a roleRef names, or the NotFound text: the
        authorizer's listers name the resource ``role`` (client-go listers NewNotFound), the
        registry the storages use names it ``roles`` (pkg/registry/rbac/role AuthorizerAdapter)."""
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        found = self.roles.get((namespace, name)) if kind == "Role" else self.cluster_roles.get(name)
        if kind in ("Role", "ClusterRole"):
            if found is None:
                resource = str(kind).lower() + ("s" if registry else "")
                return (), f"{resource}.{RBAC_GROUP} {go_quote(name)} not found"
            return found, None
        return (), f"unsupported role reference kind: {go_quote(str(kind))}"

    def rules_for(self, user: User, namespace: str) -> tuple[list[Rule], list[str]]:
        """VisitRulesFor: ClusterRoleBindings first, then the RoleBindings of ``namespace``;
        returns the rules and the resolution errors."""
        rules: list[Rule] = []
        errors: list[str] = []
        bindings = [(b, "") for b in self.cluster_role_bindings]
        if namespace:
            bindings += [(b, namespace) for b in self.role_bindings if _meta(b).get("namespace") == namespace]
        for binding, ns in bindings:
            if not _applies_to(user, _list(binding.get("subjects")), ns):
                continue
            ref = binding.get("roleRef")
            found, err = self.role_reference_rules(ref if isinstance(ref, Mapping) else {}, ns)
            if err:
                errors.append(err)
            rules.extend(found)
        return rules, errors

    def authorize(self, user: User, attrs: Attributes) -> tuple[bool, str]:
        """rbac.go Authorize: allowed when a rule allows it; else the reason (``RBAC: …`` when
        a binding's role could not be resolved, empty otherwise)."""
        rules, errors = self.rules_for(user, attrs.namespace)
        if any(rule_allows(r, attrs) for r in rules):
            return True, ""
        if not errors:
            return False, ""
        return False, f"RBAC: {_aggregate(errors)}"


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A LabelSelector matching ``labels``; a malformed one matches nothing (the API server
    refuses it: apimachinery metav1 validation)."""
    try:
        return matches_selector(selector, labels)
    except (TypeError, ValueError, AttributeError, KeyError):
        return False


def _aggregate(errors: Sequence[str]) -> str:
    """k8s.io/apimachinery pkg/util/errors NewAggregate Error: one error as is, more as [a, b]."""
    return aggregate(errors)


def _applies_to(user: User, subjects: Iterable[Any], namespace: str) -> bool:
    """validation/rule.go appliesToUser: User by name, Group by membership, ServiceAccount by
    ``system:serviceaccount:<ns>:<name>`` (the binding's namespace when the subject has none)."""
    for s in subjects:
        if not isinstance(s, Mapping):
            continue
        kind, name = s.get("kind"), str(s.get("name") or "")
        if kind == "User" and name == user.name:
            return True
        if kind == "Group" and name in user.groups:
            return True
        if kind == "ServiceAccount":
            ns = str(s.get("namespace") or namespace)
            if ns and user.name == f"system:serviceaccount:{ns}:{name}":
                return True
    return False


# --- messages --------------------------------------------------------------------------------------
def qualified_resource(group: str, resource: str) -> str:
    """schema.GroupResource String: ``deployments.apps``, ``secrets``."""
    return f"{resource}.{group}" if group else resource


def forbidden(group: str, resource: str, name: str, message: str) -> str:
    """k8s.io/apimachinery pkg/api/errors NewForbidden's message."""
    qualified = qualified_resource(group, resource)
    head = f"{qualified} {go_quote(name)}" if name else qualified
    return f"{head} is forbidden: {message}"


def forbidden_message(user: User, attrs: Attributes, reason: str) -> str:
    """k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go Forbidden: the error a
    request the authorizer denies gets."""
    resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    if attrs.namespace:
        where = f" in the namespace {go_quote(attrs.namespace)}"
    else:
        where = " at the cluster scope"
    msg = (
        f"User {go_quote(user.name)} cannot {attrs.verb} resource {go_quote(resource)} in API group "
        f"{go_quote(attrs.group)}{where}"
    )
    if reason:
        msg += f": {reason}"
    return forbidden(attrs.group, attrs.resource, attrs.name, msg)


def check(policy: Policy, user: User, attrs: Attributes) -> str | None:
    """The API server's Forbidden text for a denied request, None when RBAC allows it."""
    if PRIVILEGED_GROUP in user.groups:
        return None
    allowed, reason = policy.authorize(user, attrs)
    return None if allowed else forbidden_message(user, attrs, reason)


def create_on_patch(policy: Policy, user: User, attrs: Attributes) -> str | None:
    """A patch (server-side apply) that creates needs ``create`` too; denied, the error carries
    only the reason (k8s.io/apiserver pkg/endpoints/handlers/patch.go withAuthorization)."""
    if PRIVILEGED_GROUP in user.groups:
        return None
    create = Attributes("create", attrs.group, attrs.resource, attrs.namespace, attrs.name)
    allowed, reason = policy.authorize(user, create)
    return None if allowed else forbidden(attrs.group, attrs.resource, attrs.name, reason)


# --- escalation (pkg/registry/rbac/escalation_check.go, validation/rule.go) ------------------------
def _breakdown(rule: Rule) -> list[Rule]:
    """validation/policy_comparator.go BreakdownRule: one rule per group, resource, verb, name."""
    out = []
    for g in rule.api_groups:
        for r in rule.resources:
            for v in rule.verbs:
                if rule.resource_names:
                    out += [Rule((v,), (g,), (r,), (n,)) for n in rule.resource_names]
                else:
                    out.append(Rule((v,), (g,), (r,)))
    for url in rule.non_resource_urls:
        out += [Rule((v,), non_resource_urls=(url,)) for v in rule.verbs]
    return out


def _has_all(have: Sequence[str], want: Sequence[str]) -> bool:
    return "*" in have or all(w in have for w in want)


def _resources_cover(have: Sequence[str], want: Sequence[str]) -> bool:
    """policy_comparator.go resourceCoversAll: ``*``, exact, or ``*/sub`` for a subresource."""
    if "*" in have or all(w in have for w in want):
        return True
    for path in want:
        if path in have:
            continue
        if "/" not in path or f"*/{path.split('/', 1)[1]}" not in have:
            return False
    return True


def _url_covers(have: Sequence[str], url: str) -> bool:
    """policy_comparator.go nonResourceURLCovers: exact, ``*``, or a ``prefix*``."""
    return any(h == url or h == "*" or (h.endswith("*") and url.startswith(h[:-1])) for h in have)


def _rule_covers(owner: Rule, sub: Rule) -> bool:
    """policy_comparator.go ruleCovers."""
    if not _has_all(owner.verbs, sub.verbs):
        return False
    if sub.non_resource_urls:
        return all(_url_covers(owner.non_resource_urls, u) for u in sub.non_resource_urls)
    return (
        _has_all(owner.api_groups, sub.api_groups)
        and _resources_cover(owner.resources, sub.resources)
        and (not owner.resource_names or all(n in owner.resource_names for n in sub.resource_names))
    )


def missing_rules(owner: Sequence[Rule], wanted: Sequence[Rule]) -> list[Rule]:
    """Covers: the broken-down rules of ``wanted`` no owner rule covers."""
    return [atom for rule in wanted for atom in _breakdown(rule) if not any(_rule_covers(o, atom) for o in owner)]


def _compact(rules: Sequence[Rule]) -> list[Rule]:
    """validation/policy_compact.go CompactRules: simple rules merged by group, resource, name."""
    merged: dict[tuple[str, str, tuple[str, ...]], Rule] = {}
    out: list[Rule] = []
    for r in rules:
        simple = not r.non_resource_urls and len(r.api_groups) == 1 and len(r.resources) == 1 and len(r.resource_names) <= 1
        if not simple:
            out.append(r)
            continue
        key = (r.api_groups[0], r.resources[0], r.resource_names)
        prev = merged.get(key)
        merged[key] = r if prev is None else Rule(prev.verbs + r.verbs, prev.api_groups, prev.resources, prev.resource_names)
    return out + list(merged.values())


def confirm_no_escalation(policy: Policy, user: User, namespace: str, rules: Sequence[Rule]) -> str | None:
    """validation/rule.go ConfirmNoEscalation: the error when ``user`` does not hold ``rules``."""
    owner, errors = policy.rules_for(user, namespace)
    if PRIVILEGED_GROUP in user.groups:
        return None
    missing = missing_rules(owner, rules)
    if not missing:
        return None
    descriptions = sorted({r.compact_string() for r in _compact(missing)})
    msg = (
        f"user {go_quote(user.name)} (groups={go_quote_list(user.groups)}) is attempting to grant RBAC "
        "permissions not currently held:\n" + "\n".join(descriptions)
    )
    if errors:
        # ruleResolutionErrors is a []error holding RulesFor's aggregate
        msg += f"; resolution errors: [{_aggregate(errors)}]"
    return msg


def escalation_error(policy: Policy, user: User, obj: Mapping[str, Any]) -> str | None:
    """The Forbidden text the RBAC storages give a create or update of ``obj`` (a Role,
    ClusterRole or binding) by ``user``, None when it is allowed."""
    kind, meta = obj.get("kind"), _meta(obj)
    name, ns = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    if kind not in RBAC_KINDS or PRIVILEGED_GROUP in user.groups:
        return None
    namespace = ns if kind in ("Role", "RoleBinding") else ""
    resource = {"Role": "roles", "ClusterRole": "clusterroles", "RoleBinding": "rolebindings",
                "ClusterRoleBinding": "clusterrolebindings"}[str(kind)]
    if kind in ("Role", "ClusterRole"):
        # escalation_check.go RoleEscalationAuthorized: the escalate verb on the role
        if policy.authorize(user, Attributes("escalate", RBAC_GROUP, resource, namespace, name))[0]:
            return None
        err = confirm_no_escalation(policy, user, namespace, _rules(obj))
        if err:
            return forbidden(RBAC_GROUP, resource, name, err)
        if kind == "ClusterRole" and isinstance(obj.get("aggregationRule"), Mapping):
            # clusterrole/policybased/storage.go: an aggregationRule needs * on *.*
            if confirm_no_escalation(policy, user, "", FULL_AUTHORITY):
                return forbidden(RBAC_GROUP, resource, name, "must have cluster-admin privileges to use the aggregationRule")
        return None
    ref = obj.get("roleRef") or {}
    ref = ref if isinstance(ref, Mapping) else {}
    # escalation_check.go BindingAuthorized: the bind verb on the referenced role
    ref_resource = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
    if policy.authorize(user, Attributes("bind", RBAC_GROUP, ref_resource, namespace, str(ref.get("name") or "")))[0]:
        return None
    rules, err = policy.role_reference_rules(ref, namespace, registry=True)
    if err:
        return err  # rolebinding/policybased/storage.go: the lookup's NotFound, as is
    err = confirm_no_escalation(policy, user, namespace, rules)
    return forbidden(RBAC_GROUP, resource, name, err) if err else None


@cache
def bootstrap_objects() -> tuple[Mapping[str, Any], ...]:
    """The default ClusterRoles (admin, edit, view, cluster-admin) and the cluster-admin binding
    every API server creates (bootstrap_roles.yaml, ported from kubernetes)."""
    text = resources.files("helmsim.kube").joinpath("bootstrap_roles.yaml").read_text(encoding="utf-8")
    return tuple(yaml.safe_load(text))


__all__ = [
    "Attributes",
    "Policy",
    "Rule",
    "User",
    "bootstrap_objects",
    "check",
    "create_on_patch",
    "escalation_error",
    "forbidden",
    "forbidden_message",
    "missing_rules",
    "service_account_user",
]
