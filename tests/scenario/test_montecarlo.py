"""Monte Carlo: seeded, reproducible, parallel runs; Wilson intervals; replayable failing seeds."""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from helmsim import montecarlo as mc
from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import load_profile
from helmsim.errors import InputError

ROOT = Path(__file__).parents[2]


@dataclass(frozen=True)
class Coin:
    """A cheap picklable task: 'heads' with probability p, decided by the run seed."""

    p: float

    def __call__(self, seed: int) -> tuple[mc.Observation, ...]:
        heads = random.Random(seed).random() < self.p
        return (mc.Observation("coin", "heads", heads, True),)


# Reference values: Wilson (1927) score interval, z = 1.96 (as tabulated e.g. by Newcombe 1998,
# "Two-sided confidence intervals for the single proportion", method 3).
@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (10, 10, 0.7225, 1.0)],
)
def test_wilson_interval(k: int, n: int, lo: float, hi: float) -> None:
    got = mc.wilson(k, n)
    assert got == pytest.approx((lo, hi), abs=5e-4)


def test_run_seeds_are_stable_and_distinct() -> None:
    seeds = [mc.run_seed(1, i) for i in range(1000)]
    assert len(set(seeds)) == 1000
    assert mc.run_seed(1, 0) == mc.run_seed(1, 0) != mc.run_seed(2, 0)
    assert all(0 <= s < 2**48 for s in seeds)


def test_same_seed_same_report_whatever_the_workers() -> None:
    one = mc.run_many(Coin(0.3), 200, 7, workers=1)
    two = mc.run_many(Coin(0.3), 200, 7, workers=2)
    assert one == two
    text = mc.render_text(one, title="t", replay="r")
    assert text == mc.render_text(two, title="t", replay="r")
    assert mc.run_many(Coin(0.3), 200, 8, workers=1) != one


def test_the_interval_narrows_and_covers_the_truth_as_runs_grow() -> None:
    small = mc.run_many(Coin(0.3), 50, 1, workers=1).find("coin", "heads")
    large = mc.run_many(Coin(0.3), 5000, 1, workers=1).find("coin", "heads")
    assert small is not None and large is not None
    width = lambda s: s.interval[1] - s.interval[0]
    assert width(large) < width(small) / 5
    assert large.interval[0] < 0.3 < large.interval[1]


def test_the_reported_seed_replays_a_run_where_it_happened() -> None:
    report = mc.run_many(Coin(0.2), 100, 3, workers=1)
    stat = report.find("coin", "heads")
    assert stat is not None and stat.seed is not None
    assert Coin(0.2)(stat.seed)[0].happened


def test_bad_runs_and_backend() -> None:
    with pytest.raises(InputError, match="at least 1 run"):
        mc.run_many(Coin(0.5), 0, 1)
    with pytest.raises(InputError, match="expected local or ray"):
        mc.run_many(Coin(0.5), 2, 1, backend="mars")  # type: ignore[arg-type]


def test_ray_backend_without_ray_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed: import fails
    with pytest.raises(InputError, match=r"pip install 'helmsim\[ray\]'"):
        mc.run_many(Coin(0.5), 4, 1, backend="ray")


def test_seed1_race_probabilities_are_reproducible() -> None:
    """Seed 1 under cilium-always with a heavy-tailed policy propagation (a few runs)."""
    releases = build_inputs(
        str(ROOT / "examples" / "seed1-migrate-race"),
        values=[str(ROOT / "examples" / "scenarios" / "seed1" / "values" / "long-warmup-values.yaml")],
        sets=[],
        helmrelease=[str(ROOT / "examples" / "seed1-migrate-race" / "flux" / "agent-platform-connectivity.yaml")],
        charts=[],
        release_name=None,
        namespace="default",
        upgrade_from=None,
        upgrade_from_values=[],
        upgrade_from_set=[],
    )
    profile = load_profile(str(ROOT / "examples" / "scenarios" / "profiles" / "cilium-always-slow-policy.yaml"))
    task = mc.SimulateTask(profile, tuple(releases), 3600.0, 60.0)
    a = mc.run_many(task, 6, 1, workers=1)
    b = mc.run_many(task, 6, 1, workers=1)
    assert a == b
    job = "Job kagent/agent-platform-connectivity-agent-manager-migrate-b49599d7"
    denied = a.find(job, "first attempt denied (a connection of its first pod dropped)")
    assert denied is not None and denied.runs == 6
    assert a.find("HelmRelease agent-platform/agent-platform-connectivity", "first attempt failed") is not None
    if denied.seed is not None:  # replay the reported seed alone: the same thing happens
        replay = {(o.group, o.label): o.happened for o in task(denied.seed)}
        assert replay[(job, denied.label)]
