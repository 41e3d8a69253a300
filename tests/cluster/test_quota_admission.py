"""ResourceQuota and LimitRanger admission as kube-apiserver runs them on create: usage, the
must-specify constraint, exceeded quotas with upstream's text, scopes, object counts, LimitRange
defaults and bounds."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.cluster.cluster import build_cluster
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile
from helmsim.cluster.store import ApiError


def _sim(*objects: dict[str, Any]) -> Simulation:
    sim = build_cluster(load_profile("kind"), namespaces=["apps"])
    for obj in objects:
        sim.store.create(obj, actor="test")
    return sim


def _quota(hard: dict[str, Any], name: str = "q", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": "apps"}, "spec": {"hard": hard, **spec}}


def _limits(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": "apps"}, "spec": {"limits": list(items)}}


def _pod(name: str, resources: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "x"}
    if resources is not None:
        container["resources"] = resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "apps"}, "spec": {"containers": [container], **spec}}


def _refused(sim: Simulation, obj: dict[str, Any]) -> str | None:
    try:
        sim.store.create(obj, actor="test")
    except ApiError as err:
        return err.message
    return None


SIZED = {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}


def test_a_cpu_quota_needs_every_container_to_set_it() -> None:
    sim = _sim(_quota({"requests.cpu": "1", "limits.memory": "1Gi"}))
    assert _refused(sim, _pod("a")) == 'pods "a" is forbidden: failed quota: q: must specify limits.memory for: app; requests.cpu for: app'
    # limits stand in for unset requests (pkg/apis/core/v1/defaults.go SetDefaults_Pod)
    assert _refused(sim, _pod("b", {"limits": {"cpu": "100m", "memory": "64Mi"}})) is None


def test_usage_adds_up_until_the_quota_is_exceeded_with_upstreams_text() -> None:
    sim = _sim(_quota({"requests.cpu": "1", "requests.memory": "1Gi", "pods": "5"}, name="compute"))
    assert _refused(sim, _pod("a", SIZED)) is None
    assert _refused(sim, _pod("b", SIZED)) is None
    assert _refused(sim, _pod("c", SIZED)) == (
        'pods "c" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=1, limited: requests.cpu=1'
    )


def test_terminal_pods_free_compute_but_count_for_count_pods() -> None:
    sim = _sim(_quota({"requests.cpu": "500m", "count/pods": "2"}))
    assert _refused(sim, _pod("a", SIZED)) is None
    assert sim.store.update_status("Pod", "apps", "a", {"phase": "Succeeded"}, actor="test") is not None
    assert _refused(sim, _pod("b", SIZED)) is None
    assert _refused(sim, _pod("c", {"requests": {"cpu": "0"}})) == (
        'pods "c" is forbidden: exceeded quota: q, requested: count/pods=1, used: count/pods=2, limited: count/pods=2'
    )


@pytest.mark.parametrize(
    ("scopes", "pod", "tracked"),
    [
        (["BestEffort"], _pod("p"), True),
        (["BestEffort"], _pod("p", SIZED), False),
        (["NotBestEffort"], _pod("p", SIZED), True),
        (["Terminating"], _pod("p", activeDeadlineSeconds=60), True),
        (["NotTerminating"], _pod("p", activeDeadlineSeconds=60), False),
    ],
)
def test_scoped_quotas_track_only_the_pods_their_scopes_select(scopes: list[str], pod: dict[str, Any], tracked: bool) -> None:
    sim = _sim(_quota({"pods": "0"}, scopes=scopes))
    message = _refused(sim, pod)
    assert (message is not None) == tracked
    if tracked:
        assert message == 'pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0'


def test_priority_class_scope_selector() -> None:
    selector = {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}
    sim = _sim(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
        _quota({"pods": "0"}, scopeSelector=selector),
    )
    assert _refused(sim, _pod("low")) is None
    assert _refused(sim, _pod("high", priorityClassName="high")) is not None


def test_object_counts_services_and_claims() -> None:
    # every namespace holds kube-root-ca.crt (the root CA publisher's ConfigMap): it counts
    sim = _sim(_quota({"services.loadbalancers": "0", "count/configmaps": "2", "requests.storage": "10Gi"}))
    lb = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "apps"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}
    assert _refused(sim, lb) == (
        'services "web" is forbidden: exceeded quota: q, requested: services.loadbalancers=1, used: services.loadbalancers=0, '
        "limited: services.loadbalancers=0"
    )
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one", "namespace": "apps"}}
    assert _refused(sim, cm) is None
    assert _refused(sim, {**cm, "metadata": {"name": "two", "namespace": "apps"}}) == (
        'configmaps "two" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2'
    )
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "apps"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}},
    }
    assert _refused(sim, claim) == (
        'persistentvolumeclaims "data" is forbidden: exceeded quota: q, requested: requests.storage=20Gi, used: requests.storage=0, '
        "limited: requests.storage=10Gi"
    )


def test_a_limit_range_defaults_unset_resources_and_says_so() -> None:
    sim = _sim(_limits({"type": "Container", "default": {"cpu": "250m"}, "defaultRequest": {"cpu": "100m"}, "max": {"memory": "1Gi"}}))
    created = sim.store.create(_pod("a", {"limits": {"memory": "512Mi"}}), actor="test")
    resources = created["spec"]["containers"][0]["resources"]
    # max defaults the limit, the limit defaults the request (SetDefaults_LimitRangeItem)
    assert resources == {"limits": {"memory": "512Mi", "cpu": "250m"}, "requests": {"memory": "512Mi", "cpu": "100m"}}
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container app; cpu limit for container app"
    )


def test_limit_range_bounds_refuse_with_every_violation() -> None:
    sim = _sim(
        _limits(
            {"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "512Mi"}, "maxLimitRequestRatio": {"cpu": "2"}},
        )
    )
    pod = _pod("a", {"requests": {"cpu": "50m", "memory": "1Gi"}, "limits": {"cpu": "200m", "memory": "1Gi"}})
    assert _refused(sim, pod) == (
        'pods "a" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, '
        "maximum memory usage per Container is 512Mi, but limit is 1Gi, "
        "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000]"
    )
    assert _refused(sim, _pod("b", {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m", "memory": "256Mi"}})) is None


def test_a_pod_limit_range_bounds_the_sum_of_its_containers() -> None:
    sim = _sim(_limits({"type": "Pod", "max": {"cpu": "1"}}))
    pod = _pod("a", {"limits": {"cpu": "600m"}})
    pod["spec"]["containers"].append({"name": "side", "image": "x", "resources": {"limits": {"cpu": "600m"}}})
    assert _refused(sim, pod) == 'pods "a" is forbidden: maximum cpu usage per Pod is 1, but limit is 1200m'


def test_limits_count_sidecars_and_overhead_and_limit_ranges_bound_init_containers() -> None:
    """component-helpers resource/helpers.go PodLimits sums sidecars (restartPolicy: Always init
    containers) and overhead; LimitRanger bounds init containers too, and a Pod-type bound
    takes the larger of the containers' sum and any init container."""
    sim = _sim(_quota({"limits.memory": "200Mi"}, name="mem"))
    pod = _pod("a", {"limits": {"memory": "128Mi"}})
    pod["spec"]["initContainers"] = [{"name": "side", "image": "x", "restartPolicy": "Always", "resources": {"limits": {"memory": "128Mi"}}}]
    assert _refused(sim, pod) == (
        'pods "a" is forbidden: exceeded quota: mem, requested: limits.memory=256Mi, used: limits.memory=0, limited: limits.memory=200Mi'
    )
    bounded = _sim(_limits({"type": "Container", "max": {"memory": "150Mi"}}))
    init = _pod("b", {"limits": {"memory": "100Mi"}})
    init["spec"]["initContainers"] = [{"name": "setup", "image": "x", "resources": {"limits": {"memory": "192Mi"}}}]
    assert _refused(bounded, init) == 'pods "b" is forbidden: maximum memory usage per Container is 150Mi, but limit is 192Mi'
    per_pod = _sim(_limits({"type": "Pod", "max": {"memory": "150Mi"}}))
    assert _refused(per_pod, {**init, "metadata": {"name": "c", "namespace": "apps"}}) == (
        'pods "c" is forbidden: maximum memory usage per Pod is 150Mi, but limit is 192Mi'
    )


