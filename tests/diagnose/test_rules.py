"""Every rule reports its failing fixture (with the documented severity) and not its fixed one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from helmsim.release_inputs import build_inputs
from helmsim.cluster.profile import load_profile
from helmsim.diagnose.check import CheckOptions, run_check
from helmsim.diagnose.model import Severity

RULES_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "rules"
CASES = sorted(p.name for p in RULES_DIR.iterdir() if (p / "case.yaml").is_file())


def _check(rule_dir: Path, variant: str, verify: bool = False):
    case = yaml.safe_load((rule_dir / "case.yaml").read_text())
    chart = rule_dir / variant
    flux = chart / case.get("helmrelease", "flux")
    prev = case.get("upgradeFrom")
    releases = build_inputs(
        str(chart),
        values=[],
        sets=[],
        helmrelease=[str(flux)] if flux.is_dir() else [],
        charts=[],
        release_name=None,
        namespace="default",
        upgrade_from=str(rule_dir / prev) if prev else None,
        upgrade_from_values=[],
        upgrade_from_set=[],
    )
    # a built-in profile by name, or a profile file beside case.yaml
    profiles = [load_profile(str(rule_dir / p) if p.endswith(".yaml") else p) for p in case["profiles"]]
    return case, run_check(releases, profiles, options=CheckOptions(verify_fixes=verify))


@pytest.mark.parametrize("rule_id", CASES)
def test_failing_fixture_is_reported(rule_id: str) -> None:
    case, report = _check(RULES_DIR / rule_id, "failing")
    names = [load_profile(str(RULES_DIR / rule_id / p) if p.endswith(".yaml") else p).name for p in case["profiles"]]
    hits = [f for f in report.findings if f.rule == rule_id]
    assert hits, f"{rule_id} not reported; got {[f.rule for f in report.findings]}"
    finding = hits[0]
    assert finding.severity is Severity.parse(case["severity"])
    assert finding.profiles == names
    # every finding names its template (or HelmRelease) file and a causal chain with times
    assert finding.location.file and finding.location.line >= 1
    assert finding.worst.chain, "a finding without a causal chain"
    times = [s.time for s in finding.worst.chain]
    assert times == sorted(times)


@pytest.mark.parametrize("rule_id", CASES)
def test_fixed_fixture_is_not_reported(rule_id: str) -> None:
    _case, report = _check(RULES_DIR / rule_id, "fixed")
    assert [f for f in report.findings if f.rule == rule_id] == []
