"""The API server's cross-field validation of a PodDisruptionBudget and a
HorizontalPodAutoscaler (kubernetes pkg/apis/policy/validation/validation.go
ValidatePodDisruptionBudgetSpec, pkg/apis/autoscaling/validation/validation.go
validateHorizontalPodAutoscalerSpec). bitnami fluent-bit with ``pdb.minAvailable=1`` keeps its
default ``maxUnavailable: 50%``, and ``autoscaling.hpa.minReplicas=5`` stays above the default
``maxReplicas: 3``: helmsim checked only field types, so both were Ready where the install fails."""

from __future__ import annotations

from realcharts_helpers import simulate_chart

CHART = "spec-validation"


def _error(result: object) -> str:
    release = result.releases[0]  # type: ignore[attr-defined]
    return str(release.message)


def test_the_defaults_install() -> None:
    assert simulate_chart(CHART).releases[0].outcome == "Ready"


def test_a_budget_with_both_bounds_is_refused() -> None:
    result = simulate_chart(CHART, values=("ci/pdb-both-values.yaml",))
    assert result.releases[0].outcome == "Stalled"
    assert (
        'PodDisruptionBudget.policy "app" is invalid: spec: Invalid value: policy.PodDisruptionBudgetSpec{…}: '
        "minAvailable and maxUnavailable cannot be both set"
    ) in _error(result)


def test_an_autoscaler_whose_maximum_is_below_its_minimum_is_refused_on_install_and_upgrade() -> None:
    want = 'HorizontalPodAutoscaler.autoscaling "app" is invalid: spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`'
    result = simulate_chart(CHART, values=("ci/hpa-min-above-max-values.yaml",))
    assert result.releases[0].outcome == "Stalled" and want in _error(result)
    upgrade = simulate_chart(CHART, values=("ci/hpa-min-above-max-values.yaml",), upgrade_from_values=())
    assert upgrade.releases[0].outcome != "Ready" and want in _error(upgrade)
