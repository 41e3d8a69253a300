"""The kubelet and the objects a pod references: Secret/ConfigMap volumes, env, pull secrets.

Texts: pkg/volume/secret/secret.go, pkg/volume/configmap/configmap.go, pkg/volume/projected/
projected.go (through the kubelet managers' NotFound), operation_generator.go ("MountVolume.SetUp
failed for volume …"), kubelet_pods.go makeEnvironmentVariables and getPullSecretsForPod,
kuberuntime_container.go startContainer ("Error: …", CreateContainerConfigError).
Timings under the kind profile (scheduling 0.1 s, image pull 3 s, container start 0.5 s): mount
retries 500 ms doubling (exponential_backoff.go), the pod worker's 300 ms poll and 2m3s wait
(volume_manager.go), the 10 s requeue of a failed pod sync (kubelet.go backOffPeriod).
"""

from __future__ import annotations

from typing import Any

from helmsim.cluster import podrefs
from helmsim.cluster.controllers.kubelet import Kubelet
from helmsim.cluster.controllers.scheduler import Scheduler
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile
from helmsim.kube.pods import kubectl_columns


def _sim() -> Simulation:
    sim = Simulation(load_profile("kind"))
    Scheduler(sim)
    Kubelet(sim)
    return sim


def _pod(*, volumes: Any = (), env: Any = (), env_from: Any = (), **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "app:1.0"}
    if env:
        container["env"] = list(env)
    if env_from:
        container["envFrom"] = list(env_from)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [container],
            "volumes": list(volumes),
            **spec,
        },
    }


def _obj(kind: str, name: str, **data: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "ns"}, **data}


def _create_at(sim: Simulation, t: float, obj: dict[str, Any]) -> None:
    sim.after(t, lambda: sim.store.create(obj, actor="helm"))


def _events(sim: Simulation, reason: str) -> list[tuple[float, str]]:
    return [
        (round(e.time, 3), e.message)
        for e in sim.trace.find(what="event", reason=reason)
        if e.obj == "Pod/ns/p"
    ]


def _pod_now(sim: Simulation) -> dict[str, Any]:
    pod = sim.store.get("Pod", "ns", "p")
    assert pod is not None
    return pod


def _kubectl(sim: Simulation) -> tuple[str, str]:
    cols = kubectl_columns(_pod_now(sim), sim.datetime())
    return cols.ready, cols.status


SECRET_VOLUME = {"name": "creds", "secret": {"secretName": "db"}}


# --- Secret / ConfigMap volumes -------------------------------------------------------------------
def test_missing_secret_volume_keeps_the_pod_container_creating_with_failed_mount_backoff() -> None:
    sim = _sim()
    sim.store.create(_pod(volumes=[SECRET_VOLUME]), actor="helm")
    sim.run(until=60)
    msg = 'MountVolume.SetUp failed for volume "creds" : secret "db" not found'
    # bound at 0.1; retries 0.5, 1, 2, 4, 8, 16 s apart
    assert _events(sim, "FailedMount") == [
        (0.1, msg),
        (0.6, msg),
        (1.6, msg),
        (3.6, msg),
        (7.6, msg),
        (15.6, msg),
        (31.6, msg),
    ]
    pod = _pod_now(sim)
    assert pod["status"]["phase"] == "Pending"
    assert "podIP" not in pod["status"]  # the sandbox is created after the volumes
    assert pod["status"]["containerStatuses"][0]["state"] == {
        "waiting": {"reason": "ContainerCreating"}
    }
    assert _kubectl(sim) == ("0/1", "ContainerCreating")
    assert _events(sim, "Pulling") == []


def test_pod_starts_at_the_first_mount_retry_after_the_secret_appears() -> None:
    sim = _sim()
    sim.store.create(_pod(volumes=[SECRET_VOLUME]), actor="helm")
    _create_at(sim, 20, _obj("Secret", "db", data={"password": "cA=="}))
    sim.run(until=60)
    # retries at 15.6 (still missing) then 31.6: mounted; the pod worker's poll sees it at 31.6
    assert [t for t, _ in _events(sim, "FailedMount")][-1] == 15.6
    assert _events(sim, "Pulling") == [(31.6, 'Pulling image "app:1.0"')]
    assert _events(sim, "Started") == [(35.1, "Started container app")]


