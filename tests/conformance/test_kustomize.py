"""helmsim.kustomize against the real kustomize: each case of
tests/conformance/data/kustomize/cases.yaml was run through `kubectl kustomize` (kustomize
v5.5.0, see its generatedBy) by generate.py; patches, images and errors must come out the same.
Objects are compared by id (kustomize's legacy sort reorders them; Helm re-sorts them anyway),
fields and list order exactly."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from helmsim.kustomize import KustomizeError, images, patches, smp
from helmsim.kustomize.select import Selector

DATA = yaml.safe_load((Path(__file__).parent / "data/kustomize/cases.yaml").read_text())


def _schema(api_version: str, kind: str) -> smp.Schema | None:
    return smp.schema_for("1.32", api_version, kind)


def _ours(resources: list[dict[str, Any]], kustomization: dict[str, Any]) -> dict[str, Any]:
    objects = copy.deepcopy(resources)
    try:
        for entry in kustomization.get("patches") or ():
            target = Selector.from_dict(entry["target"]) if entry.get("target") else None
            objects = patches.apply(objects, patches.Patch(entry["patch"], target), _schema)
        wanted = [images.Image.from_dict(i) for i in kustomization.get("images") or ()]
        for obj in objects:
            images.apply(obj, wanted)
    except KustomizeError as err:
        return {"error": str(err)}
    for obj in objects:  # the build's RemoveBuildAnnotations drops an emptied annotations map
        if obj.get("metadata", {}).get("annotations") == {}:
            del obj["metadata"]["annotations"]
    return {"objects": objects}


def _by_id(result: dict[str, Any]) -> dict[str, Any]:
    if "error" in result:
        return result
    return {
        "objects": {
            (o["kind"], (o.get("metadata") or {}).get("namespace"), o["metadata"]["name"]): o
            for o in result["objects"]
        }
    }


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_case_matches_kustomize(case: dict[str, Any]) -> None:
    assert _by_id(_ours(DATA["resources"], case["kustomization"])) == _by_id(case["expected"])


def test_every_case_was_generated_by_kustomize() -> None:
    assert "Kustomize Version: v5" in DATA["generatedBy"]
    assert sum("error" in c["expected"] for c in DATA["cases"]) >= 10
