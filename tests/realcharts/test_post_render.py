"""helm-controller's post-renderers (tests/realcharts/README.md: post-render): the simulation,
plan, diff and check see the patched manifest; a patch that fails is Helm's install failure."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.cluster.profile import load_profile
from helmsim.diffing import render_side
from helmsim.flux.inputs import load_flux_tree
from helmsim.release_inputs import build_inputs
from helmsim.render import RenderOptions
from helmsim.simulate import simulate

HERE = Path(__file__).parent / "post-render"
CHART = str(HERE / "chart")


def _simulate(helmrelease: str, horizon: float = 600.0):  # type: ignore[no-untyped-def]
    releases = build_inputs(
        CHART, values=[], sets=[], helmrelease=[helmrelease], charts=[], release_name=None,
        namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    return simulate(load_profile("kind"), releases, horizon=horizon)


def test_the_cluster_gets_the_patched_objects() -> None:
    result = _simulate(str(HERE / "flux" / "helmrelease.yaml"))
    (web,) = result.releases
    assert web.outcome == "Ready", web.message
    assert result.sim is not None
    store = result.sim.store
    deploy = store.get("Deployment", "apps", "web")
    assert deploy is not None
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    # the strategic-merge patch merged env by name and added resources; images rewrote the image
    assert container["env"] == [{"name": "MODE", "value": "patched"}]
    assert container["resources"] == {"limits": {"memory": "256Mi"}}
    assert container["image"] == "registry.example/mirror/nginx:1.27"
    # the JSON 6902 patch
    assert store.get("Service", "apps", "web")["spec"]["type"] == "NodePort"
    # internal/postrender/build.go: commonMetadata and the origin labels on every object
    labels = deploy["metadata"]["labels"]
    assert labels["team"] == "storefront"
    assert labels["helm.toolkit.fluxcd.io/name"] == "web"
    assert labels["helm.toolkit.fluxcd.io/namespace"] == "apps"
    # postRenderStrategy combined (Helm 4's default): the pre-install hook was patched too
    job = store.get("Job", "apps", "web-migrate")
    assert job is not None and job["spec"]["ttlSecondsAfterFinished"] == 600
    assert job["metadata"]["labels"]["helm.toolkit.fluxcd.io/name"] == "web"
    # kustomize's YAML 1.2 reading: `cache: on` stays the string "on", so the ConfigMap is valid
    assert store.get("ConfigMap", "apps", "web-settings")["data"] == {"cache": "on"}


def test_a_patch_without_target_fails_the_install_as_helm_reports_it() -> None:
    result = _simulate(str(HERE / "flux" / "broken.yaml"))
    (web,) = result.releases
    ident = "Deployment.v1.apps/webapp.[noNs]"
    # helm/helm pkg/action/action.go renderResources wraps kustomize's PatchTransformer error;
    # helm-controller internal/reconcile/install.go fmtInstallFailure wraps Helm's
    assert web.outcome == "Failed" and web.reason == "InstallFailed"
    assert web.message == (
        "Helm install failed for release apps/web with chart web@0.1.0: error while running post "
        f'render on files: no resource matches strategic merge patch "{ident}": no matches for Id '
        f"{ident}; failed to find unique target for patch {ident}"
    )
    # rendering precedes Releases.Create: nothing stored, nothing created, retried (not Stalled)
    assert web.helm_status == [] and "Stalled" not in web.conditions and web.attempts > 1
    assert result.sim is not None and result.sim.store.get("Deployment", "apps", "web") is None


def _actions(stdout: str) -> list[tuple[str, str]]:
    doc = json.loads(stdout)
    return [(o["kind"], o["action"]) for g in doc["groups"] for o in g["objects"]]


def test_plan_shows_the_patched_manifest() -> None:
    # an upgrade that only changes the image tag, which the images post-renderer pins to 1.27
    args = [
        "plan", CHART, "-n", "apps", "--release-name", "web", "--set", "image=nginx:1.26",
        "--upgrade-from", CHART, "--upgrade-from-set", "image=nginx:1.24", "--format", "json",
    ]
    plain = CliRunner().invoke(app, args)
    patched = CliRunner().invoke(app, [*args, "--helmrelease", str(HERE / "flux" / "helmrelease.yaml")])
    assert plain.exit_code == 0 and patched.exit_code == 0, patched.output
    assert ("Deployment", "patch") in _actions(plain.stdout)
    assert ("Deployment", "unchanged") in _actions(patched.stdout)
    broken = CliRunner().invoke(app, [*args, "--helmrelease", str(HERE / "flux" / "broken.yaml")])
    assert broken.exit_code == 2
    assert "error while running post render on files: no resource matches strategic merge patch" in broken.stderr


def test_diff_compares_post_rendered_manifests(tmp_path: Path) -> None:
    hr = load_flux_tree([str(HERE / "flux" / "helmrelease.yaml")]).helmreleases[0]
    opts = RenderOptions(release_name="web", namespace="apps")
    rendered = render_side(Path(CHART), None, opts, hr=hr)
    assert rendered.error is None
    deploy = next(r for r in rendered.resources if r.kind == "Deployment")
    assert deploy.body["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/mirror/nginx:1.27"
    assert "# Source: web/templates/deployment.yaml" in rendered.text
    broken = load_flux_tree([str(HERE / "flux" / "broken.yaml")]).helmreleases[0]
    failed = render_side(Path(CHART), None, opts, hr=broken)
    assert failed.error is not None and failed.error.startswith("error while running post render on files:")


def test_diff_cli_with_a_helmrelease(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["cp", "-r", CHART, str(repo)], check=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (repo / "values.yaml").write_text("image: nginx:1.26\n")
    result = CliRunner().invoke(
        app,
        ["diff", str(repo), "--against", "HEAD", "--release-name", "web", "-n", "apps", "--format", "json",
         "--helmrelease", str(HERE / "flux" / "helmrelease.yaml")],
    )
    doc = json.loads(result.stdout)
    # the image patch rewrites both tags to 1.27: what helm-controller applies did not change
    assert [e["status"] for e in doc["entries"]] == ["identical"], result.stdout


def test_check_reports_the_post_render_failure() -> None:
    result = CliRunner().invoke(
        app, ["check", CHART, "--helmrelease", str(HERE / "flux" / "broken.yaml"), "-p", "kind", "--format", "json"]
    )
    assert result.exit_code in (0, 1), result.output
    assert "error while running post render on files: no resource matches strategic merge patch" in result.stdout
