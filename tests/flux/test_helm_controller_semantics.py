"""helm-controller semantics on HelmRelease trees: valuesFrom that does not resolve (Ready=False
ValuesError, retried, never Stalled), targetPath and literal values, suspend, the CRD's bounds,
install remediation without a strategy, storage namespaces, failure messages with the
unshortened release name, and the namespaces a run assumes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.cluster.profile import load_profile
from helmsim.release_inputs import build_inputs
from helmsim.simulate import SimulationResult, simulate

CHART = Path(__file__).resolve().parent / "charts" / "web"


def _hr(name: str, namespace: str = "apps", **spec: Any) -> dict[str, Any]:
    body = {
        "interval": "10m",
        "chart": {"spec": {"chart": "web", "version": "1.0.0", "sourceRef": {"kind": "HelmRepository", "name": "repo"}}},
        **spec,
    }
    return {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": name, "namespace": namespace}, "spec": body}


def _tree(tmp_path: Path, *docs: dict[str, Any]) -> Path:
    tree = tmp_path / "flux"
    tree.mkdir(exist_ok=True)
    (tree / "tree.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return tree


def _simulate(tree: Path) -> SimulationResult:
    releases = build_inputs(str(tree), values=[], sets=[], helmrelease=[], charts=[f"web={CHART}"], release_name=None,
                            namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[])
    return simulate(load_profile("kind"), releases)


def _by_name(result: SimulationResult) -> dict[str, Any]:
    return {f"{o.namespace}/{o.name}": o for o in result.releases}


def _config(result: SimulationResult, namespace: str, release: str) -> dict[str, str]:
    assert result.sim is not None
    cm = result.sim.store.get("ConfigMap", namespace, f"{release}-cfg")
    assert cm is not None
    return dict(cm["data"])


def _cm(name: str, data: dict[str, str], namespace: str = "apps") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def test_a_missing_values_reference_is_a_values_error_retried_and_blocks_dependents(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        _hr("web", valuesFrom=[{"kind": "ConfigMap", "name": "missing-cm"}]),
        _hr("api", dependsOn=[{"name": "web"}]),
    )
    out = _by_name(_simulate(tree))
    web = out["apps/web"]
    assert (web.outcome, web.reason) == ("Failed", "ValuesError")
    assert web.message == (
        "could not resolve ConfigMap chart values reference 'apps/missing-cm' with key 'values.yaml': "
        'configmaps "missing-cm" not found'
    )
    assert web.attempts == 0 and "Stalled" not in web.conditions
    assert out["apps/api"].outcome == "Blocked"


def test_an_optional_reference_is_skipped_and_a_missing_key_is_named(tmp_path: Path) -> None:
    optional = _tree(tmp_path, _hr("web", valuesFrom=[{"kind": "Secret", "name": "gone", "optional": True}]))
    assert _by_name(_simulate(optional))["apps/web"].outcome == "Ready"
    keyless = _tree(tmp_path, _cm("vals", {"other.yaml": "replicas: 2"}), _hr("web", valuesFrom=[{"kind": "ConfigMap", "name": "vals"}]))
    web = _by_name(_simulate(keyless))["apps/web"]
    assert web.message == "could not resolve ConfigMap chart values reference 'apps/vals' with key 'values.yaml': key not found"


def test_target_path_values_are_parsed_as_helm_set_quoted_ones_as_strings_literal_ones_verbatim(tmp_path: Path) -> None:
    """fluxcd/pkg chartutil/values.go ReplacePathValue: ``--set`` typing, quotes trimmed to a
    string, ``literal`` as ``--set-literal`` (commas and brackets kept)."""
    tree = _tree(
        tmp_path,
        _cm("vals", {"replicas": "3", "label": "a,b=c", "quoted": "'2'"}),
        _hr(
            "typed",
            valuesFrom=[
                {"kind": "ConfigMap", "name": "vals", "valuesKey": "replicas", "targetPath": "replicas"},
                {"kind": "ConfigMap", "name": "vals", "valuesKey": "label", "targetPath": "label", "literal": True},
            ],
        ),
        _hr("quoted", valuesFrom=[{"kind": "ConfigMap", "name": "vals", "valuesKey": "quoted", "targetPath": "label"}]),
    )
    result = _simulate(tree)
    typed = _config(result, "apps", "typed")
    assert typed["label"] == "a,b=c" and typed["kind"] != "string"  # a number, not the string "3"
    assert _config(result, "apps", "quoted")["label"] == "2"
    assert result.sim is not None
    deployment = result.sim.store.get("Deployment", "apps", "typed")
    assert deployment is not None and deployment["spec"]["replicas"] == 3


def test_a_suspended_release_is_not_reconciled_and_its_dependents_wait(tmp_path: Path) -> None:
    tree = _tree(tmp_path, _hr("base", suspend=True), _hr("app", dependsOn=[{"name": "base"}]))
    result = _simulate(tree)
    out = _by_name(result)
    assert (out["apps/base"].outcome, out["apps/base"].reason) == ("Blocked", "Suspended")
    assert out["apps/base"].helm_status == []
    assert (out["apps/app"].outcome, out["apps/app"].message) == ("Blocked", "dependency 'apps/base' is not ready")
    assert any("HelmRelease apps/base is suspended (spec.suspend: true)" in n for n in result.notes)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"releaseName": "r" * 54}, "spec.releaseName: String should have at most 53 characters"),
        ({"install": {"remediation": {"strategy": "rollback"}}}, 'unknown field "spec.install.remediation.strategy"'),
    ],
)
def test_what_the_crd_refuses_is_bad_input_naming_the_line(tmp_path: Path, spec: dict[str, Any], expected: str) -> None:
    tree = _tree(tmp_path, _hr("web", **spec))
    result = CliRunner().invoke(app, ["simulate", str(tree), "--chart", f"web={CHART}", "-p", "kind"])
    assert result.exit_code == 2
    assert f"{tree / 'tree.yaml'}:" in result.output and expected in result.output


def test_each_helmrelease_stores_its_release_in_its_storage_namespace(tmp_path: Path) -> None:
    """api/v2 GetStorageNamespace: two HelmReleases in different namespaces that install the same
    release name into one target namespace keep separate histories (each revision 1)."""
    tree = _tree(tmp_path, _hr("web", "team-a", targetNamespace="shared", releaseName="web"),
                 _hr("web", "team-b", targetNamespace="shared", releaseName="web"))
    out = _by_name(_simulate(tree))
    assert [h["revision"] for h in out["team-a/web"].helm_status] == [1]
    assert [h["revision"] for h in out["team-b/web"].helm_status] == [1]


def test_an_install_failure_names_the_unshortened_release_name(tmp_path: Path) -> None:
    """internal/reconcile/install.go failure: GetReleaseNamespace()/GetReleaseName(), not the
    name shortened for Helm (only success messages name the stored release)."""
    name = "an-application-with-a-rather-long-name-indeed"
    tree = _tree(tmp_path, _hr(name, targetNamespace="production-workloads", values={"replicas": "x"}, install={"remediation": {"retries": 0}}))
    web = _by_name(_simulate(tree))[f"apps/{name}"]
    assert web.outcome == "Stalled"
    assert f"Helm install failed for release production-workloads/production-workloads-{name} with chart web@1.0.0" in web.message


def test_namespaces_nothing_creates_are_said_to_be_assumed(tmp_path: Path) -> None:
    assumed = _simulate(_tree(tmp_path, _hr("web", targetNamespace="payments")))
    assert "namespace payments: assumed to exist in the cluster (nothing in the input creates it: no Namespace object, no install.createNamespace)" in assumed.notes
    created = _simulate(_tree(tmp_path, _hr("web", targetNamespace="payments", install={"createNamespace": True})))
    assert not any("assumed to exist" in n for n in created.notes)


def test_unevaluated_ready_expressions_are_said(tmp_path: Path) -> None:
    tree = _tree(tmp_path, _hr("base"), _hr("app", dependsOn=[{"name": "base", "readyExpr": "status.observedGeneration > 0"}]))
    notes = _simulate(tree).notes
    assert "HelmRelease apps/app: the readyExpr of dependsOn base is not evaluated; the simulation waits for the dependency's Ready condition instead" in notes
