"""kustomize-controller semantics on Flux trees: postBuild substitution (fluxcd/pkg
kustomize/kustomize_varsub.go, envsubst), Flux's own kinds served by the cluster, and the
staged apply (fluxcd/pkg ssa/manager_apply.go ApplyAllStaged)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from helmsim.cluster.profile import load_profile
from helmsim.flux import postbuild
from helmsim.release_inputs import build_inputs
from helmsim.simulate import SimulationResult, simulate

CHART = Path(__file__).resolve().parent / "charts" / "web"
GIT = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "metadata": {"name": "flux-system", "namespace": "flux-system"},
       "spec": {"interval": "1m", "url": "https://git.example/fleet.git", "ref": {"branch": "main"}}}


def _ks(post_build: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"interval": "10m", "path": "./apps", "prune": True, "sourceRef": {"kind": "GitRepository", "name": "flux-system"}, "wait": True, "timeout": "2m"}
    if post_build is not None:
        spec["postBuild"] = post_build
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": {"name": "apps", "namespace": "flux-system"}, "spec": spec}


def _repo(tmp_path: Path, cluster: list[dict[str, Any]], apps: dict[str, str]) -> Path:
    (tmp_path / "clusters").mkdir()
    (tmp_path / "apps").mkdir()
    (tmp_path / "clusters" / "sync.yaml").write_text(yaml.safe_dump_all(cluster, sort_keys=False))
    for name, text in apps.items():
        (tmp_path / "apps" / name).write_text(text)
    return tmp_path


def _simulate(root: Path) -> SimulationResult:
    releases = build_inputs(str(root), values=[], sets=[], helmrelease=[], charts=[f"web={CHART}"], release_name=None,
                            namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
                            repository_root=str(root))
    return simulate(load_profile("kind"), releases)


HR = """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 10m
  chart:
    spec: {chart: web, version: "1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
  values:
    replicas: ${replicas:=2}
    label: "${greeting}-$${kept}"
"""
BASE = """apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: apps}
spec: {interval: 1h, url: https://charts.example}
"""


def test_post_build_variables_reach_the_helmrelease_values(tmp_path: Path) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vars", "namespace": "flux-system"}, "data": {"greeting": "hello"}}
    root = _repo(tmp_path, [GIT, cm, _ks({"substituteFrom": [{"kind": "ConfigMap", "name": "vars"}]})], {"base.yaml": BASE, "hr.yaml": HR})
    result = _simulate(root)
    assert result.releases[0].outcome == "Ready"
    assert result.sim is not None
    deployment = result.sim.store.get("Deployment", "apps", "web")
    assert deployment is not None and deployment["spec"]["replicas"] == 2  # the default, a number
    config = result.sim.store.get("ConfigMap", "apps", "web-cfg")
    assert config is not None and config["data"]["label"] == "hello-${kept}"  # $${ is a literal ${


def test_strict_mode_fails_the_build_for_a_variable_that_is_not_set(tmp_path: Path) -> None:
    root = _repo(tmp_path, [GIT, _ks({"substitute": {"other": "x"}})], {"base.yaml": BASE, "hr.yaml": HR})
    result = _simulate(root)
    [ks] = result.kustomizations
    assert (ks.ready, ks.reason) == ("False", "BuildFailed")
    assert ks.message == (
        "post build failed for 'helm.toolkit.fluxcd.io_v2_HelmRelease/web': envsubst error: "
        'variable substitution failed: variable not set (strict mode): "greeting"'
    )
    assert result.releases[0].outcome == "Blocked"


def test_a_missing_substitute_from_fails_the_build_unless_optional(tmp_path: Path) -> None:
    missing = [{"kind": "Secret", "name": "cluster-secrets"}]
    root = _repo(tmp_path, [GIT, _ks({"substitute": {"greeting": "hi"}, "substituteFrom": missing})], {"base.yaml": BASE, "hr.yaml": HR})
    [ks] = _simulate(root).kustomizations
    assert ks.message == (
        "post build failed for '~G_v1_Namespace/apps': substitute from 'Secret/cluster-secrets' error: "
        'secrets "cluster-secrets" not found'
    )
    optional = tmp_path / "optional"
    optional.mkdir()
    root = _repo(optional, [GIT, _ks({"substitute": {"greeting": "hi"}, "substituteFrom": [{**missing[0], "optional": True}]})],
                 {"base.yaml": BASE, "hr.yaml": HR})
    assert _simulate(root).releases[0].outcome == "Ready"


def test_flux_kinds_are_served_and_namespaces_are_applied_first(tmp_path: Path) -> None:
    """A Namespace listed after the objects in it is applied first (ApplyAllStaged), and the
    HelmRepository beside the HelmRelease maps (the cluster runs Flux)."""
    late_namespace = BASE.split("---\n")[1] + "---\n" + BASE.split("---\n")[0]
    hr = HR.replace("${replicas:=2}", "1").replace("${greeting}-$${kept}", "plain")
    root = _repo(tmp_path, [GIT, _ks()], {"a.yaml": late_namespace, "hr.yaml": hr})
    result = _simulate(root)
    [ks] = result.kustomizations
    assert ks.ready == "True"
    assert result.releases[0].outcome == "Ready"


@pytest.mark.parametrize(
    ("text", "vars", "expected"),
    [
        ("${a}", {"a": "1"}, "1"),
        ("${a:=d} ${b:-e} ${c=f} ${d-g}", {"a": ""}, "d e f g"),
        ("${a^^} ${a,,} ${a^} ${#a}", {"a": "hEllo"}, "HELLO hello HEllo 5"),
        ("$a and $${a} and $5", {"a": "x"}, "$a and ${a} and $5"),
    ],
)
def test_envsubst_forms(text: str, vars: dict[str, str], expected: str) -> None:
    assert postbuild.substitute(text, vars) == expected


def test_unsupported_forms_are_not_evaluated_and_bad_names_fail() -> None:
    with pytest.raises(postbuild.Unsupported):
        postbuild.substitute("${a/x/y}", {"a": "x"})
    with pytest.raises(postbuild.BuildError, match="var name is invalid"):
        postbuild.variables({"metadata": {"namespace": "f"}, "spec": {"postBuild": {"substitute": {"1bad": "x"}}}}, [])


@given(st.text(max_size=60), st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,4}", fullmatch=True), st.text(max_size=5), max_size=3))
def test_substitution_never_raises_anything_but_its_own_errors(text: str, vars: dict[str, str]) -> None:
    try:
        out = postbuild.substitute(text, vars)
    except (postbuild.BuildError, postbuild.Unsupported):
        return
    if "$" not in text:
        assert out == text


def test_target_namespace_moves_the_helmreleases_and_unmodelled_fields_are_said(tmp_path: Path) -> None:
    """kustomize's namespace transformer moves every namespaced object a Kustomization with
    spec.targetNamespace applies, HelmReleases included (internal/generator)."""
    ks = _ks()
    ks["spec"]["targetNamespace"] = "other"
    ks["spec"]["namePrefix"] = "x-"
    ks["spec"]["dependsOn"] = [{"name": "infra", "readyExpr": "true"}]
    infra = {**_ks(), "metadata": {"name": "infra", "namespace": "flux-system"}}
    infra["spec"] = {**infra["spec"], "path": "./infra", "sourceRef": {"kind": "GitRepository", "name": "gone"}}
    hr = HR.replace("${replicas:=2}", "1").replace("${greeting}-$${kept}", "plain")
    root = _repo(tmp_path, [GIT, ks, infra], {"base.yaml": BASE, "hr.yaml": hr})
    (root / "infra").mkdir()
    (root / "infra" / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n")
    result = _simulate(root)
    assert [f"{o.namespace}/{o.name}" for o in result.releases] == ["other/web"]
    assert "Kustomization flux-system/apps: spec.namePrefix not applied to what it applies (not modelled)" in result.notes
    assert (
        "Kustomization flux-system/apps: the readyExpr of dependsOn infra is not evaluated; the simulation waits for the "
        "dependency's Ready condition instead"
    ) in result.notes
    assert (
        "Kustomization flux-system/infra: its source GitRepository/flux-system/gone is not in the input; assumed Ready and "
        "serving the files given (kustomize-controller would be ArtifactFailed without it)"
    ) in result.notes


def test_a_failing_kustomization_fails_the_run_even_when_every_helmrelease_is_ready(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from helmsim.cli import app

    hr = HR.replace("${replicas:=2}", "1").replace("${greeting}-$${kept}", "plain")
    orphan = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: nowhere}\ndata: {a: b}\n"
    root = _repo(tmp_path, [GIT, _ks()], {"cm.yaml": orphan})
    (root / "standalone").mkdir()
    (root / "standalone" / "hr.yaml").write_text(BASE + "---\n" + hr)
    result = CliRunner().invoke(
        app, ["simulate", str(root), "--chart", f"web={CHART}", "-p", "kind", "--repository-root", str(root)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 1, result.output
    assert 'ConfigMap/nowhere/x not found: namespaces "nowhere" not found' in result.output
    assert "FAIL 1 Ready of 1 HelmRelease under kind; 1 Kustomization not Ready" in result.output


def test_comments_are_not_substituted_and_target_namespace_moves_the_values_source(tmp_path: Path) -> None:
    """kustomize-controller substitutes the re-serialised object (no comments); the namespace
    transformer moves the ConfigMap a HelmRelease's valuesFrom names along with it."""
    ks = _ks({"substitute": {"greeting": "hi"}})
    ks["spec"]["targetNamespace"] = "other"
    hr = HR.replace("  values:\n", "  # set by Flux: ${cluster_name}\n  valuesFrom:\n  - {kind: ConfigMap, name: web-values}\n  values:\n")
    cm = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-values, namespace: apps}\ndata: {values.yaml: 'replicas: 3'}\n"
    root = _repo(tmp_path, [GIT, ks], {"base.yaml": BASE, "hr.yaml": hr + cm})
    result = _simulate(root)
    [ks_outcome] = result.kustomizations
    assert ks_outcome.ready == "True", ks_outcome.message
    [release] = result.releases
    assert (release.namespace, release.outcome) == ("other", "Ready")
    assert result.sim is not None
    deployment = result.sim.store.get("Deployment", "other", "web")
    assert deployment is not None and deployment["spec"]["replicas"] == 2  # ${replicas:=2} in spec.values wins


def test_a_suspended_kustomization_is_said(tmp_path: Path) -> None:
    ks = _ks()
    ks["spec"]["suspend"] = True
    hr = HR.replace("${replicas:=2}", "1").replace("${greeting}-$${kept}", "plain")
    result = _simulate(_repo(tmp_path, [GIT, ks], {"base.yaml": BASE, "hr.yaml": hr}))
    assert (
        "Kustomization flux-system/apps is suspended (spec.suspend: true): kustomize-controller does not reconcile it, "
        "so nothing it holds is applied by it"
    ) in result.notes
    assert result.releases[0].outcome == "Blocked"
