"""What the API server (and the client's REST mapping) does to an object before it is created.

``admit(sim, obj)`` returns the object as it will be stored, or raises ``ApiError`` with the
text a user sees. In order:

1. **REST mapping** (client side: Helm and kubectl map the kind through discovery before
   sending anything): a kind that is neither built in nor served by an Established CRD, the
   profile's CRDs or ``apiVersions`` fails with ``no matches for kind "X" in version "g/v"``
   (k8s.io/apimachinery pkg/api/meta/errors.go NoKindMatchError); reason ``NoKindMatch``.
2. **NamespaceLifecycle** (k8s.io/apiserver pkg/admission/plugin/namespace/lifecycle): a
   namespaced object in a namespace that does not exist → NotFound ``namespaces "x" not found``;
   in a terminating one → Forbidden.
3. **Defaulting and DefaultStorageClass** (plugin/pkg/admission/storage/storageclass/setdefault):
   a claim with no ``storageClassName`` (nil, not ``""``) gets the default class, if any.
4. **LimitRanger, ServiceAccount and Priority** on Pods (:mod:`helmsim.cluster.limitrange`,
   :mod:`helmsim.cluster.podadmission`): the namespace's LimitRange defaults fill unset
   resources; a missing ServiceAccount or PriorityClass refuses the pod with Forbidden.
5. **Admission webhooks** (:mod:`helmsim.cluster.webhooks`): a matching webhook that cannot be
   called refuses the create under ``failurePolicy: Fail``; between the mutating and the
   validating ones, the LimitRanges' bounds and **Pod Security** (:mod:`helmsim.cluster.podsecurity`)
   refuse a Pod that exceeds them or violates its namespace's enforced level.
6. **ResourceQuota** (:mod:`helmsim.cluster.quota`), last: an object the namespace's quotas
   cannot hold is Forbidden (``exceeded quota`` / ``failed quota``).

The lead calls it from the store's create path: ``obj = admit(sim, obj)`` before
``store.create`` (and before an ``apply`` that creates). It never writes to the store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from helmsim.cluster.controllers.crd import CRD, resource_name, served_group_versions, served_kinds
from helmsim.cluster.controllers.storage import ANN_BETA_CLASS, default_class
from helmsim.cluster import limitrange, podsecurity, quota, warden
from helmsim.cluster.podadmission import admit_pod, forbidden_pod
from helmsim.cluster.store import ApiError, clone
from helmsim.cluster.specvalidation import POD_SPEC_PATHS as _POD_SPEC_PATHS
from helmsim.cluster.webhooks import call_webhooks
from helmsim.flux.apis import FLUX_APIS
from helmsim.kube.served import builtin_served
from helmsim.kube.scope import CLUSTER_SCOPED_KINDS

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

# The namespaces kube-apiserver creates itself (pkg/controlplane/controller/systemnamespaces):
# they exist even when the store holds no Namespace object for them.
SYSTEM_NAMESPACES: frozenset[str] = frozenset(
    {"default", "kube-system", "kube-public", "kube-node-lease"}
)


def admit(sim: Simulation, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as the API server stores it on create; raises ``ApiError`` when refused."""
    out = clone(dict(obj))
    api_version = str(out.get("apiVersion") or "")
    kind = str(out.get("kind") or "")
    scope = mapping_scope(sim, api_version, kind)
    if scope is None:
        raise ApiError("NoKindMatch", no_kind_match_message(api_version, kind))
    meta = out.setdefault("metadata", {})
    namespace = str(meta.get("namespace") or "")
    if scope == "Namespaced" and namespace:
        _check_namespace(sim, namespace, api_version, kind, str(meta.get("name", "")))
    if kind == "Namespace" and api_version == "v1":
        # pkg/registry/core/namespace/strategy.go PrepareForCreate: the immutable name label
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = str(meta.get("name", ""))
    if kind == "PersistentVolumeClaim" and api_version == "v1":
        _default_claim(sim, out)
    elif kind == "PersistentVolume" and api_version == "v1":
        # pkg/apis/core/v1/defaults.go SetDefaults_PersistentVolume
        out.setdefault("spec", {}).setdefault("persistentVolumeReclaimPolicy", "Retain")
        out["spec"].setdefault("volumeMode", "Filesystem")
        out.setdefault("status", {}).setdefault("phase", "Pending")
    elif kind == CRD and api_version.startswith("apiextensions.k8s.io/"):
        _validate_crd(out)
    if kind in _POD_SPEC_PATHS:
        _validate_volume_mounts(out, kind, api_version)
    if (kind, api_version) in (("NetworkPolicy", "networking.k8s.io/v1"), ("Service", "v1")):
        _validate_port_names(out, kind, api_version)
    pod = kind == "Pod" and api_version == "v1"
    if pod:
        limitrange.mutate(sim, out)  # LimitRanger precedes ServiceAccount (plugins.go)
        admit_pod(sim, out)
    # apiserver pkg/endpoints/handlers/create.go: the strategy validates what the mutating
    # admission made of the object (a LimitRange's default limit may complete or break a pod)
    validate_spec(out, str(meta.get("generateName") or meta.get("name") or "") if pod else None)
    # 5. the admission webhooks the cluster holds (helmsim.cluster.webhooks): mutating, then the
    # validating plugins, then validating webhooks, then ResourceQuota, last
    # (k8s.io/apiserver pkg/admission/chain.go: every mutating interface before any validating
    # one; kubernetes pkg/kubeapiserver/options/plugins.go AllOrderedPlugins).
    call_webhooks(sim, out, ("MutatingWebhookConfiguration",))
    if pod:
        refused = limitrange.validate(sim, out)
        if refused is not None:
            raise forbidden_pod(out, refused)
        podsecurity.admit(sim, out)
    elif kind == "PersistentVolumeClaim" and api_version == "v1":
        admit_claim(sim, out)  # LimitRanger, on create as on update
    warden.check(sim, out, sim.store.acting)  # a managed platform's own admission (GKE Autopilot)
    call_webhooks(sim, out, ("ValidatingWebhookConfiguration",))
    quota.admit(sim, out)
    return out


