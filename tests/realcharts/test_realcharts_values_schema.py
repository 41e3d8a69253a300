"""Values failing a chart's values.schema.json: Helm's text, exit 2, naming the values file and line.

Helm's engine validates the coalesced values against the schema before rendering (helm/helm
pkg/chart/common/util/values.go: "values don't meet the specifications of the schema(s) in the
following chart(s):" then "<chart>:" and one "- at '<pointer>': <reason>" line per error, from
santhosh-tekuri/jsonschema v6), so `helm template`/`install` fail before anything is created.
"""

from __future__ import annotations

import pytest
from realcharts_helpers import HERE, simulate_chart
from typer.testing import CliRunner

from helmsim.cli import app

CHART = HERE / "values-schema"
HEAD = "values don't meet the specifications of the schema(s) in the following chart(s): values-schema: "


@pytest.mark.parametrize("command", ["render", "plan", "simulate", "check"])
@pytest.mark.parametrize(
    ("values", "line", "error"),
    [
        ("replicas-string-values.yaml", 4, "- at '/replicaCount': got string, want number"),
        ("typo-values.yaml", 3, "- at '/image': additional properties 'pullPolicy' not allowed"),
    ],
)
def test_schema_errors_are_helms_text_naming_the_values_file_and_line(
    command: str, values: str, line: int, error: str
) -> None:
    path = CHART / "ci" / values
    args = [command, str(CHART), "-f", str(path)]
    if command in ("simulate", "check"):
        args += ["--profile", "kind"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"error: {path}:{line}: {HEAD}{error}"


def test_a_helmrelease_whose_values_fail_the_schema_fails_that_release() -> None:
    # In a Flux tree the release fails with Helm's own multi-line text (helm-controller
    # internal/reconcile/install.go), nothing is stored and it is retried
    result = simulate_chart("values-schema", helmrelease=("flux",), horizon=120)
    (out,) = result.releases
    assert out.outcome == "Failed" and out.helm_status == []
    assert out.message == (
        "Helm install failed for release default/values-schema with chart values-schema@0.1.0: "
        "values don't meet the specifications of the schema(s) in the following chart(s):\n"
        "values-schema:\n- at '/replicaCount': got string, want number"
    )
