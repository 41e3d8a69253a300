"""The helm-python-sdk adapter: Helm's engine with the cluster's capabilities."""

from __future__ import annotations

from pathlib import Path

import pytest

from helmsim import render
from helmsim.errors import InputError
from helmsim.manifests import parse_documents

CHARTS = Path(__file__).parent.parent / "fixtures" / "charts"


def _kinds(chart: render.RenderedChart) -> list[str]:
    parsed = parse_documents([(f.path, f.content) for f in chart.files])
    return [r.kind for r in parsed.resources]


def test_capabilities_reach_the_template_engine() -> None:
    opts = render.RenderOptions(
        kube_version="1.29.0", api_versions=("cilium.io/v2", "cilium.io/v2/CiliumNetworkPolicy")
    )
    chart = render.render_chart(CHARTS / "caps", opts)
    assert "CiliumNetworkPolicy" in _kinds(chart)
    deploy = next(f for f in chart.files if f.path.endswith("deploy.yaml"))
    assert 'kube-version: "v1.29.0"' in deploy.content
    # Extra API versions are added to Helm's defaults, not instead of them.
    assert 'hasApps: "true"' in deploy.content


def test_without_the_capability_the_chart_falls_back() -> None:
    chart = render.render_chart(CHARTS / "caps", render.RenderOptions())
    kinds = _kinds(chart)
    assert "NetworkPolicy" in kinds and "CiliumNetworkPolicy" not in kinds


def test_files_are_in_helm_path_order_without_notes_or_partials() -> None:
    chart = render.render_chart(CHARTS / "caps", render.RenderOptions())
    assert [f.path for f in chart.files] == ["caps/templates/deploy.yaml", "caps/templates/policy.yaml"]
    assert (chart.chart_name, chart.chart_version) == ("caps", "1.2.3")


def test_crds_only_on_request_and_first() -> None:
    chart = render.render_chart(CHARTS / "caps", render.RenderOptions(), include_crds=True)
    assert chart.files[0].path == "caps/crds/foo.yaml" and chart.files[0].is_crd_file


def test_release_identity_and_upgrade_flag() -> None:
    opts = render.RenderOptions(release_name="r1", namespace="ns1", is_upgrade=True, revision=2)
    deploy = render.render_chart(CHARTS / "caps", opts).files[0]
    assert "name: r1-caps" in deploy.content and 'upgrade: "true"' in deploy.content


def test_values_files_merge_in_order_then_set(tmp_path: Path) -> None:
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text("image: {repository: a, tag: '1'}\nkeep: yes\n")
    b.write_text("image: {tag: '2'}\n")
    values = render.load_values([a, b], ["replicas=3", "image.repository=c"])
    assert values == {"image": {"repository": "c", "tag": "2"}, "keep": True, "replicas": 3}
    deploy = render.render_chart(CHARTS / "caps", render.RenderOptions(values=values)).files[0]
    assert "replicas: 3" in deploy.content and 'image: "c:2"' in deploy.content


def test_missing_values_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="values file not found") as err:
        render.load_values([tmp_path / "nope.yaml"])
    assert err.value.file.endswith("nope.yaml")


def test_values_file_must_be_a_mapping(tmp_path: Path) -> None:
    f = tmp_path / "v.yaml"
    f.write_text("- 1\n")
    with pytest.raises(InputError, match="must be a YAML mapping"):
        render.load_values([f])


def test_bad_set_expression() -> None:
    with pytest.raises(InputError, match="bad --set"):
        render.load_values([], ["a.b[x]=1"])


def test_template_error_names_the_template_file_and_line() -> None:
    with pytest.raises(InputError) as err:
        render.render_chart(CHARTS / "broken", render.RenderOptions())
    assert err.value.file is not None and err.value.file.endswith("broken/templates/cm.yaml")
    assert err.value.line == 4
    assert "nil pointer evaluating" in err.value.message


def test_not_a_chart(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a Helm chart"):
        render.render_chart(tmp_path, render.RenderOptions())


def test_merge_values_replaces_lists_and_scalars() -> None:
    assert render.merge_values({"a": [1, 2], "b": {"c": 1, "d": 2}}, {"a": [3], "b": {"c": 9}}) == {
        "a": [3],
        "b": {"c": 9, "d": 2},
    }
