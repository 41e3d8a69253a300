"""The behaviour model: inferred needs, run time, wait loops, kubectl apply, annotations, overrides."""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.cluster.behaviour import (
    KERNEL_CONNECT_TIMEOUT,
    BehaviourContext,
    BehaviourOverride,
    Need,
    WaitLoop,
    model_pod,
    needs_summary,
    parse_need,
    parse_wait_loop,
)
from helmsim.errors import InputError

NS = "kagent"


def _pod(
    *,
    owner: str | None = "Job",
    ann: dict[str, str] | None = None,
    sa: str = "migrate",
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    volumes: list[dict[str, Any]] | None = None,
    policy: str = "Never",
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "migrate-abc",
        "namespace": NS,
        "labels": {"app": "migrate"},
        "annotations": ann or {},
    }
    if owner:
        meta["ownerReferences"] = [
            {"kind": owner, "name": "migrate", "controller": True, "uid": "u"}
        ]
    spec: dict[str, Any] = {
        "serviceAccountName": sa,
        "restartPolicy": policy,
        "containers": containers or [{"name": "main", "image": "migrate:1"}],
    }
    if init:
        spec["initContainers"] = init
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _cnp(egress: list[dict[str, Any]], selector: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": "migrate", "namespace": NS},
        "spec": {
            "endpointSelector": selector or {"matchLabels": {"app": "migrate"}},
            "egress": egress,
        },
    }


ROLE_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "RoleBinding",
    "metadata": {"name": "migrate", "namespace": NS},
    "roleRef": {"kind": "Role", "name": "migrate"},
    "subjects": [{"kind": "ServiceAccount", "name": "migrate"}],
}
# The Role it binds (examples/seed1-migrate-race templates/agent-manager/migrate-rbac.yaml): a
# binding to a Role nothing holds grants nothing.
MIGRATE_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "Role",
    "metadata": {"name": "migrate", "namespace": NS},
    "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create"]}],
}

# The seed-1 policy: DNS through kube-dns with a DNS rule, the API server, GitHub and a registry.
SEED_CNP = _cnp(
    [
        {
            "toEndpoints": [
                {
                    "matchLabels": {
                        "k8s:io.kubernetes.pod.namespace": "kube-system",
                        "k8s:k8s-app": "kube-dns",
                    }
                }
            ],
            "toPorts": [
                {
                    "ports": [{"port": "53", "protocol": "ANY"}],
                    "rules": {"dns": [{"matchPattern": "*"}]},
                }
            ],
        },
        {"toEntities": ["kube-apiserver"]},
        {
            "toFQDNs": [{"matchName": "api.github.com"}, {"matchName": "ghcr.io"}],
            "toPorts": [{"ports": [{"port": "443", "protocol": "TCP"}]}],
        },
        {"toEntities": ["world"]},
    ]
)


def test_seed_job_needs_what_its_policy_grants_plus_rbac() -> None:
    model = model_pod(_pod(), BehaviourContext(policies=[SEED_CNP], bindings=[ROLE_BINDING], roles=[MIGRATE_ROLE]))
    main = model.container("main")
    assert needs_summary(main) == "kube-apiserver, dns, api.github.com:443, ghcr.io:443"
    assert main.run_seconds == 5 and main.exit_code == 0 and main.connect_timeout == 30
    assert main.notes[0] == (
        "talks to the API server: ServiceAccount migrate is bound to Role migrate by RoleBinding migrate"
    )
    assert (
        "needs api.github.com:443: CiliumNetworkPolicy kagent/migrate allows toFQDNs api.github.com"
        in main.notes
    )
    assert any(n.startswith("runs 5 s then exits 0 (assumption for Job pods)") for n in main.notes)


def test_nothing_granted_needs_nothing() -> None:
    main = model_pod(_pod(), BehaviourContext()).container("main")
    assert main.needs == ()
    assert "needs nothing on the network (no policy grants egress, no RBAC binding)" in main.notes


