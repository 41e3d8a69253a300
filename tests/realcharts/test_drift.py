"""Interval reconciles and drift detection (tests/realcharts/README.md: drift): after Ready,
helm-controller reconciles every spec.interval and diffs the release against the cluster; a
scenario fault edits or deletes objects as another field manager (fluxcd/helm-controller
internal/reconcile/state.go, atomic_release.go, correct_cluster_drift.go, internal/diff)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from helmsim.cluster.profile import load_profile
from helmsim.faults import ScenarioFaults
from helmsim.release_inputs import build_inputs
from helmsim.scenario import Fault
from helmsim.simulate import SimulationResult, simulate

HERE = Path(__file__).parent / "drift"


def _faults() -> ScenarioFaults:
    changes = [
        {"objectChange": {"at": 30, "object": f"Deployment/apps/{n}", "manager": "kubectl-edit", "set": {"/spec/replicas": 3}}}
        for n in ("enabled", "warn", "disabled", "ignored")
    ] + [{"objectChange": {"at": 30, "object": "Service/apps/enabled", "delete": True}}]
    return ScenarioFaults([Fault.model_validate(c) for c in changes])


@cache
def _run() -> SimulationResult:
    releases = build_inputs(
        str(HERE / "flux"), values=[], sets=[], helmrelease=[], charts=[f"app={HERE / 'chart'}"], release_name=None,
        namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    faults = _faults()
    return simulate(load_profile("kind"), releases, horizon=600.0, faults=faults, setup=faults.setup)


def _rel(name: str):
    return next(r for r in _run().releases if r.name == name)


def _events(name: str, reason: str) -> list:
    return [e for e in _run().trace if e.obj == f"HelmRelease/apps/{name}" and e.data.get("reason") == reason]


def _replicas(name: str) -> int:
    sim = _run().sim
    assert sim is not None
    return int(sim.store.get("Deployment", "apps", name)["spec"]["replicas"])


def test_enabled_corrects_changed_and_deleted_objects() -> None:
    detected = _events("enabled", "DriftDetected")
    assert detected and detected[0].time >= 60.0  # seen at the next interval reconcile, not at once
    assert detected[0].message == (
        # the release manifest's order (Helm's install order: the Service first)
        "Cluster state of release apps/enabled.v1 has drifted from the desired state:\n"
        "Service/apps/enabled removed\nDeployment/apps/enabled changed (0 additions, 1 changes, 0 removals)"
    )
    corrected = _events("enabled", "DriftCorrected")
    assert corrected and corrected[0].message == (
        "Cluster state of release apps/enabled.v1 has been corrected:\nService/apps/enabled created\n"
        "Deployment/apps/enabled configured"
    )
    rel = _rel("enabled")
    assert rel.outcome == "Ready"
    assert rel.conditions["Drifted"] == {
        "status": "False", "reason": "NoDriftDetected", "message": "No drift detected against the cluster state",
    }
    assert _replicas("enabled") == 1
    sim = _run().sim
    assert sim is not None and sim.store.get("Service", "apps", "enabled") is not None
    # correcting is not a new release: one revision
    assert [h["revision"] for h in rel.helm_status] == [1]


def test_warn_reports_and_leaves_the_change() -> None:
    rel = _rel("warn")
    assert rel.outcome == "Ready" and rel.ready == "True"
    assert rel.conditions["Drifted"]["status"] == "True"
    assert rel.conditions["Drifted"]["message"].endswith("Deployment/apps/warn changed (0 additions, 1 changes, 0 removals)")
    assert _replicas("warn") == 3
    assert not _events("warn", "DriftCorrected")


def test_disabled_does_not_look() -> None:
    rel = _rel("disabled")
    assert "Drifted" not in rel.conditions and _replicas("disabled") == 3


def test_ignore_rule_hides_the_field() -> None:
    rel = _rel("ignored")
    assert rel.conditions["Drifted"]["reason"] == "NoDriftDetected"
    assert _replicas("ignored") == 3 and not _events("ignored", "DriftDetected")


def test_reconciles_every_interval_after_ready() -> None:
    sim = _run().sim
    assert sim is not None and sim.now >= 90.0  # ran past the fault and the next interval


JOB = Path(__file__).parent / "job-after-ready"


def test_job_failing_after_ready_fails_the_next_upgrade() -> None:
    releases = build_inputs(
        str(JOB / "chart"), values=[str(JOB / "values.yaml")], sets=[], helmrelease=[str(JOB / "flux")], charts=[],
        release_name=None, namespace="default", upgrade_from=str(JOB / "chart"),
        upgrade_from_values=[str(JOB / "previous-values.yaml")], upgrade_from_set=[],
    )
    result = simulate(load_profile("kind"), releases, horizon=900.0)
    notes = " ".join(result.notes)
    # the first generation got Ready without waiting for the Job (disableWaitForJobs)
    assert "previous generation of apps/batch: Ready" in notes
    rel = result.releases[0]
    # helm-controller's waiter never leaves Jobs out: the upgrade's wait reads the Job Failed
    # (fluxcd/pkg runtime/statusreaders/job.go) and stops early
    assert rel.message == (
        "Helm upgrade failed for release apps/batch with chart batch@1.0.0: failed early due to stalled resources: "
        "[Job/apps/batch-import status: 'Failed']"
    )
    assert rel.outcome == "Stalled"
    assert [h["status"] for h in rel.helm_status] == ["deployed", "failed"]
