"""One ``patches`` entry, as kustomize's PatchTransformer applies it
(api/internal/builtins/PatchTransformer.go): the patch text is a strategic-merge patch (one or
more YAML objects) or a JSON 6902 patch (a list of operations), never both; a strategic-merge
patch without a target applies to the one object with its id, with a target to every selected
object; a JSON 6902 patch needs a target.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import yaml_rs
from msgspec import Struct, field

from helmsim import yamlio
from helmsim.kustomize import KustomizeError, json6902, smp
from helmsim.kustomize.select import Selector, res_id, same_id, select

SchemaFor = Callable[[str, str], "smp.Schema | None"]
"""(apiVersion, kind) → the kind's OpenAPI schema (None: lists are replaced)."""


class Patch(Struct, frozen=True):
    """A ``patches`` entry: inline ``patch`` text (Flux's API has no ``path``) and a target."""

    patch: str
    target: Selector | None = None
    options: Mapping[str, bool] = field(default_factory=dict)

    @property
    def source(self) -> str:
        # PatchTransformer.Config patchSource: [patch: "<text>"], quoted as Go's %q
        return f"[patch: {json.dumps(self.patch.strip(), ensure_ascii=False)}]"


def _sm_patches(text: str) -> list[dict[str, Any]] | None:
    """resource factory SliceFromBytes: the YAML objects of the text (None when it is not
    objects: a list, a scalar, or YAML that does not parse)."""
    out: list[dict[str, Any]] = []
    for chunk, _ in yamlio.split_documents(text):
        try:
            # kyaml reads the patch (go-yaml v3: YAML 1.2 scalars, ``on`` is a string)
            value = yaml_rs.loads(chunk, parse_datetime=False)
        except (yaml_rs.YAMLDecodeError, ValueError, RecursionError):
            return None
        if value is None:
            continue
        if not isinstance(value, dict):
            return None
        items = value.get("items") if value.get("kind") == "List" else None
        if isinstance(items, list):
            out.extend(i for i in items if isinstance(i, dict))
        else:
            out.append(value)
    return out


def apply(objects: list[dict[str, Any]], patch: Patch, schema_for: SchemaFor) -> list[dict[str, Any]]:
    """``objects`` after ``patch`` (a new list; objects a patch deletes are dropped)."""
    text = patch.patch.strip()
    if not text:
        raise KustomizeError(f"must specify one of patch and path in\n{_config_text(patch)}")
    sm = _sm_patches(text)
    ops: list[dict[str, Any]] | None
    try:
        ops = json6902.decode(text)
    except KustomizeError:
        ops = None
    if sm and ops:
        raise KustomizeError(f"illegally qualifies as both an SM and JSON patch: {patch.source}")
    if not sm and ops is None:
        raise KustomizeError(f"unable to parse SM or JSON patch from {patch.source}")
    if sm:
        return _strategic(objects, sm, patch, schema_for)
    assert ops is not None
    if patch.target is None:
        raise KustomizeError(f"must specify a target for JSON patch {patch.source}")
    out = list(objects)
    for i in select(objects, patch.target):
        patched = json6902.apply(out[i], ops)
        meta = patched.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
            # transformJson6902 re-sets the annotations as strings (GetAnnotations/SetAnnotations)
            meta["annotations"] = {str(k): _text(v) for k, v in meta["annotations"].items()}
        out[i] = patched
    return out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _strategic(
    objects: list[dict[str, Any]], patches: list[dict[str, Any]], patch: Patch, schema_for: SchemaFor
) -> list[dict[str, Any]]:
    out: list[dict[str, Any] | None] = list(objects)
    if patch.target is not None:
        if len(patches) > 1:
            raise KustomizeError(
                "Multiple Strategic-Merge Patches in one `patches` entry is not allowed to set "
                f"`patches.target` field: {patch.source}"
            )
        try:
            selected = select(objects, patch.target)
        except KustomizeError as err:
            raise KustomizeError(
                f'unable to find patch target "{patch.target}" in `resources`: {err}'
            ) from None
        for i in selected:
            obj = out[i]
            assert obj is not None
            # resWrangler.ApplySmPatch: the patch takes the selected object's group and version
            sm = {**patches[0], "apiVersion": obj.get("apiVersion")}
            out[i] = _apply_one(obj, sm, patch, schema_for)
        return [o for o in out if o is not None]
    for sm in patches:
        matches = [i for i, obj in enumerate(out) if obj is not None and same_id(obj, sm)]
        if len(matches) != 1:
            which = "multiple matches" if matches else "no matches"
            ident = res_id(sm)
            raise KustomizeError(
                f'no resource matches strategic merge patch "{ident}": {which} for Id {ident}; '
                f"failed to find unique target for patch {ident}"
            )
        obj = out[matches[0]]
        assert obj is not None
        out[matches[0]] = _apply_one(obj, sm, patch, schema_for)
    return [o for o in out if o is not None]


def _apply_one(
    obj: dict[str, Any], sm: dict[str, Any], patch: Patch, schema_for: SchemaFor
) -> dict[str, Any] | None:
    schema = schema_for(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
    result = smp.apply(obj, sm, schema)
    if result is None:
        return None
    raw_meta = sm.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    if patch.options.get("allowNameChange") and meta.get("name"):
        result.setdefault("metadata", {})["name"] = meta["name"]
    if patch.options.get("allowKindChange") and sm.get("kind"):
        result["kind"] = sm["kind"]
    return result


def _config_text(patch: Patch) -> str:
    return f"patch: {json.dumps(patch.patch)}\n"


__all__ = ["Patch", "SchemaFor", "apply"]
