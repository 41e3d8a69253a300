"""Root causes that read the same but for their object are folded in the text of ``check`` and
``simulate`` (helmsim.report.verdict.fold_alike): the first in full, the others by name. The
1,000-object release of benchmarks/core_figures.py printed 195 six-line HS115 blocks that
differed only in the Deployment's name (3,696 lines for ``check``); JSON, SARIF and JUnit keep
one finding per object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helmsim.cli import app
from helmsim.diagnose.model import Finding, Fix, Location, Occurrence, Severity
from helmsim.report.verdict import ALIKE_SHOWN, _name_mask, fold_alike

runner = CliRunner()

CHART = Path(__file__).resolve().parents[1] / "fixtures" / "charts" / "alike-deployments"
"""Four Deployments of one template whose pods no node can take (kind's node has no
``disk: ssd``): three with 2 replicas, ``solo`` with 1."""


@pytest.fixture
def chart() -> Path:
    return CHART


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    assert "Traceback" not in result.output
    return result.exit_code, " ".join(result.stdout.split())


def test_check_folds_the_deployments_that_fail_the_same_way(chart: Path) -> None:
    code, flat = _run("check", str(chart), "-p", "kind")
    assert code == 1
    # two HS115 blocks: the three 2-replica Deployments, and solo ("1 pod", not "2 pods")
    assert flat.count("HS115 pod-unschedulable error") == 2
    assert "cause Deployment/default/app-1: 2 pods never scheduled" in flat
    assert "also 2 more objects the same: Deployment/default/app-10, Deployment/default/app-2 " in flat
    assert "cause Deployment/default/solo: 1 pod never scheduled" in flat
    # the verdict still counts every root cause
    assert flat.endswith("FAIL 8 errors (fail on: error)")


def test_check_json_keeps_one_finding_per_object(chart: Path, tmp_path: Path) -> None:
    out = tmp_path / "check.json"
    code, _ = _run("check", str(chart), "-p", "kind", "--format", "json", "-o", str(out))
    assert code == 1
    found = json.loads(out.read_text())["findings"]
    unschedulable = sorted(f["object"] for f in found if f["rule"] == "HS115")
    assert unschedulable == [f"Deployment/default/{n}" for n in ("app-1", "app-10", "app-2", "solo")]


def test_simulate_folds_the_same_way(chart: Path) -> None:
    code, flat = _run("simulate", str(chart), "-p", "kind")
    assert code == 1
    assert flat.count("cause HS115:") == 2
    assert "also 2 more objects the same: Deployment/default/app-10, Deployment/default/app-2 " in flat


def test_simulate_points_at_check_for_the_full_list(chart: Path, tmp_path: Path) -> None:
    """``simulate --format json`` has no findings: past the names shown, its text points at
    ``check``'s JSON for the rest."""
    values = tmp_path / "many.yaml"
    # merged with the chart's app-1, app-2, app-10 and solo: 14 Deployments of 2 replicas
    values.write_text("apps: {solo: 2, " + ", ".join(f"app-{i}: 2" for i in range(13)) + "}\n")
    code, flat = _run("simulate", str(chart), "-p", "kind", "-f", str(values))
    assert code == 1
    assert flat.count("cause HS115:") == 1
    assert "also 13 more objects the same: " in flat
    assert f" and {13 - ALIKE_SHOWN} more (helmsim check --format json lists each)" in flat


def _finding(obj: str, message: str, fix: str = "run fewer pods, or on more nodes") -> Finding:
    occ = Occurrence("kind", Severity.error, "Stalled", message, [])
    return Finding("HS115", "pod-unschedulable", "t/t", Location(obj, "templates/a.yaml", 4), [occ], [Fix(fix)])


def test_a_fold_names_the_first_others_and_counts_the_rest() -> None:
    n = ALIKE_SHOWN + 3
    findings = [_finding(f"Deployment/t/app-{i}", f"Deployment/t/app-{i}: 2 pods never scheduled (app-{i}-7d9f-x2kq)") for i in range(n)]
    (fold,) = fold_alike([(f, []) for f in findings])
    assert fold.first is findings[0]
    assert fold.others == findings[1:]
    also = fold.all_rows()[-1]
    assert also.label == "also"
    assert isinstance(also.text, str)
    assert also.text.startswith(f"{n - 1} more objects the same: Deployment/t/app-1, Deployment/t/app-2,")
    assert also.text.endswith(f", Deployment/t/app-{ALIKE_SHOWN} and 2 more (--format json lists each)")
    assert f"app-{ALIKE_SHOWN + 1}" not in also.text


def test_findings_that_differ_beyond_their_name_stay_apart() -> None:
    a = _finding("Deployment/t/a", "Deployment/t/a: 2 pods never scheduled")
    b = _finding("Deployment/t/b", "Deployment/t/b: 1 pod never scheduled")
    c = _finding("Deployment/t/c", "Deployment/t/c: 2 pods never scheduled", fix="fix the nodeSelector")
    d = _finding("Deployment/t/d", "Deployment/t/d: 2 pods never scheduled")
    folds = fold_alike([(f, []) for f in (a, b, c, d)])
    assert [(f.first, f.others) for f in folds] == [(a, [d]), (b, []), (c, [])]
    assert [r.label for r in folds[1].all_rows()] == ["cause", "fix"]  # no "also" row alone


def test_the_mask_takes_the_name_and_its_generated_names_only() -> None:
    mask = _name_mask("Deployment/t/app-1")
    assert mask("Deployment/t/app-1 pods app-1-845656645f-gzjw2, app-1") == "\x00 pods \x00, \x00"
    assert mask("app-10 myapp-1 app-1.example") == "app-10 myapp-1 app-1.example"


def test_check_html_cites_every_lane_of_a_fold_from_one_finding(chart: Path, tmp_path: Path) -> None:
    """The page lists a fold once, citing each object's lane (the 1,000-object check's page went
    from 1,588 findings and 32 MB to 20 and 11 MB): every Deployment stays linked."""
    import re

    out = tmp_path / "check.html"
    code, _ = _run("check", str(chart), "-p", "kind", "--format", "html", "-o", str(out))
    assert code == 1
    page = out.read_text()
    items = re.findall(r'<li class="finding[^"]*" id="finding-F\d+">(.*?)</li>\s*(?=<li class="finding|</ol>)', page, re.S)
    unschedulable = [i for i in items if re.search(r"<strong>F\d+ · error: HS115 ", i)]
    assert len(unschedulable) == 2
    first = next(i for i in unschedulable if "Deployment/default/app-1:" in i)
    assert "The same for 2 more objects, each cited below." in first
    cites = re.search(r'<p class="cites">Lanes: (.*?)</p>', first, re.S)
    assert cites is not None
    linked = re.findall(r'data-focus="lane-r0-deployment-default-([a-z0-9-]+)"', cites.group(1))
    assert linked == ["app-1", "app-10", "app-2"]
