"""`.helmsim.yaml`: discovery upward, validation with file and line, severities and ignores."""

from __future__ import annotations

from pathlib import Path

import pytest

from helmsim.config import Config, config_for, discover, load_config
from helmsim.errors import InputError


def test_discovered_from_the_chart_upward(tmp_path: Path) -> None:
    chart = tmp_path / "a" / "b" / "chart"
    chart.mkdir(parents=True)
    assert discover(chart) is None
    (tmp_path / "a" / ".helmsim.yaml").write_text("profiles: [kind]\n")
    assert discover(chart) == (tmp_path / "a" / ".helmsim.yaml").resolve()
    (chart / ".helmsim.yaml").write_text("profiles: [eks-gp3]\n")
    assert config_for(str(chart)).profiles == ("eks-gp3",)  # the nearest wins


def test_empty_file_is_the_default(tmp_path: Path) -> None:
    f = tmp_path / ".helmsim.yaml"
    f.write_text("")
    assert load_config(f).model_dump(exclude={"source"}) == Config().model_dump(exclude={"source"})


def test_severities_and_ignores(tmp_path: Path) -> None:
    f = tmp_path / ".helmsim.yaml"
    f.write_text(
        "rules:\n  HS112: off\n  unconsumed-wffc-claim: warning\n"
        "ignore:\n  - rule: HS103\n    object: Job/kagent/*\n    reason: migration runs elsewhere\n"
    )
    cfg = load_config(f)
    assert cfg.severity_for("HS112", "policy-propagation-race") == "off"  # YAML's bare off
    assert cfg.severity_for("HS102", "unconsumed-wffc-claim") == "warning"
    assert (
        cfg.ignored("HS103", "failed-job-in-wait", "Job/kagent/migrate", "ns/r")
        == "migration runs elsewhere"
    )
    assert cfg.ignored("HS103", "failed-job-in-wait", "Job/other/migrate", "ns/r") is None
    assert cfg.ignored("HS101", "workload-before-policy", "Job/kagent/migrate", "ns/r") is None


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("profiles: [kind]\nrule: {}\n", 2, "rule: Extra inputs are not permitted"),
        ("ignore:\n  - rule: HS101\n    reason: ''\n", 3, "ignore[0].reason"),
        ("rules:\n  HS101: loud\n", 2, "rules.HS101"),
        ("- a\n- b\n", 1, "must be a mapping"),
        ("profiles: [kind\n", 2, "invalid YAML"),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    f = tmp_path / ".helmsim.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        load_config(f)
    assert err.value.file == str(f) and err.value.line == line
    assert message in err.value.message
