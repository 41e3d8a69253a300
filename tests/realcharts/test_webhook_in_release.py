"""A validating webhook installed by the release that creates what it validates
(tests/realcharts/webhook-in-release; kube-prometheus-stack with
prometheusOperator.admissionWebhooks.failurePolicy=Fail): the API server calls it on create
(k8s.io/apiserver pkg/admission/plugin/webhook/generic/webhook.go) while its pods are not Ready."""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.cluster.profile import load_profile
from helmsim.cluster.cluster import build_cluster
from helmsim.cluster.store import ApiError
from realcharts_helpers import simulate_chart

REFUSED = (
    "server-side apply failed for object default/webhook-in-release-node-down monitoring.example.com/v1, Kind=AlertRule: "
    'Internal error occurred: failed calling webhook "alertrulevalidate.monitoring.example.com": failed to call webhook: '
    'Post "https://webhook-in-release-operator.default.svc:443/admission-alertrules/validate?timeout=10s": '
    'no endpoints available for service "webhook-in-release-operator"'
)
ASSUMED = (
    "admission webhook alertrulevalidate.monitoring.example.com (ValidatingWebhookConfiguration webhook-in-release-admission) "
    "is assumed to answer and to admit what it is asked (its TLS trusted, its decision unknown)"
)


def test_fail_refuses_the_resource_created_with_the_webhook() -> None:
    (release,) = (result := simulate_chart("webhook-in-release")).releases
    assert release.outcome != "Ready"
    assert REFUSED in release.message, release.message
    assert ASSUMED not in result.notes


def test_ignore_lets_it_through() -> None:
    result = simulate_chart("webhook-in-release", sets=("failurePolicy=Ignore",))
    assert result.releases[0].outcome == "Ready"


def test_a_resource_created_once_the_webhook_serves_is_admitted_and_said_assumed() -> None:
    result = simulate_chart("webhook-in-release", sets=("ruleAsHook=true",))
    assert result.releases[0].outcome == "Ready"
    assert result.notes.count(ASSUMED) == 1


def _cluster() -> Any:
    sim = build_cluster(load_profile("kind"), namespaces=["apps"])
    sim.store.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hook", "namespace": "apps"},
                      "spec": {"selector": {"app": "hook"}, "ports": [{"port": 443}]}}, actor="helm")
    return sim


def _config(**hook: Any) -> dict[str, Any]:
    base = {
        "name": "pods.example.com",
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "operations": ["CREATE"]}],
        "clientConfig": {"service": {"namespace": "apps", "name": "hook"}},
        **hook,
    }
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "hooks"}, "webhooks": [base]}


def _config_map(**labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "apps", "labels": labels}}


@pytest.mark.parametrize(
    ("hook", "refused"),
    [
        ({}, True),  # failurePolicy defaults to Fail (admissionregistration/v1)
        ({"failurePolicy": "Ignore"}, False),
        ({"objectSelector": {"matchLabels": {"inject": "yes"}}}, False),  # the object is not selected
        ({"namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["apps"]}]}}, False),
        ({"rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "operations": ["UPDATE"]}]}, False),
        ({"rules": [{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]}, True),
    ],
)
def test_which_webhooks_intercept_a_create(hook: dict[str, Any], refused: bool) -> None:
    sim = _cluster()
    sim.store.create(_config(**hook), actor="helm")
    if not refused:
        sim.store.create(_config_map(), actor="helm")
        return
    with pytest.raises(ApiError) as err:
        sim.store.create(_config_map(), actor="helm")
    assert err.value.reason == "InternalError"
    assert err.value.message == (
        'Internal error occurred: failed calling webhook "pods.example.com": failed to call webhook: '
        'Post "https://hook.apps.svc:443?timeout=10s": no endpoints available for service "hook"'
    )


def test_webhook_configurations_themselves_are_never_intercepted() -> None:
    # predicates/rules IsExemptAdmissionConfigurationResource
    sim = _cluster()
    sim.store.create(_config(rules=[{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]), actor="helm")
    other = _config()
    other["metadata"] = {"name": "more"}
    sim.store.create(other, actor="helm")


def test_a_missing_service_is_named() -> None:
    sim = build_cluster(load_profile("kind"), namespaces=["apps"])
    sim.store.create(_config(), actor="helm")
    with pytest.raises(ApiError, match='service "hook" not found'):
        sim.store.create(_config_map(), actor="helm")
