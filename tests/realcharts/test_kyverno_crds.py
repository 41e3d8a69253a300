"""Kyverno's admission controller without its CRDs (kyverno/kyverno charts/kyverno
``crds.install=false``): cmd/kyverno/main.go sanityChecks GETs the CRDs clusterpolicies.kyverno.io
and policies.kyverno.io and exits 1 when either is missing. The image was unknown and the release
Ready at 35 s."""

from __future__ import annotations

from realcharts_helpers import restarts, simulate_chart

CHART = "kyverno-crds"


def test_without_its_crds_the_admission_controller_crash_loops() -> None:
    result = simulate_chart(CHART, values=("ci/no-crds-values.yaml",))
    assert result.releases[0].outcome == "Stalled"
    logs = [e.data.get("line") for e in result.trace if e.what == "container-log" and e.data.get("container") == "kyverno"]
    assert (
        '"sanity checks failed" err="failed to check CRD clusterpolicies.kyverno.io is installed: '
        'customresourcedefinitions.apiextensions.k8s.io "clusterpolicies.kyverno.io" not found"'
    ) in logs
    assert any(v >= 1 for k, v in restarts(result).items() if k.endswith("/kyverno"))


def test_with_its_crds_it_starts() -> None:
    result = simulate_chart(CHART)
    assert result.releases[0].outcome == "Ready"
    assert all(v == 0 for v in restarts(result).values())
