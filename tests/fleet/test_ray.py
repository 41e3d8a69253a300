"""The Ray backend on a real Ray cluster (127.0.0.1, 2 CPUs, shared by this module): `check
--runs`, `test --runs` and `fleet` give the bytes the local backend gives, Helm's library is
loaded at most once per worker, and a worker killed mid-run (a fleet through Ray Client, its
directory uploaded) is retried by Ray and reported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fleet_helpers import RULES, RayCluster, run, write_matrix

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "tests" / "scenario" / "charts" / "mini"


def test_check_runs_on_ray_are_the_local_bytes(ray_cluster: RayCluster, tmp_path: Path) -> None:
    write_matrix(tmp_path)
    args = ["check", str(RULES / "HS101" / "failing"), "-p", "coin.yaml", "--runs", "6", "--seed", "3",
            "--format", "json", "--no-verify"]
    local = run(args, tmp_path)
    ray = run([*args, "--backend", "ray", "--ray-address", ray_cluster.address], tmp_path)
    assert local[0] == ray[0] == 1
    assert '"runs": 6' in local[1]
    assert ray[1] == local[1]


def test_test_runs_on_ray_are_the_local_bytes(ray_cluster: RayCluster, tmp_path: Path) -> None:
    f = tmp_path / "mc.helmsim.yaml"
    f.write_text(
        f"""\
apiVersion: helmsim.dev/v1alpha1
kind: Scenario
releases:
  - chart: {MINI}
    values: {{job: {{enabled: false}}}}
expect:
  - release: mini
    within: 8s
""",
        encoding="utf-8",
    )
    args = ["test", str(f), "--runs", "8", "--seed", "5"]
    local = run(args, tmp_path)
    ray = run([*args, "--backend", "ray", "--ray-address", ray_cluster.address], tmp_path)
    assert "holds in" in local[1]
    assert ray == local


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("rayfleet")
    write_matrix(tmp)
    return tmp


@pytest.fixture(scope="module")
def local_fleet(fleet_dir: Path) -> tuple[int, str, str]:
    return run(["fleet", "--format", "json"], fleet_dir)


def test_fleet_on_ray_is_the_local_report_and_loads_helm_once_per_worker(
    ray_cluster: RayCluster, fleet_dir: Path, local_fleet: tuple[int, str, str]
) -> None:
    tmp_path, local = fleet_dir, local_fleet
    ray = run(["fleet", "--format", "json", "--backend", "ray", "--ray-address", ray_cluster.address,
               "--stats", "stats.json"], tmp_path)
    assert local[0] == ray[0] == 1
    assert ray[1] == local[1]
    stats = json.loads((tmp_path / "stats.json").read_text(encoding="utf-8"))
    assert stats["tasks"] == 3 and stats["retries"] == []
    assert sum(w["tasks"] for w in stats["workers"]) == 3
    for w in stats["workers"]:
        assert w["worker"].startswith("127.0.0.1 pid ")
        assert w["helmLoads"] <= 1  # a worker keeps its Helm engine for every later task
        assert w["peakRssBytes"] > 50 * 2**20  # Python and the simulator
        if w["helmLoads"]:
            assert w["helmEnginePeakRssBytes"] > 20 * 2**20  # Helm's Go runtime, in its child


def test_a_worker_killed_mid_run_is_retried_and_reported_through_ray_client(
    ray_cluster: RayCluster, fleet_dir: Path, local_fleet: tuple[int, str, str]
) -> None:
    tmp_path, local = fleet_dir, local_fleet
    helmsim = Path(sys.executable).with_name("helmsim")
    proc = subprocess.Popen(
        # through Ray Client, with this directory uploaded as the job's working_dir: the
        # relative chart paths resolve in the uploaded copy
        [str(helmsim), "fleet", "--format", "json", "-o", "killed.json", "--stats", "killed-stats.json",
         "--backend", "ray", "--ray-address", ray_cluster.client, "--ray-upload"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and proc.poll() is None and time.monotonic() < deadline:
        running = ray_cluster.running_tasks()  # worker → task, from the run's own ledger
        busy = set(ray_cluster.busy_workers())
        victims = sorted((int(w.rsplit(" ", 1)[1]), i) for w, i in running.items() if int(w.rsplit(" ", 1)[1]) in busy)
        if victims:
            pid, index = victims[0]
            os.kill(pid, signal.SIGKILL)
            if not ray_cluster.finished(index, f"127.0.0.1 pid {pid}"):
                killed = pid  # else it had just finished its task: try another one
        time.sleep(0.05)
    out, err = proc.communicate(timeout=300)
    assert killed is not None, f"no busy worker seen (fleet exited {proc.returncode}: {err})"
    assert proc.returncode == 1, err
    assert (tmp_path / "killed.json").read_text(encoding="utf-8") == local[1]  # nothing lost
    stats = json.loads((tmp_path / "killed-stats.json").read_text(encoding="utf-8"))
    lost = [w for r in stats["retries"] for w in r["lostWorkers"]]
    assert f"127.0.0.1 pid {killed}" in lost, (stats, err)
    assert f"worker 127.0.0.1 pid {killed} died while running it; Ray retried it" in err

