"""Prometheus programs a sweep of prometheus-community/helm-charts found the catalog did not know
(tests/realcharts/README.md: "Programs a sweep found: Prometheus, its reloader, kube-rbac-proxy").

What a real cluster does, with no network policy under ``policyEnforcementMode: always`` (every
connection to the API server dropped):

* ``prometheus-server/`` (charts/prometheus templates/deploy.yaml): the server's ServiceAccount is
  bound to a service-discovery ClusterRole, but Prometheus runs that discovery as retrying
  informers and answers /-/ready once its TSDB is open and its configuration loaded
  (prometheus/prometheus ``cmd/prometheus/main.go``, ``discovery/kubernetes/kubernetes.go``); its
  config reloader only POSTs to 127.0.0.1:9090. The Deployment gets Ready. kube-state-metrics
  asks the API server for its version at start and exits 1 when it cannot
  (kube-state-metrics ``pkg/app/server.go``), so with it the release stays Stalled.
* ``node-exporter-rbac-proxy/`` (charts/prometheus-node-exporter with kubeRBACProxy.enabled):
  kube-rbac-proxy calls TokenReview and SubjectAccessReview per request only
  (brancz/kube-rbac-proxy ``cmd/kube-rbac-proxy/app/kube-rbac-proxy.go``), node-exporter never
  calls the API server: the DaemonSet gets Ready.
"""

from __future__ import annotations

from typing import Any

import pytest
from realcharts_helpers import HERE, behaviour_notes, restarts, simulate_chart
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.simulate import SimulationResult

PROFILE = "cilium-always"
KSM = ("kubeStateMetrics.enabled=true",)




def _events(result: SimulationResult, what: str, container: str) -> list[Any]:
    return [e for e in result.trace if e.what == what and e.message.startswith(f"{container}: ")]


def _causes(chart: str, *args: str) -> tuple[Any, list[str]]:
    argv = ["simulate", str(HERE / chart), "-p", PROFILE, "--no-color", *args]
    out = CliRunner().invoke(app, argv, env={"COLUMNS": "400"})
    causes = [line.lstrip() for line in out.stdout.splitlines() if line.lstrip().startswith("cause HS113")]
    return out, causes


# --- Prometheus server and its config reloader -----------------------------------------------------


def test_prometheus_and_its_reloader_get_ready_without_the_api_server() -> None:
    # before the prometheus entries both containers "needed" kube-apiserver through the server's
    # ClusterRoleBinding, gave up on 10.96.0.1:443 and exited 1: HS113 and Stalled
    result = simulate_chart("prometheus-server", PROFILE)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert release.message == (
        "Helm install succeeded for release default/prometheus-server.v1 with chart prometheus-server@0.1.0"
    )
    for container, entry in (("server", "prometheus"), ("config-reloader", "prometheus-config-reloader")):
        notes = behaviour_notes(result, container)
        assert notes[0].startswith(f"behaviour from catalog entry {entry} (src/helmsim/catalog/prometheus.yaml:")
        assert "needs nothing (catalog entry)" in notes
        assert not [n for n in notes if n.startswith("talks to the API server")]
        assert not _events(result, "need-failed", container)
    assert set(restarts(result).values()) == {0}
    assert not [e for e in result.trace if e.what == "behaviour-assumed"]


def test_the_cli_reports_ready_and_no_unknown_image() -> None:
    out, causes = _causes("prometheus-server")
    assert out.exit_code == 0, out.output
    assert "default/prometheus-server  Ready at t=" in out.stdout
    assert causes == []
    assert "note: no behaviour known for image" not in out.stdout


@pytest.mark.parametrize(
    ("image", "container"),
    [("server.image=example.com/prometheus:1", "server"), ("reloader.image=example.com/reloader:1", "config-reloader")],
)
def test_an_image_the_catalog_does_not_know_keeps_the_rbac_need(image: str, container: str) -> None:
    # the entries describe these programs only: another image in the same pod is still assumed to
    # call the API server its account is bound for, and to exit when it cannot
    out, causes = _causes("prometheus-server", "--set", image)
    assert out.exit_code == 1, out.output
    assert "default/prometheus-server  Stalled" in out.stdout
    assert len(causes) == 1, causes
    assert causes[0].startswith(
        f"cause HS113: Deployment/default/prometheus-server-server needs kube-apiserver but under {PROFILE}"
    )
    assert f"{container} gives up (dial tcp 10.96.0.1:443: i/o timeout) and exits 1" in causes[0]
    assert f"note: no behaviour known for image {image.split('=')[1]}" in out.stdout


