"""Benchmark: ``helmsim simulate`` on the seed examples and a generated 1,000-object release;
prints wall time, simulated seconds per wall-second, and simulate time / render time (issue 5).

Each scenario is run as the CLI runs it (``build_inputs`` then ``simulate``, nominal latencies).
Render time is Helm's engine rendering and parsing the same charts with the same values (the
first step of ``simulate``), measured on its own, so the ratio says how much the simulation
adds to a plain ``helm template``.

Run: python benchmarks/simulate_bench.py [--repeat R] [--objects N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine_bench import generate_chart  # benchmarks/ is on sys.path when run as a script

from helmsim import render
from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import ClusterProfile, load_profile
from helmsim.flux.inputs import default_helmrelease
from helmsim.inputs import load_release
from helmsim.simulate import ChartSource, ReleaseInput, SimulationResult, simulate

ROOT = Path(__file__).resolve().parents[1]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
SEED2 = ROOT / "examples" / "seed2-hf-cache"
FIX = ROOT / "tests" / "fixtures" / "e2e"


@dataclass(frozen=True)
class Scenario:
    name: str
    profile: str
    releases: Callable[[], list[ReleaseInput]]


def _example(
    example: Path, values: Sequence[Path] = (), previous: Sequence[Path] | None = None
) -> Callable[[], list[ReleaseInput]]:
    def build() -> list[ReleaseInput]:
        return build_inputs(
            str(example),
            values=[str(v) for v in values],
            sets=[],
            helmrelease=[str(example / "flux")],
            charts=[],
            release_name=None,
            namespace="default",
            upgrade_from=None if previous is None else str(example),
            upgrade_from_values=[str(v) for v in previous or ()],
            upgrade_from_set=[],
        )

    return build


def _generated(chart: Path) -> Callable[[], list[ReleaseInput]]:
    return lambda: [ReleaseInput(default_helmrelease("bench", "bench"), ChartSource(str(chart)))]


def _render_seconds(profile: ClusterProfile, releases: Sequence[ReleaseInput]) -> float:
    """Render and parse every chart of ``releases`` as simulate does (Helm engine included)."""
    start = time.perf_counter()
    for r in releases:
        for source, upgrade in ((r.chart, r.previous is not None), (r.previous, False)):
            if source is None:
                continue
            values = render.merge_values(
                render.merge_values(dict(r.values_from), r.hr.spec.values), source.values
            )
            opts = render.RenderOptions(
                release_name=r.hr.release_name,
                namespace=r.hr.target_namespace,
                values=values,
                kube_version=profile.kubernetes_version,
                api_versions=tuple(profile.helm_api_versions()),
                is_upgrade=upgrade,
                revision=2 if upgrade else 1,
            )
            rel = load_release(source.path, opts, include_crds=not upgrade)
            rel.parse(r.hr.target_namespace)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--objects", type=int, default=1000)
    args = parser.parse_args()
    fails = FIX / "seed1-migrate-fails-values.yaml"
    previous = [SEED1 / "ci" / "previous-values.yaml"]
    with tempfile.TemporaryDirectory() as tmp:
        chart = generate_chart(Path(tmp), args.objects)
        scenarios = [
            Scenario("seed2 kind (5 attempts, Stalled)", "kind", _example(SEED2)),
            Scenario(
                "seed2 kind hook fix (Ready)",
                "kind",
                _example(SEED2, [SEED2 / "ci" / "hook-values.yaml"]),
            ),
            Scenario("seed1 cilium-always install (Ready)", "cilium-always", _example(SEED1)),
            Scenario("seed1 migrate fails, install", "cilium-always", _example(SEED1, [fails])),
            Scenario(
                "seed1 migrate fails, upgrade", "cilium-always", _example(SEED1, [fails], previous)
            ),
            Scenario(
                "seed1 post-upgrade hook fails",
                "cilium-always",
                _example(SEED1, [SEED1 / "ci" / "post-upgrade-hook-values.yaml", fails], previous),
            ),
            Scenario(f"generated {args.objects}-object release", "eks-gp3", _generated(chart)),
        ]
        header = f"{'scenario':40s} {'outcome':9s} {'sim s':>8s} {'wall s':>8s} {'sim s/wall s':>13s} {'render s':>9s} {'sim/render':>10s} {'events':>7s}"
        print(f"best of {args.repeat} runs each; nominal latencies")
        print(header)
        print("-" * len(header))
        for sc in scenarios:
            _report(sc, args.repeat)


def _report(sc: Scenario, repeat: int) -> None:
    """Run one scenario ``repeat`` times and print its line (best wall and render times)."""
    profile = load_profile(sc.profile)
    releases = sc.releases()
    walls: list[float] = []
    result: SimulationResult | None = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = simulate(profile, releases)
        walls.append(time.perf_counter() - start)
    wall = min(walls)
    rendering = min(_render_seconds(profile, releases) for _ in range(repeat))
    assert result is not None
    outcome = result.releases[0].outcome
    print(
        f"{sc.name:40s} {outcome:9s} {result.end_time:8.1f} {wall:8.3f} "
        f"{result.end_time / wall:13,.0f} {rendering:9.3f} {wall / rendering:10.1f} {len(result.trace):7d}"
    )


if __name__ == "__main__":
    main()
