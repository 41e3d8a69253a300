"""A Flux tree laid out as fluxcd/flux2-kustomize-helm-example lays it out: a base
(apps/base/podinfo, its kustomization.yaml setting the namespace) and one overlay per cluster
(apps/staging, apps/production) whose kustomization.yaml patches the HelmRelease's values from a
file that is a patch, not an object. kustomize-controller builds each Kustomization's path
(fluxcd/kustomize-controller internal/controller/kustomization_controller.go build; fluxcd/pkg
kustomize_generator.go). helmsim read every YAML file as an object: the tree failed on the patch
file (``spec.interval: Field required``), and a cluster directory alone had no HelmRelease."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from helmsim.cluster.profile import load_profile
from helmsim.release_inputs import build_inputs
from helmsim.simulate import SimulationResult, simulate

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "tests" / "realcharts" / "flux-overlays"


def _simulate(target: Path, repository_root: Path = ROOT) -> SimulationResult:
    releases = build_inputs(str(target), release_name=None, namespace="default", repository_root=str(repository_root))
    return simulate(load_profile("kind"), releases, horizon=900.0)


def _pods(result: SimulationResult) -> list[str]:
    assert result.sim is not None
    return [p["metadata"]["name"] for p in result.sim.store.list("Pod", "podinfo")]


def test_a_cluster_directory_applies_its_overlay_of_the_base() -> None:
    result = _simulate(TREE / "clusters" / "staging")
    [release] = result.releases
    # the base's kustomization.yaml put the HelmRelease in podinfo; staging's patch set 2 replicas
    assert (release.namespace, release.name, release.outcome) == ("podinfo", "podinfo", "Ready")
    assert len(_pods(result)) == 2
    [apps] = result.kustomizations
    assert apps.name == "apps" and apps.ready == "True"


def test_the_production_overlay_decides_the_verdict() -> None:
    """Three replicas, one per node, on kind's one node: two stay Pending and the release stalls;
    the base's own values (one replica) would have been Ready."""
    result = _simulate(TREE / "clusters" / "production")
    [release] = result.releases
    assert release.outcome == "Stalled"
    assert len(_pods(result)) == 3
    [apps] = result.kustomizations
    assert apps.ready == "False" and apps.reason == "HealthCheckFailed"


def test_a_kustomizations_own_patches_and_images_are_added_to_its_build(tmp_path: Path) -> None:
    """fluxcd/pkg kustomize_generator.go: spec.patches are appended to the kustomization.yaml's
    patches, so they apply after staging's values patch."""
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    text = (TREE / "clusters" / "staging" / "apps.yaml").read_text()
    text += (
        "  patches:\n"
        "    - target: {kind: HelmRelease, name: podinfo}\n"
        "      patch: |\n"
        "        - op: replace\n"
        "          path: /spec/values/replicaCount\n"
        "          value: 4\n"
    )
    (cluster / "apps.yaml").write_text(text)
    result = _simulate(cluster)
    assert len(_pods(result)) == 4
    assert result.releases[0].outcome == "Ready"


