"""Masterminds/semver v3's own test tables (tests/conformance/data/semver/masterminds_semver.yaml),
run against helmsim.semver: the range semantics Helm and Flux's source-controller use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from helmsim.semver import SemverError, _parse_comparator, parse_constraint, parse_flux_version, parse_version

DATA: dict[str, Any] = yaml.safe_load(
    (Path(__file__).parent / "data" / "semver" / "masterminds_semver.yaml").read_text(encoding="utf-8")
)


def _id(case: dict[str, Any]) -> str:
    return " ".join(repr(v) for v in case.values())


@pytest.mark.parametrize("case", DATA["single_constraint"], ids=_id)
def test_single_comparator(case: dict[str, Any]) -> None:
    # constraints_test.go TestConstraintCheck: the group allows prereleases when the constraint has one
    comp = _parse_comparator(case["constraint"])
    assert comp.check(parse_version(case["version"]), bool(comp.con.prerelease)) is case["check"]


@pytest.mark.parametrize("case", DATA["constraints_check"], ids=_id)
def test_constraints_check(case: dict[str, Any]) -> None:
    assert parse_constraint(case["constraint"]).check(parse_version(case["version"])) is case["check"]


@pytest.mark.parametrize("case", DATA["new_constraint"], ids=_id)
def test_new_constraint(case: dict[str, Any]) -> None:
    if case["error"]:
        with pytest.raises(SemverError):
            parse_constraint(case["input"])
        return
    c = parse_constraint(case["input"])
    assert (len(c.groups), len(c.groups[0])) == (case["ors"], case["count"])


@pytest.mark.parametrize("case", DATA["new_version"], ids=_id)
def test_new_version(case: dict[str, Any]) -> None:
    if case["error"]:
        with pytest.raises(SemverError):
            parse_version(case["version"])
    else:
        parse_version(case["version"])


@pytest.mark.parametrize("case", DATA["compare"], ids=_id)
def test_compare(case: dict[str, Any]) -> None:
    assert parse_version(case["v1"]).compare(parse_version(case["v2"])) == case["expected"]


def test_flux_versions_need_three_parts() -> None:
    # fluxcd/pkg version/version.go ParseVersion: "1.2" is skipped by source-controller
    with pytest.raises(SemverError):
        parse_flux_version("1.2")
    assert str(parse_flux_version("v2025.02.03-rc.1")) == "2025.2.3-rc.1"


@given(st.text(max_size=40))
def test_readers_only_raise_semver_errors(text: str) -> None:
    for reader in (parse_version, parse_constraint):
        try:
            reader(text)
        except SemverError:
            pass