@pytest.mark.parametrize(
    ("binding", "bound"),
    [
        (ROLE_BINDING, True),
        (
            {**ROLE_BINDING, "metadata": {"name": "x", "namespace": "other"}},
            False,
        ),  # other namespace
        ({**ROLE_BINDING, "subjects": [{"kind": "ServiceAccount", "name": "default"}]}, False),
        (
            {
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "crb"},
                "roleRef": {"kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "ServiceAccount", "name": "migrate", "namespace": NS}],
            },
            True,
        ),
        (
            {
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "crb"},
                "roleRef": {"kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "ServiceAccount", "name": "migrate"}],
            },
            False,
        ),  # no namespace: no match
    ],
)
def test_rbac_binding_implies_the_apiserver(binding: dict[str, Any], bound: bool) -> None:
    main = model_pod(_pod(), BehaviourContext(bindings=[binding], roles=[MIGRATE_ROLE])).container("main")
    assert (Need("kube-apiserver") in main.needs) is bound


def _account(automount: bool | None) -> dict[str, Any]:
    sa: dict[str, Any] = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "migrate", "namespace": NS}}
    if automount is not None:
        sa["automountServiceAccountToken"] = automount
    return sa


_TOKEN_VOLUME = {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}


@pytest.mark.parametrize(
    ("pod_automount", "account_automount", "volumes", "bound"),
    [
        (None, None, None, True),  # the admission plugin mounts the token by default
        (False, None, None, False),  # bitnami/mongodb arbiter: the pod opts out
        (None, False, None, False),  # the account opts out and the pod says nothing
        (True, False, None, True),  # the pod's field wins over the account's
        (False, None, [_TOKEN_VOLUME], True),  # a token the pod projects itself
    ],
)
def test_a_binding_is_a_need_only_for_a_pod_holding_the_token(
    pod_automount: bool | None, account_automount: bool | None, volumes: list[dict[str, Any]] | None, bound: bool
) -> None:
    # kubernetes plugin/pkg/admission/serviceaccount/admission.go shouldAutomount
    pod = _pod(volumes=volumes)
    if pod_automount is not None:
        pod["spec"]["automountServiceAccountToken"] = pod_automount
    ctx = BehaviourContext(bindings=[ROLE_BINDING], roles=[MIGRATE_ROLE], service_accounts=[_account(account_automount)])
    main = model_pod(pod, ctx).container("main")
    assert (Need("kube-apiserver") in main.needs) is bound
    if not bound:
        assert (
            "ServiceAccount migrate is bound to Role migrate by RoleBinding migrate, but the pod mounts no "
            "token of it (automountServiceAccountToken: false): not a need"
        ) in main.notes


def test_network_policy_peers_become_needs() -> None:
    np = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "np", "namespace": NS},
        "spec": {
            "podSelector": {"matchLabels": {"app": "migrate"}},
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [{"ipBlock": {"cidr": "172.18.0.2/32"}}], "ports": [{"port": 6443}]},
                {
                    "to": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                            },
                            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                        }
                    ],
                    "ports": [{"port": 53, "protocol": "UDP"}],
                },
                {
                    "to": [{"podSelector": {"matchLabels": {"app": "db"}}}],
                    "ports": [{"port": 5432}],
                },
                {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}], "ports": [{"port": 8443}]},
                {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]},
            ],
        },
    }
    db = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "db", "namespace": NS},
        "spec": {"selector": {"app": "db"}, "ports": [{"port": 5432}]},
    }
    other = {
        **np,
        "metadata": {"name": "other", "namespace": NS},
        "spec": {
            "podSelector": {"matchLabels": {"app": "web"}},
            "egress": [{"to": [{"ipBlock": {"cidr": "1.2.3.4/32"}}]}],
        },
    }
    main = model_pod(_pod(), BehaviourContext(policies=[np, other], services=[db])).container(
        "main"
    )
    assert needs_summary(main) == "kube-apiserver, dns, svc/kagent/db:5432, 10.20.0.0/16:8443"


def test_cilium_cidr_on_the_apiserver_endpoint_and_to_services() -> None:
    cnp = _cnp(
        [
            {"toCIDR": ["172.18.0.2/32"]},
            {
                "toServices": [{"k8sService": {"serviceName": "api", "namespace": "x"}}],
                "toPorts": [{"ports": [{"port": "8080"}]}],
            },
        ]
    )
    main = model_pod(_pod(), BehaviourContext(policies=[cnp])).container("main")
    assert needs_summary(main) == "kube-apiserver, dns, svc/x/api:8080"


