"""Helm's apply order: the kind sorter, the manifest order, hook execution order, kind groups.

Everything here mirrors helm/helm at v4.2.4 (``pkg/release/v1/util``, ``pkg/action/hooks.go``,
``pkg/kube/client.go``) and, where it differs, v3.21.4 (``pkg/releaseutil``). The only v3/v4
difference is the two webhook-configuration kinds, which v3 does not list (so they sort as
unknown kinds there); pass ``INSTALL_ORDER_V3`` / ``UNINSTALL_ORDER_V3`` or use
:func:`install_order` / :func:`uninstall_order` to pick a version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

from helmsim.manifests import Resource

T = TypeVar("T")

HelmMajor = Literal[3, 4]

# helm/helm pkg/releaseutil/kind_sorter.go @v3.21.4: InstallOrder (36 kinds, verbatim).
INSTALL_ORDER_V3: tuple[str, ...] = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
)

# helm/helm pkg/releaseutil/kind_sorter.go @v3.21.4: UninstallOrder (verbatim; Service is 4th,
# it is not InstallOrder reversed).
UNINSTALL_ORDER_V3: tuple[str, ...] = (
    "APIService",
    "Ingress",
    "IngressClass",
    "Service",
    "CronJob",
    "Job",
    "StatefulSet",
    "HorizontalPodAutoscaler",
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "Pod",
    "DaemonSet",
    "RoleBindingList",
    "RoleBinding",
    "RoleList",
    "Role",
    "ClusterRoleBindingList",
    "ClusterRoleBinding",
    "ClusterRoleList",
    "ClusterRole",
    "CustomResourceDefinition",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "ConfigMap",
    "SecretList",
    "Secret",
    "ServiceAccount",
    "PodDisruptionBudget",
    "PodSecurityPolicy",
    "LimitRange",
    "ResourceQuota",
    "NetworkPolicy",
    "Namespace",
    "PriorityClass",
)

# helm/helm pkg/release/v1/util/kind_sorter.go @v4.2.4: InstallOrder = v3's list plus the two
# webhook configurations at the end.
INSTALL_ORDER_V4: tuple[str, ...] = INSTALL_ORDER_V3 + (
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
)

# helm/helm pkg/release/v1/util/kind_sorter.go @v4.2.4: UninstallOrder = v3's list with
# "remove validation before mutation to ensure webhooks don't block removal" in front.
UNINSTALL_ORDER_V4: tuple[str, ...] = (
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
) + UNINSTALL_ORDER_V3


def install_order(helm: HelmMajor = 4) -> tuple[str, ...]:
    """Helm's InstallOrder for Helm major version ``helm`` (3 or 4)."""
    return INSTALL_ORDER_V4 if helm == 4 else INSTALL_ORDER_V3


def uninstall_order(helm: HelmMajor = 4) -> tuple[str, ...]:
    """Helm's UninstallOrder for Helm major version ``helm`` (3 or 4)."""
    return UNINSTALL_ORDER_V4 if helm == 4 else UNINSTALL_ORDER_V3


def _kind_key(kind: str, positions: dict[str, int]) -> tuple[int, int, str]:
    # helm/helm pkg/release/v1/util/kind_sorter.go lessByKind: known kinds by list position;
    # "unknown kind is last"; two unknown kinds "sort alphabetically by kind" (Go string <, i.e.
    # byte order, which for valid UTF-8 is Python's code-point order); equal keys keep input order
    # because the caller's sort is stable (sort.SliceStable).
    pos = positions.get(kind)
    if pos is None:
        return (1, 0, kind)
    return (0, pos, "")


def sort_by_kind(
    items: Sequence[T],
    kind_of: Callable[[T], str],
    order: Sequence[str] = INSTALL_ORDER_V4,
) -> list[T]:
    """Stable sort of ``items`` by kind, exactly as Helm's ``lessByKind`` orders them.

    Kinds in ``order`` come first by their position; all other kinds follow, alphabetically by
    kind; items of the same kind keep their input order. The input is not modified.
    """
    positions: dict[str, int] = {}
    for i, kind in enumerate(order):
        positions.setdefault(kind, i)
    return sorted(items, key=lambda item: _kind_key(kind_of(item), positions))


def _file_then_document(resources: Sequence[Resource]) -> list[Resource]:
    # helm/helm pkg/release/v1/util/manifest_sorter.go SortManifests: template paths are visited
    # in sort.Strings order, and each file's documents in SplitManifests order
    # (BySplitManifestsOrder). Python's stable sort keeps List items of one document in order.
    return sorted(resources, key=lambda r: (r.source.path, r.source.index))


def manifest_order(
    resources: Sequence[Resource], order: Sequence[str] = INSTALL_ORDER_V4
) -> list[Resource]:
    """Helm's order for the release manifest (non-hook objects).

    Template path (``sort.Strings``), then document position in the file, then the stable kind
    sort (helm/helm pkg/release/v1/util/manifest_sorter.go ``SortManifests`` →
    ``sortManifestsByKind``). Hooks among ``resources`` are ordered like any other object; pass
    only non-hooks to get the manifest Helm applies.
    """
    return sort_by_kind(_file_then_document(resources), lambda r: r.kind, order)


def _hook_name(resource: Resource) -> str:
    # helm/helm pkg/release/v1/util/manifest_sorter.go: Hook.Name is entry.Metadata.Name, so a
    # hook with only generateName has the empty name "" (which sorts first at its weight).
    meta = resource.body.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def hook_order(
    hooks: Sequence[Resource],
    event: str,
    order: Sequence[str] = INSTALL_ORDER_V4,
) -> list[Resource]:
    """The hooks Helm runs for ``event``, in the order ``execHook`` runs them, one at a time.

    ``SortManifests`` stores hooks pre-sorted by kind (``sortHooksByKind`` over path/document
    order, with InstallOrder); ``execHook`` picks those whose events include ``event`` and then
    ``sort.Stable(hookByWeight)``: weight ascending, then ``metadata.name`` ascending. Kind, path
    and document therefore only break ties of equal weight *and* name (the docs say "weight, kind,
    name"; the code sorts name before kind). A hook that lists ``event`` twice runs twice, as in
    Helm. ``test-success`` is already ``test`` in :class:`~helmsim.manifests.Hook`.
    """
    stored = sort_by_kind(
        _file_then_document([h for h in hooks if h.hook is not None]), lambda r: r.kind, order
    )
    # helm/helm pkg/action/hooks.go execHookWithDelayedShutdown: one entry per matching event
    # (no break in the inner loop), then sort.Stable(hookByWeight(executingHooks)).
    executing = [h for h in stored for e in (h.hook.events if h.hook else ()) if e == event]
    return sorted(executing, key=lambda h: (h.hook.weight if h.hook else 0, _hook_name(h)))


def kind_groups(resources: Sequence[Resource]) -> list[tuple[str, list[Resource]]]:
    """Consecutive runs of one kind, as ``batchPerform`` walks an ordered resource list.

    helm/helm pkg/kube/client.go batchPerform: objects of a run are sent concurrently, and Helm
    waits for their API calls (``wg.Wait()``) — never for readiness — before the next kind. The
    same kind appearing again after another kind starts a new group.
    """
    groups: list[tuple[str, list[Resource]]] = []
    for res in resources:
        if groups and groups[-1][0] == res.kind:
            groups[-1][1].append(res)
        else:
            groups.append((res.kind, [res]))
    return groups
