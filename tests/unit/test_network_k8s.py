"""Kubernetes NetworkPolicy semantics the netpol-analyzer scenarios do not isolate: policyTypes
defaults, namespace scoping, DNS once egress is isolated, ipBlock, the API server DNAT caveat,
Services followed to their endpoints. Sources: kubernetes/api networking/v1/types.go and
kubernetes/website content/en/docs/concepts/services-networking/network-policies.md."""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.cluster.network import (
    ClusterView,
    CniConfig,
    ContainerPort,
    Dns,
    External,
    FqdnTarget,
    IpTarget,
    KubeApiServer,
    Pod,
    PodsTarget,
    Service,
    ServicePort,
    ServiceTarget,
    World,
    evaluate,
)

CLIENT = Pod("app", "client", {"app": "client"}, "10.244.1.10")
WEB = Pod("app", "web", {"app": "web"}, "10.244.1.11", ports=(ContainerPort("http", 8080),))
DB = Pod("data", "db", {"app": "db"}, "10.244.2.10", ports=(ContainerPort("pg", 5432),))
CLUSTER = ClusterView.default(
    namespaces={"app": {"env": "prod"}, "data": {"env": "prod"}},
    pods=(CLIENT, WEB, DB),
    services=(Service("app", "web", "10.96.10.10", (ServicePort(80, "http"),), {"app": "web"}),),
    dns_records={"example.com": ("93.184.216.34",)},
)
K8S = CniConfig(type="kubernetes")


def np(name: str, ns: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


CLIENT_SEL = {"matchLabels": {"app": "client"}}
DENY_EGRESS = np("deny-egress", "app", {"podSelector": CLIENT_SEL, "policyTypes": ["Egress"]})
# The common DNS rule (obs: aws/aws-network-policy-agent#230; network-policies.md caution).
ALLOW_DNS = np(
    "allow-dns",
    "app",
    {
        "podSelector": CLIENT_SEL,
        "policyTypes": ["Egress"],
        "egress": [
            {
                "to": [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                        },
                        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                    }
                ],
                "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
            }
        ],
    },
)


def check(policies, target, *, source=CLIENT, cni=K8S):
    return evaluate(source, target, policies, CLUSTER, cni)


def test_ingress_only_policy_does_not_isolate_egress():
    # types.go: policyTypes unset → Ingress, plus Egress only with an egress section.
    pol = np("ingress", "app", {"podSelector": CLIENT_SEL, "ingress": [{}]})
    assert check([pol], World()).allowed


def test_egress_section_without_policy_types_isolates_egress():
    pol = np("egress", "app", {"podSelector": CLIENT_SEL, "egress": [{"ports": [{"port": 443}]}]})
    assert check([pol], World(443)).allowed
    v = check([pol], World(80))
    assert not v.allowed and v.decided_by == ("NetworkPolicy app/egress",)


def test_empty_egress_list_does_not_imply_egress_type():
    pol = np("egress", "app", {"podSelector": CLIENT_SEL, "egress": []})
    assert check([pol], World()).allowed


def test_deny_all_egress_blocks_dns_and_apiserver():
    for target in (Dns("UDP"), Dns("TCP"), KubeApiServer()):
        v = check([DENY_EGRESS], target)
        assert not v.allowed
        assert "egress-isolated by NetworkPolicy app/deny-egress" in v.reason


def test_dns_rule_allows_both_protocols_once_egress_is_isolated():
    assert check([ALLOW_DNS], Dns("UDP")).allowed
    assert check([ALLOW_DNS], Dns("TCP")).allowed
    # ...but nothing else: the API server still needs its own rule.
    assert not check([ALLOW_DNS], KubeApiServer()).allowed


def test_dns_udp_only_rule_leaves_tcp_blocked():
    spec = {
        **ALLOW_DNS["spec"],
        "egress": [{**ALLOW_DNS["spec"]["egress"][0], "ports": [{"port": 53, "protocol": "UDP"}]}],
    }
    pol = np("udp-dns", "app", spec)
    assert check([pol], Dns("UDP")).allowed
    assert not check([pol], Dns("TCP")).allowed


def test_fqdn_target_needs_dns_first():
    allow_world = np(
        "world",
        "app",
        {
            "podSelector": CLIENT_SEL,
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}],
        },
    )
    v = check([allow_world], FqdnTarget("example.com", 443))
    assert not v.allowed and v.lookup == "example.com"
    assert v.reason.startswith("lookup of example.com failed")
    assert check([allow_world, ALLOW_DNS], FqdnTarget("example.com", 443)).allowed


