"""The behaviour catalog: its built-in data, matching by image and arguments, the reader's errors."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.cluster.behaviour import BehaviourContext, Check, Need, Retry, model_pod
from helmsim.cluster.catalog import (
    builtin_catalog,
    catalog_entries,
    image_repository,
    parse_catalog_document,
)
from helmsim.errors import InputError
from helmsim.kube.pods import human_duration, kubectl_columns


def test_every_builtin_entry_cites_an_upstream_file() -> None:
    entries = builtin_catalog()
    assert len({e.name for e in entries}) == len(entries) >= 14
    for e in entries:
        assert e.spec.sources and all("/" in s and ":" in s for s in e.spec.sources), e.name
        assert e.origin.startswith("src/helmsim/catalog/") and e.origin.rsplit(":", 1)[1].isdigit()


@pytest.mark.parametrize(
    ("image", "repository"),
    [
        ("postgres:16", "docker.io/library/postgres"),
        ("busybox", "docker.io/library/busybox"),
        ("bitnami/postgresql:16.4.0", "docker.io/bitnami/postgresql"),
        ("quay.io/jetstack/cert-manager-startupapicheck:v1.16.0", "quay.io/jetstack/cert-manager-startupapicheck"),
        ("registry.k8s.io/ingress-nginx/kube-webhook-certgen:v1.6.9@sha256:abc", "registry.k8s.io/ingress-nginx/kube-webhook-certgen"),
        ("localhost:5000/app", "localhost:5000/app"),
        ("ghcr.io/cloudnative-pg/cloudnative-pg@sha256:abc", "ghcr.io/cloudnative-pg/cloudnative-pg"),
    ],
)
def test_image_repository_normalised_as_the_runtime_does(image: str, repository: str) -> None:
    assert image_repository(image) == repository


def _pod(containers: list[dict[str, Any]], *, owner: str = "Job", policy: str = "OnFailure") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "cert-manager",
            "ownerReferences": [{"kind": owner, "name": "x", "controller": True, "uid": "u"}],
        },
        "spec": {"restartPolicy": policy, "containers": containers},
    }


def test_startupapicheck_matches_by_image_and_arguments() -> None:
    check = {
        "name": "c",
        "image": "quay.io/jetstack/cert-manager-startupapicheck:v1.16.0",
        "args": ["check", "api", "--wait=1m", "-v"],
    }
    model = model_pod(_pod([check]), BehaviourContext()).container("c")
    assert model.known and model.entry.startswith("cert-manager-startupapicheck (src/helmsim/catalog/cert-manager.yaml:")
    assert model.needs == (Need("kube-apiserver"),)
    assert [c.kind for c in model.checks] == ["api", "webhook"]
    assert model.checks[0] == Check(
        "api",
        "cert-manager.io/v1/CertificateRequest",
        errors=(("unmet", "the cert-manager CRDs are not yet installed on the Kubernetes API server"),),
    )
    # --wait=1m from the arguments, --interval defaulted: every 5 s, give up (124) after 60 s
    assert model.retry == Retry(5.0, 60.0, 124)
    assert model.run_seconds == 0.0
    # other arguments: not the check
    other = model_pod(_pod([{**check, "args": ["version"]}]), BehaviourContext()).container("c")
    assert not other.known and other.entry == ""


def test_user_entries_win_and_image_entries_beat_script_entries() -> None:
    text = """
apiVersion: helmsim.dev/v1alpha1
kind: BehaviourCatalog
entries:
  - name: waits-by-script
    summary: anything that runs kubectl wait
    sources: ["example/repo run.sh: kubectl wait"]
    match: {script: 'kubectl wait'}
    needs: []
    run: 1s
  - name: our-check
    summary: our own startupapicheck build
    sources: ["example/repo main.go: exits at once"]
    match: {image: "*/cert-manager-startupapicheck"}
    needs: ["svc/cert-manager/api:443"]
    run: 2s
