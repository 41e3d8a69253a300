"""A whole simulated cluster: the engine, admission, built-in objects and every controller."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from helmsim.cluster import warden
from helmsim.cluster.admission import admit, admit_claim, validate_spec
from helmsim.cluster.behaviour import BehaviourOverride, Faults
from helmsim.cluster.controllers.crd import install_crds
from helmsim.cluster.controllers.kubelet import Kubelet
from helmsim.cluster.controllers.scheduler import Scheduler
from helmsim.cluster.controllers.serviceaccounts import ServiceAccountsController, seed_priority_classes
from helmsim.cluster.controllers.service import install_service_controllers, seed_cluster
from helmsim.cluster.controllers.storage import install_storage
from helmsim.cluster.controllers.workloads import install_workload_controllers
from helmsim.cluster.engine import Simulation
from helmsim.cluster.store import ApiError, clone
from helmsim.errors import InputError
from helmsim.cluster.profile import ClusterProfile


KUBELET_CERTS_VERIFIABLE = "kubelet serving certificates signed by the cluster CA"
"""The ``external_state`` fact of a profile with ``kubeletServingCertificates: cluster-ca``."""
GCE_METADATA = "a GCE metadata server answering the pods"
"""The ``external_state`` fact of a profile with ``metadataServer: gce``."""


def build_cluster(
    profile: ClusterProfile,
    *,
    seed: int = 0,
    sample_latencies: bool = False,
    release_objects: Iterable[Mapping[str, Any]] = (),
    namespaces: Iterable[str] = (),
    overrides: Iterable[BehaviourOverride] = (),
    catalog: Sequence[Any] | None = None,
    faults: Faults | None = None,
) -> Simulation:
    """A fresh cluster of ``profile`` at t=0, ready for Helm to apply releases.

    ``release_objects`` are the manifests of the releases that will be applied: the behaviour
    model reads them to infer what a workload needs before its policy exists. ``namespaces``
    exist before the releases are applied (the cluster's platform created them). ``overrides``,
    ``catalog`` and ``faults`` are the run's behaviour overrides, behaviour catalog and fault
    hooks (:class:`helmsim.cluster.engine.Simulation`).
    """
    sim = Simulation(
        profile,
        seed=seed,
        sample_latencies=sample_latencies,
        release_objects=release_objects,
        overrides=overrides,
        catalog=catalog,
        faults=faults,
    )
    seed_cluster(sim)
    if profile.kubelet_serving_certificates == "cluster-ca":
        # a fact of the cluster's setup programs' catalog entries may depend on (metrics-server)
        sim.external_state.add(KUBELET_CERTS_VERIFIABLE)
    if profile.metadata_server == "gce":
        sim.external_state.add(GCE_METADATA)  # Google's default credentials without a key file
    for ns in sorted(set(namespaces)):
        if sim.store.get("Namespace", None, ns) is None:
            sim.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                },
                actor="cluster-bootstrap",
            )
    for policy in profile.cluster_policies:
        sim.store.create(policy, actor="cluster-bootstrap")
    for obj in profile.objects:
        _platform_object(sim, obj)
    install_storage(sim)
    seed_priority_classes(sim)
    ServiceAccountsController(sim)
    install_crds(sim)
    install_service_controllers(sim)
    install_workload_controllers(sim)
    Scheduler(sim)
    Kubelet(sim)
    # kube-apiserver admission applies to everything created from now on (helm, controllers).
    sim.store.admission = lambda obj: admit(sim, obj)
    sim.store.validation = lambda obj: _validate_update(sim, obj)
    return sim


def _platform_object(sim: Simulation, obj: Mapping[str, Any]) -> None:
    """Create a profile object; a Namespace the cluster already has (``default``, a release's
    namespace) takes the object's labels and annotations, as the platform set them."""
    meta = obj.get("metadata") or {}
    existing = None
    if obj.get("kind") == "Namespace":
        existing = sim.store.get("Namespace", None, str(meta.get("name") or ""))
    if existing is None:
        try:
            sim.store.create(obj, actor="cluster-bootstrap")
        except ApiError as err:
            raise InputError(
                f"profile {getattr(sim.profile, 'name', '?')}: objects: {obj.get('kind')} "
                f"{meta.get('namespace') or ''}/{meta.get('name')}: {err.message}"
            ) from None
        return
    merged = clone(existing)
    for field in ("labels", "annotations"):
        extra = meta.get(field)
        if isinstance(extra, Mapping):
            merged["metadata"].setdefault(field, {}).update({str(k): str(v) for k, v in extra.items()})
    sim.store.update(merged, actor="cluster-bootstrap", quiet=True)


def _validate_update(sim: Simulation, obj: Mapping[str, Any]) -> None:
    """What the API server checks on an update or apply of a changed spec: the cross-field
    validation, LimitRanger's bounds on a claim (a resize beyond a LimitRange's max), and a
    managed platform's validating webhook (GKE Autopilot's Warden)."""
    validate_spec(obj)
    if obj.get("kind") == "PersistentVolumeClaim" and obj.get("apiVersion") == "v1" and _resized(sim, obj):
        admit_claim(sim, obj)
    warden.check(sim, obj, sim.store.acting)


def _resized(sim: Simulation, claim: Mapping[str, Any]) -> bool:
    """Whether an update changes the claim's requests (a resize), which LimitRanger bounds.

    Upstream LimitRanger checks every update of a claim not being deleted (admission.go
    runLimitFunc); a controller's write of a claim created before a LimitRange it breaks (the
    scheduler's selected-node annotation, the binder's volumeName) is let through here, not
    refused and retried (not modelled)."""
    meta = claim.get("metadata") or {}
    live = sim.store.get("PersistentVolumeClaim", str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    if live is None or (live.get("metadata") or {}).get("deletionTimestamp"):
        return False

    def requests(o: Mapping[str, Any]) -> Any:
        return ((o.get("spec") or {}).get("resources") or {}).get("requests")

    return bool(requests(live) != requests(claim))

