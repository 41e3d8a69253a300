"""Run one profile of the check matrix: the nominal simulation, a tight-timing variant, and
variants with a fix applied to the rendered resources.

Every run goes through :func:`helmsim.simulate.simulate`. A fix changes rendered resources,
which ``simulate`` cannot take directly, so :func:`run_transformed` renders, transforms, and
hands ``simulate`` the result as a rendered manifest (a ``simulate(..., transform=...)`` seam
would remove the temporary files).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from helmsim import render
from helmsim.cluster.controllers.kubelet import Kubelet
from helmsim.cluster.engine import Simulation
from helmsim.cluster.latency import Constant, Empirical, LogNormal, Uniform, fixed
from helmsim.cluster.profile import ClusterProfile
from helmsim.diagnose.context import ProfileRun
from helmsim.flux.helmrelease import HelmRelease
from helmsim.helm.actions import ChartRelease
from helmsim.inputs import load_release
from helmsim.simulate import DEFAULT_HORIZON, ChartSource, ReleaseInput, simulate

Transform = Callable[[str, ChartRelease], ChartRelease]
"""``(HelmRelease ref, rendered chart) -> changed chart`` (a fix on parsed resources)."""
HrTransform = Callable[[HelmRelease], HelmRelease]


def render_chart(
    hr: HelmRelease,
    source: ChartSource,
    profile: ClusterProfile,
    values_from: Mapping[str, Any],
    *,
    upgrade: bool,
) -> ChartRelease:
    """The chart of ``hr`` as ``helmsim.simulate`` renders it (same values order, capabilities)."""
    values = render.merge_values(
        render.merge_values(dict(values_from), hr.spec.values), source.values
    )
    opts = render.RenderOptions(
        release_name=hr.release_name,
        namespace=hr.target_namespace,
        values=values,
        kube_version=profile.kubernetes_version,
        api_versions=tuple(profile.helm_api_versions()),
        is_upgrade=upgrade,
        revision=2 if upgrade else 1,
    )
    rel = load_release(source.path, opts, include_crds=not upgrade)
    parsed = rel.parse(hr.target_namespace)
    chart = f"{rel.chart_name}@{rel.chart_version}" if rel.from_chart else hr.chart_name
    return ChartRelease(
        name=hr.release_name,
        namespace=hr.target_namespace,
        chart=chart,
        resources=tuple(parsed.resources),
        crds=tuple(rel.parse_crds().resources),
    )


def render_all(
    profile: ClusterProfile, releases: Sequence[ReleaseInput]
) -> tuple[dict[str, ChartRelease], dict[str, ChartRelease]]:
    """Rendered charts (target and ``--upgrade-from`` previous) of every mapped release."""
    rendered: dict[str, ChartRelease] = {}
    previous: dict[str, ChartRelease] = {}
    for r in releases:
        if r.chart is None:
            continue
        rendered[r.hr.ref] = render_chart(
            r.hr, r.chart, profile, r.values_from, upgrade=r.previous is not None
        )
        if r.previous is not None:
            previous[r.hr.ref] = render_chart(
                r.hr, r.previous, profile, r.values_from, upgrade=False
            )
    return rendered, previous


# --- the tight-timing variant ---------------------------------------------------------------------
def upper_bound(lat: Any) -> float:
    """A latency's pessimistic value: the max of a uniform or empirical distribution, the
    ~98th percentile (median·e^(2σ)) of a lognormal, the value of a constant."""
    import math

    if isinstance(lat, Uniform):
        return float(lat.max)
    if isinstance(lat, Empirical):
        return float(max(lat.samples))
    if isinstance(lat, LogNormal):
        return float(lat.median) * math.exp(2 * lat.sigma)
    if isinstance(lat, Constant):
        return float(lat.value)
    return float(lat)


def tight_profile(profile: ClusterProfile) -> ClusterProfile:
    """``profile`` with policies propagating as slowly as the profile allows."""
    cni = profile.cni.model_copy(
        update={
            "policy_propagation_seconds": fixed(upper_bound(profile.cni.policy_propagation_seconds))
        }
    )
    return profile.model_copy(update={"cni": cni})


def warm_images(sim: Simulation) -> None:
    """``setup`` hook: every image of the release objects is already on every node."""
    images: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k == "image" and isinstance(v, str):
                    images.add(v)
                else:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(getattr(sim, "release_objects", []))
    kubelet = next((c for c in sim.controllers if isinstance(c, Kubelet)), None)
    if kubelet is None:
        return
    for node in sim.profile.nodes:
        kubelet.images[node.name] |= images


TIGHT_DESCRIPTION = (
    "tight timing: images already on the node, policy propagation at its upper bound"
)


# --- runs -------------------------------------------------------------------------------------------
def run_nominal(
    profile: ClusterProfile,
    releases: Sequence[ReleaseInput],
    *,
    horizon: float = DEFAULT_HORIZON,
    charts: tuple[dict[str, ChartRelease], dict[str, ChartRelease]] | None = None,
) -> ProfileRun:
    """The profile's deterministic simulation (nominal latencies), via ``simulate``."""
    result = simulate(profile, releases, horizon=horizon)
    rendered, previous = charts if charts is not None else render_all(profile, releases)
    return ProfileRun(profile, list(releases), result, rendered, previous, "nominal")


