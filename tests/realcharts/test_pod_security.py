"""Pod Security admission (k8s.io/pod-security-admission): a namespace labelled
``pod-security.kubernetes.io/enforce`` (or the API server's configured default) refuses pods that
violate the level. prometheus-community's prometheus-node-exporter runs with hostNetwork, hostPID
and hostPath volumes by default (charts/prometheus-node-exporter/values.yaml), and many charts
leave securityContext empty: in a namespace enforcing baseline or restricted, their controllers'
pod creation is Forbidden, no pod exists and Helm's wait times out. helmsim did not model the
plugin and predicted Ready."""

from __future__ import annotations

from realcharts_helpers import HERE, check_chart, simulate_chart

from helmsim.cluster.profile import load_profile

CHART = "pod-security"


def _profile(name: str) -> object:
    return load_profile(str(HERE / CHART / "profiles" / f"{name}.yaml"))


def _failed_creates(result: object) -> dict[str, str]:
    out: dict[str, str] = {}
    for e in result.trace:  # type: ignore[attr-defined]
        if e.what == "event" and e.data.get("reason") == "FailedCreate":
            out.setdefault(e.obj, e.message)
    return out


def test_without_a_level_the_chart_installs() -> None:
    assert simulate_chart(CHART).releases[0].outcome == "Ready"


def test_a_baseline_namespace_refuses_the_host_agent_and_admits_the_web_pods() -> None:
    result = simulate_chart(CHART, _profile("baseline-namespace"))  # type: ignore[arg-type]
    release = result.releases[0]
    assert release.outcome == "Stalled"
    assert "timeout waiting for: [DaemonSet/default/pod-security-agent status: 'InProgress']" in str(release.message)
    refused = _failed_creates(result)
    assert list(refused) == ["DaemonSet/default/pod-security-agent"]
    assert refused["DaemonSet/default/pod-security-agent"] == (
        'Error creating: pods "pod-security-agent-" is forbidden: violates PodSecurity "baseline:latest": '
        'host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volumes "proc", "sys", "root"), '
        # a hostNetwork pod's container ports are host ports (pkg/apis/core/v1/defaults.go)
        'hostPort (container "node-exporter" uses hostPort 9100)'
    )


def test_restricted_defaults_refuse_both_and_the_restricted_values_install() -> None:
    profile = _profile("restricted-defaults")
    result = simulate_chart(CHART, profile)  # type: ignore[arg-type]
    assert result.releases[0].outcome == "Stalled"
    web = _failed_creates(result)["ReplicaSet/default/" + _replicaset(result)]
    assert 'violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "web" must set' in web
    fixed = simulate_chart(CHART, profile, values=("ci/restricted-values.yaml",))  # type: ignore[arg-type]
    assert fixed.releases[0].outcome == "Ready"
    assert _failed_creates(fixed) == {}


def test_an_unknown_level_fails_closed_to_restricted() -> None:
    result = simulate_chart(CHART, _profile("invalid-label"), values=("ci/restricted-values.yaml",))  # type: ignore[arg-type]
    assert result.releases[0].outcome == "Ready"  # restricted-compliant pods pass
    refused = simulate_chart(CHART, _profile("invalid-label"), sets=("agent.enabled=false",))  # type: ignore[arg-type]
    assert refused.releases[0].outcome == "Stalled"
    assert any('"restricted:latest"' in m for m in _failed_creates(refused).values())


def test_check_names_the_level_its_source_and_what_would_admit_the_pods() -> None:
    profile = HERE / CHART / "profiles" / "baseline-namespace.yaml"
    report = check_chart(CHART, str(profile), release_name="pod-security")
    findings = [f for f in report.findings if f.rule == "HS123"]
    assert len(findings) == 1
    text = findings[0].message
    assert text.startswith(
        "DaemonSet/default/pod-security-agent's pods are refused by Pod Security admission: namespace default enforces "
        '"baseline:latest" by its label pod-security.kubernetes.io/enforce=baseline: host namespaces (hostNetwork=true, hostPID=true)'
    )
    assert not [f for f in report.findings if f.rule == "HS110"]
    fix = findings[0].fixes[0].summary
    assert "pod-security.kubernetes.io/enforce=privileged" in fix


