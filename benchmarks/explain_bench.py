"""Benchmark: ``helmsim explain`` over a 10-hypothesis space on the seed-1 chart (issue 16).

The seed-1 example chart (an upgrade, the agent-manager's 90 s warm-up) under capa-cilium with
the observation of the real incident (examples/explain/seed1-incident.observation.yaml):
``--max-hypotheses 10`` (the baseline and the nine likeliest a priori), ``--runs`` sampled runs
per hypothesis plus one at nominal latencies, then each candidate fix re-simulated under every
reproducing hypothesis. Timed on the local cores (``--workers``, default 2: the issue's budget is
60 s on 2 cores). Wall-clock times depend on the machine and its load; the explanation itself is
seeded and the same on every run.

Run: python benchmarks/explain_bench.py [--runs N] [--workers W] [--hypotheses H]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from helmsim import taskpool
from helmsim.cluster.profile import load_profile
from helmsim.explain import Options, explain, load_observation
from helmsim.release_inputs import build_inputs

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "examples" / "seed1-migrate-race"
EXAMPLES = ROOT / "examples" / "explain"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--hypotheses", type=int, default=10)
    ap.add_argument("--fix-runs", type=int, default=3)
    args = ap.parse_args()
    releases = build_inputs(
        str(CHART),
        values=[str(EXAMPLES / "seed1-rollout-values.yaml")],
        sets=[],
        helmrelease=[str(CHART / "flux" / "agent-platform-connectivity.yaml")],
        charts=[],
        release_name=None,
        namespace="default",
        upgrade_from=str(CHART),
        upgrade_from_values=[str(CHART / "ci" / "previous-values.yaml")],
        upgrade_from_set=[],
    )
    observation = load_observation(EXAMPLES / "seed1-incident.observation.yaml")
    options = Options(
        runs=args.runs,
        max_hypotheses=args.hypotheses,
        fix_runs=args.fix_runs,
        backend=taskpool.Backend("local", args.workers),
    )
    start = time.perf_counter()
    ex = explain(releases, load_profile("capa-cilium"), observation, options)
    took = time.perf_counter() - start
    sims = len(ex.verdicts) * (args.runs + 1) + sum(len(f.converges) for f in ex.fixes) * (args.fix_runs + 1)
    print(f"explain seed 1 under capa-cilium: {len(ex.verdicts)} hypotheses x ({args.runs} sampled + 1 nominal) runs, "
          f"{len(ex.fixes)} fixes x {len(ex.reproducing)} reproducing x ({args.fix_runs} + 1) runs")
    print(f"  {sims} simulations on {args.workers} workers: {took:.1f} s ({sims / took:.1f} simulations/s)")
    print(f"  reproducing: {', '.join(v.hypothesis.id for v in ex.reproducing)}")
    print(f"  budget 60 s on 2 cores: {'within' if took < 60 else 'OVER'}")


if __name__ == "__main__":
    main()
