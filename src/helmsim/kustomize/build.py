"""A kustomization directory built as kustomize v5 builds it for kustomize-controller.

sigs.k8s.io/kustomize api/internal/target/kusttarget.go: the ``resources`` are accumulated in
their order (a file's objects, a directory's own build), then the builtin transformers run in
kustomize's order (kusttarget_configplugin.go configureBuiltinTransformers):
``patchesStrategicMerge``, ``patches``, ``namespace``, ``namePrefix``/``nameSuffix``, labels,
annotations, ``patchesJson6902``, ``replicas``, ``images``, ``replacements``. A directory without
a kustomization file gets the one kustomize-controller generates (fluxcd/pkg
kustomize/kustomize_generator.go findOrGenerateKustomization, scanManifests): every ``.yaml`` and
``.yml`` file under it, and every subdirectory holding a kustomization file as one resource,
not descended into.

What is built is kept as documents of the files they come from, each at its line there, so
reports still name the file an object was written in; an object a transformation changed is
written out again at the line its document started on. The fields this module does not apply
(generators, name prefixes and suffixes, labels, components, replacements, remote resources)
are named in the build's notes, never silently dropped.
"""

from __future__ import annotations

import copy
import json
import os
from functools import partial
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
import yaml_rs
from msgspec import Struct, field

from helmsim import yamlio
from helmsim.errors import InputError
from helmsim.kube.scope import CLUSTER_SCOPED_KINDS
from helmsim.kustomize import KUSTOMIZATION_NAMES, KustomizeError, images, patches, smp
from helmsim.kustomize.select import PREVIOUS, Selector, id_key, res_id

# kustomize reads patch strategies from the OpenAPI it embeds, not from the cluster's
SCHEMA_VERSION = "1.31.0"
MAX_DEPTH = 32
"""Nested bases beyond this are refused (a cycle is refused before)."""

_ORIGIN = "config.helmsim.io/kustomize-origin"
_LOCAL = "config.kubernetes.io/local-config"
# fields kustomize applies that this build does not, named in its notes
_NOT_APPLIED = (
    "configMapGenerator", "secretGenerator", "helmCharts", "helmGlobals", "namePrefix", "nameSuffix",
    "commonLabels", "labels", "commonAnnotations", "components", "replacements", "vars", "crds",
    "configurations", "transformers", "generators", "validators", "openapi",
)
# api/konfig/builtinpluginconsts/replicas.go: the kinds whose spec/replicas ``replicas`` sets
_REPLICA_KINDS = ("Deployment", "ReplicationController", "ReplicaSet", "StatefulSet")


class Document(Struct):
    """One built object, with the file and line it was written at."""

    obj: dict[str, Any]
    file: str
    line: int
    text: str | None = None
    """The document's own text when no transformation changed it."""


class Build(Struct):
    """What a directory builds to, and what it did not apply."""

    documents: list[Document] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Overlay(Struct, frozen=True):
    """What kustomize-controller adds to the kustomization file it builds (fluxcd/pkg
    kustomize_generator.go GenerateManifest): ``spec.patches`` appended to ``patches``,
    ``spec.images`` merged into ``images`` by name."""

    patches: tuple[patches.Patch, ...] = ()
    images: tuple[Mapping[str, Any], ...] = ()


def kustomization_file(directory: Path) -> Path | None:
    """The directory's kustomization file; kustomize refuses a directory holding two."""
    found = [directory / n for n in KUSTOMIZATION_NAMES if (directory / n).is_file()]
    if len(found) > 1:
        # api/internal/target/kusttarget.go loadKustFile
        raise KustomizeError(f"Found multiple kustomization files under: {directory}")
    return found[0] if found else None


