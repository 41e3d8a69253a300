"""kustomize builds of directory trees (helmsim.kustomize.build) against the real kustomize:
each tree of data/kustomize_trees/cases.yaml was built by `kubectl kustomize` (kustomize
v5.5.0; regenerate with data/kustomize_trees/generate.py), and helmsim's build must give the
same objects, or the same error text (the temporary directory written ``<tmp>``). kustomize's
output is sorted in its legacy order, which kustomize-controller's apply does not keep, so the
objects are compared by id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from helmsim.kustomize import KustomizeError
from helmsim.kustomize.build import build

DATA = yaml.safe_load((Path(__file__).parent / "data" / "kustomize_trees" / "cases.yaml").read_text())


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name"))


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_tree_builds_as_kustomize_builds_it(case: dict[str, Any], tmp_path: Path) -> None:
    root = tmp_path.resolve()
    for name, text in case["files"].items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    expected = case["expected"]
    if "error" in expected:
        with pytest.raises(KustomizeError) as err:
            build(root / case["build"])
        assert str(err.value).replace(str(root), "<tmp>") == expected["error"]
        return
    got = sorted((d.obj for d in build(root / case["build"]).documents), key=_key)
    assert got == sorted(expected["objects"], key=_key)


def test_every_case_was_generated_by_kustomize() -> None:
    assert "Kustomize Version: v5" in DATA["generatedBy"]
    assert len(DATA["cases"]) >= 10
