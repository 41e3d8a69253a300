"""Benchmark: Monte-Carlo runs per second per core for the seed-1 example (issue 7).

The task is the one ``helmsim simulate --runs N`` runs: seed 1's chart and HelmReleases on the
cilium-always profile with a heavy-tailed policy propagation (examples/scenarios/profiles/
cilium-always-slow-policy.yaml) and the agent-manager's 150 s warm-up
(examples/scenarios/seed1/values/long-warmup-values.yaml). It is timed once on one core
(in-process) and once over every local core (processes), and prints runs/second/core for both.
Wall-clock times depend on the machine and its load; the report itself is seeded and identical.

Run: python benchmarks/montecarlo_bench.py [--runs N] [--workers W]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from helmsim import montecarlo as mc
from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import load_profile

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "examples" / "seed1-migrate-race"
PROFILE = ROOT / "examples" / "scenarios" / "profiles" / "cilium-always-slow-policy.yaml"
VALUES = ROOT / "examples" / "scenarios" / "seed1" / "values" / "long-warmup-values.yaml"


def task() -> mc.SimulateTask:
    releases = build_inputs(
        str(CHART),
        values=[str(VALUES)],
        sets=[],
        helmrelease=[str(CHART / "flux")],
        charts=[],
        release_name=None,
        namespace="default",
        upgrade_from=None,
        upgrade_from_values=[],
        upgrade_from_set=[],
    )
    return mc.SimulateTask(load_profile(str(PROFILE)), tuple(releases), 3600.0, 60.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=mc.default_workers())
    args = parser.parse_args()
    t = task()
    t(0)  # warm up: imports, Helm's engine, caches

    start = time.perf_counter()
    one = mc.run_many(t, args.runs, 1, workers=1)
    serial = time.perf_counter() - start

    start = time.perf_counter()
    many = mc.run_many(t, args.runs, 1, workers=args.workers)
    parallel = time.perf_counter() - start
    assert one == many, "the report must not depend on the number of workers"

    print(f"seed-1 Monte Carlo, {args.runs} runs")
    print(f"  1 core:  {args.runs / serial:7.1f} runs/s   {args.runs / serial:7.1f} runs/s/core")
    print(
        f"  {args.workers} cores: {args.runs / parallel:7.1f} runs/s   "
        f"{args.runs / parallel / args.workers:7.1f} runs/s/core (process start-up included)"
    )


if __name__ == "__main__":
    main()