def build(directory: Path, *, overlay: Overlay | None = None) -> Build:
    """Build ``directory`` (its kustomization file, or the generated one)."""
    out = Build()
    docs = _build(directory.resolve(), out, (), overlay)
    kept = []
    for d in docs:
        meta = d.obj.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        if isinstance(meta, dict) and isinstance(annotations, dict):
            if str(annotations.get(_LOCAL)) == "true":
                continue  # kusttarget.go IgnoreLocal: a local-config object is not output
            annotations.pop(PREVIOUS, None)  # each level's own _ORIGIN is gone already (_transform)
            if not annotations:
                del meta["annotations"]
        kept.append(d)
    out.documents = kept
    return out


def _build(
    directory: Path, out: Build, stack: tuple[Path, ...], overlay: Overlay | None,
    read: tuple[Path, dict[str, Any]] | None = None,
) -> list[Document]:
    """One level of the build; ``read``: its kustomization file and spec, already read."""
    if len(stack) >= MAX_DEPTH:
        raise KustomizeError(f"more than {MAX_DEPTH} nested kustomization directories at '{directory}'")
    kfile, spec = read if read is not None else (kustomization_file(directory), None)
    if kfile is None:
        spec = {"resources": _scanned(directory)}
        where = str(directory)
    else:
        spec = spec if spec is not None else _spec(kfile)
        where = str(kfile)
    if overlay is not None:
        spec = _with_overlay(spec, overlay)
    for name in _NOT_APPLIED:
        if spec.get(name):
            out.notes.append(f"{where}: {name} not applied (not modelled): the objects are built without it")
    docs = _accumulate(directory, spec, out, (*stack, directory), where)
    return _transform(directory, spec, docs, out, where)


# api/types/kustomization.go: the fields kustomize reads (DisallowUnknownFields refuses others)
_FIELDS = frozenset({
    "apiVersion", "kind", "metadata", "bases", "buildMetadata", "commonAnnotations", "commonLabels", "components",
    "configMapGenerator", "configurations", "crds", "generatorOptions", "generators", "helmChartInflationGenerator",
    "helmCharts", "helmGlobals", "imageTags", "images", "labels", "namePrefix", "nameSuffix", "namespace", "openapi",
    "patches", "patchesJson6902", "patchesStrategicMerge", "replacements", "replicas", "resources", "secretGenerator",
    "sortOptions", "transformers", "validators", "vars",
})


def _spec(kfile: Path) -> dict[str, Any]:
    """The kustomization file as kustomize reads it (kustomization.go Unmarshal, then
    FixKustomization: ``bases`` join ``resources``, ``imageTags`` join ``images``)."""
    text = yamlio.read_text(kfile)
    value = yamlio.load_one(text, str(kfile)) if text.strip() else {}
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InputError("a kustomization file must be a mapping", file=str(kfile), line=1)
    unknown = next((k for k in value if k not in _FIELDS), None)
    if unknown is not None:
        raise KustomizeError(f'invalid Kustomization: json: unknown field "{unknown}"')
    spec = dict(value)
    for old, new in (("bases", "resources"), ("imageTags", "images")):
        if spec.get(old):
            if not isinstance(spec[old], list) or not isinstance(spec.get(new) or [], list):
                raise KustomizeError(f"invalid Kustomization: {old} must be a list in {kfile}")
            spec[new] = [*(spec.get(new) or []), *spec.pop(old)]
    return spec


def _scanned(directory: Path) -> list[str]:
    """fluxcd/pkg scanManifests: the YAML files under ``directory`` in walk order, a subdirectory
    with a kustomization file as one entry, not descended into."""
    found: list[str] = []

    def walk(d: Path) -> None:
        for p in sorted(d.iterdir(), key=lambda x: x.name):
            if p.is_dir():
                if any((p / n).is_file() for n in KUSTOMIZATION_NAMES):
                    found.append(str(p.relative_to(directory)))
                else:
                    walk(p)
            elif p.suffix in (".yaml", ".yml"):
                found.append(str(p.relative_to(directory)))

    walk(directory)
    return found


