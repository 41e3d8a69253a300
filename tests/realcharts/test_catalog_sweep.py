"""Images a sweep of public charts found the catalog did not know (tests/realcharts/README.md:
"Programs a sweep found: Bitnami replicas, Loki, k8s-sidecar").

What a real cluster does:

* ``db-replication/`` (bitnami/mysql and bitnami/mariadb with ``architecture=replication``): the
  replica's entrypoint asks its primary ``select 1`` every second until it answers
  (bitnami/containers ``libmysql.sh`` mysql_configure_replication, ``libmariadb.sh``
  mariadb_configure_replication), so while the primary starts the replica waits instead of
  crash-looping, and gets Ready after it; a primary it can never reach keeps it waiting until
  Helm's timeout.
* ``loki-rules-sidecar/`` (grafana-community/helm-charts charts/loki): the Loki pods share the
  ServiceAccount the backend's rules sidecar needs, but Loki itself never calls the API server;
  the sidecar (kiwigrid/k8s-sidecar) does, answers ``/healthz`` NOT READY until its first list
  succeeds, and exits when the list cannot be made.
"""

from __future__ import annotations

from typing import Any

import pytest
from realcharts_helpers import HERE, behaviour_notes, restarts, simulate_chart
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.simulate import SimulationResult

MARIADB = ("ci/mariadb-values.yaml",)
UNREACHABLE = ("ci/primary-unreachable-values.yaml",)
NO_API = ("ci/no-apiserver-egress-values.yaml",)
INIT_LIST = ("ci/init-list-values.yaml",)




def _events(result: SimulationResult, what: str, container: str) -> list[Any]:
    return [e for e in result.trace if e.what == what and e.message.startswith(f"{container}: ")]


def _cli(chart: str, profile: str, *args: str) -> Any:
    argv = ["simulate", str(HERE / chart), "-p", profile, "--no-color", *args]
    return CliRunner().invoke(app, argv, env={"COLUMNS": "400"})


# --- Bitnami MySQL / MariaDB replicas ------------------------------------------------------------


@pytest.mark.parametrize(("values", "flavor"), [((), "mysql"), (MARIADB, "mariadb")])
def test_a_replica_waits_for_its_primary_and_gets_ready(values: tuple[str, ...], flavor: str) -> None:
    # before the bitnami-mysql/-mariadb entries the replica "connected at start and exited when it
    # could not": connection refused while the primary started, CrashLoopBackOff, and kstatus's
    # fail-fast stalled the release in seconds
    result = simulate_chart("db-replication", values=values)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    assert release.message == (
        "Helm install succeeded for release default/db-replication.v1 with chart db-replication@0.1.0"
    )
    notes = behaviour_notes(result, flavor)
    assert (
        f"needs svc/default/db-replication-primary:3306: environment variable {flavor.upper()}_MASTER_HOST "
        "names it (assumed to connect at start)"
    ) in notes
    assert "does not call the API server, whatever its ServiceAccount is bound to (catalog entry)" in notes
    (waiting,) = _events(result, "program-waiting", flavor)
    assert waiting.obj == "Pod/default/db-replication-secondary-0"
    assert waiting.message.startswith(f"{flavor}: waiting for svc/default/db-replication-primary:3306: dial tcp ")
    assert waiting.message.endswith(":3306: connect: connection refused")
    assert not _events(result, "need-failed", flavor)
    assert set(restarts(result).values()) == {0}
    # the init container of the same image is the chart's log-symlink copy, not the entrypoint
    assert "needs nothing (catalog entry)" in behaviour_notes(result, "preserve-logs-symlinks")
    assert not [e for e in result.trace if e.what == "behaviour-assumed"]