"""
    user = parse_catalog_document(text, ".helmsim.yaml")
    entries = catalog_entries(user)
    assert [e.name for e in entries[:2]] == ["our-check", "waits-by-script"]
    pod = _pod(
        [
            {"name": "c", "image": "quay.io/jetstack/cert-manager-startupapicheck:v1", "args": ["check", "api"]},
            {"name": "k", "image": "bitnami/kubectl", "command": ["sh", "-c", "kubectl wait --for=condition=Ready pod/x"]},
        ]
    )
    model = model_pod(pod, BehaviourContext(catalog=entries))
    assert model.container("c").entry == "our-check (.helmsim.yaml:11)"
    assert model.container("c").needs[1] == Need("service", "cert-manager/api", 443)
    assert model.container("k").entry == "waits-by-script (.helmsim.yaml:5)"


@pytest.mark.parametrize(
    ("entry", "message", "line"),
    [
        ({"summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}}, "entries[0].name: Field required", 5),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {}}, "entries[0].match: a match needs image or script", 9),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "needs": ["nowhere"]}, "entries[0].needs: 'nowhere' is not", 10),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "retry": {"every": "soon"}}, "entries[0].retry.every", 11),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "checks": [{"api": "v1"}]}, "entries[0].checks[0].api", 11),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "colour": "red"}, "entries[0].colour: unknown key 'colour'", 9),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "ignoreEnv": ["GF-URL"]}, "entries[0].ignoreEnv: 'GF-URL' is not an environment variable name", 9),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "checks": [{"api": "g/v1/K", "field": "status.x"}]}, "entries[0].checks[0]: field goes with object", 11),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "checks": [{"object": "Service/x", "field": "status..x"}]}, "entries[0].checks[0].field", 11),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x", "env": ["MODE"]}}, "entries[0].match.env", 9),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "checks": [{"state": "s", "api": "g/v1/K"}]}, "entries[0].checks[0]: a check has exactly one of: api, webhook, object, state, env, file, fact", 11),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "writes": "schema"}, "entries[0].writes", 9),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "checks": [{"env": ["CF-TOKEN"]}]}, "entries[0].checks[0].env: 'CF-TOKEN' is not a variable name (or names joined by +)", 11),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "checks": [{"env": []}]}, "entries[0].checks[0].env", 11),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "checks": [{"file": "-config"}]}, "entries[0].checks[0]: file and key go together", 11),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "checks": [{"file": "config.yml", "key": "a"}]}, "entries[0].checks[0].file", 11),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "fills": [{"object": "Secret/s", "fields": ["data"]}]}, "entries[0].fills[0].fields: 'data' is not a dotted path below the object's top level", 11),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}, "fills": [{"object": "Secret/s", "fields": []}]}, "entries[0].fills[0].fields", 11),
        ({"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"script": "x"}, "command": "wait-for-port", "fills": [{"object": "Secret/s", "fields": ["data.a"]}]}, "needs, checks, retry, creates and fills are not allowed with it", 4),
    ],
)
def test_bad_entries_name_the_file_and_line(entry: dict[str, Any], message: str, line: int) -> None:
    text = yaml.safe_dump(
        {"apiVersion": "helmsim.dev/v1alpha1", "kind": "BehaviourCatalog", "entries": [entry]},
        sort_keys=False,
    )
    with pytest.raises(InputError) as err:
        parse_catalog_document(text, "catalog.yaml")
    assert err.value.file == "catalog.yaml"
    assert message in err.value.message
    assert err.value.line is not None and abs(err.value.line - line) <= 2  # the key's line


def test_an_entry_named_twice_is_refused_at_its_second_line() -> None:
    entry = {"name": "x", "summary": "x", "sources": ["a/b c: d"], "match": {"image": "x"}}
    text = yaml.safe_dump({"apiVersion": "helmsim.dev/v1alpha1", "kind": "BehaviourCatalog", "entries": [entry, entry]}, sort_keys=False)
    with pytest.raises(InputError, match=r"entries\[1\]\.name: entry 'x' appears twice"):
        parse_catalog_document(text, "catalog.yaml")


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["name", "summary", "sources", "match", "image", "args", "script", "env", "field", "needs", "checks", "api", "webhook", "object", "retry", "every", "for", "run", "probes", "creates", "logs", "x"]), children, max_size=4),
        max_leaves=12,
    )
)
def test_the_catalog_reader_only_ever_fails_with_input_errors(entries: Any) -> None:
    text = yaml.safe_dump({"apiVersion": "helmsim.dev/v1alpha1", "kind": "BehaviourCatalog", "entries": entries})
    try:
        parse_catalog_document(text, "fuzz.yaml")
    except InputError as err:
        assert err.file == "fuzz.yaml"


# --- kubectl get pods ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59, "59s"), (119, "119s"), (125, "2m5s"), (600, "10m"), (3 * 3600 + 300, "3h5m"), (9 * 3600, "9h"), (3 * 86400 + 3600, "3d1h")],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def _status(**st_: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c"}], "initContainers": st_.pop("inits", [])}, "metadata": {}, "status": st_}


@pytest.mark.parametrize(
    ("status", "columns"),
    [
        (
            _status(phase="Running", containerStatuses=[{"ready": False, "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": {"terminated": {"finishedAt": "2026-01-01T00:00:30Z"}}}]),
            ("0/1", "CrashLoopBackOff", "2 (30s ago)"),
        ),
        (
            _status(phase="Running", containerStatuses=[{"ready": True, "restartCount": 0, "state": {"running": {}}}]),
            ("1/1", "Running", "0"),
        ),
        (
            _status(phase="Failed", containerStatuses=[{"ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]),
            ("0/1", "Error", "0"),
        ),
        (
            _status(
                phase="Pending",
                inits=[{"name": "i"}],
                initContainerStatuses=[{"restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
                containerStatuses=[{"ready": False, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}],
            ),
            ("0/1", "Init:CrashLoopBackOff", "1"),
        ),
        (
            _status(
                phase="Pending",
                inits=[{"name": "i"}],
                initContainerStatuses=[{"restartCount": 0, "state": {"running": {}}}],
                containerStatuses=[{"ready": False, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}],
            ),
            ("0/1", "Init:0/1", "0"),
        ),
    ],
)
def test_kubectl_columns(status: dict[str, Any], columns: tuple[str, str, str]) -> None:
    from datetime import UTC, datetime

    got = kubectl_columns(status, datetime(2026, 1, 1, 0, 1, tzinfo=UTC))
    assert (got.ready, got.status, got.restarts) == columns


# --- user entries: .helmsim.yaml and scenario files -----------------------------------------------

USER_ENTRY = """\
  - name: our-migrator
    summary: the migration needs the database Service
    sources: ["example/migrator cmd/main.go: connects at start"]
    match: {image: "example.com/migrate"}
    needs: ["svc/default/postgres:5432"]
    run: 2s
