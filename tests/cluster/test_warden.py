"""GKE Autopilot's Warden admission: the constraints and the webhook's texts as users quote them
(istio/istio.io#16266, CrowdStrike/falcon-helm#310, DataDog/helm-charts#1436,
livekit/livekit-helm#147), on create and on update of a workload."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.cluster import warden
from helmsim.cluster.cluster import build_cluster
from helmsim.cluster.profile import load_profile
from helmsim.cluster.store import ApiError

ALLOWED = "AUDIT_WRITE,CHOWN,DAC_OVERRIDE,FOWNER,FSETID,KILL,MKNOD,NET_BIND_SERVICE,NET_RAW,SETFCAP,SETGID,SETPCAP,SETUID,SYS_CHROOT,SYS_PTRACE"


def test_every_constraint_with_the_webhooks_text_containers_before_init_containers() -> None:
    spec = {
        "hostPID": True,
        "hostIPC": True,
        "hostNetwork": True,
        "containers": [
            {
                "name": "falcon-node-sensor",
                "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN", "NET_RAW", "NET_ADMIN"]}},
                "ports": [{"containerPort": 8125}],
                "volumeMounts": [
                    {"name": "proc", "mountPath": "/host/proc", "readOnly": True},
                    {"name": "logs", "mountPath": "/var/log"},
                    {"name": "cni", "mountPath": "/opt/cni/bin"},
                ],
            }
        ],
        "initContainers": [{"name": "init-falconstore", "securityContext": {"privileged": True}}],
        "volumes": [
            {"name": "proc", "hostPath": {"path": "/proc"}},
            {"name": "logs", "hostPath": {"path": "/var/log"}},
            {"name": "cni", "hostPath": {"path": "/opt/cni/bin"}},
        ],
    }
    assert warden.violations(spec) == {
        "[denied by autogke-default-linux-capabilities]": [
            f"linux capability 'SYS_ADMIN,NET_ADMIN' on container 'falcon-node-sensor' not allowed; Autopilot only allows the capabilities: '{ALLOWED}'."
        ],
        "[denied by autogke-disallow-hostnamespaces]": [
            "enabling hostPID is not allowed in Autopilot.",
            "enabling hostIPC is not allowed in Autopilot.",
            "enabling hostNetwork is not allowed in Autopilot.",
        ],
        "[denied by autogke-disallow-privilege]": [
            "container falcon-node-sensor is privileged; not allowed in Autopilot",
            "container init-falconstore is privileged; not allowed in Autopilot",
        ],
        "[denied by autogke-no-host-port]": ["container falcon-node-sensor specifies host ports [8125], which are disallowed in Autopilot."],
        # writable mounts first, whatever their path, then read-only ones outside /var/log/
        # (istio/istio.io#16266: a writable /opt/cni/bin is "write mode", a read-only /proc "path")
        "[denied by autogke-no-write-mode-hostpath]": [
            "hostPath volume logs in container falcon-node-sensor is accessed in write mode; disallowed in Autopilot.",
            "hostPath volume cni in container falcon-node-sensor is accessed in write mode; disallowed in Autopilot.",
            "hostPath volume proc used in container falcon-node-sensor uses path /proc which is not allowed in Autopilot. "
            "Allowed path prefixes for hostPath volumes are: [/var/log/].",
        ],
    }


def test_a_templates_host_network_ports_are_not_host_ports_but_a_pods_are() -> None:
    """defaultHostNetworkPorts runs on Pods only since 1.28 (kubeshark/kubeshark#1425's denial of
    a hostNetwork DaemonSet has no autogke-no-host-port entry)."""
    spec = {"hostNetwork": True, "containers": [{"name": "agent", "ports": [{"containerPort": 9100}]}]}
    assert "[denied by autogke-no-host-port]" not in warden.violations(spec, pod=False)
    assert warden.violations(spec)["[denied by autogke-no-host-port]"] == [
        "container agent specifies host ports [9100], which are disallowed in Autopilot."
    ]


def test_users_may_not_write_to_the_managed_kube_system_namespace() -> None:
    """prometheus-community/helm-charts#4833, cert-manager#3713: Autopilot's authorizer refuses
    a release's objects in kube-system; the platform's own controllers write there."""
    sim = build_cluster(load_profile("gke-autopilot"), namespaces=[])
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "leader", "namespace": "kube-system"}}
    with pytest.raises(ApiError) as err:
        sim.store.create(role, actor="helm")
    assert err.value.message == (
        'roles.rbac.authorization.k8s.io "leader" is forbidden: User "system:serviceaccount:flux-system:helm-controller" '
        'cannot create resource "roles" in API group "rbac.authorization.k8s.io" in the namespace "kube-system": '
        'GKEAutopilot authz: the namespace "kube-system" is managed and the request\'s verb "create" is denied'
    )
    sim.store.create(role, actor="kube-controller-manager")


def _deployment(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "app", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {"metadata": {"labels": {"app": "a"}}, "spec": spec}},
    }


def test_the_workload_is_refused_on_create_and_update_only_on_autopilot() -> None:
    clean = {"containers": [{"name": "app", "image": "x"}]}
    bad = {"containers": [{"name": "app", "image": "x", "securityContext": {"privileged": True}}]}
    standard = build_cluster(load_profile("gke-dataplane-v2"), namespaces=[])
    standard.store.create(_deployment(bad), actor="test")  # GKE Standard has no Warden
    sim = build_cluster(load_profile("gke-autopilot"), namespaces=[])
    with pytest.raises(ApiError) as err:
        sim.store.create(_deployment(bad), actor="test")
    assert err.value.message == (
        'admission webhook "warden-validating.common-webhooks.networking.gke.io" denied the request: GKE Warden rejected the '
        "request because it violates one or more constraints.\n"
        'Violations details: {"[denied by autogke-disallow-privilege]":["container app is privileged; not allowed in Autopilot"]}'
    )
    live = sim.store.create(_deployment(clean), actor="test")
    live["spec"]["template"]["spec"] = bad
    with pytest.raises(ApiError):
        sim.store.update(live, actor="test")


_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["name", "hostPath", "path", "ports", "securityContext", "capabilities", "add", "volumeMounts", "readOnly", "containers", "volumes", "hostPort", "containerPort", "hostNetwork"]), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_junk)
def test_any_json_shape_is_read_without_raising(spec: Any) -> None:
    found = warden.violations(spec) if isinstance(spec, dict) else {}
    assert all(k.startswith("[denied by autogke-") and v for k, v in found.items())
    template = warden.pod_spec_of({"kind": "Deployment", "spec": {"template": {"spec": spec}}})
    assert template is not None and (template == spec if isinstance(spec, dict) else template == {})
