"""Spark's standalone Worker binds its web UI, which the chart's probes GET, before it registers
with the master, and retries a failed registration for minutes (apache/spark
core/src/main/scala/org/apache/spark/deploy/worker/Worker.scala onStart, reregisterWithMaster).
With no entry for the Bitnami Spark image, helmsim took the worker to dial the master once at
start and exit when refused: bitnami/spark's defaults ended Stalled (HS116) under kind, a false
alarm (catalog entries bitnami-spark-worker, bitnami-spark-master)."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, catalog_entries, restarts, simulate_chart

CHART = "spark-workers"


def test_workers_wait_for_the_master_and_the_release_gets_ready() -> None:
    result = simulate_chart(CHART, "kind")
    assert result.releases[0].outcome == "Ready"
    assert catalog_entries(result, "spark-worker") == {"bitnami-spark-worker"}
    assert catalog_entries(result, "spark-master") == {"bitnami-spark-master"}
    assert "needs svc/default/spark-workers-master-svc:7077 (catalog entry)" in behaviour_notes(result, "spark-worker")
    # the first worker came up before the master was ready: it retried, it did not exit
    assert any(e.what == "connect-refused" for e in result.trace if "spark-workers-worker-0" in e.obj)
    assert all(v == 0 for v in restarts(result).values())


def test_without_a_master_the_workers_still_answer_their_probes() -> None:
    result = simulate_chart(CHART, "kind", values=("ci/no-master-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    assert all(v == 0 for v in restarts(result).values())  # 330 s of retries are not over yet


def test_an_image_nothing_describes_is_assumed_to_give_up_at_once() -> None:
    result = simulate_chart(CHART, "kind", values=("ci/unknown-values.yaml",))
    assert result.releases[0].outcome == "Stalled"
    assert any(v > 0 for k, v in restarts(result).items() if k.endswith("/spark-worker"))