def test_policy_selecting_other_pods_grants_nothing() -> None:
    cnp = _cnp([{"toEntities": ["kube-apiserver"]}], selector={"matchLabels": {"app": "web"}})
    ccnp = {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumClusterwideNetworkPolicy",
        "metadata": {"name": "all"},
        "spec": {"endpointSelector": {}, "egress": [{"toFQDNs": [{"matchName": "example.com"}]}]},
    }
    main = model_pod(_pod(), BehaviourContext(policies=[cnp, ccnp])).container("main")
    assert needs_summary(main) == "dns, example.com:443"


def test_deployment_pods_run_forever_bare_pods_by_restart_policy() -> None:
    assert (
        model_pod(_pod(owner="ReplicaSet"), BehaviourContext()).container("main").run_seconds
        is None
    )
    assert (
        model_pod(_pod(owner=None, policy="Always"), BehaviourContext())
        .container("main")
        .run_seconds
        is None
    )
    assert (
        model_pod(_pod(owner=None, policy="OnFailure"), BehaviourContext())
        .container("main")
        .run_seconds
        == 5
    )


def test_annotations_override_everything_inferred() -> None:
    ann = {
        "helmsim.dev/needs": "kube-apiserver, dns,api.github.com:443, svc/db:5432",
        "helmsim.dev/run-seconds": "1m30s",
        "helmsim.dev/exit-code": "3",
        "helmsim.dev/connect-timeout-seconds": "32",
    }
    main = model_pod(_pod(ann=ann), BehaviourContext(bindings=[ROLE_BINDING])).container("main")
    assert needs_summary(main) == "kube-apiserver, dns, api.github.com:443, svc/kagent/db:5432"
    assert (main.run_seconds, main.exit_code, main.connect_timeout) == (90, 3, 32)
    assert (
        main.notes[-1]
        == "gives up a connection after 32 s (annotation helmsim.dev/connect-timeout-seconds)"
    )


def test_forced_exit_on_a_long_running_pod_runs_the_default_time_first() -> None:
    main = model_pod(
        _pod(owner="ReplicaSet", ann={"helmsim.dev/exit-code": "1"}), BehaviourContext()
    ).container("main")
    assert (main.run_seconds, main.exit_code) == (5, 1)


@pytest.mark.parametrize(
    ("ann", "error"),
    [
        ({"helmsim.dev/needs": "github"}, "is not kube-apiserver, dns, host:port"),
        ({"helmsim.dev/exit-code": "-1"}, "is not an exit code 0-255"),
        ({"helmsim.dev/run-seconds": "soon"}, "is not a number of seconds or a duration"),
    ],
)
def test_bad_annotations_are_input_errors(ann: dict[str, str], error: str) -> None:
    with pytest.raises(InputError, match=error) as err:
        model_pod(_pod(ann=ann), BehaviourContext())
    assert "Pod kagent/migrate-abc" in err.value.message


def test_scenario_overrides_win_and_match_by_glob() -> None:
    ctx = BehaviourContext(
        overrides=[
            BehaviourOverride(
                owner="Job/migr*", container="main", needs=("kube-apiserver",), exit_code=2
            ),
            BehaviourOverride(owner="Job/other", run_seconds=99),
        ]
    )
    main = model_pod(_pod(ann={"helmsim.dev/exit-code": "1"}), ctx).container("main")
    assert main.needs == (Need("kube-apiserver"),) and main.exit_code == 2 and main.run_seconds == 5
    assert main.notes[-1] == "exits 2 (scenario override)"


@pytest.mark.parametrize(
    ("text", "need"),
    [
        ("kube-apiserver", Need("kube-apiserver")),
        ("dns", Need("dns")),
        ("api.github.com:443", Need("fqdn", "api.github.com", 443)),
        ("svc/db:5432", Need("service", "kagent/db", 5432)),
        ("svc/data/db:5432", Need("service", "data/db", 5432)),
        ("10.0.0.0/8:443", Need("cidr", "10.0.0.0/8", 443)),
        ("10.1.2.3:80", Need("cidr", "10.1.2.3/32", 80)),
        ("db.data.svc.cluster.local:5432", Need("service", "data/db", 5432)),
        ("kubernetes.default.svc:443", Need("kube-apiserver")),
    ],
)
def test_parse_need(text: str, need: Need) -> None:
    assert parse_need(text, namespace=NS) == need


