"""Helm's Build pre-flight and the API server's field validation, on charts shaped like public ones.

Build (helm/helm pkg/kube/client.go) maps every object of the release manifest onto the APIs the
cluster serves before any hook runs, any object is created or (install) any release is stored;
field types are checked by the API server when each object is applied (server-side apply).
"""

from __future__ import annotations

from typing import Any

from realcharts_helpers import simulate_chart

from helmsim.cluster.profile import profile_from_mapping
from helmsim.simulate import SimulationResult

NO_MATCH = (
    'resource mapping not found for name: "{name}" namespace: "{ns}" from "": '
    'no matches for kind "{kind}" in version "{api}"\nensure CRDs are installed first'
)


def _release(result: SimulationResult) -> Any:
    (outcome,) = result.releases
    return outcome


def _created(result: SimulationResult, *kinds: str) -> list[str]:
    assert result.sim is not None
    return sorted(
        f"{o['kind']}/{o['metadata']['name']}"
        for kind in kinds
        for o in result.sim.store.list(kind)
        if (o["metadata"].get("annotations") or {}).get("meta.helm.sh/release-name")
    )


def _events(result: SimulationResult, what: str) -> list[Any]:
    return [e for e in result.trace if e.what == what]


def test_crd_and_its_resource_both_in_templates_fail_the_build() -> None:
    # helm/helm pkg/action/install.go: Build(rel.Manifest) fails before Releases.Create, so nothing
    # is created and no release is stored; helm-controller internal/reconcile/install.go returns the
    # error (retried with backoff, no failure counted), so the release is Failed, never Stalled
    result = simulate_chart("crd-and-cr-in-templates", horizon=600)
    out = _release(result)
    build = NO_MATCH.format(name="example", ns="", kind="Widget", api="example.com/v1")
    assert out.outcome == "Failed"
    assert out.message == (
        "Helm install failed for release default/crd-and-cr-in-templates with chart "
        f"crd-and-cr-in-templates@0.1.0: unable to build kubernetes objects from release manifest: {build}"
    )
    assert out.helm_status == []
    assert out.attempts > 1 and "Stalled" not in out.conditions
    assert _created(result, "CustomResourceDefinition", "ConfigMap", "Widget") == []
    assert [e.obj for e in _events(result, "apply-error")][:1] == ["Widget/default/example"]


def test_crd_as_a_pre_install_hook_does_not_help_the_resource_map() -> None:
    # Build runs before the pre-install hooks (install.go RunWithContext → performInstall), so the
    # hook CRD is never created and the Widget still does not map
    result = simulate_chart("crd-as-hook", horizon=300)
    out = _release(result)
    assert out.outcome == "Failed"
    assert out.message.endswith(
        "unable to build kubernetes objects from release manifest: "
        + NO_MATCH.format(name="example", ns="", kind="Widget", api="example.com/v1")
    )
    assert _events(result, "hook-start") == []
    assert result.sim is not None and result.sim.store.list("CustomResourceDefinition") == []
    assert out.helm_status == []


def test_removed_api_version_fails_on_1_25_and_later_and_installs_before() -> None:
    # kubernetes/website deprecation-guide.md: policy/v1beta1 PodDisruptionBudget is no longer
    # served as of 1.25 (helmsim.kube.served, derived from the OpenAPI of each version)
    result = simulate_chart("removed-api", horizon=300)
    out = _release(result)
    assert out.outcome == "Failed"
    assert out.message.endswith(
        NO_MATCH.format(name="removed-api", ns="", kind="PodDisruptionBudget", api="policy/v1beta1")
    )
    assert _created(result, "Service", "PodDisruptionBudget") == []
    old = profile_from_mapping({"extends": "kind", "name": "k124", "kubernetesVersion": "1.24.0"}, source="test")
    assert _release(simulate_chart("removed-api", old)).outcome == "Ready"
    # a built-in kind has no CRD to install: nothing says its CRD's schema is unknown
    assert not [n for n in result.notes if "no schema of their CRD" in n]


def test_check_names_the_removal_and_the_served_version_not_a_crd() -> None:
    from realcharts_helpers import HERE

    from helmsim.cluster.profile import load_profile
    from helmsim.diagnose.check import CheckOptions, run_check
    from helmsim.release_inputs import build_inputs

    releases = build_inputs(str(HERE / "removed-api"), release_name="removed-api", namespace="default")
    report = run_check(releases, [load_profile("kind")], options=CheckOptions(verify_fixes=False))
    (finding,) = [f for f in report.findings if f.rule == "HS111"]
    assert finding.message == (
        "PodDisruptionBudget/default/removed-api is a policy/v1beta1 PodDisruptionBudget, an API Kubernetes stopped "
        "serving in 1.25: kind (Kubernetes 1.31.0) serves PodDisruptionBudget as policy/v1, so Helm cannot map it"
    )
    assert finding.fixes[0].summary.startswith("render PodDisruptionBudget with apiVersion policy/v1 ")


