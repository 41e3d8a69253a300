"""Fixtures for the end-to-end tests; the helpers themselves live in e2e_helpers.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from e2e_helpers import cached_run

from helmsim.simulate import SimulationResult


@pytest.fixture(scope="session")
def sim() -> Callable[..., SimulationResult]:
    """``sim(example, profile, *values, upgrade=False)``: a cached simulation of an example."""
    return cached_run