@pytest.mark.parametrize(
    ("script", "loop"),
    [
        (
            "until kubectl get --raw /version; do sleep 2; done",
            WaitLoop(Need("kube-apiserver"), 2.0, 30.0, None),
        ),
        (
            "timeout 120 sh -c 'until kubectl get --raw /version >/dev/null 2>&1; do sleep 5; done'",
            WaitLoop(Need("kube-apiserver"), 5.0, 30.0, 120.0),
        ),
        (
            "until nc -z postgres 5432; do echo waiting; sleep 1; done",
            WaitLoop(Need("service", "kagent/postgres", 5432), 1.0, KERNEL_CONNECT_TIMEOUT, None),
        ),
        (
            "until nc -z -w 3 db.data.svc.cluster.local 5432; do sleep 2; done",
            WaitLoop(Need("service", "data/db", 5432), 2.0, 3.0, None),
        ),
        (
            "while ! wget -q -T 5 -O- http://api:8080/healthz; do sleep 3; done",
            WaitLoop(Need("service", "kagent/api", 8080), 3.0, 5.0, None),
        ),
        (
            "timeout 1m sh -c 'until curl -sf https://api.github.com/zen; do sleep 10; done'",
            WaitLoop(Need("fqdn", "api.github.com", 443), 10.0, KERNEL_CONNECT_TIMEOUT, 60.0),
        ),
    ],
)
def test_wait_loops(script: str, loop: WaitLoop) -> None:
    got, sentence = parse_wait_loop(script, NS)
    assert got == loop
    assert sentence.startswith(f"waits for {loop.target}")


def test_not_a_wait_loop() -> None:
    assert parse_wait_loop("echo hello; sleep 3", NS) == (None, "")
    assert parse_wait_loop("until [ -f /tmp/ready ]; do sleep 1; done", NS) == (None, "")


def test_init_container_wait_loop_from_command_and_args() -> None:
    init = [
        {
            "name": "wait-api",
            "image": "bitnami/kubectl",
            "command": ["sh", "-c"],
            "args": ["timeout 90 sh -c 'until kubectl get --raw /version; do sleep 2; done'"],
        }
    ]
    model = model_pod(_pod(init=init), BehaviourContext())
    wait = model.container("wait-api")
    assert wait.init and wait.wait == WaitLoop(Need("kube-apiserver"), 2.0, 30.0, 90.0)
    assert (
        wait.notes[0]
        == "waits for kube-apiserver (polls `kubectl get --raw /version`, every 2 s, gives up after 90 s (timeout exits 124))"
    )
    assert list(model.containers) == ["wait-api", "main"]


HEREDOC = """set -e
kubectl apply --server-side -f - <<'EOF'
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: hf-cache
spec:
  accessModes: [ReadWriteOnce]
EOF
echo done
"""


@pytest.mark.parametrize(
    "script",
    [
        HEREDOC,
        "cat <<EOF | kubectl apply -f -\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: hf-cache\nEOF\n",
        """echo '{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"hf-cache"}}' | kubectl apply --server-side --force-conflicts -f -""",
    ],
)
def test_kubectl_apply_inline(script: str) -> None:
    containers = [{"name": "main", "image": "kubectl", "command": ["/bin/sh", "-c", script]}]
    main = model_pod(_pod(containers=containers), BehaviourContext()).container("main")
    (obj,) = main.applies
    assert obj["kind"] == "PersistentVolumeClaim" and obj["metadata"] == {
        "name": "hf-cache",
        "namespace": NS,
    }
    assert main.needs[0] == Need("kube-apiserver")
    assert any(
        n.startswith("applies PersistentVolumeClaim kagent/hf-cache from an inline manifest")
        for n in main.notes
    )


def test_kubectl_apply_of_a_mounted_config_map_file() -> None:
    containers = [
        {
            "name": "main",
            "image": "kubectl",
            "command": ["kubectl", "apply", "-f", "/manifests/claim.yaml"],
            "volumeMounts": [{"name": "m", "mountPath": "/manifests"}],
        }
    ]
    volumes = [{"name": "m", "configMap": {"name": "hooks"}}]
    data = {
        "claim.yaml": "kind: PersistentVolumeClaim\napiVersion: v1\nmetadata: {name: hf-cache, namespace: serving}\n",
        "other.yaml": "kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n",
    }
    ctx = BehaviourContext(config_maps={(NS, "hooks"): data})
    main = model_pod(_pod(containers=containers, volumes=volumes), ctx).container("main")
    assert [(o["kind"], o["metadata"]["namespace"]) for o in main.applies] == [
        ("PersistentVolumeClaim", "serving")
    ]
    assert "(ConfigMap hooks key claim.yaml)" in next(
        n for n in main.notes if n.startswith("applies")
    )
    # a directory applies every file
    containers[0]["command"] = ["kubectl", "apply", "-f", "/manifests"]
    main = model_pod(_pod(containers=containers, volumes=volumes), ctx).container("main")
    assert sorted(o["kind"] for o in main.applies) == ["ConfigMap", "PersistentVolumeClaim"]


