"""Helm's own ordering tests, ported as data (tests/conformance/data/helm/*.yaml).

Each data file names the upstream repo, path and tag it was ported from; derived cases name the
code they were read from.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from helmsim.helm.order import (
    INSTALL_ORDER_V3,
    INSTALL_ORDER_V4,
    UNINSTALL_ORDER_V3,
    UNINSTALL_ORDER_V4,
    hook_order,
    install_order,
    kind_groups,
    manifest_order,
    sort_by_kind,
)
from helmsim.manifests import Resource, parse_documents

DATA = Path(__file__).parent / "data" / "helm"


def _load(name: str) -> Any:
    return yaml.safe_load((DATA / name).read_text(encoding="utf-8"))


def _ref(res: Resource, expected: str) -> str:
    """``Kind/name``, or ``Kind/namespace/name`` when the expectation names a namespace."""
    if expected.count("/") == 2:
        return f"{res.kind}/{res.namespace}/{res.name}"
    return f"{res.kind}/{res.name}"


def _parse(files: list[dict[str, str]]) -> list[Resource]:
    return parse_documents([(f["path"], f["content"]) for f in files]).resources


# --- kind_sorter_test.go (v4 and v3) -----------------------------------------------------------

_ORDERS = {
    (4, "install"): INSTALL_ORDER_V4,
    (4, "uninstall"): UNINSTALL_ORDER_V4,
    (3, "install"): INSTALL_ORDER_V3,
    (3, "uninstall"): UNINSTALL_ORDER_V3,
}


def _kind_sorter_cases() -> list[Any]:
    params = []
    for fname in ("kind_sorter_v4.yaml", "kind_sorter_v3.yaml"):
        data = _load(fname)
        for table in data["tables"]:
            for case in table["cases"]:
                params.append(
                    pytest.param(
                        data["helm"], table["items"], case,
                        id=f"v{data['helm']}-{table['test']}-{case['description']}",
                    )
                )
    return params


@pytest.mark.parametrize(("helm", "items", "case"), _kind_sorter_cases())
def test_kind_sorter(helm: int, items: list[dict[str, str]], case: dict[str, str]) -> None:
    order = _ORDERS[(helm, case["order"])]
    original = list(items)
    got = "".join(i["name"] for i in sort_by_kind(items, lambda i: i["kind"], order))
    assert got == case["expected"]
    assert items == original, "sort_by_kind must not reorder its input"
    # Upstream sorts in place, so the uninstall case sees the install-sorted slice.
    pre_sorted = sort_by_kind(items, lambda i: i["kind"], _ORDERS[(helm, "install")])
    assert "".join(i["name"] for i in sort_by_kind(pre_sorted, lambda i: i["kind"], order)) == case["expected"]


def test_order_lists_are_upstreams() -> None:
    """The lists, as the reference (helm-lifecycle.md §1.1) and the ported test expect them."""
    assert len(INSTALL_ORDER_V3) == len(UNINSTALL_ORDER_V3) == 36
    assert INSTALL_ORDER_V4[-2:] == ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    assert UNINSTALL_ORDER_V4[:3] == ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService")
    assert UNINSTALL_ORDER_V3[3] == "Service"
    assert install_order(3) is INSTALL_ORDER_V3 and install_order(4) is INSTALL_ORDER_V4


# --- manifest_sorter_test.go TestSortManifests ---------------------------------------------------

_MS = _load("manifest_sorter.yaml")


def _manifest_sorter_resources(seed: int) -> tuple[list[Resource], list[str]]:
    files = [f for f in _MS["files"] if not f.get("partial")]
    random.Random(seed).shuffle(files)  # Go map order: the result must not depend on it
    result = parse_documents([(f["path"], f["content"]) for f in files])
    dropped = [str(src) for src, _ in result.dropped]
    return result.resources, dropped


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sort_manifests_generic(seed: int) -> None:
    resources, _ = _manifest_sorter_resources(seed)
    generic = manifest_order([r for r in resources if not r.is_hook])
    assert [r.name for r in generic] == _MS["expected"]["generic"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sort_manifests_hooks_and_events(seed: int) -> None:
    resources, dropped = _manifest_sorter_resources(seed)
    hooks = {r.name: list(r.hook.events) for r in resources if r.hook is not None}
    assert hooks == _MS["expected"]["hooks"]
    names = {r.name for r in resources}
    for name in _MS["expected"]["dropped"]:
        assert name not in names
    assert len(dropped) == len(_MS["expected"]["dropped"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sort_manifests_stored_hook_order(seed: int) -> None:
    resources, _ = _manifest_sorter_resources(seed)
    stored = manifest_order([r for r in resources if r.is_hook])
    assert [r.name for r in stored] == _MS["expected"]["stored_hook_order"]


@pytest.mark.parametrize(("event", "expected"), list(_MS["expected"]["per_event"].items()))
def test_sort_manifests_hooks_per_event(event: str, expected: list[str]) -> None:
    resources, _ = _manifest_sorter_resources(0)
    assert [r.name for r in hook_order([r for r in resources if r.is_hook], event)] == expected


def test_empty_file_yields_nothing() -> None:
    """TestSortManifests "seven": a file with no content is skipped, not an error."""
    assert parse_documents([("seven", "")]).resources == []


# --- hook execution order (pkg/action/hooks.go) --------------------------------------------------

_HOOKS = _load("hook_order.yaml")


@pytest.mark.parametrize("case", _HOOKS["cases"], ids=[c["name"] for c in _HOOKS["cases"]])
def test_hook_order(case: dict[str, Any]) -> None:
    resources = _parse(case["files"])
    got = hook_order(resources, case["event"])
    assert len(got) == len(case["expected"]), [f"{r.kind}/{r.name}" for r in got]
    assert [_ref(r, e) for r, e in zip(got, case["expected"], strict=True)] == case["expected"]


def test_hook_order_ignores_input_order() -> None:
    """Hooks are re-sorted from their source, whatever order the caller passes them in."""
    case = next(c for c in _HOOKS["cases"] if c["name"].startswith("same weight, name and kind"))
    resources = _parse(case["files"])
    assert [r.namespace for r in hook_order(list(reversed(resources)), case["event"])] == ["a1", "z1", "z2"]


# --- manifest order over rendered files (derived) ------------------------------------------------

_MO = _load("manifest_order.yaml")


@pytest.mark.parametrize("case", _MO["cases"], ids=[c["name"] for c in _MO["cases"]])
def test_manifest_order(case: dict[str, Any]) -> None:
    resources = _parse(case["files"])
    ordered = resources if case.get("unsorted") else manifest_order(resources, install_order(case["helm"]))
    assert [f"{r.kind}/{r.name}" for r in ordered] == case["expected"]
    assert [kind for kind, _ in kind_groups(ordered)] == case["groups"]
