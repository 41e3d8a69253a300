"""A container mounting a volume its pod does not declare (tests/realcharts/README.md: "Pod
templates the API server refuses"): the API server's validation refuses the workload
(kubernetes pkg/apis/core/validation/validation.go ValidateVolumeMounts, field.NotFound), so
Helm's apply of its kind group fails and nothing of the pod template runs."""

from __future__ import annotations

from typing import Any

import pytest
from realcharts_helpers import simulate_chart

from helmsim.cluster.admission import admit
from helmsim.cluster.engine import Simulation
from helmsim.cluster.profile import load_profile
from helmsim.cluster.store import ApiError

WITH_CONFIG = ("ci/with-config-values.yaml",)


def test_a_mount_of_an_undeclared_volume_fails_the_install() -> None:
    # before, the Deployment was created and the release predicted Ready at 5 s
    result = simulate_chart("mount-without-volume", "kind")
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    assert release.message == (
        "Helm install failed for release default/mount-without-volume with chart mount-without-volume@0.1.0: "
        "server-side apply failed for object default/mount-without-volume apps/v1, Kind=Deployment: "
        'Deployment.apps "mount-without-volume" is invalid: '
        'spec.template.spec.containers[1].volumeMounts[0].name: Not found: "proxy-config"'
    )
    assert result.sim is not None
    assert result.sim.store.get("Deployment", "default", "mount-without-volume") is None


def test_with_the_volume_declared_the_release_is_ready() -> None:
    (release,) = simulate_chart("mount-without-volume", "kind", values=WITH_CONFIG).releases
    assert release.outcome == "Ready", release.message


def _cronjob(mounts: list[dict[str, Any]], volumes: list[dict[str, Any]]) -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "image": "x", "volumeMounts": mounts}], "initContainers": [{"name": "i", "image": "x", "volumeMounts": mounts}], "volumes": volumes}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "dump", "namespace": "default"},
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": pod}}}},
    }


@pytest.mark.parametrize(
    ("mounts", "volumes", "message"),
    [
        ([{"name": "a", "mountPath": "/a"}], [{"name": "a", "emptyDir": {}}], None),
        (
            [{"name": "a", "mountPath": "/a"}],
            [],
            'CronJob.batch "dump" is invalid: [spec.jobTemplate.spec.template.spec.initContainers[0].volumeMounts[0].name: '
            'Not found: "a", spec.jobTemplate.spec.template.spec.containers[0].volumeMounts[0].name: Not found: "a"]',
        ),
    ],
)
def test_every_containers_mounts_are_checked_and_the_errors_aggregated(
    mounts: list[dict[str, Any]], volumes: list[dict[str, Any]], message: str | None
) -> None:
    sim = Simulation(load_profile("kind"))
    if message is None:
        assert admit(sim, _cronjob(mounts, volumes))["kind"] == "CronJob"
        return
    with pytest.raises(ApiError) as err:
        admit(sim, _cronjob(mounts, volumes))
    assert err.value.reason == "Invalid"
    assert err.value.message == message
