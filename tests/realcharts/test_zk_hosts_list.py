"""A client naming each ZooKeeper pod under its headless Service in one connection string
(``zk-0.zk-headless.<ns>.svc.cluster.local:2181,…``: bitnami/charts bitnami/solr
``templates/statefulset.yaml`` SOLR_ZK_HOSTS), and ZooKeeper's policy admitting only labelled
clients (bitnami/zookeeper ``templates/networkpolicy.yaml``, ``allowExternal=false``). helmsim read
neither a list of peers nor a pod's name under a headless Service as a need: Solr was Ready
where its ZooKeeper refuses it and Solr's entrypoint exits 1 ("Zookeeper not detected")."""

from __future__ import annotations

import pytest
from realcharts_helpers import behaviour_notes, simulate_chart

CHART = "zk-hosts-list"


@pytest.mark.parametrize("variant", [(), ("ci/unknown-values.yaml",)], ids=["bitnami-solr", "unknown-image"])
def test_an_unlabelled_client_is_refused_by_zookeeper(variant: tuple[str, ...]) -> None:
    result = simulate_chart(CHART, values=variant)
    assert result.releases[0].outcome == "Stalled"
    denied = [e for e in result.trace if e.what in ("connect-denied", "connect-timeout") and e.obj.startswith("Pod/default/client-")]
    assert denied and all("zk-headless" in e.message or "2181" in e.message for e in denied)


@pytest.mark.parametrize(
    "variant", [("ci/labelled-values.yaml",), ("ci/unknown-labelled-values.yaml",)], ids=["bitnami-solr", "unknown-image"]
)
def test_a_labelled_client_reaches_zookeeper(variant: tuple[str, ...]) -> None:
    result = simulate_chart(CHART, values=variant)
    assert result.releases[0].outcome == "Ready"


def test_the_three_members_are_one_need_and_solr_waits_for_them() -> None:
    result = simulate_chart(CHART, values=("ci/labelled-values.yaml",))
    notes = behaviour_notes(result, "client")
    assert notes[0].startswith("behaviour from catalog entry bitnami-solr (")
    assert [n for n in notes if n.startswith("needs svc/")] == ["needs svc/default/zk-headless:2181 (catalog entry)"]
    # ZooKeeper is Ready only after the client first tries: Solr's wait loop (5 tries 5 s apart)
    # bridges it without a restart
    exits = [e for e in result.trace if e.what == "container-exited" and e.obj.startswith("Pod/default/client-")]
    assert exits == []
