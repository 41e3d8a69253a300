"""A client whose egress is open dials a Service whose pods a NetworkPolicy isolates for ingress,
admitting only pods with a label the client lacks (bitnami/charts
``bitnami/postgresql/templates/primary/networkpolicy.yaml`` with ``allowExternal=false``: only
pods labelled ``<release>-postgresql-client: "true"``). HS113 names the destination's policy
and the fix that helps (the label, or a rule), not an egress policy of the client."""

from __future__ import annotations

from realcharts_helpers import HERE

from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.release_inputs import build_inputs


def test_hs113_names_the_ingress_policy_and_its_fix() -> None:
    releases = build_inputs(str(HERE / "ingress-isolated-peer"), release_name="ing", namespace="default")
    report = run_check(releases, [load_profile("kind")], options=CheckOptions(verify_fixes=False))
    (finding,) = [f for f in report.findings if f.rule == "HS113"]
    assert finding.message.startswith(
        "Deployment/default/web needs svc/default/db:5432 but NetworkPolicy default/db isolates the destination's pods "
        "for ingress and no rule admits Deployment/default/web's pods (their egress is allowed)"
    )
    assert finding.fixes[0].summary.startswith("let NetworkPolicy default/db admit the pods of Deployment/default/web")
    assert "egress" not in finding.fixes[0].summary
