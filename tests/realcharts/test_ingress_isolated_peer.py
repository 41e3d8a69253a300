"""A client whose egress is open dials a Service whose pods a NetworkPolicy isolates for ingress,
admitting only pods with a label the client lacks (bitnami/charts
``bitnami/postgresql/templates/primary/networkpolicy.yaml`` with ``allowExternal=false``: only
pods labelled ``<release>-postgresql-client: "true"``). HS113 names the destination's policy
and the fix that helps (the label, or a rule), not an egress policy of the client."""

from __future__ import annotations

from realcharts_helpers import check_chart


def test_hs113_names_the_ingress_policy_and_its_fix() -> None:
    report = check_chart("ingress-isolated-peer", release_name="ing")
    (finding,) = [f for f in report.findings if f.rule == "HS113"]
    assert finding.message.startswith(
        "Deployment/default/web needs svc/default/db:5432 but NetworkPolicy default/db isolates the destination's pods "
        "for ingress and no rule admits Deployment/default/web's pods (their egress is allowed)"
    )
    assert finding.fixes[0].summary.startswith("let NetworkPolicy default/db admit the pods of Deployment/default/web")
    assert "egress" not in finding.fixes[0].summary
