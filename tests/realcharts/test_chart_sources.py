"""A HelmRelease's chart resolved as Flux's sources serve it (tests/realcharts/README.md:
chart-sources). The local chart ``charts/webapp`` (``webapp`` 1.4.0) stands for what the
HelmRepository, OCI registry or GitRepository holds."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.cluster.profile import load_profile
from helmsim.errors import InputError
from helmsim.release_inputs import build_inputs
from helmsim.simulate import ReleaseOutcome, simulate

HERE = Path(__file__).parent / "chart-sources"
WEBAPP = HERE / "charts" / "webapp"
INDEX = "invalid chart reference: failed to get chart version for remote reference: "


def _run(tree: str, *charts: str, target: str | None = None, root: str | None = None) -> dict[str, ReleaseOutcome]:
    releases = build_inputs(
        target or str(HERE / tree), values=[], sets=[], helmrelease=[str(HERE / tree)] if target else [],
        charts=list(charts), release_name=None, namespace="default", upgrade_from=None,
        upgrade_from_values=[], upgrade_from_set=[], repository_root=root,
    )
    result = simulate(load_profile("kind"), releases, horizon=900.0)
    return {o.name: o for o in result.releases}


def test_version_outside_the_range_is_source_controllers_failure() -> None:
    by = _run("flux", f"webapp={WEBAPP}")
    web = by["web"]
    # source-controller internal/helm/repository/chart_repository.go getChartVersion: no index
    # entry satisfies 2.x; builder_remote.go wraps it as ErrChartReference (persistent: the
    # HelmChart stalls). helm-controller helmrelease_controller.go isReady → SourceNotReady,
    # requeued every 30s, never installed and never Stalled itself
    assert web.outcome == "Failed" and web.reason == "SourceNotReady" and web.ready == "False"
    assert web.message == (
        f"HelmChart 'flux-system/apps-web' is not ready: {INDEX}no 'webapp' chart with version matching '2.x' found"
    )
    assert web.helm_status == [] and web.attempts == 0 and "Stalled" not in web.conditions
    assert web.simulated  # predicted, not modelled: the exit code counts it
    # checkDependencies: the dependent waits for ever
    assert by["shop"].outcome == "Blocked"
    assert by["shop"].message == "dependency 'apps/web' is not ready"
    # a range the chart satisfies installs it (Masterminds/semver: 1.x matches 1.4.0)
    assert by["api"].outcome == "Ready"
    assert by["api"].helm_status[0]["chart"] == "webapp@1.4.0"


def test_nothing_is_created_for_the_failing_source() -> None:
    releases = build_inputs(
        str(HERE / "flux"), values=[], sets=[], helmrelease=[], charts=[f"webapp={WEBAPP}"], release_name=None,
        namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    result = simulate(load_profile("kind"), releases, horizon=900.0)
    assert result.sim is not None
    assert result.sim.store.get("ConfigMap", "apps", "web-config") is None
    assert result.sim.store.get("ConfigMap", "apps", "shop-config") is None
    assert result.sim.store.get("ConfigMap", "apps", "api-config") is not None
    # the run ends once nothing can change (the failing source, its dependent), not at the horizon
    assert result.end_time < 900.0


def test_chart_name_the_repository_does_not_hold() -> None:
    # the single HelmRelease is paired with the chart given, but the index keys the chart by its
    # Chart.yaml name (webapp): helm pkg/repo/v1 ErrNoChartName
    message = f"HelmChart 'flux-system/apps-blog' is not ready: {INDEX}no chart name found"
    assert _run("flux-renamed", target=str(WEBAPP))["blog"].message == message
    # an explicit --chart mapping is no different: the repository serves the chart by its own name
    assert _run("flux-renamed", f"weblog={WEBAPP}")["blog"].message == message


def test_oci_helmrepository() -> None:
    by = _run("flux-oci", f"webapp={WEBAPP}")
    assert by["exact"].outcome == "Ready"
    # oci_chart_repository.go getChartVersion: a concrete version is pulled by tag without
    # listing; the registry holds 1.4.0 only (ErrExternal → chart pull error, not persistent)
    assert by["pinned"].message == (
        "HelmChart 'flux-system/apps-pinned' is not ready: chart pull error: failed to download chart for "
        "remote reference: failed to get 'oci://ghcr.io/example/charts/webapp:1.3.0': not found"
    )
    # getLastMatchingVersionOrConstraint: no tag satisfies ~1.5
    assert by["ranged"].message == (
        "HelmChart 'flux-system/apps-ranged' is not ready: chart pull error: failed to get chart version for "
        "remote reference: could not locate a version matching provided version string ~1.5"
    )
    assert {by[n].outcome for n in ("pinned", "ranged")} == {"Failed"}


def test_chart_ref() -> None:
    charts = [f"{n}={WEBAPP}" for n in ("webapp-1x", "webapp-2x", "webapp-tag", "webapp-chart")]
    by = _run("flux-chartref", *charts)
    assert by["one"].outcome == "Ready"
    # ocirepository_controller.go getTagBySemver: no tag satisfies >=2.0.0 (OCIRepository Ready=False)
    assert by["two"].message == (
        "OCIRepository 'apps/webapp-2x' is not ready: failed to determine the artifact tag for "
        "'oci://ghcr.io/example/charts/webapp': no match found for semver: >=2.0.0"
    )
    assert by["two"].reason == "SourceNotReady"
    # helmrelease_controller.go mutateChartWithSourceRevision: a semver tag must equal the chart's version
    assert by["tagged"].reason == "ChartMutateError"
    assert by["tagged"].message == "artifact revision 1.3.0 does not match chart version 1.4.0"
    # a chartRef to a HelmChart: the HelmChart's own name and its version range
    assert by["viachart"].message == (
        f"HelmChart 'flux-system/webapp-chart' is not ready: {INDEX}no 'webapp' chart with version matching '3.x' found"
    )


def test_git_repository_paths() -> None:
    by = _run("flux-git", root=str(HERE))
    # helmchart_controller.go buildFromTarballArtifact → builder_local.go: the chart at the
    # path is built whatever spec.chart.spec.version says (HelmChartSpec.Version: ignored for
    # GitRepository and Bucket sources)
    assert by["web"].outcome == "Ready" and by["web"].helm_status[0]["chart"] == "webapp@1.4.0"
    # LoadChartMetadata: os.Stat of the path, then Chart.yaml, under the untarred artifact
    assert by["gone"].message == (
        "HelmChart 'flux-system/apps-gone' is not ready: invalid chart reference: stat "
        "/tmp/helmchart-flux-system-apps-gone-…/source/charts/removed: no such file or directory"
    )
    assert by["notachart"].message == (
        "HelmChart 'flux-system/apps-notachart' is not ready: invalid chart reference: open "
        "/tmp/helmchart-flux-system-apps-notachart-…/source/flux-git/Chart.yaml: no such file or directory"
    )
    # securejoin.SecureJoin: ".." cannot leave the repository root
    assert by["escape"].outcome == "Ready"


def test_git_repository_notes() -> None:
    releases = build_inputs(
        str(HERE / "flux-git"), values=[], sets=[], helmrelease=[], charts=[], release_name=None,
        namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[], repository_root=str(HERE),
    )
    notes = simulate(load_profile("kind"), releases, horizon=900.0).notes
    assert f"HelmRelease apps/web: chart ./charts/webapp read from {WEBAPP} (the GitRepository's content is taken to be the local tree)" in notes
    assert (
        "HelmRelease apps/web: version '9.x' is ignored for a chart from a GitRepository (source-controller "
        "builds the chart at the path: webapp 1.4.0)"
    ) in notes


def test_repository_root_defaults_to_the_git_work_tree(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")  # the default root is git's top directory
    shutil.copytree(HERE / "charts", tmp_path / "charts")
    shutil.copytree(HERE / "flux-git", tmp_path / "deploy" / "flux")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    releases = build_inputs(
        str(tmp_path / "deploy" / "flux"), values=[], sets=[], helmrelease=[], charts=[], release_name=None,
        namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    result = {o.name: o for o in simulate(load_profile("kind"), releases, horizon=900.0).releases}
    assert result["web"].outcome == "Ready"
    assert result["gone"].reason == "SourceNotReady"


def test_repository_root_must_be_a_directory() -> None:
    with pytest.raises(InputError, match="--repository-root: not a directory"):
        _run("flux-git", root=str(HERE / "nope"))


def test_cli_exit_codes() -> None:
    # a source failure is a predicted failure: exit 1, with the message in the JSON report
    result = CliRunner().invoke(app, ["simulate", str(HERE / "flux"), "--chart", f"webapp={WEBAPP}", "--format", "json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert [(r["name"], r["outcome"]) for r in doc["releases"]] == [("web", "Failed"), ("shop", "Blocked"), ("api", "Ready")]
    result = CliRunner().invoke(app, ["simulate", str(HERE / "flux-git"), "--repository-root", str(HERE), "--format", "json"])
    assert result.exit_code == 1, result.output
    result = CliRunner().invoke(app, ["check", str(HERE / "flux"), "--chart", f"webapp={WEBAPP}", "-p", "kind"])
    assert result.exit_code == 1, result.output
    assert "HS100" in result.stdout and "no 'webapp' chart with version matching '2.x' found" in result.stdout


def test_v_prefixed_chart_versions() -> None:
    by = _run("flux-vprefix", f"certs={HERE / 'charts' / 'certs'}")
    # Masterminds/semver NewVersion coerces the "v": 1.16.x matches v1.16.2 in an index
    assert by["http-range"].outcome == "Ready"
    assert by["http-range"].helm_status[0]["chart"] == "certs@v1.16.2"
    # OCI: a concrete version is a tag, pulled as written; the registry's tag is v1.16.2
    assert by["oci-tag"].outcome == "Ready"
    assert by["oci-bare"].message == (
        "HelmChart 'flux-system/apps-oci-bare' is not ready: chart pull error: failed to download chart for "
        "remote reference: failed to get 'oci://quay.io/jetstack/charts/certs:1.16.2': not found"
    )


def test_sources_outside_the_input_are_said_once() -> None:
    def notes(tree: str, *charts: str) -> list[str]:
        releases = build_inputs(
            str(HERE / tree), values=[], sets=[], helmrelease=[], charts=list(charts), release_name=None,
            namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
        )
        return [n for r in releases for n in r.notes]

    # flux-renamed holds no HelmRepository: its type (HTTP or OCI) is assumed, and said
    assert notes("flux-renamed", f"weblog={WEBAPP}") == [
        "HelmRelease apps/blog: HelmRepository flux-system/charts is not in the input: read as an HTTP "
        "repository whose index holds webapp 1.4.0"
    ]
    # the HelmRepository is in flux/: nothing is assumed
    assert notes("flux", f"webapp={WEBAPP}") == []