def test_mount_wait_times_out_after_2m3s_and_the_sync_is_retried() -> None:
    sim = _sim()
    sim.store.create(_pod(volumes=[SECRET_VOLUME]), actor="helm")
    sim.run(until=300)
    failed = [(round(e.time, 3), e.message) for e in sim.trace.find(what="sync-failed")]
    text = (
        "Error syncing pod, skipping: unmounted volumes=[creds], unattached volumes=[], "
        "failed to process volumes=[]: context deadline exceeded"
    )
    # 0.1 + 123 = 123.1; the next sync starts 10 s later and waits 123 s again
    assert failed == [(123.1, text), (256.1, text)]
    # no event for the timeout (kubelet.go since 1.28: wait.Interrupted errors are only logged)
    assert not any("Unable to attach or mount volumes" in m for _, m in _events(sim, "FailedMount"))
    # the back-off caps at 2m2s
    times = [t for t, _ in _events(sim, "FailedMount")]
    assert times[-2:] == [127.6, 249.6]


def test_mount_retry_that_succeeds_between_syncs_waits_for_the_next_sync() -> None:
    sim = _sim()
    sim.store.create(_pod(volumes=[SECRET_VOLUME]), actor="helm")
    _create_at(sim, 100, _obj("Secret", "db", data={}))
    sim.run(until=200)
    # retry at 127.6 mounts it; the first wait ended at 123.1, the next sync starts at 133.1
    assert _events(sim, "Pulling") == [(133.1, 'Pulling image "app:1.0"')]


def test_configmap_volume_and_missing_keys() -> None:
    sim = _sim()
    vols = [
        {"name": "conf", "configMap": {"name": "app", "items": [{"key": "app.yaml", "path": "a"}]}},
        {
            "name": "keys",
            "secret": {"secretName": "tls", "items": [{"key": "tls.key", "path": "k"}]},
        },
    ]
    sim.store.create(_obj("ConfigMap", "app", data={"other.yaml": "x"}), actor="helm")
    sim.store.create(_obj("Secret", "tls", data={"tls.crt": "eA=="}), actor="helm")
    sim.store.create(_pod(volumes=vols), actor="helm")
    sim.run(until=1)
    assert _events(sim, "FailedMount")[:2] == [
        (
            0.1,
            'MountVolume.SetUp failed for volume "conf" : configmap references non-existent config key: app.yaml',
        ),
        (
            0.1,
            'MountVolume.SetUp failed for volume "keys" : references non-existent secret key: tls.key',
        ),
    ]


def test_optional_volumes_and_optional_missing_keys_mount() -> None:
    sim = _sim()
    vols = [
        {"name": "a", "secret": {"secretName": "absent", "optional": True}},
        {"name": "b", "configMap": {"name": "absent", "optional": True}},
        {
            "name": "c",
            "configMap": {
                "name": "there",
                "optional": True,
                "items": [{"key": "nope", "path": "x"}],
            },
        },
        {"name": "d", "projected": {"sources": [{"secret": {"name": "absent", "optional": True}}]}},
    ]
    sim.store.create(_obj("ConfigMap", "there", data={}), actor="helm")
    sim.store.create(_pod(volumes=vols), actor="helm")
    sim.run(until=10)
    assert _events(sim, "FailedMount") == []
    assert _events(sim, "Started") == [(3.6, "Started container app")]


def test_projected_volume_aggregates_its_sources_errors() -> None:
    sim = _sim()
    vol = {
        "name": "bundle",
        "projected": {
            "sources": [
                {"secret": {"name": "s1"}},
                {"configMap": {"name": "c1"}},
                {"downwardAPI": {"items": []}},
            ]
        },
    }
    sim.store.create(_pod(volumes=[vol]), actor="helm")
    sim.run(until=0.2)
    assert _events(sim, "FailedMount") == [
        (
            0.1,
            'MountVolume.SetUp failed for volume "bundle" : [secret "s1" not found, configmap "c1" not found]',
        )
    ]


def test_deleting_a_pod_that_waits_for_its_volumes_stops_the_retries() -> None:
    sim = _sim()
    sim.store.create(_pod(volumes=[SECRET_VOLUME]), actor="helm")
    sim.after(5, lambda: sim.store.delete("Pod", "ns", "p", actor="helm"))
    sim.run(until=60)
    assert [t for t, _ in _events(sim, "FailedMount")] == [0.1, 0.6, 1.6, 3.6]


