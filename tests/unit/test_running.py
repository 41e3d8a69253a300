"""Running containers: denied needs, probes that depend on the process, catalog programs.

Each test builds a whole simulated cluster of a built-in profile, creates objects as Helm would
and reads pod statuses the way ``kubectl get pods`` shows them (helmsim.kube.pods). Times are
simulated seconds; the kubelet's back-off is client-go's (first restart at once, then 10 s,
20 s, 40 s … capped at 300 s), the dial timeout client-go's 30 s.
"""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.cluster.cluster import build_cluster
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile
from helmsim.kube.pods import kubectl_columns

NS = "ops"


def _sim(profile: str, *objs: dict[str, Any]) -> Simulation:
    sim = build_cluster(load_profile(profile), namespaces=[NS], release_objects=list(objs))
    for obj in objs:
        sim.store.create(obj, actor="helm")
    return sim


def _rbac(sa: str = "op") -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": NS}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": sa},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
                # kube-webhook-certgen creates its Secret (ingress-nginx job-patch/role.yaml)
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": sa},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": sa},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": NS}],
        },
    ]


def _template(container: dict[str, Any], *, sa: str = "op", policy: str = "Always") -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "op"}},
        "spec": {"serviceAccountName": sa, "restartPolicy": policy, "containers": [container]},
    }


OPERATOR = {
    "name": "op",
    "image": "example.com/op:1.0",
    "ports": [{"name": "probes", "containerPort": 8081}],
    "readinessProbe": {"httpGet": {"path": "/readyz", "port": "probes"}},
}


def _workload(kind: str, container: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "op"}}, "template": _template(container)}
    if kind in ("Deployment", "StatefulSet"):
        spec["replicas"] = 1
    if kind == "StatefulSet":
        spec["serviceName"] = "op"
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "op", "namespace": NS}, "spec": spec}


def _pods(sim: Simulation) -> list[dict[str, Any]]:
    return [p for p in sim.store.list("Pod", NS) if p["metadata"]["name"].startswith("op")]


def _events(sim: Simulation, what: str, obj_prefix: str = f"Pod/{NS}/op") -> list[Any]:
    return [e for e in sim.trace if e.what == what and e.obj.startswith(obj_prefix)]


def _started(sim: Simulation, prefix: str = "op") -> list[float]:
    return [
        round(e.time, 2)
        for e in _events(sim, "event", f"Pod/{NS}/{prefix}")
        if e.data.get("reason") == "Started"
    ]