"""


def test_helmsim_yaml_catalog_entries_keep_their_lines(tmp_path: Any) -> None:
    from helmsim.config import load_config

    f = tmp_path / ".helmsim.yaml"
    f.write_text("profiles: [kind]\ncatalog:\n" + USER_ENTRY)
    cfg = load_config(f)
    assert [(e.name, e.origin) for e in cfg.catalog] == [("our-migrator", f"{f}:3")]
    f.write_text("catalog:\n" + USER_ENTRY.replace("run: 2s", "run: later"))
    with pytest.raises(InputError) as err:
        load_config(f)
    assert (err.value.file, err.value.line) == (str(f), 7)
    assert err.value.message.startswith("catalog[0].run:")


def test_scenario_catalog_errors_name_the_file_and_line(tmp_path: Any) -> None:
    from helmsim.scenario import parse_scenario

    text = (
        "apiVersion: helmsim.dev/v1alpha1\nkind: Scenario\nreleases: [{chart: x}]\n"
        "expect: [{release: x, outcome: Ready}]\ncatalog:\n"
        + USER_ENTRY.replace('needs: ["svc/default/postgres:5432"]', "needs: [nowhere]")
    )
    with pytest.raises(InputError) as err:
        parse_scenario(text, tmp_path / "s.helmsim.yaml")
    assert err.value.line == 10 and "catalog[0].needs" in err.value.message


def test_a_scenario_entry_decides_what_the_deployment_needs() -> None:
    """The mini chart's web Deployment under a user entry that needs a Service which does not
    exist: every run fails at once with "no such host", it crash-loops, the release fails."""
    from pathlib import Path

    from helmsim.pytest_plugin import simulate_chart

    mini = Path(__file__).parents[1] / "scenario" / "charts" / "mini"
    entry = yaml.safe_load(USER_ENTRY)[0] | {"match": {"image": "example.com/web"}, "run": "forever"}
    run = simulate_chart(mini, values={"job": {"enabled": False}}, catalog=[entry])
    failed = [e for e in run.trace if e.what == "need-failed"]
    assert failed and {e.data["need"] for e in failed} == {"svc/default/postgres:5432"}
    assert failed[0].data["error"] == (
        "dial tcp: lookup postgres.default.svc.cluster.local on 10.96.0.10:53: no such host"
    )
    assert next(e.message for e in run.trace if e.what == "behaviour" and "catalog entry" in e.message).startswith(
        "web: behaviour from catalog entry our-migrator ("
    )
    run.expect(release="mini", ready="False")


def test_docs_describe_every_builtin_entry_and_command() -> None:
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "behaviour.md").read_text()
    for e in builtin_catalog():
        assert f"`{e.name}`" in docs, e.name
        if e.spec.command:
            assert f"`{e.spec.command}`" in docs, e.spec.command


def test_a_binding_to_a_role_without_rules_is_no_api_server_need() -> None:
    binding = {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "g"},
        "roleRef": {"kind": "ClusterRole", "name": "g"},
        "subjects": [{"kind": "ServiceAccount", "name": "g", "namespace": "cert-manager"}],
    }
    empty = {"kind": "ClusterRole", "metadata": {"name": "g"}, "rules": []}
    pod = _pod([{"name": "app", "image": "example.com/app:1"}], owner="ReplicaSet", policy="Always")
    pod["spec"]["serviceAccountName"] = "g"
    assert model_pod(pod, BehaviourContext(bindings=[binding], roles=[empty])).container("app").needs == ()
    full = {**empty, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
    assert model_pod(pod, BehaviourContext(bindings=[binding], roles=[full])).container("app").needs == (
        Need("kube-apiserver"),
    )
    # grafana's server does not use the account its sidecars need
    pod["spec"]["containers"] = [
        {"name": "grafana", "image": "docker.io/grafana/grafana:13.2.0"},
        {"name": "sidecar", "image": "quay.io/kiwigrid/k8s-sidecar:2.10.1"},
    ]
    model = model_pod(pod, BehaviourContext(bindings=[binding], roles=[full]))
    assert model.container("grafana").needs == () and model.container("grafana").known
    assert model.container("sidecar").needs == (Need("kube-apiserver"),) and model.container("sidecar").known


def _service(name: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "cert-manager"},
        "spec": {"selector": {"app": name}, "ports": [{"port": port}]},
    }


def test_grafana_reads_the_renderer_urls_without_dialling_them_at_start() -> None:
    """grafana/grafana pkg/services/rendering/rendering.go: the renderer's version is fetched in a
    background goroutine and the callback URL is only handed to the renderer, so neither URL is a
    need; another peer its environment names still is, and the same variables in a container the
    catalog does not know still give needs (ignoreEnv belongs to the grafana entry only)."""
    env = [
        {"name": "GF_RENDERING_SERVER_URL", "value": "http://renderer:8081/render"},
        {"name": "GF_RENDERING_CALLBACK_URL", "value": "http://grafana:80/"},
        {"name": "GF_DATABASE_URL", "value": "postgres://grafana@db:5432/grafana"},
    ]
    ctx = BehaviourContext(services=[_service("renderer", 8081), _service("grafana", 80), _service("db", 5432)])
    pod = _pod(
        [
            {"name": "grafana", "image": "docker.io/grafana/grafana:13.2.0", "env": env},
            {"name": "other", "image": "example.com/dashboards:1", "env": env},
        ],
        owner="ReplicaSet",
        policy="Always",
    )
    model = model_pod(pod, ctx)
    grafana = model.container("grafana")
    assert grafana.needs == (Need("dns", "db.cert-manager.svc"), Need("service", "cert-manager/db", 5432))
    assert [n for n in grafana.notes if "GF_RENDERING" in n] == [
        "environment variable GF_RENDERING_CALLBACK_URL names svc/cert-manager/grafana:80, which catalog entry "
        f"{grafana.entry} does not dial at start: not a need",
        "environment variable GF_RENDERING_SERVER_URL names svc/cert-manager/renderer:8081, which catalog entry "
        f"{grafana.entry} does not dial at start: not a need",
    ]
    assert set(model.container("other").needs) == {
        Need("dns", "db.cert-manager.svc"),  # the first name it resolves
        Need("service", "cert-manager/renderer", 8081),
        Need("service", "cert-manager/grafana", 80),
        Need("service", "cert-manager/db", 5432),
    }


def test_the_image_renderer_needs_nothing_its_egress_policy_allows() -> None:
    """grafana/grafana-image-renderer cmd/server/cmd.go: it serves at once and opens grafana only
    for a render request; a container the catalog does not know keeps the policy's needs."""
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "egress", "namespace": "cert-manager"},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{"ports": [{"port": 80}], "to": [{"podSelector": {"matchLabels": {"app": "grafana"}}}]}],
        },
    }
    ctx = BehaviourContext(policies=[policy], services=[_service("grafana", 80)])
    pod = _pod(
        [
            {"name": "renderer", "image": "docker.io/grafana/grafana-image-renderer:latest"},
            {"name": "other", "image": "example.com/renderer:1"},
        ],
        owner="ReplicaSet",
        policy="Always",
    )
    model = model_pod(pod, ctx)
    renderer = model.container("renderer")
    assert renderer.known and renderer.entry.startswith("grafana-image-renderer (src/helmsim/catalog/grafana.yaml:")
    assert renderer.needs == () and renderer.run_seconds is None and not renderer.probes_after_needs
    assert model.container("other").needs == (Need("dns", "grafana.cert-manager.svc"), Need("service", "cert-manager/grafana", 80))