# --- environment ------------------------------------------------------------------------------------
def test_missing_env_configmap_is_create_container_config_error_retried_every_10s() -> None:
    sim = _sim()
    env = [{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}}]
    sim.store.create(_pod(env=env), actor="helm")
    _create_at(sim, 25, _obj("ConfigMap", "settings", data={"mode": "fast"}))
    sim.run(until=15)
    assert _events(sim, "Failed") == [
        (3.1, 'Error: configmap "settings" not found'),
        (13.1, 'Error: configmap "settings" not found'),
    ]
    waiting = _pod_now(sim)["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting == {
        "reason": "CreateContainerConfigError",
        "message": 'configmap "settings" not found',
    }
    assert _pod_now(sim)["status"]["phase"] == "Pending"
    assert _kubectl(sim) == ("0/1", "CreateContainerConfigError")
    sim.run(until=40)
    # the retry at 33.1 finds the image present and the ConfigMap created at 25
    assert _events(sim, "Pulled")[-1] == (
        33.1,
        'Container image "app:1.0" already present on machine',
    )
    assert _events(sim, "Started") == [(33.6, "Started container app")]


def test_env_key_and_secret_texts() -> None:
    cases = [
        (
            [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "missing"}}}],
            [],
            "couldn't find key missing in ConfigMap ns/cm",
        ),
        (
            [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "missing"}}}],
            [],
            "couldn't find key missing in Secret ns/sec",
        ),
        (
            [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k"}}}],
            [],
            'secret "nope" not found',
        ),
        ([], [{"secretRef": {"name": "nope"}}], 'secret "nope" not found'),
        ([], [{"configMapRef": {"name": "nope"}}], 'configmap "nope" not found'),
    ]
    for env, env_from, text in cases:
        sim = _sim()
        sim.store.create(
            _obj("ConfigMap", "cm", data={"k": "v"}, binaryData={"missing": "eA=="}), actor="t"
        )
        sim.store.create(_obj("Secret", "sec", data={"k": "eA=="}), actor="t")
        sim.store.create(_pod(env=env, env_from=env_from), actor="helm")
        sim.run(until=4)
        assert _events(sim, "Failed") == [(3.1, f"Error: {text}")], text


def test_optional_env_references_are_skipped() -> None:
    sim = _sim()
    env = [
        {
            "name": "A",
            "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k", "optional": True}},
        },
        {
            "name": "B",
            "valueFrom": {"secretKeyRef": {"name": "sec", "key": "absent", "optional": True}},
        },
    ]
    env_from = [{"secretRef": {"name": "absent", "optional": True}}]
    sim.store.create(_obj("Secret", "sec", stringData={"k": "v"}), actor="t")
    sim.store.create(_pod(env=env, env_from=env_from), actor="helm")
    sim.run(until=10)
    assert _events(sim, "Failed") == []
    assert _events(sim, "Started") == [(3.6, "Started container app")]


def test_init_container_config_error_shows_init_status() -> None:
    sim = _sim()
    pod = _pod()
    pod["spec"]["initContainers"] = [
        {"name": "wait", "image": "busybox:1.36", "envFrom": [{"secretRef": {"name": "later"}}]}
    ]
    sim.store.create(pod, actor="helm")
    sim.run(until=10)
    assert _kubectl(sim) == ("0/1", "Init:CreateContainerConfigError")
    assert _pod_now(sim)["status"]["phase"] == "Pending"


# --- pull secrets ---------------------------------------------------------------------------------
def test_missing_pull_secret_is_a_warning_and_the_public_image_still_pulls() -> None:
    sim = _sim()
    sim.store.create(
        _pod(imagePullSecrets=[{"name": "regcred"}, {"name": "present"}, {"name": "ghcr"}]),
        actor="helm",
    )
    sim.store.create(_obj("Secret", "present", data={}), actor="t")
    sim.run(until=10)
    assert _events(sim, "FailedToRetrieveImagePullSecret") == [
        (
            0.1,
            podrefs.pull_secrets_message(["regcred", "ghcr"]),
        )
    ]
    assert _events(sim, "Started") == [(3.6, "Started container app")]


def test_pull_secret_message_is_the_kubelets_text() -> None:
    assert podrefs.pull_secrets_message(["regcred"]) == (
        "Unable to retrieve some image pull secrets (regcred); attempting to pull the image may "
        "not succeed."
    )
