"""Immutable-field rejections, as the API server words them and Helm wraps them.

Table: tests/conformance/data/helm/immutable_fields.yaml (one row per rule, each naming the
Kubernetes validation it follows and, where one exists, a public report of the real text).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from helmsim.helm.immutable import quantity, violations

_ROWS = yaml.safe_load(
    (Path(__file__).parent / "data" / "helm" / "immutable_fields.yaml").read_text(encoding="utf-8")
)["rows"]


@pytest.mark.parametrize("row", _ROWS, ids=[r["id"] for r in _ROWS])
def test_immutable_field_table(row: dict[str, Any]) -> None:
    assert row.get("source"), "every row cites the validation it follows"
    got = violations(
        row["old"],
        row["new"],
        live=row.get("live"),
        storage_classes=row.get("storage_classes"),
        server_side=bool(row.get("server_side")),
        kube_version=row.get("kube_version"),
        namespace=row.get("namespace", "default"),
    )
    expected = row["expected"]
    assert got == ([] if expected == [] else [expected])


def test_unchanged_objects_of_every_kind_pass() -> None:
    """Re-applying the same manifest never trips a rule (the rules compare, they do not guess)."""
    for row in _ROWS:
        assert violations(row["old"], row["old"], live=row.get("live"),
                          storage_classes=row.get("storage_classes")) == [], row["id"]


def test_secret_values_never_appear_in_messages() -> None:
    old = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "immutable": True,
           "stringData": {"password": "hunter2-old"}}
    new = {**old, "type": "kubernetes.io/basic-auth", "stringData": {"password": "hunter2-new"}}
    (message,) = violations(old, new)
    assert "hunter2" not in message
    assert 'type: Invalid value: "kubernetes.io/basic-auth": field is immutable' in message


def test_unknown_kinds_have_no_rules() -> None:
    cnp = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy", "metadata": {"name": "p"},
           "spec": {"endpointSelector": {}}}
    assert violations(cnp, {**cnp, "spec": {"endpointSelector": {"matchLabels": {"a": "b"}}}}) == []


def test_bad_kube_version_is_rejected() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}
    with pytest.raises(ValueError, match="not a Kubernetes version"):
        violations(job, job, kube_version="latest")


@pytest.mark.parametrize(
    ("text", "value"),
    [("10Gi", 10 * 2**30), ("10240Mi", 10 * 2**30), ("1.5Gi", 3 * 2**29), ("500m", 0.5),
     ("1e3", 1000), ("2k", 2000), ("1G", 10**9), (3, 3)],
)
def test_quantity(text: Any, value: float) -> None:
    assert quantity(text) == value


def test_quantity_rejects_garbage() -> None:
    assert quantity("ten") is None
    assert quantity("10GB") is None
