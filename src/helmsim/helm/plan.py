"""Helm's plan for an install or an upgrade: what is applied, in which order and shape.

Pure: takes parsed resources, returns data. The simulator replays a plan on the clock; the
``plan`` command prints it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from msgspec import Struct, field

from helmsim.helm import immutable
from helmsim.helm.order import hook_order, kind_groups, manifest_order
from helmsim.manifests import Resource

Action = Literal["create", "patch", "unchanged", "delete", "kept"]


class Step(Struct, frozen=True):
    """One object of the manifest walk and what Helm does with it."""

    resource: Resource
    action: Action
    errors: tuple[str, ...] = ()


class Plan(Struct, frozen=True):
    """Everything Helm does for one install or upgrade, in order.

    ``crds`` (install only) come first, then ``pre_hooks``, then ``steps`` grouped by kind
    (``groups``), then the wait over ``waited``, then ``post_hooks``. For an upgrade,
    ``deletes`` follow the walk when no step failed (``deletes_skipped`` otherwise).
    """

    action: Literal["install", "upgrade"]
    crds: tuple[Resource, ...]
    pre_hooks: tuple[Resource, ...]
    steps: tuple[Step, ...]
    post_hooks: tuple[Resource, ...]
    deletes: tuple[Step, ...] = ()
    deletes_skipped: bool = False
    errors: tuple[str, ...] = field(default=())

    @property
    def groups(self) -> list[tuple[str, list[Step]]]:
        """Consecutive steps of one kind, as pkg/kube/client.go batchPerform walks them."""
        by_id = {id(s.resource): s for s in self.steps}
        return [
            (kind, [by_id[id(r)] for r in resources])
            for kind, resources in kind_groups([s.resource for s in self.steps])
        ]

    @property
    def waited(self) -> list[Resource]:
        """Objects the release wait covers: the new manifest only, never hooks (pkg/action)."""
        return [s.resource for s in self.steps]

    @property
    def pre_event(self) -> str:
        return "pre-install" if self.action == "install" else "pre-upgrade"

    @property
    def post_event(self) -> str:
        return "post-install" if self.action == "install" else "post-upgrade"


def _split(resources: Sequence[Resource]) -> tuple[list[Resource], list[Resource]]:
    hooks = [r for r in resources if r.is_hook]
    manifest = [r for r in resources if not r.is_hook]
    return hooks, manifest


def plan_install(resources: Sequence[Resource], crds: Sequence[Resource] = ()) -> Plan:
    """Install: ``crds/`` files one by one, pre-install hooks, the manifest, wait, post-install.

    helm/helm pkg/action/install.go RunWithContext: crds/ before anything; hooks excluded from
    the manifest (pkg/release/v1/util/manifest_sorter.go); manifest in InstallOrder.
    """
    hooks, manifest = _split(resources)
    steps = tuple(Step(r, "create") for r in manifest_order(manifest))
    return Plan(
        action="install",
        crds=tuple(crds),
        pre_hooks=tuple(hook_order(hooks, "pre-install")),
        steps=steps,
        post_hooks=tuple(hook_order(hooks, "post-install")),
    )


def plan_upgrade(
    previous: Sequence[Resource],
    resources: Sequence[Resource],
    *,
    live: Mapping[tuple[str, str, str, str], Mapping[str, object]] | None = None,
    storage_classes: Mapping[str, Mapping[str, object]] | None = None,
    server_side: bool = False,
    kube_version: str | None = None,
) -> Plan:
    """Upgrade from ``previous`` (the last deployed manifest) to ``resources``.

    helm/helm pkg/kube/client.go update(): walk the target in manifest order one object at a
    time: create when absent, else patch; patch errors are collected and the walk goes on; a
    create error stops the walk; objects gone from the chart are deleted only when nothing failed,
    except those whose live object carries ``helm.sh/resource-policy: keep``.
    ``live`` maps an object key to its live state (e.g. a Bound claim) for the immutability
    checks; absent keys are taken to be as the previous manifest left them. ``kube_version``
    picks the API server's wording (1.34 prints invalid values as JSON).
    """
    _, old_manifest = _split(previous)
    hooks, manifest = _split(resources)
    old_by_key = {r.key: r for r in old_manifest}
    steps: list[Step] = []
    errors: list[str] = []
    for res in manifest_order(manifest):
        old = old_by_key.get(res.key)
        if old is None:
            steps.append(Step(res, "create"))
            continue
        live_obj = (live or {}).get(res.key)
        problems = tuple(
            immutable.violations(
                old.body,
                res.body,
                live=live_obj,
                storage_classes=storage_classes,
                server_side=server_side,
                kube_version=kube_version,
                namespace=res.namespace,
            )
        )
        errors.extend(problems)
        action: Action = "unchanged" if old.body == res.body and not problems else "patch"
        steps.append(Step(res, action, problems))
    new_keys = {r.key for r in manifest}
    deletes = tuple(
        Step(r, "kept" if r.keep_policy else "delete")
        for r in manifest_order(old_manifest)
        if r.key not in new_keys
    )
    return Plan(
        action="upgrade",
        crds=(),
        pre_hooks=tuple(hook_order(hooks, "pre-upgrade")),
        steps=tuple(steps),
        post_hooks=tuple(hook_order(hooks, "post-upgrade")),
        deletes=deletes,
        deletes_skipped=bool(errors) and any(d.action == "delete" for d in deletes),
        errors=tuple(errors),
    )


def upgrade_error(plan: Plan) -> str | None:
    """The error Helm returns for the walk: patch failures joined with " && " (pkg/kube/client.go)."""
    return " && ".join(plan.errors) if plan.errors else None
