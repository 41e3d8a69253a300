"""metrics-server on a cluster whose kubelets serve self-signed certificates (tests/realcharts/
README.md: "Programs that cannot work"): /readyz fails ("no metrics to serve") until a scrape
succeeds, and it cannot verify kubeadm's self-signed kubelet certificates without
--kubelet-insecure-tls (kubernetes-sigs/metrics-server pkg/server/server.go), so on kind it is
never Ready."""

from __future__ import annotations

import pytest
from realcharts_helpers import restarts, simulate_chart

from helmsim.cluster.profile import profile_from_mapping

INSECURE = ("ci/insecure-values.yaml",)


def test_on_kind_its_readiness_never_passes_and_the_wait_times_out() -> None:
    # before, the image was unknown and the release Ready at 10 s
    result = simulate_chart("metrics-server-kubelet-tls", "kind")
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    assert any(
        e.message == "Readiness probe failed: HTTP probe failed with statuscode: 500"
        for e in result.trace if e.what == "event"
    )
    assert all(n == 0 for n in restarts(result).values())  # its /livez passes: never killed


@pytest.mark.parametrize(("profile", "values"), [("kind", INSECURE), ("eks-gp3", ()), ("cilium-always", INSECURE)])
def test_insecure_tls_or_ca_signed_kubelets_get_it_ready(profile: str, values: tuple[str, ...]) -> None:
    (release,) = simulate_chart("metrics-server-kubelet-tls", profile, values=values).releases
    assert release.outcome == "Ready", release.message


def test_a_profile_says_how_its_kubelets_certificates_are_signed() -> None:
    kubeadm_on_aws = profile_from_mapping(
        {"extends": "eks-gp3", "name": "self-managed", "kubeletServingCertificates": "self-signed"}, source="test"
    )
    (release,) = simulate_chart("metrics-server-kubelet-tls", kubeadm_on_aws).releases
    assert release.outcome == "Stalled", release.message