def test_every_quotas_must_specify_is_checked_before_any_usage() -> None:
    """controller.go CheckRequest: a pod that sets no cpu request is refused by the quota that
    tracks it, even when another quota (sorted first) would also be exceeded."""
    sim = _sim(_quota({"pods": "0"}, name="a"), _quota({"requests.cpu": "1"}, name="b"))
    assert _refused(sim, _pod("p")) == 'pods "p" is forbidden: failed quota: b: must specify requests.cpu for: app'


def test_usage_is_kept_by_the_stores_writes() -> None:
    """The ledger follows deletes and phase changes, as the quota controller recounts."""
    sim = _sim(_quota({"pods": "1"}))
    assert _refused(sim, _pod("a")) is None
    assert _refused(sim, _pod("b")) is not None
    sim.store.delete("Pod", "apps", "a", actor="test")
    assert _refused(sim, _pod("b")) is None
    assert sim.store.update_status("Pod", "apps", "b", {"phase": "Failed"}, actor="test") is not None
    assert _refused(sim, _pod("c")) is None


@given(
    st.dictionaries(st.sampled_from(["hard", "scopes", "scopeSelector"]), st.none() | st.integers() | st.text(max_size=3) | st.lists(st.integers(), max_size=2), max_size=3),
    st.dictionaries(st.sampled_from(["limits", "type"]), st.none() | st.integers() | st.lists(st.none() | st.integers() | st.dictionaries(st.sampled_from(["type", "max", "default"]), st.none() | st.integers(), max_size=2), max_size=2), max_size=2),
)
@settings(max_examples=60, deadline=None)
def test_malformed_quotas_and_limit_ranges_never_raise_anything_but_a_refusal(quota_spec: dict[str, Any], lr_spec: dict[str, Any]) -> None:
    sim = _sim(
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "apps"}, "spec": quota_spec},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": "apps"}, "spec": lr_spec},
    )
    message = _refused(sim, _pod("p", SIZED))
    assert message is None or message.startswith('pods "p" is ')


