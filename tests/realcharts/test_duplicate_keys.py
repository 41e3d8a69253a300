"""A rendered manifest that repeats a key in one mapping (tests/realcharts/duplicate-keys).

Shape from prometheus-community/helm-charts charts/kube-prometheus-stack
templates/alertmanager/alertmanager.yaml with ci/03-non-defaults-values.yaml: the template writes
``logFormat`` and then ``additionalConfig`` (which also holds ``logFormat``) into one mapping.
``helm template`` prints it as is, and Helm's kube client decodes the manifest with
sigs.k8s.io/yaml YAMLToJSON (non-strict gopkg.in/yaml.v2 into a map), so the last value is the
one the API server receives. Files a user writes to helmsim (profiles, scenarios, values, saved
objects) still refuse a repeated key.
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from helmsim.cli.app import app

CHART = Path(__file__).parent / "duplicate-keys"
SETS = ["--set", "additionalConfig.logFormat=json"]


def test_render_prints_the_manifest_as_helm_template_does() -> None:
    result = CliRunner().invoke(app, ["render", str(CHART), *SETS])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("logFormat:") == 2


def test_plan_and_simulate_keep_the_last_value() -> None:
    plan = CliRunner().invoke(app, ["plan", str(CHART), *SETS, "--format", "json"])
    assert plan.exit_code == 0, plan.output
    sim = CliRunner().invoke(app, ["simulate", str(CHART), *SETS, "--release-name", "dup"])
    assert sim.exit_code == 0, sim.output
    assert "Ready" in sim.stdout


def test_the_decoded_object_holds_the_last_value() -> None:
    from helmsim import yamlio

    text = "apiVersion: v1\nkind: ConfigMap\ndata:\n  logFormat: logfmt\n  logFormat: json\n"
    [doc] = yamlio.load_documents(text, "m.yaml", last_key_wins=True)
    assert doc.value["data"] == {"logFormat": "json"}


def test_a_profile_with_a_repeated_key_is_still_bad_input(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text("extends: kind\nextends: kind\n")
    result = CliRunner().invoke(app, ["profiles", "show", str(profile)])
    assert result.exit_code == 2
    assert 'duplicate mapping key "extends"' in result.output
