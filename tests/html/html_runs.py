"""The simulations the HTML tests render (a module of its own: test files import from it by a
unique name, never from ``conftest``, whose name every test directory shares)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import load_profile
from helmsim.simulate import SimulationResult, simulate

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
SEED1 = ROOT / "examples" / "seed1-migrate-race"
SEED2 = ROOT / "examples" / "seed2-hf-cache"
RACE_PROFILE = DATA / "cilium-always-fastpull.yaml"
FAILS_VALUES = DATA / "migrate-fails-values.yaml"


@cache
def run(example: str, profile: str, *values: str) -> SimulationResult:
    """A simulation of an example with its Flux objects (cached: results are not mutated)."""
    target = ROOT / "examples" / example
    releases = build_inputs(
        str(target), values=list(values), sets=[], helmrelease=[str(target / "flux")], charts=[],
        release_name=None, namespace="default", upgrade_from=None, upgrade_from_values=[], upgrade_from_set=[],
    )
    return simulate(load_profile(profile), releases)
