"""YAML itself as a hostile input: every malformed shape is one line naming the file and line.

Each case reproduces a finding of issue 12 (tags, keys, nesting, encodings, aliases) or checks
the go-yaml v2 / sigs.k8s.io/yaml behaviour the fix follows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helmsim import limits, yamlio
from helmsim.errors import InputError


def _error(text: str, name: str = "f.yaml") -> InputError:
    with pytest.raises(InputError) as err:
        yamlio.load_documents(text, name)
    assert "\n" not in str(err.value)
    return err.value


# --- explicit tags, as go-yaml v2 resolve(tag, in) reads them ---------------------------------


def test_a_tag_the_value_does_not_fit_is_one_line_with_its_line() -> None:
    err = _error("apiVersion: v1\nkind: ConfigMap\ndata:\n  a: !!int abc\n")
    assert (err.file, err.line) == ("f.yaml", 4)
    assert err.message == "invalid YAML: cannot decode !!str `abc` as a !!int"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v: !!int '12'", 12),  # an explicit tag resolves quoted text too
        ("v: !!float 1", 1.0),  # an int is accepted as a float
        ("v: !!str 1", "1"),
        ("v: !!bool yes", True),
        ("v: !!null ~", None),
        ("v: !!binary aGVsbG8=", "hello"),  # decoded into a string (decode.go scalar)
        ("v: !!timestamp 2026-01-02", "2026-01-02"),
        ("v: !custom text", "text"),  # unknown tags are ignored
        ("v: !!set {a, b}", {"a": None, "b": None}),  # a mapping, tag ignored
        ("v: !!omap [a: 1, b: 2]", [{"a": 1}, {"b": 2}]),
        ("v: !!python/object:os.system x", "x"),  # never constructed
    ],
)
def test_explicit_tags_follow_go_yaml(text: str, expected: object) -> None:
    assert yamlio.load_one(text, "f.yaml") == {"v": expected}


@pytest.mark.parametrize(
    "text",
    ["v: !!float abc", "v: !!bool 3", "v: !!null x", "v: !!int 1.5", "v: !!timestamp tomorrow"],
)
def test_tags_that_do_not_fit_are_refused(text: str) -> None:
    assert "cannot decode" in _error(text).message


def test_invalid_base64_is_refused() -> None:
    assert "invalid base64" in _error("v: !!binary '***'\n").message


# --- keys: go-yaml v2 typed keys, then JSON strings (sigs.k8s.io/yaml) --------------------------


def test_keys_1_and_true_are_different_keys() -> None:
    assert yamlio.load_one("a:\n  1: x\n  true: w\n  1.5: z\n", "f") == {
        "a": {"1": "x", "true": "w", "1.5": "z"}
    }


def test_the_same_key_spelled_twice_is_a_duplicate() -> None:
    err = _error("a: 1\nb: 2\na: 3\n")
    assert err.line == 3 and 'duplicate mapping key "a" (first at line 1)' in err.message


def test_a_number_and_its_quoted_spelling_are_one_json_key() -> None:
    err = _error("m:\n  1: x\n  '1': y\n")
    assert err.line == 3 and "once converted to JSON" in err.message


@pytest.mark.parametrize(("text", "what"), [("~: 1\n", "null"), ("? [a]\n: 1\n", "list")])
def test_keys_json_cannot_hold_are_refused(text: str, what: str) -> None:
    err = _error(text)
    assert err.line == 1 and "invalid map key" in err.message and what in err.message


def test_key_lines_use_the_decoded_key_spelling() -> None:
    lines = yamlio.key_lines("a:\n  on: 1\n  2: x\n")
    assert lines[("a", "true")] == 2 and lines[("a", "2")] == 3


# --- encodings --------------------------------------------------------------------------------


def test_a_byte_order_mark_is_dropped_as_helm_and_kubectl_do(tmp_path: Path) -> None:
    f = tmp_path / "cm.yaml"
    f.write_bytes(b"\xef\xbb\xbfapiVersion: v1\nkind: ConfigMap\n")
    text = yamlio.read_text(f)
    assert yamlio.load_documents(text, str(f))[0].value == {"apiVersion": "v1", "kind": "ConfigMap"}
    assert yamlio.load_one("\ufeffa: 1", "f") == {"a": 1}


def test_bytes_that_are_not_utf8_name_their_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / ".helmsim.yaml"
    f.write_bytes(b"profiles: [kind]\nrules:\n  HS1\xff: off\n")
    with pytest.raises(InputError) as err:
        yamlio.read_text(f)
    assert (err.value.line, err.value.message) == (3, "not UTF-8 text: byte 0xff at column 6")


def test_utf16_is_named(tmp_path: Path) -> None:
    f = tmp_path / "v.yaml"
    f.write_bytes("a: 1\n".encode("utf-16"))
    with pytest.raises(InputError, match="UTF-16"):
        yamlio.read_text(f)


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x7f"])
def test_control_characters_are_one_line_with_their_line(char: str) -> None:
    err = _error(f"a: 1\nb: x{char}y\n")
    assert err.line == 2 and "unacceptable character" in err.message


# --- nesting and aliases ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 1200 + "]" * 1200,  # flow: beyond yaml-rs and libyaml's own limits
        "a: " + "[" * 300 + "]" * 300,  # flow: beyond the default limit, within libyaml's
        "".join(" " * i + f"k{i}:\n" for i in range(200)) + " " * 200 + "x: 1\n",  # block
        "v:\n" + "".join("  " * i + "- \n" for i in range(1, 200)),
    ],
)
def test_deep_nesting_names_the_limit(text: str) -> None:
    with pytest.raises(InputError) as err:
        yamlio.load_documents(text, "deep.yaml")
    message = str(err.value)
    assert "\n" not in message
    assert message.endswith("exceeds --max-depth 128")


def test_nesting_past_the_limit_reports_the_flag() -> None:
    with pytest.raises(limits.LimitExceeded) as err:
        yamlio.load_one("a: " + "[" * 300 + "]" * 300, "deep.yaml")
    assert str(err.value) == "deep.yaml:1: YAML nested 129 levels deep exceeds --max-depth 128"
    with pytest.raises(limits.LimitExceeded) as err:
        yamlio.load_one("a: " + "[" * 1200 + "]" * 1200, "deep.yaml")  # past libyaml's own limit
    assert str(err.value) == "deep.yaml:1: YAML nested more than 1,000 levels deep exceeds --max-depth 128"


def test_real_crd_depth_is_accepted() -> None:
    # cert-manager's Issuer CRD nests 39 levels; the default allows 128
    text = "a: " + "[" * 60 + "]" * 60
    assert yamlio.load_one(text, "f") is not None


def test_key_lines_survive_any_depth() -> None:
    deep = "spec:\n  values:\n    a: " + "[" * 900 + "]" * 900 + "\n"
    assert yamlio.key_lines(deep)[("spec", "values", "a")] == 3
    assert yamlio.key_lines("a: " + "[" * 1200 + "]" * 1200) == {}


def test_aliases_within_the_budget_expand() -> None:
    assert yamlio.load_one("a: &x [1, 2]\nb: *x\n", "f") == {"a": [1, 2], "b": [1, 2]}


def test_an_anchor_containing_itself_is_refused() -> None:
    assert "contains an alias of itself" in _error("a: &a [1, *a]\n").message


def test_numbers_past_64_bits_are_floats_as_in_go() -> None:
    assert yamlio.load_one("v: 99999999999999999999999", "f") == {"v": 1e23}
    assert yamlio.load_one("v: 18446744073709551615", "f") == {"v": 2**64 - 1}  # ParseUint


# --- sizes and counts -------------------------------------------------------------------------


def test_file_size_is_checked_before_reading(tmp_path: Path) -> None:
    f = tmp_path / "big.yaml"
    f.write_text("a: " + "x" * 4096)
    with limits.use(limits.Limits(max_file_size=1024)):
        with pytest.raises(limits.LimitExceeded) as err:
            yamlio.read_text(f, "values file")
    assert str(err.value) == f"{f}: a 4 KiB values file exceeds --max-file-size 1 KiB"


def test_document_count_and_size_are_bounded() -> None:
    many = "".join(f"---\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n" for i in range(20))
    with limits.use(limits.Limits(max_objects=10)):
        with pytest.raises(limits.LimitExceeded, match="20 YAML documents exceeds --max-objects 10"):
            yamlio.load_documents(many, "m.yaml")
    with limits.use(limits.Limits(max_document_size=100)):
        with pytest.raises(limits.LimitExceeded) as err:
            yamlio.load_documents("a: 1\n---\nb: " + "x" * 200 + "\n", "m.yaml")
    assert err.value.line == 3 and "YAML document exceeds --max-document-size 100 bytes" in str(err.value)


def test_error_messages_from_pyyaml_are_one_line() -> None:
    for text in ['a: "b\n', "a: {b\n", "- a\nb: c\n", "a: b: c\n", "%TAG !x! y\n---\na: !x!z 1\n", "a: *nope\n"]:
        err = _error(text)
        assert err.line is not None


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero (a file whose size stat cannot tell)")
def test_a_file_of_unknown_size_is_read_only_up_to_the_limit() -> None:
    with limits.use(limits.Limits(max_file_size=1024)):
        with pytest.raises(limits.LimitExceeded) as err:
            yamlio.read_text("/dev/zero", "values file")
    assert str(err.value) == "/dev/zero: a values file of more than 1 KiB exceeds --max-file-size 1 KiB"


def test_names_with_line_breaks_stay_on_one_line() -> None:
    err = InputError('HelmRelease "a\nb\x1b[2J": bad', file="x\ny.yaml", line=2)
    assert str(err) == 'x\\ny.yaml:2: HelmRelease "a\\nb\\x1b[2J": bad'
