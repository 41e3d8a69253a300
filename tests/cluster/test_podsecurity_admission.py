"""Pod Security admission as the API server runs it: the level a namespace enforces, the
cluster's defaults and exemptions, the order and text of the refusal, pinned policy versions."""

from __future__ import annotations

from typing import Any

import pytest

from helmsim.cluster import podsecurity
from helmsim.cluster.cluster import build_cluster
from helmsim.cluster.profile import ClusterProfile, load_profile
from helmsim.cluster.store import ApiError


def _pod(name: str = "app", namespace: str = "default", **spec: Any) -> dict[str, Any]:
    body = {"containers": [{"name": "app", "image": "registry.example.com/app:1"}], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": body}


def _profile(**pod_security: Any) -> ClusterProfile:
    base = load_profile("kind").model_dump(by_alias=True, exclude_none=True)
    base["podSecurity"] = pod_security
    return ClusterProfile.model_validate(base, strict=False)


def _create(profile: ClusterProfile, pod: dict[str, Any], labels: dict[str, str] | None = None) -> str | None:
    sim = build_cluster(profile, namespaces=["apps"])
    if labels is not None:
        ns = sim.store.get("Namespace", None, pod["metadata"]["namespace"])
        assert ns is not None
        ns["metadata"].setdefault("labels", {}).update(labels)
        sim.store.update(ns, actor="test")
    try:
        sim.store.create(pod, actor="test")
    except ApiError as err:
        return err.message
    return None


def test_the_api_servers_default_level_is_privileged_and_admits_anything() -> None:
    assert _create(load_profile("kind"), _pod(hostNetwork=True, hostPID=True)) is None


def test_a_restricted_label_refuses_with_every_reason_baseline_first_then_restricted() -> None:
    pod = _pod(hostNetwork=True)
    message = _create(load_profile("kind"), pod, {podsecurity.ENFORCE_LABEL: "restricted"})
    assert message == (
        'pods "app" is forbidden: violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true), '
        'allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
    )


def test_the_profiles_default_applies_to_unlabelled_namespaces_and_exemptions_skip_evaluation() -> None:
    profile = _profile(defaults={"enforce": "baseline"}, exemptions={"namespaces": ["apps"], "runtimeClasses": ["kata"]})
    refused = _create(profile, _pod(hostPID=True))
    assert refused is not None and '"baseline:latest": host namespaces (hostPID=true)' in refused
    assert _create(profile, _pod(namespace="apps", hostPID=True)) is None
    assert _create(profile, _pod(hostPID=True, runtimeClassName="kata")) is None
    # a namespace's own label overrides the default
    assert _create(profile, _pod(hostPID=True), {podsecurity.ENFORCE_LABEL: "privileged"}) is None


def test_a_pinned_version_drops_the_checks_it_predates() -> None:
    probe = {"httpGet": {"host": "10.0.0.1", "port": 80}}
    pod = _pod()
    pod["spec"]["containers"][0]["readinessProbe"] = probe
    labels = {podsecurity.ENFORCE_LABEL: "baseline", podsecurity.ENFORCE_VERSION_LABEL: "v1.33"}
    assert _create(load_profile("kind"), pod, labels) is None  # hostProbesAndHostLifecycle is 1.34+
    labels[podsecurity.ENFORCE_VERSION_LABEL] = "latest"
    refused = _create(load_profile("kind"), pod, labels)
    assert refused is not None and 'probe or lifecycle host (container "app" uses probe or lifecycle host "10.0.0.1")' in refused


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, ("baseline", "latest")),
        ({podsecurity.ENFORCE_LABEL: "restricted"}, ("restricted", "latest")),
        ({podsecurity.ENFORCE_LABEL: "Restricted"}, ("restricted", "latest")),  # fails closed
        ({podsecurity.ENFORCE_LABEL: "privileged", podsecurity.ENFORCE_VERSION_LABEL: "v1.29"}, ("privileged", "v1.29")),
        ({podsecurity.ENFORCE_VERSION_LABEL: "v1.x"}, ("baseline", "latest")),  # a namespace labelled before
        ({podsecurity.ENFORCE_VERSION_LABEL: "v1.05"}, ("baseline", "latest")),  # the plugin was on
    ],
)
def test_labels_resolve_as_policy_to_evaluate(labels: dict[str, str], expected: tuple[str, str]) -> None:
    assert podsecurity.enforced(labels, "baseline", "latest") == expected