# --- env globs, object fields, config-file templates (a sweep of public charts) ---------------------

_LB_ENTRY = """\
apiVersion: helmsim.dev/v1alpha1
kind: BehaviourCatalog
entries:
  - name: waits-for-lb
    summary: waits for its Service's load-balancer address
    sources: ["example/x run.sh: retry_while"]
    match:
      script: 'retry_while'
      env: {MODE: "Load*"}
    checks:
      - object: Service/${namespace}/${env.POD}-external
        field: status.loadBalancer.ingress
    retry: {every: 5s, for: 60s, deadline: hard}
    logs: {failed: ""}
"""


def _lb_pod(mode: str | None) -> dict[str, Any]:
    env: list[dict[str, Any]] = [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    if mode is not None:
        env.append({"name": "MODE", "value": mode})
    return _pod([{"name": "d", "image": "bitnami/kubectl", "command": ["bash", "-ec", "retry_while x || exit 1"], "env": env}])


@pytest.mark.parametrize(("mode", "matched"), [("LoadBalancer", True), ("NodePort", False), (None, False)])
def test_env_globs_decide_which_branch_of_a_script_an_entry_describes(mode: str | None, matched: bool) -> None:
    entries = catalog_entries(parse_catalog_document(_LB_ENTRY, "c.yaml"))
    model = model_pod(_lb_pod(mode), BehaviourContext(catalog=entries)).container("d")
    assert (model.entry == "waits-for-lb (c.yaml:4)") is matched
    if matched:
        # the Service is named from the pod's name (downward API), the field is checked, and the
        # program prints nothing when it gives up
        assert model.checks == (
            Check("object", "Service/cert-manager/p-external", path="status.loadBalancer.ingress"),
        )
        assert str(model.checks[0]) == "Service/cert-manager/p-external with status.loadBalancer.ingress set"
        assert model.log_failed is None
        assert model.needs == (Need("kube-apiserver"),)


_CONFIG_ENTRY = """\
apiVersion: helmsim.dev/v1alpha1
kind: BehaviourCatalog
entries:
  - name: reads-its-config
    summary: dials the broker its config file names
    sources: ["example/x main.go: reads -config.file"]
    match: {image: "example/app"}
    needs: ["${file(--config.file).ingest.kafka.address}"]
"""


def _config_pod(data: dict[str, str], mount: dict[str, Any], arg: str = "-config.file=/conf/app.yaml") -> tuple[dict[str, Any], BehaviourContext]:
    pod = _pod([{"name": "app", "image": "example/app:1", "args": [arg], "volumeMounts": [{"name": "cfg", **mount}]}])
    pod["spec"]["volumes"] = [{"name": "cfg", "configMap": {"name": "cfg"}}]
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kafka", "namespace": "data"}, "spec": {"ports": [{"port": 9092}]}}
    entries = catalog_entries(parse_catalog_document(_CONFIG_ENTRY, "c.yaml"))
    return pod, BehaviourContext(catalog=entries, config_maps={("cert-manager", "cfg"): data}, services=[svc])


@pytest.mark.parametrize(
    ("data", "mount", "arg", "need"),
    [
        ({"app.yaml": "ingest: {kafka: {address: kafka.data:9092}}"}, {"mountPath": "/conf"}, "-config.file=/conf/app.yaml", Need("service", "data/kafka", 9092)),
        ({"app.yaml": "ingest:\n  kafka:\n    address: broker.example.com:9093\n"}, {"mountPath": "/conf"}, "--config.file=/conf/app.yaml", Need("fqdn", "broker.example.com", 9093)),
        ({"other": "ingest: {kafka: {address: kafka.data:9092}}"}, {"mountPath": "/conf/app.yaml", "subPath": "other"}, "-config.file=/conf/app.yaml", Need("service", "data/kafka", 9092)),
        ({"app.yaml": "server: {port: 1}"}, {"mountPath": "/conf"}, "-config.file=/conf/app.yaml", None),
        ({"app.yaml": "ingest: {kafka: {address: [a, b]}}"}, {"mountPath": "/conf"}, "-config.file=/conf/app.yaml", None),
        ({"app.yaml": ": not yaml : ["}, {"mountPath": "/conf"}, "-config.file=/conf/app.yaml", None),
        ({"app.yaml": "ingest: {kafka: {address: kafka.data:9092}}"}, {"mountPath": "/etc"}, "-config.file=/conf/app.yaml", None),
        ({"app.yaml": "ingest: {kafka: {address: kafka.data:9092}}"}, {"mountPath": "/conf"}, "-target=all", None),
    ],
)
def test_a_file_template_reads_the_config_file_through_its_configmap_mount(
    data: dict[str, str], mount: dict[str, Any], arg: str, need: Need | None
) -> None:
    pod, ctx = _config_pod(data, mount, arg)
    model = model_pod(pod, ctx).container("app")
    if need is None:
        assert Need("dns") not in model.needs and len(model.needs) == 0
        assert any("cannot tell what ${file(--config.file).ingest.kafka.address} means from the files its ConfigMap volumes mount" in n for n in model.notes)
    else:
        assert need in model.needs


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60), st.sampled_from(["-config.file=/conf/app.yaml", "-config.file", "--config.file=/x", "-config.file=/conf/"]))
def test_a_file_template_never_fails_on_what_the_file_holds(text: str, arg: str) -> None:
    pod, ctx = _config_pod({"app.yaml": text}, {"mountPath": "/conf"}, arg)
    model = model_pod(pod, ctx).container("app")
    assert all(n.kind in ("service", "fqdn", "dns", "cidr") for n in model.needs)


