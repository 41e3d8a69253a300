"""Which built-in kinds a Kubernetes version serves by default (``served_apis.json``).

The table is derived from the OpenAPI definitions of each Kubernetes version (see
``helmsim.kube.derive_served`` for the source and the default-enablement rule). A version outside
the table's range is read as the nearest covered version; ``coverage_note`` says so.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources

from msgspec import Struct

_MINOR = re.compile(r"^v?1\.([0-9]+)")

# Versions before the table's range (1.25): the groups compiled into kube-apiserver (kubectl
# api-resources, Kubernetes 1.31) serve every kind except those the deprecation guide removed.
BUILTIN_GROUPS: frozenset[str] = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)

# kubernetes/website content/en/docs/reference/using-api/deprecation-guide.md: the Kubernetes
# minor version that stopped serving a built-in (group/version, kind).
_REMOVED: dict[int, dict[str, tuple[str, ...]]] = {
    16: {
        "extensions/v1beta1": (
            "DaemonSet",
            "Deployment",
            "NetworkPolicy",
            "PodSecurityPolicy",
            "ReplicaSet",
        ),
        "apps/v1beta1": ("Deployment", "ReplicaSet", "StatefulSet"),
        "apps/v1beta2": ("DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"),
    },
    22: {
        "extensions/v1beta1": ("Ingress",),
        "networking.k8s.io/v1beta1": ("Ingress", "IngressClass"),
        "apiextensions.k8s.io/v1beta1": ("CustomResourceDefinition",),
        "admissionregistration.k8s.io/v1beta1": (
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ),
        "apiregistration.k8s.io/v1beta1": ("APIService",),
        "authentication.k8s.io/v1beta1": ("TokenReview",),
        "authorization.k8s.io/v1beta1": (
            "LocalSubjectAccessReview",
            "SelfSubjectAccessReview",
            "SelfSubjectRulesReview",
            "SubjectAccessReview",
        ),
        "certificates.k8s.io/v1beta1": ("CertificateSigningRequest",),
        "coordination.k8s.io/v1beta1": ("Lease",),
        "rbac.authorization.k8s.io/v1beta1": (
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
        ),
        "scheduling.k8s.io/v1beta1": ("PriorityClass",),
        "storage.k8s.io/v1beta1": ("CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"),
    },
    25: {
        "batch/v1beta1": ("CronJob",),
        "discovery.k8s.io/v1beta1": ("EndpointSlice",),
        "events.k8s.io/v1beta1": ("Event",),
        "autoscaling/v2beta1": ("HorizontalPodAutoscaler",),
        "policy/v1beta1": ("PodDisruptionBudget", "PodSecurityPolicy"),
        "node.k8s.io/v1beta1": ("RuntimeClass",),
    },
    26: {
        "flowcontrol.apiserver.k8s.io/v1beta1": ("FlowSchema", "PriorityLevelConfiguration"),
        "autoscaling/v2beta2": ("HorizontalPodAutoscaler",),
    },
    27: {"storage.k8s.io/v1beta1": ("CSIStorageCapacity",)},
    29: {"flowcontrol.apiserver.k8s.io/v1beta2": ("FlowSchema", "PriorityLevelConfiguration")},
    32: {"flowcontrol.apiserver.k8s.io/v1beta3": ("FlowSchema", "PriorityLevelConfiguration")},
}


class BuiltinAPIs(Struct, frozen=True):
    """The built-in (group/version, Kind) pairs one Kubernetes minor version serves by default."""

    minor: int
    kinds: frozenset[tuple[str, str]]
    groups: frozenset[str]
    """Every API group the table knows (served in some version): kinds of these groups are
    built in, never custom resources."""

    def serves(self, api_version: str, kind: str) -> bool:
        return (api_version, kind) in self.kinds

    def is_builtin_group(self, api_version: str) -> bool:
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        return group in self.groups

    def group_versions(self) -> list[str]:
        """Served ``group/version`` strings, sorted."""
        return sorted({gv for gv, _ in self.kinds})

    def capability_entries(self) -> list[str]:
        """What discovery gives Helm's ``.Capabilities.APIVersions`` for the built-in APIs: each
        ``group/version`` and each ``group/version/Kind`` (helm/helm pkg/action/action.go
        GetVersionSet: resources' group/versions and their kinds)."""
        return self.group_versions() + sorted(f"{gv}/{kind}" for gv, kind in self.kinds)


@cache
def _table() -> tuple[tuple[int, int], dict[str, list[list[int]]]]:
    text = (resources.files("helmsim.kube") / "served_apis.json").read_text(encoding="utf-8")
    data = json.loads(text)
    lo, hi = data["minors"]
    return (int(lo), int(hi)), data["kinds"]


def minor_of(kube_version: str) -> int | None:
    """The minor number of ``1.<minor>[.patch…]`` (None when it is not such a version)."""
    m = _MINOR.match(kube_version.strip())
    return int(m.group(1)) if m else None


def table_range() -> tuple[int, int]:
    """The minors the table covers (first, last)."""
    return _table()[0]


@cache
def builtin_apis(kube_version: str) -> BuiltinAPIs:
    """The built-in kinds served by default by ``kube_version`` (clamped to the table's range)."""
    (lo, hi), kinds = _table()
    minor = minor_of(kube_version)
    minor = hi if minor is None else min(max(minor, lo), hi)
    served: set[tuple[str, str]] = set()
    groups: set[str] = set()
    for key, ranges in kinds.items():
        gv, kind = key.rsplit("/", 1)
        groups.add(gv.rsplit("/", 1)[0] if "/" in gv else "")
        if any(a <= minor <= b for a, b in ranges):
            served.add((gv, kind))
    return BuiltinAPIs(minor=minor, kinds=frozenset(served), groups=frozenset(groups))


def coverage_note(kube_version: str) -> str | None:
    """A one-line note when ``kube_version`` is outside the table's range, else None."""
    lo, hi = table_range()
    minor = minor_of(kube_version)
    if minor is not None and lo <= minor <= hi:
        return None
    if minor is not None and minor < lo:
        return (
            f"Kubernetes {kube_version}: helmsim's table of served built-in APIs starts at 1.{lo}; "
            "built-in kinds are checked only against the removals of the deprecation guide"
        )
    return (
        f"Kubernetes {kube_version}: helmsim knows the built-in APIs served by 1.{lo}–1.{hi}; "
        f"the cluster is assumed to serve those of 1.{hi}"
    )


def removal(kube_version: str, api_version: str, kind: str) -> tuple[int, list[str]] | None:
    """For a built-in (group/version, kind) that ``kube_version`` does not serve: the minor that
    stopped serving it (the deprecation guide's, else the first minor after the last that served
    it in the table) and the group/versions of the same group serving the kind now, newest GA
    first. None when it is served, or not a built-in kind."""
    if builtin_served(kube_version, api_version, kind) is not False:
        return None
    removed = next((cut for cut, table in sorted(_REMOVED.items()) if kind in table.get(api_version, ())), None)
    if removed is None:
        ranges = _table()[1].get(f"{api_version}/{kind}")
        if not ranges:
            return None
        removed = max(b for _, b in ranges) + 1
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    now = builtin_apis(kube_version)
    served = [gv for gv, k in now.kinds if k == kind and (gv.rsplit("/", 1)[0] if "/" in gv else "") == group]

    def rank(gv: str) -> tuple[int, int, str]:
        version = gv.rsplit("/", 1)[-1]
        m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
        if not m:
            return (2, 0, gv)
        stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
        return (stage, -int(m.group(1)), gv)

    return removed, sorted(served, key=rank)


def builtin_served(kube_version: str, api_version: str, kind: str) -> bool | None:
    """Whether ``kube_version`` serves a built-in kind by default; None when the group is not a
    built-in one (a custom resource's). Before the table's first minor, any kind of a built-in
    group the deprecation guide does not list as removed counts as served."""
    minor = minor_of(kube_version)
    lo, _ = table_range()
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    if minor is not None and minor < lo:
        if group not in BUILTIN_GROUPS:
            return None
        return not any(kind in table.get(api_version, ()) for cut, table in _REMOVED.items() if minor >= cut)
    table = builtin_apis(kube_version)
    if not table.is_builtin_group(api_version) and group not in BUILTIN_GROUPS:
        return None
    return table.serves(api_version, kind)
