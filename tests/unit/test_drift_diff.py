"""helmsim.flux.drift and the objectChange fault: what counts as drift, how it is summarized
(fluxcd/helm-controller internal/action/diff.go, internal/diff/summarize.go)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from helmsim.flux import drift
from helmsim.manifests import Resource, Source
from helmsim.scenario import Fault


def _res(kind: str, name: str) -> Resource:
    return Resource("v1", kind, name, "apps", {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}, Source("t.yaml", 0, 1))


def test_summary_lines_as_helm_controller_writes_them() -> None:
    changes = [
        drift.Change(_res("Service", "web"), "removed"),
        drift.Change(_res("ConfigMap", "cfg"), "changed", 1, 2, 0),
        drift.Change(_res("Secret", "s"), "excluded"),
    ]
    assert drift.summarize(changes) == (
        "Service/apps/web removed\nConfigMap/apps/cfg changed (1 additions, 2 changes, 0 removals)\nSecret/apps/s excluded"
    )
    # excluded objects are listed but are not drift (jsondiff DiffSet HasChanges)
    assert drift.has_changes(changes) and not drift.has_changes(changes[2:])


def test_ignore_pointer_removes_nested_and_escaped_keys() -> None:
    doc = {"spec": {"replicas": 3, "template": {"metadata": {"annotations": {"a/b": "x", "c": "y"}}}}, "list": [1, 2]}
    drift._drop(doc, "/spec/replicas")
    drift._drop(doc, "/spec/template/metadata/annotations/a~1b")
    drift._drop(doc, "/list/0")
    drift._drop(doc, "/missing/deep")
    assert doc == {"spec": {"template": {"metadata": {"annotations": {"c": "y"}}}}, "list": [2]}


@pytest.mark.parametrize(
    "spec",
    [
        {"at": 10, "object": "Deployment/apps/web"},  # neither set nor delete
        {"at": 10, "object": "Deployment/apps/web", "set": {"/spec/replicas": 2}, "delete": True},
        {"at": 10, "object": "Deployment/apps/web", "set": {"spec/replicas": 2}},  # not a pointer
        {"at": 10, "object": "web", "delete": True},  # not Kind/ns/name
    ],
)
def test_object_change_is_validated(spec: dict) -> None:
    with pytest.raises(ValidationError):
        Fault.model_validate({"objectChange": spec})


def test_object_change_accepts_cluster_scoped_objects() -> None:
    f = Fault.model_validate({"objectChange": {"at": 5, "object": "ClusterRole/reader", "delete": True}})
    assert f.kind == "objectChange" and f.spec.manager == "kubectl-edit"
