"""The whole prediction: render each HelmRelease's chart, build the cluster, run helm-controller.

Pipeline (docs/simulate.md): inputs → render (Helm engine, profile capabilities) → cluster
(engine + controllers) → one helm-controller reconciler per HelmRelease → outcomes + trace.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from msgspec import Struct, field
from msgspec.structs import replace

from helmsim import limits, render, yamlio
from helmsim.cluster.cluster import build_cluster
from helmsim.cluster.engine import Simulation, gc_paused
from helmsim.cluster.operators import install_declared_crds, install_operator_models, unreconciled_notes
from helmsim.cluster.profile import ClusterProfile
from helmsim.cluster.running import assumed_behaviours
from helmsim.cluster.trace import Trace
from helmsim.errors import InputError
from helmsim.flux.helmrelease import DEPENDENCY_REQUEUE, HelmRelease
from helmsim.flux import kustomization
from helmsim.flux.impersonation import tenant_context
from helmsim.flux.reconcile import REQUEUE_MAX, REQUEUE_MIN, Condition, Reconciler, ReleaseState, unready_dependency
from helmsim.flux.sources import SOURCE_NOT_READY, SourceFailure
from helmsim.helm import actions, lookup, record
from helmsim.helm.actions import ChartRelease, HelmContext, to_object
from helmsim.helm.release import ReleaseStorage
from helmsim.inputs import ReleaseInput as RenderedRelease, load_release
from helmsim.kube.fieldcheck import crd_version_schema, is_builtin
from helmsim.kube.served import builtin_served, coverage_note
from helmsim.kube.workloads import POD_KINDS, declared_pods
from helmsim.flux.postrender import PostRenderError, post_render
from helmsim.manifests import Resource, parse_objects

Outcome = Literal["Ready", "Failed", "Stalled", "Blocked", "Progressing"]

DEFAULT_HORIZON = 3600.0
UNMAPPED_READY_AFTER = 60.0


class ChartSource(Struct, frozen=True):
    """A local chart (directory, .tgz or rendered YAML) and the values the user adds on top."""

    path: str
    values: Mapping[str, Any] = field(default_factory=dict)
    values_files: tuple[str, ...] = ()
    """The files ``values`` came from, in merge order (named in values schema errors)."""


class ReleaseInput(Struct, frozen=True):
    """One HelmRelease to simulate: its spec, its chart (None when unmapped) and an optional
    previous chart/values to install first (``--upgrade-from``)."""

    hr: HelmRelease
    chart: ChartSource | None
    previous: ChartSource | None = None
    values_from: Mapping[str, Any] = field(default_factory=dict)
    catalog: tuple[Any, ...] = ()
    """User behaviour-catalog entries (``helmsim.cluster.catalog.CompiledEntry``) from
    ``.helmsim.yaml`` or a scenario file; they come before the built-in catalog."""
    tree_objects: tuple[Mapping[str, Any], ...] = ()
    """The other objects of the Flux tree the HelmRelease came from (RBAC, Kustomizations …)."""
    defaulted: bool = False
    """The HelmRelease is helmsim's default for a bare chart: the chart's render errors are then
    bad input (exit 2), as for ``helm template``; otherwise they fail this release alone."""
    source_failure: SourceFailure | None = None
    """Why Flux cannot get this release's chart (``helmsim.flux.sources.resolve``): the release
    is then not simulated and stays not Ready with helm-controller's message."""
    notes: tuple[str, ...] = ()
    """What resolving the chart assumed, said once in the report."""
    declared_crds: tuple[Any, ...] = ()
    """CRDs (``helmsim.cluster.profile.CRD``) an unmapped release's chart installs, from
    ``.helmsim.yaml`` (:func:`with_declared_crds`); the profile's ``unmappedReleases`` add theirs."""
    kustomizations: tuple[Any, ...] = ()
    """The tree's Kustomizations (``helmsim.flux.kustomization.Unit``), shared by its releases."""


class ReleaseOutcome(Struct):
    """The prediction for one HelmRelease."""

    name: str
    namespace: str
    release_name: str
    target_namespace: str
    profile: str
    outcome: Outcome
    ready: str
    reason: str
    message: str
    attempts: int
    helm_status: list[dict[str, Any]]
    ready_at: float | None
    simulated: bool
    conditions: dict[str, dict[str, str]]
    history: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "releaseName": self.release_name,
            "targetNamespace": self.target_namespace,
            "profile": self.profile,
            "outcome": self.outcome,
            "ready": self.ready,
            "reason": self.reason,
            "message": self.message,
            "attempts": self.attempts,
            "readyAt": None if self.ready_at is None else round(self.ready_at, 3),
            "simulated": self.simulated,
            "helmStatus": self.helm_status,
            "conditions": self.conditions,
            "history": self.history,
        }


class SimulationResult(Struct):
    """Outcomes per release, the final status of every release object, and the trace."""

    profile: str
    releases: list[ReleaseOutcome]
    objects: list[dict[str, Any]]
    trace: Trace
    end_time: float
    upgrade_start: float = 0.0
    notes: list[str] = field(default_factory=list)
    sim: Simulation | None = None
    """The finished simulation (store, trace), for programmatic inspection."""
    kustomizations: list[Any] = field(default_factory=list)
    """The Flux Kustomizations' outcomes (``helmsim.flux.kustomization.KustomizationOutcome``)."""


# --- values --------------------------------------------------------------------------------------
class ValuesError(Exception):
    """A ``valuesFrom`` reference helm-controller cannot resolve: its Ready=False ValuesError
    message (fluxcd/pkg chartutil/values.go ErrValuesReference.Error)."""