def _with_overlay(spec: dict[str, Any], overlay: Overlay) -> dict[str, Any]:
    spec = dict(spec)
    if overlay.patches:
        extra = [{"patch": p.patch, **({"target": _target_dict(p.target)} if p.target else {})} for p in overlay.patches]
        spec["patches"] = [*(spec.get("patches") or []), *extra]
    if overlay.images:
        merged = [dict(i) for i in spec.get("images") or [] if isinstance(i, Mapping)]
        for image in overlay.images:
            same = next((m for m in merged if m.get("name") == image.get("name")), None)
            if same is None:
                merged.append({k: v for k, v in image.items() if v})
                continue
            # fields set only in the kustomization file are kept; newTag and digest go together
            if image.get("newName"):
                same["newName"] = image["newName"]
            if image.get("newTag") or image.get("digest"):
                same["newTag"], same["digest"] = image.get("newTag") or "", image.get("digest") or ""
        spec["images"] = merged
    return spec


def _target_dict(target: Selector) -> dict[str, str]:
    pairs = {
        "group": target.group, "version": target.version, "kind": target.kind, "name": target.name,
        "namespace": target.namespace, "labelSelector": target.label_selector,
        "annotationSelector": target.annotation_selector,
    }
    return {k: v for k, v in pairs.items() if v}


def _remote(entry: str) -> bool:
    return "://" in entry or entry.startswith(("github.com/", "gitlab.com/", "bitbucket.org/", "git@"))


def _accumulate(directory: Path, spec: Mapping[str, Any], out: Build, stack: tuple[Path, ...], where: str) -> list[Document]:
    """api/internal/target/kusttarget.go accumulateResources: each entry as a file, else as a
    base directory, with kustomize's error texts."""
    entries = spec.get("resources") or []
    if not isinstance(entries, list):
        raise KustomizeError(f"invalid Kustomization: resources must be a list in {where}")
    docs: list[Document] = []
    for entry in entries:
        if not isinstance(entry, str):
            raise KustomizeError(f"invalid Kustomization: a resources entry must be a string in {where}")
        if _remote(entry):
            out.notes.append(f"{where}: remote resource {entry} is not read (not modelled): its objects are missing")
            continue
        path = Path(os.path.normpath(directory / entry))
        if path.is_file():
            if not path.is_relative_to(directory):
                # api/loader/fileloader.go: LoadRestrictionsRootOnly (a base directory may lie anywhere)
                raise KustomizeError(
                    f"accumulating resources: accumulation err='accumulating resources from '{entry}': security; file "
                    f"'{path}' is not in or below '{directory}'': must build at directory: '{path}': file is not directory"
                )
            added = _documents(path)
            inner = _duplicate([], added)
            if inner is not None:
                # the file's own objects collide before they are merged: accumulateFile's FromFile error
                raise KustomizeError(
                    f"accumulating resources: accumulation err='accumulating resources from '{entry}': {inner}': "
                    f"must build at directory: '{path}': file is not directory"
                )
            dup = _duplicate(docs, added)
            if dup is not None:
                # accumulateFile: "merging resources from", then the loader refuses a file as a base
                raise KustomizeError(
                    f"accumulating resources: accumulation err='merging resources from '{entry}': {dup}': "
                    f"must build at directory: '{path}': file is not directory"
                )
            docs.extend(added)
            continue
        if not path.is_dir():
            lstat = f"evalsymlink failure on '{path}' : lstat {path}: no such file or directory"
            raise KustomizeError(
                f"accumulating resources: accumulation err='accumulating resources from '{entry}': {lstat}': "
                f"must build at directory: not a valid directory: {lstat}"
            )
        prefix = f"accumulating resources: accumulation err='accumulating resources from '{entry}': '{path}' must resolve to a file'"
        if path in stack:
            # api/loader/fileloader.go New: the base is already on the path being built
            raise KustomizeError(f"{prefix}: cycle detected: candidate root '{path}' contains visited root '{path}'")
        sub = kustomization_file(path)
        if sub is None:
            names = ", ".join(f"'{n}'" for n in KUSTOMIZATION_NAMES[:-1]) + f" or '{KUSTOMIZATION_NAMES[-1]}'"
            raise KustomizeError(
                f"{prefix}: couldn't make target for path '{path}': unable to find one of {names} in directory '{path}'"
            )
        sub_spec = _spec(sub)
        if not sub_spec:
            raise KustomizeError(f"{prefix}: couldn't make target for path '{path}': kustomization.yaml is empty")
        if sub_spec.get("kind") == "Component":
            raise KustomizeError(f"{prefix}: expected kind != 'Component' for path '{path}'")
        try:
            added = _build(path, out, stack, None, (sub, sub_spec))
        except KustomizeError as err:
            raise KustomizeError(f"{prefix}: recursed accumulation of path '{path}': {err}") from None
        dup = _duplicate(docs, added)
        if dup is not None:
            raise KustomizeError(f"{prefix}: recursed merging from path '{path}': {dup}")
        docs.extend(added)
    return docs


