"""An object the cluster already holds (the APIService v1beta1.metrics.k8s.io k3s's, GKE's and
AKS's metrics-server registers: the profiles' ``objects``) and a release renders too: Helm
refuses it (helm/helm pkg/action/validate.go checkOwnership) unless helm-controller takes
ownership, its default (internal/action/install.go TakeOwnership = !DisableTakeOwnership)."""

from __future__ import annotations

import pytest
from realcharts_helpers import simulate_chart

from helmsim.cluster.profile import load_profile

CONFLICT = (
    'Unable to continue with install: APIService "v1beta1.metrics.k8s.io" exists and cannot be imported into the '
    'current release: invalid ownership metadata; label validation error: missing key "app.kubernetes.io/managed-by": '
    'must be set to "Helm"'
)


@pytest.mark.parametrize("profile", ["k3s", "gke-dataplane-v2", "aks-cilium"])
def test_managed_clusters_hold_the_metrics_apiservice(profile: str) -> None:
    assert any(o["kind"] == "APIService" and o["metadata"]["name"] == "v1beta1.metrics.k8s.io" for o in load_profile(profile).objects)


def test_helm_controller_takes_it_over_and_says_so() -> None:
    result = simulate_chart("apiservice-taken", "k3s")
    assert result.releases[0].outcome == "Ready"
    (note,) = [n for n in result.notes if n.startswith("APIService/v1beta1.metrics.k8s.io existed")]
    assert note.endswith(CONFLICT)


def test_without_take_ownership_the_install_fails() -> None:
    result = simulate_chart("apiservice-taken", "k3s", helmrelease=("flux/strict.yaml",))
    (release,) = result.releases
    assert release.outcome != "Ready"
    assert CONFLICT in release.message


def test_a_cluster_without_it_installs_quietly() -> None:
    result = simulate_chart("apiservice-taken", "kind")
    assert result.releases[0].outcome == "Ready"
    assert not [n for n in result.notes if "existed" in n]
