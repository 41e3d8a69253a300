"""``contour certgen --kube`` in a pre-install hook writes the Secrets the Deployment mounts
(projectcontour/contour cmd/contour/certgen.go); helmsim, knowing no behaviour for the program,
reported them missing (HS114) and the release Stalled, where it installs."""

from __future__ import annotations

import pytest
from realcharts_helpers import simulate_chart


@pytest.mark.parametrize("prefix", ["", "edge-"])
def test_the_hook_writes_the_secrets_the_pods_mount(prefix: str) -> None:
    result = simulate_chart("contour-certgen", sets=(f"prefix={prefix}",) if prefix else ())
    assert result.releases[0].outcome == "Ready"
    assert result.sim is not None
    names = {s["metadata"]["name"] for s in result.sim.store.list("Secret", "default")}
    assert {f"{prefix}contourcert", f"{prefix}envoycert"} <= names
