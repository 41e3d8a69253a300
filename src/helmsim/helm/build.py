"""Helm's Build: the release manifest mapped onto the APIs the cluster serves, before anything else.

helm/helm pkg/kube/client.go Build streams the manifest through cli-runtime's resource builder
(ContinueOnError): each object's kind is mapped through discovery (REST mapping), and an object
whose kind the cluster does not serve fails with k8s.io/cli-runtime pkg/resource/mapper.go's
``resource mapping not found for name: %q namespace: %q from %q: %w\\nensure CRDs are installed
first`` (the source is ``""``: the manifest is a stream). Every failing object is reported, as
k8s.io/apimachinery's error aggregate (one error alone, else ``[a, b]``).

Build's OpenAPI validation (``!DisableOpenAPIValidation``) is client-side schema validation that
kubectl's validator skips whenever the server supports server-side field validation (k8s.io/kubectl
pkg/validation/schema.go paramVerifyingSchema; GA since Kubernetes 1.27, on by default since
1.25): field errors come from the API server when each object is applied (``helmsim.kube.fieldcheck``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from helmsim.kube.served import builtin_served
from helmsim.manifests import Resource
from helmsim.kube.errors import aggregate as aggregate_text

Mapper = Callable[[str, str], bool]
"""``(apiVersion, kind) → whether the cluster serves it`` at the moment of the call."""


def mapping_error(res: Resource, serves: Mapper) -> str | None:
    """The builder's error for one object whose kind does not map, or None."""
    if serves(res.api_version, res.kind):
        return None
    meta = res.body.get("metadata") or {}
    # k8s.io/apimachinery pkg/api/meta/errors.go NoKindMatchError.Error (one searched version)
    inner = f'no matches for kind "{res.kind}" in version "{res.api_version}"'
    return (
        f'resource mapping not found for name: "{meta.get("name") or ""}" namespace: '
        f'"{meta.get("namespace") or ""}" from "": {inner}\nensure CRDs are installed first'
    )


def unmapped(resources: Sequence[Resource], serves: Mapper) -> list[tuple[Resource, str]]:
    """Each object whose kind does not map, with the builder's error for it, in manifest order."""
    return [(r, e) for r in resources if (e := mapping_error(r, serves)) is not None]


def aggregate(errors: Sequence[str]) -> str | None:
    """k8s.io/apimachinery pkg/util/errors aggregate.Error (Reduce: one error is returned as is)."""
    if not errors:
        return None
    return aggregate_text(errors)


def build_error(resources: Sequence[Resource], serves: Mapper) -> str | None:
    """What Build returns for ``resources`` (in manifest order), or None when every kind maps."""
    return aggregate([e for _, e in unmapped(resources, serves)])


# Helm's wrappings of a Build error (helm/helm pkg/action):
INSTALL = "unable to build kubernetes objects from release manifest: {}"  # install.go RunWithContext
CURRENT = "unable to build kubernetes objects from current release manifest: {}"  # upgrade.go, rollback.go
NEW = "unable to build kubernetes objects from new release manifest: {}"  # rollback.go performRollback
HOOK = "unable to build kubernetes object for {event} hook {path}: {err}"  # hooks.go execHook
# upgrade.go prepareUpgrade validateManifest: the new manifest's Build error is returned unwrapped


def cluster_mapper(
    kube_version: str,
    api_versions: Iterable[str] = (),
    crds: Iterable[Mapping[str, Any]] = (),
) -> Mapper:
    """A REST mapper for a cluster known only by its profile: the built-in kinds its Kubernetes
    version serves, ``api_versions`` entries (``group/version`` serves any kind of it,
    ``group/version/Kind`` that kind), and the served versions of the given CRD documents (taken
    as Established). ``helmsim plan`` uses it; simulations map against the live cluster."""
    whole: set[str] = set()
    kinds: set[tuple[str, str]] = set()
    for entry in api_versions:
        parts = str(entry).split("/")
        if parts[-1][:1].isupper():
            kinds.add(("/".join(parts[:-1]), parts[-1]))
        else:
            whole.add(str(entry))
    for crd in crds:
        spec = crd.get("spec") or {}
        kind = str((spec.get("names") or {}).get("kind") or "")
        for v in spec.get("versions") or ():
            if isinstance(v, Mapping) and v.get("served", True):
                kinds.add((f"{spec.get('group')}/{v.get('name')}", kind))

    def serves(api_version: str, kind: str) -> bool:
        if builtin_served(kube_version, api_version, kind):
            return True
        return (api_version, kind) in kinds or api_version in whole

    return serves
