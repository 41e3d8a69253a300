"""`helmsim profiles list|show`."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.cluster.profile import load_profile

runner = CliRunner()


def test_list_shows_every_builtin_with_its_description() -> None:
    result = runner.invoke(app, ["profiles", "list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["NAME", "DESCRIPTION"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert list(rows) == [
        "aks-cilium", "capa-cilium", "cilium-always", "cilium-default", "eks-gp3", "eks-vpc-cni",
        "gke-autopilot", "gke-dataplane-v2", "k3s", "kind",
    ]
    assert load_profile("kind").description in rows["kind"]


def test_show_builtin_as_yaml_is_the_resolved_profile() -> None:
    result = runner.invoke(app, ["profiles", "show", "cilium-always"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# resolved from: kind <- cilium-default <- cilium-always\n")
    data = yaml.safe_load(result.output)
    assert data["cni"]["policyEnforcementMode"] == "always"
    assert data["storageClasses"][0]["volumeBindingMode"] == "WaitForFirstConsumer"  # from kind
    assert "extends" not in data
    assert data == load_profile("cilium-always").to_data()


def test_show_file_as_json(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("extends: eks-gp3\nname: mine\ncni: {type: none}\n")
    result = runner.invoke(app, ["profiles", "show", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["name"] == "mine" and data["cni"]["type"] == "none"
    assert data["storageClasses"][-1]["provisioner"] == "ebs.csi.aws.com"


def test_unknown_profile_is_one_line_and_exit_2() -> None:
    result = runner.invoke(app, ["profiles", "show", "no-such-profile"])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: unknown profile 'no-such-profile'")


def test_invalid_file_reports_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("extends: cilium-default\ncni:\n  policyEnforcementMode: sometimes\n")
    result = runner.invoke(app, ["profiles", "show", str(path)])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {path}:3: cni.policyEnforcementMode: "
        "Input should be 'default', 'always' or 'never'"
    )


def test_bad_format_is_a_usage_error() -> None:
    result = runner.invoke(app, ["profiles", "show", "kind", "--format", "xml"])
    assert result.exit_code == 2
    assert "xml" in result.stderr
