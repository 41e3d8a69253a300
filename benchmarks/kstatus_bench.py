"""Benchmark: kstatus of 100,000 mixed objects; prints objects/second.

Run: python benchmarks/kstatus_bench.py [--count N] [--reader core|flux-wait|flux-wait-jobs|hook]
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from typing import Any

from helmsim.kstatus import READERS, compute, read

NOW = datetime(2024, 5, 1, 10, 5, tzinfo=UTC)


def _meta(kind: str, i: int, **extra: Any) -> dict[str, Any]:
    return {"name": f"{kind.lower()}-{i}", "namespace": "bench", "generation": 1, **extra}


def _cond(type_: str, status: str, reason: str = "") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason}


def sample(i: int) -> dict[str, Any]:
    """The i-th object of a fixed mix of kinds and states (deterministic)."""
    n = i % 12
    if n in (0, 1):  # an available Deployment, then one past its progress deadline
        ok = n == 0
        status: dict[str, Any] = {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3}
        if ok:
            status.update(readyReplicas=3, availableReplicas=3, conditions=[
                _cond("Progressing", "True", "NewReplicaSetAvailable"), _cond("Available", "True")])
        else:
            status["conditions"] = [_cond("Progressing", "False", "ProgressDeadlineExceeded")]
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta("Deployment", i),
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "x"}}},
                "status": status}
    if n == 2:  # a crash-looping Pod
        waiting = {"waiting": {"reason": "CrashLoopBackOff"}}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": _meta("Pod", i, creationTimestamp="2024-05-01T10:00:00Z"),
                "status": {"phase": "Running", "conditions": [_cond("Ready", "False")],
                           "containerStatuses": [{"name": "app", "state": waiting}]}}
    if n == 3:
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta("PVC", i),
                "status": {"phase": "Pending"}}
    if n == 4:
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("Job", i),
                "status": {"startTime": "2024-05-01T10:00:00Z", "failed": 3,
                           "conditions": [_cond("Failed", "True", "BackoffLimitExceeded")]}}
    if n == 5:
        return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta("STS", i),
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "db"}}},
                "status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 2,
                           "currentReplicas": 3}}
    if n == 6:
        counts = ("desiredNumberScheduled", "currentNumberScheduled", "updatedNumberScheduled",
                  "numberAvailable", "numberReady")
        return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _meta("DaemonSet", i),
                "status": {"observedGeneration": 1, **dict.fromkeys(counts, 5)}}
    if n == 7:
        return {"apiVersion": "v1", "kind": "Service", "metadata": _meta("Service", i),
                "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1"}}
    if n == 8:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("ConfigMap", i),
                "data": {"k": "v"}}
    if n == 9:
        return {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                "metadata": _meta("HR", i),
                "status": {"observedGeneration": 1,
                           "conditions": [_cond("Ready", "True", "UpgradeSucceeded")]}}
    if n == 10:
        return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": f"crd{i}.example.com", "generation": 1},
                "status": {"conditions": [_cond("NamesAccepted", "True"),
                                          _cond("Established", "True")]}}
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta("PDB", i),
            "status": {"observedGeneration": 1}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--reader", choices=READERS, default=None,
                        help="use helmsim.kstatus.read with this reader instead of compute")
    args = parser.parse_args()
    objects = [sample(i) for i in range(args.count)]
    start = time.perf_counter()
    if args.reader is None:
        for obj in objects:
            compute(obj, now=NOW)
    else:
        for obj in objects:
            read(obj, reader=args.reader, now=NOW)
    elapsed = time.perf_counter() - start
    what = "compute" if args.reader is None else f"read(reader={args.reader})"
    rate = args.count / elapsed
    print(f"kstatus {what}: {args.count} objects in {elapsed:.3f}s = {rate:,.0f} objects/second")


if __name__ == "__main__":
    main()
