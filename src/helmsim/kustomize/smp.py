"""Strategic merge patches as kustomize applies them: kyaml's ``merge2`` walk
(sigs.k8s.io/kustomize kyaml/yaml/merge2/merge2.go, kyaml/yaml/walk/*.go), with the patch
strategies and merge keys of the Kubernetes OpenAPI (``x-kubernetes-patch-strategy``,
``x-kubernetes-patch-merge-key``, ``x-kubernetes-list-map-keys``) from ``helmsim.kube.openapi``.

kustomize's patch filter (api/filters/patchstrategicmerge) merges with
``ListIncreaseDirection: Prepend`` and without inferring associative lists, so:

* maps merge key by key; ``null`` in the patch removes a field; ``$patch: delete`` removes the
  map, ``$patch: replace`` replaces it;
* a list whose schema says ``merge`` merges element by element on its merge keys, the patch's
  elements first, then the object's others (``$patch: delete`` on an element removes it; a list
  element ``{$patch: replace}`` replaces the whole list);
* every other list (and every list of a kind without a schema: custom resources) is replaced.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from helmsim.kube import openapi
from helmsim.kustomize import KustomizeError

DIRECTIVE = "$patch"  # merge2/smpdirective.go strategicMergePatchDirectiveKey


class _Clear:
    """walk.ClearNode: the field or element is removed."""


CLEAR = _Clear()
_MISSING = object()


class Schema(Struct, frozen=True):
    """One node of a built-in kind's OpenAPI schema (kyaml openapi.ResourceSchema)."""

    node: Mapping[str, Any]
    defs: Mapping[str, Mapping[str, Any]]

    def _resolve(self, node: Mapping[str, Any]) -> Mapping[str, Any] | None:
        seen = 0
        while "$ref" in node and seen < 64:
            ref = str(node["$ref"]).rsplit("/", 1)[-1]
            target = self.defs.get(ref)
            if target is None:
                return None
            node, seen = target, seen + 1
        return node

    def field(self, name: str) -> Schema | None:
        """kyaml ResourceSchema.Field: a property, else the additionalProperties schema."""
        props = self.node.get("properties") or {}
        sub = props.get(name)
        if sub is None:
            extra = self.node.get("additionalProperties")
            sub = extra if isinstance(extra, Mapping) else None
        if sub is None:
            return None
        resolved = self._resolve(sub)
        if resolved is None:
            return None
        # the extensions sit beside the $ref on the property (kubernetes-validate's JSON schema)
        merged = {**resolved, **{k: v for k, v in sub.items() if k.startswith("x-kubernetes-")}}
        return Schema(merged, self.defs)

    def elements(self) -> Schema | None:
        """kyaml ResourceSchema.Elements: the items schema of an array."""
        items = self.node.get("items")
        if not isinstance(items, Mapping):
            return None
        resolved = self._resolve(items)
        return None if resolved is None else Schema(resolved, self.defs)

    def strategy_and_keys(self) -> tuple[str, list[str]]:
        """kyaml PatchStrategyAndKeyList: the strategy, then list-map-keys or the merge key."""
        strategy = self.node.get("x-kubernetes-patch-strategy")
        if strategy is None:
            return "", []
        keys = self.node.get("x-kubernetes-list-map-keys")
        if keys:
            return str(strategy), [str(k) for k in keys]
        key = self.node.get("x-kubernetes-patch-merge-key")
        return str(strategy), [str(key)] if key else []

    def merges(self) -> bool:
        """schema.IsAssociative: the strategy (comma-separated) includes ``merge``."""
        return "merge" in self.strategy_and_keys()[0].split(",")


def schema_for(kube_version: str, api_version: str, kind: str) -> Schema | None:
    """kyaml openapi.SchemaForResourceType: the built-in kind's schema; None for other kinds."""
    found = openapi.kind_schema(kube_version, api_version, kind)
    if found is None:
        return None
    name, defs = found
    return Schema(defs[name], defs)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "MappingNode"
    if isinstance(value, list):
        return "SequenceNode"
    return "ScalarNode"


def _missing_or_null(value: Any) -> bool:
    return value is _MISSING or value is None


def _check(expected: str, *values: Any) -> None:
    """yaml.ErrorIfAnyInvalidAndNonNull: every present, non-null source is of one kind."""
    import yaml as pyyaml

    for value in values:
        if _missing_or_null(value):
            continue
        got = _kind(value)
        if got != expected:
            shown = pyyaml.safe_dump(value, default_flow_style=False, sort_keys=False).rstrip("\n")
            shown = shown.removesuffix("\n...")
            raise KustomizeError(f"wrong node kind: expected {expected} but got {got}: node contents:\n{shown}")


def _map_directive(patch: dict[str, Any]) -> str:
    """determineMappingNodePatchStrategy; the directive is removed from the patch."""
    if DIRECTIVE not in patch:
        return "merge"
    value = patch.pop(DIRECTIVE)
    if value in ("delete", "replace", "merge"):
        return str(value)
    raise KustomizeError(f"unknown patch strategy '{value}'")


