"""Chart dependencies as Helm resolves them (tests/realcharts/README.md: missing-subchart,
library-common, subchart-options)."""

from __future__ import annotations

import shutil
from pathlib import Path

import helm_python
import pytest
from typer.testing import CliRunner

from helmsim import render
from helmsim.cli import app
from helmsim.errors import InputError

HERE = Path(__file__).parent
CHECK = (
    "an error occurred while checking for chart dependencies. You may need to run 'helm dependency build' "
    "to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: "
)


def _render(chart: Path, **values: object) -> dict[str, str]:
    out = render.render_chart(chart, render.RenderOptions(release_name="r", values=values))
    return {f.path: f.content for f in out.files}


@pytest.mark.parametrize("command", ["render", "plan", "simulate", "check"])
def test_missing_subchart_is_helms_error_naming_chart_yaml(command: str) -> None:
    # helm/helm pkg/cmd/install.go runInstall + pkg/action/install.go CheckDependencies: by name,
    # before rendering, whatever the tags say (bitnami/postgresql without bitnami/common)
    chart = HERE / "missing-subchart"
    args = [command, str(chart)] + (["--profile", "kind"] if command == "check" else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr == f"error: {chart / 'Chart.yaml'}:5: {CHECK}common\n"
    assert result.stdout == ""


def _vendored(tmp_path: Path, packaged: bool) -> Path:
    chart = tmp_path / "database"
    shutil.copytree(HERE / "missing-subchart", chart)
    (chart / "charts").mkdir()
    if packaged:
        helm_python.package(HERE / "library-common", destination=chart / "charts")
        assert (chart / "charts" / "common-2.31.10.tgz").is_file()
    else:
        shutil.copytree(HERE / "library-common", chart / "charts" / "common")
    return chart


@pytest.mark.parametrize("packaged", [False, True], ids=["dir", "tgz"])
def test_vendored_library_subchart_renders_its_definitions_only(tmp_path: Path, packaged: bool) -> None:
    # Helm's engine: a library chart's templates are definitions; its manifests are never rendered
    files = _render(_vendored(tmp_path, packaged))
    assert list(files) == ["database/templates/service.yaml"]
    assert "name: r-database" in files["database/templates/service.yaml"]


def test_vendored_chart_simulates_ready(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["simulate", str(_vendored(tmp_path, False)), "--release-name", "db"])
    assert result.exit_code == 0, result.output
    assert "Helm install succeeded for release default/db.v1 with chart database@17.1.0" in result.stdout


def test_condition_alias_tags_and_import_values_as_helm_applies_them() -> None:
    # pkg/chart/v2/util/dependencies.go ProcessDependencies (inside Helm's render): the alias
    # renames the subchart, its condition enables it, a false tag disables "queue", and
    # import-values copies the child's exports into the parent's values
    files = _render(HERE / "subchart-options")
    assert sorted(files) == ["platform/charts/sessions/templates/statefulset.yaml", "platform/templates/configmap.yaml"]
    assert 'sessions: "cache:6379"' in files["platform/templates/configmap.yaml"]
    assert "name: r-sessions" in files["platform/charts/sessions/templates/statefulset.yaml"]
    # a true tag enables "queue"; "legacy" asks for >=2.0.0 and charts/cache is 1.2.7: even
    # enabled it gets no subchart (dependencies.go getAliasDependency skips incompatible versions)
    both = _render(HERE / "subchart-options", tags={"queue": True}, legacy={"enabled": True})
    assert {p.split("/")[2] for p in both if "/charts/" in p} == {"sessions", "queue"}


def test_subchart_outside_every_range_still_renders_under_its_own_name(tmp_path: Path) -> None:
    # processDependencyEnabled keeps a vendored chart no Chart.yaml entry accepts, as undeclared
    chart = _vendored(tmp_path, False)
    text = (chart / "Chart.yaml").read_text().replace("version: 2.x.x", "version: 3.x.x")
    (chart / "Chart.yaml").write_text(text)
    out = render.render_chart(chart, render.RenderOptions(release_name="r"))
    assert out.notes == (
        "chart database@17.1.0: dependency common asks for version '3.x.x' but charts/ holds common 2.31.10 "
        "(helm dependency list: wrong version); Helm still renders charts/common 2.31.10 under its own name, "
        "as an undeclared subchart",
    )
    assert "name: r-database" in {f.path: f.content for f in out.files}["database/templates/service.yaml"]


def test_vendored_subchart_outside_its_range_renders_with_a_note() -> None:
    # pkg/action/dependency.go dependencyStatus says "wrong version"; install checks names only
    out = render.render_chart(HERE / "subchart-options", render.RenderOptions())
    assert out.notes == (
        "chart platform@2.0.0: dependency cache (alias legacy) asks for version '>=2.0.0' but charts/ holds "
        "cache 1.2.7 (helm dependency list: wrong version); Helm renders no subchart for legacy",
    )
    result = CliRunner().invoke(app, ["render", str(HERE / "subchart-options")])
    assert result.exit_code == 0
    assert "warning: chart platform@2.0.0: dependency cache (alias legacy) asks for" in result.stderr


def test_library_chart_is_not_installable() -> None:
    # helm/helm pkg/cmd/install.go checkIfInstallable
    with pytest.raises(InputError) as err:
        render.render_chart(HERE / "library-common", render.RenderOptions())
    assert str(err.value) == f"{HERE / 'library-common'}: library charts are not installable"


def _out_of_range(tmp_path: Path, enabled: bool) -> Path:
    """platform with one dependency, ``cache`` ``>=2.0.0`` behind ``cache.enabled``, while
    charts/ holds cache 1.2.7 (prometheus-community/helm-charts
    charts/prometheus-kafka-exporter/Chart.yaml: kafka 32.4.3 behind kafka.enabled, false)."""
    chart = tmp_path / "platform"
    shutil.copytree(HERE / "subchart-options", chart)
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: platform\nversion: 2.0.0\ndependencies:\n"
        '  - name: cache\n    version: ">=2.0.0"\n    condition: cache.enabled\n'
    )
    (chart / "values.yaml").write_text(f"cache:\n  enabled: {str(enabled).lower()}\n")
    (chart / "templates" / "configmap.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform\n")
    return chart


@pytest.mark.parametrize("enabled", [False, True])
def test_an_out_of_range_subchart_disabled_by_its_condition_is_not_said_to_render(tmp_path: Path, enabled: bool) -> None:
    # pkg/chart/v2/util/dependencies.go processDependencyEnabled: a disabled dependency's
    # subchart is removed by name, whatever its version
    out = render.render_chart(_out_of_range(tmp_path, enabled), render.RenderOptions(release_name="r"))
    (note,) = out.notes
    rendered = any(f.path.startswith("platform/charts/cache/") for f in out.files)
    assert rendered is enabled
    if enabled:
        assert note.endswith("Helm still renders charts/cache 1.2.7 under its own name, as an undeclared subchart")
    else:
        assert note.endswith("it is disabled here (its condition or tags), so Helm renders no charts/cache")
