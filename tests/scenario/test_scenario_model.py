"""Scenario files: validation with file:line errors, profile forms, discovery, the JSON Schema."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
import yaml

from helmsim.errors import InputError
from helmsim.scenario import (
    ConnectionExpect,
    EventExpect,
    ObjectExpect,
    ReleaseExpect,
    discover,
    json_schema,
    load_scenario,
    parse_scenario,
    scenario_inputs,
    scenario_profile,
)

ROOT = Path(__file__).parents[2]
SCHEMA = ROOT / "docs" / "scenario.schema.json"
EXAMPLES = ROOT / "examples" / "scenarios"

MINIMAL = """\
apiVersion: helmsim.dev/v1alpha1
kind: Scenario
releases:
  - chart: charts/mini
expect:
  - {release: mini, outcome: Ready}
"""


def parse(text: str, name: str = "t.helmsim.yaml") -> object:
    return parse_scenario(text, Path(__file__).parent / name)


def test_a_scenario_file_without_expectations_is_bad_input() -> None:
    no_checks = MINIMAL.split("expect:")[0]
    with pytest.raises(InputError, match="expect: a scenario needs at least one expectation"):
        parse(no_checks)


def test_a_zero_horizon_is_bad_input() -> None:
    with pytest.raises(InputError, match="horizon"):
        parse(MINIMAL + "horizon: 0s\n")


def test_minimal_scenario_defaults() -> None:
    loaded = parse(MINIMAL)
    sc = loaded.scenario
    assert sc.profile == "kind" and sc.horizon == 3600 and sc.seed == 0 and not sc.sample_latencies
    assert loaded.name == "t"  # the file name without .helmsim.yaml


def test_every_expectation_kind_is_recognised_by_its_key() -> None:
    loaded = parse(
        MINIMAL.split("expect:")[0]
        + """\
expect:
  - {release: app, outcome: Ready, within: 5m}
  - {object: Job/default/app-*, status: Failed, attempts: 3}
  - {event: BackoffLimitExceeded, seen: false}
  - {connection: kube-apiserver, from: Job/default/app-migrate, result: connected-first-try}
"""
    )
    kinds = [type(e) for e in loaded.scenario.expect]
    assert kinds == [ReleaseExpect, ObjectExpect, EventExpect, ConnectionExpect]
    assert loaded.scenario.expect[0].within == 300


@pytest.mark.parametrize(
    ("extra", "message", "line"),
    [
        ("expect:\n  - {release: app, outcome: Redy}\n", "expect[0].outcome: Input should be", 6),
        ("expect:\n  - {outcome: Ready}\n", "an expectation needs one of: release, object, event, connection", 6),
        ("faults:\n  - containerExit: {exitCode: 1}\n", "faults[0].containerExit.match: Field required", 6),
        ("faults:\n  - imagePull: {error: x, delay: 2s}\n", "exactly one of error or delay", 6),
        ("faults:\n  - {nodeLost: {node: a, at: 1}, apiserverOutage: {from: 0, to: 1}}\n", "a fault has exactly one of", 6),
        ("faults:\n  - apiserverOutage: {from: 10s, to: 5s}\n", "to must be after from", 6),
        ("faults:\n  - containerExit:\n      match: {}\n      exitCode: 1\n      attempts: {from: 3, to: 2}\n", "to (2) is before from (3)", 9),
        ("behaviours:\n  - needs: [nonsense]\n", "behaviours[0].needs: 'nonsense' is not kube-apiserver", 6),
        ("horizon: soon\n", "horizon: invalid duration 'soon'", 5),
        ("tyop: 1\n", "unknown key 'tyop'", 5),
    ],
)
def test_bad_scenarios_name_the_key_and_line(extra: str, message: str, line: int) -> None:
    head = MINIMAL.split("expect:")[0]  # the error lines count from the end of the releases
    tail = "" if extra.startswith("expect:") else "expect:\n  - {release: mini, outcome: Ready}\n"
    with pytest.raises(InputError) as err:
        parse(head + extra + tail)
    assert message in err.value.message
    assert err.value.line == line and err.value.file and err.value.file.endswith("t.helmsim.yaml")


def test_not_a_scenario() -> None:
    with pytest.raises(InputError, match="not a scenario: expected apiVersion helmsim.dev/v1alpha1"):
        parse("apiVersion: v1\nkind: ConfigMap\n")


def test_profiles_by_name_file_and_inline(tmp_path: Path) -> None:
    prof = tmp_path / "p.yaml"
    prof.write_text("name: mine\nextends: kind\ncni: {policyPropagationSeconds: 7s}\n")
    by_file = parse_scenario(MINIMAL + "profile: p.yaml\n", tmp_path / "s.helmsim.yaml")
    assert scenario_profile(by_file).name == "mine"
    assert scenario_profile(by_file).latency("policy_propagation").nominal() == 7
    inline = parse(MINIMAL + "profile:\n  extends: cilium-always\n  cni: {policyPropagationSeconds: 3s}\n")
    p = scenario_profile(inline)
    assert p.cni.policy_enforcement_mode == "always" and p.latency("policy_propagation").nominal() == 3
    assert scenario_profile(parse(MINIMAL + "profile: eks-gp3\n")).name == "eks-gp3"


def test_release_paths_are_relative_to_the_scenario_and_inline_values_merge() -> None:
    loaded = parse(
        MINIMAL.replace("charts/mini", "charts/mini\n    values: {job: {enabled: false}}\n    releaseName: r1")
    )
    (r,) = scenario_inputs(loaded)
    assert r.hr.release_name == "r1"
    assert r.chart is not None and Path(r.chart.path) == Path(__file__).parent / "charts" / "mini"
    assert r.chart.values == {"job": {"enabled": False}}


def test_discover_finds_only_scenario_files(tmp_path: Path) -> None:
    (tmp_path / "a.helmsim.yaml").write_text(MINIMAL)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.helmsim.yml").write_text(MINIMAL)
    (tmp_path / "values.yaml").write_text("x: 1\n")
    assert [p.name for p in discover([tmp_path])] == ["a.helmsim.yaml", "b.helmsim.yml"]
    with pytest.raises(InputError, match="no such scenario file or directory"):
        discover([tmp_path / "missing"])


def test_json_schema_in_docs_is_up_to_date() -> None:
    """Regenerate with HELMSIM_UPDATE_SCHEMA=1 pytest tests/scenario/test_scenario_model.py."""
    fresh = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("HELMSIM_UPDATE_SCHEMA"):
        SCHEMA.write_text(fresh, encoding="utf-8")
    assert SCHEMA.read_text(encoding="utf-8") == fresh, "docs/scenario.schema.json is stale"


@pytest.mark.parametrize("path", sorted(EXAMPLES.rglob("*.helmsim.yaml")), ids=lambda p: p.name)
def test_examples_validate_against_the_schema_and_the_model(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    assert load_scenario(path).scenario.expect
