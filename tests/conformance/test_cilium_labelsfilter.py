"""Cilium's identity label filter against cilium/cilium's own filter tests (ported as data)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from helmsim.cluster.network.labelfilter import LabelFilter

CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "data" / "cilium_labelsfilter.yaml").read_text()
)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_upstream_filter_table(case: dict[str, Any]) -> None:
    f = LabelFilter.build(case["prefixes"])
    kept = sorted(k for k in case["labels"] if f.keeps(k, case["source"]))
    assert kept == sorted(case["kept"])