def _columns_at(sim: Simulation, times: list[float]) -> list[tuple[str, str, str]]:
    out = []
    for t in times:
        sim.run(until=t)
        pod = _pods(sim)[0]
        cols = kubectl_columns(pod, sim.datetime())
        out.append((cols.ready, cols.status, cols.restarts))
    return out


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet"])
def test_operator_denied_the_api_server_crash_loops_and_is_never_ready(kind: str) -> None:
    """cilium-always, no policy of its own: every run dials 10.96.0.1:443 for 30 s and exits 1;
    the kubelet restarts it at once, then after 10 s, 20 s, 40 s; its readiness probe fails
    while it is still connecting. The same for every workload kind."""
    sim = _sim("cilium-always", *_rbac(), _workload(kind, OPERATOR))
    sim.run(until=10)
    s1 = _started(sim)[0]
    cs = sim.latency("container_start")
    # run n+1 starts when run n exits (s + 30) + the back-off + container start
    expected = [s1]
    for backoff in (0, 10, 20, 40):
        expected.append(round(expected[-1] + 30 + backoff + cs, 2))
    columns = _columns_at(
        sim,
        [
            s1 + 20,  # first run, still dialing
            expected[1] + 5,  # second run (the first restart is immediate)
            expected[1] + 31,  # second run exited: back-off 10 s
            expected[3] + 5,  # fourth run
            expected[4] - 1,  # back-off 40 s before the fifth run
        ],
    )
    pod = _pods(sim)[0]
    waiting = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    sim.run(until=expected[4] + 1)
    assert _started(sim) == expected
    assert columns == [
        ("0/1", "Running", "0"),
        ("0/1", "Running", "1 (5s ago)"),
        ("0/1", "CrashLoopBackOff", "1 (1s ago)"),
        ("0/1", "Running", "3 (25s ago)"),  # since run 3 ended, 20 s back-off + start ago
        ("0/1", "CrashLoopBackOff", "3 (39s ago)"),
    ]
    pod = _pods(sim)[0]
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    exits = [(round(e.time, 2), e.data["exitCode"]) for e in _events(sim, "container-exited")]
    assert exits == [(round(t + 30, 2), 1) for t in expected[:4]]
    failed = _events(sim, "need-failed")
    assert {e.data["need"] for e in failed} == {"kube-apiserver"}
    assert failed[0].message == (
        "op: kube-apiserver failed (dial tcp 10.96.0.1:443: i/o timeout): the run ends with exit code 1"
    )
    logs = [e.data.get("line") for e in _events(sim, "container-log")]
    assert logs[0] == "Error: dial tcp 10.96.0.1:443: i/o timeout"
    backoffs = [e.message for e in _events(sim, "event") if e.data.get("reason") == "BackOff"]
    assert backoffs[0] == f"Back-off restarting failed container op in pod {name}_{NS}({uid})"
    ip = pod["status"]["podIP"]
    unhealthy = [e for e in _events(sim, "event") if e.data.get("reason") == "Unhealthy"]
    assert unhealthy[0].message == (
        f'Readiness probe failed: Get "http://{ip}:8081/readyz": dial tcp {ip}:8081: connect: connection refused'
    )
    assert round(unhealthy[0].time, 2) == round(s1 + 10, 2)  # the first probe, one period in
    ready = [
        c
        for e in sim.trace
        if e.what == "status" and e.obj == f"Pod/{NS}/{name}"
        for c in (e.data.get("conditions") or ())
        if c.get("type") == "Ready" and c.get("status") == "True"
    ]
    assert not ready and not pod["status"]["containerStatuses"][0]["ready"]
    assert waiting == {
        "reason": "CrashLoopBackOff",
        "message": f"back-off 40s restarting failed container=op pod={name}_{NS}({uid})",
    }
    assert pod["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1
    assumed = [e.message for e in sim.trace if e.what == "behaviour-assumed"]
    assert assumed == [
        "no behaviour known for image example.com/op:1.0: assumed to start and succeed (it runs until stopped)"
    ]


def test_without_a_readiness_probe_the_container_is_ready_while_it_runs() -> None:
    """The kubelet's default: no probe, ready when running — even while the process dials."""
    container = {k: v for k, v in OPERATOR.items() if k != "readinessProbe"}
    sim = _sim("cilium-always", *_rbac(), _workload("Deployment", container))
    sim.run(until=5)
    s1 = _started(sim)[0]
    assert _columns_at(sim, [s1 + 1, s1 + 30.2, s1 + 31]) == [
        ("1/1", "Running", "0"),
        ("0/1", "Error", "0"),  # exited at s1 + 30, restarted after the container start
        ("1/1", "Running", "1 (1s ago)"),
    ]


def test_allowed_by_its_policy_the_operator_is_ready_one_probe_period_after_it_connects() -> None:
    policy = {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": "op", "namespace": NS},
        "spec": {"endpointSelector": {"matchLabels": {"app": "op"}}, "egress": [{"toEntities": ["kube-apiserver"]}]},
    }
    sim = _sim("cilium-always", policy, *_rbac(), _workload("Deployment", OPERATOR))
    sim.run(until=60)
    s1 = _started(sim)[0]
    assert not _events(sim, "need-failed") and not _events(sim, "probe-failed")
    ready = [e for e in _events(sim, "status") if "container op ready" in e.message]
    assert [round(e.time, 2) for e in ready] == [round(s1 + 10, 2)]


def test_a_job_denied_the_api_server_fails_each_pod_at_the_dial_timeout() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "op", "namespace": NS},
        "spec": {"backoffLimit": 1, "template": _template({"name": "op", "image": "example.com/op:1.0"}, policy="Never")},
    }
    sim = _sim("cilium-always", *_rbac(), job)
    sim.run(until=300)
    exits = [(e.data["exitCode"], round(e.time - s, 2)) for e, s in zip(_events(sim, "container-exited"), _started(sim), strict=True)]
    assert exits == [(1, 30.0), (1, 30.0)]
    assert [e.data["reason"] for e in sim.trace.find(what="event", obj=f"Job/{NS}/op") if e.data.get("type") == "Warning"] == [
        "BackoffLimitExceeded"
    ]
    assert [kubectl_columns(p, sim.datetime()).status for p in _pods(sim)] == ["Error", "Error"]


# --- catalog programs ----------------------------------------------------------------------------

