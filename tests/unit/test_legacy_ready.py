"""Helm's legacy ReadyChecker (helm/helm pkg/kube/ready.go), case by case."""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.helm.legacy_ready import is_ready


def _none(kind: str, ns: str | None) -> list[dict[str, Any]]:
    return []


def _obj(kind: str, spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None, gen: int = 1) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": "x", "namespace": "ns", "generation": gen, "uid": "u1"}, "spec": spec or {}, "status": status or {}}


@pytest.mark.parametrize(
    ("obj", "jobs", "ready", "error"),
    [
        (_obj("Pod", status={"conditions": [{"type": "Ready", "status": "True"}]}), False, True, None),
        (_obj("Pod", status={"phase": "Succeeded"}), False, False, None),  # completed pods never Ready
        (_obj("Job", {"backoffLimit": 2}, {"failed": 3}), False, True, None),  # not checked without --wait-for-jobs
        (_obj("Job", {"backoffLimit": 2}, {"failed": 3}), True, False, "job is failed: ns/x"),
        (_obj("Job", {"backoffLimit": 2, "completions": 1}, {"failed": 2}), True, False, None),
        (_obj("Job", {"completions": 1}, {"succeeded": 1}), True, True, None),
        (_obj("PersistentVolumeClaim", status={"phase": "Pending"}), False, False, None),
        (_obj("PersistentVolumeClaim", status={"phase": "Bound"}), False, True, None),
        (_obj("Service", {"type": "ClusterIP", "clusterIP": "10.96.0.5"}), False, True, None),
        (_obj("Service", {"type": "LoadBalancer", "clusterIP": "10.96.0.5"}), False, False, None),
        (_obj("Service", {"type": "LoadBalancer", "clusterIP": "10.96.0.5", "externalIPs": ["1.2.3.4"]}), False, True, None),
        (_obj("Service", {"type": "ExternalName"}), False, True, None),
        (_obj("CustomResourceDefinition", status={"conditions": [{"type": "NamesAccepted", "status": "False"}]}), False, True, None),
        (_obj("CustomResourceDefinition", status={"conditions": [{"type": "Established", "status": "False"}]}), False, False, None),
        (_obj("StatefulSet", {"replicas": 2}, {"observedGeneration": 1, "updatedReplicas": 2, "readyReplicas": 2, "currentRevision": "a", "updateRevision": "a"}), False, True, None),
        (_obj("StatefulSet", {"replicas": 2}, {"observedGeneration": 1, "updatedReplicas": 2, "readyReplicas": 1, "currentRevision": "a", "updateRevision": "a"}), False, False, None),
        (_obj("StatefulSet", {"replicas": 2, "updateStrategy": {"type": "OnDelete"}}, {"observedGeneration": 1}), False, True, None),
        (_obj("DaemonSet", {}, {"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberReady": 2}), False, True, None),
        (_obj("DaemonSet", {}, {"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberReady": 1}), False, False, None),
        (_obj("ConfigMap"), False, True, None),  # every other kind is ready at once
        (_obj("Widget", status={"conditions": [{"type": "Ready", "status": "False"}]}), False, True, None),
    ],
)
def test_ready_checker(obj: dict[str, Any], jobs: bool, ready: bool, error: str | None) -> None:
    verdict = is_ready(obj, _none, check_jobs=jobs)
    assert (verdict.ready, verdict.error) == (ready, error)


def test_deployment_uses_the_newest_replicaset_ready_replicas_minus_max_unavailable() -> None:
    template = {"metadata": {"labels": {"a": "b"}}}
    deploy = _obj("Deployment", {"replicas": 4, "template": template}, {"observedGeneration": 1})

    def lister(ready: int):  # type: ignore[no-untyped-def]
        rs = {
            "kind": "ReplicaSet",
            "metadata": {"name": "x-1", "generation": 1, "ownerReferences": [{"uid": "u1"}]},
            "spec": {"template": template},
            "status": {"observedGeneration": 1, "readyReplicas": ready},
        }
        return lambda kind, ns: [rs] if kind == "ReplicaSet" else []

    # maxUnavailable 25% of 4 rounded down = 1: 3 ready pods are enough
    assert is_ready(deploy, lister(3), check_jobs=False).ready
    assert not is_ready(deploy, lister(2), check_jobs=False).ready
    paused = _obj("Deployment", {"replicas": 4, "paused": True}, {})
    assert is_ready(paused, _none, check_jobs=False).ready
