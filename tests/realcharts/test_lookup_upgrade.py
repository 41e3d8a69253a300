"""An upgrade renders ``lookup`` against what the previous revision left, as helm-controller's
client reads the cluster (helm/helm pkg/engine/lookup_func.go): a chart that reuses the password
it generated (bitnami/common ``templates/_secrets.tpl`` common.secrets.passwords.manage) or a
Secret a kept ``pre-install`` hook made (bitnami/metallb ``templates/speaker/secret.yaml``)
upgrades instead of failing its render. Chart: ``tests/realcharts/lookup-upgrade``."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.helm.lookup_server import Catalog, LookupServer, route, stored
from realcharts_helpers import HERE

CHART = str(HERE / "lookup-upgrade")


def _simulate(*extra: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["simulate", CHART, "--profile", "kind", "--format", "json", *extra])
    return result.exit_code, json.loads(result.stdout) if result.stdout.startswith("{") else {"error": result.stderr}


def test_an_upgrade_finds_the_secrets_revision_one_left() -> None:
    code, doc = _simulate("--upgrade-from", CHART)
    assert code == 0, doc
    (release,) = doc["releases"]
    assert release["outcome"] == "Ready" and "upgrade succeeded" in release["message"]
    assert any("on the upgrade helmsim answers it" in n for n in doc["notes"])


def test_a_password_given_to_revision_one_is_found_without_being_given_again() -> None:
    result = CliRunner().invoke(app, [
        "simulate", CHART, "--profile", "kind", "--upgrade-from", CHART, "--upgrade-from-set", "password=given",
    ])
    assert result.exit_code == 0, result.stderr


def test_an_install_finds_nothing_and_generates_the_password() -> None:
    code, doc = _simulate()
    assert code == 0 and any("helmsim renders it as helm template does" in n for n in doc["notes"])


def test_discovery_get_list_and_not_found_answer_as_the_api_server() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "ns"},
              "stringData": {"password": "pw"}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Widget", "plural": "widgets"}}}
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    catalog = Catalog([secret, crd, widget], ["v1", "v1/ConfigMap", "apps/v1", "apps/v1/Deployment"])
    code, body = route(catalog, "/api/v1?timeout=32s")
    assert code == 200 and {r["kind"] for r in body["resources"]} == {"ConfigMap", "Secret"}
    code, body = route(catalog, "/api/v1/namespaces/ns/secrets/a")
    assert code == 200 and body["data"] == {"password": "cHc="} and "stringData" not in body
    assert route(catalog, "/api/v1/namespaces/other/secrets/a")[0] == 404
    code, body = route(catalog, "/api/v1/namespaces/ns/secrets")
    assert code == 200 and body["kind"] == "SecretList" and [i["metadata"]["name"] for i in body["items"]] == ["a"]
    code, body = route(catalog, "/apis/example.com/v1")
    assert code == 200 and body["resources"][0]["namespaced"] is False
    assert route(catalog, "/apis/example.com/v1/widgets/w")[1]["metadata"]["name"] == "w"
    assert route(catalog, "/apis/batch/v1")[0] == 404  # a group/version the cluster does not serve
    assert route(catalog, "/apps/v1")[0] == 404
    assert stored({"apiVersion": "v1", "kind": "ConfigMap", "stringData": {"a": "b"}}) == {
        "apiVersion": "v1", "kind": "ConfigMap", "stringData": {"a": "b"}}


def test_the_server_answers_only_under_its_secret_prefix() -> None:
    import urllib.error
    import urllib.request

    server = LookupServer()
    server.serve([], ["v1"])
    with urllib.request.urlopen(f"{server.url}/api/v1") as answer:
        assert json.load(answer)["groupVersion"] == "v1"
    bare = server.url.rsplit("/", 1)[0]
    try:
        urllib.request.urlopen(f"{bare}/api/v1")
        raise AssertionError("served without the prefix")
    except urllib.error.HTTPError as err:
        assert err.code == 401
