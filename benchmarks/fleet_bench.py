"""Benchmark: a 20-release × 4-profile × 3-values fleet, local pool vs Ray, on this machine.

The matrix is 20 of the rule fixtures' charts (tests/fixtures/rules/*/failing and */fixed),
each rehearsed with its own values and two extra values files, under kind, cilium-default,
cilium-always and eks-gp3: 60 rehearsals, 240 profile checks (fixes re-simulated). It is run
once on the local pool and twice on a Ray instance this script starts on 127.0.0.1 with as many
CPUs as the local pool has workers: the first Ray run starts the job's worker processes (each
imports the simulator and starts Helm's engine), the second finds them warm, as every run after
the first does in a long-lived driver. Ray's start-up is timed apart. Every report must be the
same bytes. Wall-clock times depend on the machine and its load.

Run: python benchmarks/fleet_bench.py [--runs N] [--workers W] [--ray-address ADDR]
With --ray-address (e.g. ray://head:10001) the Ray half runs on that cluster instead
(docs/fleet.md, "A real Ray cluster").
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from helmsim import taskpool
from helmsim.cluster.profile import load_profile
from helmsim.config import Config
from helmsim.diagnose.check import CheckOptions
from helmsim.diagnose.sampling import SamplingOptions
from helmsim.fleet import matrix as fm
from helmsim.fleet.run import prepare, run_fleet
from helmsim.report import findings as text_report

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "tests" / "fixtures" / "rules"
PROFILES = ("kind", "cilium-default", "cilium-always", "eks-gp3")


def charts(n: int = 20) -> list[Path]:
    found = sorted(p for p in RULES.glob("HS1*/*") if (p / "Chart.yaml").is_file())
    if len(found) < n:
        raise SystemExit(f"need {n} fixture charts, found {len(found)}")
    return found[:n]


def matrix(tmp: Path) -> fm.FleetMatrix:
    (tmp / "a-values.yaml").write_text("bench: {variant: a}\n", encoding="utf-8")
    (tmp / "b-values.yaml").write_text("bench: {variant: b}\n", encoding="utf-8")
    releases = tuple(
        fm.ReleaseEntry(name=f"{c.parent.name}-{c.name}", target=str(c), values=((), "a-values.yaml", "b-values.yaml"))
        for c in charts()
    )
    return fm.FleetMatrix(releases=releases, profiles=PROFILES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=0, help="sampled runs per profile of each rehearsal")
    parser.add_argument("--workers", type=int, default=taskpool.default_workers())
    parser.add_argument("--ray-address", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        m = matrix(tmp)
        specs = fm.expand(m, base=tmp)
        rehearsals = prepare(specs)
        profiles = [load_profile(p) for p in PROFILES]
        options = CheckOptions(sampling=SamplingOptions(args.runs, 1) if args.runs else None)

        def once(backend: taskpool.Backend) -> tuple[float, str, taskpool.PoolStats]:
            stats = taskpool.PoolStats(backend.name)
            start = time.perf_counter()
            report = run_fleet(rehearsals, profiles, config=Config(), options=options, backend=backend, stats=stats)
            took = time.perf_counter() - start
            return took, text_report.fleet_to_json(report, fail_on="error"), stats

        local_s, local_json, _ = once(taskpool.Backend("local", args.workers))
        if args.ray_address is None:
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # 127.0.0.1 only
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            import ray

            start = time.perf_counter()
            ray.init(address="local", num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
            ray_start = time.perf_counter() - start
        else:
            start = time.perf_counter()
            taskpool.connect(args.ray_address)
            ray_start = time.perf_counter() - start
        where = taskpool.Backend("ray", None, args.ray_address)
        cold_s, cold_json, _ = once(where)  # this job's first tasks start its Ray workers
        ray_s, ray_json, stats = once(where)
        assert cold_json == ray_json == local_json, "the Ray report must be the local report's bytes"
        n = len(rehearsals)
        print(f"fleet: {len(m.releases)} releases × {len(PROFILES)} profiles × 3 values = {n} rehearsals"
              + (f", {args.runs} sampled runs each" if args.runs else ""))
        print(f"  local ({args.workers} workers): {local_s:7.1f} s   {n / local_s:5.2f} rehearsals/s")
        print(f"  ray   ({stats.backend}), workers warm: {ray_s:7.1f} s   {n / ray_s:5.2f} rehearsals/s   "
              f"ray/local {ray_s / local_s:.2f}×")
        print(f"  ray   first run of the job (starts its workers): {cold_s:7.1f} s   ray/local {cold_s / local_s:.2f}×"
              f"   (Ray start-up {ray_start:.1f} s before it)")
        for line in stats.lines("rehearsal")[1:]:
            print("  " + line)


if __name__ == "__main__":
    main()