CHECK = {
    "name": "cert-manager-startupapicheck",
    "image": "quay.io/jetstack/cert-manager-startupapicheck:v1.16.0",
    "args": ["check", "api", "--wait=1m", "-v"],
}


def _job(name: str, container: dict[str, Any], *, policy: str = "OnFailure", backoff: int = 0, **pod: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "backoffLimit": backoff,
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"restartPolicy": policy, "containers": [container], **pod}},
        },
    }


def _crd(group: str, kind: str, plural: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": kind + "List"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}],
        },
    }


def _webhook_backend(ready: bool) -> list[dict[str, Any]]:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "cm-webhook", "namespace": NS},
        "spec": {"selector": {"app": "cm-webhook"}, "ports": [{"port": 443, "targetPort": 10250}]},
    }
    hook = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "cm-webhook"},
        "webhooks": [
            {
                "name": "webhook.cert-manager.io",
                "rules": [{"apiGroups": ["cert-manager.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["*/*"]}],
                "clientConfig": {"service": {"name": "cm-webhook", "namespace": NS, "path": "/mutate"}},
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
            }
        ],
    }
    out = [svc, hook]
    if ready:
        out.append(_workload("Deployment", {"name": "webhook", "image": "example.com/webhook:1"}))
        out[-1]["metadata"]["name"] = "cm-webhook"
        out[-1]["spec"]["selector"] = {"matchLabels": {"app": "cm-webhook"}}
        out[-1]["spec"]["template"]["metadata"]["labels"] = {"app": "cm-webhook"}
        out[-1]["spec"]["template"]["spec"]["serviceAccountName"] = "default"
    return out


def _logs(sim: Simulation, prefix: str) -> list[tuple[float, str]]:
    return [(round(e.time, 2), str(e.data.get("line"))) for e in _events(sim, "container-log", f"Pod/{NS}/{prefix}")]


def test_startupapicheck_without_the_cert_manager_crds_gives_up_after_its_wait() -> None:
    """`check api --wait=1m`: checks at 0, 5, … 65 s; at 65 s more than 1m has passed: exit 124."""
    sim = _sim("kind", _job("check", CHECK))
    sim.run(until=100)
    start = _started(sim, "check")[0]
    assert _logs(sim, "check") == [
        (
            round(start + 65, 2),
            '"error executing command" err="the cert-manager CRDs are not yet installed on the Kubernetes API server"',
        )
    ]
    exited = _events(sim, "container-exited", f"Pod/{NS}/check")
    assert [(round(e.time - start, 2), e.data["exitCode"]) for e in exited] == [(65.0, 124)]
    behaviour = [e.message for e in _events(sim, "behaviour", f"Pod/{NS}/check")]
    assert behaviour[0].startswith(
        "cert-manager-startupapicheck: behaviour from catalog entry cert-manager-startupapicheck "
        "(src/helmsim/catalog/cert-manager.yaml:5): "
    )
    assert not [e for e in sim.trace if e.what == "behaviour-assumed"]


@pytest.mark.parametrize(
    ("ready", "expected"),
    [
        (False, "the cert-manager webhook deployment is not ready yet"),
        (True, None),
    ],
)
def test_startupapicheck_with_the_crds_waits_for_a_ready_webhook(ready: bool, expected: str | None) -> None:
    crd = _crd("cert-manager.io", "CertificateRequest", "certificaterequests")
    sim = _sim("kind", crd, *_webhook_backend(ready), _job("check", CHECK))
    sim.run(until=120)
    waiting = [e.data["error"] for e in _events(sim, "program-waiting", f"Pod/{NS}/check")]
    exited = [e.data["exitCode"] for e in _events(sim, "container-exited", f"Pod/{NS}/check")]
    if expected is None:
        assert exited == [0]
        assert _logs(sim, "check")[-1][1] == "The cert-manager API is ready"
    else:
        assert waiting[-1] == expected and exited == [124]


def test_kubectl_wait_init_container_names_what_it_waited_for() -> None:
    """kubectl wait: NotFound ends it at once; an unmet condition at --timeout (30 s default)."""

    def waiter(target: str) -> dict[str, Any]:
        return {
            "name": "wait",
            "image": "bitnamilegacy/kubectl:1.31",
            "command": ["sh", "-c", f"kubectl wait --for=condition=Ready {target} -n {NS}"],
        }

    db = _workload("Deployment", {"name": "db", "image": "example.com/db:1"})
    db["metadata"]["name"] = "db"
    job_missing = _job("missing", {"name": "main", "image": "example.com/app:1"}, policy="Never", initContainers=[waiter("pod/nope")])
    job_slow = _job("slow", {"name": "main", "image": "example.com/app:1"}, policy="Never", initContainers=[waiter("pvc/data")])
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": NS},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    sim = _sim("kind", db, claim, job_missing, job_slow)
    sim.run(until=120)
    missing = _logs(sim, "missing")
    assert [line for _, line in missing] == ['Error from server (NotFound): pods "nope" not found']
    slow = _logs(sim, "slow")
    started = [e.time for e in _events(sim, "event", f"Pod/{NS}/slow") if e.data.get("reason") == "Started"]
    assert [(round(t - started[0], 2), line) for t, line in slow] == [
        (30.0, "error: timed out waiting for the condition on persistentvolumeclaims/data")
    ]


def test_wait_for_port_ends_at_once_when_its_host_does_not_resolve() -> None:
    init = {
        "name": "wait-db",
        "image": "bitnamilegacy/os-shell:12",
        "command": ["/bin/bash", "-ec", "wait-for-port --host=db --state=inuse --timeout=120 5432\necho ok"],
    }
    sim = _sim("kind", _job("w", {"name": "main", "image": "example.com/app:1"}, policy="Never", initContainers=[init]))
    sim.run(until=60)
    logs = [line for _, line in _logs(sim, "w")]
    assert logs == ["cannot resolve host 'db': dial tcp: lookup db.ops.svc.cluster.local on 10.96.0.10:53: no such host"]
    assert [e.data["exitCode"] for e in _events(sim, "container-exited", f"Pod/{NS}/w")] == [1]


def test_kube_webhook_certgen_create_makes_the_secret_and_patch_needs_its_configuration() -> None:
    sa = _rbac("certgen")
    image = "registry.k8s.io/ingress-nginx/kube-webhook-certgen:v1.6.9"
    env = [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]
    create = _job(
        "create",
        {"name": "create", "image": image, "args": ["create", "--host=x", "--namespace=$(POD_NAMESPACE)", "--secret-name=adm"], "env": env},
        serviceAccountName="certgen",
    )
    patch = _job(
        "patch",
        {
            "name": "patch",
            "image": image,
            "args": ["patch", "--webhook-name=adm", "--namespace=$(POD_NAMESPACE)", "--patch-mutating=false", "--secret-name=adm"],
            "env": env,
        },
        policy="Never",
        serviceAccountName="certgen",
    )
    sim = _sim("kind", *sa, create)
    sim.run(until=30)
    assert sim.store.get("Secret", NS, "adm") is not None
    assert [line for _, line in _logs(sim, "create")] == ['level=info msg="creating new secret"']
    sim.store.create(patch, actor="helm")
    sim.run(until=60)
    assert [line for _, line in _logs(sim, "patch")] == [
        'level=fatal msg="failed getting validating webhook" err="validatingwebhookconfigurations.admissionregistration.k8s.io \\"adm\\" not found"'
    ]


def test_ingress_nginx_controller_retries_with_exponential_backoff_then_exits_255() -> None:
    """wait.Backoff{Steps: 10, Duration: 1s, Factor: 1.5}: 10 dials of 30 s and 9 sleeps
    1 + 1.5 + … + 1.5^8 s = 74.887 s, then klog.Fatal exits 255."""
    controller = {
        "name": "controller",
        "image": "registry.k8s.io/ingress-nginx/controller:v1.12.0",
        "args": ["/nginx-ingress-controller"],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 10254}, "initialDelaySeconds": 10},
    }
    sim = _sim("cilium-always", *_rbac(), _workload("Deployment", controller))
    sim.run(until=420)
    start = _started(sim, "op")[0]
    exited = _events(sim, "container-exited")
    assert [(round(e.time - start, 3), e.data["exitCode"]) for e in exited] == [(374.887, 255)]
    first_run = [e for e in _events(sim, "program-waiting") if e.time < exited[0].time]
    assert len(first_run) == 1  # the same error each try: said once per run


def test_a_peer_named_by_env_is_needed_and_crash_loops_until_it_is_ready() -> None:
    """DATABASE_URL names Service db: the app dials it at start; while db has no ready pod the
    connection is refused at once (exit 1) and the kubelet's back-off paces the retries; once db
    is ready the next run connects and the app is ready one probe period later."""
    db_svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "db", "namespace": NS},
        "spec": {"selector": {"app": "db"}, "ports": [{"port": 5432}]},
    }
    db = _workload("Deployment", {"name": "db", "image": "example.com/db:16", "readinessProbe": {"exec": {"command": ["pg_isready"]}}, "startupProbe": {"exec": {"command": ["pg_isready"]}, "initialDelaySeconds": 30}})
    db["metadata"]["name"] = "db"
    db["spec"]["selector"] = {"matchLabels": {"app": "db"}}
    db["spec"]["template"]["metadata"]["labels"] = {"app": "db"}
    db["spec"]["template"]["spec"]["serviceAccountName"] = "default"
    app = _workload(
        "Deployment",
        {**OPERATOR, "env": [{"name": "DATABASE_URL", "value": "postgres://app@db:5432/app"}]},
    )
    app["spec"]["template"]["spec"]["serviceAccountName"] = "default"
    sim = _sim("kind", db_svc, db, app)
    sim.run(until=200)
    notes = [e.message for e in _events(sim, "behaviour") if "environment variable" in e.message]
    assert notes == ["op: needs svc/ops/db:5432: environment variable DATABASE_URL names it (assumed to connect at start)"]
    failed = _events(sim, "need-failed")
    ip = sim.store.get("Service", NS, "db")["spec"]["clusterIP"]  # type: ignore[index]
    assert failed and {e.data["error"] for e in failed} == {f"dial tcp {ip}:5432: connect: connection refused"}
    db_ready = next(e.time for e in _events(sim, "status", f"Pod/{NS}/db") if "container db ready" in e.message)
    op_ready = next(e.time for e in _events(sim, "status") if "container op ready" in e.message)
    assert op_ready > db_ready
    # the run that connected started after db was ready (a run before it was refused at once)
    starts = _started(sim)
    assert starts[-1] > db_ready and len(starts) == len(failed) + 1


def test_a_liveness_probe_of_a_process_still_connecting_gets_it_killed_first() -> None:
    """ingress-nginx's chart: liveness GET /healthz (initialDelaySeconds 10, periodSeconds 10,
    failureThreshold 5): the 5th failure, 60 s in, comes long before the controller's own
    give-up (375 s): the kubelet kills it (Killing: "Container controller failed liveness probe,
    will be restarted"), it exits 143 and restarts with the back-off."""
    probe = {"httpGet": {"path": "/healthz", "port": 10254}, "initialDelaySeconds": 10, "periodSeconds": 10}
    controller = {
        "name": "controller",
        "image": "registry.k8s.io/ingress-nginx/controller:v1.12.0",
        "args": ["/nginx-ingress-controller"],
        "readinessProbe": {**probe, "failureThreshold": 3},
        "livenessProbe": {**probe, "failureThreshold": 5},
    }
    sim = _sim("cilium-always", *_rbac(), _workload("Deployment", controller))
    sim.run(until=200)
    starts = _started(sim)
    exits = [(round(e.time - s, 2), e.data["exitCode"]) for e, s in zip(_events(sim, "container-exited"), starts, strict=False)]
    assert exits[:2] == [(60.0, 143), (60.0, 143)]
    killing = [e.message for e in _events(sim, "event") if e.data.get("reason") == "Killing"]
    assert killing[0] == "Container controller failed liveness probe, will be restarted"
    killed = _events(sim, "probe-killed")[0]
    assert killed.message == (
        "controller: killed after its liveness probe failed 5 times, while it was still connecting to "
        "kube-apiserver"  # its second try, after the first timed out at 30 s and 1 s of back-off
    )


def test_a_liveness_endpoint_served_from_the_start_keeps_a_waiting_webhook_alive() -> None:
    """cert-manager's webhook retries its certificate every second; /livez answers meanwhile
    (catalog: liveness at-start), so it is never killed — only never ready."""
    webhook = {
        "name": "webhook",
        "image": "quay.io/jetstack/cert-manager-webhook:v1.16.0",
        "args": ["--dynamic-serving-ca-secret-namespace=ops", "--dynamic-serving-ca-secret-name=ca"],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 6080}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/livez", "port": 6080}, "periodSeconds": 10},
    }
    sim = _sim("cilium-always", *_rbac(), _workload("Deployment", webhook))
    sim.run(until=300)
    assert not _events(sim, "probe-killed") and len(_started(sim)) == 1
    assert [e.data["need"] for e in _events(sim, "program-waiting")] == ["kube-apiserver"]
    assert kubectl_columns(_pods(sim)[0], sim.datetime()).ready == "0/1"
