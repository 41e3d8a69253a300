"""helm-controller's release state machine on the simulated cluster (internal/reconcile/*.go).

Each case renders a tiny chart whose Job succeeds or is forced to fail, and checks the sequence
of actions, the failure counters and Flux's condition messages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helmsim.cluster.profile import load_profile
from helmsim.flux.helmrelease import parse_helmrelease
from helmsim.simulate import ChartSource, ReleaseInput, simulate

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: work-{{ .Values.exitCode }}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        helmsim.dev/exit-code: "{{ .Values.exitCode }}"
        helmsim.dev/run-seconds: "1"
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox:1.36
"""


@pytest.fixture()
def chart(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: work\nversion: 1.0.0\n")
    (root / "values.yaml").write_text("exitCode: 0\n")
    (root / "templates" / "job.yaml").write_text(JOB)
    return root


def _hr(spec: dict[str, Any], name: str = "work", depends: list[str] | None = None) -> Any:
    body = {"interval": "10m", "timeout": "2m", **spec}
    if depends:
        body["dependsOn"] = [{"name": d} for d in depends]
    return parse_helmrelease(
        {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
         "metadata": {"name": name, "namespace": "apps"}, "spec": body}
    )


def _run(chart: Path, spec: dict[str, Any], *, fail: bool, previous: bool = False, extra: list[Any] = ()) -> Any:
    values = {"exitCode": 1 if fail else 0}
    rel = ReleaseInput(
        _hr(spec),
        ChartSource(str(chart), values),
        previous=ChartSource(str(chart), {"exitCode": 0}) if previous else None,
    )
    return simulate(load_profile("kind"), [rel, *extra], horizon=7200)


def _actions(outcome: Any) -> list[tuple[str, bool]]:
    return [(h["action"], h["ok"]) for h in outcome.history]


def test_install_fails_with_no_retries_stalls_at_once(chart: Path) -> None:
    out = _run(chart, {}, fail=True).releases[0]
    assert out.outcome == "Stalled"
    assert _actions(out) == [("install", False)]  # no uninstall remediation (retries 0)
    assert out.conditions["Stalled"] == {
        "status": "True", "reason": "RetriesExceeded", "message": "Failed to install after 1 attempt(s)",
    }
    assert out.conditions["Released"]["message"].startswith(
        "Helm install failed for release apps/work with chart work@1.0.0: "
        "failed early due to stalled resources: [Job/apps/work-1 status: 'Failed']"
    )
    assert [h["status"] for h in out.helm_status] == ["failed"]  # the failed release stays


def test_install_retries_uninstall_between_attempts(chart: Path) -> None:
    out = _run(chart, {"install": {"remediation": {"retries": 2}}}, fail=True).releases[0]
    assert _actions(out) == [
        ("install", False), ("uninstall", True), ("install", False), ("uninstall", True), ("install", False),
    ]
    assert out.attempts == 3
    assert out.conditions["Stalled"]["message"] == "Failed to install after 3 attempt(s)"


def test_remediate_last_failure_uninstalls_once_more(chart: Path) -> None:
    spec = {"install": {"remediation": {"retries": 1, "remediateLastFailure": True}}}
    out = _run(chart, spec, fail=True).releases[0]
    assert _actions(out)[-1] == ("uninstall", True)
    assert out.conditions["Remediated"]["reason"] == "UninstallSucceeded"
    assert out.conditions["Stalled"]["message"] == "Failed to install after 2 attempt(s)"


def test_upgrade_failure_without_retries_is_not_rolled_back(chart: Path) -> None:
    out = _run(chart, {}, fail=True, previous=True).releases[0]
    assert _actions(out) == [("upgrade", False)]
    assert out.conditions["Stalled"]["message"] == "Failed to upgrade after 1 attempt(s)"
    assert [h["status"] for h in out.helm_status] == ["deployed", "failed"]


def test_upgrade_retries_roll_back_each_failure(chart: Path) -> None:
    out = _run(chart, {"upgrade": {"remediation": {"retries": 1}}}, fail=True, previous=True).releases[0]
    assert _actions(out) == [("upgrade", False), ("rollback", True), ("upgrade", False), ("rollback", True)]
    assert out.conditions["Remediated"]["message"] == (
        "Helm rollback to previous release apps/work.v3 with chart work@1.0.0 succeeded"
    )
    assert out.conditions["Stalled"]["message"] == "Failed to upgrade after 2 attempt(s)"
    assert [h["status"] for h in out.helm_status][-1] == "deployed"


def test_retry_on_failure_never_stalls_and_waits_the_retry_interval(chart: Path) -> None:
    retry = {"strategy": {"name": "RetryOnFailure", "retryInterval": "10m"}}
    spec = {"install": retry, "upgrade": retry}
    result = _run(chart, spec, fail=True)
    out = result.releases[0]
    assert out.outcome == "Failed" and "Stalled" not in out.conditions
    installs = [h for h in out.history if h["action"] in ("install", "upgrade")]
    assert [h["action"] for h in installs][:2] == ["install", "upgrade"]  # a failed install is retried by upgrade
    assert installs[1]["time"] - installs[0]["time"] >= 600
    assert out.conditions["Ready"]["reason"] == "UpgradeFailed"


def test_retry_on_failure_for_install_only_stalls_when_the_retrying_upgrade_fails(chart: Path) -> None:
    # the retry of a failed install is an upgrade, judged by spec.upgrade's strategy
    spec = {"install": {"strategy": {"name": "RetryOnFailure"}}}
    out = _run(chart, spec, fail=True).releases[0]
    assert _actions(out) == [("install", False), ("upgrade", False)]
    assert out.conditions["Stalled"]["message"] == "Failed to upgrade after 1 attempt(s)"


def test_success_and_dependents(chart: Path) -> None:
    dependent = ReleaseInput(_hr({}, name="app", depends=["work"]), None)
    result = _run(chart, {}, fail=False, extra=[dependent])
    work, app = result.releases
    assert work.outcome == "Ready" and work.message == (
        "Helm install succeeded for release apps/work.v1 with chart work@1.0.0"
    )
    assert app.outcome == "Ready" and app.ready_at is not None and app.ready_at >= work.ready_at  # type: ignore[operator]


def test_dependent_of_a_stalled_release_is_blocked(chart: Path) -> None:
    dependent = ReleaseInput(_hr({}, name="app", depends=["work"]), None)
    result = _run(chart, {}, fail=True, extra=[dependent])
    app = result.releases[1]
    assert app.outcome == "Blocked"
    assert (app.reason, app.message) == ("DependencyNotReady", "dependency 'apps/work' is not ready")


def test_a_new_attempt_clears_remediated_and_rollback_names_the_target(chart: Path) -> None:
    out = _run(chart, {"upgrade": {"remediation": {"retries": 1}}}, fail=True, previous=True).releases[0]
    # the last action is a rollback, so Remediated is set; it names the revision rolled back TO
    assert out.conditions["Remediated"]["message"] == (
        "Helm rollback to previous release apps/work.v3 with chart work@1.0.0 succeeded"
    )
    st_history = [h["action"] for h in out.history]
    assert st_history.count("upgrade") == 2


def test_a_missing_dependency_is_not_found(chart: Path) -> None:
    values = {"exitCode": 0}
    rel = ReleaseInput(_hr({}, depends=["nowhere"]), ChartSource(str(chart), values))
    out = simulate(load_profile("kind"), [rel], horizon=120).releases[0]
    assert out.outcome == "Blocked"
    assert out.message == (
        "unable to get 'apps/nowhere' dependency: helmreleases.helm.toolkit.fluxcd.io \"nowhere\" not found"
    )


def test_upgrade_remediation_by_uninstall_requeues_and_installs_again(chart: Path) -> None:
    spec = {"upgrade": {"remediation": {"retries": 1, "strategy": "uninstall"}}}
    out = _run(chart, spec, fail=True, previous=True).releases[0]
    # atomic_release.go: IsUninstallAfterUpgrade always requeues; the install budget then applies
    assert [h["action"] for h in out.history][:3] == ["upgrade", "uninstall", "install"]
    assert out.conditions["Stalled"]["message"] == "Failed to install after 1 attempt(s)"


def test_crds_of_a_new_chart_version_are_applied_on_upgrade(tmp_path: Path) -> None:
    root = tmp_path / "withcrd"
    (root / "templates").mkdir(parents=True)
    (root / "crds").mkdir()
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: withcrd\nversion: 2.0.0\n")
    (root / "crds" / "widget.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata: {name: widgets.example.com}\n"
        "spec: {group: example.com, scope: Namespaced, names: {kind: Widget, plural: widgets},"
        " versions: [{name: v1, served: true, storage: true}]}\n"
    )
    (root / "templates" / "w.yaml").write_text(
        "{{- if .Values.widget }}\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n{{- end }}\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
    )
    (root / "values.yaml").write_text("widget: false\n")
    rel = ReleaseInput(
        _hr({}, name="withcrd"),
        ChartSource(str(root), {"widget": True}),
        previous=ChartSource(str(root), {"widget": False}),
    )
    result = simulate(load_profile("kind"), [rel], horizon=600)
    out = result.releases[0]
    assert out.outcome == "Ready" and out.history[-1]["action"] == "upgrade"
    assert result.sim.store.get("Widget", "apps", "w") is not None
