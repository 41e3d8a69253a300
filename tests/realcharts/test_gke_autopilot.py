"""GKE Autopilot's Warden admission on node agents: a log shipper with a host port, the
container runtime's log directory and a writable position store (DataDog/helm-charts#1436,
SumoLogic/sumologic-kubernetes-collection#3437), and prometheus-node-exporter's shape
(sourcegraph/sourcegraph-public-snapshot#52900). helmsim had no Autopilot profile; on GKE
Standard's these install, and Autopilot refuses them at the apply."""

from __future__ import annotations

from realcharts_helpers import check_chart, simulate_chart


def test_the_log_agent_is_refused_with_each_constraint_and_admitted_once_fixed() -> None:
    result = simulate_chart("log-agent", "gke-autopilot")
    release = result.releases[0]
    assert release.outcome == "Stalled"
    assert (
        "server-side apply failed for object default/log-agent apps/v1, Kind=DaemonSet: admission webhook "
        '"warden-validating.common-webhooks.networking.gke.io" denied the request: GKE Warden rejected the request because it '
        "violates one or more constraints.\n"
        'Violations details: {"[denied by autogke-no-host-port]":["container agent specifies host ports [2020], which are '
        'disallowed in Autopilot."],"[denied by autogke-no-write-mode-hostpath]":["hostPath volume positions in container agent '
        'is accessed in write mode; disallowed in Autopilot.","hostPath volume containers used in container agent uses path '
        '/var/lib/docker/containers which is not allowed in Autopilot. Allowed path prefixes for hostPath volumes are: [/var/log/]."]}'
    ) in str(release.message)
    assert simulate_chart("log-agent", "gke-dataplane-v2").releases[0].outcome == "Ready"
    fixed = simulate_chart(
        "log-agent", "gke-autopilot", sets=("containerLogs=", "positions.readOnly=true", "metrics.hostPort=null")
    )
    assert fixed.releases[0].outcome == "Ready"


def test_check_names_the_constraints_and_their_fixes() -> None:
    report = check_chart("log-agent", "gke-autopilot", release_name="log-agent")
    [finding] = [f for f in report.findings if f.rule == "HS125"]
    assert finding.message.startswith(
        "DaemonSet/default/log-agent is refused by GKE Autopilot's Warden admission (2 constraints): [autogke-no-host-port] "
    )
    assert [f.summary.rsplit("(", 1)[-1] for f in finding.fixes[:2]] == ["autogke-no-host-port)", "autogke-no-write-mode-hostpath)"]
    assert not [f for f in report.findings if f.rule == "HS100"]


def test_node_exporter_is_refused_as_reported() -> None:
    message = str(simulate_chart("pod-security", "gke-autopilot").releases[0].message)
    assert '"[denied by autogke-disallow-hostnamespaces]":["enabling hostPID is not allowed in Autopilot.","enabling hostNetwork is not allowed in Autopilot."]' in message
    assert "hostPath volume proc used in container node-exporter uses path /proc which is not allowed in Autopilot." in message


def test_objects_in_the_managed_kube_system_namespace_are_refused() -> None:
    """cert-manager's leader-election Role and RoleBinding default to kube-system
    (cert-manager#3713, #5061), kube-prometheus-stack's control-plane Services too
    (prometheus-community/helm-charts#4833): Autopilot's authorizer refuses them."""
    release = simulate_chart("leader-election", "gke-autopilot").releases[0]
    assert release.outcome == "Stalled"
    assert 'GKEAutopilot authz: the namespace "kube-system" is managed and the request\'s verb "create" is denied' in str(release.message)
    assert simulate_chart("leader-election", "gke-dataplane-v2").releases[0].outcome == "Ready"
    moved = simulate_chart("leader-election", "gke-autopilot", sets=("leaderElection.namespace=default",))
    assert moved.releases[0].outcome == "Ready"
    report = check_chart("leader-election", "gke-autopilot", release_name="leader-election")
    [finding] = [f for f in report.findings if f.rule == "HS125"]
    assert finding.message.startswith(
        "Role/kube-system/leader-election:leaderelection is refused by GKE Autopilot's authorizer: the namespace kube-system is managed"
    )