def run_tight(
    profile: ClusterProfile,
    releases: Sequence[ReleaseInput],
    *,
    horizon: float = DEFAULT_HORIZON,
    charts: tuple[dict[str, ChartRelease], dict[str, ChartRelease]] | None = None,
) -> ProfileRun:
    """The same inputs under :func:`tight_profile` with warm images (races show up here)."""
    tight = tight_profile(profile)
    result = simulate(tight, releases, horizon=horizon, setup=warm_images)
    result.profile = profile.name
    for o in result.releases:
        o.profile = profile.name
    rendered, previous = charts if charts is not None else render_all(profile, releases)
    return ProfileRun(profile, list(releases), result, rendered, previous, "tight")


def run_transformed(
    profile: ClusterProfile,
    releases: Sequence[ReleaseInput],
    *,
    transform: Transform | None = None,
    hr_transform: HrTransform | None = None,
    tight: bool = False,
    horizon: float = DEFAULT_HORIZON,
    variant: str = "fix",
) -> ProfileRun:
    """A run with ``transform`` applied to every rendered chart (and ``hr_transform`` to every
    HelmRelease).

    ``simulate`` renders charts itself, so the changed resources are written as a rendered
    manifest (one YAML file per release, CRDs of ``crds/`` first) into a temporary directory and
    simulated from there: only the public ``simulate`` API is used.
    """
    if hr_transform is not None:
        releases = [replace(r, hr=hr_transform(r.hr)) for r in releases]
    rendered, previous = render_all(profile, releases)
    if transform is not None:
        rendered = {ref: transform(ref, chart) for ref, chart in rendered.items()}
    prof = tight_profile(profile) if tight else profile
    with tempfile.TemporaryDirectory(prefix="helmsim-fix-") as tmp:
        inputs: list[ReleaseInput] = []
        for i, r in enumerate(releases):
            chart = rendered.get(r.hr.ref)
            if chart is None or r.chart is None:
                inputs.append(r)
                continue
            path = Path(tmp) / f"{i}-{r.hr.name}.yaml"
            path.write_text(_manifest(chart), encoding="utf-8")
            inputs.append(replace(r, chart=ChartSource(str(path), {})))
        result = simulate(prof, inputs, horizon=horizon, setup=warm_images if tight else None)
    result.profile = profile.name
    for o in result.releases:
        o.profile = profile.name
    return ProfileRun(profile, list(releases), result, rendered, previous, variant)


def _manifest(chart: ChartRelease) -> str:
    """The chart's objects as one multi-document YAML manifest (CRDs first)."""
    docs = [res.body for res in (*chart.crds, *chart.resources)]
    return "".join("---\n" + yaml.safe_dump(d, sort_keys=False, allow_unicode=True) for d in docs)
