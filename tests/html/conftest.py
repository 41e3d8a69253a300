"""Fixtures for the HTML report tests: simulations of the seed examples and a headless Chromium."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import pytest
from html_cdp import Browser, find_chromium, install_chromium

from helmsim.cli.simulate import build_inputs
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


@pytest.fixture(scope="session")
def sim() -> Callable[..., SimulationResult]:
    """``sim(example, profile, *values)``: a cached simulation."""
    return run


@pytest.fixture(scope="session")
def race() -> SimulationResult:
    """Seed 1 where the migrate Job's pod starts before its CiliumNetworkPolicy is in effect."""
    return run("seed1-migrate-race", str(RACE_PROFILE))


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """test-artifacts/html/ (gitignored): screenshots and the reports the browser opened."""
    out = ROOT / "test-artifacts" / "html"
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="session")
def chromium() -> str:
    """Chromium's binary; installs Debian's chromium package when missing (CI starts bare)."""
    found = find_chromium()
    if found:
        return found
    found, why = install_chromium()
    if not found:
        pytest.skip(f"no Chromium and it cannot be installed: {why}")
    return found


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Browser]:
    """One headless Chromium per test module, driven over the DevTools pipe."""
    b = Browser(chromium)
    try:
        yield b
    finally:
        b.close()
