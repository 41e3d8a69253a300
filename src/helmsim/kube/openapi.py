"""The built-in types' OpenAPI schemas, per Kubernetes version, from the ``kubernetes-validate``
package (its ``v1.<minor>.0-local/_definitions.json``: kubernetes/kubernetes ``api/openapi-spec``
as JSON schema, with the ``x-kubernetes-*`` list and map extensions kept).

Loaded lazily, once per minor version; versions outside the package's range use the nearest one
(``helmsim.kube.served.coverage_note`` says so in reports).
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any

from helmsim.kube.served import minor_of

Schema = dict[str, Any]


@cache
def _root() -> Path:
    """The package's schema directory, found without importing the package (its import pulls in
    jsonschema and costs more than reading the definitions)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("kubernetes-validate is not installed (a helmsim dependency)")
    return Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"


@cache
def _dirs() -> dict[int, str]:
    out: dict[int, str] = {}
    for entry in _root().iterdir():
        name = entry.name
        if name.startswith("v1.") and name.endswith(".0-local"):
            out[int(name[3:].split(".", 1)[0])] = name
    return out


def schema_minor(kube_version: str) -> int:
    """The minor whose definitions are used for ``kube_version`` (clamped to the package)."""
    dirs = _dirs()
    minor = minor_of(kube_version)
    lo, hi = min(dirs), max(dirs)
    return hi if minor is None else min(max(minor, lo), hi)


@cache
def definitions(minor: int) -> dict[str, Schema]:
    """``$defs`` of Kubernetes 1.<minor>."""
    text = (_root() / _dirs()[minor] / "_definitions.json").read_text(encoding="utf-8")
    defs: dict[str, Schema] = json.loads(text)["$defs"]
    return defs


@cache
def kind_index(minor: int) -> dict[tuple[str, str], str]:
    """(group/version, Kind) → definition name, for every top-level kind of 1.<minor>."""
    out: dict[tuple[str, str], str] = {}
    for name, schema in definitions(minor).items():
        gvks = schema.get("x-kubernetes-group-version-kind") or []
        if len(gvks) != 1:
            continue
        gvk = gvks[0]
        group = str(gvk["group"])
        gv = f"{group}/{gvk['version']}" if group else str(gvk["version"])
        out[(gv, str(gvk["kind"]))] = name
    return out


def kind_schema(kube_version: str, api_version: str, kind: str) -> tuple[str, dict[str, Schema]] | None:
    """The definition name of a built-in kind and the definitions it refers to, or None."""
    minor = schema_minor(kube_version)
    name = kind_index(minor).get((api_version, kind))
    return None if name is None else (name, definitions(minor))
