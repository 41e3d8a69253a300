"""Two rendered objects with one id: helm template prints both, every helm-controller install
refuses them in its post-renderer (fluxcd/helm-controller internal/postrender/build.go, the
origin labels always run; kustomize api/resmap resWrangler.Append). A rehearsal predicts the
failed install, it does not stop on bad input. Shape: argoproj/argo-helm
charts/argocd-apps/templates/item-templates.yaml with ci/item-templates.yaml."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from helmsim.cli import app
from realcharts_helpers import HERE, simulate_chart

REFUSED = (
    "error while running post render on files: may not add resource with an already registered id: "
    "ConfigMap.v1.[noGrp]/settings.[noNs]"
)


def test_a_chart_rendering_one_id_twice_fails_its_install() -> None:
    result = simulate_chart("duplicate-ids", values=("ci/twice-values.yaml",))
    (release,) = result.releases
    assert release.outcome == "Failed"
    assert release.message.endswith(REFUSED), release.message
    assert f"HelmRelease default/duplicate-ids: {REFUSED} (duplicate-ids/templates/items.yaml renders two objects with one id); the release fails with Helm's error" in result.notes


def test_the_same_chart_with_distinct_names_is_ready() -> None:
    (release,) = simulate_chart("duplicate-ids").releases
    assert release.outcome == "Ready"


def test_the_command_exits_1_with_the_prediction_not_2() -> None:
    args = ["simulate", str(HERE / "duplicate-ids"), "-f", str(HERE / "duplicate-ids" / "ci" / "twice-values.yaml"), "--no-color"]
    out: Any = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert out.exit_code == 1, out.output
    assert "Failed" in out.stdout and "may not add resource with an already registered id" in out.stdout
