"""The pure parts of diffing: field paths, scalar sameness, secret redaction, globs, outcomes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from helmsim import diffing


def test_field_paths_name_list_indexes_and_odd_keys() -> None:
    old = {
        "spec": {"containers": [{"image": "a:1"}], "x": 1},
        "metadata": {"annotations": {"helm.sh/hook": "pre-install"}},
    }
    new = {
        "spec": {"containers": [{"image": "a:2"}, {"image": "b"}]},
        "metadata": {"annotations": {"helm.sh/hook": "post-install"}},
    }
    changes = [(c.path, c.change, c.old, c.new) for c in diffing.diff_values(old, new)]
    assert changes == [
        ("spec.containers[0].image", "changed", "a:1", "a:2"),
        ("spec.containers[1]", "added", None, {"image": "b"}),
        ("spec.x", "removed", 1, None),
        ('metadata.annotations["helm.sh/hook"]', "changed", "pre-install", "post-install"),
    ]


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        (1, 1.0, True),  # one JSON number once sigs.k8s.io/yaml converts to JSON
        (True, 1, False),
        ("1", 1, False),
        (None, "", False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),  # key order is formatting
    ],
)
def test_sameness(old: object, new: object, same: bool) -> None:
    assert (diffing.diff_values(old, new) == []) is same


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("DB_PASSWORD", True),
        ("apiKey", True),
        ("clientSecret", True),
        ("token", True),
        ("privateKey", True),
        ("awsAccessKey", True),
        ("secretName", False),
        ("tokenPath", False),
        ("passwordFile", False),
        ("image", False),
        ("secretKeyRef", False),
    ],
)
def test_secret_like_keys(key: str, secret: bool) -> None:
    assert diffing.is_secret_key(key) is secret


def test_redact_hashes_secret_data_and_secret_like_fields() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "data": {"k": "aHVudGVyMg=="},
        "stringData": {"p": "hunter2"},
    }
    out = diffing.redact(secret)
    assert out["data"]["k"] == diffing.secret_hash("aHVudGVyMg==") and out["stringData"][
        "p"
    ] == diffing.secret_hash("hunter2")
    assert secret["stringData"]["p"] == "hunter2"  # the input is not modified
    pod = {
        "env": [{"name": "API_TOKEN", "value": "t0k"}, {"name": "MODE", "value": "x"}],
        "auth": {"password": 1234},
        "automountServiceAccountToken": True,
    }
    red = diffing.redact(pod)
    assert red["env"][0]["value"].startswith("<secret sha256:") and red["env"][1]["value"] == "x"
    assert red["auth"]["password"] == diffing.secret_hash(1234)
    assert red["automountServiceAccountToken"] is True  # booleans are not secrets
    assert "t0k" not in str(red) and "1234" not in str(red)


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("db:\n  host: pg\n  password: hunter2\n", True),
        ("API_TOKEN=abc\n", True),
        ("postgres://app:hunter2@pg:5432/app", True),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIB\n", True),
        ("log:\n  level: debug\n", False),
        ("https://example.com/path", False),
    ],
)
def test_strings_that_embed_a_secret_are_hashed_whole(text: str, hidden: bool) -> None:
    out = diffing.redact({"kind": "ConfigMap", "data": {"config.yaml": text}})
    assert (out["data"]["config.yaml"] == diffing.secret_hash(text)) is hidden


@pytest.mark.parametrize(
    ("pattern", "path", "match"),
    [
        ("ci/*.yaml", "ci/a-values.yaml", True),
        ("ci/*.yaml", "ci/sub/a.yaml", False),
        ("**/values.yaml", "a/b/values.yaml", True),
        ("**/values.yaml", "values.yaml", True),
        ("a/**", "a/b/c.yaml", True),
        ("ci/default*.yaml", "ci/default-values.yaml", True),
        ("ci/?.yaml", "ci/ab.yaml", False),
        ("ci/[!x]*.yaml", "ci/a.yaml", True),
        ("ci/[!x]*.yaml", "ci/x.yaml", False),
        ("ci/a+b.yaml", "ci/a+b.yaml", True),
    ],
)
def test_glob_regex(pattern: str, path: str, match: bool) -> None:
    assert bool(diffing._glob_regex(pattern).match(path)) is match


@pytest.mark.parametrize(
    ("outcome", "simulated", "message", "summary"),
    [
        ("Ready", True, "Helm install succeeded", "Ready"),
        ("Ready", False, "not simulated", "Ready (not simulated)"),
        (
            "Stalled",
            True,
            (
                "Helm install failed for release a/b with chart c@1: timeout waiting for: "
                "[PersistentVolumeClaim/model-serving/hf-cache status: 'InProgress', "
                "Deployment/a/b status: 'InProgress']"
            ),
            "Stalled: times out on PersistentVolumeClaim/model-serving/hf-cache, Deployment/a/b",
        ),
        (
            "Blocked",
            False,
            "dependency 'a/b' is not ready",
            "Blocked: dependency 'a/b' is not ready",
        ),
    ],
)
def test_outcome_summary(outcome: str, simulated: bool, message: str, summary: str) -> None:
    o = SimpleNamespace(outcome=outcome, simulated=simulated, message=message)
    assert diffing.outcome_summary(o) == summary