def test_invalid_inline_manifest_is_noted_not_fatal() -> None:
    containers = [
        {
            "name": "main",
            "image": "k",
            "command": ["sh", "-c", "echo '{oops: [' | kubectl apply -f -"],
        }
    ]
    main = model_pod(_pod(containers=containers), BehaviourContext()).container("main")
    assert main.applies == ()
    assert any("not valid YAML or JSON" in n for n in main.notes)


def test_kubectl_request_timeout_bounds_each_probe_of_a_wait_loop() -> None:
    from helmsim.cluster.behaviour import parse_wait_loop

    script = "until kubectl get --raw /version --request-timeout=5s >/dev/null; do sleep 2; done"
    loop, _ = parse_wait_loop(script, namespace="kagent", cluster_domain="cluster.local")
    assert loop is not None and loop.probe_timeout == 5.0 and loop.interval == 2.0
    loop, _ = parse_wait_loop(script.replace("=5s", " 7"), namespace="kagent", cluster_domain="cluster.local")
    assert loop is not None and loop.probe_timeout == 7.0


def test_shell_variables_holding_a_manifest_are_expanded() -> None:
    from helmsim.cluster.behaviour import expand_simple_vars

    script = "claim='{\"kind\":\"PersistentVolumeClaim\"}'\nprintf '%s\\n' \"$claim\" | kubectl apply -f -\necho ${claim}x $claimed"
    out = expand_simple_vars(script)
    assert "printf '%s\\n' '{\"kind\":\"PersistentVolumeClaim\"}' | kubectl apply -f -" in out
    assert "$claimed" in out  # a longer name is not touched


def _egress_policy(egress: list[dict[str, Any]]) -> dict[str, Any]:
    """A NetworkPolicy ``kc`` of the migrate pods with these egress rules."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "kc", "namespace": NS},
        "spec": {"podSelector": {"matchLabels": {"app": "migrate"}}, "policyTypes": ["Egress"], "egress": egress},
    }


def test_a_policy_port_becomes_the_service_port_leading_to_it() -> None:
    # bitnami/keycloak templates/networkpolicy.yaml: egress to its own pods on 8080 (HTTP, the
    # Service's port 80 leads there) and 7800 (JGroups, pod to pod: no Service port leads there);
    # bitnami/rabbitmq: amqps 5671 listed while the Service does not serve it
    np = _egress_policy(
        [{"to": [{"podSelector": {"matchLabels": {"app": "kc"}}}], "ports": [{"port": 8080}, {"port": 7800}, {"port": 5671}]}]
    )
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kc", "namespace": NS},
        "spec": {"selector": {"app": "kc"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}, {"name": "amqp", "port": 5672}]},
    }
    named = {**svc, "metadata": {"name": "kc-named", "namespace": NS}, "spec": {**svc["spec"], "ports": [{"port": 9000, "targetPort": "http"}]}}
    main = model_pod(_pod(), BehaviourContext(policies=[np], services=[svc, named])).container("main")
    services = [str(n) for n in main.needs if n.kind == "service"]
    # a named targetPort of pods the release does not hold may lead to any of the policy's ports: kept
    assert services == [f"svc/{NS}/kc:80", f"svc/{NS}/kc-named:9000"]


@pytest.mark.parametrize(
    ("ports", "expected"),
    [
        # kubernetes pkg/api/v1/pod/util.go FindPort: the name resolves on the pods behind it
        ((("http", 8080),), [f"svc/{NS}/kc-named:9000"]),
        ((("http", 9090),), []),  # the name leads to another port than the policy's
        ((("jgroups", 7800),), []),  # bitnami/cassandra: a tls port no container declares
    ],
)
def test_a_named_target_port_resolves_on_the_release_pods_behind_the_service(
    ports: tuple[tuple[str, int], ...], expected: list[str]
) -> None:
    np = _egress_policy([{"to": [{"podSelector": {"matchLabels": {"app": "kc"}}}], "ports": [{"port": 8080}]}])
    named = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kc-named", "namespace": NS},
        "spec": {"selector": {"app": "kc"}, "ports": [{"port": 9000, "targetPort": "http"}]},
    }
    ctx = BehaviourContext(policies=[np], services=[named], pod_templates=((NS, {"app": "kc"}, ports),))
    main = model_pod(_pod(), ctx).container("main")
    assert [str(n) for n in main.needs if n.kind == "service"] == expected


# bitnami/charts bitnami/superset templates/_helpers.tpl superset.initContainers.waitForDB / waitForRedis
_WAIT_FOR_DB = """set -o errexit
. /opt/bitnami/scripts/libpostgresql.sh
check_postgresql_connection() {
    echo "SELECT 1" | postgresql_remote_execute "$DB_HOST" "$DB_PORT" "$DB_NAME" "$DB_USER" "$DB_PASSWORD"
}
info "Connecting to the PostgreSQL instance $DB_HOST:$DB_PORT"
if ! retry_while "check_postgresql_connection"; then
    error "Could not connect to the database server"
    exit 1
