"""What a pod's volumes, environment and pull secrets reference, resolved as the kubelet does.

Pure functions of the pod and a lookup (``get(kind, namespace, name)`` → the live object or
None); the kubelet (:mod:`helmsim.cluster.controllers.kubelet`) owns the timing. The texts are
the kubelet's: its secret and configmap managers report a missing object as
``secret "<name>" not found`` / ``configmap "<name>" not found``
(kubernetes pkg/kubelet/util/manager/watch_based_manager.go Get: apierrors.NewNotFound with the
singular resource of pkg/kubelet/secret/secret_manager.go and pkg/kubelet/configmap/
configmap_manager.go).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from msgspec import Struct
from helmsim.kube.errors import aggregate

Lookup = Callable[[str, str, str], Mapping[str, Any] | None]
"""``get(kind, namespace, name)``: the live object, or None when it does not exist."""


class Reference(Struct, frozen=True):
    """One object a pod needs: its kind and name, where it is used, and whether it is optional."""

    kind: str
    name: str
    where: str
    optional: bool


def not_found(kind: str, name: str) -> str:
    """The kubelet managers' NotFound text: ``secret "x" not found``, ``configmap "x" not found``."""
    return f'{kind.lower()} "{name}" not found'


def _maps(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a list field (anything else in it, or a non-list, is ignored)."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _optional(src: Mapping[str, Any]) -> bool:
    return src.get("optional") is True


def _keys(obj: Mapping[str, Any], *fields: str) -> set[str]:
    out: set[str] = set()
    for f in fields:
        data = obj.get(f)
        if isinstance(data, Mapping):
            out.update(str(k) for k in data)
    return out


def _secret_keys(secret: Mapping[str, Any]) -> set[str]:
    # The API server folds stringData into data on write (pkg/apis/core/v1/conversion.go).
    return _keys(secret, "data", "stringData")


def _items_error(items: Any, have: set[str], optional: bool, text: str) -> str | None:
    """secret.go / configmap.go MakePayload: a listed key that is absent fails the mount."""
    for item in _maps(items):
        key = str(item.get("key", ""))
        if key not in have and not optional:
            return f"{text}{key}"
    return None


def _secret_source(src: Mapping[str, Any], name_field: str, ns: str, get: Lookup) -> str | None:
    """kubernetes pkg/volume/secret/secret.go SetUpAt + MakePayload."""
    name = str(src.get(name_field) or "")
    optional = _optional(src)
    secret = get("Secret", ns, name)
    if secret is None:
        return None if optional else not_found("Secret", name)
    return _items_error(
        src.get("items"), _secret_keys(secret), optional, "references non-existent secret key: "
    )


def _configmap_source(src: Mapping[str, Any], ns: str, get: Lookup) -> str | None:
    """kubernetes pkg/volume/configmap/configmap.go SetUpAt + MakePayload (data and binaryData)."""
    name = str(src.get("name") or "")
    optional = _optional(src)
    cm = get("ConfigMap", ns, name)
    if cm is None:
        return None if optional else not_found("ConfigMap", name)
    return _items_error(
        src.get("items"),
        _keys(cm, "data", "binaryData"),
        optional,
        "configmap references non-existent config key: ",
    )


def volume_error(volume: Mapping[str, Any], namespace: str, get: Lookup) -> str | None:
    """Why the kubelet cannot set ``volume`` up now (None: it mounts).

    Secret, ConfigMap and projected volumes are resolved; other kinds mount (claims are the
    scheduler's: a pod with a missing claim is never bound). A projected volume collects every
    source's error (kubernetes pkg/volume/projected/projected.go collectData) into one
    k8s.io/apimachinery utilerrors Aggregate: one error prints as itself, several as ``[a, b]``.
    """
    if isinstance(volume.get("secret"), Mapping):
        return _secret_source(volume["secret"], "secretName", namespace, get)
    if isinstance(volume.get("configMap"), Mapping):
        return _configmap_source(volume["configMap"], namespace, get)
    projected = volume.get("projected")
    if not isinstance(projected, Mapping):
        return None
    errors: list[str] = []
    for source in _maps(projected.get("sources")):
        err = None
        if isinstance(source.get("secret"), Mapping):
            err = _secret_source(source["secret"], "name", namespace, get)
        elif isinstance(source.get("configMap"), Mapping):
            err = _configmap_source(source["configMap"], namespace, get)
        if err:
            errors.append(err)
    if not errors:
        return None
    return aggregate(errors)


def mount_errors(pod: Mapping[str, Any], get: Lookup) -> dict[str, str]:
    """``{volume name: error}`` for the pod's volumes that cannot be set up now."""
    ns = str((pod.get("metadata") or {}).get("namespace") or "default")
    out: dict[str, str] = {}
    for vol in _maps(_spec(pod).get("volumes")):
        err = volume_error(vol, ns, get)
        if err:
            out[str(vol.get("name"))] = err
    return out


def env_error(container: Mapping[str, Any], namespace: str, get: Lookup) -> str | None:
    """Why the kubelet cannot build ``container``'s environment (None: it can).

    kubernetes pkg/kubelet/kubelet_pods.go makeEnvironmentVariables: ``envFrom`` first, then
    ``env``; a missing object is its manager's NotFound unless ``optional: true``; a missing key
    is "couldn't find key K in ConfigMap ns/name" (ConfigMap ``data`` only) or "… in Secret …".
    """
    for src in _maps(container.get("envFrom")):
        for field, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
            ref = src.get(field)
            if isinstance(ref, Mapping):
                name = str(ref.get("name") or "")
                if get(kind, namespace, name) is None and not _optional(ref):
                    return not_found(kind, name)
    for env in _maps(container.get("env")):
        value_from = env.get("valueFrom")
        if not isinstance(value_from, Mapping):
            continue
        for field, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
            ref = value_from.get(field)
            if not isinstance(ref, Mapping):
                continue
            name, key = str(ref.get("name") or ""), str(ref.get("key") or "")
            optional = _optional(ref)
            obj = get(kind, namespace, name)
            if obj is None:
                if optional:
                    continue
                return not_found(kind, name)
            have = _keys(obj, "data") if kind == "ConfigMap" else _secret_keys(obj)
            if key not in have and not optional:
                return f"couldn't find key {key} in {kind} {namespace}/{name}"
    return None


def missing_pull_secrets(pod: Mapping[str, Any], get: Lookup) -> list[str]:
    """kubernetes pkg/kubelet/kubelet_pods.go getPullSecretsForPod: named pull secrets absent."""
    ns = str((pod.get("metadata") or {}).get("namespace") or "default")
    out = []
    for ref in _maps(_spec(pod).get("imagePullSecrets")):
        name = str(ref.get("name") or "")
        if name and get("Secret", ns, name) is None:
            out.append(name)
    return out


def pull_secrets_message(names: Iterable[str]) -> str:
    """getPullSecretsForPod's FailedToRetrieveImagePullSecret event text."""
    return (
        f"Unable to retrieve some image pull secrets ({', '.join(names)}); "
        "attempting to pull the image may not succeed."
    )


def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _ref(kind: str, ref: Any, name_field: str, where: str) -> list[Reference]:
    if not isinstance(ref, Mapping):
        return []
    return [Reference(kind, str(ref.get(name_field) or ""), where, _optional(ref))]


def references(pod: Mapping[str, Any]) -> list[Reference]:
    """Every Secret/ConfigMap the pod's volumes, environment and pull secrets name."""
    spec = _spec(pod)
    out: list[Reference] = []
    for vol in _maps(spec.get("volumes")):
        where = f"volume {vol.get('name')}"
        out += _ref("Secret", vol.get("secret"), "secretName", where)
        out += _ref("ConfigMap", vol.get("configMap"), "name", where)
        projected = vol.get("projected")
        for src in _maps(projected.get("sources") if isinstance(projected, Mapping) else None):
            out += _ref("Secret", src.get("secret"), "name", where)
            out += _ref("ConfigMap", src.get("configMap"), "name", where)
    for c in [*_maps(spec.get("initContainers")), *_maps(spec.get("containers"))]:
        where = f"container {c.get('name')}"
        for src in _maps(c.get("envFrom")):
            out += _ref("ConfigMap", src.get("configMapRef"), "name", where)
            out += _ref("Secret", src.get("secretRef"), "name", where)
        for env in _maps(c.get("env")):
            vf = env.get("valueFrom")
            if isinstance(vf, Mapping):
                out += _ref("ConfigMap", vf.get("configMapKeyRef"), "name", where)
                out += _ref("Secret", vf.get("secretKeyRef"), "name", where)
    for ref in _maps(spec.get("imagePullSecrets")):
        name = str(ref.get("name") or "")
        if name:
            out.append(Reference("Secret", name, "imagePullSecrets", True))
    return out
