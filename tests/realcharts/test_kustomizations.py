"""Flux Kustomizations around HelmReleases (examples/flux-kustomizations): two Kustomizations
gating three HelmReleases, one post-rendered, one with Helm tests, one reconciled as a tenant
without the ClusterRole its chart needs (fluxcd/kustomize-controller
internal/controller/kustomization_controller.go; fluxcd/helm-controller)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from helmsim.cluster.profile import load_profile
from helmsim.release_inputs import build_inputs
from helmsim.simulate import SimulationResult, simulate

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "examples" / "flux-kustomizations"
CHARTS = [
    f"web={ROOT / 'tests/realcharts/post-render/chart'}",
    f"api={ROOT / 'tests/realcharts/helm-tests/chart'}",
    f"operator={ROOT / 'tests/realcharts/tenant/chart'}",
]


@cache
def _run() -> SimulationResult:
    releases = build_inputs(
        str(TREE), values=[], sets=[], helmrelease=[], charts=CHARTS, release_name=None, namespace="default",
        upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[], repository_root=str(ROOT),
    )
    return simulate(load_profile("kind"), releases, horizon=1200.0)


def _ks(name: str):
    return next(k for k in _run().kustomizations if k.name == name)


def _hr(name: str):
    return next(r for r in _run().releases if r.name == name)


def test_infra_waits_for_its_helmreleases_then_is_ready() -> None:
    infra = _ks("infra")
    assert infra.ready == "True" and infra.reason == "ReconciliationSucceeded"
    assert infra.message.startswith("Applied revision: main@sha1:")
    # wait: true health-checks the HelmReleases it applied: Ready only after api's tests passed
    api = _hr("api")
    assert api.outcome == "Ready" and api.reason == "TestSucceeded"
    assert infra.ready_at is not None and api.ready_at is not None and infra.ready_at > api.ready_at
    web = _hr("web")
    assert web.outcome == "Ready"
    # the post-rendered Service is what the cluster got
    sim = _run().sim
    assert sim is not None
    assert sim.store.get("Service", "apps", "web")["spec"]["type"] == "NodePort"


def test_tenant_release_appears_only_after_infra_and_fails_forbidden() -> None:
    op = _hr("operator")
    assert op.outcome == "Failed" and op.reason == "InstallFailed"
    assert 'clusterroles.rbac.authorization.k8s.io "operator-reader" is forbidden: User "system:serviceaccount:team-a:team-a"' in op.message
    trace = _run().trace
    created = next(e for e in trace if e.what == "applied" and e.obj == "team-a/operator")
    assert created.actor == "kustomize-controller" and created.time >= (_ks("infra").ready_at or 0)
    first = next(e for e in trace if e.actor == "helm-controller" and e.obj == "HelmRelease/team-a/operator")
    assert first.time >= created.time


def test_tenants_health_check_times_out_on_the_retrying_release() -> None:
    tenants = _ks("tenants")
    # checkHealth: the retried install keeps the HelmRelease Reconciling (kstatus InProgress)
    err = "timeout waiting for: [HelmRelease/team-a/operator status: 'InProgress']"
    assert (tenants.ready, tenants.reason) == ("False", "HealthCheckFailed")
    assert tenants.message == f"health check failed after 3m0s: {err}"
    assert tenants.conditions["Healthy"] == {"status": "False", "reason": "HealthCheckFailed", "message": err}


def test_dependency_blocked_until_infra_ready() -> None:
    trace = _run().trace
    blocked = [e for e in trace if e.obj == "Kustomization/flux-system/tenants" and e.data.get("reason") == "DependencyNotReady"]
    assert blocked and blocked[0].message == "Ready=False DependencyNotReady: dependency 'flux-system/infra' is not ready"
    assert blocked[0].time < (_ks("infra").ready_at or 0)


def test_a_release_its_kustomization_never_applies_is_explained_down_to_the_failing_one() -> None:
    # apps dependsOn infra, whose health check times out on a Deployment no node admits: check's
    # HS106 names the Kustomization chain, infra's own failure, and the pod's FailedScheduling
    import json

    from typer.testing import CliRunner

    from helmsim.cli import app

    gate = ROOT / "tests" / "realcharts" / "kustomization-gate"
    args = ["check", str(gate), "--chart", f"web={ROOT / 'tests/realcharts/post-render/chart'}", "-p", "kind"]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 1, result.output
    findings = json.loads(result.stdout)["findings"]
    (hs106,) = [f for f in findings if f["rule"] == "HS106"]
    occ = hs106["occurrences"][0]
    assert occ["message"] == (
        "HelmRelease apps/web is never reconciled: Kustomization flux-system/apps has not applied it: "
        "DependencyNotReady: dependency 'flux-system/infra' is not ready; Kustomization/flux-system/infra "
        "is Ready=False HealthCheckFailed: health check failed after 2m0s: timeout waiting for: "
        "[Deployment/default/edge status: 'InProgress']"
    )
    texts = [s["text"] for s in occ["chain"]]
    assert texts[0].startswith("FailedScheduling: 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.")
    assert texts[1].startswith("Ready=False HealthCheckFailed: health check failed after 2m0s")
    assert hs106["fixes"][0]["summary"].startswith("make what Kustomization/flux-system/infra waits for healthy (Deployment/default/edge")
