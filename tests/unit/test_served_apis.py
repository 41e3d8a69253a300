"""The served built-in APIs table (src/helmsim/kube/served_apis.json) and its derivation."""

from __future__ import annotations

from importlib import resources

import pytest

from helmsim.kube import derive_served
from helmsim.kube.served import builtin_apis, builtin_served, coverage_note, removal


def test_committed_table_is_what_the_pinned_package_derives() -> None:
    # the data is derived, never hand-edited: re-derive from kubernetes-validate and compare
    committed = (resources.files("helmsim.kube") / "served_apis.json").read_text(encoding="utf-8")
    assert derive_served.dumps(derive_served.derive()) == committed


@pytest.mark.parametrize(
    ("version", "api", "kind", "served"),
    [
        ("1.25.0", "policy/v1beta1", "PodDisruptionBudget", False),  # removed in 1.25
        ("1.25.0", "policy/v1", "PodDisruptionBudget", True),
        ("1.25.0", "autoscaling/v2beta2", "HorizontalPodAutoscaler", True),  # legacy beta until 1.26
        ("1.26.0", "autoscaling/v2beta2", "HorizontalPodAutoscaler", False),
        ("1.26.0", "storage.k8s.io/v1beta1", "CSIStorageCapacity", True),
        ("1.27.0", "storage.k8s.io/v1beta1", "CSIStorageCapacity", False),
        ("1.31.0", "flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", True),
        ("1.32.0", "flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", False),
        ("1.29.0", "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", False),  # GA in 1.30
        ("1.30.0", "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", True),
        ("1.31.0", "admissionregistration.k8s.io/v1beta1", "ValidatingAdmissionPolicy", False),  # beta: off
        ("1.31.0", "resource.k8s.io/v1alpha3", "ResourceClaim", False),  # alpha: never on by default
        ("1.31.0", "v1", "Widget", False),
        ("1.31.0", "example.com/v1", "Widget", None),  # not a built-in group
        ("1.24.0", "policy/v1beta1", "PodDisruptionBudget", True),  # before the table: removals only
        ("1.21.0", "extensions/v1beta1", "Ingress", True),
        ("1.22.0", "extensions/v1beta1", "Ingress", False),
    ],
)
def test_builtin_served(version: str, api: str, kind: str, served: bool | None) -> None:
    assert builtin_served(version, api, kind) is served


def test_subresource_and_meta_kinds_do_not_map() -> None:
    kinds = {k for _, k in builtin_apis("1.31.0").kinds}
    assert {"Eviction", "Scale", "TokenRequest", "Status", "DeleteOptions"}.isdisjoint(kinds)
    assert {"Deployment", "CustomResourceDefinition", "APIService", "Binding"} <= kinds


def test_capabilities_list_group_versions_and_kinds() -> None:
    entries = builtin_apis("1.31.0").capability_entries()
    assert "policy/v1" in entries and "policy/v1/PodDisruptionBudget" in entries
    assert "apiregistration.k8s.io/v1" in entries and "policy/v1beta1" not in entries


def test_versions_outside_the_table_are_said() -> None:
    assert coverage_note("1.31.0") is None
    assert coverage_note("1.24.3") is not None and "1.25" in str(coverage_note("1.24.3"))
    assert "1.37" in str(coverage_note("1.40.0"))


@pytest.mark.parametrize(
    ("version", "api_version", "kind", "expected"),
    [
        # kubernetes/website deprecation-guide.md: removed in 1.25 / 1.26, successors served now
        ("1.31.0", "autoscaling/v2beta1", "HorizontalPodAutoscaler", (25, ["autoscaling/v2", "autoscaling/v1"])),
        ("1.31.0", "autoscaling/v2beta2", "HorizontalPodAutoscaler", (26, ["autoscaling/v2", "autoscaling/v1"])),
        ("1.31.0", "policy/v1beta1", "PodDisruptionBudget", (25, ["policy/v1"])),
        ("1.31.0", "policy/v1beta1", "PodSecurityPolicy", (25, [])),  # no successor in its group
        ("1.24.0", "policy/v1beta1", "PodDisruptionBudget", None),  # still served
        ("1.31.0", "autoscaling/v2", "HorizontalPodAutoscaler", None),
        ("1.31.0", "example.com/v1", "Widget", None),  # a custom resource: no removal to name
    ],
)
def test_removal_names_the_minor_and_what_is_served_now(
    version: str, api_version: str, kind: str, expected: tuple[int, list[str]] | None
) -> None:
    assert removal(version, api_version, kind) == expected