@pytest.mark.parametrize(
    "container",
    [
        {"command": ["/scripts/wait.sh"]},
        {"command": ["bash", "/scripts/wait.sh"]},
        {"command": ["/bin/sh", "-ec", "/scripts/wait.sh"]},
    ],
)
def test_a_script_run_from_a_configmap_file_is_read_for_what_it_waits_for(container: dict[str, Any]) -> None:
    # bitnami charts run their scripts from ConfigMap keys mounted with subPath
    # (bitnami/mongodb templates/_helpers.tpl: command /scripts/auto-discovery.sh)
    pod = _pod([{"name": "c", "image": "busybox", **container, "volumeMounts": [{"name": "s", "mountPath": "/scripts/wait.sh", "subPath": "wait.sh"}]}])
    pod["spec"]["initContainers"] = pod["spec"].pop("containers")
    pod["spec"]["containers"] = [{"name": "app", "image": "busybox"}]
    pod["spec"]["volumes"] = [{"name": "s", "configMap": {"name": "scripts", "defaultMode": 493}}]
    script = "#!/bin/sh\nuntil nc -z db 5432; do sleep 2; done\n"
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "cert-manager"}, "spec": {"ports": [{"port": 5432}]}}
    ctx = BehaviourContext(config_maps={("cert-manager", "scripts"): {"wait.sh": script}}, services=[svc])
    model = model_pod(pod, ctx).container("c")
    assert model.wait is not None and str(model.wait.target) == "svc/cert-manager/db:5432"
    # without the ConfigMap the path is all that is known: the init-container assumption
    bare = model_pod(pod, BehaviourContext(services=[svc])).container("c")
    assert bare.wait is None
    assert "runs 5 s then exits 0 (assumption for init containers)" in bare.notes


