"""Cross-field spec validation (helmsim.cluster.specvalidation), rows derived from kubernetes
pkg/apis/policy/validation/validation_test.go TestValidateMinAvailablePodDisruptionBudgetSpec /
TestValidatePodDisruptionBudgetSpec and pkg/apis/autoscaling/validation/validation_test.go
TestValidateHorizontalPodAutoscaler (the values and the messages they expect)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helmsim.cluster.specvalidation import horizontal_pod_autoscaler, pod_disruption_budget, spec_errors


def _pdb(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "spec": spec}


def _hpa(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "spec": spec}


@pytest.mark.parametrize(
    ("spec", "errors"),
    [
        ({"minAvailable": 1}, []),
        ({"maxUnavailable": "50%"}, []),
        ({"minAvailable": "100%"}, []),
        ({"minAvailable": 1, "maxUnavailable": "50%"}, ["minAvailable and maxUnavailable cannot be both set"]),
        ({"minAvailable": -1}, ["must be greater than or equal to 0"]),
        ({"maxUnavailable": "101%"}, ["must not be greater than 100%"]),
        ({"minAvailable": "1.1%"}, ["a valid percent string must be a numeric string followed by an ending '%'"]),
    ],
)
def test_budget_rows(spec: dict[str, Any], errors: list[str]) -> None:
    found = pod_disruption_budget(_pdb(**spec))
    assert len(found) == len(errors) and all(want in got for want, got in zip(errors, found, strict=True))


@pytest.mark.parametrize(
    ("spec", "errors"),
    [
        ({"minReplicas": 1, "maxReplicas": 5}, []),
        ({"maxReplicas": 1}, []),
        ({"minReplicas": 0, "maxReplicas": 5}, ["spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"]),
        ({"minReplicas": -1, "maxReplicas": 5}, ["spec.minReplicas: Invalid value: -1: must be greater than or equal to 1"]),
        ({"minReplicas": 7, "maxReplicas": 5}, ["spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`"]),
        (
            {"minReplicas": 1, "maxReplicas": 0},
            [
                "spec.maxReplicas: Invalid value: 0: must be greater than 0",
                "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
            ],
        ),
    ],
)
def test_autoscaler_rows(spec: dict[str, Any], errors: list[str]) -> None:
    assert horizontal_pod_autoscaler(_hpa(**spec)) == errors


def test_other_kinds_and_groups_are_not_validated() -> None:
    assert spec_errors({"apiVersion": "example.com/v1", "kind": "PodDisruptionBudget", "spec": {"minAvailable": 1, "maxUnavailable": 1}}) == []
    assert spec_errors(_pdb(minAvailable=1, maxUnavailable=1)) != []
    assert spec_errors({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "spec": {"minReplicas": 3, "maxReplicas": 2}}) != []


_values = st.one_of(st.none(), st.booleans(), st.integers(-5, 200), st.text(max_size=6), st.lists(st.integers(), max_size=2))


@given(st.dictionaries(st.sampled_from(["minAvailable", "maxUnavailable", "minReplicas", "maxReplicas", "x"]), _values))
def test_any_spec_is_read_without_error(spec: dict[str, Any]) -> None:
    for obj in (_pdb(**spec), _hpa(**spec), {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "spec": "x"}):
        assert all(isinstance(e, str) and e for e in spec_errors(obj))
    both = spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None
    assert both == any("cannot be both set" in e for e in pod_disruption_budget(_pdb(**spec)))
