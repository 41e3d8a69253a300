"""A chart calling Helm's ``lookup``: helmsim renders as ``helm template`` does, so ``lookup``
returns an empty map (helm/helm pkg/action/action.go renderResources builds the engine with a
cluster client only with ``interactWithRemote``; pkg/engine/engine.go), while helm-controller's
install and upgrade read the cluster. The report says so once per release, naming the calls.
Shapes: bitnami/charts ``bitnami/mongodb/templates/networkpolicy.yaml`` (``lookup "v1"
"Endpoints" … "kubernetes"``) and bitnami/common ``templates/_secrets.tpl``
(``common.secrets.lookup``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.helm import lookup
from realcharts_helpers import HERE, simulate_chart

TAIL = (
    ": helmsim renders it as helm template does (an empty result); helm-controller's install and "
    "upgrade read the cluster there, so what those templates render may differ"
)
CALLS = "templates/_helpers.tpl:11, templates/configmap.yaml:2, charts/kit/templates/_secrets.tpl:3"
NOTE = f"HelmRelease default/lookup-app: chart lookup-app@0.1.0 may call lookup ({CALLS}){TAIL}"


def _lookup_notes(notes: list[str]) -> list[str]:
    return [n for n in notes if "call lookup" in n]


def test_the_note_names_each_call_a_render_reaches_with_its_file_and_line() -> None:
    # the template's own call, the included define of _helpers.tpl and the library subchart's
    # define; not "lookup-app.unused" or "kit.secrets.exists" (never included), not the comments
    result = simulate_chart("lookup")
    assert _lookup_notes(result.notes) == [NOTE]
    assert result.releases[0].outcome == "Ready"


def test_a_subchart_rendered_only_when_enabled_adds_its_call_then() -> None:
    result = simulate_chart("lookup", sets=("tools.enabled=true",))
    calls = f"{CALLS}, charts/tools/templates/configmap.yaml:6"
    assert _lookup_notes(result.notes) == [
        f"HelmRelease default/lookup-app: chart lookup-app@0.1.0 may call lookup ({calls}){TAIL}"
    ]


def test_a_chart_naming_lookup_only_in_comments_strings_fields_and_variables_gets_no_note() -> None:
    result = simulate_chart("lookup-none")
    assert _lookup_notes(result.notes) == []
    assert lookup.calls(HERE / "lookup-none") == ()


def test_comments_strings_and_unreached_defines_are_not_calls() -> None:
    chart = HERE / "lookup"
    rendered = ["lookup-app/templates/configmap.yaml", "lookup-app/templates/secret.yaml"]
    assert [str(c) for c in lookup.calls(chart, rendered)] == CALLS.split(", ")
    # without knowing what rendered, every subchart counts
    assert "charts/tools/templates/configmap.yaml:6" in [str(c) for c in lookup.calls(chart)]


def test_an_include_of_a_computed_name_makes_every_define_count(tmp_path: Path) -> None:
    chart = tmp_path / "dyn"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: dyn\nversion: 0.1.0\n")
    (chart / "templates" / "_h.tpl").write_text(
        '{{- define "dyn.a" -}}\n{{ lookup "v1" "Secret" "ns" "a" }}\n{{- end }}\n'
    )
    (chart / "templates" / "cm.yaml").write_text(
        '{{/* {{ lookup "v1" "Secret" "ns" "a" }} */}}\nname: {{ include (printf "dyn.%s" "a") . }}\n'
    )
    assert [str(c) for c in lookup.calls(chart, ["dyn/templates/cm.yaml"])] == ["templates/_h.tpl:2"]
    (chart / "templates" / "cm.yaml").write_text('name: {{ include "dyn.b" . }}\n')
    assert lookup.calls(chart, ["dyn/templates/cm.yaml"]) == ()


def test_packaged_charts_and_packaged_subcharts_are_read(tmp_path: Path) -> None:
    tree = tmp_path / "lookup-app"
    shutil.copytree(HERE / "lookup", tree)
    kit = tree / "charts" / "kit"
    with tarfile.open(tree / "charts" / "kit-0.1.0.tgz", "w:gz") as tar:
        tar.add(kit, arcname="kit")
    shutil.rmtree(kit)
    archive = tmp_path / "lookup-app-0.1.0.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname="lookup-app")
    rendered = ["lookup-app/templates/configmap.yaml", "lookup-app/templates/secret.yaml"]
    assert [str(c) for c in lookup.calls(archive, rendered)] == [
        "templates/_helpers.tpl:11",
        "templates/configmap.yaml:2",
        "charts/kit-0.1.0.tgz:kit/templates/_secrets.tpl:3",
    ]


def test_simulate_says_it_once_in_text_and_json() -> None:
    args = ["simulate", str(HERE / "lookup"), "--no-color"]
    out: Any = CliRunner().invoke(app, args, env={"COLUMNS": "1000"})
    assert out.exit_code == 0, out.output
    assert out.stdout.count("may call lookup") == 1
    assert f"note: {NOTE}" in out.stdout
    out = CliRunner().invoke(app, [*args, "--format", "json"])
    assert out.exit_code == 0, out.output
    assert _lookup_notes(json.loads(out.stdout)["notes"]) == [NOTE]


def test_check_says_it_once_across_profiles() -> None:
    args = ["check", str(HERE / "lookup"), "-p", "kind", "-p", "cilium-always", "--no-color"]
    out: Any = CliRunner().invoke(app, args, env={"COLUMNS": "1000"})
    assert out.exit_code == 0, out.output
    assert out.stdout.count("may call lookup") == 1
    assert NOTE in out.stdout


def test_plan_warns_of_it_and_render_does_not() -> None:
    out: Any = CliRunner().invoke(app, ["plan", str(HERE / "lookup")])
    assert out.exit_code == 0, out.output
    assert f"warning: chart lookup-app@0.1.0 may call lookup ({CALLS}){TAIL}" in out.stderr
    # `render` is helm template itself: there the empty answer is what Helm gives too
    out = CliRunner().invoke(app, ["render", str(HERE / "lookup")])
    assert out.exit_code == 0, out.output
    assert "call lookup" not in out.stderr


def test_many_calls_are_counted_past_the_first_six_and_an_unreadable_chart_is_said(tmp_path: Path) -> None:
    chart = tmp_path / "many"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: many\nversion: 0.1.0\n")
    (chart / "templates" / "cm.yaml").write_text("".join(f'{{{{ lookup "v1" "Secret" "ns" "s{i}" }}}}\n' for i in range(8)))
    text = lookup.note(chart, "many@0.1.0", ["many/templates/cm.yaml"])
    assert text == (
        "chart many@0.1.0 may call lookup (templates/cm.yaml:1, templates/cm.yaml:2, templates/cm.yaml:3, "
        f"templates/cm.yaml:4, templates/cm.yaml:5, templates/cm.yaml:6 and 2 more){TAIL}"
    )
    text = lookup.note(tmp_path / "gone", "gone@1.0.0")
    assert text is not None and text.startswith("chart gone@1.0.0: its templates cannot be read to find lookup calls (")
    assert text.endswith(f"; if it calls lookup{TAIL.replace(':', ',', 1)}")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('{}-/*"`lookup includedefine end if\n x.$()')), max_size=200))
def test_any_template_text_is_read_without_error_and_a_call_is_never_missed(text: str) -> None:
    # a reader of template sources: whatever the text, it answers; when the text holds the
    # action {{ lookup }} outside comments, that call is found
    from helmsim.helm.lookup import _parse

    parsed = _parse(text, "templates/x.yaml")
    assert all(c.path == "templates/x.yaml" and c.line >= 1 for c in parsed.top.calls)
    probe = text + '\n{{ lookup "v1" "Secret" "ns" "s" }}\n'
    found = _parse(probe, "templates/x.yaml")
    assert found.broken or found.top.calls or any(seg.calls for _, seg in found.defines)


def _tpl_chart(tmp_path: Path, values: str, extra: dict[str, str] | None = None, call: str = "tpl .Values.x .") -> Path:
    """bitnami/common's shape: templates/_tplvalues.tpl renders a value with ``tpl``, and a define
    nothing includes by name calls lookup (bitnami/common templates/_secrets.tpl)."""
    chart = tmp_path / "tv"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tv\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(values)
    (chart / "templates" / "_h.tpl").write_text(
        '{{- define "tv.render" -}}\n{{ ' + call + ' }}\n{{- end }}\n'
        '{{- define "tv.secret" -}}\n{{ lookup "v1" "Secret" "ns" "a" }}\n{{- end }}\n'
    )
    (chart / "templates" / "cm.yaml").write_text('data: {{ include "tv.render" . }}\n')
    for name, text in (extra or {}).items():
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_text(text)
    return chart


RENDERED = ["tv/templates/cm.yaml"]


def test_tpl_over_values_without_an_action_reaches_no_define(tmp_path: Path) -> None:
    # every Bitnami chart renders its values through common.tplvalues.render: the lookup of a
    # define nothing includes was counted for nearly all of them
    chart = _tpl_chart(tmp_path, "x: plain\nannotations: {a: b}\n")
    assert lookup.calls(chart, RENDERED) == ()
    assert lookup.note(chart, "tv@0.1.0", RENDERED) is None


def test_tpl_over_a_value_that_includes_the_define_counts_it(tmp_path: Path) -> None:
    chart = _tpl_chart(tmp_path, 'a: 1\nx: \'{{ include "tv.secret" . }}\'\n')
    assert [str(c) for c in lookup.calls(chart, RENDERED)] == ["templates/_h.tpl:5"]
    # a value holding lookup itself: its line in values.yaml
    chart = _tpl_chart(tmp_path / "2", 'x: |\n  {{ lookup "v1" "ConfigMap" "ns" "c" }}\n')
    assert [str(c) for c in lookup.calls(chart, RENDERED)] == ["values.yaml:2"]


def test_the_release_values_and_the_chart_files_are_what_tpl_may_evaluate(tmp_path: Path) -> None:
    chart = _tpl_chart(tmp_path, "x: plain\n")
    given = {"podAnnotations": {"checksum": '{{ include "tv.secret" . }}'}}
    assert [str(c) for c in lookup.calls(chart, RENDERED, given)] == ["templates/_h.tpl:5"]
    files = _tpl_chart(
        tmp_path / "2", "x: plain\n", {"files/conf.tpl": 'k: {{ include "tv.secret" . }}\n'}, call='tpl (.Files.Get "files/conf.tpl") .'
    )
    assert [str(c) for c in lookup.calls(files, RENDERED)] == ["templates/_h.tpl:5"]
    literal = _tpl_chart(tmp_path / "3", "x: plain\n", call='tpl "{{ include \\"tv.secret\\" . }}" .')
    assert [str(c) for c in lookup.calls(literal, RENDERED)] == ["templates/_h.tpl:5"]


def test_without_tpl_the_chart_files_are_not_templates(tmp_path: Path) -> None:
    chart = _tpl_chart(
        tmp_path, 'x: \'{{ include "tv.secret" . }}\'\n', {"README.md": '{{ lookup "v1" "Secret" "" "" }}\n'}, call=".Values.x"
    )
    assert lookup.calls(chart, RENDERED) == ()


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.text(alphabet=st.sampled_from(list('{}x" .')), max_size=12) | st.integers() | st.none(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet="{}ab", max_size=4), inner, max_size=4),
        max_leaves=20,
    )
)
def test_template_strings_finds_every_string_with_an_action(value: Any) -> None:
    found = lookup.template_strings(value)
    assert all("{{" in s for s in found)
    assert sum(s.count("{{") for s in found) == json.dumps(value).count("{{")