def _duplicate(have: Sequence[Document], added: Sequence[Document]) -> str | None:
    """api/resmap/reswrangler.go Append: the refusal of an object whose id is taken."""
    seen = {id_key(d.obj) for d in have}
    for d in added:
        key = id_key(d.obj)
        if key in seen:
            return f"may not add resource with an already registered id: {res_id(d.obj)}"
        seen.add(key)
    return None


def _documents(path: Path) -> list[Document]:
    """The objects of a resource file as kustomize reads them: YAML 1.2 (kyaml, go-yaml v3:
    ``on``, ``yes`` and ``y`` are strings), each document's own text kept only when the
    Kubernetes YAML reader that reads the tree afterwards gets the same values from it."""
    text = yamlio.read_text(path)
    chunks = yamlio.split_documents(text)
    out: list[Document] = []
    for doc in _loose_documents(text, str(path), chunks):
        chunk_text = chunks[doc.index][0] if doc.index < len(chunks) else ""
        try:
            strict = yaml_rs.loads(chunk_text, parse_datetime=False) if chunk_text.strip() else doc.value
        except (yaml_rs.YAMLDecodeError, ValueError, RecursionError):
            strict = doc.value
        value = _go_yaml_v3(doc.value, strict) if doc.value is not _UNREAD else strict
        if value != doc.value:
            chunks[doc.index] = ("", chunks[doc.index][1])  # the text reads otherwise: written out again
        # api/resource/factory.go: any kind ending in List with items is its items
        kind = str(value.get("kind") or "") if isinstance(value, dict) else ""
        items = value.get("items") if isinstance(value, dict) and kind.endswith("List") else None
        chunk = (chunks[doc.index][0] or None) if doc.index < len(chunks) else None
        if isinstance(items, list):
            out.extend(Document(i, str(path), doc.line) for i in items if isinstance(i, dict))
        elif isinstance(value, dict):
            out.append(Document(value, str(path), doc.line, chunk))
    return out


_UNREAD = object()
"""A document the Kubernetes reader refuses and go-yaml v3 reads (see _loose_documents)."""


def _loose_documents(text: str, file: str, chunks: Sequence[tuple[str, int]]) -> list[yamlio.Document]:
    """The file's documents as the Kubernetes reader reads them; a document it refuses only
    for a key repeated under YAML 1.1 (``on:`` beside ``yes:``, both ``true`` there, distinct
    strings for go-yaml v3) is kept unread, to be read as kustomize reads it."""
    try:
        return yamlio.load_documents(text, file)
    except InputError as err:
        if "duplicate mapping key" not in err.message:
            raise
    out: list[yamlio.Document] = []
    for index, (chunk, line) in enumerate(chunks):
        try:
            out.append(yamlio.Document(value=yamlio.load_one(chunk, file, line), index=index, line=line))
        except InputError as err:
            if "duplicate mapping key" not in err.message:
                raise
            try:
                yaml_rs.loads(chunk, parse_datetime=False)
            except (yaml_rs.YAMLDecodeError, ValueError, RecursionError):
                raise err from None
            out.append(yamlio.Document(value=_UNREAD, index=index, line=line))
    return out


