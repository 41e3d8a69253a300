"""One release's render failure is that release's (tests/realcharts/README.md: failing-release-tree)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.cluster.profile import load_profile
from helmsim.release_inputs import build_inputs
from helmsim.simulate import simulate

TREE = Path(__file__).parent / "failing-release-tree"
FAIL = (
    "execution error at (exporter/templates/servicemonitor.yaml:2:4): Either "
    ".Values.prometheus.podmonitor.enabled or .Values.prometheus.servicemonitor.enabled can be "
    "enabled at a time, but not both."
)
CHARTS = [f"exporter={TREE / 'charts' / 'exporter'}", f"webapp={TREE / 'charts' / 'webapp'}"]


def _result():  # type: ignore[no-untyped-def]
    releases = build_inputs(
        str(TREE / "flux"), values=[], sets=[], helmrelease=[], charts=CHARTS, release_name=None,
        namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    return simulate(load_profile("kind"), releases, horizon=1200.0)


def test_failing_chart_fails_its_release_only() -> None:
    result = _result()
    by = {o.name: o for o in result.releases}
    exporter = by["exporter"]
    # helm-controller internal/reconcile/install.go failure(): fmtInstallFailure with Helm's error;
    # no release was stored (pkg/action/install.go renders before Releases.Create), so no
    # remediation counts and the reconcile is retried with backoff, never Stalled
    assert exporter.outcome == "Failed" and exporter.reason == "InstallFailed"
    assert exporter.message == f"Helm install failed for release monitoring/exporter with chart exporter@1.4.0: {FAIL}"
    assert exporter.conditions["Released"]["message"] == exporter.message
    assert exporter.helm_status == [] and "Stalled" not in exporter.conditions
    assert exporter.attempts > 1
    # helmrelease_controller.go checkDependencies: the dependent never gets past its dependency
    assert by["dashboard"].outcome == "Blocked"
    assert by["dashboard"].message == "dependency 'monitoring/exporter' is not ready"
    assert by["shop"].outcome == "Ready"
    assert result.sim is not None
    store = result.sim.store
    # crds/ are applied before Helm renders (internal/action/install.go applyCRDs) …
    assert store.get("CustomResourceDefinition", "", "exporterconfigs.metrics.example.com") is not None
    # … but nothing of the failing chart's templates or its dependent's is created
    assert store.get("ConfigMap", "monitoring", "exporter-scrape") is None
    assert store.get("ConfigMap", "monitoring", "dashboard-config") is None
    assert store.get("ConfigMap", "apps", "shop-config") is not None


def test_cli_exits_1_not_2() -> None:
    result = CliRunner().invoke(
        app, ["simulate", str(TREE / "flux"), *[a for c in CHARTS for a in ("--chart", c)], "--format", "json", "--horizon", "10m"]
    )
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert [r["outcome"] for r in doc["releases"]] == ["Failed", "Blocked", "Ready"]


def test_bare_chart_render_error_stays_bad_input() -> None:
    # no HelmRelease: the chart itself is the input, as for `helm template` (exit 2, file and line)
    chart = TREE / "charts" / "exporter"
    result = CliRunner().invoke(
        app, ["simulate", str(chart), "--set", "prometheus.podmonitor.enabled=true", "--set", "prometheus.servicemonitor.enabled=true"]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {chart / 'templates' / 'servicemonitor.yaml'}:2: render failed: Either")


def test_a_multi_line_validation_message_keeps_its_explanation(tmp_path: Path) -> None:
    """bitnami's VALUES VALIDATION messages (bitnami/charts bitnami/rabbitmq
    templates/validation.yaml): their lines were joined with ": ", so ``auth.tls`` and the
    sentence after it read as a secret-like key and its value, and the sentence was hashed."""
    chart = tmp_path / "v"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: v\nversion: 0.1.0\n")
    (chart / "templates" / "validation.yaml").write_text(
        '{{- fail "\\nVALUES VALIDATION:\\nv: auth.tls\\n    You enabled TLS but did not provide a certificate.\\n'
        '    Set `auth.tls.existingSecret`." }}\n'
    )
    result = CliRunner().invoke(app, ["render", str(chart)])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "render failed: VALUES VALIDATION: v: auth.tls; You enabled TLS but did not provide a certificate. "
        "Set `auth.tls.existingSecret`."
    )
