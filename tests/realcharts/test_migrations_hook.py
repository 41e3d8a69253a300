"""Workloads waiting for database migrations that a post-install hook runs (tests/realcharts/
README.md: "Programs that cannot work"): Helm runs post-install hooks only after its wait on the
release's workloads (helm/helm pkg/action/install.go performInstall), and their init containers
wait for the schema the hook would write (bitnami/charts bitnami/airflow), so the install
deadlocks until the timeout. The schema is state outside the cluster: a catalog entry's
``writes`` leaves it, another's ``state`` check waits for it (``Simulation.external_state``)."""

from __future__ import annotations

from realcharts_helpers import HERE, simulate_chart

from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.release_inputs import build_inputs

PLAIN_JOB = ("ci/plain-job-values.yaml",)
SCHEMA = "airflow schema of default/migrations-hook"


def test_init_containers_waiting_for_a_post_install_hook_deadlock_the_install() -> None:
    # before, the init container was assumed to exit 0 after 5 s and the release was Ready
    result = simulate_chart("migrations-hook", "kind")
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    assert "timeout waiting for: [Deployment/default/migrations-hook-scheduler" in release.message
    assert not [e for e in result.trace if e.what == "hook-start"]  # the hook never ran
    failed = [e for e in result.trace if e.what == "need-failed" and "wait-for-db-migrations" in e.message]
    assert failed and failed[0].data["error"] == "DB migrations are not ready yet"


def test_the_migration_job_as_an_ordinary_object_leaves_the_schema_and_the_release_is_ready() -> None:
    result = simulate_chart("migrations-hook", "kind", values=PLAIN_JOB)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    written = [e for e in result.trace if e.what == "state-written"]
    assert [e.data["state"] for e in written] == [[SCHEMA]]
    assert written[0].obj.startswith("Pod/default/migrations-hook-setup-db-")


def test_an_upgrade_finds_the_schema_the_first_revision_left() -> None:
    # revision 1 migrated with a plain Job; revision 2 makes it a hook: the new pods' init
    # containers find the schema already there, so the upgrade's wait ends and the hook runs
    result = simulate_chart("migrations-hook", "kind", upgrade_from_values=PLAIN_JOB)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert [e for e in result.trace if e.what == "hook-start"]


def test_check_proposes_disabling_the_wait_and_verifies_it() -> None:
    releases = build_inputs(str(HERE / "migrations-hook"), release_name="migrations-hook", namespace="default")
    report = run_check(releases, [load_profile("kind")], options=CheckOptions(verify_fixes=True))
    (finding,) = [f for f in report.findings if f.rule == "HS116"]
    assert f"needs the {SCHEMA} (left outside the cluster by another program), which no program has left" in finding.message
    (fix,) = finding.fixes
    assert "spec.install.disableWait" in fix.summary and fix.verified is True


def test_apache_airflows_own_chart_deadlocks_the_same_way() -> None:
    # apache/airflow chart/: migrateDatabaseJob.useHelmHooks (post-install) and the
    # wait-for-airflow-migrations init container (airflow db check-migrations, 60 s, then exit 1)
    result = simulate_chart("migrations-hook", "kind", values=("ci/apache-values.yaml",))
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    failed = [e for e in result.trace if e.what == "need-failed" and "wait-for-db-migrations" in e.message]
    assert failed and failed[0].data["error"].startswith("TimeoutError: There are still unapplied migrations after 60 seconds")
    started = min(e.time for e in result.trace if e.obj == failed[0].obj and e.message == "Started container wait-for-db-migrations")
    assert failed[0].time - started >= 60  # it waited its --migration-wait-timeout
    assert not [e for e in result.trace if e.obj == failed[0].obj and "wait-for-db-migrations connected to kube-apiserver" in e.message]
    (ready,) = simulate_chart("migrations-hook", "kind", values=("ci/apache-values.yaml", *PLAIN_JOB)).releases
    assert ready.outcome == "Ready", ready.message
