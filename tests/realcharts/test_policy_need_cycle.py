"""Needs inferred from egress policies that form a cycle are not start-time needs (behaviour.md,
Inferences, step 2): bitnami/charts ``bitnami/harbor`` with ``allowExternalEgress=false`` gives
core and jobservice policies that each allow the other, and taking both as "dialled once at
start, fatal when refused" left each waiting for the other, Stalled, where Harbor installs.
A need that is on no cycle is kept, and the report says which needs were not assumed. Needs
inferred from the environment (harbor's envFrom ConfigMaps) count the same."""

from __future__ import annotations

import pytest
from realcharts_helpers import simulate_chart

from helmsim.cluster.running import assumed_behaviours

CHART = "policy-need-cycle"


def _notes(result: object) -> dict[str, str]:
    return {n.split("registry.example.com/acme/", 1)[1].split(":", 1)[0]: n for n in assumed_behaviours(result.trace)}  # type: ignore[attr-defined]


@pytest.mark.parametrize("via", ["policy", "env"])
def test_a_two_cycle_installs_and_a_need_off_the_cycle_is_kept(via: str) -> None:
    # env: bitnami harbor's core and jobservice ConfigMaps (envFrom) name each other's URLs
    result = simulate_chart(CHART, sets=(f"via={via}",))
    (release,) = result.releases
    assert release.outcome == "Ready"
    notes = _notes(result)
    assert "not waiting at start for svc/default/jobservice:80" in notes["core"]
    assert "not waiting at start for svc/default/core:80" in notes["jobservice"]
    assert "connecting at start to svc/default/core:80" in notes["portal"]  # portal → core only
    assert "not waiting" not in notes["portal"]


def test_a_longer_cycle_is_found() -> None:
    result = simulate_chart(CHART, values=("ci/three-cycle-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    notes = _notes(result)
    for name, peer in (("a", "b"), ("b", "c"), ("c", "a")):
        assert f"not waiting at start for svc/default/{peer}:80" in notes[name]
        assert "connecting at start" not in notes[name]


def test_a_chain_keeps_every_need() -> None:
    result = simulate_chart(CHART, values=("ci/chain-values.yaml",))
    assert result.releases[0].outcome == "Ready"
    notes = _notes(result)
    assert "connecting at start to svc/default/b:80" in notes["a"]
    assert "connecting at start to svc/default/c:80" in notes["b"]
    assert not any("not waiting" in n for n in notes.values())