def test_a_replica_whose_primary_is_never_reachable_times_out() -> None:
    # the replica's egress policy allows DNS only: the loop never ends, the replica never exits
    # on its own, its startup probe gets it killed and restarted, and Helm's wait times out
    result = simulate_chart("db-replication", values=UNREACHABLE)
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    assert release.message == (
        "Helm install failed for release default/db-replication with chart db-replication@0.1.0: "
        "timeout waiting for: [StatefulSet/default/db-replication-secondary status: 'InProgress']"
    )
    assert not _events(result, "need-failed", "mysql")
    waiting = [e.message for e in _events(result, "program-waiting", "mysql")]
    assert any(m.endswith(":3306: i/o timeout") for m in waiting), waiting
    killed = _events(result, "probe-killed", "mysql")
    assert killed and killed[0].message == (
        "mysql: killed after its startup probe failed 15 times, while it was still connecting to "
        "svc/default/db-replication-primary:3306"
    )


POSTGRESQL = ("ci/postgresql-values.yaml",)


def test_a_postgresql_replica_waits_for_its_primary_and_gets_ready() -> None:
    # before the bitnami-postgresql entry the read replica "connected at start and exited when it
    # could not": connection refused while the primary started, CrashLoopBackOff, and kstatus's
    # fail-fast stalled the release at 15 s (bitnami/postgresql architecture=replication)
    result = simulate_chart("db-replication", values=POSTGRESQL)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    waiting = _events(result, "program-waiting", "postgresql")
    assert waiting and waiting[0].message.endswith(":5432: connect: connection refused")
    assert not _events(result, "need-failed", "postgresql")
    assert set(restarts(result).values()) == {0}


def test_a_postgresql_replica_gives_up_on_an_unreachable_primary_after_its_init_timeout() -> None:
    # unlike MySQL's replica, PostgreSQL's exits after POSTGRESQL_INIT_MAX_TIMEOUT (60 s)
    result = simulate_chart("db-replication", values=(*POSTGRESQL, *UNREACHABLE))
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    (first, *_) = _events(result, "need-failed", "postgresql")
    started = next(e for e in result.trace if e.obj == first.obj and e.what == "event" and e.message == "Started container postgresql")
    assert first.time - started.time == pytest.approx(60.0)
    logs = [e.data["line"] for e in _events(result, "container-log", "postgresql")]
    assert "postgresql ERROR ==> PostgreSQL master is not ready after 60 seconds" in logs


def test_a_database_image_the_catalog_does_not_know_still_crash_loops() -> None:
    # the entries describe Bitnami's scripts only: another image keeps the inference (connects at
    # start, exits when it cannot), with the note that its behaviour was assumed
    result = simulate_chart("db-replication", sets=("image.repository=example.com/mysql",))
    (release,) = result.releases
    assert release.outcome == "Stalled"
    assert release.message.endswith(
        "failed early due to stalled resources: [StatefulSet/default/db-replication-secondary status: 'Failed']"
    )
    failed = _events(result, "need-failed", "mysql")
    assert failed and failed[0].message.startswith("mysql: svc/default/db-replication-primary:3306 failed (dial tcp ")


# --- Loki and its rules sidecar -------------------------------------------------------------------


def test_loki_pods_that_only_share_the_sidecar_account_are_ready() -> None:
    # before the loki entry the read and write pods "needed" kube-apiserver through the shared
    # ServiceAccount's ClusterRoleBinding; only the backend is allowed it, so they "gave up on
    # 10.96.0.1:443 and exited 1" and the release ended Stalled
    result = simulate_chart("loki-rules-sidecar", "cilium-default")
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    for target in ("read", "write", "backend"):
        notes = behaviour_notes(result, target)
        assert "does not call the API server, whatever its ServiceAccount is bound to (catalog entry)" in notes
    for target in ("read", "write"):
        assert not [n for n in behaviour_notes(result, target) if n.startswith("needs kube-apiserver")]
    assert "needs kube-apiserver (catalog entry)" in behaviour_notes(result, "loki-sc-rules")
    logs = [e.message for e in _events(result, "container-log", "loki-sc-rules")]
    assert logs == ["loki-sc-rules: Initial sync complete, sidecar is ready."]
    assert set(restarts(result).values()) == {0}
    assert not [e for e in result.trace if e.what == "behaviour-assumed"]


