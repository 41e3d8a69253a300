"""admit(): REST mapping of kinds, NamespaceLifecycle, DefaultStorageClass and defaulting."""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.cluster.admission import admit, resource_mapping_message
from helmsim.cluster.controllers.crd import CRDController
from helmsim.cluster.controllers.storage import ANN_BETA_CLASS, seed_storage
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile, profile_from_mapping
from helmsim.cluster.store import ApiError


def _sim(profile: Any = "kind") -> Simulation:
    sim = Simulation(load_profile(profile) if isinstance(profile, str) else profile)
    seed_storage(sim)
    return sim


def _ns(sim: Simulation, name: str, **meta: Any) -> None:
    sim.store.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, **meta}}, actor="helm"
    )


def _widget(ns: str = "apps") -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": ns},
    }


def _pvc(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            **spec,
        },
    }


# --- REST mapping -------------------------------------------------------------------------------


def test_custom_resource_without_its_crd_is_rejected_with_helms_text() -> None:
    sim = _sim()
    _ns(sim, "apps")
    with pytest.raises(ApiError) as err:
        admit(sim, _widget())
    assert err.value.reason == "NoKindMatch"
    assert err.value.message == 'no matches for kind "Widget" in version "example.com/v1"'
    assert resource_mapping_message(_widget()) == (
        'resource mapping not found for name: "w" namespace: "apps" from "": '
        'no matches for kind "Widget" in version "example.com/v1"\nensure CRDs are installed first'
    )


def test_custom_resource_is_admitted_once_its_crd_is_established() -> None:
    sim = _sim()
    _ns(sim, "apps")
    CRDController(sim)
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    sim.store.create(admit(sim, crd), actor="helm")
    sim.run(until=0.5)  # names accepted, not yet established: discovery does not list it
    with pytest.raises(ApiError):
        admit(sim, _widget())
    sim.run(until=1.1)
    assert admit(sim, _widget())["kind"] == "Widget"
    with pytest.raises(ApiError) as err:  # another version of the kind is still unknown
        admit(sim, {**_widget(), "apiVersion": "example.com/v2"})
    assert err.value.message == 'no matches for kind "Widget" in version "example.com/v2"'


def test_profile_crds_and_api_versions_are_served() -> None:
    sim = _sim("eks-gp3")
    policy_endpoint = {
        "apiVersion": "networking.k8s.aws/v1alpha1",
        "kind": "PolicyEndpoint",
        "metadata": {"name": "p", "namespace": "default"},
    }
    assert admit(sim, policy_endpoint)["kind"] == "PolicyEndpoint"
    profile = profile_from_mapping(
        {
            "extends": "kind",
            "name": "t",
            "apiVersions": ["monitoring.coreos.com/v1", "cilium.io/v2/CiliumNetworkPolicy"],
        },
        source="test",
    )
    sim = _sim(profile)
    for api, kind in (
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("cilium.io/v2", "CiliumNetworkPolicy"),
    ):
        assert admit(
            sim,
            {"apiVersion": api, "kind": kind, "metadata": {"name": "x", "namespace": "default"}},
        )
    with pytest.raises(ApiError):
        admit(
            sim, {"apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint", "metadata": {"name": "x"}}
        )


@pytest.mark.parametrize(
    ("version", "api", "kind", "served"),
    [
        ("1.31.0", "policy/v1beta1", "PodDisruptionBudget", False),
        ("1.24.0", "policy/v1beta1", "PodDisruptionBudget", True),
        ("1.31.0", "policy/v1", "PodDisruptionBudget", True),
        ("1.25.0", "batch/v1beta1", "CronJob", False),
        ("1.21.0", "extensions/v1beta1", "Ingress", True),
        ("1.22.0", "extensions/v1beta1", "Ingress", False),
        ("1.25.0", "autoscaling/v2beta2", "HorizontalPodAutoscaler", True),
        ("1.26.0", "autoscaling/v2beta2", "HorizontalPodAutoscaler", False),
        ("1.31.4-eks-2d5f260", "apps/v1", "Deployment", True),
    ],
)
def test_removed_builtin_versions_do_not_map(
    version: str, api: str, kind: str, served: bool
) -> None:
    sim = _sim(
        profile_from_mapping(
            {"extends": "kind", "name": "t", "kubernetesVersion": version}, source="test"
        )
    )
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "x", "namespace": "default"}}
    if served:
        assert admit(sim, obj)["apiVersion"] == api
    else:
        with pytest.raises(ApiError) as err:
            admit(sim, obj)
        assert err.value.message == f'no matches for kind "{kind}" in version "{api}"'