def test_custom_resource_whose_crd_the_cluster_lacks() -> None:
    # ingress-nginx's controller.admissionWebhooks.certManager renders a cert-manager Certificate:
    # without cert-manager's CRDs Helm cannot map it (Build fails, nothing created)
    plain = simulate_chart("cr-without-crd")
    assert _release(plain).outcome == "Ready"
    result = simulate_chart("cr-without-crd", values=("ci/cert-manager-values.yaml",), horizon=300)
    out = _release(result)
    assert out.outcome == "Failed" and out.helm_status == []
    assert out.message.endswith(
        NO_MATCH.format(name="cr-without-crd-admission", ns="", kind="Certificate", api="cert-manager.io/v1")
    )
    assert _created(result, "ConfigMap") == []
    # with cert-manager installed (the profile lists its CRD) the same values install
    with_crd = profile_from_mapping(
        {"extends": "kind", "name": "cm", "crds": [{"group": "cert-manager.io", "version": "v1", "kind": "Certificate", "scope": "Namespaced"}]},
        source="test",
    )
    assert _release(simulate_chart("cr-without-crd", with_crd, values=("ci/cert-manager-values.yaml",))).outcome == "Ready"


def test_upgrade_whose_new_manifest_does_not_map_leaves_the_release_untouched() -> None:
    # helm/helm pkg/action/upgrade.go prepareUpgrade → validateManifest returns the Build error
    # unwrapped, before the new revision is stored or anything is patched
    result = simulate_chart(
        "cr-without-crd", values=("ci/cert-manager-values.yaml",), upgrade_from_values=(), horizon=300
    )
    out = _release(result)
    assert out.outcome == "Failed"
    assert out.message == (
        "Helm upgrade failed for release default/cr-without-crd with chart cr-without-crd@0.1.0: "
        + NO_MATCH.format(name="cr-without-crd-admission", ns="", kind="Certificate", api="cert-manager.io/v1")
    )
    assert [(h["revision"], h["status"]) for h in out.helm_status] == [(1, "deployed")]
    assert result.sim is not None
    cm = result.sim.store.get("ConfigMap", "default", "cr-without-crd-settings")
    assert cm is not None and cm["data"] == {"mode": "plain"}  # the previous release's object


def test_a_crd_whose_spec_is_a_list_is_refused_before_the_release_is_stored() -> None:
    # helm-controller internal/action/crds.go creates crds/ with server-side apply before Helm's
    # install; the API server's typed conversion refuses the CRD (structured-merge-diff
    # typed/helpers.go mapValue), so no release is stored
    result = simulate_chart("crd-spec-list", horizon=300)
    out = _release(result)
    assert out.outcome == "Failed" and out.helm_status == []
    assert out.message == (
        "Helm install failed for release default/crd-spec-list with chart crd-spec-list@0.1.0: "
        "failed to apply CustomResourceDefinitions: failed to create CustomResourceDefinition "
        "gadgets.example.com: server-side apply failed for object /gadgets.example.com "
        "apiextensions.k8s.io/v1, Kind=CustomResourceDefinition: failed to create typed patch object "
        "(/gadgets.example.com; apiextensions.k8s.io/v1, Kind=CustomResourceDefinition): "
        ".spec: expected map, got &{[map[group:example.com]]}"
    )
    assert _created(result, "ConfigMap") == []


TYPED = (
    "server-side apply failed for object default/{name} {gvk}: failed to create typed patch object "
    "(default/{name}; {gvk}): {error}"
)


def _wrong(values: str) -> tuple[SimulationResult, Any]:
    result = simulate_chart("wrong-field-types", values=(f"ci/{values}",), horizon=600)
    return result, _release(result)