def admit_claim(sim: Simulation, claim: Mapping[str, Any]) -> None:
    """LimitRanger on a claim's create or update: ``persistentvolumeclaims "x" is forbidden: …``
    outside a ``type: PersistentVolumeClaim`` LimitRange's bounds
    (plugin/pkg/admission/limitranger/admission.go SupportsAttributes, ValidateLimit)."""
    refused = limitrange.validate_claim(sim, claim)
    if refused is not None:
        raise quota.forbidden(sim, claim, refused)


def mapping_scope(sim: Simulation, api_version: str, kind: str) -> str | None:
    """``"Namespaced"`` or ``"Cluster"`` if the kind maps in this cluster, None if not.

    Built-in kinds map when the cluster's Kubernetes version serves them by default
    (``helmsim.kube.served``; before 1.25, when the deprecation guide lists no removal) or the
    profile's ``apiVersions`` lists them; other kinds when a profile CRD, a profile
    ``apiVersions`` entry or an Established CRD in the store serves them.
    """
    builtin = builtin_served(str(getattr(sim.profile, "kubernetes_version", "") or ""), api_version, kind)
    if builtin is not None and builtin:
        return "Cluster" if kind in CLUSTER_SCOPED_KINDS else "Namespaced"
    if (api_version, kind) in FLUX_APIS:
        return "Namespaced"  # the simulated cluster runs Flux: its controllers' CRDs are served
    served = served_kinds(sim)
    if (api_version, kind) in served:
        scope = served[(api_version, kind)]
        return scope or ("Cluster" if kind in CLUSTER_SCOPED_KINDS else "Namespaced")
    if api_version in served_group_versions(sim):
        return "Cluster" if kind in CLUSTER_SCOPED_KINDS else "Namespaced"
    return None


def serves(sim: Simulation) -> Callable[[str, str], bool]:
    """The REST mapper of this cluster now, for Helm's Build (``helmsim.helm.build``)."""
    return lambda api_version, kind: mapping_scope(sim, api_version, kind) is not None


def no_kind_match_message(api_version: str, kind: str) -> str:
    """k8s.io/apimachinery pkg/api/meta/errors.go NoKindMatchError.Error, one searched version."""
    return f'no matches for kind "{kind}" in version "{api_version}"'