# --- NamespaceLifecycle -------------------------------------------------------------------------


def test_namespaced_object_in_a_missing_namespace_is_not_found() -> None:
    sim = _sim()
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "nowhere"},
    }
    with pytest.raises(ApiError) as err:
        admit(sim, cm)
    assert (err.value.reason, err.value.message) == ("NotFound", 'namespaces "nowhere" not found')
    # system namespaces exist without objects; cluster-scoped kinds have no namespace to check
    assert admit(sim, {**cm, "metadata": {"name": "c", "namespace": "kube-system"}})
    assert admit(
        sim,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "r", "namespace": "nowhere"},
        },
    )
    _ns(sim, "nowhere")
    assert admit(sim, cm)["metadata"]["namespace"] == "nowhere"


def test_terminating_namespace_forbids_new_content() -> None:
    sim = _sim()
    _ns(sim, "old")
    sim.store.delete("Namespace", None, "old", actor="helm", grace=30)
    with pytest.raises(ApiError) as err:
        admit(sim, {**_pvc(), "metadata": {"name": "data", "namespace": "old"}})
    assert err.value.reason == "Forbidden"
    assert err.value.message == (
        'persistentvolumeclaims "data" is forbidden: unable to create new content in namespace old '
        "because it is being terminated"
    )
    with pytest.raises(ApiError) as err:
        admit(
            sim,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "old"},
            },
        )
    assert err.value.message.startswith('deployments.apps "d" is forbidden: ')


# --- DefaultStorageClass ------------------------------------------------------------------------


def test_default_class_fills_only_a_nil_class() -> None:
    sim = _sim()
    admitted = admit(sim, _pvc())
    assert admitted["spec"]["storageClassName"] == "standard"
    assert admitted["spec"]["volumeMode"] == "Filesystem" and admitted["status"] == {
        "phase": "Pending"
    }
    assert admit(sim, _pvc(storageClassName=""))["spec"]["storageClassName"] == ""
    assert admit(sim, _pvc(storageClassName="fast"))["spec"]["storageClassName"] == "fast"
    beta = _pvc()
    beta["metadata"]["annotations"] = {ANN_BETA_CLASS: "slow"}
    assert "storageClassName" not in admit(sim, beta)["spec"]
    no_default = _sim(
        profile_from_mapping(
            {
                "extends": "kind",
                "name": "t",
                "storageClasses": [{"name": "s", "provisioner": "rancher.io/local-path"}],
            },
            source="test",
        )
    )
    assert "storageClassName" not in admit(no_default, _pvc())["spec"]


def test_admit_does_not_touch_the_input_or_the_store() -> None:
    sim = _sim()
    original = _pvc()
    before = len(sim.trace)
    admit(sim, original)
    assert "storageClassName" not in original["spec"] and "status" not in original
    assert len(sim.trace) == before


def test_crd_name_must_be_plural_dot_group() -> None:
    sim = _sim()
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widget"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "kind": "Widget"},
            "scope": "Namespaced",
        },
    }
    with pytest.raises(ApiError) as err:
        admit(sim, crd)
    assert err.value.reason == "Invalid"
    assert err.value.message == (
        'CustomResourceDefinition.apiextensions.k8s.io "widget" is invalid: metadata.name: '
        'Invalid value: "widget": must be spec.names.plural+"."+spec.group'
    )
