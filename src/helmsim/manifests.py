"""Rendered YAML to typed ``Resource`` objects, with their source and Helm hook metadata."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from helmsim import limits, yamlio
from helmsim.errors import InputError, Where
from helmsim.kube.scope import CLUSTER_SCOPED_KINDS
from helmsim.kube.nulls import drop_nulls

HOOK_ANNOTATION = "helm.sh/hook"
HOOK_WEIGHT_ANNOTATION = "helm.sh/hook-weight"
HOOK_DELETE_ANNOTATION = "helm.sh/hook-delete-policy"
HOOK_OUTPUT_LOG_ANNOTATION = "helm.sh/hook-output-log-policy"
RESOURCE_POLICY_ANNOTATION = "helm.sh/resource-policy"

# helm/helm pkg/release/v1/util/manifest_sorter.go: the events map ("test-success" aliases "test").
HOOK_EVENTS: Mapping[str, str] = {
    "pre-install": "pre-install",
    "post-install": "post-install",
    "pre-delete": "pre-delete",
    "post-delete": "post-delete",
    "pre-upgrade": "pre-upgrade",
    "post-upgrade": "post-upgrade",
    "pre-rollback": "pre-rollback",
    "post-rollback": "post-rollback",
    "test": "test",
    "test-success": "test",
}

_GO_ATOI = re.compile(r"^[+-]?[0-9]+$")


class Source(Struct, frozen=True):
    """Where a document came from: the template path, its index in that file, its first line."""

    path: str
    index: int
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class Hook(Struct, frozen=True):
    """Helm hook metadata, parsed as helm/helm pkg/release/v1/util/manifest_sorter.go does."""

    events: tuple[str, ...]
    weight: int
    delete_policies: tuple[str, ...]
    output_log_policies: tuple[str, ...] = ()


class Resource(Struct, frozen=True):
    """One Kubernetes object of a release, with where it came from."""

    api_version: str
    kind: str
    name: str
    namespace: str | None
    body: dict[str, Any]
    source: Source
    hook: Hook | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def group(self) -> str:
        """The API group (``""`` for the core group)."""
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""

    @property
    def key(self) -> tuple[str, str, str, str]:
        """Identity Helm matches objects by: group, kind, namespace, name (pkg/kube/resource.go)."""
        return (self.group, self.kind, self.namespace or "", self.name)

    @property
    def ref(self) -> str:
        """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped), as Flux prints objects."""
        if self.namespace:
            return f"{self.kind}/{self.namespace}/{self.name}"
        return f"{self.kind}/{self.name}"

    @property
    def is_hook(self) -> bool:
        return self.hook is not None

    @property
    def keep_policy(self) -> bool:
        """``helm.sh/resource-policy: keep`` (exact match, as pkg/kube/client.go checks on upgrade)."""
        return self.annotations.get(RESOURCE_POLICY_ANNOTATION) == "keep"


def go_atoi(text: str) -> int | None:
    """Go's ``strconv.Atoi`` on a 64-bit platform: no spaces, no underscores, int64 range."""
    if not _GO_ATOI.match(text):
        return None
    value = int(text)
    if value < -(2**63) or value > 2**63 - 1:
        return None
    return value


def _split_lower(value: str) -> tuple[str, ...]:
    # helm/helm pkg/release/v1/util/manifest_sorter.go operateAnnotationValues: split, trim, lower.
    return tuple(part.strip().lower() for part in value.split(","))


def parse_hook(annotations: Mapping[str, str]) -> Hook | None | bool:
    """Hook metadata; ``None`` for an ordinary object, ``False`` for a document Helm drops.

    helm/helm pkg/release/v1/util/manifest_sorter.go (sort): any unknown event drops the whole
    document ("skipping unknown hook"); a non-integer weight is 0 (calculateHookWeight).
    """
    if HOOK_ANNOTATION not in annotations:
        return None
    events: list[str] = []
    for raw in str(annotations[HOOK_ANNOTATION]).split(","):
        event = HOOK_EVENTS.get(raw.strip().lower())
        if event is None:
            return False
        events.append(event)
    weight = go_atoi(str(annotations.get(HOOK_WEIGHT_ANNOTATION, "")))
    deletes = annotations.get(HOOK_DELETE_ANNOTATION)
    logs = annotations.get(HOOK_OUTPUT_LOG_ANNOTATION)
    return Hook(
        events=tuple(events),
        weight=weight if weight is not None else 0,
        delete_policies=_split_lower(str(deletes)) if deletes is not None else (),
        output_log_policies=_split_lower(str(logs)) if logs is not None else (),
    )


class ParseResult(Struct):
    """Resources of a manifest plus what Helm silently dropped (unknown hook events)."""

    resources: list[Resource]
    dropped: list[tuple[Source, str]]


