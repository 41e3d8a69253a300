"""Each reader turns malformed structure or types into one ``InputError`` naming file and line.

Regression tests for issue 12's findings in the readers: ``.helmsim.yaml``, HelmReleases and
Flux trees, values files, saved objects, profiles and scenarios.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helmsim import limits, render
from helmsim.cli.status import load_objects
from helmsim.cluster.profile import load_profile
from helmsim.config import load_config
from helmsim.errors import InputError
from helmsim.flux.inputs import flux_tree_from_files
from helmsim.manifests import parse_documents
from helmsim.scenario import load_scenario


def _raises(fn, *args):  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as err:
        fn(*args)
    assert "\n" not in str(err.value)
    return err.value


# --- .helmsim.yaml ------------------------------------------------------------------------------


def test_config_with_a_mistyped_tag_is_bad_input(tmp_path: Path) -> None:
    f = tmp_path / ".helmsim.yaml"
    f.write_text("profiles: [kind]\nfailOn: !!int abc\n")
    err = _raises(load_config, f)
    assert (err.file, err.line) == (str(f), 2) and "cannot decode" in err.message


def test_config_that_is_not_utf8_is_bad_input(tmp_path: Path) -> None:
    f = tmp_path / ".helmsim.yaml"
    f.write_bytes(b"rules:\n  HS1\xe9: off\n")
    assert _raises(load_config, f).line == 2


def test_config_reads_yaml_as_kubernetes_does(tmp_path: Path) -> None:
    f = tmp_path / ".helmsim.yaml"
    f.write_bytes(b"\xef\xbb\xbfprofiles: [kind]\nrules:\n  HS112: off\n")
    cfg = load_config(f)
    assert cfg.profiles == ("kind",) and cfg.rules == {"HS112": "off"}


# --- HelmReleases and Flux trees ------------------------------------------------------------------

_HR = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\n"


@pytest.mark.parametrize(("metadata", "what"), [("[a, b]", "list"), ("x", "scalar")])
def test_helmrelease_metadata_that_is_not_a_mapping(metadata: str, what: str) -> None:
    text = f"---\n{_HR}metadata: {metadata}\nspec:\n  interval: 5m\n"
    err = _raises(flux_tree_from_files, [("hr.yaml", text)])
    assert (err.file, err.line) == ("hr.yaml", 4)
    assert err.message == f"HelmRelease metadata must be a mapping, not a {what}"


def test_helmrelease_values_that_json_cannot_hold_name_their_line() -> None:
    text = f"{_HR}metadata: {{name: a, namespace: b}}\nspec:\n  interval: 5m\n  values:\n    x:\n      z: .nan\n"
    err = _raises(flux_tree_from_files, [("hr.yaml", text)])
    assert err.line == 8 and "spec.values.x.z: NaN cannot be converted to JSON" in err.message


def test_a_list_whose_items_are_not_a_list() -> None:
    err = _raises(flux_tree_from_files, [("l.yaml", "apiVersion: v1\nkind: List\nitems: {a: 1}\n")])
    assert err.message == "items of a List is not a list"


# --- values files and --set -----------------------------------------------------------------------


def test_values_file_with_several_documents_merges_them_as_helm_v4(tmp_path: Path) -> None:
    f = tmp_path / "v.yaml"
    f.write_text("a: {b: 1, c: 2}\n---\na: {c: 3}\nd: 4\n")
    assert render.load_values([f]) == {"a": {"b": 1, "c": 3}, "d": 4}


def test_values_errors_name_the_values_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "v.yaml"
    f.write_text("ok: 1\n---\n- a list\n")
    err = _raises(render.load_values, [f])
    assert (err.file, err.line) == (str(f), 3) and "values must be a YAML mapping" in err.message
    f.write_text("a:\n  b: .inf\n")
    err = _raises(render.load_values, [f])
    assert (err.file, err.line) == (str(f), 2)
    assert err.message.startswith("value a.b: +Inf cannot be converted to JSON")
    err = _raises(render.load_values, [tmp_path / "missing.yaml"])
    assert err.message == "values file not found"


def test_a_malformed_set_is_one_line() -> None:
    err = _raises(render.load_values, [], ["a={b"])
    assert err.message.startswith("bad --set")


# --- saved objects (helmsim status) and manifests: the same YAML reading --------------------------


def test_status_and_plan_agree_on_a_byte_order_mark(tmp_path: Path) -> None:
    f = tmp_path / "cm.yaml"
    f.write_bytes(b"\xef\xbb\xbfapiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    assert load_objects(f)[0]["apiVersion"] == "v1"
    from helmsim.manifests import read_manifest_input

    parsed = parse_documents(read_manifest_input(str(f)))
    assert [r.ref for r in parsed.resources] == ["ConfigMap/default/x"]


def test_status_counts_objects_against_the_limit(tmp_path: Path) -> None:
    f = tmp_path / "many.yaml"
    f.write_text("".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n" for i in range(5)))
    with limits.use(limits.Limits(max_objects=3)):
        with pytest.raises(limits.LimitExceeded, match="exceeds --max-objects 3"):
            load_objects(f)


def test_a_list_of_many_objects_counts_each_item() -> None:
    items = "".join(f"- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: c{i}}}}}\n" for i in range(5))
    with limits.use(limits.Limits(max_objects=3)):
        with pytest.raises(limits.LimitExceeded, match="5 objects in one release exceeds --max-objects 3"):
            parse_documents([("l.yaml", "apiVersion: v1\nkind: List\nitems:\n" + items)])


# --- profiles and scenarios -----------------------------------------------------------------------


def test_profile_that_is_not_utf8(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_bytes(b"name: p\nnodes: [{name: \xff}]\n")
    assert _raises(load_profile, str(f)).line == 2


def test_an_alias_heavy_profile_merges_in_linear_time_and_errors_keep_their_line(tmp_path: Path) -> None:
    # 406 bytes of anchors expanding to ~80,000 nodes took minutes with the quadratic merge
    f = tmp_path / "p.yaml"
    f.write_text(
        "name: p\nnodes: [{name: a}]\nclusterPolicies:\n"
        "- a: &a [1,1,1,1,1,1,1,1,1,1]\n  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "- e: [*d, *d, *d, *d, *d, *d, *d, *d]\n"
        "kubernetesVersion: latest\n"
    )
    err = _raises(load_profile, str(f))
    assert err.line == 9 and err.message.startswith("kubernetesVersion:")


def test_profile_extends_chain_keeps_origins_of_replaced_values(tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    base.write_text("name: base\nnodes:\n  - name: a\n    zone: z1\n")
    leaf = tmp_path / "leaf.yaml"
    leaf.write_text("extends: base.yaml\nnodes:\n  - name: b\n    internalIP: nope\n")
    err = _raises(load_profile, str(leaf))
    assert (err.file, err.line) == (str(leaf), 4)


def test_scenario_with_a_mistyped_tag(tmp_path: Path) -> None:
    f = tmp_path / "s.helmsim.yaml"
    f.write_text("apiVersion: helmsim.dev/v1alpha1\nkind: Scenario\nseed: !!int x\n")
    err = _raises(load_scenario, f)
    assert (err.file, err.line) == (str(f), 3)
