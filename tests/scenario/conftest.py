"""Shared paths for scenario tests."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
MINI = HERE / "charts" / "mini"
SEED1 = ROOT / "examples" / "seed1-migrate-race"


@pytest.fixture
def mini() -> str:
    """A chart with a Job (needs the API server), a Deployment and an optional claim."""
    return str(MINI)
