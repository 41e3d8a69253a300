"""ingress-nginx's default render holds null maps (`annotations:` with nothing under it): Helm
and the API server accept them and store null as absent, so the release installs (Ready)."""

from __future__ import annotations

import yaml
from realcharts_helpers import HERE, simulate_chart

from helmsim import render
from helmsim.diffing import diff_objects
from helmsim.helm.plan import plan_install
from helmsim.inputs import load_release
from helmsim.kube.nulls import drop_nulls
from helmsim.manifests import parse_documents


def test_null_maps_install_ready_with_null_stored_as_absent() -> None:
    result = simulate_chart("null-maps")
    (outcome,) = result.releases
    # helm/helm pkg/action/validate.go setMetadataVisitor sets ownership metadata on objects whose
    # labels/annotations are null (accessor.GetLabels returns nil); the install then completes
    assert outcome.outcome == "Ready", outcome.message
    assert outcome.message == "Helm install succeeded for release default/null-maps.v1 with chart null-maps@0.1.0"
    assert result.sim is not None
    svc = result.sim.store.get("Service", "default", "null-maps")
    assert svc is not None
    # … and helm-controller's post-renderer its origin labels (internal/postrender/build.go)
    assert svc["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "Helm",
        "helm.toolkit.fluxcd.io/name": "null-maps",
        "helm.toolkit.fluxcd.io/namespace": "default",
    }
    assert svc["metadata"]["annotations"] == {
        "meta.helm.sh/release-name": "null-maps",
        "meta.helm.sh/release-namespace": "default",
    }
    cm = result.sim.store.get("ConfigMap", "default", "null-maps-config")
    assert cm is not None and "data" not in cm  # kube-apiserver decodes `data: null` as no data
    dep = result.sim.store.get("Deployment", "default", "null-maps")
    assert dep is not None
    pod_spec = dep["spec"]["template"]["spec"]
    assert "nodeSelector" not in pod_spec and "resources" not in pod_spec["containers"][0]
    # the hook Job ran (pre-install) even though its labels were null
    assert any(e.what == "hook-succeeded" and "null-maps-setup" in e.obj for e in result.trace)


def test_null_and_absent_are_the_same_object_for_plan_and_diff() -> None:
    rel = load_release(str(HERE / "null-maps"), render.RenderOptions(release_name="x"))
    with_nulls = rel.parse("default").resources


    stripped = [
        (path, yaml.safe_dump_all([drop_nulls(d) for d in yaml.safe_load_all(text) if d], sort_keys=False))
        for path, text in rel.files
    ]
    without = parse_documents(stripped, namespace="default").resources
    assert diff_objects(with_nulls, without) == []
    assert [s.resource.ref for s in plan_install(with_nulls).steps] == [
        s.resource.ref for s in plan_install(without).steps
    ]
