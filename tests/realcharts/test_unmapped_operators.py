"""Releases helmsim does not simulate, and custom resources nothing here reconciles
(tests/realcharts/README.md: unmapped-operators)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.cluster.profile import load_profile, profile_from_mapping
from helmsim.config import load_config
from helmsim.errors import InputError
from helmsim.release_inputs import build_inputs
from helmsim.simulate import ReleaseInput, SimulationResult, simulate, with_declared_crds

HERE = Path(__file__).parent / "unmapped-operators"
PORTAL = HERE / "charts" / "portal"
NOT_RECONCILED = "nothing in this simulation reconciles {}; kstatus reads it as Current (a profile's operators can model how it gets Ready)"


def _inputs(*, declare: bool = True) -> list[ReleaseInput]:
    releases = build_inputs(
        str(HERE / "flux"), values=[], sets=[], helmrelease=[], charts=[f"portal={PORTAL}"], release_name=None,
        namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    return with_declared_crds(releases, load_config(HERE / ".helmsim.yaml").unmapped_releases) if declare else releases


def _run(profile: str = "kind", *, declare: bool = True) -> SimulationResult:
    prof = load_profile(str(HERE / "profiles" / profile) if profile.endswith(".yaml") else profile)
    return simulate(prof, _inputs(declare=declare), horizon=1800.0)


def test_declared_crds_are_served_once_the_release_is_modelled_ready() -> None:
    result = _run()
    by = {o.name: o for o in result.releases}
    assert by["portal"].outcome == "Ready"
    assert result.sim is not None
    # created by the unmapped release when it is modelled Ready (t=60s), Established
    crd = result.sim.store.get("CustomResourceDefinition", None, "certificates.cert-manager.io")
    assert crd is not None and crd["metadata"]["creationTimestamp"] == result.sim.timestamp(60.0)
    assert result.sim.store.get("Certificate", "apps", "portal-tls") is not None
    # nothing reconciles them here: kstatus reads a custom resource without status as Current
    # (fluxcd/cli-utils pkg/kstatus/status/generic.go), said once per kind
    assert NOT_RECONCILED.format("Certificate") in result.notes
    assert NOT_RECONCILED.format("Issuer") in result.notes
    assert sum("reconciles Certificate" in n for n in result.notes) == 1
    assert (
        "HelmRelease cert-manager/cert-manager: chart cert-manager is not mapped to a local chart "
        "(--chart cert-manager=PATH); modelled as Ready 60s after its dependencies are; its CRDs "
        "(Certificate, Issuer) are served from then on"
    ) in result.notes
    # kube-prometheus-stack declares nothing under kind: portal's Capabilities check skips the
    # monitoring.coreos.com objects (argo-cd prometheusrule.yaml's guard)
    assert result.sim.store.get("PrometheusRule", "apps", "portal-rules") is None


def test_without_the_declaration_the_custom_resources_do_not_map() -> None:
    by = {o.name: o for o in _run(declare=False).releases}
    portal = by["portal"]
    # helm/helm pkg/action/install.go: Build maps every object before anything is created
    assert portal.outcome == "Failed" and portal.helm_status == []
    # every unmapped object is listed (pkg/kube/client.go Build aggregates them)
    assert portal.message == (
        "Helm install failed for release apps/portal with chart portal@0.2.0: unable to build kubernetes "
        'objects from release manifest: [resource mapping not found for name: "portal-tls" namespace: "" '
        'from "": no matches for kind "Certificate" in version "cert-manager.io/v1"\nensure CRDs are '
        'installed first, resource mapping not found for name: "portal-self-signed" namespace: "" from "": '
        'no matches for kind "Issuer" in version "cert-manager.io/v1"\nensure CRDs are installed first]'
    )


def test_operator_models_make_custom_resources_ready() -> None:
    result = _run("operators.yaml")
    by = {o.name: o for o in result.releases}
    portal = by["portal"]
    assert portal.outcome == "Ready"
    # both unmapped releases Ready at 60s; portal installs then, and Helm's wait (kstatus: Ready
    # False → InProgress) lasts until the modelled Prometheus operator writes Ready=True at +40s
    assert portal.ready_at is not None and 100.0 <= portal.ready_at < 103.0
    assert result.sim is not None
    prometheus = result.sim.store.get("Prometheus", "apps", "portal")
    assert prometheus is not None
    assert prometheus["status"]["conditions"][0]["type"] == "Ready"
    assert prometheus["status"]["conditions"][0]["status"] == "True"
    # the Certificate's status is the one the model gives, read by kstatus as its own conditions
    cert = result.sim.store.get("Certificate", "apps", "portal-tls")
    assert cert is not None
    assert cert["status"]["conditions"][0]["message"] == "Certificate is up to date and has not expired"
    assert cert["status"]["observedGeneration"] == 1
    # modelled kinds are not reported; the PrometheusRule is not modelled
    assert NOT_RECONCILED.format("PrometheusRule") in result.notes
    assert not any("reconciles Prometheus;" in n or "reconciles Certificate" in n for n in result.notes)


def test_an_operator_that_never_makes_it_ready() -> None:
    by = {o.name: o for o in _run("never.yaml").releases}
    portal = by["portal"]
    # helm-controller internal/reconcile/install.go: the wait times out (5m), install
    # remediation retries 0 → Stalled
    assert portal.outcome == "Stalled"
    assert portal.message == (
        "Helm install failed for release apps/portal with chart portal@0.2.0: "
        "timeout waiting for: [Prometheus/apps/portal status: 'InProgress']"
    )


def test_status_model_read_as_the_resources_own_conditions() -> None:
    base = load_profile(str(HERE / "profiles" / "operators.yaml")).to_data()
    base["name"] = "failing-certificates"
    base.pop("extends", None)
    base["operators"] = [
        {
            "kinds": ["Certificate", "Issuer"],
            "ready": "5s",
            "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Pending", "message": "Issuing certificate as Secret does not exist"}]},
        }
    ]
    prof = profile_from_mapping(base, source="test")
    result = simulate(prof, _inputs(), horizon=1800.0)
    portal = {o.name: o for o in result.releases}["portal"]
    # kstatus (fluxcd variant) reads Ready=False as InProgress: the wait never ends
    assert portal.outcome == "Stalled"
    assert "timeout waiting for: [Certificate/apps/portal-tls status: 'InProgress'" in portal.message


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"crds": [{"group": "a.example.com", "version": "v1", "kind": "A", "scope": "Namespaced"}]}, "give exactly one of chart or helmRelease"),
        ({"chart": "x", "helmRelease": "a/x", "crds": [{"group": "a.example.com", "version": "v1", "kind": "A", "scope": "Namespaced"}]}, "give exactly one of chart or helmRelease"),
        ({"chart": "x", "crds": []}, "at least 1 item"),
    ],
)
def test_unmapped_release_schema(tmp_path: Path, entry: dict[str, object], message: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps({"name": "p", "extends": "kind", "unmappedReleases": [entry]}))
    with pytest.raises(InputError, match=message) as err:
        load_profile(str(path))
    assert err.value.file == str(path) and err.value.line is not None


def test_operator_schema(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: p\nextends: kind\noperators:\n  - kinds: [prometheus]\n")
    with pytest.raises(InputError, match="is not a Kind or group/Kind") as err:
        load_profile(str(path))
    assert err.value.line == 4
    path.write_text("name: p\nextends: kind\noperators:\n  - kinds: [Prometheus]\n    ready: soon\n")
    with pytest.raises(InputError) as err:
        load_profile(str(path))
    assert err.value.line == 5


def test_config_declaration_exit_2_on_bad_input(tmp_path: Path) -> None:
    (tmp_path / ".helmsim.yaml").write_text("unmappedReleases:\n  - chart: cert-manager\n    crds: [{group: nodot, version: v1, kind: A, scope: Namespaced}]\n")
    with pytest.raises(InputError) as err:
        load_config(tmp_path / ".helmsim.yaml")
    assert err.value.line == 3 and "unmappedReleases" in err.value.message


def test_cli_reads_the_declaration_from_helmsim_yaml() -> None:
    result = CliRunner().invoke(app, ["simulate", str(HERE / "flux"), "--chart", f"portal={PORTAL}", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [r["outcome"] for r in doc["releases"]] == ["Ready", "Ready", "Ready"]
    assert NOT_RECONCILED.format("Certificate") in doc["notes"]
    result = CliRunner().invoke(
        app, ["simulate", str(HERE / "flux"), "--chart", f"portal={PORTAL}", "-p", str(HERE / "profiles" / "never.yaml")]
    )
    assert result.exit_code == 1, result.output


def test_the_config_file_is_not_a_scenario() -> None:
    # .helmsim.yaml beside a Flux tree is the config (helmsim.config), not a *.helmsim.yaml scenario
    from helmsim.scenario import discover

    assert discover([str(HERE)]) == []


def test_a_modelled_operator_creates_what_the_pods_mount() -> None:
    releases = build_inputs(
        str(HERE / "flux"), values=[], sets=[], helmrelease=[], charts=[f"portal={PORTAL}"], release_name=None,
        namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    releases = with_declared_crds(releases, load_config(HERE / ".helmsim.yaml").unmapped_releases)
    releases = [
        r if r.chart is None else msgspec.structs.replace(r, chart=msgspec.structs.replace(r.chart, values={"tls": {"mount": True}}))
        for r in releases
    ]
    result = simulate(load_profile(str(HERE / "profiles" / "operators.yaml")), releases, horizon=1800.0)
    assert {o.name: o for o in result.releases}["portal"].outcome == "Ready"
    assert result.sim is not None
    # the model's creates, its ${spec.secretName} read from the Certificate
    secret = result.sim.store.get("Secret", "apps", "portal-tls")
    assert secret is not None and secret["type"] == "kubernetes.io/tls"
    # without a model nothing issues the Secret: the pod's volume never mounts (kubelet
    # FailedMount), Helm's wait times out; the report names Certificate as not reconciled
    result = simulate(load_profile("kind"), releases, horizon=1800.0)
    portal = {o.name: o for o in result.releases}["portal"]
    assert portal.outcome == "Stalled"
    assert "timeout waiting for: [Deployment/apps/portal status: 'InProgress']" in portal.message
    assert NOT_RECONCILED.format("Certificate") in result.notes


def test_hs114_names_the_certificate_that_would_issue_the_missing_secret() -> None:
    # the Secret is missing because nothing runs cert-manager, not because the release forgot it
    # (cloudnative-pg/charts charts/plugin-barman-cloud templates/client-certificate.yaml)
    from helmsim.diagnose.check import CheckOptions, run_check

    releases = build_inputs(str(HERE / "flux"), charts=[f"portal={PORTAL}"])
    releases = with_declared_crds(releases, load_config(HERE / ".helmsim.yaml").unmapped_releases)
    releases = [
        r if r.chart is None else msgspec.structs.replace(r, chart=msgspec.structs.replace(r.chart, values={"tls": {"mount": True}}))
        for r in releases
    ]
    report = run_check(releases, [load_profile("kind")], options=CheckOptions(horizon=1800.0))
    (finding,) = [f for f in report.findings if f.rule == "HS114"]
    assert (
        "Secret/apps/portal-tls is missing when they need it (Certificate/apps/portal-tls of the release names it as "
        "its secretName, but nothing in this simulation runs cert-manager to issue it)"
    ) in finding.message, finding.message
    assert finding.fixes[0].summary.startswith("install cert-manager before this release (a HelmRelease it dependsOn)")
