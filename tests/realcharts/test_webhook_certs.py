"""A webhook whose serving certificate its cert controller writes into the Secret it mounts
(external-secrets/external-secrets ``cmd/controller/webhook.go`` waitForCerts: every 10 s for
2 minutes, then exit 1; ``pkg/controllers/crds/crds_controller.go`` populateSecret). The
external-secrets image was unknown, so the webhook was taken to serve at once: with
``certController.create=false`` and no cert-manager, nothing fills the Secret and the real
webhook crash-loops (external-secrets issue #1969), where helmsim said Ready."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, check_chart, restarts, simulate_chart

CHART = "webhook-certs"


def test_the_webhook_serves_once_the_cert_controller_filled_its_secret() -> None:
    result = simulate_chart(CHART)
    assert result.releases[0].outcome == "Ready"
    filled = [e for e in result.trace if e.what == "filled-by-program"]
    assert [e.message for e in filled] == [r"cert-controller set data.tls\.crt, data.tls\.key, data.ca\.crt of Secret/eso-webhook"]
    ready = [e.time for e in result.trace if e.obj.startswith("Pod/default/eso-webhook-") and e.message == "container webhook ready"]
    assert ready and ready[0] >= filled[0].time
    assert any(n.startswith("behaviour from catalog entry external-secrets-webhook ") for n in behaviour_notes(result, "webhook"))


def test_without_the_cert_controller_the_webhook_gives_up_and_the_release_stalls() -> None:
    result = simulate_chart(CHART, values=("ci/no-cert-controller-values.yaml",))
    assert result.releases[0].outcome == "Stalled"
    assert any(v >= 1 for k, v in restarts(result).items() if k.endswith("/webhook"))
    logs = [e.message for e in result.trace if e.what == "container-log" and "unable to validate certificates" in e.message]
    assert logs
    report = check_chart(CHART, release_name=CHART, values=("ci/no-cert-controller-values.yaml",))
    (finding,) = [f for f in report.findings if f.rule == "HS116"]
    assert finding.occurrences[0].message.startswith(
        "Deployment/default/eso-webhook's container webhook (catalog entry external-secrets-webhook) needs "
        r"Secret/default/eso-webhook with data.tls\.crt set, which the cluster does not have when it runs; it gives up "
        "(stat /tmp/certs/tls.crt: no such file or directory) and exits 1"
    )


def test_only_the_deployment_the_wait_timed_out_on_is_blamed_for_its_deadline() -> None:
    """HS110 read Helm's "timeout waiting for: [...]" list as text: Deployment/default/eso, a
    prefix of Deployment/default/eso-webhook, was blamed though it was Ready."""
    report = check_chart(CHART, release_name=CHART, values=("ci/no-cert-controller-values.yaml",))
    assert [f.location.obj for f in report.findings if f.rule == "HS110"] == ["Deployment/default/eso-webhook"]


def test_a_cert_controller_its_role_does_not_let_update_the_secret_is_forbidden() -> None:
    """What a program writes is authorized as its pod's ServiceAccount (kubernetes
    plugin/pkg/auth/authorizer/rbac/rbac.go): without update on secrets the cert controller is
    refused, the Secret stays empty, and HS116 names the missing permission."""
    result = simulate_chart(CHART, values=("ci/no-update-values.yaml",))
    assert result.releases[0].outcome == "Stalled"
    assert not [e for e in result.trace if e.what == "filled-by-program"]
    report = check_chart(CHART, release_name=CHART, values=("ci/no-update-values.yaml",))
    (finding,) = [f for f in report.findings if f.rule == "HS116" and "cert-controller" in f.location.obj]
    assert finding.occurrences[0].message.startswith(
        "Deployment/default/eso-cert-controller's container cert-controller (catalog entry external-secrets-cert-controller) needs "
        "permission to update secrets in default as ServiceAccount eso-cert-controller, which RBAC does not grant it (Forbidden); "
        'it gives up (secrets "eso-webhook" is forbidden: User "system:serviceaccount:default:eso-cert-controller" cannot update '
        'resource "secrets" in API group "" in the namespace "default")'
    )
    assert finding.fixes[0].summary.startswith("grant it permission to update secrets in default as ServiceAccount eso-cert-controller")


def test_a_clusterrole_the_simulation_lacks_is_taken_as_allowing_and_said() -> None:
    """A binding to a ClusterRole made outside the release cannot be decided: the write is
    allowed, and the report says it rests on that role."""
    result = simulate_chart(CHART, values=("ci/external-role-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    assert [e for e in result.trace if e.what == "filled-by-program"]
    notes = [e.message for e in result.trace if e.what == "behaviour-assumed" and "assumed allowed" in e.message]
    assert notes == [
        "container cert-controller of Deployment/default/eso-cert-controller may update Secret/eso-webhook only through a role "
        'the simulation does not hold (clusterrole.rbac.authorization.k8s.io "platform-secret-writer" not found): assumed allowed'
    ]
