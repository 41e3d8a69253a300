"""A HelmRelease's chart, resolved as Flux's source-controller and helm-controller resolve it.

Nothing is fetched: the local chart a HelmRelease is mapped to (``--chart``, the chart given on
the command line, or ``spec.chart.spec.chart`` under ``--repository-root`` for a GitRepository)
stands for what the source serves. What source-controller would refuse (another chart name, a
version outside ``spec.chart.spec.version``, a path that does not exist in the repository) is
Flux's own failure: the source is not ready and helm-controller says so on the HelmRelease.
"""

from __future__ import annotations

import posixpath
import re
import tarfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct

from helmsim import yamlio
from helmsim.errors import InputError
from helmsim.flux.helmrelease import HelmRelease
from helmsim.semver import SemverError, parse_constraint, parse_flux_version, parse_version

SOURCE_NOT_READY = "SourceNotReady"  # helm-controller helmrelease_controller.go reconcileRelease
CHART_MUTATE_ERROR = "ChartMutateError"  # helmrelease_controller.go mutateChartWithSourceRevision


class ChartMeta(Struct, frozen=True):
    """The ``name`` and ``version`` of a chart's Chart.yaml."""

    name: str
    version: str


VALUES_ERROR = "ValuesError"
"""helm-controller's Ready reason for a valuesFrom reference it cannot resolve
(internal/controller/helmrelease_controller.go reconcileRelease)."""


class SourceFailure(Struct, frozen=True):
    """Why helm-controller cannot get the chart: the source object it waits for and its message
    (``kind`` is ``HelmChart`` or ``OCIRepository``), or the chart it cannot use (reason
    ``ChartMutateError``, ``kind`` empty)."""

    kind: str
    namespace: str
    name: str
    message: str
    reason: str = SOURCE_NOT_READY

    @property
    def condition_message(self) -> str:
        """The HelmRelease's Ready message (helmrelease_controller.go isReady)."""
        if not self.kind:
            return self.message
        return f"{self.kind} '{self.namespace}/{self.name}' is not ready: {self.message}"


class Resolved(Struct, frozen=True):
    """The local chart to simulate (None: not mapped, or the source fails) and what Flux says."""

    path: str | None
    failure: SourceFailure | None = None
    notes: tuple[str, ...] = ()


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (a malformed field reads as absent)."""
    return value if isinstance(value, Mapping) else {}


def chart_meta(path: str | Path) -> ChartMeta | None:
    """Chart.yaml's name and version of a chart directory or ``.tgz``; None for rendered YAML."""
    p = Path(path)
    text: str | None = None
    if p.is_dir():
        if not (p / "Chart.yaml").is_file():
            return None
        text = yamlio.read_text(p / "Chart.yaml", "Chart.yaml")
        source = str(p / "Chart.yaml")
    elif p.is_file() and p.name.endswith((".tgz", ".tar.gz")):
        source = f"{p}:Chart.yaml"
        try:
            with tarfile.open(p, "r:gz") as tar:
                # helm/helm pkg/chart/loader/archive.go: the chart is the archive's top directory
                member = next((m for m in tar if m.isfile() and m.name.count("/") == 1 and m.name.endswith("/Chart.yaml")), None)
                data = tar.extractfile(member).read() if member is not None else None  # type: ignore[union-attr]
        except (OSError, tarfile.TarError) as err:
            raise InputError(f"cannot read chart archive: {err}", file=str(p)) from None
        if data is None:
            return None
        text = data.decode("utf-8", "replace")
    else:
        return None
    meta = yamlio.load_one(text, source)
    if not isinstance(meta, dict):
        return None
    return ChartMeta(str(meta.get("name") or ""), str(meta.get("version") or ""))


