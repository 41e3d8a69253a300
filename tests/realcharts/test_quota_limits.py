"""ResourceQuota and LimitRange admission (k8s.io/apiserver pkg/admission/plugin/resourcequota,
plugin/pkg/admission/limitranger): a tenant namespace's compute quota refuses pods that set no
requests (many charts default ``resources: {}``, bitnami/common's resourcesPreset aside) and, on
an upgrade, the surge pod a rolling update needs when the quota holds exactly the running pods.
helmsim did not model either and predicted Ready."""

from __future__ import annotations

from realcharts_helpers import HERE, simulate_chart

from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.release_inputs import build_inputs

CHART = "quota-limits"
SIZED = "ci/sized-values.yaml"


def _profile(name: str) -> object:
    return load_profile(str(HERE / CHART / "profiles" / f"{name}.yaml"))


def _failed_creates(result: object) -> list[str]:
    return [e.message for e in result.trace if e.what == "event" and e.data.get("reason") == "FailedCreate"]  # type: ignore[attr-defined]


def test_pods_without_requests_fail_a_compute_quota() -> None:
    result = simulate_chart(CHART, _profile("tenant-quota"))  # type: ignore[arg-type]
    assert result.releases[0].outcome == "Stalled"
    assert _failed_creates(result)[0].startswith('Error creating: pods "quota-limits-')
    assert _failed_creates(result)[0].endswith(
        '-" is forbidden: failed quota: compute: must specify limits.cpu for: web; limits.memory for: web; '
        "requests.cpu for: web; requests.memory for: web"
    )
    assert simulate_chart(CHART, _profile("tenant-quota"), values=(SIZED,)).releases[0].outcome == "Ready"  # type: ignore[arg-type]


def test_a_limit_range_default_admits_them_and_its_maximum_refuses_a_larger_limit() -> None:
    assert simulate_chart(CHART, _profile("tenant-quota-defaults")).releases[0].outcome == "Ready"  # type: ignore[arg-type]
    big = simulate_chart(CHART, _profile("tenant-quota-defaults"), sets=("resources.limits.memory=1Gi",))  # type: ignore[arg-type]
    assert big.releases[0].outcome == "Stalled"
    assert _failed_creates(big)[0].endswith('-" is forbidden: maximum memory usage per Container is 512Mi, but limit is 1Gi')


def test_a_rollout_with_no_room_to_surge_never_ends_and_check_verifies_max_surge_zero() -> None:
    profile = _profile("tenant-quota")
    result = simulate_chart(
        CHART, profile, values=(SIZED, "ci/rollout-values.yaml"), upgrade_from_values=(SIZED,)  # type: ignore[arg-type]
    )
    assert result.releases[0].outcome == "Stalled"
    assert _failed_creates(result)[0].endswith(
        '-" is forbidden: exceeded quota: compute, requested: limits.cpu=500m,requests.cpu=500m, '
        "used: limits.cpu=1,requests.cpu=1, limited: limits.cpu=1,requests.cpu=1"
    )
    chart = str(HERE / CHART)
    releases = build_inputs(
        chart,
        values=[str(HERE / CHART / v) for v in (SIZED, "ci/rollout-values.yaml")],
        release_name="quota-limits",
        namespace="default",
        upgrade_from=chart,
        upgrade_from_values=[str(HERE / CHART / SIZED)],
    )
    report = run_check(releases, [profile], options=CheckOptions(verify_fixes=True))  # type: ignore[list-item]
    [finding] = [f for f in report.findings if f.rule == "HS124"]
    assert "the rollout cannot add the pod it surges and keeps the old ones until it is Ready, so it never ends" in finding.message
    assert not [f for f in report.findings if f.rule == "HS110"]
    surge = finding.fixes[0]
    assert surge.key == "no-surge|Deployment/default/quota-limits" and surge.verified is True
    assert "raise ResourceQuota compute's spec.hard to at least limits.cpu: 1500m, requests.cpu: 1500m" in finding.fixes[1].summary


