"""``make check`` holds on every landing: mypy over src/helmsim with 0 errors, ruff clean.

CI runs ``make check`` after the tests (.ci/run); running the same two tools here means a change
that breaks them fails where it is made, not in CI at the end. Both are dev dependencies
(``pip install -e '.[dev]'``); configuration is in pyproject.toml.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(tool) is None:
        pytest.fail(f"{tool} is not installed: it is a dev dependency — .venv/bin/pip install -e '.[dev,ray]'")
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_mypy_finds_no_errors_in_src() -> None:
    proc = _run("mypy")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_ruff_is_clean_on_src() -> None:
    proc = _run("ruff", "check", "--output-format", "concise", "src/helmsim")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
