"""``contour certgen --kube`` in a pre-install hook writes the Secrets the Deployment mounts
(projectcontour/contour cmd/contour/certgen.go); helmsim, knowing no behaviour for the program,
reported them missing (HS114) and the release Stalled, where it installs."""

from __future__ import annotations

import pytest
from realcharts_helpers import check_chart, simulate_chart


@pytest.mark.parametrize("prefix", ["", "edge-"])
def test_the_hook_writes_the_secrets_the_pods_mount(prefix: str) -> None:
    result = simulate_chart("contour-certgen", sets=(f"prefix={prefix}",) if prefix else ())
    assert result.releases[0].outcome == "Ready"
    assert result.sim is not None
    names = {s["metadata"]["name"] for s in result.sim.store.list("Secret", "default")}
    assert {f"{prefix}contourcert", f"{prefix}envoycert"} <= names


def test_a_job_denied_the_api_server_is_not_said_to_be_never_ready() -> None:
    report = check_chart("contour-certgen", "cilium-always", release_name="contour")
    (finding,) = [f for f in report.findings if f.rule == "HS113" and "Job/default/certgen" in f.message]
    assert "gives up (dial tcp 10.96.0.1:443: i/o timeout) and exits 1" in finding.message
    assert "never Ready" not in finding.message and "readiness probe" not in finding.message
