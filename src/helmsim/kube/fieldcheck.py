"""The API server's verdict on the fields of an object applied with server-side apply.

``apply_error(obj, kube_version=…, crd=…)`` returns the text kube-apiserver answers when it
refuses the object for its fields, or None. Built-in kinds are checked against the OpenAPI
definitions of the cluster's Kubernetes version (``helmsim.kube.openapi``), custom resources
against the ``openAPIV3Schema`` of their CustomResourceDefinition when it has one. Kinds with no
known schema are not checked (``schema_known`` tells).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from helmsim.kube import openapi
from helmsim.kube.typed import errors_text, required_errors, typed_errors
from helmsim.kube.errors import aggregate


def gvk_string(api_version: str, kind: str) -> str:
    """k8s.io/apimachinery schema.GroupVersionKind.String: ``apps/v1, Kind=Deployment``,
    ``/v1, Kind=Service`` for the core group."""
    gv = api_version if "/" in api_version else f"/{api_version}"
    return f"{gv}, Kind={kind}"


def qualified_kind(api_version: str, kind: str) -> str:
    """schema.GroupKind.String: ``Deployment.apps``, ``Pod`` for the core group."""
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return f"{kind}.{group}" if group else kind


def crd_version_schema(crd: Mapping[str, Any] | None, version: str) -> Mapping[str, Any] | None:
    """``spec.versions[name=version].schema.openAPIV3Schema`` of a CRD (None when absent)."""
    if not crd:
        return None
    for v in (crd.get("spec") or {}).get("versions") or ():
        if isinstance(v, dict) and v.get("name") == version:
            schema = (v.get("schema") or {}).get("openAPIV3Schema")
            return schema if isinstance(schema, dict) else None
    return None


def _schema(
    obj: Mapping[str, Any], kube_version: str, crd: Mapping[str, Any] | None
) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    found = openapi.kind_schema(kube_version, api_version, kind)
    if found is not None:
        name, defs = found
        return defs[name], defs
    schema = crd_version_schema(crd, api_version.rsplit("/", 1)[-1])
    if schema is None:
        return None
    # the apiserver adds apiVersion, kind and metadata to every custom resource's schema
    # (k8s.io/apiextensions-apiserver pkg/controller/openapi/builder: ObjectMeta for metadata)
    props = dict(schema.get("properties") or {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    minor = openapi.schema_minor(kube_version)
    props["metadata"] = {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    return {**schema, "type": "object", "properties": props}, openapi.definitions(minor)


def is_builtin(kube_version: str, api_version: str, kind: str) -> bool:
    """Whether the cluster's OpenAPI definitions describe this kind (a built-in type)."""
    return openapi.kind_schema(kube_version, api_version, kind) is not None


def schema_known(obj: Mapping[str, Any], *, kube_version: str, crd: Mapping[str, Any] | None = None) -> bool:
    """Whether ``apply_error`` can check this object's fields."""
    return _schema(obj, kube_version, crd) is not None


def apply_error(obj: Mapping[str, Any], *, kube_version: str, crd: Mapping[str, Any] | None = None) -> str | None:
    """kube-apiserver's error for a server-side apply of ``obj`` refused for its fields, or None."""
    found = _schema(obj, kube_version, crd)
    if found is None:
        return None
    root, defs = found
    meta = _meta(obj)
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "")
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    errs = typed_errors(obj, root, defs)
    if errs:
        # k8s.io/apimachinery pkg/util/managedfields/internal/structuredmerge.go Apply + objectGVKNN
        return (
            f"failed to create typed patch object ({namespace}/{name}; {gvk_string(api_version, kind)}): "
            f"{errors_text(errs)}"
        )
    missing = list(dict.fromkeys(required_errors(obj, root, defs)))
    return invalid_message(api_version, kind, name, missing) if missing else None


def invalid_message(api_version: str, kind: str, name: str, errors: list[str]) -> str:
    """k8s.io/apimachinery pkg/api/errors NewInvalid: ``"%s %q is invalid: %v"`` with the
    ErrorList aggregate (one error as is, several as ``[a, b]``)."""
    listed = aggregate(errors)
    return f'{qualified_kind(api_version, kind)} "{name}" is invalid: {listed}'



def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def helm_apply_error(obj: Mapping[str, Any], server_error: str) -> str:
    """How Helm v4 wraps a server-side apply error (helm/helm pkg/kube/client.go
    patchResourceServerSide: ``server-side apply failed for object <ns>/<name> <gvk>: …``)."""
    meta = _meta(obj)
    gvk = gvk_string(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
    return f"server-side apply failed for object {meta.get('namespace') or ''}/{meta.get('name') or ''} {gvk}: {server_error}"
