"""Programs waiting for what the cluster may never give: a load-balancer address, a broker named
only in a config file (tests/realcharts/README.md: "Waits a sweep found: load-balancer addresses
and brokers in config files").

What a real cluster does:

* ``lb-auto-discovery/`` (bitnami/kafka ``externalAccess.autoDiscovery`` with LoadBalancer
  Services): the init container asks for its pod's ``-external`` Service's
  ``status.loadBalancer.ingress`` 12 times 5 s apart and exits 1 without a word when no address
  came (bitnami/charts ``bitnami/kafka/templates/_init_containers.tpl`` retry_while). Only a
  load-balancer controller writes that field (k8s.io/cloud-provider
  ``controllers/service/controller.go``): kind runs none, so every pod stays
  ``Init:CrashLoopBackOff`` and Helm's wait times out; on EKS the ELB's hostname arrives and
  the brokers start.
* ``config-file-peer/`` (grafana-community/helm-charts tempo-distributed with
  ``ci/kafka-ingest-values.yaml``): Tempo's block-builder pings the broker its ``tempo.yaml``
  names ten times with back-off, then exits 1 (grafana/tempo ``pkg/ingest/util.go``
  WaitForKafkaBroker); a broker Service that does not exist never answers, so the StatefulSet
  crash-loops and the release stalls.
"""

from __future__ import annotations

from typing import Any

import pytest
from realcharts_helpers import HERE, behaviour_notes, simulate_chart
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.simulate import SimulationResult

NODEPORT = ("ci/nodeport-values.yaml",)
WITH_BROKER = ("ci/with-broker-values.yaml",)
NO_INGEST = ("ci/no-ingest-values.yaml",)


def _events(result: SimulationResult, what: str, obj: str | None = None) -> list[Any]:
    return [e for e in result.trace if e.what == what and (obj is None or e.obj == obj)]


def _cli(chart: str, profile: str, *args: str) -> Any:
    argv = ["simulate", str(HERE / chart), "-p", profile, "--no-color", *args]
    return CliRunner().invoke(app, argv, env={"COLUMNS": "400"})


# --- a load-balancer address -------------------------------------------------------------------


def test_without_a_load_balancer_controller_the_auto_discovery_init_container_crash_loops() -> None:
    # before the bitnami-kafka-auto-discovery-lb entry the init container "ran 5 s then exited 0
    # (assumption for init containers)" and the release was predicted Ready on kind
    result = simulate_chart("lb-auto-discovery", "kind")
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    assert "timeout waiting for: [StatefulSet/default/lb-auto-discovery status: 'InProgress']" in release.message
    pod = "Pod/default/lb-auto-discovery-0"
    (first, *_) = _events(result, "need-failed", pod)
    assert first.data["need"] == "Service/default/lb-auto-discovery-0-external with status.loadBalancer.ingress set"
    assert first.data["exitCode"] == 1
    started = next(e for e in _events(result, "event", pod) if e.message == "Started container auto-discovery")
    # 12 tries 5 s apart and the sleep after the last: it gives up 60 s after it started
    assert first.time - started.time == pytest.approx(60.0)
    # the script prints nothing when it gives up: no invented log line
    assert not [e for e in _events(result, "container-log", pod) if e.data.get("container") == "auto-discovery"]
    assert _events(result, "no-load-balancer")
    assert not _events(result, "load-balancer")


def test_the_finding_asks_for_a_load_balancer_controller_not_for_an_earlier_object() -> None:
    out = _cli("lb-auto-discovery", "kind").stdout
    assert (
        "cause HS116: StatefulSet/default/lb-auto-discovery's container auto-discovery (catalog entry "
        "bitnami-kafka-auto-discovery-lb) needs Service/default/lb-auto-discovery-0-external with "
        "status.loadBalancer.ingress set, which the cluster does not have when it runs"
    ) in out
    assert (
        "fix   give the cluster a load-balancer controller that writes status.loadBalancer.ingress of "
        "Service/default/lb-auto-discovery-0-external"
    ) in out
    assert "a lower hook weight" not in out
    assert out.count("cause HS116") == 1  # one finding for the StatefulSet, not one per pod


@pytest.mark.parametrize(("profile", "field"), [("eks-gp3", "hostname"), ("eks-vpc-cni", "hostname"), ("aks-cilium", "ip"), ("k3s", "ip")])
def test_with_the_profiles_load_balancer_controller_the_address_arrives_and_the_brokers_start(profile: str, field: str) -> None:
    result = simulate_chart("lb-auto-discovery", profile)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert result.sim is not None
    svc = result.sim.store.get("Service", "default", "lb-auto-discovery-1-external")
    assert svc is not None
    (ingress,) = svc["status"]["loadBalancer"]["ingress"]
    assert set(ingress) >= {field}
    ensured = [e for e in _events(result, "load-balancer") if e.obj == "Service/default/lb-auto-discovery-1-external"]
    assert len(ensured) == 1 and "Ensured load balancer" in ensured[0].message
    assert not _events(result, "need-failed")


