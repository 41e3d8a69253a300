"""What the public registries withdrew, and what a profile says its nodes can get
(helmsim.cluster.registries, docs/profiles.md#images)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.cluster import registries
from helmsim.cluster.catalog import image_repository
from helmsim.kube.imageref import normalise_pattern, parse


@pytest.mark.parametrize(
    "image",
    [
        "docker.io/bitnami/postgresql:17.6.0-debian-12-r4",
        "bitnami/redis:7.0.11-debian-11-r12",  # bitnami/containers#83267's own example, familiar name
        "index.docker.io/bitnami/kubectl:1.32.3",  # bitnami/containers#88999
        "registry-1.docker.io/bitnami/etcd:3.5.17",  # Docker Hub's registry host
    ],
)
def test_withdrawn_images_fail_with_not_found(image: str) -> None:
    verdict = registries.withdrawn(image)
    assert verdict is not None and verdict.error.endswith(": not found")
    # containerd names the reference normalised (docker.io/…; registry-1.docker.io stays as written)
    assert verdict.error.startswith(f'rpc error: code = NotFound desc = failed to pull and unpack image "{parse(image).pulled}"')


@pytest.mark.parametrize(
    "image",
    [
        "docker.io/bitnamilegacy/postgresql:17.6.0-debian-12-r4",
        "docker.io/bitnami/sealed-secrets-controller:0.31.0",  # bitnami/sealed-secrets#1790
        "bitnami/minideb:bookworm",  # bitnami/minideb#196
        "quay.io/bitnami/postgresql:17",  # another registry
        "docker.io/library/postgres:17",
        "ghcr.io/example/bitnami/app:1",
        "nginx:",  # not parsed: the kubelet refuses it before any pull
    ],
)
def test_other_images_are_not_withdrawn(image: str) -> None:
    assert registries.withdrawn(image) is None


@pytest.mark.parametrize(
    "image",
    [
        "bitnami/kubectl",
        "bitnami/kubectl:latest",
        "bitnami/kubectl@sha256:" + "a" * 64,
        # mixed evidence: bitnami/containers#86251 and bitnami/charts#36229 against #83640
        "docker.io/bitnamilegacy/postgresql:11.14.0-debian-10-r22",
        "docker.io/bitnamilegacy/redis:6.2.1-debian-10-r36",
    ],
)
def test_what_helmsim_cannot_tell_is_a_note_not_a_failure(image: str) -> None:
    verdict = registries.withdrawn(image)
    assert verdict is not None and not verdict.error and "assumed pullable" in verdict.note


def test_the_copy_a_withdrawal_left() -> None:
    assert registries.replacement("bitnami/postgresql:17.6.0-debian-12-r4") == "docker.io/bitnamilegacy/postgresql:17.6.0-debian-12-r4"
    # perhaps never copied: not proposed
    assert registries.replacement("bitnami/redis:6.2.1-debian-10-r36") is None
    assert registries.replacement("quay.io/jetstack/cert-manager-controller:v1.18.2") is None


@pytest.mark.parametrize(
    ("patterns", "image", "expected"),
    [
        (["bitnami/*"], "docker.io/bitnami/postgresql:17", True),
        (["docker.io/bitnami/*"], "bitnami/postgresql:17", True),
        (["bitnami/postgresql"], "bitnami/postgresql:17", True),
        (["bitnami/postgresql:16.*"], "bitnami/postgresql:17.6.0", False),
        (["bitnami/postgresql:17.*"], "bitnami/postgresql:17.6.0", True),
        (["app:dev"], "app:dev", True),
        (["app:dev"], "app", False),  # app is app:latest
        (["quay.io/*"], "bitnami/postgresql:17", False),
        (["bitnami/*"], "nginx:", False),
        (["*"], "quay.io/jetstack/cert-manager-controller:v1.18.2", True),
    ],
)
def test_profile_patterns(patterns: list[str], image: str, expected: bool) -> None:
    assert registries.pullable(patterns, image) is expected


def test_unobtainable_unless_a_mirror_serves_it() -> None:
    assert registries.unobtainable("bitnami/postgresql:17.6.0-debian-12-r4", [])
    assert not registries.unobtainable("bitnami/postgresql:17.6.0-debian-12-r4", ["bitnami/*"])
    assert registries.unobtainable("nginx:", ["*"])
    assert not registries.unobtainable("nginx:1.29", [])
    assert not registries.unobtainable("bitnami/postgresql:17.6.0-debian-12-r4", [], ["bitnami/postgresql"])


@pytest.mark.parametrize(
    ("pattern", "name"),
    [
        ("nginx", "docker.io/library/nginx"),
        ("docker.io/postgres", "docker.io/library/postgres"),
        ("index.docker.io/bitnami/*", "docker.io/bitnami/*"),
        ("docker.io/*", "docker.io/*"),
        ("*/bitnami/postgresql", "*/bitnami/postgresql"),
        ("Registry/app", "Registry/app"),  # capitals: a domain (normalize.go splitDockerDomain)
    ],
)
def test_patterns_are_normalised_as_names(pattern: str, name: str) -> None:
    assert normalise_pattern(pattern) == name


def test_the_catalog_reads_repositories_as_the_runtime_does() -> None:
    assert image_repository("docker.io/postgres:16") == "docker.io/library/postgres"
    assert image_repository("index.docker.io/bitnami/kubectl:1.33") == "docker.io/bitnami/kubectl"
    assert image_repository("bitnami/nginx:") == "docker.io/bitnami/nginx"  # unparsable: its name as written


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["docker.io/", "bitnami", "legacy", "/", "x", ":", "latest", "-debian-10", "@sha256:", "a" * 64, "A", " "]), max_size=12).map("".join))
def test_every_string_gets_an_answer(image: str) -> None:
    verdict = registries.withdrawn(image)
    assert verdict is None or bool(verdict.error) != bool(verdict.note)
    assert isinstance(registries.unobtainable(image, ["bitnami/*"]), bool)
