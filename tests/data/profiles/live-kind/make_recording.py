"""Regenerate api.json: the kind dumps (../kind) as the API server answers the importer's GETs.

Run from the repository root: ``.venv/bin/python tests/data/profiles/live-kind/make_recording.py``.
List responses carry kind/apiVersion on the list only and ``metadata.resourceVersion``; single
objects are returned as they are; an absent object is the API server's 404 Status.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
KIND = HERE.parent / "kind"


def _items(*files: str) -> list[dict]:
    out: list[dict] = []
    for name in files:
        out.extend(yaml.safe_load((KIND / name).read_text())["items"])
    return out


def _list(kind: str, api_version: str, items: list[dict]) -> dict:
    stripped = [{k: v for k, v in i.items() if k not in ("kind", "apiVersion")} for i in items]
    return {"kind": f"{kind}List", "apiVersion": api_version, "metadata": {"resourceVersion": "1207"}, "items": stripped}


def _not_found(what: str, name: str) -> dict:
    return {"status": 404, "body": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'{what} "{name}" not found', "reason": "NotFound", "details": {"name": name, "kind": what}, "code": 404}}


def main() -> None:
    default = _items("default.yaml")
    system = _items("kube-system.yaml")
    by = lambda kind, name: next(i for i in default + system if i["kind"] == kind and i["metadata"]["name"] == name)  # noqa: E731
    version = json.loads((KIND / "version.json").read_text())["serverVersion"]
    responses = {
        "/version": {"status": 200, "body": version},
        "/api/v1/nodes": {"status": 200, "body": _list("Node", "v1", _items("nodes.yaml"))},
        "/api/v1/namespaces/default/services/kubernetes": {"status": 200, "body": by("Service", "kubernetes")},
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes":
            {"status": 200, "body": _list("EndpointSlice", "discovery.k8s.io/v1", [by("EndpointSlice", "kubernetes")])},
        "/api/v1/namespaces/default/endpoints/kubernetes": {"status": 200, "body": by("Endpoints", "kubernetes")},
        "/api/v1/namespaces/kube-system/services/kube-dns": {"status": 200, "body": by("Service", "kube-dns")},
        "/apis/storage.k8s.io/v1/storageclasses": {"status": 200, "body": _list("StorageClass", "storage.k8s.io/v1", _items("storageclasses.yaml"))},
        "/apis/storage.k8s.io/v1/csidrivers": {"status": 200, "body": _list("CSIDriver", "storage.k8s.io/v1", [])},
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions": {"status": 200, "body": _list("CustomResourceDefinition", "apiextensions.k8s.io/v1", [])},
        "/apis/apiregistration.k8s.io/v1/apiservices": {"status": 200, "body": _list("APIService", "apiregistration.k8s.io/v1", _items("apiservices.yaml"))},
        # a 1.31 server does not serve networking.k8s.io/v1 ServiceCIDRs (GA in 1.33)
        "/apis/networking.k8s.io/v1/servicecidrs": {"status": 404, "body": {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": "the server could not find the requested resource", "reason": "NotFound", "details": {}, "code": 404}},
        "/apis/apps/v1/daemonsets": {"status": 200, "body": _list("DaemonSet", "apps/v1", [i for i in system if i["kind"] == "DaemonSet"])},
        "/api/v1/namespaces/kube-system/configmaps/kubeadm-config": {"status": 200, "body": by("ConfigMap", "kubeadm-config")},
        "/api/v1/namespaces/kube-system/configmaps/kube-proxy": {"status": 200, "body": by("ConfigMap", "kube-proxy")},
        "/api/v1/namespaces/kube-system/configmaps/coredns": {"status": 200, "body": by("ConfigMap", "coredns")},
        "/api/v1/namespaces/kube-system/configmaps/amazon-vpc-cni": _not_found("configmaps", "amazon-vpc-cni"),
        "/api/v1/namespaces/kube-system/pods?labelSelector=tier%3Dcontrol-plane": {"status": 200, "body": _list("Pod", "v1", [])},
        "/apis/networking.k8s.io/v1/namespaces/kube-system/networkpolicies": {"status": 200, "body": _list("NetworkPolicy", "networking.k8s.io/v1", [])},
    }
    (HERE / "api.json").write_text(json.dumps(responses, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
