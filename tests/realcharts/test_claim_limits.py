"""LimitRanger on claims (plugin/pkg/admission/limitranger/admission.go
PersistentVolumeClaimValidateLimitFunc): a tenant namespace's ``type: PersistentVolumeClaim``
LimitRange bounds every claim's storage request. A chart's default ``persistence.size: 8Gi``
(bitnami/postgresql, bitnami/redis) under a 5Gi maximum is refused at Helm's create, at a
StatefulSet's claim and at an upgrade's resize; helmsim admitted them all and predicted Ready."""

from __future__ import annotations

from realcharts_helpers import HERE, check_chart, simulate_chart

from helmsim.cluster.profile import load_profile

CHART = "claim-limits"
PROFILE = str(HERE / CHART / "profiles" / "claim-limits.yaml")
WITHIN = "ci/within-values.yaml"
TOO_BIG = (
    'persistentvolumeclaims "claim-limits-data" is forbidden: maximum storage usage per PersistentVolumeClaim is 5Gi, '
    "but request is 8Gi"
)


def test_the_charts_default_claim_is_refused_at_helms_create() -> None:
    release = simulate_chart(CHART, load_profile(PROFILE)).releases[0]
    assert release.outcome == "Stalled"
    assert release.message.endswith(TOO_BIG)
    assert release.attempts == 1  # the create fails at once; no wait
    small = simulate_chart(CHART, load_profile(PROFILE), values=("ci/below-values.yaml",)).releases[0]
    assert small.message.endswith(
        'persistentvolumeclaims "claim-limits-data" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, '
        "but request is 512Mi"
    )


def test_a_claim_within_the_bounds_is_ready_and_kind_has_no_bounds() -> None:
    assert simulate_chart(CHART, load_profile(PROFILE), values=(WITHIN,)).releases[0].outcome == "Ready"
    assert simulate_chart(CHART, "kind").releases[0].outcome == "Ready"


def test_an_upgrade_that_resizes_the_claim_past_the_maximum_fails_its_patch() -> None:
    release = simulate_chart(CHART, load_profile(PROFILE), upgrade_from_values=(WITHIN,)).releases[0]
    assert release.outcome == "Stalled"
    assert release.message.endswith(
        "server-side apply failed for object default/claim-limits-data /v1, Kind=PersistentVolumeClaim: " + TOO_BIG
    )
    # the profile's class expands claims: a resize up to the bound goes through
    resized = simulate_chart(CHART, load_profile(PROFILE), sets=("persistence.size=5Gi",), upgrade_from_values=(WITHIN,))
    assert resized.releases[0].outcome == "Ready"


def test_check_names_the_claim_the_bound_and_no_missing_reference() -> None:
    report = check_chart(CHART, PROFILE, release_name="db")
    assert [(f.rule, f.severity.name) for f in report.findings] == [("HS124", "error")]  # no HS114 "missing claim"
    [finding] = [f for f in report.findings if f.rule == "HS124"]
    assert finding.message.startswith(
        "PersistentVolumeClaim/default/db-data is refused by LimitRanger: maximum storage usage per PersistentVolumeClaim "
        "is 5Gi, but request is 8Gi; Helm's create fails"
    )
    assert finding.fixes[0].summary.startswith("set the claim's storage request to at most 5Gi (the chart's persistence size values)")


def test_a_statefulsets_claim_is_refused_and_its_pod_never_created() -> None:
    """stateful_pod_control.go createPersistentVolumeClaims: the controller's claim create is
    refused, so it records FailedCreate and creates no pod; Helm's wait times out."""
    result = simulate_chart("stateful-storage", load_profile(PROFILE))
    assert result.releases[0].outcome == "Stalled"
    failed = [e.message for e in result.trace if e.what == "event" and e.data.get("reason") == "FailedCreate"]
    assert failed[0] == (
        "create Claim data-stateful-storage-0 for Pod stateful-storage-0 in StatefulSet stateful-storage failed error: "
        'persistentvolumeclaims "data-stateful-storage-0" is forbidden: maximum storage usage per PersistentVolumeClaim '
        "is 5Gi, but request is 8Gi"
    )
    assert result.sim is not None and not result.sim.store.list("Pod", "default")
    report = check_chart("stateful-storage", PROFILE, release_name="db")
    [finding] = [f for f in report.findings if f.rule == "HS124"]
    assert finding.message.startswith(
        "StatefulSet/default/db's claim data-db-0 is refused by LimitRanger: maximum storage usage per PersistentVolumeClaim "
        "is 5Gi, but request is 8Gi"
    )


def test_check_calls_the_refused_resize_a_limit_not_an_immutable_field() -> None:
    """The upgrade's patch is refused by LimitRanger, not by the resize admission (the class
    expands claims): HS124 says Helm's patch fails, and HS105 does not claim it."""
    from helmsim.diagnose.check import CheckOptions, run_check
    from helmsim.release_inputs import build_inputs

    chart = str(HERE / CHART)
    releases = build_inputs(
        chart, release_name="db", namespace="default", upgrade_from=chart, upgrade_from_values=[str(HERE / CHART / WITHIN)]
    )
    report = run_check(releases, [load_profile(PROFILE)], options=CheckOptions())
    assert [f.rule for f in report.findings] == ["HS124"]
    assert "5Gi, but request is 8Gi; Helm's patch fails; the release ends Stalled" in report.findings[0].message
    # on kind the class cannot expand: the resize admission refuses first, and that is HS105's
    kind = run_check(releases, [load_profile("kind")], options=CheckOptions())
    assert [f.rule for f in kind.findings] == ["HS105"]
    assert "only dynamically provisioned pvc can be resized" in kind.findings[0].message


def test_limit_ranger_answers_before_the_resize_plugin() -> None:
    """kube-apiserver runs LimitRanger before PersistentVolumeClaimResize
    (pkg/kubeapiserver/options/plugins.go AllOrderedPlugins): a resize past the maximum on a
    class that cannot expand is LimitRanger's refusal."""
    profile = load_profile(PROFILE).model_dump(by_alias=True, exclude_none=True)
    profile["storageClasses"][0]["allowVolumeExpansion"] = False
    from helmsim.cluster.profile import ClusterProfile

    release = simulate_chart(CHART, ClusterProfile.model_validate(profile, strict=False), upgrade_from_values=(WITHIN,)).releases[0]
    assert release.outcome == "Stalled" and release.message.endswith(TOO_BIG)


def test_a_claim_made_before_a_limit_range_it_breaks_is_not_a_crash() -> None:
    """The scheduler's and the binder's writes of the claim are let through (not refused and
    retried as upstream's would be): the pod runs."""
    from helmsim.cluster.cluster import build_cluster

    sim = build_cluster(load_profile("kind"), namespaces=["apps"])
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "apps"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "8Gi"}}}}
    sim.store.create(claim, actor="test")
    sim.store.create({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": "apps"},
                      "spec": {"limits": [{"type": "PersistentVolumeClaim", "max": {"storage": "5Gi"}}]}}, actor="test")
    sim.store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "apps"},
                      "spec": {"containers": [{"name": "c", "image": "registry.example.com/x:1"}],
                               "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}, actor="test")
    sim.run(until=120)
    assert sim.store.get("Pod", "apps", "p")["status"]["phase"] == "Running"  # type: ignore[index]