def test_extended_resources_cannot_be_overcommitted() -> None:
    """ValidateResourceRequirements: a GPU request must equal its limit, and needs one."""
    sim = _sim()
    unequal = _refused(sim, _pod("a", {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}}))
    assert unequal is not None and unequal.endswith(
        'spec.containers[0].resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'
    )
    missing = _refused(sim, _pod("b", {"requests": {"nvidia.com/gpu": "1"}}))
    assert missing is not None and missing.endswith(
        "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
    )
    assert _refused(sim, _pod("c", {"limits": {"nvidia.com/gpu": "1"}})) is None  # requests default to limits


def test_a_pod_is_validated_after_the_limit_range_defaults_it() -> None:
    """apiserver handlers/create.go: mutating admission (LimitRanger) runs before the strategy's
    Validate, so a GPU request whose limit a LimitRange defaults is a valid pod."""
    sim = _sim(_limits({"type": "Container", "default": {"nvidia.com/gpu": "1"}}))
    created = sim.store.create(_pod("a", {"requests": {"nvidia.com/gpu": "1"}}), actor="test")
    assert created["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    refused = _refused(_sim(), _pod("b", {"requests": {"nvidia.com/gpu": "1"}}))
    assert refused is not None and refused.endswith("Limit must be set for non overcommitable resources")


def test_limit_ranges_apply_one_after_another_the_first_default_wins_and_answers() -> None:
    """admission.go runLimitFunc: each LimitRange in turn; a resource the first one defaults is
    not defaulted again, and the first one that refuses gives the error."""
    first = {**_limits({"type": "Container", "default": {"cpu": "300m"}}), "metadata": {"name": "a", "namespace": "apps"}}
    second = {**_limits({"type": "Container", "default": {"cpu": "100m", "memory": "64Mi"}, "max": {"memory": "32Mi"}}),
              "metadata": {"name": "b", "namespace": "apps"}}
    sim = _sim(first, second)
    assert _refused(sim, _pod("p")) == 'pods "p" is forbidden: maximum memory usage per Container is 32Mi, but limit is 64Mi'
    relaxed = _sim(first, {**second, "spec": {"limits": [{"type": "Container", "default": {"cpu": "100m", "memory": "64Mi"}}]}})
    created = relaxed.store.create(_pod("q"), actor="test")
    assert created["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "300m", "memory": "64Mi"}


def test_release_storage_says_what_storing_one_more_prunes() -> None:
    """helm/helm pkg/storage/storage.go removeLeastRecent: down to maxHistory − 1 before the
    new revision, never the deployed one; 0 keeps everything."""
    from helmsim.helm.release import Release, ReleaseStorage

    storage = ReleaseStorage()
    for revision, status in ((1, "superseded"), (2, "deployed"), (3, "failed")):
        storage.add(Release("app", "apps", revision, "app-1", status, (), ()))  # type: ignore[arg-type]
    assert storage.stored("apps") == 3 and storage.stored("other") == 0
    assert storage.pruned_by("apps", "app", 0) == 0
    assert storage.pruned_by("apps", "app", 5) == 0
    assert storage.pruned_by("apps", "app", 2) == 2
    assert storage.pruned_by("apps", "app", 1) == 2  # the deployed revision stays
