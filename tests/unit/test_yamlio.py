"""YAML loading keeps Kubernetes' (go-yaml v2) scalar semantics on both parse paths."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim import yamlio
from helmsim.errors import InputError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # YAML 1.1 booleans, as sigs.k8s.io/yaml (go-yaml v2) reads them
        ("v: yes", True),
        ("v: on", True),
        ("v: On", True),
        ("v: y", True),
        ("v: Y", True),
        ("v: no", False),
        ("v: off", False),
        ("v: n", False),
        ("v: true", True),
        ("v: FALSE", False),
        # quoted stays a string
        ('v: "yes"', "yes"),
        ("v: 'on'", "on"),
        # Go integer syntax: leading zero is octal, 0o, 0x, 0b, underscores ignored
        ("v: 0777", 511),
        ("v: 0o17", 15),
        ("v: 0x1F", 31),
        ("v: 0b101", 5),
        ("v: 1_000", 1000),
        ("v: -010", -8),
        ("v: 0", 0),
        ("v: 42", 42),
        # floats per go-yaml's yamlStyleFloat
        ("v: 1e3", 1000.0),
        ("v: 1.5", 1.5),
        ("v: .inf", math.inf),
        # timestamps stay strings in interface{} (gopkg.in/yaml.v2 decode.go)
        ("v: 2026-01-01", "2026-01-01"),
        ("v: 2026-01-01T10:00:00Z", "2026-01-01T10:00:00Z"),
        ("v: ~", None),
        ("v:", None),
        ("v: 10.0.0.0/8", "10.0.0.0/8"),
        ("v: ghcr.io/x/y:1.2", "ghcr.io/x/y:1.2"),
    ],
)
def test_scalars_follow_kubernetes_semantics(text: str, expected: object) -> None:
    assert yamlio.load_one(text, "f.yaml") == {"v": expected}


def test_keys_and_sequences_resolve_too() -> None:
    # keys resolve as go-yaml v2 reads them, then become JSON strings (sigs.k8s.io/yaml)
    assert yamlio.load_one("on: [yes, 'no', 0644]\n", "f.yaml") == {"true": [True, "no", 420]}


def test_fast_path_and_slow_path_agree_on_plain_documents() -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n  n: '1'\n"
    assert yamlio.load_one(text, "f.yaml") == yamlio._load_goyaml(text, "f.yaml", 1)


def test_duplicate_keys_are_errors_with_line() -> None:
    with pytest.raises(InputError) as err:
        yamlio.load_documents("a: 1\n---\nkind: X\nmeta: 1\nmeta: 2\n", "t.yaml")
    assert err.value.file == "t.yaml"
    assert err.value.line == 5
    assert 'duplicate mapping key "meta" (first at line 4)' in str(err.value)


def test_syntax_error_names_file_and_line() -> None:
    with pytest.raises(InputError) as err:
        yamlio.load_documents("a: 1\n---\nb: [1,\nc: 2\n", "bad.yaml")
    assert str(err.value).startswith("bad.yaml:")
    assert err.value.line is not None and err.value.line >= 3


def test_split_like_helm_skips_blank_documents_and_tracks_lines() -> None:
    text = "---\n# c\n\na: 1\n---\n\n---\nb: 2\n"
    docs = yamlio.load_documents(text, "f.yaml")
    assert [(d.value, d.index, d.line) for d in docs] == [({"a": 1}, 0, 2), ({"b": 2}, 1, 7)]


def test_comment_only_document_is_none() -> None:
    assert [d.value for d in yamlio.load_documents("# only\n", "f")] == [None]


def test_yaml_bomb_is_refused() -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = name
    with pytest.raises(InputError, match=r"YAML bomb\?\) exceeds --max-aliases 100,000$"):
        yamlio.load_one("\n".join(lines) + "\non: 1\n", "bomb.yaml")
    with pytest.raises(InputError):
        yamlio.load_one("\n".join(lines) + "\n", "bomb.yaml")


def test_merge_keys_are_supported() -> None:
    assert yamlio.load_one("a: &x {b: 1}\nc:\n  <<: *x\n  d: on\n", "f") == {
        "a": {"b": 1},
        "c": {"b": 1, "d": True},
    }


_SCALARS = st.sampled_from(
    [
        "0777", "-010", "+012", "0b101", "1_000", "_1", "012", "0", "42", "1e3", "0.5",
        '"2026-01-01T00:00:05Z"', "2026-01-01T10:00:05Z", "2026-01-01", "08:05", "10:08:09",
        "ab12cd34-0b5e-11ef-8c2d-0242ac120002", '"0777"', "'012'", "app-05-0b1c", "v1.0-08",
        "00000000-0000-4000-8000-000000000000", "0123abc", "00.5e-3", "0_7", "08", "0b", "-_1",
    ]
)


def _doc(draw: st.DrawFn) -> str:
    form = draw(st.sampled_from(["block", "flow-json", "flow", "seq", "key", "alone", "comment"]))
    a, b = draw(_SCALARS), draw(_SCALARS)
    if form == "alone":  # the whole document, at the very start of the text
        return f"{a}\n"
    if form == "comment":
        return f"a: {a} # note\nb:\n  - {b}\n"
    if form == "block":
        return f"metadata:\n  a: {a}\n  b: {b}\n"
    if form == "flow-json":  # a value right after a quoted key's ':' in a flow mapping
        return f'{{"a":{a}, "b": {b}}}\n'
    if form == "flow":
        return f"v: [{a},{b}, -{a}]\n"
    if form == "seq":
        return f"- {a}\n- -{b}\n"
    return f"{a}: {b}\n"


@given(st.composite(_doc)())
@settings(max_examples=300, deadline=None)
def test_the_fast_path_reads_go_numbers_times_and_uids_as_go_yaml_does(text: str) -> None:
    # the text filter that sends a document to the go-yaml path looks where a plain scalar can
    # start; times, dates and uids inside a token are not such places
    try:
        slow = yamlio._load_goyaml(text, "f.yaml", 1)
    except Exception as err:  # noqa: BLE001 - both paths must refuse the same documents
        with pytest.raises(type(err)):
            yamlio.load_one(text, "f.yaml")
        return
    assert yamlio.load_one(text, "f.yaml") == slow
