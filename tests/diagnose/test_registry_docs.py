"""Every rule has a stable id, a slug, a docs page with a failing and a fixed example, and fixtures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helmsim.diagnose.registry import all_rules, lookup

ROOT = Path(__file__).resolve().parents[2]
RULES = all_rules()


def test_ids_and_slugs_are_unique_and_well_formed() -> None:
    ids = [r.id for r in RULES]
    slugs = [r.slug for r in RULES]
    assert len(set(ids)) == len(ids) and len(set(slugs)) == len(slugs)
    assert all(re.fullmatch(r"HS1\d\d", i) for i in ids)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", s) for s in slugs)
    # the rules the issue names are all there
    assert {
        "HS101",
        "HS102",
        "HS103",
        "HS104",
        "HS105",
        "HS106",
        "HS107",
        "HS108",
        "HS109",
        "HS110",
        "HS111",
    } <= set(ids)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_has_docs_page_and_fixtures(rule) -> None:
    page = ROOT / rule.doc
    assert page.is_file(), f"{rule.doc} missing"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# {rule.id} {rule.slug}\n")
    for section in (
        "## Why it matters",
        "## How helmsim finds it",
        "## Minimal failing example",
        "## The fix",
    ):
        assert section in text
    fixtures = ROOT / "tests" / "fixtures" / "rules" / rule.id
    assert (fixtures / "failing" / "Chart.yaml").is_file() and (
        fixtures / "fixed" / "Chart.yaml"
    ).is_file()
    assert (fixtures / "case.yaml").is_file()
    # the page shows the fixture's templates as they are
    for tpl in sorted((fixtures / "failing" / "templates").glob("*.yaml")):
        assert tpl.read_text(encoding="utf-8").rstrip() in text
    assert f"[{rule.id}](rules/{rule.id}.md)" in (ROOT / "docs" / "check.md").read_text(
        encoding="utf-8"
    )


def test_lookup_by_id_or_slug() -> None:
    assert lookup("hs102") is lookup("unconsumed-wffc-claim") is not None
    assert lookup("HS999") is None
