"""helm-controller's post-renderers, run inside Helm's install and upgrade.

fluxcd/helm-controller internal/postrender/build.go BuildPostRenderers: each
``spec.postRenderers[].kustomize`` (patches, then images, through kustomize's krusty,
internal/postrender/kustomize.go), then ``spec.commonMetadata`` (labels, annotations), then the
origin labels ``helm.toolkit.fluxcd.io/name`` and ``/namespace`` that every HelmRelease gets
(common_renderer.go OriginLabels), so Helm always post-renders under Flux.

helm/helm pkg/action/action.go renderResources: with ``postRenderStrategy`` ``combined`` (the
default) hooks and manifests go through the post-renderers as one stream, ``separate`` as two,
``nohooks`` leaves hooks alone (internal/action/post_render.go). The documents travel through
kustomize's YAML (kyaml, YAML 1.2: ``on``/``yes`` are strings), and a failure is Helm's
``error while running post render on files: <kustomize's error>``, returned before any release
is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
from typing import Any

import yaml_rs

from helmsim import yamlio
from helmsim.flux.helmrelease import HelmRelease, PostRenderer
from helmsim.kube.nulls import drop_nulls
from helmsim.kustomize import KustomizeError, images, patches, smp
from helmsim.kustomize.select import Selector, id_key, res_id
from helmsim.manifests import HOOK_ANNOTATION, HOOK_EVENTS, Source, read_objects

ORIGIN_GROUP = "helm.toolkit.fluxcd.io"  # api/v2 GroupVersion.Group
Objects = list[tuple[Source, dict[str, Any]]]
Renderer = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


class PostRenderError(Exception):
    """Helm's error when a post-renderer fails (the text helm-controller reports).

    ``template`` names the chart's template when the chart's own output is what the
    post-renderers refuse (two objects with one id: ``helm template`` prints both, every
    helm-controller install refuses them), whatever post-renderers the HelmRelease declares."""

    def __init__(self, message: str, template: str | None = None) -> None:
        super().__init__(message)
        self.template = template


class _DuplicateId(KustomizeError):
    """resWrangler.Append's refusal of a second object with one id (in ``template``)."""

    def __init__(self, message: str, template: str | None) -> None:
        super().__init__(message)
        self.template = template


def _read(files: Sequence[tuple[str, str]]) -> Objects:
    """The documents as kyaml reads them (annotateAndMerge: files in name order, partials and
    empty files skipped; go-yaml v3, i.e. YAML 1.2 scalars)."""
    out: Objects = []
    for path, text in sorted(files, key=lambda f: f[0]):
        if PurePosixPath(path).name.startswith("_") or not text.strip():
            continue
        for index, (chunk, line) in enumerate(yamlio.split_documents(text)):
            if not chunk.strip():
                continue
            try:
                value = yaml_rs.loads(chunk, parse_datetime=False)
            except (yaml_rs.YAMLDecodeError, ValueError, RecursionError):
                value = None
            if value is None:
                # what yaml_rs cannot read is read as helmsim reads manifests (errors name the line)
                out.extend(read_objects([(path, "\n" * (line - 1) + chunk)]))
                continue
            if isinstance(value, dict):
                source = Source(path=path, index=index, line=line)
                if value.get("kind") == "List" and isinstance(value.get("items"), list):
                    out.extend((source, drop_nulls(i)) for i in value["items"] if isinstance(i, dict))
                else:
                    out.append((source, drop_nulls(value)))
            else:
                out.extend(read_objects([(path, "\n" * (line - 1) + chunk)]))
    return out


def _check_unique(objs: list[dict[str, Any]], accumulating: bool) -> None:
    """resWrangler.Append: two objects with one id are refused."""
    seen: set[tuple[Any, ...]] = set()
    for obj in objs:
        key = id_key(obj)
        if key in seen:
            text = f"may not add resource with an already registered id: {res_id(obj)}"
            if accumulating:
                # krusty accumulating helm-output.yaml (kustomize.go: the rendered stream is the
                # kustomization's one resource); the wrapping is kustomize's accumulateResources
                text = (
                    f"accumulating resources: accumulation err='accumulating resources from "
                    f"'helm-output.yaml': {text}': must build at directory: '/helm-output.yaml': "
                    "file is not directory"
                )
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            raise _DuplicateId(text, str(annotations.get(FILENAME) or "") or None)
        seen.add(key)


