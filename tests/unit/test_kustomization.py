"""helmsim.flux.kustomization: kustomize-controller's defaults, what a path applies, dependsOn,
health checks with kstatus and CEL (fluxcd/kustomize-controller api/v1/kustomization_types.go,
internal/controller/kustomization_controller.go; fluxcd/pkg runtime/cel/status_evaluator.go)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helmsim.cluster.profile import load_profile
from helmsim.errors import InputError
from helmsim.flux import kustomization as k
from helmsim.flux.inputs import load_flux_tree
from helmsim.kstatus import Status
from helmsim.release_inputs import build_inputs
from helmsim.simulate import simulate


def _ks(spec: dict) -> k.Kustomization:
    return k.parse_kustomization({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                                  "metadata": {"name": "x", "namespace": "flux-system"}, "spec": spec})


def test_timeout_and_retry_defaults() -> None:
    # api/v1 GetTimeout: interval - 30s, at least 30s; GetRetryInterval: the interval
    assert _ks({"interval": "10m"}).timeout == 570.0
    assert _ks({"interval": "40s"}).timeout == 30.0
    assert _ks({"interval": "10m", "timeout": "2m"}).timeout == 120.0
    assert _ks({"interval": "10m"}).retry_interval == 600.0
    assert _ks({"interval": "10m", "retryInterval": "1m"}).retry_interval == 60.0


def test_unknown_field_names_file_and_line() -> None:
    with pytest.raises(InputError) as err:
        k.parse_kustomization({"kind": "Kustomization", "metadata": {"name": "x"}, "spec": {"interval": "1m", "healthcheck": []}},
                              source="ks.yaml", line=7)
    assert 'unknown field "spec.healthcheck"' in str(err.value) and err.value.line == 7


def _cel(**exprs: str) -> tuple[k.CelReader, k.HealthCheckExpr]:
    e = k.HealthCheckExpr(apiVersion="example.com/v1", kind="Widget", **exprs)
    return k.CelReader([e]), e


def test_cel_order_in_progress_failed_current() -> None:
    reader, e = _cel(current="status.phase == 'Ready'", failed="status.phase == 'Error'", inProgress="status.phase == 'Error' && false")
    obj = {"metadata": {"generation": 1}, "status": {"observedGeneration": 1, "phase": "Error"}}
    assert reader.read(e, obj).status is Status.FAILED
    obj["status"]["phase"] = "Ready"
    assert reader.read(e, obj).status is Status.CURRENT
    obj["status"]["phase"] = "Pending"
    assert reader.read(e, obj).status is Status.IN_PROGRESS  # none true
    # status_evaluator.go: a generation not observed is InProgress whatever the expressions say
    obj["status"] = {"observedGeneration": 0, "phase": "Ready"}
    assert reader.read(e, obj).status is Status.IN_PROGRESS


def test_cel_evaluation_error_is_unknown_with_the_error() -> None:
    reader, e = _cel(current="status.phase == 'Ready'")
    res = reader.read(e, {"metadata": {}})
    assert res.status is Status.UNKNOWN
    assert res.error is not None and res.error.startswith("failed to evaluate the CEL expression 'status.phase == 'Ready'': ")


def test_group_only_expression_matches_every_kind_of_the_group() -> None:
    e = k.HealthCheckExpr(apiVersion="example.com/v1", current="true")
    reader = k.CelReader([e])
    assert reader.supports("example.com/v2", "Gadget") is e
    assert reader.supports("other.com/v1", "Gadget") is None


def test_invalid_expression_stalls() -> None:
    ks = _ks({"interval": "1m", "healthCheckExprs": [{"apiVersion": "a/v1", "kind": "B", "current": "status.("}]})
    err = k.check_expressions(ks)
    assert err is not None and err.startswith(
        "failed to create custom status evaluator for healthchecks[0]: failed to parse the expression Current: "
        "failed to parse the CEL expression 'status.(': "
    )


def _write(tmp: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


KS = """apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {{name: {name}, namespace: flux-system}}
spec: {spec}
"""
CM = """apiVersion: v1
kind: ConfigMap
metadata: {{name: {name}, namespace: apps}}
"""


def test_plan_assigns_files_to_the_deepest_path_and_reads_kustomization_yaml(tmp_path: Path) -> None:
    _write(tmp_path, {
        "clusters/root.yaml": KS.format(name="root", spec="{interval: 1m, path: ./clusters}")
        + "---\n" + KS.format(name="apps", spec="{interval: 1m, path: ./apps}"),
        "apps/a.yaml": CM.format(name="a"),
        "apps/skipped.yaml": CM.format(name="skipped"),
        "apps/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n",
        "loose.yaml": CM.format(name="loose"),
    })
    tree = load_flux_tree([str(tmp_path)])
    units = {u.ref: u for u in k.load_units(tree, [tmp_path])}
    # root applies its own file's other Kustomization; apps applies what kustomization.yaml lists
    assert units["flux-system/root"].owner is None and units["flux-system/root"].children == ("flux-system/apps",)
    assert units["flux-system/apps"].owner == "flux-system/root"
    assert [o["metadata"]["name"] for o in units["flux-system/apps"].objects] == ["a"]


def _simulate_tree(tmp_path: Path, files: dict[str, str], horizon: float = 400.0):
    _write(tmp_path, files)
    (tmp_path / "chart/templates").mkdir(parents=True, exist_ok=True)
    (tmp_path / "chart/Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 1.0.0\n")
    (tmp_path / "chart/templates/cm.yaml").write_text(CM.format(name="{{ .Release.Name }}"))
    releases = build_inputs(str(tmp_path / "tree"), values=[], sets=[], helmrelease=[], charts=[f"c={tmp_path / 'chart'}"],
                            release_name=None, namespace="default", upgrade_from=None, upgrade_from_values=[],
                            upgrade_from_set=[], repository_root=str(tmp_path))
    return simulate(load_profile("kind"), releases, horizon=horizon)


HR = """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {{name: {name}, namespace: apps}}
spec: {{interval: 10m, chart: {{spec: {{chart: c, sourceRef: {{kind: HelmRepository, name: r}}}}}}}}
"""


def test_missing_dependency_and_missing_path(tmp_path: Path) -> None:
    result = _simulate_tree(tmp_path, {
        "tree/ks.yaml": KS.format(name="a", spec="{interval: 1m, path: ./tree/a, dependsOn: [{name: nope}]}")
        + "---\n" + KS.format(name="b", spec="{interval: 1m, path: ./nowhere}"),
        "tree/a/hr.yaml": HR.format(name="one"),
    }, horizon=120.0)
    by = {x.name: x for x in result.kustomizations}
    assert by["a"].reason == "DependencyNotReady"
    assert by["a"].message == "dependency 'flux-system/nope' not found: kustomizations.kustomize.toolkit.fluxcd.io \"nope\" not found"
    assert (by["b"].reason, by["b"].message) == ("ArtifactFailed", "kustomization path not found: stat ./nowhere: no such file or directory")
    one = result.releases[0]
    assert one.outcome == "Blocked" and one.reason == "NotApplied"


def test_health_check_of_a_missing_object_times_out(tmp_path: Path) -> None:
    result = _simulate_tree(tmp_path, {
        "tree/ks.yaml": KS.format(name="a", spec="{interval: 10m, timeout: 1m, path: ./tree/a, healthChecks: "
                                  "[{apiVersion: apps/v1, kind: Deployment, name: ghost, namespace: apps}]}"),
        "tree/a/hr.yaml": HR.format(name="one"),
    })
    ks = result.kustomizations[0]
    assert ks.message == "health check failed after 1m0s: timeout waiting for: [Deployment/apps/ghost status: 'NotFound']"
    assert result.releases[0].outcome == "Ready"


def test_helmrelease_depends_on_helmreleases_only(tmp_path: Path) -> None:
    # Flux's dependsOn is between objects of one kind: a HelmRelease naming a Kustomization
    # looks for a HelmRelease of that name (helmrelease_controller.go checkDependencies)
    dependent = HR.format(name="two").replace("spec: {interval: 10m,", "spec: {interval: 10m, dependsOn: [{name: a, namespace: flux-system}],")
    result = _simulate_tree(tmp_path, {
        "tree/ks.yaml": KS.format(name="a", spec="{interval: 1m, path: ./tree/a}"),
        "tree/a/hr.yaml": HR.format(name="one"),
        "tree/two.yaml": dependent,
    }, horizon=120.0)
    two = next(r for r in result.releases if r.name == "two")
    assert two.outcome == "Blocked"
    assert two.message == (
        "unable to get 'flux-system/a' dependency: helmreleases.helm.toolkit.fluxcd.io \"a\" not found"
    )
    assert result.kustomizations[0].ready == "True"
