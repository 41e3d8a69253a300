"""Helm's Build pre-flight in each action (helmsim.helm.build via helmsim.helm.actions).

Exact texts: k8s.io/cli-runtime pkg/resource/mapper.go (``resource mapping not found …``),
k8s.io/apimachinery NoKindMatchError and error aggregates, and Helm's wrappings in
helm/helm pkg/action/install.go, upgrade.go, rollback.go and hooks.go.
"""

from __future__ import annotations

from typing import Any

from helmsim.cluster.cluster import build_cluster
from helmsim.cluster.profile import load_profile
from helmsim.helm import actions, build
from helmsim.helm.actions import ActionOptions, ChartRelease, HelmContext
from helmsim.helm.release import Release, ReleaseStorage
from helmsim.manifests import Resource, parse_documents

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions: [{name: v1, served: true, storage: true}]
"""
WIDGET = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n{hook}spec:\n  size: 1\n"
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: '1'\n"


def _resources(*docs: tuple[str, str]) -> tuple[Resource, ...]:
    return tuple(parse_documents(list(docs), namespace="apps").resources)


def _hook(event: str) -> str:
    return f'  annotations:\n    "helm.sh/hook": {event}\n'


def _ctx() -> HelmContext:
    sim = build_cluster(load_profile("kind"), namespaces=["apps"])
    return HelmContext(sim, ReleaseStorage())


def _run(ctx: HelmContext, proc: Any) -> Any:
    p = ctx.sim.process(proc)
    ctx.sim.run(until=600)
    assert p.triggered
    return p.value


def _no_match(name: str, ns: str = "") -> str:
    return (
        f'resource mapping not found for name: "{name}" namespace: "{ns}" from "": '
        'no matches for kind "Widget" in version "example.com/v1"\nensure CRDs are installed first'
    )


def test_several_unmapped_objects_are_one_aggregate_error_in_manifest_order() -> None:
    docs = _resources(
        ("c/templates/a.yaml", WIDGET.format(hook="").replace("name: w", "name: b")),
        ("c/templates/b.yaml", WIDGET.format(hook="").replace("name: w", "name: a")),
        ("c/templates/cm.yaml", CM),
    )
    assert build.build_error(docs, lambda api, kind: kind != "Widget") == f"[{_no_match('b')}, {_no_match('a')}]"
    assert build.build_error(docs[2:], lambda api, kind: kind != "Widget") is None


def test_namespace_in_the_error_is_the_one_the_manifest_gives() -> None:
    (res,) = _resources(("c/t.yaml", WIDGET.format(hook="").replace("  name: w\n", "  name: w\n  namespace: team\n")))
    assert build.mapping_error(res, lambda a, k: False) == _no_match("w", "team")


def test_a_custom_resource_as_pre_install_hook_fails_the_hook_after_the_release_is_stored() -> None:
    # hooks.go execHook builds each hook right before creating it; the release is already stored
    ctx = _ctx()
    spec = ChartRelease(
        name="r", namespace="apps", chart="c@1.0.0",
        resources=_resources(("c/templates/crd.yaml", CRD), ("c/templates/w.yaml", WIDGET.format(hook=_hook("pre-install")))),
    )
    result = _run(ctx, actions.install(ctx, spec, ActionOptions(timeout=60)))
    assert not result.ok
    assert result.error == (
        "failed pre-install: unable to build kubernetes object for pre-install hook c/templates/w.yaml: "
        + _no_match("w")
    )
    assert [(r.revision, r.status) for r in ctx.storage.history("apps", "r")] == [(1, "failed")]
    assert ctx.sim.store.list("CustomResourceDefinition") == []  # the manifest was never applied


def test_a_custom_resource_as_post_install_hook_maps_once_the_crd_of_the_manifest_is_established() -> None:
    ctx = _ctx()
    spec = ChartRelease(
        name="r", namespace="apps", chart="c@1.0.0",
        resources=_resources(("c/templates/crd.yaml", CRD), ("c/templates/w.yaml", WIDGET.format(hook=_hook("post-install")))),
    )
    result = _run(ctx, actions.install(ctx, spec, ActionOptions(timeout=60)))
    assert result.ok, result.error
    assert ctx.sim.store.get("Widget", "apps", "w") is not None


def test_rollback_to_a_revision_whose_kinds_are_gone_stays_pending() -> None:
    # rollback.go: the rollback release is stored, then both manifests are built; the target's
    # Build error is "unable to build kubernetes objects from new release manifest: …"
    ctx = _ctx()
    old = _resources(("c/templates/w.yaml", WIDGET.format(hook="")), ("c/templates/cm.yaml", CM))
    new = _resources(("c/templates/cm.yaml", CM))
    for rev, status, manifest in ((1, "superseded", old), (2, "failed", new)):
        ctx.storage.add(Release(name="r", namespace="apps", revision=rev, chart="c@1.0.0", status=status, manifest=manifest, hooks=()))  # type: ignore[arg-type]
    result = _run(ctx, actions.rollback(ctx, "apps", "r", ActionOptions(timeout=60)))
    assert result.error == "unable to build kubernetes objects from new release manifest: " + _no_match("w", "")
    assert [(r.revision, r.status) for r in ctx.storage.history("apps", "r")] == [
        (1, "superseded"), (2, "failed"), (3, "pending-rollback"),
    ]
    assert ctx.sim.store.get("ConfigMap", "apps", "settings") is None


def test_upgrade_from_a_release_whose_current_manifest_no_longer_maps() -> None:
    # upgrade.go performUpgrade: Build(current manifest) fails before the new revision is stored
    ctx = _ctx()
    old = _resources(("c/templates/w.yaml", WIDGET.format(hook="")))
    ctx.storage.add(Release(name="r", namespace="apps", revision=1, chart="c@1.0.0", status="deployed", manifest=old, hooks=()))
    spec = ChartRelease(name="r", namespace="apps", chart="c@1.1.0", resources=_resources(("c/templates/cm.yaml", CM)))
    result = _run(ctx, actions.upgrade(ctx, spec, ActionOptions(timeout=60)))
    assert result.release is None
    assert result.error == "unable to build kubernetes objects from current release manifest: " + _no_match("w", "")
    assert [(r.revision, r.status) for r in ctx.storage.history("apps", "r")] == [(1, "deployed")]
