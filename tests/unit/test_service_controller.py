"""Services: built-in cluster objects, ClusterIP/NodePort allocation, Endpoints and EndpointSlices."""

from __future__ import annotations

import ipaddress
from typing import Any

from helmsim import kstatus
from helmsim.cluster.controllers.service import install_service_controllers, seed_cluster
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile


def make_sim(*, seed: bool = True) -> Simulation:
    sim = Simulation(load_profile("kind"))
    if seed:
        seed_cluster(sim)
    install_service_controllers(sim)
    return sim


def service(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"app": name},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
            **spec,
        },
    }


def pod(name: str, app: str, ip: str, *, ready: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": {
            "nodeName": "kind-control-plane",
            "containers": [{"name": "c", "ports": [{"name": "web", "containerPort": 8080}]}],
        },
        "status": {
            "phase": "Running",
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_seed_cluster_builtins() -> None:
    sim = make_sim()
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        obj = sim.store.get("Namespace", None, ns)
        assert obj is not None and obj["metadata"]["labels"] == {"kubernetes.io/metadata.name": ns}
    node = sim.store.get("Node", None, "kind-control-plane")
    assert (
        node is not None
        and {"type": "InternalIP", "address": "172.18.0.2"} in node["status"]["addresses"]
    )
    k8s = sim.store.get("Service", "default", "kubernetes")
    assert k8s is not None and k8s["spec"]["clusterIP"] == "10.96.0.1"
    assert k8s["spec"]["ports"] == [
        {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}
    ]
    slice_ = sim.store.get("EndpointSlice", "default", "kubernetes")
    assert slice_ is not None and slice_["endpoints"][0]["addresses"] == ["172.18.0.2"]
    dns = sim.store.get("Service", "kube-system", "kube-dns")
    assert dns is not None and dns["spec"]["clusterIP"] == "10.96.0.10"
    eps = sim.store.get("Endpoints", "kube-system", "kube-dns")
    assert eps is not None
    assert [a["ip"] for a in eps["subsets"][0]["addresses"]] == ["10.244.0.2", "10.244.0.3"]
    assert (
        kstatus.compute(sim.store.get("Deployment", "kube-system", "coredns")).status
        == kstatus.Status.CURRENT
    )  # type: ignore[arg-type]
    sim.run(until=5)  # controllers leave the seeded state as it is
    assert sim.store.get("Endpoints", "kube-system", "kube-dns") == eps


def test_cluster_ip_allocation_is_deterministic_and_in_range() -> None:
    sim = make_sim()
    sim.store.create(service("a"), actor="helm")
    sim.store.create(service("b"), actor="helm")
    sim.store.create(service("fixed", clusterIP="10.96.200.7"), actor="helm")
    sim.run(until=0.001)
    ips = [sim.store.get("Service", "default", n)["spec"]["clusterIP"] for n in ("a", "b", "fixed")]  # type: ignore[index]
    assert ips[2] == "10.96.200.7"
    assert len(set(ips)) == 3 and not {"10.96.0.1", "10.96.0.10"} & set(ips)
    net = ipaddress.ip_network("10.96.0.0/16")
    for ip in ips[:2]:
        # dynamic band: above the 256 addresses kept for static assignment
        assert (
            ipaddress.ip_address(ip) in net
            and int(ipaddress.ip_address(ip)) - int(net.network_address) > 256
        )
    again = make_sim()
    again.store.create(service("a"), actor="helm")
    again.run(until=0.001)
    assert again.store.get("Service", "default", "a")["spec"]["clusterIP"] == ips[0]  # type: ignore[index]
    svc = sim.store.get("Service", "default", "a")
    assert svc is not None
    spec = svc["spec"]
    assert (spec["type"], spec["clusterIPs"], spec["ipFamilies"], spec["sessionAffinity"]) == (
        "ClusterIP",
        [ips[0]],
        ["IPv4"],
        "None",
    )
    assert spec["ports"][0]["protocol"] == "TCP"
    assert sim.trace.find(what="allocated", obj="Service/default/a")[0].actor == "apiserver"


def test_load_balancer_never_gets_ingress_but_is_current() -> None:
    sim = make_sim()
    sim.store.create(service("lb", type="LoadBalancer"), actor="helm")
    sim.run(until=10)
    svc = sim.store.get("Service", "default", "lb")
    assert svc is not None
    assert svc["status"] == {"loadBalancer": {}}
    assert 30000 <= svc["spec"]["ports"][0]["nodePort"] <= 32767
    result = kstatus.compute(svc)
    assert result.status == kstatus.Status.CURRENT and result.message == "Service is ready"
    assert sim.trace.find(what="no-load-balancer", obj="Service/default/lb")


def test_headless_and_external_name() -> None:
    sim = make_sim()
    sim.store.create(service("db", clusterIP="None"), actor="helm")
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "ext", "namespace": "default"},
            "spec": {"type": "ExternalName", "externalName": "example.com"},
        },
        actor="helm",
    )
    sim.store.create(pod("db-0", "db", "10.244.0.20"), actor="kubelet")
    sim.run(until=1)
    db = sim.store.get("Service", "default", "db")
    assert db is not None and db["spec"]["clusterIP"] == "None"
    eps = sim.store.get("Endpoints", "default", "db")
    assert eps is not None and eps["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
    ext = sim.store.get("Service", "default", "ext")
    assert ext is not None and "clusterIP" not in ext["spec"]
    assert sim.store.get("Endpoints", "default", "ext") is None


def test_endpoints_follow_pod_readiness_and_deletion() -> None:
    sim = make_sim()
    sim.store.create(
        service("web", ports=[{"name": "http", "port": 80, "targetPort": "web"}]), actor="helm"
    )
    sim.store.create(pod("web-1", "web", "10.244.0.11", ready=False), actor="kubelet")
    sim.store.create(pod("other", "other", "10.244.0.12"), actor="kubelet")
    sim.run(until=1)
    eps = sim.store.get("Endpoints", "default", "web")
    assert eps is not None
    (subset,) = eps["subsets"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == [
        "10.244.0.11"
    ] and "addresses" not in subset
    assert subset["ports"] == [
        {"name": "http", "port": 8080, "protocol": "TCP"}
    ]  # named targetPort resolved
    (slice_,) = [
        s
        for s in sim.store.list("EndpointSlice", "default")
        if s["metadata"]["name"].startswith("web-")
    ]
    assert slice_["endpoints"][0]["conditions"] == {
        "ready": False,
        "serving": False,
        "terminating": False,
    }
    assert slice_["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
    # the pod becomes Ready
    ready = pod("web-1", "web", "10.244.0.11")
    sim.store.update_status("Pod", "default", "web-1", ready["status"], actor="kubelet")
    sim.run(until=2)
    eps = sim.store.get("Endpoints", "default", "web")
    assert eps is not None and [a["ip"] for a in eps["subsets"][0]["addresses"]] == ["10.244.0.11"]
    log = sim.trace.find(what="endpoints", obj="Service/default/web")
    assert (
        log[-1].message == "Service/default/web: ready endpoints [10.244.0.11]"
        and log[-1].time == 1.05
    )
    # the pod goes away, then the Service
    sim.store.delete("Pod", "default", "web-1", actor="kubelet")
    sim.run(until=3)
    eps = sim.store.get("Endpoints", "default", "web")
    assert eps is not None and "subsets" not in eps
    sim.store.delete("Service", "default", "web", actor="helm")
    sim.run(until=4)
    assert sim.store.get("Endpoints", "default", "web") is None
    assert [
        s
        for s in sim.store.list("EndpointSlice", "default")
        if s["metadata"]["name"].startswith("web-")
    ] == []


def test_a_pod_write_queues_only_the_services_selecting_it() -> None:
    # pkg/controller/endpoint endpoints_controller.go updatePod: old and new labels' Services only
    from helmsim.cluster.controllers.service import EndpointsController

    sim = make_sim()
    (ctrl,) = [c for c in sim.controllers if isinstance(c, EndpointsController)]
    for name in ("a", "b", "c"):
        sim.store.create(service(name), actor="helm")
    sim.run(until=5.0)
    sim.store.create(pod("p", "a", "10.244.0.5"), actor="kubelet")
    assert ctrl.queue.pending(("default", "a")) is not None
    assert ctrl.queue.pending(("default", "b")) is None and ctrl.queue.pending(("default", "c")) is None
    sim.run(until=10.0)
    live = sim.store.get("Pod", "default", "p")
    assert live is not None
    sim.store.update({**live, "metadata": {**live["metadata"], "labels": {"app": "b"}}}, actor="t")
    assert ctrl.queue.pending(("default", "a")) is not None  # it loses the pod
    assert ctrl.queue.pending(("default", "b")) is not None  # it gains it
    assert ctrl.queue.pending(("default", "c")) is None
    sim.run(until=15.0)
    eps = {n: sim.store.get("Endpoints", "default", n) for n in ("a", "b")}
    assert "subsets" not in eps["a"]  # type: ignore[operator]
    assert eps["b"]["subsets"][0]["addresses"][0]["ip"] == "10.244.0.5"  # type: ignore[index]