def _go_yaml_v3(loose: Any, strict: Any) -> Any:
    """A document as go-yaml v3 (kyaml) reads it, from the Kubernetes reader's value (YAML 1.1
    rules) and the YAML 1.2 core reading: 1.2's strings (``on``, ``yes``, ``y``, ``1_000`` stay
    strings) and 1.2's keys, but integers as Go's ParseInt with base 0 reads them (``0755`` is
    octal: go-yaml v3 resolve.go), which is the 1.1 reading."""
    if isinstance(loose, dict) and isinstance(strict, dict) and len(loose) == len(strict):
        return {k: _go_yaml_v3(lv, sv) for (_, lv), (k, sv) in zip(loose.items(), strict.items(), strict=True)}
    if isinstance(loose, list) and isinstance(strict, list) and len(loose) == len(strict):
        return [_go_yaml_v3(lv, sv) for lv, sv in zip(loose, strict, strict=True)]
    if type(loose) is int and type(strict) is int:
        return loose
    return strict


def _read_patch(directory: Path, entry: Mapping[str, Any], out: Build, where: str, *, psm: Sequence[Any] = ()) -> str:
    """A patch's text: inline, or its file, which must lie in or below the kustomization's
    directory (kustomize's default LoadRestrictionsRootOnly, krusty's and kustomize-controller's)."""
    if entry.get("path") and entry.get("patch"):
        raise KustomizeError("patch and path can't be set at the same time")  # builtins PatchTransformer Config
    if not entry.get("path"):
        return str(entry.get("patch") or "")
    raw = str(entry["path"])
    path = Path(os.path.normpath(directory / raw))
    if psm:
        config = "paths:\n" + "".join(f"- {p}\n" for p in psm)
        prefix = f"trouble configuring builtin PatchStrategicMergeTransformer with config: `\n{config}`: "
    else:
        prefix = f"trouble configuring builtin PatchTransformer with config: `\n{_patch_config(entry)}`: "
        prefix += f"failed to get the patch file from path({raw}): "
    if not path.is_relative_to(directory):
        raise KustomizeError(f"{prefix}security; file '{path}' is not in or below '{directory}'")
    if not path.is_file():
        raise KustomizeError(f"{prefix}evalsymlink failure on '{path}' : lstat {path}: no such file or directory")
    return yamlio.read_text(path)


def _patch_config(entry: Mapping[str, Any]) -> str:
    """A patches entry as kustomize marshals its config into an error (types.Patch field order)."""
    lines = [f"path: {entry['path']}"] if entry.get("path") else []
    target = entry.get("target")
    if isinstance(target, Mapping):
        lines.append("target:")
        for key in ("group", "version", "kind", "name", "namespace", "labelSelector", "annotationSelector"):
            if target.get(key):
                lines.append(f"  {key}: {target[key]}")
    return "\n".join(lines) + "\n"