def test_replicas_of_the_wrong_type_fail_the_install_after_earlier_kinds_are_created() -> None:
    # The API server refuses the Deployment when Helm applies its kind group (helm/helm
    # pkg/kube/client.go batchPerform: earlier groups are created; Build's client-side OpenAPI
    # validation is skipped by kubectl's validator on servers with field validation); the release is
    # stored and failed, then remediated as any failed install (retries 0: Stalled)
    for values, error in (
        ("replicas-string-values.yaml", ".spec.replicas: expected numeric (int or float), got string"),
        ("replicas-list-values.yaml", ".spec.replicas: expected numeric (int or float), got []interface {}"),
        (
            "container-number-values.yaml",
            ".spec.template.spec.containers: element 1: associative list with keys may not have non-map elements",
        ),
    ):
        result, out = _wrong(values)
        text = TYPED.format(name="wrong-field-types", gvk="apps/v1, Kind=Deployment", error=error)
        assert out.message == (
            "Helm install failed for release default/wrong-field-types with chart wrong-field-types@0.1.0: " + text
        ), values
        assert out.outcome == "Stalled"
        assert [(h["revision"], h["status"], h["description"]) for h in out.helm_status] == [
            (1, "failed", f'Release "wrong-field-types" failed: {text}')
        ]
        assert _created(result, "ServiceAccount", "ConfigMap", "Deployment") == [
            "ConfigMap/wrong-field-types-settings", "ServiceAccount/wrong-field-types",
        ]


def test_a_job_template_given_as_a_list_is_refused() -> None:
    result, out = _wrong("job-template-list-values.yaml")
    assert out.message.endswith(
        TYPED.format(
            name="wrong-field-types-migrate", gvk="batch/v1, Kind=Job",
            error=".spec.template: expected map, got &{[map[restartPolicy:Never]]}",
        )
    )
    # the Deployment's kind group comes before Job's (InstallOrder), so it exists
    assert _created(result, "Deployment", "Job") == ["Deployment/wrong-field-types"]


def test_disable_open_api_validation_does_not_let_a_wrong_type_through() -> None:
    # helm-controller internal/action/install.go passes spec.install.disableOpenAPIValidation to
    # Helm, which then skips Build's client-side schema validation (helm/helm pkg/kube/client.go
    # determineFieldValidationDirective) — already skipped on servers with field validation. The
    # object is still applied with fieldValidation=Strict and its type refused by the API server.
    result = simulate_chart(
        "wrong-field-types", values=("ci/replicas-string-values.yaml",), helmrelease=("flux",), horizon=600
    )
    out = _release(result)
    assert out.outcome == "Stalled"
    assert out.message.endswith(".spec.replicas: expected numeric (int or float), got string")


def test_hs111_says_the_crd_is_in_the_templates_and_to_move_it_to_crds() -> None:
    # the CRD is in the release, in templates/: the finding names it and the remedy is crds/
    # (argo-helm charts/argo-workflows with crds.full=false and a WorkflowTemplate in extraObjects)
    from helmsim.cluster.profile import load_profile
    from helmsim.diagnose.check import CheckOptions, run_check
    from helmsim.release_inputs import build_inputs
    from realcharts_helpers import HERE

    releases = build_inputs(str(HERE / "crd-and-cr-in-templates"))
    report = run_check(releases, [load_profile("kind")], options=CheckOptions(horizon=600))
    (finding,) = [f for f in report.findings if f.rule == "HS111"]
    assert finding.message.startswith(
        "Widget/default/example is an example.com/v1 Widget, and its CRD widgets.example.com "
        "(crd-and-cr-in-templates/templates/crd.yaml) is in the release's templates"
    ), finding.message
    assert [fx.summary for fx in finding.fixes][0].startswith("move the CRD of Widget to the chart's crds/ directory")


def test_a_failed_build_says_nothing_of_objects_it_never_sent() -> None:
    # the Build refuses the manifest: no object reaches the API server, so neither "fields … are
    # not checked" nor "nothing in this simulation reconciles Widget" applies (argo-workflows
    # with crds.full=false and a WorkflowTemplate printed both)
    result = simulate_chart("crd-and-cr-in-templates", horizon=600)
    assert not [n for n in result.notes if "are not checked" in n or "reconciles Widget" in n], result.notes


def test_a_sent_custom_resource_without_a_schema_is_said_unchecked() -> None:
    from helmsim.cluster.profile import load_profile
    from helmsim.release_inputs import build_inputs
    from helmsim.simulate import simulate
    from realcharts_helpers import HERE

    root = HERE / "unmapped-operators"
    releases = build_inputs(str(root / "flux"), charts=[f"portal={root / 'charts' / 'portal'}"])
    result = simulate(load_profile(str(root / "profiles" / "operators.yaml")), releases)
    assert any(n.startswith("fields of ") and "are not checked: no schema of their CRD is known" in n for n in result.notes)
