"""The evaluator's public surface: target syntax, client error texts, bad input, CNI config."""

from __future__ import annotations

import pytest

from helmsim.cluster.network import (
    ClusterView,
    CniConfig,
    Dns,
    FqdnTarget,
    IpTarget,
    KubeApiServer,
    Pod,
    PodsTarget,
    PolicySet,
    ServiceTarget,
    World,
    client_error_text,
    evaluate,
    parse_target,
)
from helmsim.errors import InputError

JOB = Pod("kagent", "x-migrate-7f9", {"app": "x-migrate"}, "10.244.0.7", "worker")
CLUSTER = ClusterView.default(pods=(JOB,))
ALWAYS = CniConfig(type="cilium", policy_enforcement_mode="always")
X_MIGRATE = {
    "apiVersion": "cilium.io/v2",
    "kind": "CiliumNetworkPolicy",
    "metadata": {"name": "x-migrate", "namespace": "kagent"},
    "spec": {
        "endpointSelector": {"matchLabels": {"app": "x-migrate"}},
        "egress": [{"toEntities": ["kube-apiserver"]}],
    },
}


@pytest.mark.parametrize(
    "text,target",
    [
        ("kube-apiserver", KubeApiServer()),
        ("dns", Dns("UDP")),
        ("dns/tcp", Dns("TCP")),
        ("world", World()),
        ("world:80", World(80, "TCP")),
        ("api.github.com:443", FqdnTarget("api.github.com", 443, "TCP")),
        ("web.app.svc.cluster.local:80", FqdnTarget("web.app.svc.cluster.local", 80, "TCP")),
        ("10.0.0.5:5432", IpTarget("10.0.0.5", 5432, "TCP")),
        ("10.0.0.0/8:53/udp", IpTarget("10.0.0.0/8", 53, "UDP")),
        ("[2001:db8::1]:443", IpTarget("2001:db8::1", 443, "TCP")),
        ("service:app/web:http", ServiceTarget("app", "web", "http")),
        ("service:app/web:80", ServiceTarget("app", "web", 80)),
    ],
)
def test_parse_target(text, target):
    assert parse_target(text) == target


def test_parse_pods_target():
    t = parse_target("pods:data/app=db,tier=x:5432/tcp")
    assert isinstance(t, PodsTarget)
    assert (t.namespace, dict(t.labels), t.port, t.protocol) == (
        "data",
        {"app": "db", "tier": "x"},
        5432,
        "TCP",
    )
    assert parse_target("pods:*/app=db:5432").namespace is None


@pytest.mark.parametrize(
    "text",
    ["api.github.com", "host:99999", "host:80/icmp", "service:app:80", "pods:data/app:80", ":80"],
)
def test_parse_target_rejects_bad_text(text):
    with pytest.raises(InputError) as err:
        parse_target(text)
    assert repr(text) in str(err.value)


def test_seed_shape_job_denied_before_its_policy_then_allowed():
    """Seed 1: under cilium `always`, a Job's apiserver call fails until its CNP is in effect."""
    before = evaluate(JOB, KubeApiServer(), [], CLUSTER, ALWAYS)
    assert not before.allowed
    assert before.reason == (
        "egress to kube-apiserver denied: cilium policyEnforcementMode=always "
        "and no policy allows it"
    )
    assert client_error_text(before) == "dial tcp 10.96.0.1:443: i/o timeout"
    assert client_error_text(before, kubectl=True) == (
        "Unable to connect to the server: dial tcp 10.96.0.1:443: i/o timeout"
    )
    after = evaluate(JOB, KubeApiServer(), [X_MIGRATE], CLUSTER, ALWAYS)
    assert after.allowed
    assert after.reason == (
        "allowed by CiliumNetworkPolicy kagent/x-migrate egress rule 1 (toEntities kube-apiserver)"
    )
    assert after.decided_by == ("CiliumNetworkPolicy kagent/x-migrate",)
    # Under `default` nothing selects the Job before the policy: nothing is denied.
    assert evaluate(JOB, KubeApiServer(), [], CLUSTER, CniConfig("cilium", "default")).allowed


def test_dns_timeout_text():
    v = evaluate(JOB, FqdnTarget("api.github.com", 443), [X_MIGRATE], CLUSTER, ALWAYS)
    assert not v.allowed and v.lookup == "api.github.com"
    assert client_error_text(v, source_ip="10.244.0.7", source_port=51234) == (
        "lookup api.github.com on 10.96.0.10:53: "
        "read udp 10.244.0.7:51234->10.96.0.10:53: i/o timeout"
    )