def test_check_names_the_limit_range_refusal_and_a_request_above_a_default_limit_is_invalid() -> None:
    from realcharts_helpers import check_chart

    profile = str(HERE / CHART / "profiles" / "tenant-quota-defaults.yaml")
    report = check_chart(CHART, profile, release_name="quota-limits", values=("ci/big-limit-values.yaml",))
    [finding] = [f for f in report.findings if f.rule == "HS124"]
    assert "refused by LimitRanger: maximum memory usage per Container is 512Mi, but limit is 1Gi" in finding.message
    # a LimitRange's default limit below a container's own request makes the pod invalid
    # (pkg/apis/core/validation ValidateResourceRequirements runs after the mutating admission)
    low = simulate_chart(CHART, _profile("tenant-quota-defaults"), sets=("resources.requests.cpu=500m",))  # type: ignore[arg-type]
    assert low.releases[0].outcome == "Stalled"
    assert _failed_creates(low)[0].endswith(
        '-" is invalid: spec.containers[0].resources.requests: Invalid value: "500m": must be less than or equal to cpu limit of 250m'
    )


def test_a_claim_over_the_storage_quota_is_named_as_the_claim() -> None:
    """stateful_pod_control.go createPersistentVolumeClaims: the StatefulSet controller's claim
    of a volumeClaimTemplate is what the quota refuses, so the finding names the claim and its
    size (bitnami postgresql, redis and kafka's default persistence)."""
    from realcharts_helpers import check_chart

    profile = str(HERE / CHART / "profiles" / "storage-quota.yaml")
    report = check_chart("stateful-storage", profile, release_name="db")
    [finding] = [f for f in report.findings if f.rule == "HS124"]
    assert finding.message.startswith(
        "StatefulSet/default/db's claim data-db-0 is refused by ResourceQuota admission: exceeded quota: storage, "
        "requested: requests.storage=8Gi, used: requests.storage=0, limited: requests.storage=5Gi"
    )
    assert finding.fixes[0].summary.startswith("lower the claim's storage request (the chart's persistence size values)")


def test_helms_release_records_count_against_a_secrets_quota(tmp_path: object) -> None:
    """helm/helm pkg/storage/driver/secrets.go: every revision is a Secret in the storage
    namespace, stored before the release's objects; a count/secrets quota counts them, so the
    chart's own Secret, or an upgrade's next record, is refused."""
    from pathlib import Path

    from helmsim.cluster.profile import ClusterProfile

    chart = Path(str(tmp_path)) / "app"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n")
    (chart / "templates" / "secret.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: app-credentials}\nstringData: {password: x}\n"
    )
    base = load_profile("kind").model_dump(by_alias=True, exclude_none=True)
    base["objects"] = [{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "objects", "namespace": "default"},
                        "spec": {"hard": {"count/secrets": "1"}}}]
    profile = ClusterProfile.model_validate(base, strict=False)
    from helmsim.release_inputs import build_inputs
    from helmsim.simulate import simulate

    releases = build_inputs(str(chart), release_name="app", namespace="default")
    release = simulate(profile, releases).releases[0]
    assert release.outcome == "Stalled"
    assert (
        'secrets "app-credentials" is forbidden: exceeded quota: objects, requested: count/secrets=1, '
        "used: count/secrets=1, limited: count/secrets=1"
    ) in str(release.message)


def test_an_upgrade_needs_room_for_its_next_release_record(tmp_path: object) -> None:
    from pathlib import Path

    from helmsim.cluster.profile import ClusterProfile
    from helmsim.release_inputs import build_inputs
    from helmsim.simulate import simulate

    chart = Path(str(tmp_path)) / "app"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n")
    (chart / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {v: '{{ .Values.v }}'}\n")
    base = load_profile("kind").model_dump(by_alias=True, exclude_none=True)
    base["objects"] = [{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "objects", "namespace": "default"},
                        "spec": {"hard": {"count/secrets": "1"}}}]
    profile = ClusterProfile.model_validate(base, strict=False)
    releases = build_inputs(str(chart), sets=["v=2"], release_name="app", namespace="default",
                            upgrade_from=str(chart), upgrade_from_set=["v=1"])
    release = simulate(profile, releases).releases[0]
    assert release.outcome != "Ready"
    assert (
        'create: failed to create: secrets "sh.helm.release.v1.app.v2" is forbidden: exceeded quota: objects, '
        "requested: count/secrets=1, used: count/secrets=1, limited: count/secrets=1"
    ) in str(release.message)
