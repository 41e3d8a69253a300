"""`helmsim render` and `helmsim plan` end to end through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helmsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
SEED1 = ROOT / "examples" / "seed1-migrate-race"
CHARTS = ROOT / "tests" / "fixtures" / "charts"
CILIUM = ["--api-versions", "cilium.io/v2/CiliumNetworkPolicy"]

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_render_prints_like_helm_template() -> None:
    code, out, _ = run("render", str(CHARTS / "caps"), *CILIUM, "--release-name", "r")
    assert code == 0
    # helm template's order: InstallOrder (ConfigMap before Deployment), unknown kinds last
    assert out.startswith("---\n# Source: caps/templates/deploy.yaml\napiVersion: v1\nkind: ConfigMap\n")
    kinds = [line for line in out.splitlines() if line.startswith("kind: ")]
    assert kinds[-2:] == ["kind: Deployment", "kind: CiliumNetworkPolicy"] and "name: r-caps" in out


def test_render_reads_rendered_yaml_from_stdin() -> None:
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
    result = runner.invoke(app, ["render", "-"], input=doc)
    assert result.exit_code == 0 and "# Source: <stdin>" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["render", "/nonexistent/chart"], "/nonexistent/chart: no such file or directory"),
        (["render", str(CHARTS / "broken")], "broken/templates/cm.yaml:4: render failed:"),
        (["render", str(CHARTS / "caps"), "-f", "/nonexistent/values.yaml"], "values file not found"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    code, _, err = run(*args)
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [a\n")
    code, _, err = run("render", str(bad))
    assert code == 2 and f"{bad}:" in err and "invalid YAML" in err


def test_plan_orders_the_job_before_its_cilium_policy() -> None:
    code, out, _ = run("plan", str(SEED1), "-n", "kagent", "--format", "json", *CILIUM)
    assert code == 0
    plan = json.loads(out)
    kinds = [g["kind"] for g in plan["groups"]]
    assert kinds.index("Job") < kinds.index("CiliumNetworkPolicy")
    assert kinds[-1] == "CiliumNetworkPolicy"  # unknown kinds go last
    assert plan["wait"]["objects"] and not plan["preHooks"]["hooks"]


def test_plan_with_the_kubernetes_flavour_puts_networkpolicy_early() -> None:
    code, out, _ = run(
        "plan", str(SEED1), "-n", "kagent", "--format", "json",
        "--set", "networkPolicy.flavour=kubernetes", "--set", "agentManager.createNamespace=true",
    )
    assert code == 0
    kinds = [g["kind"] for g in json.loads(out)["groups"]]
    assert kinds[:3] == ["PriorityClass", "Namespace", "NetworkPolicy"]
    assert kinds.index("NetworkPolicy") < kinds.index("Job")


def test_plan_policy_as_pre_install_hook() -> None:
    code, out, _ = run(
        "plan", str(SEED1), "-n", "kagent", "--format", "json", *CILIUM,
        "-f", str(SEED1 / "ci" / "policy-hook-values.yaml"),
    )
    assert code == 0
    hooks = json.loads(out)["preHooks"]["hooks"]
    assert [(h["kind"], h["hook"]["weight"]) for h in hooks] == [("CiliumNetworkPolicy", -5)]


def test_upgrade_plan_reports_immutable_job_template() -> None:
    code, out, _ = run(
        "plan", str(SEED1), "-n", "kagent", *CILIUM,
        "--set", "agentManager.image.tag=4.7.1",
        "--upgrade-from", str(SEED1),
    )
    assert code == 1  # the upgrade would fail (issue 18)
    assert 'cannot patch "' in out and "with kind Job:" in out
    assert "spec.template: Invalid value:" in out and "field is immutable" in out


def test_plan_text_lists_phases() -> None:
    code, out, _ = run("plan", str(SEED1), "-n", "kagent", *CILIUM)
    assert code == 0
    for phase in ("1. crds/", "2. pre-install hooks", "3. manifest", "4. wait", "5. post-install hooks"):
        assert phase in out