def _own_service_pod(env: list[dict[str, Any]]) -> tuple[dict[str, Any], BehaviourContext]:
    pod = _pod([{"name": "app", "image": "example.com/app:1", "env": env}], owner="ReplicaSet", policy="Always")
    pod["metadata"]["labels"] = {"app": "web"}
    own = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "cert-manager"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}
    other = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "cert-manager"}, "spec": {"selector": {"app": "db"}, "ports": [{"port": 5432}]}}
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "web", "namespace": "cert-manager"},
        "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Egress"], "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "web"}}}], "ports": [{"port": 8080}]}]},
    }
    return pod, BehaviourContext(services=[own, other], policies=[policy])


def test_a_service_fronting_the_pod_itself_is_no_need_from_its_environment_or_policies() -> None:
    # a URL of its own Service is the program's own address (ROOT_URL, peers' discovery), and a
    # policy letting replicas talk to each other says nothing of what it dials at start
    pod, ctx = _own_service_pod([{"name": "ROOT_URL", "value": "http://web:80"}, {"name": "DB_URL", "value": "postgres://db:5432/app"}])
    model = model_pod(pod, ctx).container("app")
    assert model.needs == (Need("dns", "db.cert-manager.svc"), Need("service", "cert-manager/db", 5432))
    assert (
        "environment variable ROOT_URL names svc/cert-manager/web:80, which fronts this pod itself: not a need "
        "(a program does not dial itself at start, and its replicas find each other by their pods' names)"
    ) in model.notes
    assert any(n.startswith("NetworkPolicy cert-manager/web allows ") and "which fronts this pod itself: not a need" in n for n in model.notes)


@pytest.mark.parametrize(
    ("rules", "need", "note"),
    [
        ([{"apiGroups": ["policy"], "resources": ["podsecuritypolicies"], "verbs": ["use"], "resourceNames": ["x"]}], False, "which grants only use of a PodSecurityPolicy (checked by admission): not a need"),
        (
            [{"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}, {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}],
            False,
            "which grants only delegated authentication of incoming requests (TokenReviews) and delegated authorisation of incoming requests (SubjectAccessReviews): not a need",
        ),
        ([{"apiGroups": ["policy"], "resources": ["podsecuritypolicies"], "verbs": ["use"]}, {"apiGroups": [""], "resources": ["endpoints"], "verbs": ["get"]}], True, "talks to the API server: ServiceAccount app is bound to ClusterRole app by ClusterRoleBinding app"),
    ],
)
def test_a_role_authorising_no_call_at_start_makes_no_api_server_need(rules: list[dict[str, Any]], need: bool, note: str) -> None:
    # prometheus-community charts bind a PSP "use" role (redis-exporter rbac.pspEnabled) or a
    # TokenReview/SubjectAccessReview role for their kube-rbac-proxy (prom-label-proxy): the
    # exporter itself never calls the API server, and under cilium-always it was "denied"
    pod = _pod([{"name": "exporter", "image": "example.com/exporter:1"}], owner="ReplicaSet", policy="Always")
    pod["spec"]["serviceAccountName"] = "app"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "app"}, "rules": rules}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "app"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "app"},
        "subjects": [{"kind": "ServiceAccount", "name": "app", "namespace": "cert-manager"}],
    }
    model = model_pod(pod, BehaviourContext(roles=[role], bindings=[binding])).container("exporter")
    assert (Need("kube-apiserver") in model.needs) is need
    assert any(note in n for n in model.notes), model.notes


def test_wordpress_waits_for_its_database_and_gives_up_after_a_minute() -> None:
    # bitnami/wordpress libwordpress.sh wordpress_wait_for_mysql_connection: retry_while 12 x 5 s
    env = [{"name": "MARIADB_HOST", "value": "wp-mariadb"}, {"name": "MARIADB_PORT_NUMBER", "value": "3306"}]
    pod = _pod([{"name": "wordpress", "image": "docker.io/bitnami/wordpress:6.8.2-debian-12-r4", "env": env}], owner="ReplicaSet", policy="Always")
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "wp-mariadb", "namespace": "cert-manager"}, "spec": {"selector": {"app": "db"}, "ports": [{"port": 3306}]}}
    model = model_pod(pod, BehaviourContext(services=[svc])).container("wordpress")
    assert model.entry.startswith("bitnami-wordpress ")
    assert Need("service", "cert-manager/wp-mariadb", 3306) in model.needs
    assert model.retry is not None and model.retry.interval == 5.0 and model.retry.bound == 60.0 and model.retry.hard
    assert model.log_failed == "wordpress ERROR ==> Could not connect to the database"