fi
"""
_WAIT_FOR_REDIS = """check_redis_connection() {
    local result="$(redis-cli -h ${REDIS_HOST} -p ${REDIS_PORT_NUMBER} -a ${REDIS_PASSWORD} PING)"
    if [[ "$result" != "PONG" ]]; then
    false
    fi
}
if ! retry_while "check_redis_connection" 6 10; then
    error "Could not connect to the Redis server"
    exit 1
fi
"""


@pytest.mark.parametrize(
    ("script", "env", "loop"),
    [
        (
            _WAIT_FOR_DB,
            {"DB_HOST": "pg", "DB_PORT": "5432"},
            WaitLoop(Need("service", f"{NS}/pg", 5432), 5.0, KERNEL_CONNECT_TIMEOUT, 60.0, exit_code=1,
                     gave_up="Could not connect to the database server"),
        ),
        (
            _WAIT_FOR_REDIS,
            {"REDIS_HOST": "cache.ops", "REDIS_PORT_NUMBER": "6380"},
            WaitLoop(Need("service", "ops/cache", 6380), 10.0, KERNEL_CONNECT_TIMEOUT, 60.0, exit_code=1,
                     gave_up="Could not connect to the Redis server"),
        ),
        (  # argo-cd writes the host and port into the script itself
            _WAIT_FOR_REDIS.replace("${REDIS_HOST}", "argocd-redis").replace("${REDIS_PORT_NUMBER}", "6379"),
            {},
            WaitLoop(Need("service", f"{NS}/argocd-redis", 6379), 10.0, KERNEL_CONNECT_TIMEOUT, 60.0, exit_code=1,
                     gave_up="Could not connect to the Redis server"),
        ),
    ],
)
def test_bitnami_retry_while_waits_then_exits_1(script: str, env: dict[str, str], loop: WaitLoop) -> None:
    services = {(NS, "pg"), ("ops", "cache"), (NS, "argocd-redis")}
    got, sentence = parse_wait_loop(script, NS, services=services, env=env)
    assert got == loop
    assert sentence.startswith(f"waits for {loop.target} (retry_while check_")
    assert sentence.endswith(f"then exit 1 after {loop.bound:g} s)")


@pytest.mark.parametrize(
    "script",
    [
        _WAIT_FOR_DB,  # the host is in no literal variable: not guessed
        'check_x() {\n  airflow db check\n}\nretry_while "check_x"\n',  # no probe of a peer in the function
        'retry_while "check_missing"\n',  # a function defined elsewhere
    ],
)
def test_retry_while_without_a_readable_peer_is_no_wait_loop(script: str) -> None:
    # no loop is guessed, and the reason is given, for the image's note
    fn = "check_missing" if "check_missing" in script else script.split('retry_while "', 1)[1].split('"', 1)[0]
    assert parse_wait_loop(script, NS, env={}) == (
        None,
        f"runs retry_while {fn}, whose peer could not be read from the script: not modelled",
    )


# bitnami/charts bitnami/milvus templates/_helpers.tpl milvus.waitForETCDInitContainer (abridged)
_MILVUS = """retry_while() {
  local -r cmd="${1:?cmd is missing}"
  read -r -a command <<< "$cmd"
  for ((i = 1 ; i <= retries ; i+=1 )); do
      "${command[@]}" && return_value=0 && break
  done
}
etcd_hosts=(
  "http://milvus-etcd:2379"
)
check_etcd() {
    local -r etcd_host="${1:-?missing etcd}"
    local params_cert=""
    if echo $etcd_host | grep https; then
       params_cert="--cacert /c/ca.crt"
    fi
    if curl --max-time 5 "${etcd_host}/version" $params_cert | grep etcdcluster; then
       return 0
    else
       return 1
    fi
}
for host in "${etcd_hosts[@]}"; do
    if retry_while "check_etcd $host"; then
        echo "Connected to $host"
    fi
