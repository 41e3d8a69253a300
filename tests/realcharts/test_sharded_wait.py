"""A sharded MongoDB laid out as bitnami/charts bitnami/mongodb-sharded does: the shard's primary
waits for mongos and mongos for the config server's pod -0 (bitnami/containers
libmongodb-sharded.sh, libmongodb.sh mongodb_wait_for_node: wait-for-port 24 times 5 s apart).
With the images unknown each was taken to connect once and exit: the default install crash-looped
until the release was Stalled, where the real one is Ready."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, restarts, simulate_chart

CHART = "sharded-wait"


def test_the_members_wait_for_each_other_and_the_release_gets_ready() -> None:
    result = simulate_chart(CHART)
    assert result.releases[0].outcome == "Ready"
    assert all(v == 0 for v in restarts(result).values())
    mongos = behaviour_notes(result, "mongos")
    assert mongos[0].startswith("behaviour from catalog entry bitnami-mongodb-sharded-mongos (")
    # the config server's pod under its headless Service is a need on that Service
    assert "needs svc/default/headless:27017 (catalog entry)" in mongos


def test_a_shard_mongos_refuses_gives_up_after_two_minutes() -> None:
    result = simulate_chart(CHART, values=("ci/isolated-values.yaml",))
    assert result.releases[0].outcome == "Stalled"
    logs = [str(e.data.get("line")) for e in result.trace if e.what == "container-log" and e.obj.startswith("Pod/default/shard0-data-")]
    assert "mongodb ERROR ==> Unable to connect to host mongos" in logs
    exits = [e.time for e in result.trace if e.what == "container-exited" and e.obj == "Pod/default/shard0-data-0"]
    assert exits and exits[0] >= 120.0