def test_kafka_exporter_needs_its_broker_before_it_serves() -> None:
    # prometheus-kafka-exporter's default --kafka.server=kafka-server:9092 names no Service: the
    # exporter exits at start (it was "assumed to start and succeed" and the release Ready)
    pod = _pod([{"name": "exporter", "image": "danielqsj/kafka-exporter:v1.9.0", "args": ["--kafka.server=kafka-server:9092", "--web.listen-address=:9308"]}], owner="ReplicaSet", policy="Always")
    model = model_pod(pod, BehaviourContext()).container("exporter")
    assert model.entry.startswith("kafka-exporter ")
    assert model.needs == (Need("dns", "kafka-server.cert-manager.svc"), Need("service", "cert-manager/kafka-server", 9092))  # a short name: the pod's namespace
    assert model.retry is not None and model.retry.attempts == 4 and model.retry.exit_code == 255


@pytest.mark.parametrize(("labels", "key"), [({"app.kubernetes.io/instance": "af"}, "schema of ops/af"), ({}, None)])
def test_state_keys_are_filled_from_the_pods_labels(labels: dict[str, str], key: str | None) -> None:
    text = """
apiVersion: helmsim.dev/v1alpha1
kind: BehaviourCatalog
entries:
  - name: waits-for-schema
    summary: waits for the schema the migration leaves
    sources: ["example/app main.go: waits"]
    match: {image: ["example/app"]}
    needs: []
    checks:
      - state: "schema of ${namespace}/${label.app.kubernetes.io/instance}"
    writes: ["cache of ${label.app.kubernetes.io/instance}"]
"""
    entries = catalog_entries(parse_catalog_document(text, ".helmsim.yaml"))
    pod = _pod([{"name": "c", "image": "example/app:1"}])
    pod["metadata"]["namespace"] = "ops"
    pod["metadata"]["labels"] = labels
    model = model_pod(pod, BehaviourContext(catalog=entries)).container("c")
    if key is None:  # a label the pod lacks: the check and the state are left out, and said so
        assert model.checks == () and model.writes == ()
        assert any("cannot tell which state cache of ${label.app.kubernetes.io/instance}" in n for n in model.notes)
        assert any("cannot tell which state schema of ${namespace}/${label.app.kubernetes.io/instance} it waits for" in n for n in model.notes)
    else:
        assert model.checks == (Check("state", key),)
        assert model.writes == ("cache of af",)


_PRIMARY_LABEL = """#!/bin/bash
while true; do
    while [ ! -f "/etc/shared/current" ]; do
        sleep 1
    done
    kubectl label pod --field-selector metadata.name="$(< "/etc/shared/current")" isPrimary="true" --overwrite
    rm "/etc/shared/current" "/etc/shared/previous"
done
"""


def test_valkey_sentinel_pods_need_nothing_of_the_api_their_account_is_bound_for() -> None:
    # bitnami/charts bitnami/valkey: the Role binds the pod's account for the kubectl-shared
    # sidecar only, whose loop survives a failing kubectl; valkey and sentinel never call the API
    pod = _pod(
        [
            {"name": "valkey", "image": "docker.io/bitnami/valkey:8.1.3", "command": ["/bin/bash", "-c"], "args": ["/opt/bitnami/scripts/start-scripts/start-node.sh"]},
            {"name": "sentinel", "image": "docker.io/bitnami/valkey-sentinel:8.1.3"},
            {
                "name": "kubectl-shared",
                "image": "docker.io/bitnami/kubectl:1.33.4",
                "command": ["/opt/bitnami/scripts/kubectl-scripts/update-primary-label.sh"],
                "volumeMounts": [{"name": "kubectl-scripts", "mountPath": "/opt/bitnami/scripts/kubectl-scripts"}],
            },
        ],
        owner="StatefulSet",
        policy="Always",
    )
    pod["spec"]["serviceAccountName"] = "vk"
    pod["spec"]["volumes"] = [{"name": "kubectl-scripts", "configMap": {"name": "vk-scripts"}}]
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "vk", "namespace": "cert-manager"},
        "roleRef": {"kind": "Role", "name": "vk"},
        "subjects": [{"kind": "ServiceAccount", "name": "vk", "namespace": "cert-manager"}],
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "vk", "namespace": "cert-manager"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "patch"]}],
    }
    ctx = BehaviourContext(
        catalog=builtin_catalog(), bindings=[binding], roles=[role],
        config_maps={("cert-manager", "vk-scripts"): {"update-primary-label.sh": _PRIMARY_LABEL}},
    )
    model = model_pod(pod, ctx)
    for name, entry in (("valkey", "bitnami-valkey"), ("sentinel", "bitnami-valkey"), ("kubectl-shared", "bitnami-kubectl-primary-label")):
        container = model.container(name)
        assert container.entry.startswith(entry + " ("), (name, container.entry)
        assert container.needs == () and container.run_seconds is None


