"""What kube-controller-manager puts in every namespace: the ``default`` ServiceAccount and the
``kube-root-ca.crt`` ConfigMap.

kubernetes pkg/controller/serviceaccount/serviceaccounts_controller.go: for each namespace (and
whenever one of its accounts is deleted) the ``default`` ServiceAccount is created if missing.
pkg/controller/certificates/rootcacertpublisher/publisher.go: the ``kube-root-ca.crt`` ConfigMap
(key ``ca.crt``) that every pod's projected token volume reads. Namespaces that exist when the
controller starts get both at once; new ones after ``controller_sync``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from helmsim.cluster.engine import Controller
from helmsim.cluster.store import ApiError

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

SA_ACTOR = "serviceaccount-controller"
CA_ACTOR = "root-ca-cert-publisher"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
# A placeholder certificate: helmsim has no CA; the key is what pods read.
_CA_PLACEHOLDER = "-----BEGIN CERTIFICATE-----\n(simulated cluster CA)\n-----END CERTIFICATE-----\n"


class ServiceAccountsController(Controller):
    """Creates ``default`` ServiceAccounts and ``kube-root-ca.crt`` ConfigMaps per namespace."""

    name = SA_ACTOR
    kinds = ("Namespace", "ServiceAccount", "ConfigMap")

    def __init__(self, sim: Simulation) -> None:
        super().__init__(sim)
        for ns in self.store.list("Namespace"):
            self._ensure(str(ns["metadata"]["name"]))

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        kind = obj.get("kind")
        if kind == "Namespace":
            if event == "ADDED":
                self.sim.after(self.sim.latency("controller_sync"), self._ensure, str(meta.get("name")))
            return
        if event != "DELETED":
            return
        name = str(meta.get("name") or "")
        if (kind == "ServiceAccount" and name == "default") or (
            kind == "ConfigMap" and name == ROOT_CA_CONFIGMAP
        ):
            # serviceAccountDeleted / configMapDeleted: re-create what was removed
            self.sim.after(self.sim.latency("controller_sync"), self._ensure, str(meta.get("namespace") or ""))

    def _ensure(self, namespace: str) -> None:
        ns = self.store.get("Namespace", None, namespace)
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return  # syncNamespace: nothing is created in a terminating namespace
        if self.store.get("ServiceAccount", namespace, "default") is None:
            self._create(
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}},
                SA_ACTOR,
            )
        if self.store.get("ConfigMap", namespace, ROOT_CA_CONFIGMAP) is None:
            self._create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": ROOT_CA_CONFIGMAP,
                        "namespace": namespace,
                        # publisher.go: the annotation marking the published bundle
                        "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."},
                    },
                    "data": {"ca.crt": _CA_PLACEHOLDER},
                },
                CA_ACTOR,
            )

    def _create(self, obj: dict[str, Any], actor: str) -> None:
        try:
            self.store.create(obj, actor=actor)
        except ApiError:
            return  # created meanwhile, or the namespace went away: the next event retries


def seed_priority_classes(sim: Simulation) -> None:
    """The system PriorityClasses kube-apiserver creates at bootstrap.

    kubernetes pkg/registry/scheduling/rest/storage_scheduling.go AddSystemPriorityClasses, values
    from pkg/apis/scheduling/v1/helpers.go.
    """
    from helmsim.cluster.podadmission import SYSTEM_PRIORITY_CLASSES

    descriptions = {
        "system-node-critical": "Used for system critical pods that must not be moved from their current node.",
        "system-cluster-critical": "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    }
    for name, value in SYSTEM_PRIORITY_CLASSES.items():
        if sim.store.get("PriorityClass", None, name) is None:
            sim.store.create(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                    "description": descriptions[name],
                    "preemptionPolicy": "PreemptLowerPriority",
                },
                actor="apiserver",
            )
