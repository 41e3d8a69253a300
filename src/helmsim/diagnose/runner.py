"""Run one profile of the check matrix: the nominal simulation, a tight-timing variant, and
variants with a fix applied to the rendered resources.

Every run goes through :func:`helmsim.simulate.simulate`; a fix changes the rendered resources
and hands them to ``simulate(prepared=…)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from msgspec.structs import replace

from helmsim.cluster.controllers.kubelet import Kubelet, image_key
from helmsim.cluster.engine import Simulation
from helmsim.cluster.latency import Constant, Empirical, LogNormal, Uniform, fixed
from helmsim.cluster.profile import ClusterProfile
from helmsim.diagnose.context import ProfileRun
from helmsim.flux.helmrelease import HelmRelease
from helmsim.helm.actions import ChartRelease
from helmsim.simulate import DEFAULT_HORIZON, ReleaseInput, prepare_charts, simulate

Transform = Callable[[str, ChartRelease], ChartRelease]
"""``(HelmRelease ref, rendered chart) -> changed chart`` (a fix on parsed resources)."""
HrTransform = Callable[[HelmRelease], HelmRelease]


def render_all(
    profile: ClusterProfile, releases: Sequence[ReleaseInput]
) -> tuple[dict[str, ChartRelease], dict[str, ChartRelease]]:
    """Rendered charts (target and ``--upgrade-from`` previous) of every mapped release, exactly
    as ``simulate`` renders them."""
    return prepare_charts(profile, releases)


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
                    images.add(image_key(v))  # the kubelet's cache holds normalised references
                else:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(sim.release_objects)
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
    rendered, previous = charts if charts is not None else render_all(profile, releases)
    result = simulate(profile, releases, horizon=horizon, prepared=(rendered, previous))
    return ProfileRun(profile, list(releases), result, rendered, previous, "nominal")


def run_tight(
    profile: ClusterProfile,
    releases: Sequence[ReleaseInput],
    *,
    horizon: float = DEFAULT_HORIZON,
    charts: tuple[dict[str, ChartRelease], dict[str, ChartRelease]] | None = None,
    stop: Callable[[Simulation], bool] | None = None,
) -> ProfileRun:
    """The same inputs under :func:`tight_profile` with warm images (races show up here);
    ``stop`` ends it early once what its reader needs is settled (``simulate(stop=…)``)."""
    tight = tight_profile(profile)
    rendered, previous = charts if charts is not None else render_all(profile, releases)
    result = simulate(tight, releases, horizon=horizon, setup=warm_images, prepared=(rendered, previous), stop=stop)
    result.profile = profile.name
    for o in result.releases:
        o.profile = profile.name
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
    charts: tuple[dict[str, ChartRelease], dict[str, ChartRelease]] | None = None,
) -> ProfileRun:
    """A run with ``transform`` applied to every rendered chart (and ``hr_transform`` to every
    HelmRelease), simulated from the changed resources (``simulate(prepared=…)``). ``charts``
    are the releases' rendered charts when ``hr_transform`` changes nothing Helm's engine
    reads (else they are rendered again from the transformed HelmReleases)."""
    if hr_transform is not None:
        releases = [replace(r, hr=hr_transform(r.hr)) for r in releases]
    rendered, previous = charts if charts is not None else render_all(profile, releases)
    if transform is not None:
        rendered = {ref: transform(ref, chart) for ref, chart in rendered.items()}
    prof = tight_profile(profile) if tight else profile
    result = simulate(
        prof, releases, horizon=horizon, setup=warm_images if tight else None, prepared=(rendered, previous)
    )
    result.profile = profile.name
    for o in result.releases:
        o.profile = profile.name
    return ProfileRun(profile, list(releases), result, rendered, previous, variant)


