"""A Vault server whose readiness probe asks for its seal status (tests/realcharts/README.md:
"Programs that cannot work"): a new Vault serves but is not initialized and is sealed, so
`vault status` exits 2 and its pods are never Ready until someone runs `vault operator init` and
unseals it (hashicorp/vault-helm issues #130, #375); Helm's wait times out."""

from __future__ import annotations

import pytest
from realcharts_helpers import check_chart, restarts, simulate_chart


@pytest.mark.parametrize("values", [(), ("ci/bitnami-values.yaml",)])
def test_a_sealed_vault_is_never_ready_and_the_wait_times_out(values: tuple[str, ...]) -> None:
    # before, the image was unknown and the release Ready (bitnami vault 1.9.1: Ready at 55 s)
    result = simulate_chart("vault-sealed", "kind", values=values)
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    assert "timeout waiting for: [StatefulSet/default/vault-sealed status: 'InProgress']" in release.message
    unhealthy = [e for e in result.trace if e.what == "event" and e.data.get("reason") == "Unhealthy"]
    assert unhealthy and unhealthy[0].message.startswith("Readiness probe failed: Key Value --- ----- Seal Type shamir Initialized false Sealed true")
    # its liveness probe (a TCP connect) passes: it serves, so it is never killed
    assert all(n == 0 for n in restarts(result).values())


@pytest.mark.parametrize("values", [("ci/health-path-values.yaml",), ("ci/dev-values.yaml",)])
def test_a_probe_that_accepts_a_sealed_vault_or_a_dev_server_is_ready(values: tuple[str, ...]) -> None:
    (release,) = simulate_chart("vault-sealed", "kind", values=values).releases
    assert release.outcome == "Ready", release.message


def test_check_explains_the_seal_and_verifies_disabling_the_wait() -> None:
    report = check_chart("vault-sealed", release_name="vault-sealed", verify_fixes=True)
    (finding,) = [f for f in report.findings if f.rule == "HS116"]
    assert finding.message.startswith(
        "StatefulSet/default/vault-sealed's container vault (catalog entry vault-server-script) serves, but answers its "
        "readiness probe as failed: Vault is not initialized and is sealed"
    )
    probe_fix, no_wait = finding.fixes
    assert "uninitcode=204" in probe_fix.summary
    assert "spec.install.disableWait" in no_wait.summary and no_wait.verified is True