def test_both_clusters_at_once_are_refused_in_one_line() -> None:
    """Each cluster directory names its own Kustomization flux-system/apps: one simulation is
    one cluster."""
    done = subprocess.run(
        [sys.executable, "-m", "helmsim", "simulate", str(TREE / "clusters"), "-p", "kind"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "defined twice" in done.stderr and "Traceback" not in done.stderr


def test_a_broken_overlay_is_a_kustomize_build_error_naming_its_file(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    (tree / "apps" / "staging" / "kustomization.yaml").write_text("resources:\n  - ../base/missing\n")
    done = subprocess.run(
        [sys.executable, "-m", "helmsim", "simulate", str(tree / "apps" / "staging"), "-p", "kind"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 2
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert str(tree / "apps" / "staging" / "kustomization.yaml") in line
    assert "kustomize build failed: accumulating resources: accumulation err='accumulating resources from '../base/missing'" in line


def test_what_a_build_does_not_apply_is_said(tmp_path: Path) -> None:
    tree = tmp_path / "tests" / "realcharts" / "flux-overlays"
    shutil.copytree(TREE, tree)
    kfile = tree / "apps" / "staging" / "kustomization.yaml"
    kfile.write_text(kfile.read_text() + "configMapGenerator:\n  - name: podinfo-values\n    literals: [a=b]\n")
    releases = build_inputs(
        str(tree / "clusters" / "staging"), release_name=None, namespace="default", repository_root=str(tmp_path)
    )
    notes = [n for r in releases for n in r.notes]
    assert f"{kfile}: configMapGenerator not applied (not modelled): the objects are built without it" in notes


def test_an_artifact_generators_external_artifact_is_built_from_its_copies() -> None:
    """fluxcd/source-watcher internal/builder/builder.go: the apps artifact holds base/ and
    production/ copied from the repository; the Kustomization builds ./production from it, and
    the objects are still named by the files they were copied from."""
    result = _simulate(TREE / "clusters" / "artifacts")
    [release] = result.releases
    assert release.outcome == "Stalled" and len(_pods(result)) == 3
    [apps] = result.kustomizations
    assert apps.reason == "HealthCheckFailed"
    releases = build_inputs(
        str(TREE / "clusters" / "artifacts"), release_name=None, namespace="default", repository_root=str(ROOT)
    )
    [given] = releases
    assert given.hr.source == str(TREE / "apps" / "base" / "podinfo" / "release.yaml")
    assert (
        "Kustomization flux-system/apps: its source ExternalArtifact/flux-system/apps is composed by ArtifactGenerator "
        "flux-system/flux-system from the local tree (its copy operations applied); the generator is assumed Ready"
    ) in result.notes


def _cluster(tmp_path: Path, body: str) -> Path:
    cluster = tmp_path / "cluster"
    cluster.mkdir(exist_ok=True)
    (cluster / "apps.yaml").write_text(body)
    return cluster


KS = """apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {{name: {name}, namespace: flux-system}}
spec:
  interval: 10m
  sourceRef: {{kind: GitRepository, name: flux-system}}
  path: {path}
{extra}"""


def test_a_path_climbing_out_of_the_repository_stays_inside_it(tmp_path: Path) -> None:
    """securejoin.SecureJoin (kustomization_controller.go): ../.. from the root is the root."""
    escaped = "../../../../../tests/realcharts/flux-overlays/apps/staging"
    cluster = _cluster(tmp_path, KS.format(name="apps", path=escaped, extra=""))
    assert len(_pods(_simulate(cluster))) == 2


def test_one_path_built_by_two_kustomizations_with_their_own_patches_is_refused(tmp_path: Path) -> None:
    patch = "  patches:\n    - target: {kind: HelmRelease}\n      patch: |\n        - {op: add, path: /spec/suspend, value: %s}\n"
    path = "./tests/realcharts/flux-overlays/apps/staging"
    cluster = _cluster(
        tmp_path,
        KS.format(name="a", path=path, extra=patch % "false") + "---\n" + KS.format(name="b", path=path, extra=patch % "true"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "helmsim", "simulate", str(cluster), "-p", "kind", "--repository-root", str(ROOT)],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "Kustomizations flux-system/a and flux-system/b both build" in done.stderr


def test_a_target_namespace_renames_the_namespace_the_path_holds(tmp_path: Path) -> None:
    """kustomize-controller's generator sets targetNamespace as the kustomization's namespace,
    whose transformer also renames a v1 Namespace (api/filters/namespace/namespace.go)."""
    path = "./tests/realcharts/flux-overlays/apps/staging"
    cluster = _cluster(tmp_path, KS.format(name="apps", path=path, extra="  targetNamespace: podinfo-blue\n"))
    result = _simulate(cluster)
    assert [(r.namespace, r.outcome) for r in result.releases] == [("podinfo-blue", "Ready")]
    assert result.sim is not None
    names = {n["metadata"]["name"] for n in result.sim.store.list("Namespace")}
    assert "podinfo-blue" in names and "podinfo" not in names


def _artifact_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tests" / "realcharts" / "flux-overlays"
    shutil.copytree(TREE, tree)
    return tree


def test_an_artifact_file_that_does_not_parse_is_named_as_the_file_it_was_copied_from(tmp_path: Path) -> None:
    tree = _artifact_tree(tmp_path)
    (tree / "apps" / "base" / "podinfo" / "namespace.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: [\n")
    done = subprocess.run(
        [sys.executable, "-m", "helmsim", "simulate", str(tree / "clusters" / "artifacts"), "-p", "kind",
         "--repository-root", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 2 and "helmsim-artifacts-" not in done.stderr
    assert done.stderr.startswith(f"error: {tree / 'apps' / 'base' / 'podinfo' / 'namespace.yaml'}:")
    assert "invalid YAML" in done.stderr


def test_an_external_artifact_no_generator_makes_serves_the_local_tree(tmp_path: Path) -> None:
    """Without its ArtifactGenerator in the input the artifact is assumed to serve the files given
    (said), as before generators were modelled."""
    tree = _artifact_tree(tmp_path)
    text = (tree / "clusters" / "artifacts" / "apps.yaml").read_text()
    generator = text[text.index("apiVersion: source.extensions.fluxcd.io"):text.index("---\napiVersion: kustomize")]
    (tree / "clusters" / "artifacts" / "apps.yaml").write_text(
        text.replace(generator, "").replace("path: ./production", "path: ./tests/realcharts/flux-overlays/apps/staging")
    )
    result = _simulate(tree / "clusters" / "artifacts", repository_root=tmp_path)
    assert [r.outcome for r in result.releases] == ["Ready"] and len(_pods(result)) == 2
    assert any("its source ExternalArtifact/flux-system/apps is not in the input; assumed Ready" in n for n in result.notes)


def test_post_build_substitutes_a_number_into_a_patched_object(tmp_path: Path) -> None:
    """kustomize-controller substitutes into the YAML of the build and reads it again: a patched
    ``replicaCount: ${replicas}`` is the number 3, not the string "3" (fluxcd/pkg kustomize_varsub.go)."""
    tree = _artifact_tree(tmp_path)
    (tree / "apps" / "staging" / "podinfo-values.yaml").write_text(
        (tree / "apps" / "staging" / "podinfo-values.yaml").read_text().replace("replicaCount: 2", "replicaCount: ${replicas}")
    )
    (tree / "clusters" / "staging" / "apps.yaml").write_text(
        (tree / "clusters" / "staging" / "apps.yaml").read_text() + "  postBuild:\n    substitute: {replicas: \"3\"}\n"
    )
    [given] = build_inputs(
        str(tree / "clusters" / "staging"), release_name=None, namespace="default", repository_root=str(tmp_path)
    )
    assert given.hr.spec.values["replicaCount"] == 3 and type(given.hr.spec.values["replicaCount"]) is int
    result = _simulate(tree / "clusters" / "staging", repository_root=tmp_path)
    assert result.releases[0].outcome == "Ready" and len(_pods(result)) == 3
