"""An app that names the database of another namespace as ``db.<ns>`` (tests/realcharts/README.md:
namespaced-host).

What a real cluster does: the app's resolver tries ``db.ops.svc.cluster.local`` first (ClusterFirst
search list, ndots:5), which is the Service ``db`` of namespace ``ops``, so the app dials that
Service's pods; its default-deny egress NetworkPolicy drops the SYNs unless a rule allows the
database's pods on 5432, and the app, which serves its readiness probe only once connected,
never gets Ready. Before helmsim knew the rule, ``db.ops`` was an external name that the
environment inference ignored, and the denied release was predicted Ready.
"""

from __future__ import annotations

from realcharts_helpers import behaviour_notes, simulate_chart


ALLOW = ("ci/allow-database-values.yaml",)


def test_the_database_of_another_namespace_denied_by_the_app_policy_fails() -> None:
    result = simulate_chart("namespaced-host")
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    assert release.message == (
        "Helm install failed for release default/namespaced-host with chart namespaced-host@0.1.0: timeout waiting for: "
        "[Deployment/default/namespaced-host status: 'InProgress']"
    )
    assert (
        "needs svc/ops/db:5432: environment variable DATABASE_URL names it (assumed to connect at start)"
        in behaviour_notes(result, "app")
    )
    denied = [e for e in result.trace if e.what == "connect-denied" and "svc/ops/db:5432" in e.message]
    assert denied, "the app's SYNs to the database are dropped"
    assert "egress-isolated by NetworkPolicy default/namespaced-host-egress" in denied[0].message


def test_the_database_of_another_namespace_allowed_by_the_app_policy_is_ready() -> None:
    result = simulate_chart("namespaced-host", values=ALLOW)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert release.message == (
        "Helm install succeeded for release default/namespaced-host.v1 with chart namespaced-host@0.1.0"
    )
    connected = [e for e in result.trace if e.what == "connected" and "svc/ops/db:5432" in e.message]
    assert connected and "allowed by NetworkPolicy default/namespaced-host-egress" in connected[0].message


def test_a_namespace_without_that_service_keeps_the_name_external() -> None:
    # the app names db.<ns> of a namespace where the chart's Service is not: no Service db there,
    # so the name is looked up outside the cluster and, as any external name in the environment,
    # is not assumed to be dialled at start
    result = simulate_chart("namespaced-host", sets=("app.databaseNamespace=elsewhere",))
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert not [n for n in behaviour_notes(result, "app") if "svc/" in n and "DATABASE_URL" in n]
