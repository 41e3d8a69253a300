"""Read a live cluster's objects for ``profiles import``, read-only, with the ``kubernetes`` client.

Every request is a GET of one object or one list (``READS``); nothing is ever written, watched
or exec'd, and no Secret is ever requested. The official client loads the kubeconfig (contexts,
certificates, tokens, exec credential plugins) and performs the requests; the JSON is kept raw,
exactly as ``kubectl get -o json`` would print it, so the dump and live paths share one reader.
An unreachable cluster, an unknown context or a kubeconfig that does not load is one line,
exit 2. The package is imported lazily: ``helmsim --help`` does not load it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from msgspec import Struct

from helmsim.errors import InputError
from helmsim.profiletools.dumps import Dump, add_text

TIMEOUT_SECONDS = 15.0


class Read(Struct, frozen=True):
    """One GET: the API path, and whether its absence (404/403) is an error."""

    path: str
    required: bool = False


# What `helmsim profiles import --kubeconfig` reads (docs/profiles.md lists the same).
READS: tuple[Read, ...] = (
    Read("/api/v1/nodes", required=True),
    Read("/api/v1/namespaces/default/services/kubernetes", required=True),
    Read(
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes"
    ),
    Read("/api/v1/namespaces/default/endpoints/kubernetes"),
    Read("/api/v1/namespaces/kube-system/services/kube-dns"),
    Read("/apis/storage.k8s.io/v1/storageclasses"),
    Read("/apis/storage.k8s.io/v1/csidrivers"),
    Read("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
    Read("/apis/apiregistration.k8s.io/v1/apiservices"),
    Read("/apis/networking.k8s.io/v1/servicecidrs"),
    Read("/apis/apps/v1/daemonsets"),
    Read("/api/v1/namespaces/kube-system/configmaps/kubeadm-config"),
    Read("/api/v1/namespaces/kube-system/configmaps/kube-proxy"),
    Read("/api/v1/namespaces/kube-system/configmaps/coredns"),
    Read("/api/v1/namespaces/kube-system/configmaps/amazon-vpc-cni"),
    Read("/api/v1/namespaces/kube-system/pods?labelSelector=tier%3Dcontrol-plane"),
    Read("/apis/networking.k8s.io/v1/namespaces/kube-system/networkpolicies"),
)
CILIUM_READS: tuple[str, ...] = (
    "/apis/cilium.io/v2/ciliumclusterwidenetworkpolicies",
    "/apis/cilium.io/v2/namespaces/kube-system/ciliumnetworkpolicies",
)


def read_live(kubeconfig: Path | None, context: str | None) -> tuple[Dump, str]:
    """The cluster's objects through ``kubeconfig`` (default: $KUBECONFIG, ~/.kube/config)."""
    client, where = _client(kubeconfig, context)
    dump = Dump()
    version = _get(client, "/version", where, required=True)
    assert version is not None
    add_text(dump, json.dumps({"serverVersion": version}), f"{where} GET /version")
    for read in READS:
        _add(dump, client, read.path, where, read.required)
    # cilium-config lives in the namespace of Cilium's agent DaemonSet.
    cilium_ns = sorted(
        {o.namespace for o in dump.of("DaemonSet") if o.name in ("cilium", "anetd")} - {""}
    )
    for ns in cilium_ns:
        _add(dump, client, f"/api/v1/namespaces/{ns}/configmaps/cilium-config", where, False)
    if any(
        o.obj.get("spec", {}).get("group") == "cilium.io"
        for o in dump.of("CustomResourceDefinition")
    ):
        for path in CILIUM_READS:
            _add(dump, client, path, where, False)
    return dump, where


def _client(kubeconfig: Path | None, context: str | None) -> tuple[Any, str]:
    import yaml
    from kubernetes import client as kclient
    from kubernetes import config as kconfig
    from kubernetes.config.config_exception import ConfigException

    label = str(kubeconfig) if kubeconfig else "the default kubeconfig"
    try:
        contexts, current = kconfig.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None
        )
        name = context or (current or {}).get("name")
        if context and context not in [c.get("name") for c in contexts or []]:
            raise InputError(f"no context {context!r} in the kubeconfig", file=label)
        configuration = kclient.Configuration()
        kconfig.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except InputError:
        raise
    except (
        ConfigException,
        yaml.YAMLError,
        OSError,
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
    ) as err:
        text = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"cannot load the kubeconfig: {text}", file=label) from None
    configuration.retries = 0  # an unreachable server fails at once, not after urllib3's retries
    client = kclient.ApiClient(configuration)
    return client, f"context {name} ({configuration.host})"


def _get(client: Any, path: str, where: str, *, required: bool) -> Any:
    """GET ``path``; ``None`` when it is absent or forbidden and not required."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        status, reason, raw = _request(client, path)
    except ApiException as err:
        status, reason, raw = err.status, err.reason, b""
    except (HTTPError, OSError) as err:
        text = str(getattr(err, "reason", None) or err).splitlines()[0]
        raise InputError(f"cannot reach the cluster: {text}", file=where) from None
    if status == 0:
        raise InputError(f"cannot reach the cluster: {str(reason).splitlines()[0]}", file=where)
    if not 200 <= status < 300:
        if status in (403, 404) and not required:
            return None
        raise InputError(f"GET {path}: {status} {reason or ''}".rstrip(), file=where)
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InputError(f"GET {path}: the response is not JSON", file=where) from None


def _request(client: Any, path: str) -> tuple[int, str, bytes]:
    """One GET with the kubeconfig's credentials: (status, reason, body)."""
    headers = {"Accept": "application/json"}
    if hasattr(client, "param_serialize"):  # kubernetes >= 34 (openapi-generator v7 client)
        method, url, headers, _, _ = client.param_serialize(
            "GET", path, header_params=headers, auth_settings=["BearerToken"]
        )
        response = client.call_api(
            method, url, header_params=headers, _request_timeout=TIMEOUT_SECONDS
        )
        response.read()
        return int(response.status), str(response.reason or ""), bytes(response.data or b"")
    data, status, _ = client.call_api(  # older clients raise ApiException on an error status
        path,
        "GET",
        header_params=headers,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=TIMEOUT_SECONDS,
    )
    return int(status), "", bytes(data.data)


def _add(dump: Dump, client: Any, path: str, where: str, required: bool) -> None:
    body = _get(client, path, where, required=required)
    if body is None:
        return
    if isinstance(body, dict) and str(body.get("kind", "")).endswith("List"):
        # API list responses carry kind and apiVersion on the list only (kubectl adds them).
        kind = str(body["kind"])[: -len("List")]
        for item in body.get("items") or []:
            if isinstance(item, dict):
                item.setdefault("kind", kind)
                item.setdefault("apiVersion", body.get("apiVersion"))
    add_text(dump, json.dumps(body), f"{where} GET {path.split('?')[0]}")