def _replicaset(result: object) -> str:
    sim = result.sim  # type: ignore[attr-defined]
    return next(rs["metadata"]["name"] for rs in sim.store.list("ReplicaSet", "default") if rs["metadata"]["name"].startswith("pod-security-web-"))


def test_a_hook_pod_helm_creates_is_refused_at_once_and_check_names_it() -> None:
    result = simulate_chart(
        CHART, _profile("restricted-defaults"), values=("ci/restricted-values.yaml",), sets=("hookPod.enabled=true",)  # type: ignore[arg-type]
    )
    release = result.releases[0]
    assert release.outcome == "Stalled"
    assert (
        # helm/helm pkg/kube/client.go patchResourceServerSide wraps the API server's refusal
        "failed pre-install: warning: Hook pre-install pod-security/templates/hook-pod.yaml failed: server-side apply failed "
        'for object default/pod-security-preflight /v1, Kind=Pod: pods "pod-security-preflight" '
        'is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false'
    ) in str(release.message)
    profile = HERE / CHART / "profiles" / "restricted-defaults.yaml"
    report = check_chart(CHART, str(profile), release_name="pod-security", values=("ci/restricted-values.yaml", "ci/hook-pod-values.yaml"))
    [finding] = [f for f in report.findings if f.rule == "HS123"]
    assert finding.message.startswith("Pod/default/pod-security-preflight is refused by Pod Security admission")
    assert "Helm's create fails" in finding.message
    assert not [f for f in report.findings if f.rule == "HS100"]


def test_the_kubelet_refuses_run_as_non_root_with_user_zero_and_says_an_unknown_image_user() -> None:
    """pkg/kubelet/kuberuntime/security_context_others.go verifyRunAsNonRoot, on any cluster."""
    root = simulate_chart(CHART, values=("ci/restricted-values.yaml",), sets=("web.podSecurityContext.runAsUser=0",))
    assert root.releases[0].outcome == "Stalled"
    errors = {e.message for e in root.trace if e.what == "event" and e.data.get("reason") == "Failed"}
    assert any(
        m.startswith('Error: container\'s runAsUser breaks non-root policy (pod: "pod-security-web-') and m.endswith(", container: web)")
        for m in errors
    )
    report = check_chart(CHART, release_name="pod-security", values=("ci/restricted-values.yaml", "ci/root-user-values.yaml"))
    [finding] = [f for f in report.findings if f.rule == "HS123"]
    assert "the kubelet enforces runAsNonRoot and the pod runs as user 0" in finding.message
    assert not [f for f in report.findings if f.rule == "HS110"]
    unknown = simulate_chart(CHART, values=("ci/restricted-values.yaml",), sets=("web.podSecurityContext.runAsUser=null",))
    assert unknown.releases[0].outcome == "Ready"
    assert (
        "image nginx:1.27: its user is not known; assumed not to be root (with runAsNonRoot and no runAsUser, the kubelet "
        "refuses an image whose USER is root or a name: CreateContainerConfigError)"
    ) in unknown.notes


def test_a_container_that_asks_for_root_itself_is_told_so_not_to_set_the_pods_context() -> None:
    """bitnami postgresql's volumePermissions init container sets runAsUser: 0 itself
    (bitnami/charts#3857): a pod-level runAsNonRoot cannot override it."""
    profile = HERE / CHART / "profiles" / "restricted-defaults.yaml"
    report = check_chart(CHART, str(profile), release_name="pod-security", values=("ci/restricted-values.yaml", "ci/root-container-values.yaml"))
    [finding] = [f for f in report.findings if f.rule == "HS123"]
    assert "runAsUser=0 (container \"web\" must not set runAsUser=0)" in finding.message
    assert finding.fixes[0].summary.startswith("container \"web\" asks for root itself (runAsNonRoot: false or runAsUser: 0;")
    assert "pod-security.kubernetes.io/enforce=baseline" in finding.fixes[1].summary


def test_check_applies_the_restricted_security_context_and_verifies_it() -> None:
    profile = HERE / CHART / "profiles" / "restricted-defaults.yaml"
    report = check_chart(CHART, str(profile), release_name="pod-security", verify_fixes=True, values=("ci/web-only-values.yaml",))
    [finding] = [f for f in report.findings if f.rule == "HS123"]
    fix = finding.fixes[0]
    assert fix.key == "restricted-context|Deployment/default/pod-security-web"
    assert fix.verified is True