def test_the_rules_sidecar_without_api_server_egress_keeps_the_backend_unready() -> None:
    # the sidecar's /healthz stays NOT READY (readiness and liveness), so the kubelet kills it;
    # the report names the sidecar, not Loki, and nothing about read or write
    out = _cli("loki-rules-sidecar", "cilium-default", "-f", str(HERE / "loki-rules-sidecar" / NO_API[0]))
    assert out.exit_code == 1, out.output
    lines = out.stdout.splitlines()
    assert "default/loki-rules-sidecar  Stalled" in lines
    causes = [line for line in lines if line.lstrip().startswith("cause HS113")]
    assert len(causes) == 1, causes
    assert causes[0].lstrip().startswith(
        "cause HS113: StatefulSet/default/loki-rules-sidecar-backend needs kube-apiserver but under cilium-default"
    )
    assert (
        "the kubelet kills loki-sc-rules when its liveness probe has failed while it is still connecting to kube-apiserver"
    ) in causes[0]
    assert "note: no behaviour known for image" not in out.stdout


def test_a_loki_image_the_catalog_does_not_know_keeps_the_rbac_need() -> None:
    # the shape the sweep found, with an image no entry describes: RBAC still says it calls the
    # API server, so read and write are predicted to give up on it
    out = _cli("loki-rules-sidecar", "cilium-default", "--set", "loki.image=example.com/loki:1")
    assert out.exit_code == 1, out.output
    causes = [line.lstrip() for line in out.stdout.splitlines() if line.lstrip().startswith("cause HS113")]
    assert [c.split(" needs ")[0] for c in causes] == [
        "cause HS113: Deployment/default/loki-rules-sidecar-read",
        "cause HS113: StatefulSet/default/loki-rules-sidecar-write",
    ]
    assert "read gives up (dial tcp 10.96.0.1:443: i/o timeout) and exits 1" in causes[0]
    note = "note: no behaviour known for image example.com/loki:1: assumed to start and succeed (it runs until stopped)"
    assert note in out.stdout.splitlines()


def test_the_sidecar_as_an_init_list_exits_0_once_it_has_listed() -> None:
    result = simulate_chart("loki-rules-sidecar", "cilium-default", values=INIT_LIST)
    (release,) = result.releases
    assert release.outcome == "Ready", release.message
    exited = [e.message for e in result.trace if e.what == "container-exited" and "loki-init-sc-rules" in e.message]
    assert exited == ["container loki-init-sc-rules exited with code 0"]


def test_the_sidecar_gives_up_after_its_client_retries_and_exits_1() -> None:
    # src/client.py: urllib3 Retry(total=5, backoff_factor=1.1), six attempts; the first list
    # raises out of main(), the process exits 1 and the init container restarts
    result = simulate_chart("loki-rules-sidecar", "cilium-default", values=(*INIT_LIST, *NO_API))
    (release,) = result.releases
    assert release.outcome == "Stalled", release.message
    assert release.message.endswith("timeout waiting for: [StatefulSet/default/loki-rules-sidecar-backend status: 'InProgress']")
    failed = _events(result, "need-failed", "loki-init-sc-rules")
    assert failed, "the list gives up"
    assert failed[0].message == (
        "loki-init-sc-rules: kube-apiserver failed (dial tcp 10.96.0.1:443: i/o timeout): the run ends with exit code 1"
    )
    first = _events(result, "program-waiting", "loki-init-sc-rules")[0]
    started = first.time - 30.0  # the first attempt's dial timeout
    # six 30 s attempts (the simulation's dial timeout) and the back-off between them: 1.1, 2.2, 4.4, 8.8, 17.6 s
    assert failed[0].time - started == pytest.approx(6 * 30 + 34.1, abs=0.01)
