"""Observation files: the examples load, bad input is one line naming the file and line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from explain_helpers import EXAMPLES, ROOT

from helmsim.errors import InputError
from helmsim.explain.match import shape
from helmsim.explain.observation import json_schema, load_observation

SCHEMA = ROOT / "docs" / "observation.schema.json"


def test_the_seed_observations_load_with_their_kubectl_events() -> None:
    one = load_observation(EXAMPLES / "seed1-incident.observation.yaml")
    assert one.observation.workloads[0].pods == 3
    assert [e.reason for e in one.events] == ["SuccessfulCreate", "BackoffLimitExceeded"]
    assert one.events[1].ref == "Job/kagent/agent-platform-connectivity-agent-manager-migrate-596983f4"
    two = load_observation(EXAMPLES / "seed2-incident.observation.yaml")
    assert two.observation.helm_release is not None and two.observation.helm_release.failures == 5


def _write(tmp_path: Path, text: str, name: str = "o.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


HEAD = "apiVersion: helmsim.dev/v1alpha1\nkind: Observation\n"


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("apiVersion: v1\nkind: Scenario\n", 2, "not an observation"),
        (HEAD + "helmRelease:\n  ready: maybe\n", 4, "helmRelease.ready"),
        (HEAD + "helmRelease:\n  readyy: 'False'\n", 4, "unknown key 'readyy'"),
        (HEAD + "workloads:\n  - object: Job/x\n", 4, "is not Kind/namespace/name"),
        (HEAD + "workloads:\n  - object: Job/ns/x\n    logs:\n      - line: a\n        pods: [0]\n", 7, "numbered from 1"),
        (HEAD + "metadata: {name: x}\n", 1, "needs helmRelease, workloads or events"),
        (HEAD + "eventsFile: nope.yaml\n", 3, "eventsFile: no such file"),
        (HEAD + "events:\n  - reason: X\n    involvedObject: {kind: Job}\n", 4, "involvedObject needs kind and name"),
    ],
)
def test_bad_observations_name_the_file_and_line(tmp_path: Path, body: str, line: int, message: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(InputError) as info:
        load_observation(path)
    assert message in str(info.value)
    assert info.value.file == str(path) and info.value.line == line


def test_an_events_file_that_is_not_kubectl_output(tmp_path: Path) -> None:
    _write(tmp_path, "items: 3\n", "ev.yaml")
    path = _write(tmp_path, HEAD + "eventsFile: ev.yaml\n")
    with pytest.raises(InputError, match="kubectl get events -o yaml"):
        load_observation(path)


@pytest.mark.parametrize(
    ("real", "simulated"),
    [
        (
            "Helm upgrade failed for release a/b with chart b@4.7.0+c439a9c72d9c: failed early due to stalled resources: [Job/kagent/x-migrate-596983f4 status: 'Failed']",
            "Helm upgrade failed for release a/b.v2 with chart b@4.7.0: failed early due to stalled resources: [Job/kagent/x-migrate-b49599d7 status: 'Failed']",
        ),
        ("Created pod: x-migrate-596983f4-x7k2p", "Created pod: x-migrate-b49599d7pggv5"),
    ],
)
def test_names_compare_by_shape(real: str, simulated: str) -> None:
    assert shape(real) == shape(simulated)


def test_shape_keeps_words() -> None:
    assert shape("Job has reached the specified backoff limit") == "Job has reached the specified backoff limit"
    assert shape("agent-manager") == "agent-manager"


def test_json_schema_in_docs_is_up_to_date() -> None:
    """Regenerate with HELMSIM_UPDATE_SCHEMA=1 pytest tests/explain/test_observation.py."""
    fresh = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("HELMSIM_UPDATE_SCHEMA"):
        SCHEMA.write_text(fresh, encoding="utf-8")
    assert SCHEMA.read_text(encoding="utf-8") == fresh, "docs/observation.schema.json is stale"
