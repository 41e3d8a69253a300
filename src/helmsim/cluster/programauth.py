"""RBAC authorization of what a program of the simulation writes as its pod's ServiceAccount.

A catalog program that creates, applies or fills an object calls the API server with its pod's
token, and the API server authorizes each call (kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go
Authorize): the RBAC objects in the cluster, the bootstrap roles every API server holds and the
profile's. A call no rule allows is refused with the API server's Forbidden text. When a
binding of the account names a role the simulation does not hold (a ClusterRole made outside
it), the call cannot be decided: it is taken as allowed, and the caller says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from helmsim.kube import rbac
from helmsim.kube.rbac import Attributes, Policy
from helmsim.kube.scope import guess_plural

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

_CRD = "CustomResourceDefinition"


class RbacPolicyCache:
    """A policy over ``static`` RBAC objects and the store's own, rebuilt when those change
    (shared by program authorization and Flux's impersonation)."""

    def __init__(self, sim: Simulation, static: tuple[Mapping[str, Any], ...] | None) -> None:
        self.sim = sim
        self._static = static
        self._cache: tuple[Any, Policy] | None = None

    @property
    def static(self) -> tuple[Mapping[str, Any], ...]:
        if self._static is None:
            self._static = self.static_objects()
        return self._static

    def static_objects(self) -> tuple[Mapping[str, Any], ...]:
        """The RBAC objects outside the store, read on first use (none by default)."""
        return ()

    def policy(self) -> Policy:
        live = [o for kind in rbac.RBAC_KINDS for o in self.sim.store.list(kind)]
        key = tuple(((o.get("metadata") or {}).get("uid"), (o.get("metadata") or {}).get("resourceVersion")) for o in live)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, Policy([*self.static, *live]))
        return self._cache[1]


def plural_of(sim: Simulation, group: str, kind: str) -> str:
    """The resource name of ``kind`` in ``group``: a CRD's ``names.plural``, else the guess."""
    for crd in sim.store.list(_CRD):
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        if spec.get("group") == group and names.get("kind") == kind and names.get("plural"):
            return str(names["plural"])
    return guess_plural(kind)


class ProgramAuth(RbacPolicyCache):
    """The policy programs are authorized by: bootstrap roles, the profile's, the store's."""

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim, None)  # the bootstrap roles are parsed only when a program writes

    def static_objects(self) -> tuple[Mapping[str, Any], ...]:
        return (*rbac.bootstrap_objects(), *(getattr(self.sim.profile, "rbac", None) or ()))

    def resource_of(self, obj: Mapping[str, Any]) -> str:
        """``secrets``, ``certificates.cert-manager.io``: the resource ``obj`` is, as RBAC names it."""
        api = str(obj.get("apiVersion") or "")
        group = api.rsplit("/", 1)[0] if "/" in api else ""
        plural = plural_of(self.sim, group, str(obj.get("kind") or ""))
        return f"{plural}.{group}" if group else plural

    def _resource(self, group: str, kind: str) -> str:
        return plural_of(self.sim, group, kind)

    def decide(self, namespace: str, service_account: str, verb: str, obj: Mapping[str, Any]) -> tuple[str | None, str]:
        """``(Forbidden text or None, reason)``: the text when RBAC refuses ``verb`` on ``obj``;
        the reason names the unresolved role when the call was taken as allowed."""
        api = str(obj.get("apiVersion") or "")
        group = api.rsplit("/", 1)[0] if "/" in api else ""
        meta = obj.get("metadata") or {}
        attrs = Attributes(
            verb, group, self._resource(group, str(obj.get("kind") or "")),
            str(meta.get("namespace") or ""), str(meta.get("name") or ""),
        )
        user = rbac.service_account_user(namespace, service_account)
        allowed, reason = self.policy().authorize(user, attrs)
        if allowed:
            return None, ""
        if "clusterrole." in reason:
            # a ClusterRole the simulation does not hold may exist in the real cluster
            return None, reason.removeprefix("RBAC: ")
        # a Role that is not there grants nothing on the real API server either
        return rbac.forbidden_message(user, attrs, reason), ""


__all__ = ["RbacPolicyCache", "ProgramAuth", "plural_of"]
