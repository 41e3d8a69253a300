"""Bitnami Kong with PostgreSQL: a Kong node loops on ``kong migrations list`` until the schema
is bootstrapped, and the chart bootstraps it from a post-install hook, which Helm runs only after
its wait on the Kong Deployment (bitnami/charts#31112: the pod never starts). helmsim knew no
behaviour for the image and said Ready."""

from __future__ import annotations

from realcharts_helpers import check_chart, simulate_chart


def test_the_hook_migration_never_runs_and_kong_waits_forever() -> None:
    result = simulate_chart("kong-migrate")
    (release,) = result.releases
    assert release.outcome == "Stalled"
    assert "timeout waiting for" in release.message
    assert any(
        e.what == "program-waiting" and "kong schema of default/kong-migrate" in str(e.data.get("need"))
        for e in result.trace
    )
    assert not any(e.what == "created" and e.obj == "Job/default/kong-migrate-kong-migrate" for e in result.trace)


def test_an_ordinary_migrate_job_lets_kong_start() -> None:
    assert simulate_chart("kong-migrate", values=("ci/plain-job-values.yaml",)).releases[0].outcome == "Ready"


def test_hs116_names_the_schema_and_the_verified_fix() -> None:
    report = check_chart("kong-migrate", release_name="kong", verify_fixes=True)
    (finding,) = [f for f in report.findings if f.rule == "HS116"]
    assert finding.message.startswith(
        "Deployment/default/kong-kong's container kong (catalog entry bitnami-kong) needs the kong schema of "
        "default/kong (left outside the cluster by another program), which no program has left when it runs"
    )
    assert "disableWait" in finding.fixes[0].summary
    assert finding.fixes[0].verified is True
