"""Fixtures for the HTML report tests: simulations of the seed examples and a headless Chromium."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from html_cdp import Browser, find_chromium, install_chromium
from html_runs import RACE_PROFILE, run

from helmsim.simulate import SimulationResult


@pytest.fixture(scope="session")
def sim() -> Callable[..., SimulationResult]:
    """``sim(example, profile, *values)``: a cached simulation."""
    return run


@pytest.fixture(scope="session")
def race() -> SimulationResult:
    """Seed 1 where the migrate Job's pod starts before its CiliumNetworkPolicy is in effect."""
    return run("seed1-migrate-race", str(RACE_PROFILE))


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session tmp directory (pytest's basetemp, never in the repository): screenshots and
    the reports the browser opened, one per worker under xdist."""
    return tmp_path_factory.mktemp("html-artifacts")


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
