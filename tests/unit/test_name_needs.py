"""How a host name a pod dials becomes a need (behaviour._name_need), and that every source of
needs applies the rule: a two-label ``name.ns`` is the Service ``name`` of namespace ``ns`` when
the simulation knows it (the pod's resolver tries ``name.ns.svc.<domain>`` first: kubernetes
pkg/kubelet/network/dns/dns.go search list, ``ndots:5``), else an external name."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helmsim.cluster.behaviour import (
    BehaviourContext,
    Need,
    _name_need,
    endpoint_service,
    env_peers,
    model_pod,
    parse_need,
    parse_wait_loop,
    search_service,
)

NS = "apps"
KNOWN = frozenset({("ops", "db"), ("apps", "web")})


@pytest.mark.parametrize(
    ("host", "services", "need"),
    [
        ("db", KNOWN, Need("service", "apps/db", 5432)),  # a single label: the pod's namespace
        ("db", frozenset(), Need("service", "apps/db", 5432)),
        ("db.ops", KNOWN, Need("service", "ops/db", 5432)),  # the Service exists
        ("DB.Ops", KNOWN, Need("service", "ops/db", 5432)),
        ("db.ops", frozenset(), Need("fqdn", "db.ops", 5432)),  # no such Service: external
        ("db.other", KNOWN, Need("fqdn", "db.other", 5432)),
        ("db.ops.svc", KNOWN, Need("service", "ops/db", 5432)),
        ("db.ops.svc", frozenset(), Need("service", "ops/db", 5432)),
        ("db.ops.svc.cluster.local", frozenset(), Need("service", "ops/db", 5432)),
        ("db.ops.svc.cluster.local.", frozenset(), Need("service", "ops/db", 5432)),
        ("example.com", KNOWN, Need("fqdn", "example.com", 5432)),
        ("example.com", frozenset({("com", "example")}), Need("service", "com/example", 5432)),
        ("api.example.com", KNOWN, Need("fqdn", "api.example.com", 5432)),
        ("kubernetes.default", KNOWN, Need("kube-apiserver")),
        # a pod's name under its headless Service (coredns plugin/kubernetes parse.go
        # <endpoint>.<service>.<namespace>.svc.<zone>): the pods behind that Service
        ("zk-0.zk-hs.ops.svc.cluster.local", frozenset({("ops", "zk-hs")}), Need("service", "ops/zk-hs", 5432)),
        ("zk-0.zk-hs.ops.svc", frozenset({("ops", "zk-hs")}), Need("service", "ops/zk-hs", 5432)),
        ("zk-0.zk-hs.ops", frozenset({("ops", "zk-hs")}), Need("service", "ops/zk-hs", 5432)),
        ("zk-0.zk-hs", frozenset({("apps", "zk-hs")}), Need("service", "apps/zk-hs", 5432)),
        ("zk-0.zk-hs.ops.svc.cluster.local", frozenset(), Need("fqdn", "zk-0.zk-hs.ops.svc", 5432)),
        ("zk-0.zk-hs", frozenset({("ops", "zk-hs")}), Need("fqdn", "zk-0.zk-hs", 5432)),  # not the pod's namespace
        # a Service of another namespace wins over an endpoint name in the pod's (helmsim does
        # not know which Services have endpoint hostnames)
        ("db.ops", frozenset({("ops", "db"), ("apps", "ops")}), Need("service", "ops/db", 5432)),
    ],
)
def test_name_rule(host: str, services: frozenset[tuple[str, str]], need: Need) -> None:
    # example.com with a Service `example` in a namespace `com`: the search list finds it first,
    # as it would in a real pod (ndots:5)
    assert _name_need(host, 5432, NS, "cluster.local", services) == need


def test_name_rule_with_another_cluster_domain() -> None:
    assert _name_need("db.ops.svc.corp.internal", 1, NS, "corp.internal") == Need("service", "ops/db", 1)
    assert _name_need("db.ops", 1, NS, "corp.internal", KNOWN) == Need("service", "ops/db", 1)


_label = st.text(alphabet="abcdefgh0-", min_size=1, max_size=6).filter(
    lambda s: s[0] != "-" and s[-1] != "-"
)
_host = st.lists(_label, min_size=1, max_size=6).map(".".join)
_services = st.frozensets(st.tuples(_label, _label), max_size=4)


@given(_host, st.integers(1, 65535), _label, _services)
def test_name_need_properties(host: str, port: int, namespace: str, services: frozenset[tuple[str, str]]) -> None:
    need = _name_need(host, port, namespace, "cluster.local", services)
    labels = host.split(".")
    # an endpoint name under a known (headless) Service: <pod>.<svc>[.<ns>[.svc]]
    endpoint = endpoint_service(labels, namespace, services)
    # without Services known the rule is the one it always was
    before = _name_need(host, port, namespace, "cluster.local")
    if len(labels) != 2 and endpoint is None:
        assert need == before
    if need.kind == "service":
        ns, name = need.host.split("/", 1)
        assert need.port == port
        if len(labels) == 2 and host not in ("kubernetes.default",):
            # a name.ns is a known Service, or a pod's name under a known Service of the pod's namespace
            assert (ns, name) in services
            assert (ns, name) == (labels[1], labels[0]) or (ns, name) == (namespace, labels[1])
        elif endpoint is not None and not (len(labels) == 3 and labels[2] == "svc"):
            assert (ns, name) == endpoint and name == labels[1]
        else:
            assert name == labels[0]
    elif need.kind == "fqdn":
        assert need.host == host and need.port == port
        assert search_service(host, services) is None and endpoint is None
    else:
        assert need == Need("kube-apiserver")
    if len(labels) == 2 and (labels[1], labels[0]) in services and host != "kubernetes.default":
        assert need == Need("service", f"{labels[1]}/{labels[0]}", port)


@given(_host, _services)
def test_search_service_needs_two_labels_and_a_known_service(host: str, services: frozenset[tuple[str, str]]) -> None:
    labels = host.split(".")
    ref = search_service(host, services)
    assert ref == ((labels[1], labels[0]) if len(labels) == 2 and (labels[1], labels[0]) in services else None)


def _svc(ns: str, name: str, port: int = 5432) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": {"app": name}, "ports": [{"port": port}]},
    }


CTX = BehaviourContext(services=[_svc("ops", "db"), _svc("cache", "redis-master", 6379)])


@pytest.mark.parametrize(
    ("env", "needs"),
    [
        ({"DATABASE_URL": "postgres://app@db.ops:5432/app"}, [Need("service", "ops/db", 5432)]),
        ({"DATABASE_URL": "postgres://app@db.ops/app"}, [Need("service", "ops/db", 5432)]),
        # JDBC URLs (bitnami keycloak KC_DB_URL; a SQL Server one ends its host at ';')
        ({"KC_DB_URL": "jdbc:postgresql://db.ops:5432/bitnami_keycloak"}, [Need("service", "ops/db", 5432)]),
        ({"KC_DB_URL": "jdbc:postgresql://db.ops/keycloak?ssl=true"}, [Need("service", "ops/db", 5432)]),
        ({"DB_URL": "jdbc:sqlserver://db.ops:1433;databaseName=app"}, [Need("service", "ops/db", 1433)]),
        ({"REDIS_HOST": "redis-master.cache"}, [Need("service", "cache/redis-master", 6379)]),
        ({"REDIS": "redis-master.cache:6379"}, [Need("service", "cache/redis-master", 6379)]),
        ({"DATABASE_URL": "postgres://app@db.elsewhere:5432/app"}, []),  # no such Service
        ({"API_URL": "https://api.example.com/v1"}, []),
        # a connection string of members: one need per Service they are behind
        ({"ZK": "db-0.db.ops.svc.cluster.local:2181,db-1.db.ops.svc.cluster.local:2181"}, [Need("service", "ops/db", 2181)]),
        ({"HOSTS": "db.ops:5432;redis-master.cache:6379"}, [Need("service", "ops/db", 5432), Need("service", "cache/redis-master", 6379)]),
        ({"HOSTS": "db.ops:5432,not a host"}, []),  # not every item is host:port
    ],
)
def test_env_names_a_service_of_another_namespace(env: dict[str, str], needs: list[Need]) -> None:
    got, notes = env_peers(env, NS, CTX)
    assert got == needs
    assert len(notes) == len(needs)


def _pod(**spec: Any) -> dict[str, Any]:
    meta = spec.pop("metadata", {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "app", "namespace": NS, **meta},
        "spec": {"restartPolicy": "Always", "containers": [{"name": "app", "image": "app:1"}], **spec},
    }


def test_every_source_of_needs_applies_the_rule() -> None:
    # annotation helmsim.dev/needs
    pod = _pod(metadata={"annotations": {"helmsim.dev/needs": "db.ops:5432, db.elsewhere:5432"}})
    app = model_pod(pod, CTX).container("app")
    assert app.needs == (Need("service", "ops/db", 5432), Need("fqdn", "db.elsewhere", 5432))
    assert parse_need("db.ops:5432", namespace=NS, services=CTX.services_by_name(NS)) == Need("service", "ops/db", 5432)
    assert parse_need("db.ops:5432", namespace=NS) == Need("fqdn", "db.ops", 5432)
    # an init container's wait loop
    wait, sentence = parse_wait_loop("until nc -z db.ops 5432; do sleep 2; done", NS, services=KNOWN)
    assert wait is not None and wait.target == Need("service", "ops/db", 5432)
    assert sentence.startswith("waits for svc/ops/db:5432")
    init = {"name": "wait-db", "image": "busybox:1.36", "command": ["sh", "-c", "until nc -z db.ops 5432; do sleep 2; done"]}
    model = model_pod(_pod(initContainers=[init]), CTX)
    got = model.container("wait-db").wait
    assert got is not None and got.target == Need("service", "ops/db", 5432)
    # the environment of the main container
    env = [{"name": "DATABASE_URL", "value": "postgres://app@db.ops:5432/app"}]
    main = model_pod(_pod(containers=[{"name": "app", "image": "app:1", "env": env}]), CTX).container("app")
    assert Need("service", "ops/db", 5432) in main.needs


@pytest.mark.parametrize(
    ("text", "need"),
    [
        ("https://sso.example.com/realms/corp", Need("fqdn", "sso.example.com", 443)),
        ("http://keycloak:8080/realms/x", Need("service", "apps/keycloak", 8080)),
        ("https://kc.auth.svc:8443", Need("service", "auth/kc", 8443)),
        ("http://db.ops/", Need("service", "ops/db", 80)),  # a known Service of another namespace
        ("https://x.example.com?x=1", Need("fqdn", "x.example.com", 443)),
        # Kafka listener URLs (bitnami libschemaregistry.sh: [_a-zA-Z]*://(host):(port))
        ("PLAINTEXT://web-0.web.apps.svc.cluster.local:9092", Need("service", "apps/web", 9092)),
        ("SASL_SSL://broker.example.com:9093", Need("fqdn", "broker.example.com", 9093)),
        ("PLAINTEXT://127.0.0.1:9092", Need("loopback", "127.0.0.1", 9092)),
        ("localhost:5432", Need("loopback", "localhost", 5432)),
    ],
)
def test_a_url_need_is_its_host_and_port(text: str, need: Need) -> None:
    assert parse_need(text, namespace=NS, services=KNOWN) == need