done
"""


def test_retry_while_reads_a_peer_of_a_looped_array() -> None:
    got, sentence = parse_wait_loop(_MILVUS, NS, services={(NS, "milvus-etcd")}, env={})
    assert got is not None and str(got.target) == f"svc/{NS}/milvus-etcd:2379" and got.also == ()
    assert got.probe_timeout == 5.0  # curl --max-time 5
    assert sentence.startswith(f"waits for svc/{NS}/milvus-etcd:2379 (retry_while check_etcd: polls `curl --max-time 5")


# bitnami/charts bitnami/mlflow templates/_helpers.tpl mlflow.v0.waitForServiceInitContainer
_CHECK_HOST = """retry_while() {
  local -r cmd="${1:?cmd is missing}"
  local -r retries="${2:-12}"
}
check_host() {
    local -r host="${1:-?missing host}"
    local -r port="${2:-?missing port}"
    if wait-for-port --timeout=5 --host=${host} --state=inuse $port ; then
       return 0
    else
       return 1
    fi
}
if ! retry_while "check_host mlflow-postgresql 5432"; then
    echo "Connection error"
    exit 1
fi
"""


def test_retry_while_passes_its_arguments_to_the_check_function() -> None:
    got, sentence = parse_wait_loop(_CHECK_HOST, NS, services={(NS, "mlflow-postgresql")}, env={})
    assert got == WaitLoop(Need("service", f"{NS}/mlflow-postgresql", 5432), 5.0, 5.0, 60.0, exit_code=1)
    assert "retry_while check_host: `wait-for-port`" in sentence


# bitnami/charts bitnami/zipkin templates/_init_containers.tpl zipkin.waitForCassandraInitContainer
_ZIPKIN = """. /opt/bitnami/scripts/libos.sh
check_cassandra_keyspace_schema() {
    echo "SELECT 1" | cqlsh -u $CASSANDRA_USERNAME -p $CASSANDRA_PASSWORD -e "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name='${CASSANDRA_KEYSPACE}';"
}
info "Connecting to the Cassandra instance $CQLSH_HOST:$CQLSH_PORT"
if ! retry_while "check_cassandra_keyspace_schema" 12 30; then
    error "Could not connect to the database server"
    exit 1
fi
"""


def test_retry_while_over_cqlsh_reads_its_host_from_the_environment() -> None:
    env = {"CQLSH_HOST": "zipkin-cassandra", "CQLSH_PORT": "9042", "CASSANDRA_USERNAME": "bn_zipkin"}
    got, sentence = parse_wait_loop(_ZIPKIN, NS, services={(NS, "zipkin-cassandra")}, env=env)
    assert got is not None and str(got.target) == f"svc/{NS}/zipkin-cassandra:9042"
    assert (got.interval, got.bound, got.probe_timeout, got.gave_up) == (30.0, 360.0, 5.0, "Could not connect to the database server")
    assert sentence.endswith("12 tries 30 s apart, then exit 1 after 360 s)")
    # positional host and port win over the environment; without either, cqlsh dials 127.0.0.1:9042
    args = _ZIPKIN.replace("cqlsh -u", "cqlsh --connect-timeout=2 cass.data 9142 -u")
    got, _ = parse_wait_loop(args, NS, services={("data", "cass")}, env=env)
    assert got is not None and (str(got.target), got.probe_timeout) == ("svc/data/cass:9142", 2.0)
    got, _ = parse_wait_loop(_ZIPKIN, NS, env={})
    assert got is not None and (got.target.kind, str(got.target)) == ("loopback", "127.0.0.1:9042")  # the pod itself
