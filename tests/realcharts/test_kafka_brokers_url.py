"""Schema Registry waits for each broker of ``SCHEMA_REGISTRY_KAFKA_BROKERS``
(``PLAINTEXT://host:port``), 10 tries 10 s apart, then exits 1 (bitnami/containers
``libschemaregistry.sh`` schema_registry_for_kafka_brokers). Nothing read a Kafka listener URL,
so bitnami schema-registry with ``kafka.networkPolicy.allowExternal=false`` was Ready where the
real pod crash-loops."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, simulate_chart

CHART = "kafka-brokers-url"


def test_the_broker_of_the_listener_url_is_waited_for() -> None:
    result = simulate_chart(CHART)
    assert result.releases[0].outcome == "Ready"
    assert any(
        n == "needs svc/default/kafka-headless:9092 (catalog entry)" for n in behaviour_notes(result, "schema-registry")
    )


def test_a_broker_its_policy_isolates_stalls_the_release() -> None:
    for profile in ("kind", "cilium-always"):
        result = simulate_chart(CHART, profile, values=("ci/isolated-values.yaml",))
        assert result.releases[0].outcome == "Stalled", profile
        assert any("Failed to connect to the broker" in e.message for e in result.trace if e.what == "container-log")