def _kustomize(renderer: PostRenderer, kube_version: str) -> Renderer:
    spec = renderer.kustomize
    assert spec is not None
    wanted = [images.Image(i.name, i.new_name or "", i.new_tag or "", i.digest or "") for i in spec.images]
    entries = [
        patches.Patch(p.patch, Selector.from_dict(p.target.model_dump(by_alias=True)) if p.target else None)
        for p in spec.patches
    ]

    def schema(api_version: str, kind: str) -> smp.Schema | None:
        return smp.schema_for(kube_version, api_version, kind)

    def run(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        _check_unique(objs, accumulating=True)
        # kustomize's builtin transformer order: patches, then images (kusttarget.go)
        for entry in entries:
            objs = patches.apply(objs, entry, schema)
        for obj in objs:
            images.apply(obj, wanted)
        return objs

    return run


def _metadata(field: str, values: dict[str, str]) -> Renderer:
    """builtins Label/AnnotationsTransformerPlugin on ``metadata/<field>``, creating it."""

    def run(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        _check_unique(objs, accumulating=False)
        for obj in objs:
            meta = obj.setdefault("metadata", {})
            if not isinstance(meta.get(field), dict):
                meta[field] = {}
            meta[field].update(values)
        return objs

    return run


def renderers(hr: HelmRelease, kube_version: str) -> list[Renderer]:
    """BuildPostRenderers: kustomize renderers, common metadata, then the origin labels."""
    out = [_kustomize(r, kube_version) for r in hr.spec.post_renderers if r.kustomize is not None]
    common = hr.spec.common_metadata
    if common is not None:
        if common.labels:
            out.append(_metadata("labels", dict(common.labels)))
        if common.annotations:
            out.append(_metadata("annotations", dict(common.annotations)))
    # common_renderer.go originLabels: <group>/name and <group>/namespace of the HelmRelease
    out.append(_metadata("labels", {f"{ORIGIN_GROUP}/name": hr.name, f"{ORIGIN_GROUP}/namespace": hr.namespace}))
    return out


def _is_hook(obj: dict[str, Any]) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(HOOK_ANNOTATION) if isinstance(annotations, dict) else None
    return isinstance(value, str) and all(e.strip().lower() in HOOK_EVENTS for e in value.split(","))


FILENAME = "postrenderer.helm.sh/postrender-filename"  # helm/helm pkg/action/action.go


def _run(group: Objects, chain: list[Renderer], what: str) -> Objects:
    """annotateAndMerge → the post-renderers → splitAndDeannotate: each document carries its
    file name in an annotation through the renderers and is matched back to its template."""
    from helmsim.cluster.store import clone  # the renderers change the bodies in place

    bodies: list[dict[str, Any]] = []
    for source, body in group:
        body = clone(body)
        head = body.setdefault("metadata", {})
        if not isinstance(head.get("annotations"), dict):
            head["annotations"] = {}
        head["annotations"][FILENAME] = source.path
        bodies.append(body)
    try:
        for render in chain:
            bodies = render(bodies)
    except _DuplicateId as err:
        raise PostRenderError(f"error while running post render on {what}: {err}", err.template or "the chart's output") from None
    except KustomizeError as err:
        raise PostRenderError(f"error while running post render on {what}: {err}") from None
    by_id: dict[tuple[Any, tuple[Any, ...]], Source] = {}
    by_path: dict[Any, Source] = {}
    for src, orig in group:
        by_id.setdefault((src.path, id_key(orig)), src)
        by_path.setdefault(src.path, src)
    out: Objects = []
    for i, body in enumerate(bodies):
        raw_meta = body.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        raw_annotations = meta.get("annotations")
        annotations: dict[str, Any] = raw_annotations if isinstance(raw_annotations, dict) else {}
        path = annotations.pop(FILENAME, None)
        if not annotations and "annotations" in meta:
            del meta["annotations"]
        found = by_id.get((path, id_key(body))) or by_path.get(path)
        # splitAndDeannotate: a document without the annotation gets a made-up file name
        source = found or Source(path=f"generated-by-postrender-{i}.yaml", index=0, line=1)
        out.append((source, drop_nulls(body)))
    return out


def post_render(hr: HelmRelease, files: Sequence[tuple[str, str]], *, kube_version: str) -> Objects:
    """The rendered ``files`` after helm-controller's post-renderers, each object with its
    template source; PostRenderError with Helm's text when one fails."""
    objs = _read(files)
    if not objs:
        return objs
    chain = renderers(hr, kube_version)
    strategy = hr.spec.post_render_strategy or "combined"
    if strategy == "combined":
        return _run(objs, chain, "files")
    hooks = [o for o in objs if _is_hook(o[1])]
    manifests = [o for o in objs if not _is_hook(o[1])]
    out: Objects = []
    if hooks:
        out += _run(hooks, chain, "hooks") if strategy == "separate" else hooks
    if manifests:
        out += _run(manifests, chain, "manifests")
    return sorted(out, key=lambda o: (o[0].path, o[0].index))




def helmrelease_for_chart(paths: Sequence[str], chart: str) -> HelmRelease | None:
    """The HelmRelease among ``paths`` (files or directories) that releases ``chart``: the one
    whose chart name is the chart's, else the only one; None when ``paths`` is empty."""
    from helmsim.errors import InputError
    from helmsim.flux.inputs import chart_name_of, load_flux_tree

    if not paths:
        return None
    hrs = list(load_flux_tree(list(paths)).helmreleases)
    if not hrs:
        raise InputError("no HelmRelease (helm.toolkit.fluxcd.io) found", file=paths[0])
    name = chart_name_of(chart)
    match = [hr for hr in hrs if hr.chart_name == name] or (hrs if len(hrs) == 1 else [])
    if not match:
        raise InputError(f"none of the HelmReleases uses chart {name!r}", file=paths[0])
    return match[0]


def as_template(objects: Objects) -> str:
    """Post-rendered objects as ``helm template`` prints a manifest (``# Source:`` per document)."""
    import yaml

    out = []
    for source, body in objects:
        out.append(f"---\n# Source: {source.path}\n" + yaml.safe_dump(body, sort_keys=False, allow_unicode=True))
    return "".join(out)


__all__ = ["ORIGIN_GROUP", "PostRenderError", "as_template", "helmrelease_for_chart", "post_render", "renderers"]