def _transform(
    directory: Path, spec: Mapping[str, Any], docs: list[Document], out: Build, where: str
) -> list[Document]:
    originals = [copy.deepcopy(d.obj) for d in docs]
    objs: list[dict[str, Any]] = []
    for i, d in enumerate(docs):
        obj = copy.deepcopy(d.obj)
        meta = obj.setdefault("metadata", {}) if isinstance(obj.get("metadata", {}), dict) else {}
        annotations = meta.get("annotations")
        meta["annotations"] = {**(annotations if isinstance(annotations, dict) else {}), _ORIGIN: str(i)}
        objs.append(obj)

    def schema(api_version: str, kind: str) -> smp.Schema | None:
        return smp.schema_for(SCHEMA_VERSION, api_version, kind)

    steps: list[Callable[[list[dict[str, Any]]], list[dict[str, Any]]]] = []

    def patching(entry: patches.Patch) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
        return lambda o: patches.apply(o, entry, schema)

    def each(fn: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
        return lambda o: [fn(x) for x in o]

    entries = _list(spec, "patchesStrategicMerge", where)
    for item in entries:
        text = _read_patch(directory, {"path": item}, out, where, psm=entries) if _is_path(item) else str(item)
        steps.append(_strategic_merge(patches.Patch(text), schema))
    for item in _list(spec, "patches", where):
        if not isinstance(item, Mapping):
            raise KustomizeError(f"invalid Kustomization: a patches entry must be a mapping in {where}")
        target = item.get("target")
        options = item.get("options")
        steps.append(patching(patches.Patch(
            _read_patch(directory, item, out, where),
            Selector.from_dict(target) if isinstance(target, Mapping) else None,
            {str(k): bool(v) for k, v in options.items()} if isinstance(options, Mapping) else {},
        )))
    namespace = spec.get("namespace")
    if isinstance(namespace, str) and namespace:
        steps.append(partial(_namespace_all, namespace=namespace))
    for item in _list(spec, "patchesJson6902", where):
        if not isinstance(item, Mapping) or not isinstance(item.get("target"), Mapping):
            raise KustomizeError(f"invalid Kustomization: a patchesJson6902 entry needs a target in {where}")
        steps.append(patching(patches.Patch(_read_patch(directory, item, out, where), Selector.from_dict(item["target"]))))
    for item in _list(spec, "replicas", where):
        if isinstance(item, Mapping) and item.get("name"):
            steps.append(each(partial(_replicas, name=str(item["name"]), count=item.get("count"))))
    wanted = [images.Image.from_dict(i) for i in _list(spec, "images", where) if isinstance(i, Mapping)]
    if wanted:
        steps.append(each(partial(_imaged, wanted=wanted)))
    for run in steps:
        objs = run(objs)
    built: list[Document] = []
    for obj in objs:
        origin = ((obj.get("metadata") or {}).get("annotations") or {}).get(_ORIGIN)
        index = int(origin) if isinstance(origin, str) and origin.isdigit() and int(origin) < len(docs) else None
        clean = copy.deepcopy(obj)
        anns = clean["metadata"]["annotations"]
        anns.pop(_ORIGIN, None)
        if not anns:
            del clean["metadata"]["annotations"]
        if index is None:
            built.append(Document(clean, where, 1))
            continue
        source = docs[index]
        unchanged = clean == originals[index]
        built.append(Document(clean, source.file, source.line, source.text if unchanged else None))
    return built


def _strategic_merge(entry: patches.Patch, schema: patches.SchemaFor) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """api/builtins/PatchStrategicMergeTransformer.go: the patch's target is the object with
    its id (resmap GetById's error, without PatchTransformer's wrapping)."""

    def run(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            return patches.apply(objs, entry, schema)
        except KustomizeError as err:
            text = str(err)
            cut = text.find('": ') if text.startswith("no resource matches strategic merge patch") else -1
            raise KustomizeError(text[cut + 3:] if cut >= 0 else text) from None

    return run


def _list(spec: Mapping[str, Any], name: str, where: str) -> list[Any]:
    value = spec.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise KustomizeError(f"invalid Kustomization: {name} must be a list in {where}")
    return value


def _is_path(item: Any) -> bool:
    """A patchesStrategicMerge entry is an inline patch when it reads as objects
    (api/internal/target/kusttarget.go: SliceFromBytes first), else a file path."""
    if not isinstance(item, str):
        return False
    if "\n" in item.strip():
        return False  # several lines: an inline patch (a path has one)
    try:
        value = yamlio.load_one(item, "patchesStrategicMerge")
    except InputError:
        return True
    return not (isinstance(value, dict) and ("kind" in value or "apiVersion" in value))


def _namespaced(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """api/filters/namespace/namespace.go: metadata.namespace of every object kustomize does not
    know to be cluster-scoped, the name of a ``v1`` Namespace, the namespace of
    (Cluster)RoleBinding subjects named ``default`` (setRoleBindingSubjects: defaultOnly), and the
    Service namespaces of api/internal/konfig/builtinpluginconsts/namespace.go (an APIService's,
    created; a CRD's conversion webhook's). The id before is kept (StorePreviousId)."""
    kind = str(obj.get("kind") or "")
    api_version = str(obj.get("apiVersion") or "")
    meta = obj.setdefault("metadata", {})
    before = [str(meta.get("namespace") or ""), str(meta.get("name") or "")]
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    earlier = json.loads(annotations[PREVIOUS]) if isinstance(annotations.get(PREVIOUS), str) else []
    annotations[PREVIOUS] = json.dumps([*earlier, before])
    meta["annotations"] = annotations
    if kind not in CLUSTER_SCOPED_KINDS:
        meta["namespace"] = namespace
    if kind == "Namespace" and api_version == "v1":
        meta["name"] = namespace
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        for subject in obj.get("subjects") or ():
            if isinstance(subject, dict) and subject.get("name") == "default":
                subject["namespace"] = namespace
    spec = obj.get("spec")
    if kind == "APIService" and api_version.startswith("apiregistration.k8s.io/") and isinstance(spec, dict):
        service = spec.setdefault("service", {})
        if isinstance(service, dict):
            service["namespace"] = namespace
    if kind == "CustomResourceDefinition" and api_version.startswith("apiextensions.k8s.io/") and isinstance(spec, dict):
        service = (((spec.get("conversion") or {}).get("webhook") or {}).get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service["namespace"] = namespace
    return obj


def _namespace_all(objs: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """NamespaceTransformer.Transform: each object, then its id must be unique."""
    out = [_namespaced(o, namespace) for o in objs]
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for o in out:
        key = id_key(o)
        if key in seen:
            # the conflict as helmsim lists it (upstream prints the resources with %+v)
            raise KustomizeError(f"namespace transformation produces ID conflict: [{res_id(seen[key])} {res_id(o)}]")
        seen[key] = o
    return out


def _replicas(obj: dict[str, Any], name: str, count: Any) -> dict[str, Any]:
    """api/filters/replicacount: ``spec.replicas`` of the workloads named ``name``."""
    if obj.get("kind") in _REPLICA_KINDS and (obj.get("metadata") or {}).get("name") == name:
        obj.setdefault("spec", {})["replicas"] = count
    return obj


def _imaged(obj: dict[str, Any], wanted: Sequence[images.Image]) -> dict[str, Any]:
    images.apply(obj, list(wanted))
    return obj


class _Dumper(yaml.SafeDumper):
    """YAML as kyaml writes a built object: plain scalars, a string quoted only where the tree's
    reader (Kubernetes YAML rules) would read it as something else (``y``, ``0755``, ``on``), so
    postBuild's ``${var}`` stays plain and substitutes as it does in kustomize-controller."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    try:
        plain = yamlio.load_one(value, "<built>") == value
    except InputError:
        plain = False
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=None if plain else '"')


_Dumper.add_representer(str, _represent_str)


def _yaml_text(obj: Mapping[str, Any]) -> str:
    return yaml.dump(dict(obj), Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1 << 20)


def document_text(doc: Document) -> str:
    """The document as YAML text starting at its line (its own text when unchanged)."""
    body = doc.text if doc.text is not None else _yaml_text(doc.obj)
    return "\n" * (doc.line - 1) + body.strip("\n") + "\n"


__all__ = ["Build", "Document", "KUSTOMIZATION_NAMES", "Overlay", "build", "document_text", "kustomization_file"]