def resource_mapping_message(obj: Mapping[str, Any], source: str = "") -> str:
    """The line kubectl and Helm print for an unmapped kind.

    k8s.io/cli-runtime pkg/resource/mapper.go infoForData: ``resource mapping not found for
    name: %q namespace: %q from %q: %v`` + ``"\\nensure CRDs are installed first"``.
    """
    meta = obj.get("metadata") or {}
    inner = no_kind_match_message(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
    return (
        f'resource mapping not found for name: "{meta.get("name", "")}" namespace: '
        f'"{meta.get("namespace") or ""}" from "{source}": {inner}\nensure CRDs are installed first'
    )


def _check_namespace(
    sim: Simulation, namespace: str, api_version: str, kind: str, name: str
) -> None:
    ns = sim.store.get("Namespace", "", namespace)
    if ns is None:
        if namespace in SYSTEM_NAMESPACES:
            return
        # lifecycle/admission.go Admit: the live lookup's NotFound is returned as is.
        raise ApiError("NotFound", f'namespaces "{namespace}" not found')
    terminating = (
        ns["metadata"].get("deletionTimestamp")
        or (ns.get("status") or {}).get("phase") == "Terminating"
    )
    if terminating:
        # admission.NewForbidden → apierrors.NewForbidden: "<resource> \"<name>\" is forbidden: <err>"
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        resource = resource_name(sim, api_version, kind) + (f".{group}" if group else "")
        what = f'{resource} "{name}"' if name else resource
        raise ApiError(
            "Forbidden",
            f"{what} is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
        )


def _default_claim(sim: Simulation, claim: dict[str, Any]) -> None:
    spec = claim.setdefault("spec", {})
    ann = (claim.get("metadata") or {}).get("annotations") or {}
    # setdefault/admission.go Admit: only a nil storageClassName and no beta class annotation.
    if spec.get("storageClassName") is None and ANN_BETA_CLASS not in ann:
        dflt = default_class(sim.store)
        if dflt is not None:
            spec["storageClassName"] = dflt["metadata"]["name"]
    # pkg/apis/core/v1/defaults.go SetDefaults_PersistentVolumeClaim
    spec.setdefault("volumeMode", "Filesystem")
    claim.setdefault("status", {}).setdefault("phase", "Pending")


# Where each workload kind holds its pod spec (k8s.io/api: PodTemplateSpec fields).
def _validate_volume_mounts(obj: Mapping[str, Any], kind: str, api_version: str) -> None:
    """pkg/apis/core/validation/validation.go ValidateVolumeMounts: every container's (init
    and ephemeral containers' too) volumeMounts[].name must be one of the pod's volumes
    (``field.NotFound``); the errors are aggregated into one Invalid StatusError."""
    spec: Any = obj
    for part in _POD_SPEC_PATHS[kind]:
        spec = spec.get(part) if isinstance(spec, Mapping) else None
    if not isinstance(spec, Mapping):
        return
    prefix = ".".join(_POD_SPEC_PATHS[kind])
    volumes = {str(v.get("name")) for v in spec.get("volumes") or () if isinstance(v, Mapping)}
    errors: list[str] = []
    for field_name in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(field_name) or ()):
            if not isinstance(c, Mapping):
                continue
            for j, mount in enumerate(c.get("volumeMounts") or ()):
                name = mount.get("name") if isinstance(mount, Mapping) else None
                if isinstance(name, str) and name and name not in volumes:
                    errors.append(f'{prefix}.{field_name}[{i}].volumeMounts[{j}].name: Not found: "{name}"')
    if errors:
        from helmsim.kube.fieldcheck import invalid_message

        name = str((obj.get("metadata") or {}).get("name", ""))
        raise ApiError("Invalid", invalid_message(api_version, kind, name, errors))


_PORT_NAME_CHARSET = re.compile(r"^[-a-z0-9]+$")
_PORT_NAME_LETTER = re.compile(r"[a-z]")


def port_name_errors(name: str) -> list[str]:
    """k8s.io/apimachinery pkg/util/validation/validation.go IsValidPortName (an IANA_SVC_NAME)."""
    errs = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.match(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _validate_port_names(obj: Mapping[str, Any], kind: str, api_version: str) -> None:
    """A port given as a string is a port *name*, so ``"5432"`` is refused: kubernetes
    pkg/apis/networking/validation/validation.go ValidateNetworkPolicyPort (``port``) and
    pkg/apis/core/validation/validation.go validateServicePort (``targetPort``), each
    message of IsValidPortName a ``field.Invalid``, aggregated into one Invalid StatusError."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return
    found: list[tuple[str, Any]] = []
    if kind == "NetworkPolicy":
        for direction in ("ingress", "egress"):
            for i, rule in enumerate(spec.get(direction) or ()):
                for j, port in enumerate((rule.get("ports") if isinstance(rule, Mapping) else None) or ()):
                    if isinstance(port, Mapping):
                        found.append((f"spec.{direction}[{i}].ports[{j}].port", port.get("port")))
    else:
        for i, port in enumerate(spec.get("ports") or ()):
            if isinstance(port, Mapping):
                found.append((f"spec.ports[{i}].targetPort", port.get("targetPort")))
    errors = [
        f'{path}: Invalid value: "{value}": {msg}'
        for path, value in found
        if isinstance(value, str)
        for msg in port_name_errors(value)
    ]
    if errors:
        from helmsim.kube.fieldcheck import invalid_message

        name = str((obj.get("metadata") or {}).get("name", ""))
        raise ApiError("Invalid", invalid_message(api_version, kind, name, errors))


def validate_spec(obj: Mapping[str, Any], shown: str | None = None) -> None:
    """Raise the Invalid StatusError of :mod:`helmsim.cluster.specvalidation` (a
    PodDisruptionBudget's or HorizontalPodAutoscaler's cross-field rules), on create and update;
    ``shown`` is the name the message gives (default: the object's)."""
    from helmsim.cluster.specvalidation import spec_errors

    errors = spec_errors(obj)
    if errors:
        from helmsim.kube.fieldcheck import invalid_message

        name = shown if shown is not None else str((obj.get("metadata") or {}).get("name", ""))
        raise ApiError("Invalid", invalid_message(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""), name, errors))


def _validate_crd(crd: dict[str, Any]) -> None:
    """apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go: the name rule."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    name = str((crd.get("metadata") or {}).get("name", ""))
    want = f"{names.get('plural', '')}.{spec.get('group', '')}"
    if name != want:
        raise ApiError(
            "Invalid",
            f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: metadata.name: '
            f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
        )
