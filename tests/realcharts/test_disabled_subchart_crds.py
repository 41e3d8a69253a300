"""Helm leaves out a subchart its condition or tags disable before it collects CRDs (helm/helm
``pkg/action/install.go`` RunWithContext: ProcessDependencies before CRDObjects;
helm-controller ``internal/action/crds.go``). helmsim applied every subchart's ``crds/``:
kube-prometheus-stack with ``crds.enabled=false`` was Ready, where its Prometheus objects have
no CRD and the install fails."""

from __future__ import annotations

import tarfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from realcharts_helpers import HERE, simulate_chart

from helmsim.helm import subcharts

CHART = "disabled-subchart-crds"


def _crds(result: object) -> list[str]:
    return [e.obj for e in result.trace if e.what == "created" and e.obj.startswith("CustomResourceDefinition/")]  # type: ignore[attr-defined]


def test_a_disabled_subchart_installs_no_crd() -> None:
    result = simulate_chart(CHART)
    assert result.releases[0].outcome == "Failed"
    assert _crds(result) == []
    assert 'no matches for kind "Widget" in version "example.com/v1"' in result.releases[0].message


def test_an_enabled_subchart_installs_its_crd_first() -> None:
    result = simulate_chart(CHART, values=("ci/enabled-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    assert _crds(result) == ["CustomResourceDefinition/widgets.example.com"]


def test_a_false_tag_disables_it_when_no_condition_says_otherwise() -> None:
    assert _crds(simulate_chart(CHART, values=("ci/tag-off-values.yaml",))) == []
    assert subcharts.disabled_subcharts(HERE / CHART, {"sub": {}, "tags": {"widgets": True}}) == frozenset()


def test_packaged_subcharts_are_read_too(tmp_path: Path) -> None:
    chart = tmp_path / "p"
    (chart / "charts").mkdir(parents=True)
    (chart / "Chart.yaml").write_text((HERE / CHART / "Chart.yaml").read_text())
    with tarfile.open(chart / "charts" / "sub-0.1.0.tgz", "w:gz") as tar:
        tar.add(HERE / CHART / "charts" / "sub", arcname="sub")
    assert subcharts.disabled_subcharts(chart, {"sub": {"enabled": False}}) == frozenset({"disabled-subchart-crds/charts/sub"})
    assert subcharts.crd_kept("disabled-subchart-crds/crds/a.yaml", frozenset({"disabled-subchart-crds/charts/sub"}))
    assert not subcharts.crd_kept("disabled-subchart-crds/charts/sub/crds/a.yaml", frozenset({"disabled-subchart-crds/charts/sub"}))


_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4), lambda c: st.dictionaries(st.sampled_from(["sub", "enabled", "tags", "widgets"]), c, max_size=3), max_leaves=8)


@given(_values)
def test_any_values_decide_without_error(values: object) -> None:
    found = subcharts.disabled_subcharts(HERE / CHART, values if isinstance(values, dict) else {})
    assert found <= frozenset({"disabled-subchart-crds/charts/sub"})
