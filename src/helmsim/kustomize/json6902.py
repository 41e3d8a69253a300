"""JSON 6902 patches as kustomize applies them (api/filters/patchjson6902): YAML or JSON
operations decoded, applied to the object's JSON by the ``jsonpatch`` library, failures worded
as gopkg.in/evanphx/json-patch.v4 (patch.go) words them, since that is the text Flux reports.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import jsonpatch
import jsonpointer

from helmsim import yamlio
from helmsim.kustomize import KustomizeError

MISSING = "missing value"  # evanphx ErrMissing
INVALID_INDEX = "invalid index referenced"  # ErrInvalidIndex
TEST_FAILED = "test failed"  # ErrTestFailed


def decode(text: str) -> list[dict[str, Any]]:
    """jsonPatchFromBytes / Filter.decodePatch: ``[...]`` is JSON, anything else YAML (read as
    sigs.k8s.io/yaml YAMLToJSON reads it); the result must be a list of operations."""
    text = text.strip()
    if not text:
        raise KustomizeError("empty json patch operations")
    try:
        if text.startswith("["):
            ops = json.loads(text)
        else:
            # sigs.k8s.io/yaml YAMLToJSON: the first document, read as go-yaml v2 reads it
            first = yamlio.split_documents(text)
            ops = yamlio.load_one(first[0][0], "patch") if first else None
    except Exception as err:  # noqa: BLE001 - any decode failure is the patch's
        raise KustomizeError(f"unable to decode JSON patch: {err}") from None
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise KustomizeError("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    return ops


def looks_like(text: str) -> bool:
    """Whether ``text`` decodes as a non-empty list of operations (PatchTransformer.Config)."""
    try:
        return bool(decode(text))
    except KustomizeError:
        return False


def _parts(path: str) -> list[str] | None:
    if path == "":
        return []
    if not path.startswith("/"):
        return None
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _container(doc: Any, parts: Sequence[str]) -> Any:
    """evanphx findObject: the container holding the last token, or None."""
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict):
            if part not in node:
                return None
            node = node[part]
        elif isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                return None
            node = node[int(part)]
        else:
            return None
    return node if isinstance(node, (dict, list)) else None


def _evanphx_error(doc: Any, op: Mapping[str, Any]) -> str | None:
    """The text evanphx/json-patch v4 returns for ``op`` on ``doc``, when it fails there."""
    kind = str(op.get("op", ""))
    if kind not in ("add", "remove", "replace", "move", "copy", "test"):
        return f"Unexpected kind: {kind}"
    path = op.get("path")
    if not isinstance(path, str):
        return f"{kind} operation failed to decode path: {MISSING}"
    parts = _parts(path)
    if kind in ("move", "copy"):
        src = op.get("from")
        src_parts = _parts(src) if isinstance(src, str) else None
        if src_parts is None or (src_parts and _container(doc, src_parts) is None):
            return f"{kind} operation does not apply: doc is missing from path: {src}: {MISSING}"
        if parts is not None and parts and _container(doc, parts) is None:
            return f"{kind} operation does not apply: doc is missing destination path: {path}: {MISSING}"
        return None
    if parts is None:
        return f"{kind} operation failed to decode path: {MISSING}"
    if not parts:
        return None
    con = _container(doc, parts)
    key = parts[-1]
    if con is None:
        if kind in ("add", "remove"):
            return f'{kind} operation does not apply: doc is missing path: "{path}": {MISSING}'
        if kind == "test":
            return f"test operation does not apply: is missing path: {path}: {MISSING}"
        return f"replace operation does not apply: doc is missing path: {path}: {MISSING}"
    if isinstance(con, dict):
        if key not in con:
            if kind == "replace":
                return f"replace operation does not apply: doc is missing key: {path}: {MISSING}"
            if kind == "remove":
                return f"error in remove for path: '{path}': Unable to remove nonexistent key: {key}: {MISSING}"
        return None
    if key == "-" and kind == "add":
        return None
    if not key.lstrip("-").isdigit():
        return f"error in {kind} for path: '{path}': value was not a proper array index: '{key}'"
    idx = int(key)
    limit = len(con) if kind == "add" else len(con) - 1
    if idx < 0 or idx > limit:
        if kind in ("replace", "test"):
            # patch.go replace/test: con.get fails first
            if kind == "replace":
                return f"replace operation does not apply: doc is missing key: {path}: {MISSING}"
            return f"error in test for path: '{path}': Unable to access invalid index: {idx}: {INVALID_INDEX}"
        return f"error in {kind} for path: '{path}': Unable to access invalid index: {idx}: {INVALID_INDEX}"
    return None


def apply(obj: Mapping[str, Any], ops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The object with ``ops`` applied in order; KustomizeError with evanphx's text on failure."""
    doc: Any = copy.deepcopy(dict(obj))
    for op in ops:
        op = dict(op)
        if op.get("op") == "replace" and isinstance(op.get("path"), str):
            parts = _parts(op["path"])
            con = _container(doc, parts) if parts else None
            if isinstance(con, dict) and parts and parts[-1] not in con:
                # evanphx/json-patch v4 partialDoc.get finds no error for a missing key, so its
                # replace sets it (v5 refuses); kustomize links v4
                op["op"] = "add"
        try:
            doc = jsonpatch.JsonPatch([op]).apply(doc)
        except jsonpatch.JsonPatchTestFailed:
            raise KustomizeError(f"testing value {op.get('path')} failed: {TEST_FAILED}") from None
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError) as err:
            text = _evanphx_error(doc, op) or str(err)
            raise KustomizeError(text) from None
    if not isinstance(doc, dict):
        raise KustomizeError("json: cannot unmarshal array into Go value of type map[string]interface {}")
    return doc


__all__ = ["apply", "decode", "looks_like"]