@pytest.mark.parametrize(
    "peer,allowed",
    [
        # podSelector alone: pods of the policy's namespace only (types.go NetworkPolicyPeer).
        ({"podSelector": {"matchLabels": {"app": "db"}}}, False),
        # namespaceSelector AND podSelector in one element.
        (
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "data"}},
                "podSelector": {"matchLabels": {"app": "db"}},
            },
            True,
        ),
        (
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "data"}},
                "podSelector": {"matchLabels": {"app": "web"}},
            },
            False,
        ),
        # namespaceSelector alone: every pod of the selected namespaces.
        ({"namespaceSelector": {"matchLabels": {"env": "prod"}}}, True),
        (
            {
                "namespaceSelector": {
                    "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]
                }
            },
            False,
        ),
        ({"namespaceSelector": {}}, True),
        # ipBlock never selects pods (netpol-analyzer and Cilium semantics).
        ({"ipBlock": {"cidr": "10.0.0.0/8"}}, False),
    ],
)
def test_egress_peer_selection(peer, allowed):
    pol = np(
        "to-db",
        "app",
        {"podSelector": CLIENT_SEL, "policyTypes": ["Egress"], "egress": [{"to": [peer]}]},
    )
    assert check([pol], PodsTarget("data", {"app": "db"}, 5432)).allowed is allowed


def test_separate_peer_elements_are_or():
    pol = np(
        "or",
        "app",
        {
            "podSelector": CLIENT_SEL,
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": "nope"}
                            }
                        },
                        {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": "data"}
                            }
                        },
                    ]
                }
            ],
        },
    )
    assert check([pol], PodsTarget("data", {"app": "db"}, 5432)).allowed


def test_rules_of_all_selecting_policies_are_unioned():
    a = np(
        "a",
        "app",
        {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 80}]}]},
    )
    b = np(
        "b",
        "app",
        {
            "podSelector": CLIENT_SEL,
            "policyTypes": ["Egress"],
            "egress": [{"ports": [{"port": 443}]}],
        },
    )
    assert check([a, b], World(80)).allowed
    assert check([a, b], World(443)).allowed
    v = check([a, b], World(22))
    assert not v.allowed and set(v.decided_by) == {"NetworkPolicy app/a", "NetworkPolicy app/b"}


def test_ipblock_except_and_protocol():
    pol = np(
        "cidr",
        "app",
        {
            "podSelector": CLIENT_SEL,
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": "203.0.113.0/24", "except": ["203.0.113.128/25"]}}],
                    "ports": [{"port": 5000, "endPort": 5010, "protocol": "UDP"}],
                }
            ],
        },
    )
    assert check([pol], IpTarget("203.0.113.5", 5005, "UDP")).allowed
    assert not check([pol], IpTarget("203.0.113.200", 5005, "UDP")).allowed
    assert not check([pol], IpTarget("203.0.113.5", 5011, "UDP")).allowed
    assert not check([pol], IpTarget("203.0.113.5", 5005, "TCP")).allowed


def test_cidr_target_needs_every_address():
    pol = np(
        "cidr",
        "app",
        {
            "podSelector": CLIENT_SEL,
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [{"ipBlock": {"cidr": "203.0.113.0/24", "except": ["203.0.113.128/25"]}}]}
            ],
        },
    )
    assert check([pol], IpTarget("203.0.113.0/25", 443)).allowed
    v = check([pol], IpTarget("203.0.113.0/24", 443))
    assert not v.allowed and "203.0.113.128" in v.reason


def test_apiserver_clusterip_ipblock_does_not_match():
    # network-policies.md DNAT caveat: policy sees <control-plane IP>:6443, not 10.96.0.1:443.
    pol = np(
        "api",
        "app",
        {
            "podSelector": CLIENT_SEL,
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": "10.96.0.1/32"}}], "ports": [{"port": 443}]}],
        },
    )
    v = check([pol], KubeApiServer())
    assert not v.allowed
    assert "post-DNAT endpoint 172.18.0.2:6443" in v.reason
    assert v.dial == "10.96.0.1:443"


def test_apiserver_node_ip_and_6443_matches():
    # network-policies.md hostNetwork section: allow the endpoint IPs and port 6443.
    pol = np(
        "api",
        "app",
        {
            "podSelector": CLIENT_SEL,
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": "172.18.0.2/32"}}], "ports": [{"port": 6443}]}],
        },
    )
    assert check([pol], KubeApiServer()).allowed
    # Same through the Service by name (ServiceTarget default/kubernetes).
    assert check([pol], ServiceTarget("default", "kubernetes", 443)).allowed


