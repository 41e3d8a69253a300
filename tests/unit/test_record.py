"""Helm's release record (helmsim.helm.record): its JSON as Go marshals it, the range Go's gzip of
it lies in, and the API server's answers to a Secret that big."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import random
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helmsim.helm import record


def _hex() -> bytes:
    return "\n".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(30000)).encode()


def _base64_random() -> bytes:
    return base64.b64encode(random.Random(1).randbytes(600000))


def _schema_yaml() -> bytes:
    return "".join(
        f"  field{i % 97}:\n    type: string\n    description: value {i * 7919 % 10007} of {i % 13}\n" for i in range(40000)
    ).encode()


def _words() -> bytes:
    words = ["release", "chart", "values", "template", "service", "port", "name", "labels", "spec", "image"]
    r = random.Random(2)
    return " ".join(r.choice(words) + str(r.randrange(100)) for _ in range(60000)).encode()


def _json_values() -> bytes:
    r = random.Random(3)
    values = {
        f"key{i}": {"replicas": r.randrange(10), "image": f"registry.example/app{i % 50}:{r.randrange(1000)}"}
        for i in range(20000)
    }
    return json.dumps(values, separators=(",", ":")).encode()


def _base64_text() -> bytes:
    lines = "".join(f"line {i}: {hashlib.md5(str(i % 500).encode()).hexdigest()}\n" for i in range(40000))
    return base64.b64encode(lines.encode())


# Go 1.19 compress/gzip at gzip.BestCompression (as helm/helm pkg/storage/driver/util.go
# encodeRelease writes), measured once on each input below by a ten-line Go program (bytes.Buffer,
# gzip.NewWriterLevel, Write, Close, Len): the sizes helmsim must bracket.
GO_GZIP: list[tuple[str, Callable[[], bytes], int]] = [
    ("hex digests (a rendered manifest of hashes)", _hex, 1_033_734),
    ("base64 of random bytes (a binary file in the chart)", _base64_random, 602_547),
    ("YAML schema text (CRDs)", _schema_yaml, 206_785),
    ("words and numbers", _words, 120_050),
    ("JSON values", _json_values, 125_460),
    ("base64 of repetitive text (templates)", _base64_text, 397_915),
]


@pytest.mark.parametrize(("what", "make", "go"), GO_GZIP, ids=[w for w, _, _ in GO_GZIP])
def test_gos_gzip_lies_in_the_range(what: str, make: Callable[[], bytes], go: int) -> None:
    low, high = record.gzip_range(make())
    assert low <= go <= high, what
    assert high / low < 1.3  # a range narrow enough to judge records far from the limit


def _size(stored: tuple[int, int] | None) -> record.RecordSize:
    return record.RecordSize(json_bytes=2_000_000, stored=stored, largest=(("docs/a.pdf", 900_000),))


@pytest.mark.parametrize(
    ("kube", "detail"),
    [("1.31.4-eks-2d5f260", "must have at most"), ("1.32.0", "may not be more than"), ("v1.36.1", "may not be more than")],
)
def test_a_secret_over_one_mebibyte_is_invalid_in_the_versions_words(kube: str, detail: str) -> None:
    text = record.refusal(_size((1_100_000, 1_200_000)), "sh.helm.release.v1.web.v3", kube)
    assert text == f'Secret "sh.helm.release.v1.web.v3" is invalid: data: Too long: {detail} 1048576 bytes'


def test_a_body_over_three_mebibytes_is_too_large_to_read() -> None:
    # data.release is base64 again in the JSON body: 2.4 MB of it is a 3.2 MB request
    text = record.refusal(_size((2_400_000, 2_500_000)), "x", "1.31.0")
    assert text == "Request entity too large: limit is 3145728"


@pytest.mark.parametrize("stored", [None, (900_000, 1_000_000), (1_000_000, 1_100_000)])
def test_a_record_that_fits_or_may_fit_is_not_refused(stored: tuple[int, int] | None) -> None:
    assert record.refusal(_size(stored), "x", "1.31.0") is None


def test_a_range_holding_the_limit_is_said_uncertain_once() -> None:
    note = record.uncertainty(_size((1_000_000, 1_100_000)))
    assert note is not None and "between 1,000,000 and 1,100,000 bytes" in note and "docs/a.pdf 900,000 bytes" in note
    assert record.uncertainty(_size((900_000, 1_000_000))) is None
    assert record.uncertainty(_size((1_100_000, 1_200_000))) is None  # refused: no doubt
    assert record.uncertainty(_size(None)) is None


def test_a_small_record_is_not_compressed() -> None:
    size = record.measure('{"name":"x"}')
    assert size.stored is None and size.json_bytes == 12
    assert record.refusal(size, "x", "1.31.0") is None


def test_the_chart_json_is_what_go_marshals(tmp_path: Path) -> None:
    (tmp_path / "values.schema.json").write_bytes(b'{\n  "type": "object"\n}\n')
    part = record.chart_record(
        str(tmp_path),
        {"name": "web", "version": "1.0.0", "description": "a <b> & c"},
        [{"name": "templates/cm.yaml", "data": "kind: ConfigMap\n"}],
        {"b": 1, "a": {"d": True, "c": None}},
        [{"name": "README.md", "data": "hello"}],
        schema_present=True,
    )
    assert "\\u003cb\\u003e \\u0026 c" in part.json  # Go escapes HTML characters
    chart = json.loads(part.json)
    assert list(chart) == ["metadata", "lock", "templates", "values", "schema", "schemamodtime", "files", "modtime"]
    assert base64.b64decode(chart["templates"][0]["data"]) == b"kind: ConfigMap\n"
    assert base64.b64decode(chart["schema"]) == b'{\n  "type": "object"\n}\n'  # the file's bytes
    assert part.json.index('"a":{"c":null,"d":true},"b":1') > 0  # map keys sorted
    assert part.largest[0] == ("values.schema.json", 23)


@pytest.mark.parametrize("packed", [False, True])
def test_a_binary_file_is_read_from_the_chart_itself(tmp_path: Path, packed: bool) -> None:
    data = bytes(range(256)) * 4
    chart = tmp_path / "web"
    (chart / "files").mkdir(parents=True)
    (chart / "files" / "blob.bin").write_bytes(data)
    path = str(chart)
    if packed:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as archive:
            archive.add(chart, arcname="web")
        (tmp_path / "web-1.0.0.tgz").write_bytes(buf.getvalue())
        path = str(tmp_path / "web-1.0.0.tgz")
    lossy = data.decode("utf-8", "replace")  # what Helm's loader hands over through JSON
    part = record.chart_record(path, {"name": "web"}, [], {}, [{"name": "files/blob.bin", "data": lossy}], False)
    assert base64.b64decode(json.loads(part.json)["files"][0]["data"]) == data


def test_release_json_holds_the_manifest_once_per_document() -> None:
    chart = record.ChartRecord('{"metadata":{"name":"web"}}')
    text = record.release_json(
        chart, name="web", namespace="apps", revision=2, config={"replicas": 3},
        manifests=[("web/templates/a.yaml", "kind: A\n---\nkind: B\n")], notes="hi",
    )
    rel = json.loads(text)
    assert rel["manifest"] == "---\n# Source: web/templates/a.yaml\nkind: A\n---\n# Source: web/templates/a.yaml\nkind: B\n"
    assert rel["version"] == 2 and rel["config"] == {"replicas": 3} and rel["info"]["notes"] == "hi"
    assert rel["info"]["status"] == "pending-upgrade"


_json_values_strategy = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(_json_values_strategy)
def test_go_json_reads_back_and_escapes_what_go_escapes(value: object) -> None:
    text = record.go_json(value)
    assert json.loads(text) == value
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}


@given(st.text())
def test_raw_bytes_of_valid_text_are_its_utf8(text: str) -> None:
    if "\ufffd" not in text:
        assert record.raw_bytes(text) == text.encode("utf-8", "surrogatepass")


@given(st.binary(max_size=200))
def test_raw_bytes_of_lossy_text_have_the_original_length_of_ascii_and_invalid_bytes(data: bytes) -> None:
    lossy = data.decode("utf-8", "replace")
    # U+FFFD stands for one invalid byte as Go's encoding/json writes it (one per byte); Python
    # may fold a truncated multi-byte sequence into one, so the length is at most the original
    assert len(record.raw_bytes(lossy)) <= len(data)
    if all(b < 0x80 or b >= 0xF8 or 0x80 <= b < 0xC0 for b in data):
        assert len(record.raw_bytes(lossy)) == len(data)
