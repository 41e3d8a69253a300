"""helmsim.kustomize.build beyond what the real kustomize's cases check
(tests/conformance/test_kustomize_trees.py): kustomize-controller's generated kustomization,
its overlay of a Kustomization's patches and images, where each built object is said to come
from, what is not applied, and that any kustomization file either builds or fails as kustomize."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helmsim.errors import InputError
from helmsim.flux.treefiles import read_tree_files
from helmsim.kustomize import KustomizeError
from helmsim.kustomize.build import Overlay, build, document_text
from helmsim.kustomize.patches import Patch
from helmsim.kustomize.select import Selector

DEPLOY = """\
# a comment first
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: web, image: "nginx:1.25"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_directory_without_a_kustomization_file_gets_the_generated_one(tmp_path: Path) -> None:
    """fluxcd/pkg scanManifests: every YAML file, a subdirectory with a kustomization file as
    one resource (not descended into), other files ignored."""
    _write(tmp_path, {
        "a.yaml": DEPLOY,
        "notes.txt": "not YAML",
        "sub/b.yml": "apiVersion: v1\nkind: Secret\nmetadata: {name: b}\n",
        "app/kustomization.yaml": "resources: [cm.yaml]\n",
        "app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\n",
        "app/unlisted.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: unlisted}\n",
    })
    names = [d.obj["metadata"]["name"] for d in build(tmp_path).documents]
    assert names == ["web", "settings", "app", "b"]


def test_unchanged_objects_keep_their_text_and_changed_ones_their_line(tmp_path: Path) -> None:
    _write(tmp_path, {
        "base/kustomization.yaml": "resources: [app.yaml]\n",
        "base/app.yaml": DEPLOY,
        "overlay/kustomization.yaml": "resources: [../base]\nimages: [{name: nginx, newTag: '1.27'}]\n",
    })
    web, settings = build(tmp_path / "overlay").documents
    assert (web.file, web.line, settings.line) == (str(tmp_path / "base" / "app.yaml"), 1, 10)
    assert web.text is None and web.obj["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert settings.text is not None and "kind: ConfigMap" in settings.text
    # the rewritten document starts where its own did: errors keep naming that line
    assert document_text(settings).startswith("\n" * 9 + "apiVersion: v1")


def test_the_overlay_appends_patches_and_merges_images_by_name(tmp_path: Path) -> None:
    _write(tmp_path, {
        "kustomization.yaml": (
            "resources: [app.yaml]\n"
            "patches:\n  - patch: |\n      - {op: add, path: /metadata/labels, value: {from: file}}\n"
            "    target: {kind: Deployment}\n"
            "images: [{name: nginx, newName: mirror/nginx, newTag: '1.26'}]\n"
        ),
        "app.yaml": DEPLOY,
    })
    overlay = Overlay(
        (Patch('[{"op": "add", "path": "/metadata/labels/flux", "value": "yes"}]', Selector(kind="Deployment")),),
        ({"name": "nginx", "newTag": "1.27"},),
    )
    web = build(tmp_path, overlay=overlay).documents[0].obj
    assert web["metadata"]["labels"] == {"from": "file", "flux": "yes"}  # the file's patch ran first
    # fluxcd/pkg: a newTag replaces the file's tag and keeps its newName
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "mirror/nginx:1.27"


def test_what_is_not_applied_is_named_once_per_file(tmp_path: Path) -> None:
    _write(tmp_path, {
        "kustomization.yaml": (
            "resources: [app.yaml, https://github.com/example/repo//deploy?ref=v1]\n"
            "namePrefix: prod-\ncommonLabels: {team: a}\n"
        ),
        "app.yaml": DEPLOY,
    })
    notes = build(tmp_path).notes
    kfile = tmp_path / "kustomization.yaml"
    assert notes == [
        f"{kfile}: namePrefix not applied (not modelled): the objects are built without it",
        f"{kfile}: commonLabels not applied (not modelled): the objects are built without it",
        f"{kfile}: remote resource https://github.com/example/repo//deploy?ref=v1 is not read (not modelled): its objects are missing",
    ]
    assert [d.obj["metadata"]["name"] for d in build(tmp_path).documents] == ["web", "settings"]


def test_two_kustomization_files_are_refused(tmp_path: Path) -> None:
    _write(tmp_path, {"kustomization.yaml": "resources: []\n", "kustomization.yml": "resources: []\n"})
    with pytest.raises(KustomizeError, match="Found multiple kustomization files under: "):
        build(tmp_path)


def test_the_tree_reader_maps_a_base_outside_the_overlay_to_it(tmp_path: Path) -> None:
    """What applies the overlay applies the base's objects (helmsim.flux.treefiles via)."""
    _write(tmp_path, {
        "base/kustomization.yaml": "resources: [app.yaml]\n",
        "base/app.yaml": DEPLOY,
        "overlay/kustomization.yaml": "resources: [../base]\npatches: [{path: patch.yaml}]\n",
        "overlay/patch.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n",
        "plain/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    })
    read = read_tree_files([str(tmp_path / "overlay"), str(tmp_path / "plain")])
    assert [f for f, _ in read.files] == [str(tmp_path / "base" / "app.yaml")] * 2 + [str(tmp_path / "plain" / "x.yaml")]
    assert read.via == {str((tmp_path / "base" / "app.yaml").resolve()): str((tmp_path / "overlay").resolve())}
    assert "replicas: 3" in read.files[0][1]  # the patch file itself is no object
    with pytest.raises(InputError, match="kustomize build failed: "):
        (tmp_path / "overlay" / "patch.yaml").unlink()
        read_tree_files([str(tmp_path / "overlay")])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(
    st.text(max_size=200),
    st.sampled_from([
        "resources: x", "resources: [1]", "patches: [1]", "patches: {a: b}", "images: [{name: 1}]",
        "patchesJson6902: [{path: p.yaml}]", "replicas: [{name: web, count: x}]", "namespace: [a]",
        "patchesStrategicMerge: ['{kind: Deployment, metadata: {name: web}}']", "- a\n- b", "resources: [../..]",
    ]),
))
def test_any_kustomization_file_builds_or_fails_as_kustomize_does(tmp_path: Path, text: str) -> None:
    """A fuzz of the kustomization reader: a build, a KustomizeError or a one-line InputError
    naming the file, never another exception."""
    d = tmp_path / "k"
    d.mkdir(exist_ok=True)
    (d / "kustomization.yaml").write_text(text)
    (d / "app.yaml").write_text(DEPLOY)
    try:
        build(d)
    except KustomizeError as err:
        assert str(err)
    except InputError as err:
        assert "kustomization.yaml" in str(err)