def _list_directive(patch: list[Any]) -> str:
    """determineSequenceNodePatchStrategy: an element ``{$patch: X}`` alone, then removed."""
    for i, elem in enumerate(patch):
        if isinstance(elem, dict) and DIRECTIVE in elem:
            if len(elem) > 1:
                return "merge"
            value = elem[DIRECTIVE]
            if value in ("delete", "replace", "merge"):
                del patch[i]
                return str(value)
            raise KustomizeError(f"unknown patch strategy '{value}'")
    return "merge"


def merge(dest: Any, patch: Any, schema: Schema | None) -> Any:
    """merge2.Merge(patch, dest): the merged value (``dest`` is changed in place), or CLEAR."""
    return _walk(dest, copy.deepcopy(patch), schema)


def _walk(dest: Any, origin: Any, schema: Schema | None) -> Any:
    first = next((v for v in (dest, origin) if not _missing_or_null(v)), _MISSING)
    kind = "MappingNode" if first is _MISSING else _kind(first)
    if kind == "MappingNode":
        _check("MappingNode", dest, origin)
        return _walk_map(dest, origin, schema)
    if kind == "SequenceNode":
        _check("SequenceNode", dest, origin)
        if schema is not None and schema.merges():
            return _walk_associative(dest, origin, schema)
        # VisitList, NonAssociateList: the patch's list replaces the object's
        return dest if origin is _MISSING else origin
    _check("ScalarNode", dest, origin)
    # VisitScalar: the patch's value overrides
    return dest if origin is _MISSING else origin


def _walk_map(dest: Any, origin: Any, schema: Schema | None) -> Any:
    # Merger.VisitMap
    if _missing_or_null(dest):
        if isinstance(origin, dict) and _map_directive(origin) == "delete":
            return CLEAR
        if _missing_or_null(origin):
            return None if origin is None or dest is None else _MISSING
        dest = copy.deepcopy(origin)  # added: the patch's map, its own directives applied
    elif origin is None:
        return CLEAR
    elif isinstance(origin, dict):
        directive = _map_directive(origin)
        if directive == "delete":
            return CLEAR
        if directive == "replace":
            dest = copy.deepcopy(origin)
    assert isinstance(dest, dict)
    source = origin if isinstance(origin, dict) else {}
    for key in sorted(set(dest) | set(source)):
        sub = schema.field(key) if schema is not None else None
        value = _walk(dest.get(key, _MISSING), source.get(key, _MISSING), sub)
        if value is CLEAR or value is None or value is _MISSING:
            dest.pop(key, None)  # FieldSetter: a nil or null value clears the field
        else:
            dest[key] = value
    return dest


def _walk_associative(dest: Any, origin: Any, schema: Schema) -> Any:
    # Merger.VisitList for an AssociativeList
    if _missing_or_null(dest):
        if _missing_or_null(origin):
            return origin if origin is not _MISSING else dest
        dest = copy.deepcopy(origin)
    elif origin is None:
        return CLEAR
    elif isinstance(origin, list):
        directive = _list_directive(origin)
        if directive == "delete":
            return CLEAR
        if directive == "replace":
            dest = copy.deepcopy(origin)
    patch = origin if isinstance(origin, list) else []
    _, keys = schema.strategy_and_keys()
    if not keys:
        return _merge_primitives(dest, patch)
    return _merge_keyed(dest, patch, keys, schema.elements())


def _merge_primitives(dest: list[Any], patch: list[Any]) -> list[Any]:
    """A merge list without keys (finalizers): the patch's values first, then the object's."""
    out: list[Any] = []
    for value in [*patch, *dest]:
        if not any(v == value for v in out):
            out.append(value)
    return out


