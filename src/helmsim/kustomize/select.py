"""Which objects a patch applies to: kustomize's target selectors (api/types/selector.go,
api/resmap/reswrangler.go Select) and resource ids (kyaml/resid)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct

from helmsim.kube import labels as labelsel
from helmsim.kustomize import KustomizeError
from helmsim.kube.scope import CLUSTER_SCOPED_KINDS

NO_NAMESPACE = "[noNs]"  # kyaml/resid/resid.go
NO_NAME = "[noName]"
NO_GROUP, NO_VERSION, NO_KIND = "[noGrp]", "[noVer]", "[noKind]"  # kyaml/resid/gvk.go
NOT_A_NAMESPACE = "_non_namespaceable_"


class Selector(Struct, frozen=True):
    """A ``target`` (fluxcd/pkg apis/kustomize Selector; kustomize types.Selector)."""

    group: str = ""
    version: str = ""
    kind: str = ""
    name: str = ""
    namespace: str = ""
    label_selector: str = ""
    annotation_selector: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Selector:
        def text(key: str) -> str:
            value = data.get(key)
            return "" if value is None else str(value)

        return cls(
            text("group"), text("version"), text("kind"), text("name"), text("namespace"),
            text("labelSelector"), text("annotationSelector"),
        )

    def __str__(self) -> str:
        # types.Selector String: "<ResId>:a=<annotations>:l=<labels>"
        gvk = f"{self.kind or NO_KIND}.{self.version or NO_VERSION}.{self.group or NO_GROUP}"
        return (
            f"{gvk}/{self.name or NO_NAME}.{self.namespace or NO_NAMESPACE}"
            f":a={self.annotation_selector}:l={self.label_selector}"
        )


def gvk(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    api_version = str(obj.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    return group, version, str(obj.get("kind") or "")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def effective_namespace(obj: Mapping[str, Any]) -> str:
    """resid EffectiveNamespace: cluster-scoped kinds have none; unset is ``default``."""
    if str(obj.get("kind") or "") in CLUSTER_SCOPED_KINDS:
        return NOT_A_NAMESPACE
    ns = _meta(obj).get("namespace")
    return str(ns) if ns else "default"


def res_id(obj: Mapping[str, Any]) -> str:
    """resid.ResId String: ``Kind.version.group/name.namespace``."""
    group, version, kind = gvk(obj)
    meta = _meta(obj)
    return (
        f"{kind or NO_KIND}.{version or NO_VERSION}.{group or NO_GROUP}/"
        f"{meta.get('name') or NO_NAME}.{meta.get('namespace') or NO_NAMESPACE}"
    )


def id_key(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    """What resid ResId.Equals compares, as a hashable key (objects with equal keys have one id)."""
    name = _meta(obj).get("name")
    if not isinstance(name, (str, int, float, bool, type(None))):
        name = repr(name)  # malformed input: still comparable, never unhashable
    return (gvk(obj), name, effective_namespace(obj))


PREVIOUS = "config.helmsim.io/kustomize-previous-ids"
"""An annotation a build keeps on an object whose namespace (or name) a transformer changed: the
JSON list of its earlier ``[namespace, name]``, oldest first (kustomize's resource previous ids:
api/resource/resource.go StorePreviousId); removed when the build ends."""


def previous_ids(obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The object's earlier ``(namespace, name)``, oldest first (none outside a build)."""
    raw = (_meta(obj).get("annotations") or {}).get(PREVIOUS) if isinstance(_meta(obj).get("annotations"), Mapping) else None
    if not isinstance(raw, str):
        return []
    try:
        found = json.loads(raw)
    except ValueError:
        return []
    return [(str(p[0]), str(p[1])) for p in found if isinstance(p, list) and len(p) == 2]


def same_id(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """resid ResId.Equals of ``b`` with ``a``'s current id or any of its previous ones
    (resWrangler GetMatchingResourcesByAnyId): group, version, kind, name, effective namespace."""
    if id_key(a) == id_key(b):
        return True
    for ns, name in previous_ids(a):
        meta = {**_meta(a), "namespace": ns, "name": name}
        if id_key({**a, "metadata": meta}) == id_key(b):
            return True
    return False


def _anchored(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile("^(?:" + pattern + ")$")
    except re.error as err:
        raise KustomizeError(f"error parsing regexp: {err}: `{pattern}`") from None


def select(objects: Sequence[Mapping[str, Any]], target: Selector) -> list[int]:
    """The indexes of ``objects`` the target selects (resWrangler.Select)."""
    regexes = {
        field: _anchored(getattr(target, field))
        for field in ("group", "version", "kind", "name", "namespace")
        if getattr(target, field)
    }
    try:
        by_labels = labelsel.parse(target.label_selector) if target.label_selector else None
        by_annotations = labelsel.parse(target.annotation_selector) if target.annotation_selector else None
    except labelsel.SelectorError as err:
        raise KustomizeError(str(err)) from None
    out: list[int] = []
    for i, obj in enumerate(objects):
        group, version, kind = gvk(obj)
        meta = _meta(obj)
        values = {"group": group, "version": version, "kind": kind}
        if any(not rx.match(values[field]) for field, rx in regexes.items() if field in values):
            continue
        # reswrangler.go Select: the original namespace and name match as the current ones do
        earlier = previous_ids(obj)
        names = {str(meta.get("name") or "")} | ({earlier[0][1]} if earlier else set())
        namespaces = {effective_namespace(obj)} | (
            {effective_namespace({**obj, "metadata": {**meta, "namespace": earlier[0][0]}})} if earlier else set()
        )
        if "name" in regexes and not any(regexes["name"].match(n) for n in names):
            continue
        if "namespace" in regexes and not any(regexes["namespace"].match(n) for n in namespaces):
            continue
        if by_labels is not None and not by_labels.matches(_strings(meta.get("labels"))):
            continue
        if by_annotations is not None and not by_annotations.matches(_strings(meta.get("annotations"))):
            continue
        out.append(i)
    return out


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


__all__ = ["PREVIOUS", "Selector", "effective_namespace", "gvk", "id_key", "previous_ids", "res_id", "same_id", "select"]
