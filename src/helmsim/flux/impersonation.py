"""Tenant impersonation: the ServiceAccount helm-controller acts as for a HelmRelease, and the
RBAC check of every API call Helm makes with it.

fluxcd/helm-controller internal/kube/impersonate.go SetImpersonationConfig (spec.serviceAccountName,
else ``--default-service-account``, as ``system:serviceaccount:<HelmRelease namespace>:<name>``)
and internal/controller/helmrelease_controller.go buildRESTClientGetter (one client per
HelmRelease, used by the release storage, Helm's actions, CRD apply and the waiter).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from typing import Any

from msgspec.structs import replace

from helmsim.cluster.engine import Simulation
from helmsim.cluster.programauth import RbacPolicyCache, plural_of
from helmsim.cluster.profile import ClusterProfile
from helmsim.kube.scope import guess_plural
from helmsim.flux.helmrelease import HelmRelease
from helmsim.helm.actions import HelmContext
from helmsim.kube import rbac
from helmsim.kube.rbac import Attributes, Policy, User


def impersonated_user(service_account: str, namespace: str, default: str | None = None) -> User | None:
    """internal/kube/impersonate.go: the HelmRelease's account, else the controller's default,
    in the HelmRelease's namespace; None when neither is set (the controller's own identity)."""
    name = service_account or default or ""
    if not name or not namespace:
        return None
    return rbac.service_account_user(namespace, name)


def rbac_objects(objects: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    """The Roles, ClusterRoles and bindings among ``objects``."""
    return tuple(
        o for o in objects
        if o.get("kind") in rbac.RBAC_KINDS and str(o.get("apiVersion") or "").startswith(f"{rbac.RBAC_GROUP}/")
    )


def _group(obj: Mapping[str, Any]) -> str:
    api = str(obj.get("apiVersion") or "")
    return api.rsplit("/", 1)[0] if "/" in api else ""


def gvk_string(obj: Mapping[str, Any]) -> str:
    """schema.GroupVersionKind String: ``apps/v1, Kind=Deployment``, ``/v1, Kind=Service``."""
    api = str(obj.get("apiVersion") or "")
    group, _, version = api.rpartition("/")
    return f"{group}/{version}, Kind={obj.get('kind')}"


def ssa_failed(obj: Mapping[str, Any], err: str) -> str:
    """helm/helm pkg/kube/client.go patchResourceServerSide: the wrapping of an apply error."""
    meta = obj.get("metadata") or {}
    return f"server-side apply failed for object {meta.get('namespace') or ''}/{meta.get('name')} {gvk_string(obj)}: {err}"


@dataclass
class Tenant:
    """The impersonated identity of one HelmRelease and the RBAC it holds.

    ``static`` are RBAC objects that exist outside the simulated store (the API server's
    bootstrap roles, the profile's, the tree's); the store's own Roles and bindings (those the
    releases create) are read at each check.
    """

    user: User
    sim: Simulation
    storage_namespace: str
    static: tuple[Mapping[str, Any], ...] = ()
    owner: str = ""
    """The HelmRelease (``ns/name``) acting as ``user``."""
    _cache: RbacPolicyCache | None = field(default=None, repr=False)

    def policy(self) -> Policy:
        if self._cache is None:
            self._cache = RbacPolicyCache(self.sim, self.static)
        return self._cache.policy()

    def attributes(self, verb: str, obj: Mapping[str, Any], *, item: bool = True) -> Attributes:
        meta = obj.get("metadata") or {}
        group = _group(obj)
        return Attributes(
            verb, group, self._resource(group, str(obj.get("kind") or "")),
            str(meta.get("namespace") or ""), str(meta.get("name") or "") if item else "",
        )

    def _resource(self, group: str, kind: str) -> str:
        return plural_of(self.sim, group, kind)

    def denied(self, verb: str, obj: Mapping[str, Any], *, item: bool = True) -> str | None:
        """The Forbidden text of ``verb`` on ``obj`` (its collection when not ``item``)."""
        attrs = self.attributes(verb, obj, item=item)
        err = rbac.check(self.policy(), self.user, attrs)
        if err:
            self._log(attrs, obj, err)
        return err

    def denied_apply(self, obj: Mapping[str, Any]) -> str | None:
        """Server-side apply of ``obj``: ``patch``; ``create`` too when it does not exist yet
        (apiserver handlers/patch.go); a Role, ClusterRole or binding is also checked for
        escalation (pkg/registry/rbac/*/policybased/storage.go)."""
        err = self.denied("patch", obj)
        if err:
            return err
        meta = obj.get("metadata") or {}
        policy = self.policy()
        attrs = self.attributes("patch", obj)
        if self.sim.store.get(str(obj.get("kind")), meta.get("namespace"), str(meta.get("name"))) is None:
            err = rbac.create_on_patch(policy, self.user, attrs)
            attrs = self.attributes("create", obj)
        err = err or rbac.escalation_error(policy, self.user, obj)
        if err:
            self._log(attrs, obj, err)
        return err

    def denied_create(self, obj: Mapping[str, Any]) -> str | None:
        """A create (POST): ``create`` on the collection, then the escalation check."""
        err = self.denied("create", obj, item=False)
        if err is None:
            err = rbac.escalation_error(self.policy(), self.user, obj)
            if err:
                self._log(self.attributes("create", obj), obj, err)
        return err

    def denied_storage(self, verb: str) -> str | None:
        """Helm's release storage (Secrets in the storage namespace): ``list`` to query,
        ``create``/``update``/``delete`` to write (helm/helm pkg/storage/driver/secrets.go)."""
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": self.storage_namespace}}
        return self.denied(verb, secret, item=False)

    @staticmethod
    def ssa_failed(obj: Mapping[str, Any], err: str) -> str:
        return ssa_failed(obj, err)

    def _log(self, attrs: Attributes, obj: Mapping[str, Any], err: str) -> None:
        """The denial on the API server's lane, with what the diagnosis names (HS120)."""
        where = "/".join(p for p in (str(obj.get("kind") or ""), attrs.namespace, attrs.name) if p)
        self.sim.log(
            "kube-apiserver", "forbidden", where, err, user=self.user.name, helmrelease=self.owner, verb=attrs.verb,
            group=attrs.group, resource=attrs.resource, namespace=attrs.namespace,
            kind=str(obj.get("kind") or ""), escalation="attempting to grant" in err or "aggregationRule" in err,
        )


HELM_VERBS = ("get", "create", "patch", "delete")
"""What Helm does to each object of a release: get it (adoption, the upgrade's GET, the waiter),
apply it (patch, and create when new), delete it (hooks' before-hook-creation, objects leaving
the chart, uninstall) (helm/helm pkg/action, pkg/kube/client.go)."""
STORAGE_VERBS = ("list", "get", "create", "update", "delete")
"""helm/helm pkg/storage/driver/secrets.go: query, read, create, update and prune releases."""


def missing_permissions(
    policy: rbac.Policy, user: User, objects: Sequence[Mapping[str, Any]], storage_namespace: str
) -> list[Attributes]:
    """The requests Helm makes for a release of ``objects`` that ``policy`` denies ``user``
    (collections and names aside: one per verb, kind and namespace)."""
    wanted: dict[tuple[str, str, str, str], None] = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        group = _group(obj)
        resource = guess_plural(str(obj.get("kind") or ""))
        for verb in HELM_VERBS:
            wanted[(verb, group, resource, str(meta.get("namespace") or ""))] = None
    for verb in STORAGE_VERBS:
        wanted[(verb, "", "secrets", storage_namespace)] = None
    out = []
    for verb, group, resource, ns in wanted:
        attrs = Attributes(verb, group, resource, ns)
        if rbac.check(policy, user, attrs) is not None:
            out.append(attrs)
    return out


def static_policy(profile: ClusterProfile, tree_objects: Sequence[Mapping[str, Any]]) -> Policy:
    """The RBAC a tenant holds before any release: the API server's defaults, the profile's and
    the tree's."""
    return Policy([*rbac.bootstrap_objects(), *profile.rbac, *rbac_objects(tree_objects)])


def tenant_context(ctx: HelmContext, hr: HelmRelease, profile: ClusterProfile, tree_objects: Sequence[Mapping[str, Any]] = ()) -> HelmContext:
    """``ctx`` acting as ``hr``'s impersonated account (unchanged when it has none): checked
    against the API server's default roles, the profile's ``rbac`` and the tree's RBAC objects."""
    user = impersonated_user(hr.spec.service_account_name or "", hr.namespace, profile.flux.default_service_account)
    if user is None:
        return ctx
    static = (*rbac.bootstrap_objects(), *profile.rbac, *rbac_objects(tree_objects))
    return replace(ctx, tenant=Tenant(user, ctx.sim, hr.storage_namespace, static, hr.ref))


__all__ = [
    "Tenant",
    "gvk_string",
    "impersonated_user",
    "missing_permissions",
    "rbac_objects",
    "ssa_failed",
    "static_policy",
    "tenant_context",
]
