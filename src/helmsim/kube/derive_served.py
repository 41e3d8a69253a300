"""Derive ``served_apis.json``: which built-in kinds each Kubernetes minor version serves by default.

Run ``python -m helmsim.kube.derive_served > src/helmsim/kube/served_apis.json`` after changing the
pinned ``kubernetes-validate`` version; ``tests/unit/test_served_apis.py`` re-derives the table from
the installed package and fails when the committed file differs.

Source: the OpenAPI definitions that ``kubernetes-validate`` ships per Kubernetes version (generated
from kubernetes/kubernetes ``api/openapi-spec``, which lists every API the apiserver compiles in,
alpha and beta included, and none that were removed). Not every compiled-in version is served by
default: kubernetes/kubernetes ``pkg/controlplane/apiserver/options`` /
``pkg/controlplane/instance.go`` DefaultAPIResourceConfigSource enables the stable group/versions,
keeps alpha and (since 1.24, KEP-3136) new beta versions off, and enables only the beta resources
listed in ``legacyBetaEnabledByDefaultResources``. ``LEGACY_BETAS`` below is that list over the
versions the package covers (each entry's last minor is the one before its removal in
kubernetes/website ``content/en/docs/reference/using-api/deprecation-guide.md``).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from importlib import metadata, resources
from typing import Any

PACKAGE = "kubernetes-validate"
_STABLE = re.compile(r"^v[0-9]+$")

# kubernetes/kubernetes pkg/controlplane/instance.go legacyBetaEnabledByDefaultResources:
# (group/version, Kind) -> last minor that serves it by default.
LEGACY_BETAS: dict[tuple[str, str], int] = {
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"): 25,  # removed in 1.26
    ("flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema"): 25,  # removed in 1.26
    ("flowcontrol.apiserver.k8s.io/v1beta1", "PriorityLevelConfiguration"): 25,
    ("flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema"): 28,  # removed in 1.29
    ("flowcontrol.apiserver.k8s.io/v1beta2", "PriorityLevelConfiguration"): 28,
    ("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema"): 31,  # removed in 1.32
    ("flowcontrol.apiserver.k8s.io/v1beta3", "PriorityLevelConfiguration"): 31,
    ("storage.k8s.io/v1beta1", "CSIStorageCapacity"): 26,  # removed in 1.27
}

# Kinds the definitions carry that no REST mapping resolves: subresource bodies
# (pods/eviction, */scale, serviceaccounts/token) and the discovery/meta documents.
NOT_MAPPABLE: frozenset[str] = frozenset(
    {"Eviction", "Scale", "TokenRequest", "APIGroup", "APIGroupList", "APIResourceList",
     "APIVersions", "Status", "DeleteOptions", "WatchEvent"}
)


def schema_dirs() -> dict[int, str]:
    """Minor version → the package's (non-strict) schema directory name."""
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    out: dict[int, str] = {}
    for entry in root.iterdir():
        m = re.match(r"^v1\.([0-9]+)\.0-local$", entry.name)
        if m:
            out[int(m.group(1))] = entry.name
    return dict(sorted(out.items()))


def definitions(minor: int) -> dict[str, Any]:
    """The OpenAPI definitions (``$defs``) of Kubernetes ``1.<minor>`` as the package ships them."""
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    text = (root / schema_dirs()[minor] / "_definitions.json").read_text(encoding="utf-8")
    defs: dict[str, Any] = json.loads(text)["$defs"]
    return defs


def compiled_kinds(defs: dict[str, Any]) -> set[tuple[str, str]]:
    """(group/version, Kind) of every mappable top-level kind in ``defs``."""
    out: set[tuple[str, str]] = set()
    for schema in defs.values():
        gvks = schema.get("x-kubernetes-group-version-kind") or []
        if len(gvks) != 1:
            continue  # DeleteOptions, WatchEvent: one definition for every group
        gvk = gvks[0]
        kind = str(gvk["kind"])
        if kind.endswith("List") or kind in NOT_MAPPABLE:
            continue
        group, version = str(gvk["group"]), str(gvk["version"])
        out.add((f"{group}/{version}" if group else version, kind))
    return out


def served_by_default(kinds: set[tuple[str, str]], minor: int) -> set[tuple[str, str]]:
    """The subset DefaultAPIResourceConfigSource serves: stable versions and legacy betas."""
    return {
        (gv, kind)
        for gv, kind in kinds
        if _STABLE.match(gv.rsplit("/", 1)[-1]) or LEGACY_BETAS.get((gv, kind), 0) >= minor
    }


def derive() -> dict[str, Any]:
    """The table: for each served (group/version, Kind), the minors (within the package's range)
    that serve it by default, as ``[first, last]`` ranges."""
    dirs = schema_dirs()
    served: dict[str, list[int]] = {}
    for minor in dirs:
        for gv, kind in served_by_default(compiled_kinds(definitions(minor)), minor):
            served.setdefault(f"{gv}/{kind}", []).append(minor)
    kinds = {key: _ranges(sorted(minors)) for key, minors in sorted(served.items())}
    dist = metadata.distribution("kubernetes_validate")
    # the package's own files only: RECORD's script and installer lines depend on the venv
    record = "".join(
        line + "\n"
        for line in sorted((dist.read_text("RECORD") or "").splitlines())
        if line.startswith("kubernetes_validate/")
    )
    return {
        "provenance": {
            "package": f"{PACKAGE}=={dist.version}",
            "files": "kubernetes_validate/kubernetes-json-schema/v1.<minor>.0-local/_definitions.json",
            "record_sha256": hashlib.sha256(record.encode()).hexdigest(),  # kubernetes_validate/ lines of RECORD, sorted
            "rule": "stable versions + legacyBetaEnabledByDefaultResources "
            "(kubernetes/kubernetes pkg/controlplane/instance.go DefaultAPIResourceConfigSource)",
            "derived_by": "python -m helmsim.kube.derive_served",
        },
        "minors": [min(dirs), max(dirs)],
        "kinds": kinds,
    }


def _ranges(minors: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for m in minors:
        if out and out[-1][1] == m - 1:
            out[-1][1] = m
        else:
            out.append([m, m])
    return out


def dumps(table: dict[str, Any]) -> str:
    """The committed file's exact text: one line per kind."""
    head = {k: v for k, v in table.items() if k != "kinds"}
    lines = [json.dumps(head, indent=1)[:-2] + ",", ' "kinds": {']
    items = list(table["kinds"].items())
    for i, (key, ranges) in enumerate(items):
        lines.append(f"  {json.dumps(key)}: {json.dumps(ranges)}" + ("," if i < len(items) - 1 else ""))
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(dumps(derive()))
