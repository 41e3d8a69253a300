"""A Cloud SQL Auth Proxy sidecar started with --run-connection-test (tests/realcharts/README.md:
"Programs that cannot work"): it dials the Cloud SQL Admin API before it serves and exits 1
when that fails (GoogleCloudPlatform/cloud-sql-proxy internal/proxy/proxy.go Serve), so behind a
default-deny egress the pod crash-loops; without the flag it dials only when a client connects."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, restarts, simulate_chart

NO_TEST = ("ci/no-connection-test-values.yaml",)


def test_the_connection_test_behind_denied_egress_crash_loops_the_sidecar() -> None:
    # before, the proxy's image was unknown and the release Ready at 20 s under cilium-always
    result = simulate_chart("cloudsql-sidecar", "cilium-always")
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    assert any("cloud-sql-proxy-connection-test" in n for n in behaviour_notes(result, "cloudsql-proxy"))
    proxy = {k: v for k, v in restarts(result).items() if k.endswith("/cloudsql-proxy")}
    assert proxy and all(n >= 1 for n in proxy.values()), proxy
    logs = [e.message for e in result.trace if e.what == "container-log" and "Connection test failed" in e.message]
    assert logs, "the proxy's own failure line"


def test_where_egress_is_open_the_admin_api_is_said_to_be_assumed() -> None:
    result = simulate_chart("cloudsql-sidecar", "kind")
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert any(n.startswith("sqladmin.googleapis.com:443 is outside the cluster: assumed") for n in result.notes)


def test_without_the_connection_test_the_proxy_needs_nothing_at_start() -> None:
    result = simulate_chart("cloudsql-sidecar", "cilium-always", values=NO_TEST)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert not any("cloud-sql-proxy" in n for n in result.notes)  # the image is known: no unknown-image note
