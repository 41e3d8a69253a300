"""Shared paths and helpers for the profile import / calibrate / diff tests (a unique module name:
pytest puts every test directory on sys.path)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from helmsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "profiles"
EXAMPLES = ROOT / "examples"
runner = CliRunner()


def simulate_json(example: str, profile: str, *extra: str) -> dict[str, object]:
    """``helmsim simulate examples/<example> --helmrelease …/flux -p PROFILE --format json``."""
    target = EXAMPLES / example
    result = runner.invoke(
        app,
        [
            "simulate",
            str(target),
            "--helmrelease",
            str(target / "flux"),
            "-p",
            profile,
            "--format",
            "json",
            *extra,
        ],
    )
    assert result.exit_code in (0, 1), result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def without_profile_name(report: dict[str, object], name: str, replacement: str) -> str:
    """The report as JSON text with the profile's name replaced (names are the only difference
    a faithful import may show)."""
    return json.dumps(report, sort_keys=True).replace(f'"{name}"', f'"{replacement}"')