def crd_scopes(docs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Kind -> ``Namespaced``/``Cluster`` for every CustomResourceDefinition among ``docs``."""
    scopes: dict[str, str] = {}
    for doc in docs:
        if doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc.get("spec") or {}
        kind = ((spec.get("names") or {}).get("kind")) if isinstance(spec, dict) else None
        if isinstance(kind, str):
            scopes[kind] = str(spec.get("scope", "Namespaced"))
    return scopes


def _string_map(value: Any, what: str, source: Source) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"metadata.{what} must be a mapping", file=source.path, line=source.line)
    return {str(k): _scalar_text(v) for k, v in value.items()}


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def parse_documents(
    files: Iterable[tuple[str, str]],
    *,
    namespace: str = "default",
    cluster_scoped: Iterable[str] = (),
) -> ParseResult:
    """Parse ``(path, text)`` pairs into resources, in the given file order and document order.

    Namespaced objects without a namespace get ``namespace`` (the release namespace, as Helm's
    client defaults it); kinds in ``cluster_scoped``, the built-in cluster-scoped kinds and kinds
    whose CRD among these documents says ``scope: Cluster`` get none.
    """
    return parse_objects(read_objects(files), namespace=namespace, cluster_scoped=cluster_scoped)


def read_objects(files: Iterable[tuple[str, str]]) -> list[tuple[Source, dict[str, Any]]]:
    """Every object of ``(path, text)`` pairs with its source (``kind: List`` expanded, nulls
    dropped), in file and document order."""
    raw: list[tuple[Source, dict[str, Any]]] = []
    for path, text in files:
        # a repeated key keeps its last value, as Helm's and kubectl's decoding does
        for doc in yamlio.load_documents(text, path, last_key_wins=True):
            source = Source(path=path, index=doc.index, line=doc.line)
            if doc.value is None:
                continue  # a document of only comments: nothing to apply
            if not isinstance(doc.value, dict):
                raise InputError(
                    f"document is a {_yaml_type(doc.value)}, not a Kubernetes object",
                    file=path,
                    line=doc.line,
                )
            if doc.value.get("kind") == "List" and isinstance(doc.value.get("items"), list):
                for item in doc.value["items"]:
                    if not isinstance(item, dict):
                        raise InputError("List item is not an object", file=path, line=doc.line)
                    raw.append((source, drop_nulls(item)))
                continue
            # null = absent, as the API server decodes it (helmsim.kube.nulls)
            raw.append((source, drop_nulls(doc.value)))
    return raw


def parse_objects(
    raw: Iterable[tuple[Source, dict[str, Any]]],
    *,
    namespace: str = "default",
    cluster_scoped: Iterable[str] = (),
) -> ParseResult:
    """Resources from objects and their sources (see :func:`parse_documents`)."""
    raw = list(raw)
    limits.check("max_objects", len(raw), "objects in one release")
    scopes = crd_scopes(body for _, body in raw)
    cluster = set(CLUSTER_SCOPED_KINDS) | set(cluster_scoped)
    cluster |= {kind for kind, scope in scopes.items() if scope == "Cluster"}
    cluster -= {kind for kind, scope in scopes.items() if scope != "Cluster"}
    resources: list[Resource] = []
    dropped: list[tuple[Source, str]] = []
    for source, body in raw:
        res = _to_resource(body, source, namespace, cluster)
        if res is None:
            dropped.append((source, str(body["metadata"]["annotations"].get(HOOK_ANNOTATION))))
            continue
        resources.append(res)
    return ParseResult(resources=resources, dropped=dropped)


def _yaml_type(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def _to_resource(
    body: dict[str, Any], source: Source, namespace: str, cluster: set[str]
) -> Resource | None:
    where: Where = {"file": source.path, "line": source.line}
    kind = body.get("kind")
    api_version = body.get("apiVersion")
    if not kind or not isinstance(kind, str):
        raise InputError("document has no kind (Object 'Kind' is missing)", **where)
    if not api_version or not isinstance(api_version, str):
        raise InputError(f"{kind} has no apiVersion", **where)
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        raise InputError(f"{kind} has no metadata", **where)
    name = meta.get("name")
    if not name and not meta.get("generateName"):
        raise InputError(f"{kind} has no metadata.name", **where)
    annotations = _string_map(meta.get("annotations"), "annotations", source)
    labels = _string_map(meta.get("labels"), "labels", source)
    hook = parse_hook(annotations)
    if hook is False:
        return None
    ns = meta.get("namespace")
    if kind in cluster:
        ns = None
    elif not ns:
        ns = namespace
    return Resource(
        api_version=api_version,
        kind=kind,
        name=str(name or meta.get("generateName")),
        namespace=str(ns) if ns is not None else None,
        body=body,
        source=source,
        hook=hook if isinstance(hook, Hook) else None,
        labels=labels,
        annotations=annotations,
    )


def read_manifest_input(path: str) -> list[tuple[str, str]]:
    """(path, text) pairs from a rendered manifest: a file, a directory of YAML, or ``-``."""
    if path == "-":
        return [("<stdin>", yamlio.read_stdin())]
    p = Path(path)
    if p.is_file():
        return [(path, _read_text(p))]
    if p.is_dir() and (p / "templates").is_dir() and not (p / "Chart.yaml").is_file():
        raise InputError("not a Helm chart: templates/ but no Chart.yaml", file=path)
    if p.is_dir():
        files = sorted(
            f for f in p.rglob("*") if f.is_file() and f.suffix in (".yaml", ".yml", ".json")
        )
        if not files:
            raise InputError("directory holds no .yaml, .yml or .json files", file=path)
        return [(str(f), _read_text(f)) for f in files]
    raise InputError("no such file or directory", file=path)


def _read_text(p: Path) -> str:
    return yamlio.read_text(p)
