"""Bitnami's wait-for-etcd init containers name their peer through the script's own variables:
a bash array looped over (``for host in "${etcd_hosts[@]}"; do retry_while "check_etcd $host"``,
bitnami/charts ``bitnami/apisix/templates/_helpers.tpl`` apisix.waitForETCDInitContainer and
``bitnami/milvus/templates/_helpers.tpl``) or an assignment at the top (``host="…"``,
apisix.waitForControlPlaneInitContainer). Only the container's environment was read, so the init
container was taken to exit 0 after 5 s: apisix and milvus with etcd's ``allowExternal=false``
were Ready where the real pod never starts."""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, check_chart, simulate_chart

from helmsim.cluster.running import assumed_behaviours

CHART = "retry-while-peers"


def _logs(result: object, container: str) -> list[tuple[float, str]]:
    return [
        (e.time, e.message)
        for e in result.trace  # type: ignore[attr-defined]
        if e.what == "container-log" and e.data.get("container") == container
    ]


def test_the_host_from_a_looped_array_is_waited_for() -> None:
    result = simulate_chart(CHART)
    assert result.releases[0].outcome == "Ready"
    assert any(
        n.startswith("waits for svc/default/etcd:2379 (retry_while check_etcd:") for n in behaviour_notes(result, "wait-for-etcd")
    )
    isolated = simulate_chart(CHART, values=("ci/isolated-values.yaml",))
    assert isolated.releases[0].outcome == "Stalled"
    assert any("Error connecting" in m or "gave up waiting for svc/default/etcd:2379" in m for _, m in _logs(isolated, "wait-for-etcd"))


def test_the_host_from_a_script_variable_is_waited_for() -> None:
    result = simulate_chart(CHART, values=("ci/scriptvar-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    assert any(
        n.startswith("waits for svc/default/etcd:2379 (retry_while check_control_plane:")
        for n in behaviour_notes(result, "wait-for-etcd")
    )
    isolated = simulate_chart(CHART, values=("ci/scriptvar-values.yaml", "ci/isolated-values.yaml"))
    assert isolated.releases[0].outcome == "Stalled"


def test_each_host_of_the_array_is_waited_for_in_turn() -> None:
    result = simulate_chart(CHART, values=("ci/two-hosts-values.yaml",))
    assert result.releases[0].outcome == "Stalled"
    assert any(
        n.startswith("waits for each of svc/default/peer:2379, svc/default/etcd:2379 in turn")
        for n in behaviour_notes(result, "wait-for-etcd")
    )
    logs = _logs(result, "wait-for-etcd")
    reached = [t for t, m in logs if "svc/default/peer:2379 reachable" in m]
    waiting = [t for t, m in logs if "waiting for svc/default/etcd:2379" in m]
    assert reached and waiting and reached[0] <= waiting[0]


def test_a_peer_that_cannot_be_read_is_said_not_assumed_silently() -> None:
    result = simulate_chart(CHART, values=("ci/unread-values.yaml",))
    notes = [n for n in assumed_behaviours(result.trace) if "os-shell" in n]
    assert notes == [
        "no behaviour known for image docker.io/bitnamilegacy/os-shell:12-debian-12: assumed to start and succeed; it runs "
        "retry_while check_control_plane, whose peer could not be read from the script: not modelled"
    ]


def test_a_refusal_a_policy_drop_later_replaced_is_not_blamed() -> None:
    """etcd is ready only after the first run of the wait gave up on refusals; later runs are
    dropped by its policy. The cause is the policy (HS113), not a peer that was slow (HS116)."""
    report = check_chart(CHART, release_name=CHART, values=("ci/slow-etcd-values.yaml", "ci/isolated-values.yaml"))
    rules = [f.rule for f in report.findings]
    assert "HS113" in rules and "HS116" not in rules
    assert simulate_chart(CHART, values=("ci/slow-etcd-values.yaml",)).releases[0].outcome == "Ready"


def test_a_peer_that_never_gets_ready_is_fixed_at_the_peer() -> None:
    """peer's claim names a StorageClass the cluster lacks (HS117, from its volumeClaimTemplates);
    the wait loop waiting for it is a known program, so HS116 no longer offers to describe it
    in a catalog entry: it points at the peer."""
    report = check_chart(CHART, release_name=CHART, values=("ci/peer-never-ready-values.yaml",))
    by_rule = {f.rule: f for f in report.findings}
    claim = by_rule["HS117"]
    assert claim.occurrences[0].message.startswith(
        "PersistentVolumeClaim/default/data-peer-0 (from StatefulSet/default/peer's volumeClaimTemplates data) is never "
        'provisioned: storageclass.storage.k8s.io "missing-class" not found; it stays Pending, so StatefulSet/default/peer never starts'
    )
    assert claim.fixes[0].summary.startswith(
        "create StorageClass missing-class, or set StatefulSet/default/peer's volumeClaimTemplates data's storageClassName"
    )
    (fix,) = by_rule["HS116"].fixes
    assert fix.summary.startswith("make svc/default/peer:2379 ready before wait-for-etcd gives up")
    assert "catalog entry" not in fix.summary