def test_the_nodeport_branch_is_not_described_by_the_load_balancer_entry() -> None:
    result = simulate_chart("lb-auto-discovery", "kind", values=NODEPORT)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert "runs 5 s then exits 0 (assumption for init containers)" in behaviour_notes(result, "auto-discovery")


# --- a broker named in a config file ----------------------------------------------------------


def test_a_broker_named_only_in_the_config_file_that_does_not_exist_stalls_the_release() -> None:
    # before the tempo-block-builder entry the block-builder was "assumed to start and succeed"
    # and the release was predicted Ready under every profile
    result = simulate_chart("config-file-peer", "kind")
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    notes = behaviour_notes(result, "block-builder")
    assert "needs svc/kafka-ci/kafka:9092 (catalog entry)" in notes
    pod = "Pod/default/config-file-peer-block-builder-0"
    (first, *_) = _events(result, "need-failed", pod)
    assert first.data["error"] == "dial tcp: lookup kafka.kafka-ci.svc.cluster.local on 10.96.0.10:53: no such host"
    logs = [e.data["line"] for e in _events(result, "container-log", pod)]
    assert 'level=warn msg="ping kafka; will retry" err="dial tcp: lookup kafka.kafka-ci.svc.cluster.local on 10.96.0.10:53: no such host"' in logs
    assert logs[-1].startswith('level=error msg="error running Tempo" err="failed to start blockbuilder: kafka broker not ready after 10 retries: ')
    # ten pings with back-off from 100 ms doubling: the tenth after 0.1 + 0.2 + … + 25.6 s
    waited = [e for e in _events(result, "program-waiting", pod)]
    started = next(e for e in _events(result, "event", pod) if e.message == "Started container block-builder")
    assert first.time - started.time == pytest.approx(51.1, abs=0.5)
    assert waited


def test_the_finding_names_the_missing_service_of_the_config_file() -> None:
    out = _cli("config-file-peer", "kind").stdout
    assert (
        "needs svc/kafka-ci/kafka:9092, which does not resolve (no Service kafka in namespace kafka-ci)"
    ) in out
    assert "fix   make svc/kafka-ci/kafka:9092 exist before it runs" in out


def test_with_the_broker_in_the_release_the_block_builder_starts() -> None:
    result = simulate_chart("config-file-peer", "kind", values=WITH_BROKER)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert "needs svc/default/config-file-peer-kafka:9092 (catalog entry)" in behaviour_notes(result, "block-builder")


def test_a_config_file_without_the_key_is_said_not_read() -> None:
    result = simulate_chart("config-file-peer", "kind", values=NO_INGEST)
    notes = behaviour_notes(result, "block-builder")
    assert (
        "cannot tell what ${file(--config.file).ingest.kafka.address} means from the files its ConfigMap "
        "volumes mount (a file elsewhere, or a key it lacks, is not read): not needed"
    ) in notes


SCRIPT_FILE = ("ci/script-configmap-values.yaml",)


@pytest.mark.parametrize(("profile", "outcome"), [("kind", "Stalled"), ("eks-gp3", "Ready")])
def test_the_same_wait_run_from_a_mounted_configmap_script_is_read_from_the_file(profile: str, outcome: str) -> None:
    # bitnami/mongodb runs /scripts/auto-discovery.sh from its scripts ConfigMap: the catalog
    # matched only the path before, and the init container was assumed to exit 0 after 5 s
    result = simulate_chart("lb-auto-discovery", profile, values=SCRIPT_FILE)
    (release,) = result.releases
    assert release.outcome == outcome, release.message
    notes = behaviour_notes(result, "auto-discovery")
    assert any(n.startswith("behaviour from catalog entry bitnami-mongodb-auto-discovery ") for n in notes), notes
    assert "runs 5 s then exits 0 (assumption for init containers)" not in notes


def test_a_broker_outside_the_cluster_is_said_to_be_assumed_to_answer() -> None:
    # the simulation cannot reach an external name: the connection is allowed (no policy denies
    # it) and the report says once that it was taken to resolve and answer
    result = simulate_chart("config-file-peer", "kind", sets=("kafkaAddress=broker.example.com:9092",))
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assumed = [e.message for e in result.trace if e.what == "behaviour-assumed" and "outside the cluster" in e.message]
    assert assumed == [
        "broker.example.com:9092 is outside the cluster: assumed to resolve and to answer (container block-builder of "
        "default/config-file-peer-block-builder-0 connects to it; were it missing or down, it would fail)"
    ]