def values_from_refs(hr: HelmRelease, docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``spec.valuesFrom`` resolved from ConfigMaps/Secrets among ``docs`` (fluxcd/pkg
    chartutil/values.go ChartValuesFromReferences); a reference to an object or key that is not
    there raises :class:`ValuesError` (the reconcile fails and is retried), unless optional."""
    values: dict[str, Any] = {}
    for ref in hr.spec.values_from:
        obj = next(
            (
                d
                for d in docs
                if d.get("kind") == ref.kind
                and (d.get("metadata") or {}).get("name") == ref.name
                and ((d.get("metadata") or {}).get("namespace") or hr.namespace) == hr.namespace
            ),
            None,
        )
        what = f"could not resolve{' optional' if ref.optional else ''} {ref.kind} chart values reference '{hr.namespace}/{ref.name}' with key '{ref.values_key}'"
        if obj is None:
            if ref.optional:
                continue
            # the API server's NotFound: "<resource> \"<name>\" not found"
            raise ValuesError(f'{what}: {ref.kind.lower()}s "{ref.name}" not found')
        raw = _data_value(obj, ref.values_key)
        if raw is None:
            if ref.optional:
                continue
            raise ValuesError(f"{what}: key not found")
        if ref.target_path:
            values = render.merge_values(values, _at_path(ref.target_path, raw, literal=ref.literal))
            continue
        parsed = yamlio.load_one(raw, f"{ref.kind}/{hr.namespace}/{ref.name}:{ref.values_key}")
        if parsed is None:
            continue
        if not isinstance(parsed, dict):
            raise InputError(f"HelmRelease {hr.ref}: values in {ref.kind} '{ref.name}' are not a mapping")
        values = render.merge_values(values, parsed)
    return values


def _data_value(obj: Mapping[str, Any], key: str) -> str | None:
    if obj.get("kind") == "Secret":
        if key in (obj.get("stringData") or {}):
            return str(obj["stringData"][key])
        encoded = (obj.get("data") or {}).get(key)
        return None if encoded is None else base64.b64decode(str(encoded)).decode("utf-8", "replace")
    value = (obj.get("data") or {}).get(key)
    return None if value is None else str(value)


def _at_path(path: str, value: str, *, literal: bool = False) -> dict[str, Any]:
    """The value set at ``targetPath`` as fluxcd/pkg chartutil ReplacePathValue sets it: with
    Helm's ``--set`` parser (types inferred, commas and brackets meaningful), ``--set-string``
    for a quoted value (the quotes trimmed), ``--set-literal`` for a ``literal`` reference."""
    flag: render.SetFlag
    if literal:
        flag = "--set-literal"
    elif len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        flag, value = "--set-string", value.strip("'\"")
    else:
        flag = "--set"
    return render.parse_set(render.SetValue(flag, f"{path}={value}"))


# --- rendering -----------------------------------------------------------------------------------
def _render(
    hr: HelmRelease,
    source: ChartSource,
    profile: ClusterProfile,
    values_from: Mapping[str, Any],
    *,
    upgrade: bool,
    per_release: bool = False,
    extra_api_versions: Sequence[str] = (),
    cluster: tuple[dict[str, Any], ...] | None = None,
) -> ChartRelease:
    """Render ``source`` for ``hr`` under ``profile``; ``cluster``: the objects ``lookup`` finds
    (None: an empty answer, as ``helm template`` gives)."""
    values = render.merge_values(render.merge_values(dict(values_from), hr.spec.values), source.values)
    opts = render.RenderOptions(
        release_name=hr.release_name,
        namespace=hr.target_namespace,
        values=values,
        kube_version=profile.kubernetes_version,
        api_versions=(*profile.capability_api_versions(), *extra_api_versions),
        is_upgrade=upgrade,
        revision=2 if upgrade else 1,
        # spec.values comes from the HelmRelease's file; the user's files are merged over it
        values_files=((hr.source,) if hr.source and hr.spec.values else ()) + source.values_files,
        cluster=cluster,
    )
    try:
        # helm-controller applies crds/ on upgrade too; Helm stores the chart in the release record
        rel = load_release(source.path, opts, include_crds=True, record=True)
    except render.RenderError as err:
        if not per_release:
            raise
        return _unrendered(hr, err, source.path)
    chart = f"{rel.chart_name}@{rel.chart_version}" if rel.from_chart else hr.chart_name
    lookups = _lookup_notes(source.path, chart, rel.files, cluster is not None, values) if rel.from_chart else ()
    key = (hr.model_dump_json(), rel.files, profile.kubernetes_version)
    parsed = _POST_RENDERED.get(key)
    if parsed is None:
        try:
            # helm-controller post-renders every release (internal/postrender/build.go)
            objects = post_render(hr, rel.files, kube_version=profile.kubernetes_version)
        except PostRenderError as err:
            if not per_release and err.template is None:
                raise InputError(f"HelmRelease {hr.ref}: {err}", file=hr.source or None) from None
            # the chart's own output refused: every helm-controller install fails so
            # (fluxcd/helm-controller internal/postrender/build.go: the origin labels always run)
            note = f"{err} ({err.template} renders two objects with one id)" if err.template else None
            return _failed_render(hr, chart, rel.parse_crds().resources, str(err), note=note, also=lookups)
        parsed = parse_objects(objects, namespace=hr.target_namespace)
        _remember(key, parsed)
    size = _record_size(hr, rel, values, parsed.resources, revision=opts.revision)
    uncertain = record.uncertainty(size)
    return ChartRelease(
        name=hr.release_name,
        namespace=hr.target_namespace,
        chart=chart,
        resources=tuple(parsed.resources),
        crds=tuple(rel.parse_crds().resources),
        notes=tuple(
            f"HelmRelease {hr.ref}: {n}" for n in (*rel.notes, *lookups, *((uncertain,) if uncertain else ()))
        ),
        record=size,
    )


def _record_size(
    hr: HelmRelease, rel: RenderedRelease, values: Mapping[str, Any], resources: Sequence[Resource], *, revision: int
) -> record.RecordSize | None:
    """The size of the record Helm's install or upgrade stores before it creates any object
    (helm/helm pkg/action/install.go RunWithContext, upgrade.go performUpgrade:
    ``Releases.Create``); None for a rendered manifest (no chart)."""
    if rel.record is None:
        return None
    hooks = [
        record.StoredHook(r.name, r.kind, r.source.path, r.hook.events, r.hook.weight, r.hook.delete_policies)
        for r in resources
        if r.hook is not None
    ]
    text = record.release_json(
        rel.record, name=hr.release_name, namespace=hr.target_namespace, revision=revision,
        config=values, manifests=rel.files, hooks=hooks, notes=rel.release_notes,
    )
    return record.measure(text, rel.record.largest)


def _lookup_notes(
    chart_path: str,
    chart: str,
    files: Sequence[tuple[str, str]] | None,
    answered: bool = False,
    values: Mapping[str, Any] | None = None,
) -> tuple[str, ...]:
    """The note that the chart calls ``lookup``, which helmsim answers as ``helm template`` does
    (helm/helm pkg/action/action.go renderResources: no cluster client without
    ``interactWithRemote``) while helm-controller's install and upgrade read the cluster;
    ``answered``: an upgrade's, answered from what the previous revision left.
    ``files`` are Helm's rendered files (None: which templates rendered is unknown); the same
    chart and files are read once (a check renders a chart for several profiles); ``values``, the
    release's, are strings ``tpl`` may evaluate."""
    given = tuple(lookup.template_strings(values or {}))
    key = (chart_path, chart, tuple(files) if files is not None else None, answered, given)
    hit = _LOOKUPS.get(key)
    if hit is None:
        text = lookup.note(
            chart_path, chart, None if files is None else [p for p, _ in files],
            tail=lookup.UPGRADE_TAIL if answered else lookup.TAIL, values={"given": list(given)},
        )
        hit = () if text is None else (text,)
        if len(_LOOKUPS) >= _POST_RENDERED_KEPT:
            _LOOKUPS.pop(next(iter(_LOOKUPS)))
        _LOOKUPS[key] = hit
    return hit


_LOOKUPS: dict[tuple[Any, ...], tuple[str, ...]] = {}
"""The lookup notes by (chart path, chart, rendered files): the newest few."""


_POST_RENDERED: dict[tuple[Any, ...], Any] = {}
"""Parsed post-rendered objects by (HelmRelease, Helm's rendered files, Kubernetes version):
the inputs of the post-render and the parse. Profiles whose capabilities differ but render the
same files (a check matrix, a fleet) post-render them once. The newest few are kept; the objects
are read, never changed, by everything after the render."""
_POST_RENDERED_KEPT = 4


def clear_post_rendered() -> None:
    """Forget the post-rendered objects and lookup notes kept (a benchmark timing one command's
    render)."""
    _POST_RENDERED.clear()
    _LOOKUPS.clear()


def _remember(key: tuple[Any, ...], parsed: Any) -> None:
    if len(_POST_RENDERED) >= _POST_RENDERED_KEPT:
        del _POST_RENDERED[next(iter(_POST_RENDERED))]
    _POST_RENDERED[key] = parsed


def _unrendered(hr: HelmRelease, err: render.RenderError, chart_path: str) -> ChartRelease:
    """The chart helm-controller gets for ``hr`` when Helm's engine refuses it: its ``crds/``
    are still applied (helm-controller internal/action/install.go applyCRDs runs before
    RunWithContext renders), then the action fails with Helm's error and stores no release."""
    from helmsim.manifests import parse_documents

    crds = parse_documents([(f.path, f.content) for f in err.crd_files]).resources
    chart = f"{err.chart_name}@{err.chart_version}"
    return _failed_render(
        hr, chart, crds, err.helm_message, note=f"the chart does not render ({err})",
        # which subcharts rendered is unknown: every subchart's calls count
        also=_lookup_notes(chart_path, chart, None) if render.is_chart_dir(Path(chart_path)) else (),
    )


def _failed_render(
    hr: HelmRelease, chart: str, crds: Sequence[Resource], helm_message: str, *, note: str | None = None,
    also: Sequence[str] = (),
) -> ChartRelease:
    """A chart Helm's install or upgrade cannot render or post-render for ``hr``: no objects,
    the ``crds/`` still applied first, Helm's error (helm/helm pkg/action/action.go
    renderResources runs before the release is stored)."""
    return ChartRelease(
        name=hr.release_name,
        namespace=hr.target_namespace,
        chart=chart,
        resources=(),
        crds=tuple(crds),
        render_error=helm_message,
        notes=(
            f"HelmRelease {hr.ref}: {note or helm_message}; the release fails with Helm's error",
            *(f"HelmRelease {hr.ref}: {n}" for n in also),
        ),
    )


PreparedCharts = tuple[dict[str, ChartRelease], dict[str, ChartRelease]]
"""Rendered charts by HelmRelease ref: the target of each release, and its previous revision."""


def prepare_charts(profile: ClusterProfile, releases: Sequence[ReleaseInput]) -> PreparedCharts:
    """Render every mapped chart (and ``--upgrade-from`` chart) with ``profile``'s capabilities."""
    rendered: dict[str, ChartRelease] = {}
    previous: dict[str, ChartRelease] = {}
    declared = declared_crds(profile, releases)
    for r in releases:
        if r.chart is not None:
            before = None
            if r.previous is not None:
                before = previous[r.hr.ref] = _render(r.hr, r.previous, profile, r.values_from, upgrade=False)
            rendered[r.hr.ref] = _render(
                r.hr, r.chart, profile, r.values_from, upgrade=r.previous is not None, per_release=not r.defaulted,
                extra_api_versions=_served_to(r, releases, declared),
                cluster=None if before is None else left_by(before),
            )
    return rendered, previous


def left_by(release: ChartRelease) -> tuple[dict[str, Any], ...]:
    """What a settled install of ``release`` leaves for the next revision's ``lookup``: its
    ``crds/``, its manifest as Helm created it, and the install hooks Helm keeps (those without
    ``hook-succeeded``; helm/helm pkg/action/hooks.go execHook deletes the others once they
    succeed). Objects controllers make (pods, a ServiceAccount's token) are not among them."""
    install = {"pre-install", "post-install"}
    kept = [
        r for r in release.hooks
        if r.hook is not None and install & set(r.hook.events) and "hook-succeeded" not in r.hook.delete_policies
    ]
    return tuple(
        to_object(r, release.name, release.namespace) for r in (*release.crds, *release.manifest, *kept)
    )


def render_key(profile: ClusterProfile, releases: Sequence[ReleaseInput]) -> tuple[Any, ...]:
    """All :func:`prepare_charts` reads from ``profile``: two profiles with the same key render
    the same charts (a check matrix renders once per key)."""
    declared = declared_crds(profile, releases)
    return (
        profile.kubernetes_version,
        tuple(profile.capability_api_versions()),
        tuple(sorted((ref, tuple(c.group_version + "/" + c.kind for c in crds)) for ref, crds in declared.items())),
    )


def declared_crds(profile: ClusterProfile, releases: Sequence[ReleaseInput]) -> dict[str, tuple[Any, ...]]:
    """The CRDs each unmapped release installs (by ref): its ``.helmsim.yaml`` declarations,
    else the first of the profile's ``unmappedReleases`` naming it."""
    out: dict[str, tuple[Any, ...]] = {}
    for r in releases:
        if r.chart is not None or r.source_failure is not None:
            continue
        crds = r.declared_crds or next(
            (tuple(u.crds) for u in profile.unmapped_releases if u.matches(r.hr.chart_name, r.hr.ref)), ()
        )
        if crds:
            out[r.hr.ref] = crds
    return out


def _served_to(r: ReleaseInput, releases: Sequence[ReleaseInput], declared: Mapping[str, tuple[Any, ...]]) -> list[str]:
    """``.Capabilities.APIVersions`` entries ``r`` renders with beyond the profile's: the CRDs
    of the unmapped releases it depends on, transitively. helm-controller renders a release
    only once its dependencies are Ready (helmrelease_controller.go checkDependencies), and
    Helm reads the API versions from discovery then (helm/helm pkg/action/action.go
    GetVersionSet), so those CRDs are served by then."""
    by_ref = {x.hr.ref: x for x in releases}
    out: dict[str, None] = {}
    todo, seen = list(r.hr.dependencies()), set()
    while todo:
        ref = todo.pop()
        if ref in seen or ref not in by_ref:
            continue
        seen.add(ref)
        for c in declared.get(ref, ()):
            out.setdefault(c.group_version, None)
            out.setdefault(f"{c.group_version}/{c.kind}", None)
        todo.extend(by_ref[ref].hr.dependencies())
    return list(out)


def with_declared_crds(releases: Sequence[ReleaseInput], entries: Sequence[Any]) -> list[ReleaseInput]:
    """``releases`` with the CRDs ``.helmsim.yaml``'s ``unmappedReleases`` declare for the
    unmapped ones (``helmsim.cluster.profile.UnmappedRelease``; the first match wins)."""
    from msgspec.structs import replace

    out = []
    for r in releases:
        entry = next((e for e in entries if e.matches(r.hr.chart_name, r.hr.ref)), None)
        out.append(replace(r, declared_crds=tuple(entry.crds)) if entry is not None and r.chart is None else r)
    return out


# --- running -------------------------------------------------------------------------------------
def simulate(
    profile: ClusterProfile,
    releases: Sequence[ReleaseInput],
    *,
    horizon: float = DEFAULT_HORIZON,
    seed: int = 0,
    sample_latencies: bool = False,
    unmapped_ready_after: float = UNMAPPED_READY_AFTER,
    overrides: Sequence[Any] = (),
    faults: Any = None,
    setup: Any = None,
    prepared: PreparedCharts | None = None,
    stop: Callable[[Simulation], bool] | None = None,
) -> SimulationResult:
    """Run every HelmRelease on a fresh cluster of ``profile`` until all are Ready or Stalled,
    or ``horizon`` simulated seconds pass, or ``stop(sim)`` says what the caller reads of the
    run is settled (checked every 5 simulated seconds; the outcomes are then those of the
    moment it stopped).

    ``overrides`` are behaviour overrides (``helmsim.cluster.behaviour.BehaviourOverride``),
    ``faults`` an object with the ``helmsim.cluster.behaviour.Faults`` methods, and ``setup`` a
    callable run on the fresh ``Simulation`` before any release is applied (e.g. to schedule
    fault events such as an apiserver outage). ``prepared`` are the charts
    :func:`prepare_charts` rendered for the same profile and releases (Monte Carlo renders once
    and simulates many times; a check may pass transformed charts).
    """
    if not releases:
        raise InputError("nothing to simulate: no HelmRelease and no chart")
    rendered, previous = prepared if prepared is not None else prepare_charts(profile, releases)
    with gc_paused():
        return _simulate(
            profile, releases, rendered, previous, horizon=horizon, seed=seed, sample_latencies=sample_latencies,
            unmapped_ready_after=unmapped_ready_after, overrides=overrides, faults=faults, setup=setup,
            stop=stop,
        )


def _simulate(
    profile: ClusterProfile,
    releases: Sequence[ReleaseInput],
    rendered: dict[str, ChartRelease],
    previous: dict[str, ChartRelease],
    *,
    horizon: float,
    seed: int,
    sample_latencies: bool,
    unmapped_ready_after: float,
    overrides: Sequence[Any],
    faults: Any,
    setup: Any,
    stop: Callable[[Simulation], bool] | None = None,
) -> SimulationResult:
    _check_pod_budget(profile, [*rendered.values(), *previous.values()])
    all_objects = [res.body for cr in (*rendered.values(), *previous.values()) for res in cr.resources]
    sim = build_cluster(
        profile,
        seed=seed,
        sample_latencies=sample_latencies,
        release_objects=all_objects,
        namespaces=_needed_namespaces(releases, [*rendered.values(), *previous.values()]),
        overrides=overrides,
        catalog=user_catalog(releases),
        faults=faults,
    )
    sim.store.pods_baseline = sim.store.pods_created  # the cluster's own pods are not budgeted
    if setup is not None:
        setup(sim)
    install_operator_models(sim, profile.operators)
    declared = declared_crds(profile, releases)
    storage = ReleaseStorage()
    sim.release_records = storage
    ctx = HelmContext(sim, storage)
    states: dict[str, ReleaseState] = {}
    notes: list[str] = []
    upgrade_start = 0.0
    for cr in rendered.values():
        notes.extend(cr.notes)
    validation_at = len(notes)  # said after the run, here: only of objects that were sent
    if previous:
        upgrade_start, prev_notes = _install_previous(sim, ctx, releases, previous, states, horizon)
        notes += prev_notes
        notes.append(f"the change is applied at t={upgrade_start:g}s")
    known = frozenset(x.hr.ref for x in releases)
    kc = kustomization.Controller.begin(sim, next((r.kustomizations for r in releases if r.kustomizations), ()), states)
    for r in releases:
        notes.extend(r.notes)
        if r.hr.spec.suspend:
            # helmrelease_controller.go Reconcile: "reconciliation is suspended for this object",
            # returned before any action or condition; its dependents wait for its Ready
            sim.log("helm-controller", "suspended", f"HelmRelease/{r.hr.ref}", "reconciliation is suspended for this object")
            notes.append(
                f"HelmRelease {r.hr.ref} is suspended (spec.suspend: true): helm-controller does not reconcile it, "
                "so nothing of it is installed or upgraded and its dependents wait"
            )
            continue
        if r.source_failure is not None:
            sim.process(kc.gate(r.hr.ref, _source_not_ready(sim, r.hr, states, r.source_failure, known)))
            continue
        if r.chart is None:
            crds = declared.get(r.hr.ref, ())
            sim.process(kc.gate(r.hr.ref, _unmapped(sim, r.hr, states, unmapped_ready_after, crds)))
            served = f"; its CRDs ({', '.join(dict.fromkeys(c.kind for c in crds))}) are served from then on" if crds else ""
            notes.append(
                f"HelmRelease {r.hr.ref}: chart {r.hr.chart_name} is not mapped to a local chart "
                f"(--chart {r.hr.chart_name}=PATH); modelled as Ready {unmapped_ready_after:g}s after "
                f"its dependencies are{served}"
            )
            continue
        chart = rendered[r.hr.ref]
        hr_ctx = replace(tenant_context(ctx, r.hr, profile, kc.unowned(r.tree_objects)), storage_namespace=r.hr.storage_namespace)
        reconciler = Reconciler(hr_ctx, r.hr, _always(chart), states, known=known)
        sim.process(kc.gate(r.hr.ref, reconciler.run()))
    hold = getattr(faults, "settle_after", lambda: 0.0)()
    if hold:
        # a fault changes the cluster after Ready: run until the next interval reconcile saw it
        hold += max((r.hr.spec.interval for r in releases), default=0.0) + UNMAPPED_READY_AFTER
    _run_until_settled(
        sim, releases, states, upgrade_start + horizon, kc, hold=min(hold, upgrade_start + horizon), stop=stop
    )
    outcomes = [_outcome(r, states, storage, profile.name, rendered.get(r.hr.ref)) for r in releases]
    for r, o in zip(releases, outcomes, strict=True):
        kc.mark_not_applied(r.hr, o)
    notes[validation_at:validation_at] = _validation_notes(
        profile, [*rendered.values(), *previous.values()], sent=lambda ref: any(
            e.what in ("created", "apply-error") for e in sim.trace.of(ref)
        )
    )
    notes += kc.notes(next((r.tree_objects for r in releases if r.tree_objects), ())) + assumed_behaviours(sim.trace) + _idle_daemonsets(sim, profile, rendered.values())
    notes += _no_workload(rendered, {f"{o.namespace}/{o.name}": o.outcome for o in outcomes})
    notes += _assumed_namespaces(releases, [*rendered.values(), *previous.values()], profile)
    notes += _taken_over(sim)
    objects = _object_statuses(sim, rendered.values())
    notes += unreconciled_notes(
        profile.kubernetes_version,
        [res for cr in rendered.values() for res in cr.resources],
        profile.operators,
        {(o["kind"], o["namespace"] or "", o["name"]): o["status"] for o in objects},
    )
    return SimulationResult(
        profile.name, outcomes, objects, sim.trace, sim.now, upgrade_start, notes, sim, kc.outcomes()
    )


def _idle_daemonsets(sim: Simulation, profile: ClusterProfile, charts: Iterable[ChartRelease]) -> list[str]:
    """A note for each DaemonSet of a release that no node is eligible for: kstatus reads 0 of 0
    scheduled as Current (kubernetes-sigs/cli-utils pkg/kstatus/status/core.go daemonsetConditions),
    so the release is Ready with it running nowhere — worth one line."""
    out: list[str] = []
    for chart in charts:
        for res in chart.resources:
            if res.kind != "DaemonSet" or res.is_hook:
                continue
            live = sim.store.get("DaemonSet", res.namespace, res.name)
            if live is None or (live.get("status") or {}).get("desiredNumberScheduled") != 0:
                continue
            spec = ((res.body.get("spec") or {}).get("template") or {}).get("spec") or {}
            selector = spec.get("nodeSelector") or {}
            required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
            if selector:
                why = "its nodeSelector " + ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
            elif required:
                why = "its required node affinity"
            else:
                why = "its tolerations (every node has a taint it does not tolerate)"
            out.append(
                f"{res.ref} runs no pod: no node of {profile.name} matches {why}; kstatus reads 0 of 0 "
                "scheduled as Current, so the release is Ready with it running nowhere"
            )
    return out


def _taken_over(sim: Simulation) -> list[str]:
    """A note for each object the release took over from whoever made it (a platform's
    APIService, another release's object): helm-controller takes ownership by default, which
    plain ``helm install`` refuses."""
    out: list[str] = []
    for ev in sim.trace.find(what="adopted"):
        conflict = ev.data.get("conflict")
        if conflict and not any(n.startswith(f"{ev.obj} existed") for n in out):
            out.append(
                f"{ev.obj} existed and was not the release's; helm-controller took it over (take-ownership, its "
                "default), so the release now overwrites it and deletes it on uninstall; with "
                f"disableTakeOwnership: true, as helm install does, the install fails: {conflict}"
            )
    return out


def _no_workload(rendered: Mapping[str, ChartRelease], outcomes: Mapping[str, str]) -> list[str]:
    """A note for each release whose chart rendered no workload and no custom resource an
    operator could run one for (bitnami mastodon and gitlab-runner without their required values
    render none): a Ready says the objects were accepted, not that an application runs; any
    other outcome (kibana's claim nothing mounts) is not about an application either."""
    out: list[str] = []
    for ref, chart in rendered.items():
        if outcomes.get(ref, "Blocked") == "Blocked" or chart.render_error is not None:
            continue
        objects = [*chart.crds, *chart.resources]
        custom = any("." in r.group and not r.group.endswith(".k8s.io") for r in chart.resources)
        if custom or any(r.kind in POD_KINDS for r in objects):
            continue
        what = f"its {len(objects)} object{'s' if len(objects) != 1 else ''} were accepted" if objects else "it rendered no object at all"
        said = (
            f"Ready says {what}, not that an application runs"
            if outcomes[ref] == "Ready"
            else f"it ends {outcomes[ref]} without an application in it (see the values the chart needs to render one)"
        )
        out.append(
            f"HelmRelease {ref}: chart {chart.chart} renders no workload with these values (no Pod, Deployment, "
            f"StatefulSet, DaemonSet, Job or CronJob, hooks included): {said}"
        )
    return out


def _always(chart: ChartRelease) -> Callable[[bool], ChartRelease]:
    """A reconciler's chart source that gives ``chart`` for an install and an upgrade alike."""
    return lambda upgrade: chart


def with_catalog(releases: Sequence[ReleaseInput], entries: Sequence[Any]) -> list[ReleaseInput]:
    """``releases`` with user catalog ``entries`` (from ``.helmsim.yaml``) added to each."""
    from msgspec.structs import replace

    if not entries:
        return list(releases)
    return [replace(r, catalog=(*r.catalog, *entries)) for r in releases]


def user_catalog(releases: Sequence[ReleaseInput]) -> tuple[Any, ...]:
    """The catalog the simulation matches: the releases' user entries (each origin once, in
    order), then the built-in catalog."""
    from helmsim.cluster.catalog import catalog_entries

    seen: dict[tuple[str, str], Any] = {}
    for r in releases:
        for entry in r.catalog:
            seen.setdefault((entry.origin, entry.name), entry)
    return catalog_entries(tuple(seen.values()))


def _check_pod_budget(profile: ClusterProfile, charts: Sequence[ChartRelease]) -> None:
    """Refuse, before simulating, workloads that ask for more pods than ``--max-pods``."""
    total = 0
    for chart in charts:
        for res in chart.resources:
            pods = declared_pods(res.kind, res.body, len(profile.nodes))
            limits.check(
                "max_pods", pods, "replicas", subject=res.ref, file=res.source.path, line=res.source.line
            )
            total += pods
    limits.check("max_pods", total, "replicas in all releases")


def _validation_notes(
    profile: ClusterProfile, charts: Sequence[ChartRelease], *, sent: Callable[[str], bool] = lambda _ref: True
) -> list[str]:
    """What the API server's field validation cannot check here, said once: the served-API table
    not covering the profile's version, and custom resource kinds whose CRD carries no schema
    (of the objects ``sent`` says reached the API server: a failed Build sends none)."""
    out = [n for n in [coverage_note(profile.kubernetes_version)] if n]
    crds = [r.body for cr in charts for r in (*cr.crds, *cr.resources) if r.kind == "CustomResourceDefinition"]
    unchecked: dict[str, None] = {}
    for cr in charts:
        for res in cr.resources:
            if res.kind == "CustomResourceDefinition" or is_builtin(profile.kubernetes_version, res.api_version, res.kind):
                continue
            if builtin_served(profile.kubernetes_version, res.api_version, res.kind) is not None:
                continue  # a built-in kind the version does not serve: Build refuses it, no CRD applies
            if not sent(res.ref):
                continue
            group = res.group
            crd = next((c for c in crds if (c.get("spec") or {}).get("group") == group
                        and ((c.get("spec") or {}).get("names") or {}).get("kind") == res.kind), None)
            if crd_version_schema(crd, res.api_version.rsplit("/", 1)[-1]) is None:
                unchecked.setdefault(f"{res.kind} ({res.api_version})", None)
    if unchecked:
        out.append(
            "fields of " + ", ".join(unchecked) + " are not checked: no schema of their CRD is known "
            "(a profile CRD carries none); the API server would validate them against it"
        )
    return out


def _needed_namespaces(releases: Sequence[ReleaseInput], charts: Sequence[ChartRelease]) -> set[str]:
    """Namespaces assumed to exist already: those the HelmReleases use (their own, target and
    storage namespaces) and their objects use, except those a release creates itself (a
    Namespace object in its manifest)."""
    created = {res.name for cr in charts for res in cr.resources if res.kind == "Namespace"}
    used = {r.hr.namespace for r in releases} | {r.hr.target_namespace for r in releases}
    used |= {r.hr.storage_namespace for r in releases}
    used |= {res.namespace for cr in charts for res in cr.resources if res.namespace}
    return used - created


def _assumed_namespaces(releases: Sequence[ReleaseInput], charts: Sequence[ChartRelease], profile: ClusterProfile) -> list[str]:
    """The note naming the namespaces the run assumes exist while nothing in the input creates
    them: not the namespace of a HelmRelease given as is (one a Kustomization applies needs its
    namespace to exist), not a Namespace in a chart, the input tree or the profile, not
    a target namespace helm-controller creates (``install.createNamespace``: internal/action/
    install.go CreateNamespace), not one the API server creates."""
    from helmsim.cluster.admission import SYSTEM_NAMESPACES

    gated = kustomization.gated_releases(next((r.kustomizations for r in releases if r.kustomizations), ()))
    # a HelmRelease given as is lives in its namespace; one a Kustomization applies needs it
    known = set(SYSTEM_NAMESPACES) | {r.hr.namespace for r in releases if r.hr.ref not in gated}
    known |= {res.name for cr in charts for res in cr.resources if res.kind == "Namespace"}
    known |= {
        str((o.get("metadata") or {}).get("name"))
        for r in releases
        for o in (*r.tree_objects, *profile.objects)
        if o.get("kind") == "Namespace"
    }
    known |= {r.hr.target_namespace for r in releases if r.hr.spec.install.create_namespace}
    assumed = sorted(_needed_namespaces(releases, charts) - known)
    if not assumed:
        return []
    return [
        f"namespace{'s' if len(assumed) > 1 else ''} {', '.join(assumed)}: assumed to exist in the cluster (nothing in "
        "the input creates {}: no Namespace object, no install.createNamespace)".format("them" if len(assumed) > 1 else "it")
    ]


def _install_previous(
    sim: Simulation,
    ctx: HelmContext,
    releases: Sequence[ReleaseInput],
    previous: Mapping[str, ChartRelease],
    states: dict[str, ReleaseState],
    horizon: float,
) -> tuple[float, list[str]]:
    """Reconcile the previous generation of each release with helm-controller until it settles
    (Ready or Stalled), as the cluster was before the change; returns when and how it ended.

    The new generation then starts with fresh failure counters (helm-controller
    internal/action/reset.go MustResetFailures: the generation and values changed).
    """
    by_ref = {r.hr.ref: r for r in releases}
    prev_states: dict[str, ReleaseState] = {}
    procs = []
    for ref, chart in previous.items():
        hr = by_ref[ref].hr.model_copy(update={"spec": by_ref[ref].hr.spec.model_copy(update={"depends_on": ()})})
        rec = Reconciler(replace(ctx, storage_namespace=hr.storage_namespace), hr, _always(chart), prev_states, intervals=False)
        procs.append(sim.process(rec.run()))
    sim.env.run(until=sim.env.any_of([sim.env.all_of(procs), sim.env.timeout(horizon)]))
    notes = []
    for ref in previous:
        st = prev_states.get(ref) or ReleaseState()
        ready = st.get("Ready")
        how = "Ready" if st.ready else ("Stalled" if st.stalled else "not Ready")
        detail = f" ({ready.message})" if ready and not st.ready else ""
        notes.append(f"previous generation of {ref}: {how} at t={sim.now:g}s{detail}")
    for r in releases:
        # the change is a new generation: dependents see it not Ready until it reconciles again
        states[r.hr.ref] = ReleaseState()
        states[r.hr.ref].set("Ready", "Unknown", "Progressing", "new generation", sim.now)
    return sim.now, notes


def _unmapped(
    sim: Simulation, hr: HelmRelease, states: dict[str, ReleaseState], after: float, crds: Sequence[Any] = ()
) -> Any:
    st = states.setdefault(hr.ref, ReleaseState())
    while True:
        blocked = unready_dependency(hr, states)
        if blocked is None:
            break
        st.set("Ready", "False", "DependencyNotReady", blocked, sim.now)
        yield sim.sleep(DEPENDENCY_REQUEUE)
    yield sim.sleep(after)
    if crds:  # the chart's CRDs exist once its install succeeded (declared: unmappedReleases)
        install_declared_crds(sim, crds, actor=f"HelmRelease/{hr.ref} (not simulated)")
    st.set("Ready", "True", "InstallSucceeded", f"not simulated: chart {hr.chart_name} is not mapped", sim.now)
    st.ready_at = sim.now


def _source_not_ready(
    sim: Simulation, hr: HelmRelease, states: dict[str, ReleaseState], failure: SourceFailure, known: frozenset[str]
) -> Any:
    """helm-controller for a HelmRelease whose chart source fails: dependencies first, then the
    source's readiness (helmrelease_controller.go reconcileRelease), requeued for ever: 30s for
    a source not ready (--requeue-dependency), exponential backoff for a chart it cannot use."""
    st = states.setdefault(hr.ref, ReleaseState())
    failures = 0
    while True:
        blocked = unready_dependency(hr, states, known)
        if blocked is not None:
            st.set("Ready", "False", "DependencyNotReady", blocked, sim.now)
            yield sim.sleep(DEPENDENCY_REQUEUE)
            continue
        message = failure.condition_message
        if (current := st.get("Ready")) is None or current.message != message:
            sim.log("helm-controller", "condition", f"HelmRelease/{hr.ref}", f"Ready=False {failure.reason}: {message}",
                    type="Ready", status="False", reason=failure.reason)
        st.set("Ready", "False", failure.reason, message, sim.now)
        failures += 1
        if failure.reason == SOURCE_NOT_READY:
            yield sim.sleep(DEPENDENCY_REQUEUE)
        else:
            yield sim.sleep(min(REQUEUE_MAX, REQUEUE_MIN * 2 ** (failures - 1)))


def _run_until_settled(
    sim: Simulation, releases: Sequence[ReleaseInput], states: dict[str, ReleaseState], until: float,
    kc: kustomization.Controller | None = None,
    hold: float = 0.0,
    stop: Callable[[Simulation], bool] | None = None,
) -> None:
    """Advance in steps until every release is Ready, or can no longer change: Stalled, its
    chart source failing, or waiting on such a release; and every Kustomization finished a
    reconcile (a HelmRelease none applied then stays unapplied); or until ``stop(sim)``."""
    step = 5.0
    by_ref = {r.hr.ref: r for r in releases}
    while sim.now < until:
        sim.run(until=min(until, sim.now + step))
        if stop is not None and stop(sim):
            return
        ks_done = (kc is None or kc.settled()) and sim.now >= hold
        if ks_done and all(
            _settled(r.hr.ref, by_ref, states) or (kc is not None and kc.stays_unapplied(r.hr.ref)) for r in releases
        ):
            return
        if not sim.env._queue:  # nothing left to happen
            return


def _settled(ref: str, by_ref: Mapping[str, ReleaseInput], states: dict[str, ReleaseState]) -> bool:
    st = states.get(ref)
    return st is not None and (st.observed_ready or _stuck(ref, by_ref, states, frozenset()))


def _stuck(
    ref: str, by_ref: Mapping[str, ReleaseInput], states: dict[str, ReleaseState], path: frozenset[str]
) -> bool:
    """``ref`` cannot become Ready in this run: Stalled, stopped at its failing chart source,
    or depending (transitively) on such a release."""
    st, r = states.get(ref), by_ref.get(ref)
    if st is None or r is None or ref in path:  # a dependency cycle never gets Ready by itself
        return False
    ready = st.get("Ready")
    if st.stalled or (r.source_failure is not None and ready is not None and ready.reason == r.source_failure.reason):
        return True
    return any(_stuck(d, by_ref, states, path | {ref}) for d in r.hr.dependencies())


def _outcome(
    r: ReleaseInput,
    states: dict[str, ReleaseState],
    storage: ReleaseStorage,
    profile: str,
    chart: ChartRelease | None,
) -> ReleaseOutcome:
    st = states.get(r.hr.ref) or ReleaseState()
    ready = st.get("Ready")
    if r.hr.spec.suspend and not st.conditions:
        outcome: Outcome = "Blocked"
        ready = Condition("Ready", "Unknown", "Suspended", "reconciliation is suspended for this object (spec.suspend: true)", 0.0)
    elif st.stalled:
        outcome = "Stalled"
    elif st.observed_ready:
        outcome = "Ready"
    elif ready is not None and ready.reason == "DependencyNotReady":
        outcome = "Blocked"
    elif ready is not None and ready.status == "False":
        outcome = "Failed"
    else:
        outcome = "Progressing"
    stalled = st.get("Stalled")
    reason = stalled.reason if stalled else (ready.reason if ready else "")
    message = ready.message if ready else ""
    if stalled and ready:
        message = ready.message
    history = storage.history(r.hr.storage_namespace, r.hr.release_name)
    return ReleaseOutcome(
        name=r.hr.name,
        namespace=r.hr.namespace,
        release_name=r.hr.release_name,
        target_namespace=r.hr.target_namespace,
        profile=profile,
        outcome=outcome,
        ready=ready.status if ready else "Unknown",
        reason=reason,
        message=message,
        attempts=st.attempts,
        helm_status=[
            {"revision": h.revision, "status": h.status, "chart": h.chart, "description": h.description}
            for h in history
        ],
        ready_at=st.ready_at,
        simulated=chart is not None or r.source_failure is not None,  # unmapped: modelled, not predicted
        conditions={
            k: {"status": c.status, "reason": c.reason, "message": c.message}
            for k, c in sorted(st.conditions.items())
        },
        history=[dict(h) for h in st.history],
    )


def _object_statuses(sim: Simulation, charts: Sequence[ChartRelease] | Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str, str]] = set()
    for chart in charts:
        for res in chart.resources:
            if res.key in seen:
                continue
            seen.add(res.key)
            out.append(_object_status(sim, res))
    return out


def _object_status(sim: Simulation, res: Resource) -> dict[str, Any]:
    result = actions.live_status(sim, res, "flux-wait-jobs")
    return {
        "kind": res.kind,
        "namespace": res.namespace,
        "name": res.name,
        "hook": res.is_hook,
        "status": result.status.value,
        "message": result.message,
    }


__all__ = [
    "ChartSource",
    "ReleaseInput",
    "ReleaseOutcome",
    "SimulationResult",
    "simulate",
    "values_from_refs",
    "with_catalog",
    "with_declared_crds",
]


def with_config(releases: Sequence[ReleaseInput], cfg: Any) -> list[ReleaseInput]:
    """``releases`` with what a ``.helmsim.yaml`` (:class:`helmsim.config.Config`) adds to them:
    its behaviour catalog entries and the CRDs its ``unmappedReleases`` declare."""
    return with_declared_crds(with_catalog(releases, cfg.catalog), cfg.unmapped_releases)