def test_pod_selectors_cannot_select_the_apiserver():
    pol = np(
        "api",
        "app",
        {
            "podSelector": CLIENT_SEL,
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [{"namespaceSelector": {}}], "ports": [{"port": 443}, {"port": 6443}]}
            ],
        },
    )
    assert not check([pol], KubeApiServer()).allowed


def test_ingress_isolation_on_the_destination():
    deny_in = np("deny-in", "data", {"podSelector": {}})
    v = check([deny_in], PodsTarget("data", {"app": "db"}, 5432))
    assert not v.allowed
    assert v.reason.startswith("ingress to data/db from app/client denied")
    allow = np(
        "allow-client",
        "data",
        {
            "podSelector": {"matchLabels": {"app": "db"}},
            "ingress": [
                {
                    "from": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": "app"}
                            },
                            "podSelector": CLIENT_SEL,
                        }
                    ],
                    "ports": [{"port": "pg"}],
                }
            ],
        },
    )
    v = check([deny_in, allow], PodsTarget("data", {"app": "db"}, 5432))
    assert v.allowed and v.decided_by == ("NetworkPolicy data/allow-client",)


def test_service_is_checked_at_its_backends_target_port():
    pol = np(
        "web-in",
        "app",
        {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [{"ports": [{"port": 8080}]}]},
    )
    v = check([pol], ServiceTarget("app", "web", 80))
    assert v.allowed and v.dial == "10.96.10.10:80"
    pol80 = np(
        "web-in",
        "app",
        {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [{"ports": [{"port": 80}]}]},
    )
    assert not check([pol80], ServiceTarget("app", "web", 80)).allowed
    # The ClusterIP dialled directly is the same Service.
    assert check([pol], IpTarget("10.96.10.10", 80)).allowed


def test_external_source_ingress():
    pol = np(
        "web-in",
        "app",
        {
            "podSelector": {"matchLabels": {"app": "web"}},
            "ingress": [{"from": [{"ipBlock": {"cidr": "198.51.100.0/24"}}]}],
        },
    )
    assert check(
        [pol], PodsTarget("app", {"app": "web"}, 8080), source=External("198.51.100.1")
    ).allowed
    assert not check(
        [pol], PodsTarget("app", {"app": "web"}, 8080), source=External("192.0.2.1")
    ).allowed


def test_a_pod_may_always_reach_itself():
    assert check([DENY_EGRESS], PodsTarget("app", {"app": "client"}, 80)).allowed


def test_missing_service_and_pods():
    v = check([], ServiceTarget("app", "nope", 80))
    assert not v.allowed and v.cause == "not-found"
    v = check([], FqdnTarget("nope.app.svc.cluster.local", 80))
    assert not v.allowed and v.cause == "not-found" and v.lookup == "nope.app.svc.cluster.local"
    v = check([], PodsTarget("app", {"app": "ghost"}, 80))
    assert not v.allowed and v.cause == "not-found"


def test_in_cluster_name_resolves_to_the_service():
    v = check(
        [
            ALLOW_DNS,
            np(
                "web",
                "app",
                {
                    "podSelector": CLIENT_SEL,
                    "policyTypes": ["Egress"],
                    "egress": [{"ports": [{"port": 8080}]}],
                },
            ),
        ],
        FqdnTarget("web.app.svc.cluster.local", 80),
    )
    assert v.allowed and v.dial == "10.96.10.10:80"


def test_a_name_dot_namespace_is_searched_as_the_service_first():
    # a pod's resolver tries web.app.svc.cluster.local before web.app (kubernetes
    # pkg/kubelet/network/dns/dns.go: search <ns>.svc.<domain> svc.<domain> <domain>, ndots:5)
    allow_web = np(
        "web",
        "app",
        {"podSelector": CLIENT_SEL, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 8080}]}]},
    )
    v = check([ALLOW_DNS], FqdnTarget("web.app", 80))
    assert not v.allowed and v.dial == "10.96.10.10:80" and "app/web" in v.reason
    v = check([ALLOW_DNS, allow_web], FqdnTarget("web.app", 80))
    assert v.allowed and v.dial == "10.96.10.10:80"
    # no Service web in namespace data: the absolute name, outside the cluster, as before
    allow_all = np("all", "app", {"podSelector": CLIENT_SEL, "policyTypes": ["Egress"], "egress": [{}]})
    v = check([allow_all], FqdnTarget("web.data", 80))
    assert v.allowed and v.dial == "web.data:80"
    # an address outside the cluster has no search list
    v = check([], FqdnTarget("web.app", 80), source=External("203.0.113.9"))
    assert v.dial == "web.app:80"
