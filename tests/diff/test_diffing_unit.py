"""The pure parts of diffing: field paths, scalar sameness, globs, outcomes (secrets: tests/unit/test_redaction.py)."""

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
