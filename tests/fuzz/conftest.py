"""The fuzz suite reports how many generated inputs it ran."""

from __future__ import annotations

from typing import Any

from fuzz_inputs_helpers import CASES


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if CASES["count"]:
        terminalreporter.write_line(f"fuzz: {CASES['count']:,} generated inputs read")