def test_client_error_text_refuses_allowed_verdicts():
    v = evaluate(JOB, KubeApiServer(), [X_MIGRATE], CLUSTER, ALWAYS)
    with pytest.raises(ValueError):
        client_error_text(v)


def test_policy_set_is_reusable_and_equivalent_to_raw_dicts():
    ps = PolicySet.from_manifests([X_MIGRATE, {"kind": "ConfigMap", "metadata": {"name": "x"}}])
    assert len(ps) == 1
    for _ in range(3):
        assert evaluate(JOB, KubeApiServer(), ps, CLUSTER, ALWAYS) == evaluate(
            JOB, KubeApiServer(), [X_MIGRATE], CLUSTER, ALWAYS
        )


@pytest.mark.parametrize(
    "doc,fragment",
    [
        (
            {
                "kind": "NetworkPolicy",
                "metadata": {"name": "bad", "namespace": "a"},
                "spec": {"podSelector": {}, "policyTypes": ["Sideways"]},
            },
            "NetworkPolicy a/bad",
        ),
        (
            {
                "kind": "NetworkPolicy",
                "metadata": {"name": "bad", "namespace": "a"},
                "spec": {
                    "podSelector": {},
                    "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}],
                },
            },
            "10.0.0.0/33",
        ),
        (
            {
                "kind": "NetworkPolicy",
                "metadata": {"name": "bad", "namespace": "a"},
                "spec": {"podSelector": {"matchExpressions": [{"key": "x", "operator": "Maybe"}]}},
            },
            "Maybe",
        ),
        (
            {
                "kind": "CiliumNetworkPolicy",
                "metadata": {"name": "bad", "namespace": "a"},
                "spec": {"endpointSelector": {}, "egress": [{"toEntities": ["internet"]}]},
            },
            "internet",
        ),
        (
            {
                "kind": "CiliumNetworkPolicy",
                "metadata": {"name": "bad", "namespace": "a"},
                "spec": {},
            },
            "CiliumNetworkPolicy a/bad",
        ),
        (
            {
                "kind": "CiliumClusterwideNetworkPolicy",
                "metadata": {"name": "bad"},
                "spec": {"endpointSelector": {}, "egress": [{"toFQDNs": [{}]}]},
            },
            "matchName or matchPattern",
        ),
    ],
)
def test_malformed_policies_raise_input_error(doc, fragment):
    with pytest.raises(InputError) as err:
        PolicySet.from_manifests([doc])
    assert fragment in str(err.value)


def test_cni_config_from_profile_mapping():
    cni = CniConfig.from_mapping(
        {
            "type": "cilium",
            "policyEnforcementMode": "always",
            "policyPropagationSeconds": 2,
            "policyCIDRMatchMode": ["nodes"],
        }
    )
    assert (cni.type, cni.policy_enforcement_mode, cni.policy_cidr_match_mode) == (
        "cilium",
        "always",
        "nodes",
    )
    with pytest.raises(InputError):
        CniConfig.from_mapping({"type": "calico"})
    with pytest.raises(InputError):
        CniConfig.from_mapping({"type": "cilium", "policyEnforcementMode": "strict"})


def test_partial_endpoints_are_reported():
    # A policy allowing only one CoreDNS replica: lookups can land on the other one.
    one = {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": "one-dns", "namespace": "kagent"},
        "spec": {
            "endpointSelector": {},
            "egress": [
                {"toCIDR": ["0.0.0.0/0"]},
                {
                    "toEndpoints": [
                        {
                            "matchLabels": {
                                "io.kubernetes.pod.namespace": "kube-system",
                                "k8s-app": "kube-dns",
                            },
                            "matchExpressions": [
                                {
                                    "key": "k8s:io.cilium.k8s.policy.serviceaccount",
                                    "operator": "Exists",
                                }
                            ],
                        }
                    ]
                },
            ],
        },
    }
    v = evaluate(JOB, Dns(), [one], CLUSTER, CniConfig("cilium", "default"))
    assert v.allowed
    pinned = ClusterView.default(
        pods=(JOB, Pod("kube-system", "coredns-02", {"k8s-app": "kube-dns"}, "10.244.0.9"))
    )
    cnp = {
        **one,
        "spec": {
            **one["spec"],
            "egress": [
                {
                    "toEndpoints": [
                        {
                            "matchLabels": {
                                "io.kubernetes.pod.namespace": "kube-system",
                                "io.cilium.k8s.policy.serviceaccount": "coredns",
                            }
                        }
                    ]
                }
            ],
        },
    }
    v = evaluate(JOB, Dns(), [cnp], pinned, CniConfig("cilium", "default"))
    assert not v.allowed and "[1 of 3 endpoints denied]" in v.reason