_CREDENTIAL_ENTRY = """apiVersion: helmsim.dev/v1alpha1
kind: BehaviourCatalog
entries:
  - name: needs-token
    summary: exits at start without a token
    sources: ["acme/app cmd/main.go: os.Getenv"]
    match:
      image: ["*/acme/app"]
    needs: []
    checks:
      - env: [TOKEN, KEY+EMAIL]
        error: no credentials
    exitCode: 1
"""


@pytest.mark.parametrize(
    ("env", "env_from", "checked", "note"),
    [
        ([], [], True, False),
        ([{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}}], [], False, False),
        ([{"name": "KEY", "value": "k"}], [], True, False),  # KEY without EMAIL: not enough
        ([{"name": "KEY", "value": "k"}, {"name": "EMAIL", "value": "e"}], [], False, False),
        ([], [{"configMapRef": {"name": "cm"}}], True, False),  # a ConfigMap the context does not hold
        ([], [{"secretRef": {"name": "creds"}}], False, True),  # a Secret's keys: cannot tell, said
    ],
)
def test_an_env_check_reads_the_pod_spec(env: list[Any], env_from: list[Any], checked: bool, note: bool) -> None:
    entries = catalog_entries(parse_catalog_document(_CREDENTIAL_ENTRY, ".helmsim.yaml"))
    container: dict[str, Any] = {"name": "app", "image": "registry.example.com/acme/app:1", "env": env}
    if env_from:
        container["envFrom"] = env_from
    model = model_pod(_pod([container], owner="ReplicaSet", policy="Always"), BehaviourContext(catalog=entries))
    c = model.container("app")
    assert c.entry == "needs-token (.helmsim.yaml:4)"
    assert [str(ch) for ch in c.checks] == (["TOKEN or KEY and EMAIL in its environment"] if checked else [])
    assert any("cannot tell whether TOKEN or KEY and EMAIL is set" in n for n in c.notes) is note


def test_a_binding_to_a_role_nobody_creates_is_no_api_server_need() -> None:
    """bitnami/charts bitnami/jenkins templates/rolebinding.yaml binds Role jenkins, which
    templates/role.yaml renders only with agents, configAsCode or rbac.rules: a missing Role grants
    nothing (the RBAC authorizer resolves roleRef at each request)."""
    binding = {
        "kind": "RoleBinding",
        "metadata": {"name": "jenkins", "namespace": "ci"},
        "roleRef": {"kind": "Role", "name": "jenkins"},
        "subjects": [{"kind": "ServiceAccount", "name": "jenkins", "namespace": "ci"}],
    }
    pod = _pod([{"name": "app", "image": "example.com/app:1"}], owner="ReplicaSet", policy="Always")
    pod["metadata"]["namespace"] = "ci"
    pod["spec"]["serviceAccountName"] = "jenkins"
    model = model_pod(pod, BehaviourContext(bindings=[binding], roles=[]))
    assert model.container("app").needs == ()
    assert any("a Role neither the release nor the profile holds (taken as absent: it grants nothing)" in n for _c, n in model.notes)
    role = {"kind": "Role", "metadata": {"name": "jenkins", "namespace": "ci"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]}
    assert model_pod(pod, BehaviourContext(bindings=[binding], roles=[role])).container("app").needs == (Need("kube-apiserver"),)


def test_a_dotted_path_may_hold_escaped_dots_and_a_volume_names_its_secret() -> None:
    """``data.tls\\.crt`` is the key ``tls.crt`` of ``data`` (kubectl's JSONPath escape), and
    ``${volume.certs}`` the Secret the pod's volume ``certs`` mounts (external-secrets' webhook)."""
    from helmsim.cluster.programs import container_view, match_program
    from helmsim.cluster.running import path_parts

    assert path_parts("data.tls\\.crt") == ["data", "tls.crt"]
    assert path_parts("status.loadBalancer.ingress") == ["status", "loadBalancer", "ingress"]
    pod = _pod([{"name": "webhook", "image": "ghcr.io/external-secrets/external-secrets:v0.19.2", "args": ["webhook", "--cert-dir=/certs"]}])
    pod["spec"]["volumes"] = [{"name": "certs", "secret": {"secretName": "eso-webhook"}}, {"name": "cfg", "configMap": {"name": "c"}}]
    view = container_view(pod["spec"]["containers"][0], pod)
    assert dict(view.volumes) == {"certs": "eso-webhook", "cfg": "c"}
    program, _ = match_program(view, "ns", catalog_entries([]))
    assert program is not None and program.entry.startswith("external-secrets-webhook")
    (check,) = program.checks
    assert (check.kind, check.target, check.path) == ("object", "Secret/ns/eso-webhook", "data.tls\\.crt")
    assert dict(check.errors)["unmet"] == "stat /certs/tls.crt: no such file or directory"