def find_object(objects: Sequence[Mapping[str, Any]], kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
    """The object of ``kind`` named ``namespace/name`` among ``objects`` (source.toolkit.fluxcd.io)."""
    for obj in objects:
        meta = obj.get("metadata") or {}
        if (
            obj.get("kind") == kind
            and str(obj.get("apiVersion", "")).startswith("source.toolkit.fluxcd.io/")
            and isinstance(meta, Mapping)
            and meta.get("name") == name
            and (meta.get("namespace") or namespace) == namespace
        ):
            return obj
    return None


def resolve(
    hr: HelmRelease,
    mapped: str | None,
    objects: Sequence[Mapping[str, Any]],
    repository_root: Callable[[], Path | None] = lambda: None,
) -> Resolved:
    """The chart ``hr`` gets, given the local chart it is ``mapped`` to and the Flux source
    objects beside it; ``repository_root()`` is where GitRepository chart paths are resolved
    (called only for such a chart)."""
    ref = hr.spec.chart_ref
    if ref is not None:
        namespace = ref.namespace or hr.namespace
        if ref.kind == "OCIRepository":
            return _oci_repository(mapped, find_object(objects, "OCIRepository", namespace, ref.name), namespace, ref.name)
        if ref.kind == "HelmChart":
            chart = find_object(objects, "HelmChart", namespace, ref.name)
            spec = (chart or {}).get("spec")
            if not isinstance(spec, Mapping):
                gone = () if mapped is None else (f"HelmChart {namespace}/{ref.name} is not in the input: its chart is taken as given",)
                return Resolved(mapped, notes=gone)
            src = _mapping(spec.get("sourceRef"))
            return _chart(
                hr, mapped, objects, repository_root,
                chart=str(spec.get("chart") or ""),
                version=str(spec.get("version") or "*"),
                source_kind=str(src.get("kind") or ""),
                source_name=str(src.get("name") or ""),
                namespace=namespace,
                name=ref.name,
            )
        return Resolved(mapped)  # ExternalArtifact: whatever the producer stored
    spec = hr.spec.chart.spec if hr.spec.chart is not None else None
    if spec is None:
        return Resolved(mapped)
    # helm-controller internal/reconcile/helmchart_template.go: the HelmChart is named
    # <namespace>-<name> (api/v2 GetHelmChartName), in the source's namespace
    namespace = spec.source_ref.namespace or hr.namespace
    return _chart(
        hr, mapped, objects, repository_root,
        chart=spec.chart,
        version=spec.version or "*",  # api/v2 HelmChartTemplateSpec.Version +kubebuilder:default:=*
        source_kind=spec.source_ref.kind,
        source_name=spec.source_ref.name,
        namespace=namespace,
        name=f"{hr.namespace}-{hr.name}",
    )


def _chart(
    hr: HelmRelease,
    mapped: str | None,
    objects: Sequence[Mapping[str, Any]],
    root: Callable[[], Path | None],
    *,
    chart: str,
    version: str,
    source_kind: str,
    source_name: str,
    namespace: str,
    name: str,
) -> Resolved:
    """A HelmChart ``namespace/name`` of ``chart`` at ``version`` from its source."""
    if source_kind in ("GitRepository", "Bucket"):
        return _from_artifact(hr, mapped, root, chart, version, source_kind, namespace, name)
    if mapped is None:
        return Resolved(None)
    meta = chart_meta(mapped)
    if meta is None:
        return Resolved(mapped, notes=(f"HelmRelease {hr.ref}: {mapped} is not a chart: its name and version are not checked against {chart}@{version}",))
    repo = find_object(objects, "HelmRepository", namespace, source_name)
    repo_spec = (repo or {}).get("spec")
    repo_spec = repo_spec if isinstance(repo_spec, Mapping) else {}
    notes: tuple[str, ...] = ()
    if repo is None:
        notes = (
            f"HelmRelease {hr.ref}: HelmRepository {namespace}/{source_name} is not in the input: "
            f"read as an HTTP repository whose index holds {meta.name} {meta.version}",
        )
    if repo_spec.get("type") == "oci":
        message = _oci_pull(str(repo_spec.get("url") or ""), chart, version, meta)
    else:
        message = _index_lookup(chart, version, meta)
    if message is None:
        return Resolved(mapped, notes=notes)
    return Resolved(None, SourceFailure("HelmChart", namespace, name, message), notes)


def _index_lookup(chart: str, version: str, meta: ChartMeta) -> str | None:
    """source-controller internal/helm/repository/chart_repository.go getChartVersion against an
    index holding the local chart alone (helm repo index keys entries by Chart.yaml name);
    the error as internal/helm/chart/builder_remote.go wraps it (ErrReference → invalid chart
    reference)."""
    prefix = "invalid chart reference: failed to get chart version for remote reference: "
    if meta.name != chart:
        return prefix + "no chart name found"  # helm pkg/repo/v1 ErrNoChartName
    if version == meta.version:  # exact matches first
        return None
    try:
        constraint = parse_constraint("*" if version in ("", "*") else version)
    except SemverError as err:
        return prefix + str(err)
    try:
        ok = constraint.check(parse_flux_version(meta.version))
    except SemverError:
        ok = False  # versions that do not parse are skipped
    return None if ok else prefix + f"no '{chart}' chart with version matching '{version}' found"


def _oci_pull(url: str, chart: str, version: str, meta: ChartMeta) -> str | None:
    """source-controller internal/helm/repository/oci_chart_repository.go getChartVersion for a
    registry holding the local chart at ``<url>/<Chart.yaml name>:<version>`` (helm push); its
    errors are ErrExternal → chart pull error. The registry's own words for a missing
    repository or tag are not known offline: they read ``not found``."""
    ref = f"{url.rstrip('/')}/{chart}"
    try:
        parse_flux_version(version)
        exact = True
    except SemverError:
        exact = False
    if exact:  # a concrete version is pulled without listing tags
        if meta.name == chart and version == meta.version:
            return None
        return f"chart pull error: failed to download chart for remote reference: failed to get '{ref}:{version}': not found"
    prefix = "chart pull error: failed to get chart version for remote reference: "
    if meta.name != chart:
        return prefix + f'could not get tags for "{chart}": not found'
    if version == meta.version:
        return None
    try:
        constraint = parse_constraint("*" if version in ("", "*") else version)
        ok = constraint.check(parse_flux_version(meta.version))
    except SemverError as err:
        if str(err).startswith("improper constraint"):
            return prefix + str(err)
        ok = False
    return None if ok else prefix + f"could not locate a version matching provided version string {version}"


def _from_artifact(
    hr: HelmRelease,
    mapped: str | None,
    repository_root: Callable[[], Path | None],
    chart: str,
    version: str,
    source_kind: str,
    namespace: str,
    name: str,
) -> Resolved:
    """A chart at a path of a GitRepository or Bucket artifact (helmchart_controller.go
    buildFromTarballArtifact → internal/helm/chart/builder_local.go): the version is not
    checked, the path must hold a chart."""
    path = mapped
    notes: list[str] = []
    if path is None:
        root = repository_root()
        if root is None:
            return Resolved(None)
        # builder_local.go: securejoin.SecureJoin(WorkDir, Path): ".." never leaves the root
        clean = posixpath.normpath("/" + chart).lstrip("/")
        candidate = root / clean
        # os.MkdirTemp(pattern "<kind>-<namespace>-<name>-"): the random suffix is elided
        shown = f"/tmp/helmchart-{namespace}-{name}-…/source/{clean}"
        prefix = "invalid chart reference: "  # ErrChartReference: persistent, the HelmChart stalls
        if not candidate.exists():
            return Resolved(None, SourceFailure("HelmChart", namespace, name, f"{prefix}stat {shown}: no such file or directory"))
        if candidate.is_dir() and not (candidate / "Chart.yaml").is_file():
            return Resolved(None, SourceFailure("HelmChart", namespace, name, f"{prefix}open {shown}/Chart.yaml: no such file or directory"))
        path = str(candidate)
        notes.append(f"HelmRelease {hr.ref}: chart {chart} read from {path} (the {source_kind}'s content is taken to be the local tree)")
    meta = chart_meta(path)
    if meta is not None and version not in ("", "*") and not _satisfies(version, meta.version):
        notes.append(
            f"HelmRelease {hr.ref}: version '{version}' is ignored for a chart from a {source_kind} "
            f"(source-controller builds the chart at the path: {meta.name} {meta.version})"
        )
    return Resolved(path, notes=tuple(notes))


def _oci_repository(mapped: str | None, repo: Mapping[str, Any] | None, namespace: str, name: str) -> Resolved:
    """``chartRef`` to an OCIRepository holding the local chart: the tag its ``spec.ref`` picks
    (ocirepository_controller.go getArtifactRef, getTagBySemver) and the check helm-controller
    makes of a semver tag against the chart's version (mutateChartWithSourceRevision)."""
    if mapped is None:
        return Resolved(None)
    if repo is None:
        return Resolved(mapped, notes=(f"OCIRepository {namespace}/{name} is not in the input: its chart is taken as given",))
    meta = chart_meta(mapped)
    spec = _mapping(repo.get("spec"))
    ref = _mapping(spec.get("ref"))
    if meta is None or ref.get("digest"):
        return Resolved(mapped)
    url = str(spec.get("url") or "")
    if ref.get("semver"):
        expr = str(ref["semver"])
        head = f"failed to determine the artifact tag for '{url}': "
        try:
            constraint = parse_constraint(expr)
        except SemverError as err:
            return Resolved(None, SourceFailure("OCIRepository", namespace, name, f"{head}semver '{expr}' parse error: {err}"))
        tag = meta.version.replace("+", "_")  # helm push: OCI tags cannot hold '+'
        wanted = ref.get("semverFilter")
        try:
            filtered = bool(wanted) and re.search(str(wanted), tag) is None
        except re.error as err:  # ocirepository_controller.go filterTags: regexp.Compile fails
            return Resolved(None, SourceFailure("OCIRepository", namespace, name, f"{head}error parsing regexp: {err}"))
        if filtered:
            ok = False
        else:
            try:
                ok = constraint.check(parse_flux_version(tag.replace("_", "+")))
            except SemverError:
                ok = False
        if not ok:
            return Resolved(None, SourceFailure("OCIRepository", namespace, name, f"{head}no match found for semver: {expr}"))
        return Resolved(mapped)
    tag = str(ref.get("tag") or "latest")
    try:
        tag_version = parse_version(tag.replace("_", "+"))
    except SemverError:
        return Resolved(mapped)  # not a semver tag: the digest is appended, nothing compared
    try:
        same = tag_version == parse_version(meta.version)
    except SemverError:
        same = False
    if same:
        return Resolved(mapped)
    return Resolved(
        None,
        SourceFailure("", namespace, name, f"artifact revision {tag} does not match chart version {meta.version}", CHART_MUTATE_ERROR),
    )


def _satisfies(version: str, chart_version: str) -> bool:
    try:
        return version == chart_version or parse_constraint(version).check(parse_flux_version(chart_version))
    except SemverError:
        return False


__all__ = ["ChartMeta", "Resolved", "SourceFailure", "chart_meta", "find_object", "resolve"]