# --- kube-state-metrics: a real failure stays predicted ---------------------------------------------


def test_kube_state_metrics_still_fails_without_the_api_server() -> None:
    result = simulate_chart("prometheus-server", PROFILE, sets=KSM)
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    assert release.message.endswith(
        "timeout waiting for: [Deployment/default/prometheus-server-kube-state-metrics status: 'InProgress']"
    )
    assert "needs kube-apiserver (catalog entry)" in behaviour_notes(result, "kube-state-metrics")
    failed = _events(result, "need-failed", "kube-state-metrics")
    assert failed and failed[0].message == (
        "kube-state-metrics: kube-apiserver failed (dial tcp 10.96.0.1:443: i/o timeout): the run ends with exit code 1"
    )
    logs = [e.message for e in _events(result, "container-log", "kube-state-metrics")]
    assert logs[0] == (
        'kube-state-metrics: "Failed to run kube-state-metrics" err="failed to create client: error while trying '
        'to communicate with apiserver: dial tcp 10.96.0.1:443: i/o timeout"'
    )
    counts = restarts(result)
    assert any(k.endswith("/kube-state-metrics") and v > 0 for k, v in counts.items()), counts
    # the server pod is not blamed
    assert not [k for k, v in counts.items() if k.startswith("prometheus-server-server-") and v]


def test_the_cli_blames_kube_state_metrics_only() -> None:
    out, causes = _causes("prometheus-server", "--set", KSM[0])
    assert out.exit_code == 1, out.output
    assert [c.split(" needs ")[0] for c in causes] == [
        "cause HS113: Deployment/default/prometheus-server-kube-state-metrics"
    ]
    assert "kube-state-metrics (kube-state-metrics) gives up (dial tcp 10.96.0.1:443: i/o timeout) and exits 1" in causes[0]


# --- node-exporter behind kube-rbac-proxy -----------------------------------------------------------


def test_node_exporter_behind_kube_rbac_proxy_gets_ready() -> None:
    # before: both containers "needed" kube-apiserver (the tokenreviews/subjectaccessreviews
    # ClusterRole), kube-rbac-proxy exited 1 five times and the DaemonSet stalled the release
    result = simulate_chart("node-exporter-rbac-proxy", PROFILE)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    for container in ("node-exporter", "kube-rbac-proxy"):
        notes = behaviour_notes(result, container)
        assert notes[0].startswith(f"behaviour from catalog entry {container} (src/helmsim/catalog/prometheus.yaml:")
        assert "needs nothing (catalog entry)" in notes
        assert not _events(result, "need-failed", container)
    assert set(restarts(result).values()) == {0}
    assert not [e for e in result.trace if e.what == "behaviour-assumed"]


def test_an_unknown_proxy_image_with_a_review_only_role_is_no_api_server_need() -> None:
    # the role grants only TokenReview/SubjectAccessReview creation, which a proxy makes per
    # incoming request (delegated authn/authz): even an image the catalog does not know gets no
    # API-server need from it (it crash-looped on a "denied" kube-apiserver before), and the
    # report still says its behaviour was assumed
    out, causes = _causes("node-exporter-rbac-proxy", "--set", "proxy.image=example.com/kube-rbac-proxy:1")
    assert out.exit_code == 0, out.output
    assert causes == []
    assert "no behaviour known for image example.com/kube-rbac-proxy:1" in out.stdout
    result = simulate_chart("node-exporter-rbac-proxy", PROFILE, sets=("proxy.image=example.com/kube-rbac-proxy:1",))
    notes = behaviour_notes(result, "kube-rbac-proxy")
    assert any(
        n.endswith(
            "which grants only delegated authentication of incoming requests (TokenReviews) and delegated "
            "authorisation of incoming requests (SubjectAccessReviews): not a need"
        )
        for n in notes
    ), notes