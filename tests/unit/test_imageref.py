"""Image references read as the kubelet reads them (helmsim.kube.imageref).

The tables are github.com/distribution/reference's own tests, derived as data by
``tests/unit/data/image_references/generate.py`` (``cases.yaml`` names the commit).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.kube import imageref
from helmsim.kube.imageref import ImageRefError, kubelet_error, parse, parse_reference

CASES = yaml.safe_load((Path(__file__).parent / "data" / "image_references" / "cases.yaml").read_text())
# upstream's test binary links only crypto/sha256 (its sha512 case expects "unsupported")
TEST_ALGORITHMS = frozenset({"sha256"})


@pytest.mark.parametrize("case", CASES["parse"], ids=lambda c: c["input"][:60] or "<empty>")
def test_reference_parse_table(case: dict[str, str]) -> None:
    if "err" in case:
        with pytest.raises(ImageRefError) as err:
            parse_reference(case["input"], TEST_ALGORITHMS)
        assert str(err.value) == case["err"]
        return
    ref = parse_reference(case["input"], TEST_ALGORITHMS)
    assert (f"{ref.domain}/{ref.path}" if ref.domain else ref.path) == case["repository"]
    assert ref.domain == case.get("domain", "")
    assert ref.tag == case.get("tag", "")
    assert ref.digest == case.get("digest", "")


@pytest.mark.parametrize("name", CASES["normalized_valid"])
def test_valid_names_parse(name: str) -> None:
    assert parse(name).path


@pytest.mark.parametrize("name", CASES["normalized_invalid"])
def test_invalid_names_are_refused(name: str) -> None:
    with pytest.raises(ImageRefError):
        parse(name)
    assert kubelet_error(name) is not None


@pytest.mark.parametrize("case", CASES["repository_info"], ids=lambda c: c["FullName"])
def test_repository_info_table(case: dict[str, str]) -> None:
    for written in filter(None, (case["FamiliarName"], case["FullName"], case.get("AmbiguousName"))):
        ref = parse(written)
        assert ref.name == case["FullName"], written
        assert ref.domain == case["Domain"]
        assert ref.path == case["RemoteName"]


def test_the_kubelet_links_sha512() -> None:
    """Upstream's tests refuse sha512 (their binary does not link it); the kubelet accepts it."""
    image = "validname@sha512:" + "f" * 128
    assert parse(image).digest == "sha512:" + "f" * 128
    with pytest.raises(ImageRefError, match="unsupported digest algorithm"):
        parse(image, TEST_ALGORITHMS)


@pytest.mark.parametrize(
    ("image", "pulled"),
    [
        ("nginx", "docker.io/library/nginx:latest"),
        ("bitnami/postgresql:17.6.0-debian-12-r4", "docker.io/bitnami/postgresql:17.6.0-debian-12-r4"),
        ("docker.io/postgres:16", "docker.io/library/postgres:16"),
        ("index.docker.io/bitnami/kubectl", "docker.io/bitnami/kubectl:latest"),
        ("quay.io/jetstack/cert-manager-controller:v1.18.2", "quay.io/jetstack/cert-manager-controller:v1.18.2"),
        ("busybox:1.36@sha256:" + "a" * 64, "docker.io/library/busybox@sha256:" + "a" * 64),
    ],
)
def test_what_the_runtime_pulls(image: str, pulled: str) -> None:
    assert parse(image).pulled == pulled


@pytest.mark.parametrize(
    ("image", "text"),
    [
        ("nginx:", 'Failed to apply default image tag "nginx:": couldn\'t parse image name "nginx:": invalid reference format'),
        (":", 'Failed to apply default image tag ":": couldn\'t parse image name ":": invalid reference format'),
        (
            "ghcr.io/Acme/app:1",
            'Failed to apply default image tag "ghcr.io/Acme/app:1": couldn\'t parse image name "ghcr.io/Acme/app:1": '
            "invalid reference format: repository name (Acme/app) must be lowercase",
        ),
        ("nginx:1.25 ", 'Failed to apply default image tag "nginx:1.25 ": couldn\'t parse image name "nginx:1.25 ": invalid reference format'),
        ("bad\x1b]0;x\x07", 'Failed to apply default image tag "bad\\x1b]0;x\\a": couldn\'t parse image name "bad\\x1b]0;x\\a": invalid reference format'),
    ],
)
def test_the_kubelets_text_for_a_reference_it_cannot_parse(image: str, text: str) -> None:
    assert kubelet_error(image) == text


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*"abcAB09._-:/@[]%", "sha256:", "f" * 32, "\x1b", " "]), max_size=24).map("".join))
def test_the_reader_answers_every_string(text: str) -> None:
    """Any string either parses or gets one line of the kubelet's text; a parsed reference prints
    back to itself (the name normalised)."""
    try:
        ref = parse(text)
    except ImageRefError:
        err = kubelet_error(text)
        # the quoted image is escaped as Go's %q; upstream's lowercase error quotes it raw, as
        # kubelet's Event does (the report's output escapes it: docs/security.md)
        assert err is not None and err.startswith(f"Failed to apply default image tag {imageref.go_quote(text)}: ")
        return
    assert parse(str(ref)) == ref
    assert parse(ref.pulled).name == ref.name


def test_the_grammar_is_the_one_upstream_documents() -> None:
    # regexp.go: a tag is at most 128 characters, a digest's hex at least 32
    assert parse("a:" + "t" * 128).tag == "t" * 128
    assert kubelet_error("a:" + "t" * 129) is not None
    assert imageref.NAME_TOTAL_LENGTH_MAX == 255
