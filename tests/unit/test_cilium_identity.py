"""The pure evaluator's Cilium identity rules: the label filter before selector matching, and the
kube-apiserver label on each API server backend."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from helmsim.cluster.network import ClusterView, CniConfig, KubeApiServer, Node, Pod, evaluate
from helmsim.cluster.network.labelfilter import DEFAULT_FILTER, LabelFilter

ALWAYS = CniConfig("cilium", "always")
JOB = Pod(
    "kagent",
    "migrate-abc",
    {"app.kubernetes.io/name": "migrate", "app.kubernetes.io/component": "migrate", "pod-template-hash": "123"},
    "192.168.1.5",
    "worker-a",
)
CPS = (
    Node("cp-a", "10.0.1.20", True),
    Node("cp-b", "10.0.2.20", True),
    Node("cp-c", "10.0.3.20", True),
    Node("worker-a", "10.0.1.100"),
)


def cnp(selector: dict[str, str], egress: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": "migrate", "namespace": "kagent"},
        "spec": {"endpointSelector": {"matchLabels": selector}, "egress": egress},
    }


TO_API = cnp({"app.kubernetes.io/component": "migrate"}, [{"toEntities": ["kube-apiserver"]}])


def view(**kw: Any) -> ClusterView:
    return replace(ClusterView.default(pods=(JOB,), nodes=CPS), **kw)


def test_the_default_filter_keeps_app_kubernetes_io_labels() -> None:
    assert evaluate(JOB, KubeApiServer(), [TO_API], view(), ALWAYS).allowed


def test_a_filter_that_drops_the_selected_label_leaves_the_pod_unselected() -> None:
    filtered = view(label_filter=LabelFilter.build(["k8s:!app.kubernetes.io/component"]))
    v = evaluate(JOB, KubeApiServer(), [TO_API], filtered, ALWAYS)
    assert not v.allowed
    assert "policyEnforcementMode=always and no policy allows it" in v.reason


def test_the_default_filter_drops_pod_template_hash_so_selecting_on_it_selects_nothing() -> None:
    on_hash = cnp({"pod-template-hash": "123"}, [{"toEntities": ["kube-apiserver"]}])
    assert not DEFAULT_FILTER.keeps("pod-template-hash")
    assert not evaluate(JOB, KubeApiServer(), [on_hash], view(), ALWAYS).allowed


def test_a_whitelist_keeps_the_default_inclusive_prefixes() -> None:
    # filter.go ParseLabelPrefixCfg appends user prefixes to the defaults: app.kubernetes.io stays
    f = LabelFilter.build(["k8s:app"])
    assert f.whitelist and f.keeps("app.kubernetes.io/component") and f.keeps("app")
    assert not f.keeps("team") and not f.keeps("io.cilium.k8s.policy.serviceaccount")


def test_each_backend_is_checked_alone_when_the_balancer_picked_it() -> None:
    unlabelled = view(apiserver_unlabelled=frozenset({"10.0.2.20"}))
    assert evaluate(JOB, KubeApiServer("10.0.1.20"), [TO_API], unlabelled, ALWAYS).allowed
    v = evaluate(JOB, KubeApiServer("10.0.2.20"), [TO_API], unlabelled, ALWAYS)
    assert not v.allowed
    assert "10.0.2.20 is without the kube-apiserver identity label: its identity is remote-node only" in v.reason
    # no backend picked: every one must be allowed
    v = evaluate(JOB, KubeApiServer(), [TO_API], unlabelled, ALWAYS)
    assert not v.allowed and "[1 of 3 endpoints denied]" in v.reason


def test_an_unlabelled_backend_is_still_a_remote_node() -> None:
    to_nodes = cnp({"app.kubernetes.io/component": "migrate"}, [{"toEntities": ["remote-node"]}])
    unlabelled = view(apiserver_unlabelled=frozenset({"10.0.1.20", "10.0.2.20", "10.0.3.20"}))
    assert evaluate(JOB, KubeApiServer("10.0.3.20"), [to_nodes], unlabelled, ALWAYS).allowed
    assert not evaluate(JOB, KubeApiServer("10.0.3.20"), [TO_API], unlabelled, ALWAYS).allowed


def test_an_api_server_outside_the_cluster_is_world_with_the_kube_apiserver_label() -> None:
    managed = ClusterView.default(
        pods=(JOB,), nodes=(Node("worker-a", "10.0.1.100"), Node("kube-apiserver", "20.62.0.10", True, external=True))
    )

    def allowed(egress: list[dict[str, Any]]) -> bool:
        return evaluate(JOB, KubeApiServer(), [cnp({"app.kubernetes.io/component": "migrate"}, egress)], managed, ALWAYS).allowed

    assert allowed([{"toEntities": ["kube-apiserver"]}])
    assert allowed([{"toEntities": ["world"]}])
    assert allowed([{"toCIDR": ["20.62.0.10/32"]}])  # CIDR rules select peers without a cluster identity
    assert not allowed([{"toEntities": ["cluster"]}])
    assert not allowed([{"toEntities": ["remote-node"]}])
