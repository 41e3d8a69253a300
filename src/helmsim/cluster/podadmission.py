"""The API server's admission of a new Pod: its ServiceAccount and its PriorityClass.

Both plugins mutate in kube-apiserver's mutating phase, ServiceAccount first
(kubernetes pkg/kubeapiserver/options/plugins.go AllOrderedPlugins). A refusal is a Forbidden
``pods "<name>" is forbidden: <reason>`` (k8s.io/apiserver pkg/admission/errors.go NewForbidden);
a controller creating pods with ``generateName`` sees the prefix as the name, because admission
runs before the name is generated (observed: ``pods "kube-stresscheck-7f75dbbcb7-" is forbidden``,
giantswarm/kube-stresscheck#7; ``pods "goldilocks-vpa-install-" is forbidden``,
FairwindsOps/goldilocks#173).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from helmsim.cluster.store import ApiError

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

# plugin/pkg/admission/serviceaccount/admission.go DefaultServiceAccountName.
DEFAULT_SERVICE_ACCOUNT = "default"
# kubernetes pkg/apis/core/types.go MirrorPodAnnotationKey: static pods' mirrors skip the plugin.
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# kubernetes pkg/apis/scheduling/v1/helpers.go systemPriorityClasses (SystemCriticalPriority =
# 2000000000): created by the API server at bootstrap.
SYSTEM_PRIORITY_CLASSES: dict[str, int] = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}
# kubernetes pkg/apis/scheduling/types.go DefaultPriorityWhenNoDefaultClassExists.
DEFAULT_PRIORITY = 0


def forbidden_pod(pod: Mapping[str, Any], reason: str) -> ApiError:
    """``pods "<name>" is forbidden: <reason>`` (the generateName prefix when the name is generated)."""
    meta = pod.get("metadata") or {}
    name = str(meta.get("generateName") or meta.get("name") or "")
    return ApiError("Forbidden", f'pods "{name}" is forbidden: {reason}')


def admit_pod(sim: Simulation, pod: dict[str, Any]) -> None:
    """Run the ServiceAccount and Priority plugins on ``pod`` (in place); raise ``ApiError``."""
    meta = pod.setdefault("metadata", {})
    spec = pod.setdefault("spec", {})
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return
    _service_account(sim, pod, str(meta.get("namespace") or "default"), spec)
    _priority(sim, pod, spec)


def _service_account(sim: Simulation, pod: dict[str, Any], namespace: str, spec: dict[str, Any]) -> None:
    # pkg/apis/core/v1/conversion.go: the deprecated serviceAccount field fills serviceAccountName.
    name = str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "")
    if not name:
        name = DEFAULT_SERVICE_ACCOUNT  # admission.go Admit: "Set the default service account"
    spec["serviceAccountName"] = name
    if sim.store.get("ServiceAccount", namespace, name) is not None:
        return
    if name == DEFAULT_SERVICE_ACCOUNT:
        # admission.go getServiceAccount retries "default" 10 times (100-200 ms apart) because the
        # serviceaccounts controller creates it in every namespace; helmsim's controller creates
        # it within one controller_sync of the namespace, inside that window.
        return
    # admission.go Admit: "error looking up service account %s/%s: %w" around the NotFound of
    # getServiceAccount (errors.NewNotFound(api.Resource("serviceaccount"), name)).
    raise forbidden_pod(
        pod,
        f'error looking up service account {namespace}/{name}: serviceaccount "{name}" not found',
    )


def _priority(sim: Simulation, pod: dict[str, Any], spec: dict[str, Any]) -> None:
    """plugin/pkg/admission/priority/admission.go admitPod: the class's value becomes spec.priority."""
    name = str(spec.get("priorityClassName") or "")
    if not name:
        default = _global_default(sim)
        if default is not None:
            spec["priorityClassName"] = default["metadata"]["name"]
            spec["priority"] = int(default.get("value") or 0)
            if default.get("preemptionPolicy"):
                spec["preemptionPolicy"] = default["preemptionPolicy"]
        else:
            spec["priority"] = DEFAULT_PRIORITY
        return
    pc = sim.store.get("PriorityClass", None, name)
    if pc is None:
        if name in SYSTEM_PRIORITY_CLASSES:
            spec["priority"] = SYSTEM_PRIORITY_CLASSES[name]
            return
        # admission.go resolvePriorityClass: NotFound → Forbidden.
        raise forbidden_pod(pod, f"no PriorityClass with name {name} was found")
    spec["priority"] = int(pc.get("value") or 0)
    if pc.get("preemptionPolicy"):
        spec["preemptionPolicy"] = pc["preemptionPolicy"]


def _global_default(sim: Simulation) -> dict[str, Any] | None:
    """admission.go getDefaultPriorityClass: the globalDefault class, the lowest value if several."""
    defaults = [pc for pc in sim.store.list("PriorityClass") if pc.get("globalDefault") is True]
    if not defaults:
        return None
    return min(defaults, key=lambda pc: (int(pc.get("value") or 0), str(pc["metadata"]["name"])))