def _text(value: Any) -> str:
    """A yaml.Node's Value: a scalar's text; "" for maps, lists and null."""
    if value is None or isinstance(value, (dict, list)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _field(elem: Any, key: str) -> Any:
    """RNode.Field(key).Value, or _MISSING (also for non-maps)."""
    if isinstance(elem, dict) and key in elem:
        return elem[key]
    return _MISSING


def _values_list(items: list[Any], keys: list[str]) -> list[list[str]]:
    """RNode.ElementValuesList: each element's key values ("" when unset or empty)."""
    out = []
    for elem in items:
        row = []
        for key in keys:
            value = _field(elem, key)
            row.append("" if value is _MISSING or value in (None, {}, []) else _text(value))
        out.append(row)
    return out


def _validate_keys(values_list: list[list[str]], values: list[str], keys: list[str]) -> tuple[list[str], list[str]]:
    """associative_sequence.go validateKeys: the keys some element sets, and their values."""
    valid = {keys[i] for row in values_list for i, v in enumerate(row) if v != ""}
    if not valid:
        return keys, values
    return [k for k in keys if k in valid], [v for i, v in enumerate(values) if v != "" or keys[i] in valid]


def _match(a: list[str], b: list[str]) -> list[str] | None:
    """associative_sequence.go match: equal where both are set, and one value in common."""
    if len(a) != len(b):
        return None
    common = False
    res: list[str] = []
    for x, y in zip(a, b, strict=True):
        if x == y:
            common = True
            res.append(x)
        elif x and y:
            return None
        else:
            res.append(x or y)
    return res if common else None


def _element(items: list[Any] | None, keys: list[str], values: list[str]) -> Any:
    """MatchElementList (ElementMatcher): the first map whose keys hold exactly ``values``."""
    for elem in items or ():
        if not isinstance(elem, dict):
            continue
        if all(_field(elem, k) is not _MISSING and _text(elem[k]) == v for k, v in zip(keys, values, strict=False)):
            return elem
    return _MISSING


def _set_element(items: list[Any], element: Any, keys: list[str], values: list[str]) -> list[Any]:
    """yaml.ElementSetter: replace the elements matching ``keys``/``values`` with ``element``
    (remove them when it is None), or append it; empty elements are dropped."""
    out: list[Any] = []
    found = False
    for elem in items:
        if elem is None or elem == {}:
            continue
        if not isinstance(elem, dict):
            out.append(elem)
            continue
        hit = True
        for j, key in enumerate(keys):
            if j < len(values):
                # FieldMatcher{Name, StringValue}: an empty value matches any value of the field
                value = _field(elem, key)
                if value is _MISSING or (values[j] != "" and _text(value) != values[j]):
                    hit = False
                    break
        if not hit:
            if values:
                out.append(elem)
            continue
        found = True
        if element is not None:
            out.append(element)
    if element is not None and not found:
        out.append(element)
    return out


def _append_list(dst: list[Any], src: list[Any], keys: list[str]) -> list[Any]:
    """associative_sequence.go appendListNode, literally (a multi-key element is removed from
    ``dst`` and appended again, which is why kustomize reorders ports)."""
    for elem in src:
        v: list[str] = []
        for key in keys:
            value = _field(elem, key)
            if value is _MISSING or value is None:
                dst.append(elem)
                continue
            v.append(_text(value))
        if len(keys) > 1:
            dst = _set_element(dst, None, keys, v)
        dst = _set_element(dst, elem, keys, v)
    return dst


def _merge_keyed(dest: list[Any], patch: list[Any], keys: list[str], elements: Schema | None) -> list[Any]:
    """walkAssociativeSequence + setAssociativeSequenceElements with ListIncreaseDirection
    Prepend (the patch's elements first)."""
    values_list: list[list[str]] = []
    for src in (patch, dest):  # elementValues: the origin first when prepending
        for row in _values_list(src, keys):
            if row and row not in values_list:
                values_list.append(row)
    if len(keys) > 1:  # mergeValues
        for i in range(len(values_list)):
            for j in range(len(values_list)):
                merged = _match(values_list[i], values_list[j])
                if merged is not None:
                    values_list[i] = values_list[j] = merged
    added: list[Any] = []
    valid_keys: list[str] = list(keys)
    for values in values_list:
        if not values:
            continue
        valid_keys, valid_values = _validate_keys(values_list, values, keys)
        lookup_keys, lookup_values = _validate_keys([valid_values], valid_values, valid_keys)
        d_elem = _element(dest, lookup_keys, lookup_values)
        p_elem = _element(patch, lookup_keys, lookup_values)
        val = _walk(d_elem, p_elem, elements)
        if val is CLEAR or _missing_or_null(val) or val == {}:
            dest[:] = _set_element(dest, None, valid_keys, valid_values)
            continue
        if isinstance(val, dict):
            for key, value in zip(valid_keys, valid_values, strict=False):
                if key not in val and value != "":
                    val[key] = value
        added = _set_element(added, val, valid_keys, valid_values)
    if values_list:
        return _append_list(added, dest, valid_keys)
    return dest


def apply(obj: dict[str, Any], patch: Mapping[str, Any], schema: Schema | None) -> dict[str, Any] | None:
    """Resource.ApplySmPatch: ``patch`` merged into ``obj`` (a copy), its kind, name and
    namespace kept (kustomize api/resource/resource.go); None when the patch deletes it."""
    kind = obj.get("kind")
    meta = obj.get("metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace")
    result = merge(copy.deepcopy(obj), patch, schema)
    if result is CLEAR or not result:
        return None
    assert isinstance(result, dict)
    result["kind"] = kind
    meta_out = result.setdefault("metadata", {})
    if name is not None:
        meta_out["name"] = name
    if namespace is not None:
        meta_out["namespace"] = namespace
    else:
        meta_out.pop("namespace", None)
    return result


__all__ = ["CLEAR", "Schema", "apply", "merge", "schema_for"]
