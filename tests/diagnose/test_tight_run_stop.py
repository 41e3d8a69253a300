"""A check's tight-timing run stops once the race rules cannot find anything more
(helmsim.diagnose.rules.network.RacesSettled): what HS101 and HS112 report on it is what they
report on the full run, and a release that stalls no longer runs to Helm's timeout for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helmsim.cluster.profile import load_profile
from helmsim.cluster.trace import Trace
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.profilepass import chart_policies, run_rules
from helmsim.diagnose.registry import RULES, all_rules
from helmsim.diagnose.rules.network import RacesSettled
from helmsim.diagnose.runner import run_nominal, run_tight
from helmsim.diagnose.sampling import RACE_RULES
from helmsim.release_inputs import build_inputs

ROOT = Path(__file__).resolve().parents[2]
RULE_FIXTURES = ROOT / "tests" / "fixtures" / "rules"
BLOCKS = ROOT / "tests" / "fixtures" / "charts" / "blocks"


class _Sim:
    """What RacesSettled reads of a simulation: its trace and its clock."""

    def __init__(self) -> None:
        self.trace = Trace()
        self.now = 0.0


def test_settled_only_when_every_policy_took_effect_before_now_and_nothing_was_denied() -> None:
    sim = _Sim()
    watch = RacesSettled({"NetworkPolicy/app/a", "NetworkPolicy/app/b"})
    sim.trace.add(1.0, "network-policy", "policy-in-effect", "NetworkPolicy/app/a", "in effect")
    sim.now = 5.0
    assert not watch(sim)  # b is not in effect yet: a pod up now could still race it
    sim.trace.add(5.0, "network-policy", "policy-in-effect", "NetworkPolicy/app/b", "in effect")
    assert not watch(sim)  # b took effect at this very instant: events still due now count
    sim.now = 10.0
    assert watch(sim)
    sim.trace.add(10.0, "kubelet", "connect-denied", "Pod/app/p", "dropped")
    assert not watch(sim)  # a denial: the run goes on so the rules see how it ends


def test_a_policy_never_in_effect_keeps_the_run_going() -> None:
    sim = _Sim()
    sim.now = 600.0
    assert not RacesSettled({"CiliumNetworkPolicy/app/late"})(sim)
    assert RacesSettled(set())(sim)  # no chart policy: no race to find


def _inputs(chart: Path, sets: list[str] | None = None) -> list[Any]:
    return build_inputs(str(chart), sets=sets or [], release_name="app", namespace="app")


def _races(run: ProfileRun) -> list[tuple[str, str, str, str]]:
    all_rules()
    found = run_rules([RULES[r] for r in RACE_RULES], run)
    return [(c.rule, c.obj, c.message, str(c.severity)) for c in found]


@pytest.mark.parametrize(
    ("chart", "sets", "profile", "racy"),
    [
        (RULE_FIXTURES / "HS101" / "failing", None, "cilium-always", True),
        (RULE_FIXTURES / "HS112" / "failing", None, "cilium-always", True),
        (RULE_FIXTURES / "HS112" / "fixed", None, "cilium-always", False),
        (BLOCKS, ["blocks=60"], "kind", False),  # 120 pods on one node of 110: stalls
    ],
)
def test_the_race_rules_find_on_the_stopped_run_what_they_find_on_the_full_one(
    chart: Path, sets: list[str] | None, profile: str, racy: bool
) -> None:
    prof = load_profile(profile)
    releases = _inputs(chart, sets)
    nominal = run_nominal(prof, releases)
    charts = (nominal.charts, nominal.previous)
    policies = chart_policies(nominal)
    full = run_tight(prof, releases, charts=charts)
    stopped = run_tight(prof, releases, charts=charts, stop=RacesSettled(policies))
    assert _races(stopped) == _races(full)
    assert bool(_races(full)) == racy
    if racy:  # a connection was denied: the run goes to its end for the rules to see how it ended
        assert stopped.result.end_time == full.result.end_time


def test_a_stalling_release_stops_seconds_into_its_tight_run() -> None:
    prof = load_profile("kind")
    releases = _inputs(BLOCKS, ["blocks=60"])
    nominal = run_nominal(prof, releases)
    assert [o.outcome for o in nominal.result.releases] == ["Stalled"]
    charts = (nominal.charts, nominal.previous)
    policies = chart_policies(nominal)
    assert len(policies) == 60
    full = run_tight(prof, releases, charts=charts)
    stopped = run_tight(prof, releases, charts=charts, stop=RacesSettled(policies))
    assert full.result.end_time >= 300  # Helm's 5 min wait, then the HelmRelease stalls
    assert stopped.result.end_time <= 10
