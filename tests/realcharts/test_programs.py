"""Programs that cannot work (tests/realcharts/README.md: startupapicheck-hook, operator-default-deny).

What real Helm v4, helm-controller and the kubelet do with cert-manager installed without its
CRDs, and with an operator whose egress to the API server a default-deny cluster drops.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.cluster.profile import load_profile
from helmsim.kube.pods import kubectl_columns
from helmsim.release_inputs import build_inputs
from helmsim.simulate import SimulationResult, simulate

HERE = Path(__file__).parent
CERTS = HERE / "startupapicheck-hook"
OPERATOR = HERE / "operator-default-deny"


def _simulate(chart: Path, profile: str, namespace: str, *sets: str) -> SimulationResult:
    releases = build_inputs(
        str(chart), values=[], sets=list(sets), helmrelease=[], charts=[], release_name=None,
        namespace=namespace, upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    return simulate(load_profile(profile), releases)


def _pods(result: SimulationResult, prefix: str) -> list[dict[str, Any]]:
    assert result.sim is not None
    return [p for p in result.sim.store.list("Pod") if p["metadata"]["name"].startswith(prefix)]


def _columns(result: SimulationResult, pod: dict[str, Any]) -> tuple[str, str, str]:
    assert result.sim is not None
    c = kubectl_columns(pod, result.sim.datetime())
    return c.ready, c.status, c.restarts


def _cli(*args: str) -> Any:
    out = CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})
    assert out.exit_code in (0, 1), out.output
    return out


# --- cert-manager without its CRDs ------------------------------------------------------------------


def test_startupapicheck_without_the_crds_fails_post_install() -> None:
    """crds.enabled false (cert-manager's default): the manifest installs and waits Ready, then
    the post-install startupapicheck Job dry-run creates CertificateRequests every 5 s for 1m,
    exits 124, restarts (OnFailure: at once, then 10 s, 20 s back-off) and is still running when
    the 5m timeout ends the hook wait."""
    result = _simulate(CERTS, "kind", "cert-manager")
    (certs,) = result.releases
    # helm/helm pkg/action/install.go: "failed post-install: %s" around the hook wait's error;
    # helm-controller internal/reconcile/install.go: "Helm install failed for release …"
    assert certs.outcome == "Stalled" and certs.reason == "RetriesExceeded"
    assert certs.message == (
        "Helm install failed for release cert-manager/certs with chart certs@1.2.0: failed post-install: "
        "timeout waiting for: [Job/cert-manager/certs-startupapicheck status: 'InProgress']"
    )
    assert [h["status"] for h in certs.helm_status] == ["failed"]
    (pod,) = _pods(result, "certs-startupapicheck")
    name = pod["metadata"]["name"]
    mine = [e for e in result.trace if e.obj == f"Pod/cert-manager/{name}"]
    starts = [round(e.time, 2) for e in mine if e.what == "event" and e.data.get("reason") == "Started"]
    exits = [(round(e.time, 2), e.data["exitCode"]) for e in mine if e.what == "container-exited"]
    # each run: checks at 0, 5, … 65 s (more than --wait=1m has passed): exit 124; restarts at
    # once, then after 10 s and 20 s (+ 0.5 s container start under kind)
    assert starts == [18.76, 84.26, 159.76, 245.26]
    assert exits == [(round(t + 65, 2), 124) for t in starts]
    # the simulation ends at t=320 (the first 5 s step after Stalled), inside the 40 s back-off
    assert _columns(result, pod) == ("0/1", "CrashLoopBackOff", "3 (9s ago)")
    logs = [e.data["line"] for e in mine if e.what == "container-log"]
    assert logs[0] == '"error executing command" err="the cert-manager CRDs are not yet installed on the Kubernetes API server"'
    assert len(logs) == 4
    assert result.notes == []  # every image of the chart is in the catalog


@pytest.mark.parametrize("switch", ["crds.enabled=true", "installCRDs=true"])
def test_startupapicheck_with_the_crds_is_ready(switch: str) -> None:
    result = _simulate(CERTS, "kind", "cert-manager", switch)
    (certs,) = result.releases
    assert certs.outcome == "Ready" and certs.message == (
        "Helm install succeeded for release cert-manager/certs.v1 with chart certs@1.2.0"
    )
    ready = [e for e in result.trace if e.what == "container-log" and e.data.get("line") == "The cert-manager API is ready"]
    assert len(ready) == 1


def test_check_names_the_missing_api() -> None:
    out = _cli("check", str(CERTS), "-n", "cert-manager", "-p", "kind", "--format", "json", "--no-verify")
    doc = json.loads(out.stdout)
    found = [f for f in doc["findings"] if f["rule"] == "HS116" and f["object"] == "Job/cert-manager/certs-startupapicheck"]
    assert len(found) == 1
    assert found[0]["message"].startswith(
        "Job/cert-manager/certs-startupapicheck's container cert-manager-startupapicheck (catalog entry "
        "cert-manager-startupapicheck) needs the cert-manager.io/v1/CertificateRequest API served, which the "
        "cluster does not have when it runs; it gives up (the cert-manager CRDs are not yet installed on the "
        "Kubernetes API server) and exits 124, 4 runs in all"
    )


# --- an operator on a default-deny cluster ------------------------------------------------------------


def test_operator_on_default_deny_is_not_ready_and_names_the_denied_need() -> None:
    """cilium-always and no policy of its own: the operator's first API call (its ConfigMap)
    dials 10.96.0.1:443 (it would give up after client-go's 30 s), its startup probe fails
    meanwhile, and at the 6th failure (6 × 5 s) the kubelet kills it (exit 143) — the probe's
    clock wins the tie with the dial timeout; the kubelet restarts it at once, then after 10 s,
    20 s, 40 s; at the 5m timeout it waits out an 80 s back-off with 4 restarts."""
    result = _simulate(OPERATOR, "cilium-always", "cnpg-system")
    (op,) = result.releases
    assert op.outcome == "Stalled" and op.message == (
        "Helm install failed for release cnpg-system/pg-operator with chart pg-operator@0.3.0: "
        "timeout waiting for: [Deployment/cnpg-system/pg-operator status: 'InProgress']"
    )
    (pod,) = _pods(result, "pg-operator")
    # the fifth run exited at t=226.6; the simulation ends at t=305 (the first 5 s step after
    # Stalled), inside the 80 s back-off
    assert _columns(result, pod) == ("0/1", "CrashLoopBackOff", "4 (78s ago)")
    killed = [e for e in result.trace if e.what == "probe-killed"]
    assert [e.data["doing"] for e in killed] == ["connecting to kube-apiserver"] * 5
    exits = [e.data["exitCode"] for e in result.trace if e.what == "container-exited"]
    assert exits == [143] * 5
    events = [(e.data.get("reason"), e.message) for e in result.trace if e.what == "event" and e.obj.startswith("Pod/")]
    ip = pod["status"]["podIP"]
    probe_error = f'Startup probe failed: Get "https://{ip}:9443/readyz": dial tcp {ip}:9443: connect: connection refused'
    assert ("Unhealthy", probe_error) in events
    assert ("Killing", "Container manager failed startup probe, will be restarted") in events


def test_check_finding_names_the_denied_need_and_what_it_did() -> None:
    out = _cli("check", str(OPERATOR), "-n", "cnpg-system", "-p", "cilium-always", "--format", "json", "--no-verify")
    doc = json.loads(out.stdout)
    (found,) = [f for f in doc["findings"] if f["rule"] == "HS113"]
    assert found["object"] == "Deployment/cnpg-system/pg-operator" and found["severity"] == "error"
    assert found["message"] == (
        "Deployment/cnpg-system/pg-operator needs kube-apiserver but under cilium-always (cilium CNI, "
        "policyEnforcementMode always) no policy allows that egress for its pods: every attempt is dropped; "
        "the kubelet kills manager when its startup probe has failed while it is still connecting to kube-apiserver "
        "(exit 143, 5 runs in all), the kubelet restarts it with its back-off (CrashLoopBackOff, RESTARTS 4 at the end), "
        "so it is never Ready; the release ends Stalled"
    )


@pytest.mark.parametrize(
    ("profile", "sets"),
    [("cilium-always", ("networkPolicy.enabled=true",)), ("kind", ())],
)
def test_operator_with_its_egress_is_ready(profile: str, sets: tuple[str, ...]) -> None:
    result = _simulate(OPERATOR, profile, "cnpg-system", *sets)
    assert result.releases[0].outcome == "Ready"
    assert not [e for e in result.trace if e.what == "need-failed"]
    (pod,) = _pods(result, "pg-operator")
    assert _columns(result, pod) == ("1/1", "Running", "0")


def test_unknown_operator_is_assumed_and_said_so_in_text_and_json() -> None:
    """The same operator under an image the catalog does not know: its needs are inferred
    (RBAC: the API server), it fails the same way, and both outputs say the behaviour was assumed."""
    note = "no behaviour known for image ghcr.io/example/operator:1.30.0: assumed to start and succeed (it runs until stopped)"
    image = ["--set", "image.repository=ghcr.io/example/operator"]
    base = ("-n", "cnpg-system", "-p", "cilium-always", *image)
    sim_json = json.loads(_cli("simulate", str(OPERATOR), *base, "--format", "json").stdout)
    assert sim_json["releases"][0]["outcome"] == "Stalled" and sim_json["notes"].count(note) == 1
    assert _cli("simulate", str(OPERATOR), *base).stdout.splitlines().count(f"note: {note}") == 1
    check_json = json.loads(_cli("check", str(OPERATOR), *base, "--format", "json", "--no-verify").stdout)
    assert check_json["notes"].count(note) == 1
    assert any(f["rule"] == "HS113" and "kube-apiserver" in f["message"] for f in check_json["findings"])
    assert _cli("check", str(OPERATOR), *base, "--no-verify").stdout.splitlines().count(f"note: {note}") == 1


def test_the_denied_egress_is_listed_before_the_timeout_it_causes() -> None:
    # causes before their effects (diagnose.model.CAUSE_ORDER): the operator's dropped API calls
    # (HS113) come before the wait that times out rather than failing fast (HS110), and HS110
    # says the deadline is the API's default, not the chart's
    out = _cli("simulate", str(OPERATOR), "--release-name", "pg-operator", "--namespace", "cnpg-system", "-p", "cilium-always", "--no-color")
    causes = [line.split()[1] for line in out.stdout.splitlines() if line.strip().startswith("cause ")]
    assert causes[:2] == ["HS113:", "HS110:"], causes
    assert "has progressDeadlineSeconds 600 (the default) ≥ the release timeout 300s" in " ".join(out.stdout.split())
