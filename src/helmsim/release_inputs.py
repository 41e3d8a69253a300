"""What the user points at (a chart, a Flux tree, a meta-chart) → the ReleaseInputs to simulate.

Shared by ``simulate``, ``check``, ``diff --rehearse``, scenario files and the pytest plugin.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from helmsim import gitref
from helmsim import render as rendering
from helmsim.errors import InputError
from helmsim.flux import inputs as flux_inputs
from helmsim.flux.helmrelease import HelmRelease
from helmsim.flux import kustomization
from helmsim.flux import postbuild, sources
from helmsim.inputs import load_release
from helmsim.flux.treefiles import read_tree_files, shown
from helmsim.flux.sources import VALUES_ERROR, SourceFailure
from helmsim.simulate import ChartSource, ReleaseInput, ValuesError, values_from_refs

if TYPE_CHECKING:
    from helmsim.kustomize.build import Overlay


def build_inputs(
    target: str,
    *,
    values: Sequence[str] = (),
    sets: Sequence[str | rendering.SetValue] = (),
    helmrelease: Sequence[str] = (),
    charts: Sequence[str] = (),
    release_name: str | None = None,
    namespace: str = rendering.DEFAULT_NAMESPACE,
    upgrade_from: str | None = None,
    upgrade_from_values: Sequence[str] = (),
    upgrade_from_set: Sequence[str] = (),
    repository_root: str | None = None,
) -> list[ReleaseInput]:
    """Pair HelmReleases with charts from the command line (shared by simulate and check), each
    chart resolved as Flux's sources would serve it (:func:`helmsim.flux.sources.resolve`);
    GitRepository chart paths are read under ``repository_root`` (default: the git work tree
    holding ``target``). Every option defaults to what the command line leaves out."""
    root = _root(repository_root, target)
    chart_map = flux_inputs.parse_chart_map(charts)
    user_values = rendering.load_values(values, sets)
    previous_values = rendering.load_values(upgrade_from_values, upgrade_from_set)
    is_chart = rendering.is_chart_dir(Path(target))
    for given in helmrelease:
        if not flux_inputs.load_flux_tree([given]).helmreleases:
            raise InputError("no HelmRelease (helm.toolkit.fluxcd.io) found", file=given)
    paths = helmrelease if is_chart else [target, *helmrelease]
    tree, paths, overlays = _flux_tree(list(paths), root, target)
    tree, build_errors, build_notes = _post_build(tree, paths, root, target, overlays)
    build_notes = [*tree.notes, *build_notes]
    tree = _target_namespaces(tree, root, target)
    if is_chart and not helmrelease and _may_render_helmreleases(Path(target), user_values):
        meta = _meta_chart_tree(target, user_values, release_name, namespace, tuple(values))
        if meta is not None:
            tree, is_chart, user_values = meta, False, {}
    hrs = list(tree.helmreleases)
    main_ref: str | None = None
    if is_chart:
        name = flux_inputs.chart_name_of(target)
        match = [hr for hr in hrs if hr.chart_name == name] or (hrs if len(hrs) == 1 else [])
        defaulted = not hrs
        if not hrs:
            hr = flux_inputs.default_helmrelease(release_name or name, namespace)
            hrs = [hr]
            match = [hr]
        if not match:
            raise InputError(
                f"none of the HelmReleases uses chart {name!r}; name it with --chart NAME={target}",
                file=helmrelease[0] if helmrelease else None,
            )
        main_ref = match[0].ref
        chart_map.setdefault(match[0].chart_name, target)
    elif not hrs:
        raise InputError("no HelmRelease found (and not a chart directory)", file=target)
    else:
        defaulted = False
    units = _kustomizations(tree, root, target, build_errors)
    out: list[ReleaseInput] = []
    for hr in hrs:
        path = chart_map.get(hr.chart_name) if hr.ref == main_ref else flux_inputs.chart_for(hr, chart_map)
        mine = hr.ref == main_ref or not is_chart
        resolved = sources.resolve(hr, path, tree.objects, root)
        path = resolved.path
        source = ChartSource(path, user_values if mine else {}, tuple(values) if mine else ()) if path else None
        prev = None
        if upgrade_from is not None and path is not None and (hr.ref == main_ref or main_ref is None):
            prev = ChartSource(upgrade_from, previous_values, tuple(upgrade_from_values))
        failure = resolved.failure
        try:
            from_refs = values_from_refs(hr, tree.objects)
        except ValuesError as err:
            # helmrelease_controller.go reconcileRelease: after the source is ready, values are
            # composed; a reference that does not resolve is Ready=False ValuesError, retried
            from_refs = {}
            if failure is None and source is not None:
                failure = SourceFailure("", hr.namespace, hr.name, str(err), reason=VALUES_ERROR)
                source, prev = None, None
        out.append(
            ReleaseInput(
                hr,
                source,
                previous=prev,
                values_from=from_refs,
                defaulted=defaulted,
                source_failure=failure,
                notes=(*resolved.notes, *_unmodelled(hr), *(build_notes if not out else ())),
                tree_objects=tree.objects,
                kustomizations=units,
            )
        )
    used = {r.hr.chart_name for r in out} | {r.hr.name for r in out} | {r.hr.ref for r in out}
    unused = sorted(set(flux_inputs.parse_chart_map(charts)) - used)
    if unused:
        known = ", ".join(sorted({r.hr.chart_name for r in out}))
        raise InputError(f"--chart {unused[0]}=…: no HelmRelease uses chart {unused[0]!r} (charts: {known})")
    if not any(r.chart is not None or r.source_failure is not None for r in out):
        known = ", ".join(sorted({r.hr.chart_name for r in out}))
        raise InputError(
            f"nothing to simulate: no HelmRelease is mapped to a local chart; map one with "
            f"--chart NAME=PATH (charts: {known})",
            file=target,
        )
    return out


def _unmodelled(hr: HelmRelease) -> list[str]:
    """Notes for HelmRelease fields that change a rollout and are not simulated (said, not guessed)."""
    out = []
    exprs = [d.name for d in hr.spec.depends_on if d.ready_expr]
    if exprs:
        # helmrelease_controller.go checkDependencies: a readyExpr replaces the Ready check
        # (added to it under the AdditiveCELDependencyCheck feature gate)
        out.append(
            f"HelmRelease {hr.ref}: the readyExpr of dependsOn {', '.join(exprs)} is not evaluated; the simulation "
            "waits for the dependency's Ready condition instead"
        )
    set_fields = [
        f"{action}.{yaml}"
        for action in ("install", "upgrade", "rollback", "uninstall")
        for attr, yaml in (
            ("server_side_apply", "serverSideApply"), ("force", "force"), ("cleanup_on_fail", "cleanupOnFail"),
            ("disable_schema_validation", "disableSchemaValidation"), ("preserve_values", "preserveValues"),
            ("replace", "replace"), ("deletion_propagation", "deletionPropagation"),
        )
        if getattr(getattr(hr.spec, action), attr) not in (None, False)
    ]
    chart = hr.spec.chart.spec if hr.spec.chart is not None else None
    if chart is not None and (chart.values_files or chart.values_file):
        set_fields.append("chart.spec.valuesFiles")
    if hr.spec.kube_config:
        set_fields.append("kubeConfig")
    if set_fields:
        out.append(f"HelmRelease {hr.ref}: spec.{', spec.'.join(set_fields)} not modelled (the simulation runs without them)")
    if hr.spec.health_check_exprs:
        out.append(
            f"HelmRelease {hr.ref}: spec.healthCheckExprs are not evaluated; custom resources' health is read with "
            "kstatus's generic rules (docs/kstatus.md)"
        )
    return out


_KIND = b"HelmRelease"


def _may_render_helmreleases(chart: Path, values: dict[str, object]) -> bool:
    """False when neither the values given nor any file of the chart (its subcharts and their
    archives included) contains ``HelmRelease``: no template can then write that kind, short of
    assembling the word from pieces, and the probe render of a meta-chart is skipped."""
    if _KIND.decode() in repr(values):
        return True
    try:
        if chart.is_file():
            return _mentions(chart.name, chart.read_bytes())
        return any(_mentions(p.name, p.read_bytes()) for p in sorted(chart.rglob("*")) if p.is_file())
    except OSError:
        return True  # what cannot be read here, the probe render reports


def _mentions(name: str, data: bytes, depth: int = 0) -> bool:
    """Whether a chart file, or a member of a chart archive (nested archives included), contains
    ``HelmRelease``; an archive that cannot be read is assumed to, and its render reports it."""
    if not name.endswith((".tgz", ".tar.gz")):
        return _KIND in data
    if depth > 3:
        return True
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            for member in tar:
                handle = tar.extractfile(member) if member.isfile() else None
                if handle is not None and _mentions(member.name, handle.read(), depth + 1):
                    return True
    except (OSError, tarfile.TarError, EOFError):
        return True
    return False


def _meta_chart_tree(
    target: str, values: dict[str, object], release_name: str | None, namespace: str,
    values_files: tuple[str, ...] = (),
) -> flux_inputs.FluxTree | None:
    """A chart that renders HelmReleases (a meta-chart) is read as the Flux tree it renders."""
    opts = rendering.RenderOptions(
        release_name=release_name or rendering.DEFAULT_RELEASE_NAME, namespace=namespace, values=values,
        values_files=values_files,
    )
    rendered = load_release(target, opts)
    tree = flux_inputs.flux_tree_from_files(list(rendered.files), namespace=namespace, rendered=True)
    return tree if tree.helmreleases else None


def _kustomizations(
    tree: flux_inputs.FluxTree, root: Callable[[], Path | None], target: str,
    build_errors: dict[str, str] | None = None,
) -> tuple[kustomization.Unit, ...]:
    """The tree's Kustomizations with what each applies; ``spec.path`` is read under the
    repository root, else under the directory given."""
    if not any(kustomization.is_kustomization(o) for o in tree.objects):
        return ()
    here = Path(target) if Path(target).is_dir() else Path(target).parent
    return kustomization.load_units(tree, [p for p in (root(), here) if p is not None], build_errors)


MAX_KUSTOMIZATION_PATHS = 256
"""Kustomization paths read beyond the input, at most (each may name more)."""


def _flux_tree(
    paths: list[str], root: Callable[[], Path | None], target: str
) -> tuple[flux_inputs.FluxTree, list[str], dict[Path, Overlay]]:
    """The tree as kustomize-controller applies it: every Kustomization's ``spec.path`` read
    (under the repository root, else the target's directory) when the input does not already
    hold it or lie inside it, and built with what the Kustomization adds (``spec.patches``,
    ``spec.images``); returns the tree, the paths read and those overlays."""
    overlays: dict[Path, Overlay] = {}
    overlay_of: dict[Path, str] = {}
    artifacts: dict[str, str] = {}
    renames: dict[str, str] = {}
    notes: list[str] = []
    here = Path(target) if Path(target).is_dir() else Path(target).parent
    for _ in range(MAX_KUSTOMIZATION_PATHS + 1):
        tree = flux_inputs.load_flux_tree(paths, overlays, artifacts, renames)
        inputs = [Path(p).resolve() for p in paths if p != "-" and Path(p).is_dir()]
        changed = False
        for obj, (file, line) in zip(tree.objects, tree.sources, strict=False):
            if not kustomization.is_kustomization(obj):
                continue
            ks = kustomization.parse_kustomization(obj, source=file, line=line)
            key = kustomization.artifact_key(ks)
            ns, _, name = (key or "").partition("/")
            from helmsim.flux import artifacts as flux_artifacts  # only a tree with ExternalArtifacts needs it

            found = flux_artifacts.find(tree.objects, tree.sources, ns, name) if key and key not in artifacts else None
            if key is not None and found is not None:
                made = flux_artifacts.materialize(*found, root(), _scratch() / _artifact_dir(root(), ns, name))
                artifacts[key] = str(made.root)
                renames.update(made.files)
                notes.extend(n for n in made.notes if n not in notes)
                changed = True
                continue
            search = [Path(artifacts[key])] if key in artifacts else [p for p in (root(), here) if p is not None]
            directory = kustomization.resolve_path(ks.spec.path, search)
            if directory is None:
                continue
            wanted = kustomization.overlay_of(ks)
            if wanted is not None and overlays.get(directory) != wanted:
                if overlay_of.get(directory, ks.ref) != ks.ref:
                    raise InputError(
                        shown(
                            f"Kustomizations {overlay_of[directory]} and {ks.ref} both build {directory} with their own "
                            "spec.patches or spec.images: one path built twice is not modelled",
                            renames,
                        ),
                        file=file, line=line,
                    )
                overlays[directory] = wanted
                overlay_of[directory] = ks.ref
                changed = True
            related = any(directory.is_relative_to(i) or i.is_relative_to(directory) for i in inputs)
            if not related:
                if len(paths) >= MAX_KUSTOMIZATION_PATHS:
                    raise InputError(
                        f"more than {MAX_KUSTOMIZATION_PATHS} Kustomization paths to read (limit)", file=file, line=line
                    )
                paths.append(str(directory))
                inputs.append(directory)
                changed = True
        if not changed:
            return msgspec.structs.replace(tree, notes=(*notes, *tree.notes)), paths, overlays
    raise InputError(f"more than {MAX_KUSTOMIZATION_PATHS} rounds of Kustomization paths (limit)", file=target)


@cache
def _scratch() -> Path:
    """The directory of the ExternalArtifacts this process materializes (one, removed at exit)."""
    made = Path(tempfile.mkdtemp(prefix="helmsim-artifacts-"))
    atexit.register(shutil.rmtree, made, True)
    return made


def _artifact_dir(root: Path | None, namespace: str, name: str) -> str:
    """Where one artifact of one repository is materialized (each call copies it there again)."""
    digest = hashlib.sha256(f"{root}\0{namespace}\0{name}".encode()).hexdigest()[:12]
    return f"{namespace}/{name}-{digest}"


def _setting(tree: flux_inputs.FluxTree, field: str) -> list[Mapping[str, Any]]:
    """The tree's Kustomizations whose ``spec`` sets ``field``."""
    return [
        o for o in tree.objects
        if kustomization.is_kustomization(o) and isinstance(o.get("spec"), dict) and o["spec"].get(field)
    ]


def _target_namespaces(
    tree: flux_inputs.FluxTree, root: Callable[[], Path | None], target: str
) -> flux_inputs.FluxTree:
    """What a Kustomization with ``spec.targetNamespace`` applies, HelmReleases and namespaced
    objects alike, in that namespace (kustomize's namespace transformer, which
    kustomize-controller's generator configures: internal/generator kustomize_generator.go)."""
    from helmsim.kube.scope import CLUSTER_SCOPED_KINDS

    if not _setting(tree, "targetNamespace"):
        return tree
    units = _kustomizations(tree, root, target)
    by_owner = {hr: u.ks.spec.target_namespace for u in units if u.ks.spec.target_namespace for hr in u.helmreleases}
    moved = {id(o): u.ks.spec.target_namespace for u in units if u.ks.spec.target_namespace for o in u.objects}
    if not by_owner and not moved:
        return tree
    hrs = tuple(
        hr.model_copy(update={"namespace": by_owner[hr.ref]}) if hr.ref in by_owner else hr for hr in tree.helmreleases
    )
    def moved_object(o: Mapping[str, Any]) -> Mapping[str, Any]:
        if id(o) not in moved or not isinstance(o.get("metadata"), dict):
            return o
        if o.get("kind") == "Namespace" and o.get("apiVersion") == "v1":
            # api/filters/namespace/namespace.go: the namespace field specs name a v1 Namespace's metadata/name
            return {**o, "metadata": {**o["metadata"], "name": moved[id(o)]}}
        if o.get("kind") in CLUSTER_SCOPED_KINDS:
            return o
        return {**o, "metadata": {**o["metadata"], "namespace": moved[id(o)]}}

    objects = tuple(moved_object(o) for o in tree.objects)
    return msgspec.structs.replace(tree, helmreleases=hrs, objects=objects)


def _post_build(
    tree: flux_inputs.FluxTree, paths: Sequence[str], root: Callable[[], Path | None], target: str,
    overlays: Mapping[Path, Overlay] | None = None,
) -> tuple[flux_inputs.FluxTree, dict[str, str], list[str]]:
    """The tree as kustomize-controller applies it: each Kustomization's ``postBuild``
    variables substituted in the files under its path (:mod:`helmsim.flux.postbuild`)."""
    posted = {
        f"{(o.get('metadata') or {}).get('namespace') or 'default'}/{(o.get('metadata') or {}).get('name')}": o
        for o in _setting(tree, "postBuild")
    }
    if not posted:
        return tree, {}, []
    units = _kustomizations(tree, root, target)
    read = read_tree_files(paths, overlays, tree.renames)
    owner = kustomization.owner_of(units, tree.applied_from)
    substituted, errors, notes = postbuild.substituted_files(read.files, owner, posted, tree.objects)
    rebuilt = flux_inputs.flux_tree_from_files(substituted, via=read.via, notes=tree.notes)
    return msgspec.structs.replace(rebuilt, artifacts=tree.artifacts, renames=tree.renames), errors, notes


def _root(explicit: str | None, target: str) -> Callable[[], Path | None]:
    """Where GitRepository chart paths are resolved: ``--repository-root``, else the top of the
    git work tree holding ``target`` (None outside one), looked up once when first needed."""
    if explicit is not None:
        if not Path(explicit).is_dir():
            raise InputError("--repository-root: not a directory", file=explicit)
        return lambda: Path(explicit)

    @cache
    def top() -> Path | None:
        here = Path(target) if Path(target).is_dir() else Path(target).parent
        try:
            return gitref.find_repo(here)[0].top
        except InputError:
            return None

    return top

