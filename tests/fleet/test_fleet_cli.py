"""`helmsim fleet` on the local pool: each rehearsal is exactly `helmsim check` of it, the merged
report does not depend on the workers, and the whole matrix comes out as text, JSON, SARIF and
JUnit."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from junitparser import JUnitXml
from fleet_helpers import RULES, run, write_matrix

ROOT = Path(__file__).resolve().parents[2]
SARIF_SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))

REHEARSALS = ["race [(chart values)]", "race [values/slow-values.yaml]", "claim [(chart values)]"]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fleet")
    write_matrix(tmp)
    return tmp


@pytest.fixture(scope="module")
def local_json(matrix: Path) -> str:
    code, out, _ = run(["fleet", "--format", "json", "--workers", "2"], matrix)
    assert code == 1  # HS101 and HS102 are errors
    return out


def test_each_rehearsal_is_what_check_reports(matrix: Path, local_json: str) -> None:
    doc = json.loads(local_json)
    assert doc["fleet"] == {"profiles": ["kind", "coin-flip-policy"], "rehearsals": 3, "runs": 4, "seed": 1}
    assert [r["rehearsal"] for r in doc["rehearsals"]] == REHEARSALS
    code, out, _ = run(
        ["check", "charts/HS101", "-f", "values/slow-values.yaml", "-p", "kind",
         "-p", "coin.yaml", "--runs", "4", "--seed", "1", "--format", "json"],
        matrix,
    )
    assert code == 1
    alone = json.loads(out)
    assert alone["configFile"] == doc["configFile"] == ".helmsim.yaml"  # named once, at the top
    for key in ("schemaVersion", "tool", "failOn", "configFile"):
        alone.pop(key)
    cell = doc["rehearsals"][1]
    assert {k: v for k, v in cell.items() if k not in ("rehearsal", "name", "target", "values")} == alone
    assert cell["monteCarlo"]["runs"] == 4
    assert doc["summary"]["failingRehearsals"] == 3 and doc["passed"] is False


def test_the_report_does_not_depend_on_the_workers(matrix: Path, local_json: str) -> None:
    code, out, _ = run(["fleet", "--format", "json", "--workers", "1"], matrix)
    assert code == 1
    assert out == local_json


def test_sarif_and_junit_cover_the_whole_matrix(matrix: Path) -> None:
    code, out, _ = run(["fleet", "--format", "sarif", "--runs", "0"], matrix)
    assert code == 1
    log = json.loads(out)
    jsonschema.validate(log, SARIF_SCHEMA)
    results = log["runs"][0]["results"]
    assert {r["properties"]["rehearsal"] for r in results} == set(REHEARSALS)
    prints = [r["partialFingerprints"]["helmsimFinding/v1"] for r in results]
    assert len(prints) == len(set(prints))  # the same object under two values files: two findings
    code, out, _ = run(["fleet", "--format", "junit", "--runs", "0", "-o", "fleet.xml"], matrix)
    assert code == 1
    xml = JUnitXml.fromfile(str(matrix / "fleet.xml"))
    suites = [s.name for s in xml]
    assert suites == [f"{r} / {p}" for r in REHEARSALS for p in ("kind", "coin-flip-policy")]
    assert xml.failures >= 3


def test_text_has_one_table_for_the_matrix(matrix: Path) -> None:
    code, out, err = run(["fleet", "--runs", "0", "-p", "kind"], matrix)
    assert code == 1
    assert out.startswith("helmsim fleet: 3 rehearsals × 1 profiles\n")
    table = out.split("\n\n")[1]
    assert "REHEARSAL" in table and "claim [(chart values)]" in table and "default/hs102" in table
    assert "Stalled HS102" in table
    assert "FAIL " in out.splitlines()[-1] and "in 3 of 3 rehearsals" in out
    assert err == ""  # no progress when stderr is not a terminal


def test_targets_and_value_globs_from_flags(tmp_path: Path) -> None:
    chart = tmp_path / "chart"
    import shutil

    shutil.copytree(RULES / "HS102" / "failing", chart)
    (chart / "ci").mkdir()
    (chart / "ci" / "a-values.yaml").write_text("x: 1\n", encoding="utf-8")
    (chart / "ci" / "b-values.yaml").write_text("x: 2\n", encoding="utf-8")
    code, out, _ = run(["fleet", "chart", "-f", "ci/*-values.yaml", "-p", "kind", "--format", "json"], tmp_path)
    assert code == 1
    assert [r["rehearsal"] for r in json.loads(out)["rehearsals"]] == [
        "chart [chart/ci/a-values.yaml]",
        "chart [chart/ci/b-values.yaml]",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fleet", "--backend", "mars"], "--backend 'mars': expected local or ray"),
        (["fleet", "--ray-address", "auto"], "--ray-address needs --backend ray"),
        (["fleet", "-f", "ci/*.yaml"], "--values GLOB needs TARGETs"),
        (["fleet", "--horizon", "0s"], "must be longer than 0s"),
        (["fleet", "--ray-upload"], "--ray-upload needs --backend ray"),
        (["fleet", str(RULES / "HS101" / "failing"), "--backend", "ray", "--ray-upload"], "is outside it"),
    ],
)
def test_bad_flags_are_one_line(matrix: Path, args: list[str], message: str) -> None:
    code, out, err = run(args, matrix)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_no_matrix_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / ".helmsim.yaml").write_text("profiles: [kind]\n", encoding="utf-8")
    code, _, err = run(["fleet"], tmp_path)
    assert code == 2 and "no `fleet:` matrix in this file" in err
