"""Find HelmReleases (and the ConfigMaps/Secrets their valuesFrom names) in files, and pair each
HelmRelease with a local chart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct, field

from helmsim import yamlio
from helmsim.errors import InputError
from helmsim.flux.helmrelease import HelmRelease, is_helmrelease, parse_helmrelease
from helmsim.flux.treefiles import read_tree_files

if TYPE_CHECKING:
    from helmsim.kustomize.build import Overlay


class FluxTree(Struct, frozen=True):
    """HelmReleases in input order and every other object found beside them."""

    helmreleases: tuple[HelmRelease, ...]
    objects: tuple[Mapping[str, Any], ...]
    sources: tuple[tuple[str, int], ...] = ()
    """The file and line of each of ``objects`` (same order)."""
    via: Mapping[str, str] = field(default_factory=dict)
    """Files a kustomization directory built from outside itself, each mapped to that
    directory: what applies the directory applies their objects (helmsim.flux.treefiles)."""
    notes: tuple[str, ...] = ()
    """What the kustomize builds of the tree did not apply."""
    artifacts: Mapping[str, str] = field(default_factory=dict)
    """Each ExternalArtifact (``namespace/name``) a Kustomization builds from, as the directory
    it was materialized into (helmsim.flux.artifacts)."""
    renames: Mapping[str, str] = field(default_factory=dict)
    """Each artifact file, mapped to the file it was copied from."""

    def applied_from(self, file: str) -> str:
        """Where ``file``'s objects are applied from: the directory that built it, else itself."""
        return self.via.get(str(Path(file).resolve()), file)


def load_flux_tree(
    paths: Sequence[str],
    overlays: Mapping[Path, Overlay] | None = None,
    artifacts: Mapping[str, str] | None = None,
    renames: Mapping[str, str] | None = None,
) -> FluxTree:
    """HelmReleases and other objects from YAML files or directories (``kind: List`` too), each
    kustomization directory as kustomize builds it (``overlays``: what a Kustomization adds to
    the build of its path; ``artifacts`` and ``renames``: the ExternalArtifacts materialized)."""
    read = read_tree_files(paths, overlays, renames)
    tree = flux_tree_from_files(read.files, via=read.via, notes=tuple(read.notes))
    return msgspec.structs.replace(tree, artifacts=dict(artifacts or {}), renames=dict(renames or {}))


def flux_tree_from_files(
    files: Sequence[tuple[str, str]], *, namespace: str | None = None, rendered: bool = False,
    via: Mapping[str, str] | None = None, notes: tuple[str, ...] = (),
) -> FluxTree:
    """HelmReleases and other objects from ``(path, text)`` pairs, e.g. a rendered meta-chart;
    objects without a namespace get ``namespace`` when given. ``rendered``: the texts are Helm's
    output, decoded as Helm's kube client does (a repeated key keeps its last value)."""
    hrs: list[HelmRelease] = []
    objects: list[Mapping[str, Any]] = []
    sources: list[tuple[str, int]] = []
    for file, text in files:
        chunks = dict(enumerate(c for c, _ in yamlio.split_documents(text)))
        for doc in yamlio.load_documents(text, file, last_key_wins=rendered):
            values = doc.value.get("items") if isinstance(doc.value, dict) and doc.value.get("kind") == "List" else [doc.value]
            if values is not None and not isinstance(values, list):
                raise InputError("items of a List is not a list", file=file, line=doc.line)
            for obj in values or ():
                if not isinstance(obj, dict):
                    continue
                meta = obj.get("metadata")
                if namespace and isinstance(meta, dict) and not meta.get("namespace"):
                    obj = {**obj, "metadata": {**meta, "namespace": namespace}}
                if is_helmrelease(obj):
                    chunk = chunks.get(doc.index, "")
                    hrs.append(
                        parse_helmrelease(obj, source=file, line=doc.line, lines=yamlio.key_lines(chunk))
                    )
                else:
                    objects.append(obj)
                    sources.append((file, doc.line))
    seen: dict[str, HelmRelease] = {}
    for hr in hrs:
        if hr.ref in seen:
            raise InputError(f"HelmRelease {hr.ref} is defined twice", file=hr.source)
        seen[hr.ref] = hr
    return FluxTree(tuple(hrs), tuple(objects), tuple(sources), dict(via or {}), notes)


def parse_chart_map(items: Sequence[str]) -> dict[str, str]:
    """``--chart NAME=PATH`` items: chart name (or HelmRelease name) → local chart path."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--chart {item!r}: expected NAME=PATH")
        if not Path(path).exists():
            raise InputError("chart not found", file=path)
        out[name] = path
    return out


def chart_for(hr: HelmRelease, charts: Mapping[str, str]) -> str | None:
    """The local chart mapped to ``hr`` by its chart name, its name or ``namespace/name``."""
    for key in (hr.chart_name, hr.name, hr.ref):
        if key in charts:
            return charts[key]
    return None


def default_helmrelease(name: str, namespace: str) -> HelmRelease:
    """A HelmRelease with Flux's defaults for a chart given without one."""
    return parse_helmrelease(
        {
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"interval": "10m", "releaseName": name},
        }
    )


def chart_name_of(path: str) -> str:
    """The ``name`` in a chart's Chart.yaml (directory charts); the file stem otherwise."""
    p = Path(path)
    chart_yaml = p / "Chart.yaml"
    if chart_yaml.is_file():
        meta = yamlio.load_one(yamlio.read_text(chart_yaml, "Chart.yaml"), str(chart_yaml))
        if isinstance(meta, dict) and meta.get("name"):
            return str(meta["name"])
    return p.name.split("-")[0] if p.suffix == ".tgz" else p.name


__all__ = [
    "FluxTree",
    "chart_for",
    "chart_name_of",
    "default_helmrelease",
    "load_flux_tree",
    "parse_chart_map",
]
