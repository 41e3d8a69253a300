"""A read-only Kubernetes API on 127.0.0.1 that answers Helm's ``lookup`` from given objects.

helm-controller renders an install or upgrade with a cluster client, so ``lookup`` reads live
objects (helm/helm pkg/engine/lookup_func.go): it asks discovery for the group/version's
resources (``ServerResourcesForGroupVersion``), then GETs one object or LISTs a resource, and
answers an empty map when the object is not found. This server gives Helm's engine exactly
those three answers, from the objects the simulation says exist, so a chart that reuses what an
earlier revision created (Bitnami's ``common.secrets.passwords.manage``) renders as it would on
the cluster. It serves nothing else, and only under the secret path prefix of its kubeconfig's
server URL (client-go sends no bearer token over plain HTTP).
"""

from __future__ import annotations

import base64
import http.server
import json
import secrets
import threading
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from helmsim.kube.scope import CLUSTER_SCOPED_KINDS, guess_plural

CRD = "CustomResourceDefinition"


def stored(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as the API server keeps it: a Secret's ``stringData`` merged into ``data``,
    base64 encoded (kubernetes pkg/apis/core/v1/conversion.go Convert_v1_Secret_To_core_Secret:
    stringData is write-only and wins over data)."""
    out = dict(obj)
    if out.get("kind") == "Secret" and out.get("apiVersion") == "v1" and isinstance(out.get("stringData"), Mapping):
        data = dict(out.get("data") or {})
        for key, value in out.pop("stringData").items():
            data[str(key)] = base64.b64encode(str(value).encode()).decode()
        out["data"] = data
    return out


class Catalog:
    """The objects served, indexed by group/version, resource, namespace and name."""

    def __init__(self, objects: Sequence[Mapping[str, Any]], api_versions: Sequence[str]) -> None:
        self.kinds: dict[str, dict[str, tuple[str, bool]]] = {}  # gv → resource → (kind, namespaced)
        self.objects: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (gv, resource) → objects
        scopes = {
            (str(spec.get("group") or ""), str((spec.get("names") or {}).get("kind") or "")): spec.get("scope") != "Cluster"
            for o in objects
            if o.get("kind") == CRD
            for spec in (o.get("spec") or {},)
        }
        for entry in api_versions:
            # .Capabilities entries are "group/version" and "group/version/Kind"
            parts = entry.split("/")
            if len(parts) == 3:
                self._kind(f"{parts[0]}/{parts[1]}", parts[2], scopes)
            elif len(parts) == 2 and parts[1][:1].isupper():
                self._kind(parts[0], parts[1], scopes)  # the core group: "v1/Pod"
            elif len(parts) == 2 or entry == "v1":
                self.kinds.setdefault(entry, {})
        for obj in objects:
            gv, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
            if gv and kind:
                resource = self._kind(gv, kind, scopes)
                self.objects.setdefault((gv, resource), []).append(stored(obj))

    def _kind(self, gv: str, kind: str, scopes: Mapping[tuple[str, str], bool]) -> str:
        group = gv.rsplit("/", 1)[0] if "/" in gv else ""
        namespaced = scopes.get((group, kind), kind not in CLUSTER_SCOPED_KINDS)
        resource = guess_plural(kind)
        self.kinds.setdefault(gv, {})[resource] = (kind, namespaced)
        return resource

    def discovery(self, gv: str) -> dict[str, Any] | None:
        """The APIResourceList of ``gv``, or None when the cluster does not serve it."""
        if gv not in self.kinds:
            return None
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": gv,
            "resources": [
                {"name": resource, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
                 "verbs": ["get", "list"]}
                for resource, (kind, namespaced) in sorted(self.kinds[gv].items())
            ],
        }

    def read(self, gv: str, resource: str, namespace: str | None, name: str | None) -> dict[str, Any] | None:
        """One object (None: not found), or the list of a resource in ``namespace`` (all: None)."""
        known = self.kinds.get(gv, {}).get(resource)
        if known is None:
            return None
        kind, namespaced = known
        items = [
            o for o in self.objects.get((gv, resource), ())
            if not namespaced or namespace is None or (o.get("metadata") or {}).get("namespace") == namespace
        ]
        if name is not None:
            return next((o for o in items if (o.get("metadata") or {}).get("name") == name), None)
        return {"apiVersion": gv, "kind": f"{kind}List", "metadata": {"resourceVersion": ""}, "items": items}


def _not_found(what: str) -> dict[str, Any]:
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"{what} not found", "reason": "NotFound", "code": 404,
    }


def route(catalog: Catalog, path: str) -> tuple[int, dict[str, Any]]:
    """The status and body Kubernetes' API would answer for a GET of ``path``."""
    parts = [p for p in urlsplit(path).path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        gv, rest = parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        gv, rest = f"{parts[1]}/{parts[2]}", parts[3:]
    else:
        return 404, _not_found(path)
    if not rest:
        found = catalog.discovery(gv)
        return (200, found) if found is not None else (404, _not_found(gv))
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource, name = rest[0], (rest[1] if len(rest) > 1 else None)
    if len(rest) > 2:
        return 404, _not_found(path)  # subresources are not served (lookup reads none)
    answer = catalog.read(gv, resource, namespace, name)
    if answer is None:
        return 404, _not_found(f'{resource} "{name}"' if name else resource)
    return 200, answer


class LookupServer:
    """The server, on a free port of 127.0.0.1, in a daemon thread; :meth:`serve` sets what it
    answers (one render at a time)."""

    def __init__(self) -> None:
        self.token = secrets.token_urlsafe(32)
        self.catalog = Catalog((), ())
        lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                prefix = f"/{owner.token}/"
                if not self.path.startswith(prefix):
                    self._answer(401, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                       "reason": "Unauthorized", "code": 401})
                    return
                with lock:
                    code, body = route(owner.catalog, self.path[len(prefix) - 1:])
                self._answer(code, body)

            def _answer(self, code: int, body: Mapping[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
                return None

        self._lock = lock
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, name="lookup-server", daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/{self.token}"

    def serve(self, objects: Sequence[Mapping[str, Any]], api_versions: Sequence[str]) -> None:
        catalog = Catalog(objects, api_versions)
        with self._lock:
            self.catalog = catalog

    def kubeconfig(self) -> str:
        """A kubeconfig of this server alone (the user's own is never read)."""
        return json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "helmsim",
            "clusters": [{"name": "helmsim", "cluster": {"server": self.url}}],
            "users": [{"name": "helmsim", "user": {}}],
            "contexts": [{"name": "helmsim", "context": {"cluster": "helmsim", "user": "helmsim"}}],
        })