def test_a_replicaset_sees_the_refusal_as_failed_create_with_the_generate_name() -> None:
    sim = build_cluster(load_profile("kind"), namespaces=[])
    ns = sim.store.get("Namespace", None, "default")
    assert ns is not None
    ns["metadata"]["labels"][podsecurity.ENFORCE_LABEL] = "baseline"
    sim.store.update(ns, actor="test")
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "x"}]}}
    sim.store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "a", "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "a"}}, "template": template},
        },
        actor="test",
    )
    sim.run(until=30)
    assert not sim.store.list("Pod", "default")
    events = [e.message for e in sim.trace if e.what == "event" and "FailedCreate" == e.data.get("reason")]
    assert events and events[0].startswith('Error creating: pods "a-') and events[0].endswith(
        '-" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)'
    )


def test_a_namespace_with_an_invalid_level_or_version_label_is_refused_on_create_and_update() -> None:
    sim = build_cluster(load_profile("kind"), namespaces=[])
    bad = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "tenant", "labels": {podsecurity.ENFORCE_LABEL: "Restricted", "pod-security.kubernetes.io/warn-version": "v1.05"}},
    }
    with pytest.raises(ApiError) as err:
        sim.store.create(bad, actor="test")
    assert err.value.message == (
        'Namespace "tenant" is invalid: [metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "Restricted": '
        "must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/warn-version]: "
        'Invalid value: "v1.05": must be "latest" or "v1.x"]'
    )
    ns = sim.store.get("Namespace", None, "default")
    assert ns is not None
    ns["metadata"]["labels"][podsecurity.ENFORCE_LABEL] = "strict"
    with pytest.raises(ApiError):
        sim.store.update(ns, actor="test")


def test_api_defaults_precede_the_checks() -> None:
    """A volume with no source is an emptyDir and a hostNetwork pod's ports are host ports
    (pkg/apis/core/v1/defaults.go SetDefaults_Volume, defaultHostNetworkPorts)."""
    restricted = {podsecurity.ENFORCE_LABEL: "restricted"}
    compliant = {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
    }
    pod = _pod(volumes=[{"name": "tmp"}, {"name": "cache", "emptyDir": None}], **compliant)
    pod["spec"]["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    assert _create(load_profile("kind"), pod, restricted) is None
    host = _pod(hostNetwork=True)
    host["spec"]["containers"][0]["ports"] = [{"containerPort": 9100}]
    refused = _create(load_profile("kind"), host, {podsecurity.ENFORCE_LABEL: "baseline"})
    assert refused is not None and refused.endswith(
        'host namespaces (hostNetwork=true), hostPort (container "app" uses hostPort 9100)'
    )


def test_a_pinned_version_admits_only_the_sysctls_it_made_safe() -> None:
    pod = _pod(securityContext={"sysctls": [{"name": "net.ipv4.tcp_keepalive_time", "value": "600"}]})
    labels = {podsecurity.ENFORCE_LABEL: "baseline", podsecurity.ENFORCE_VERSION_LABEL: "v1.28"}
    refused = _create(load_profile("kind"), pod, labels)
    assert refused is not None and refused.endswith("forbidden sysctls (net.ipv4.tcp_keepalive_time)")
    labels[podsecurity.ENFORCE_VERSION_LABEL] = "v1.29"
    assert _create(load_profile("kind"), pod, labels) is None
