"""`.helmsim.yaml`: discovery upward, validation with file and line, severities and ignores."""

from __future__ import annotations

from pathlib import Path

import pytest

from helmsim.config import Config, config_file, config_for, describe, discover, load_config
from helmsim.errors import InputError


def test_discovered_from_the_chart_upward(tmp_path: Path) -> None:
    chart = tmp_path / "a" / "b" / "chart"
    chart.mkdir(parents=True)
    (tmp_path / "a" / ".git").mkdir()
    assert discover(chart) is None
    (tmp_path / "a" / ".helmsim.yaml").write_text("profiles: [kind]\n")
    assert discover(chart) == (tmp_path / "a" / ".helmsim.yaml").resolve()
    (chart / ".helmsim.yaml").write_text("profiles: [eks-gp3]\n")
    assert config_for(str(chart)).profiles == ("eks-gp3",)  # the nearest wins


@pytest.mark.parametrize("marker", ["dir", "file"])
def test_discovery_stops_at_the_repository_root(tmp_path: Path, marker: str) -> None:
    """Issue 12: a .helmsim.yaml in /tmp above a repository changed check's verdict."""
    (tmp_path / ".helmsim.yaml").write_text("failOn: never\n")  # planted above the repository
    repo = tmp_path / "repo"
    chart = repo / "charts" / "app"
    chart.mkdir(parents=True)
    if marker == "dir":
        (repo / ".git").mkdir()
    else:  # a worktree or submodule: .git is a file naming the git dir
        (repo / ".git").write_text("gitdir: /elsewhere/.git/worktrees/repo\n")
    assert discover(chart) is None and discover(repo / "charts" / "app" / "Chart.yaml") is None
    assert config_for(str(chart)).fail_on is None
    (repo / ".helmsim.yaml").write_text("profiles: [kind]\n")
    assert discover(chart) == (repo / ".helmsim.yaml").resolve()  # the root itself is searched


def test_outside_a_repository_discovery_stops_at_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / ".helmsim.yaml").write_text("failOn: never\n")
    project = tmp_path / "project"
    chart = project / "charts" / "app"
    chart.mkdir(parents=True)
    assert discover(chart, cwd=project) is None  # above the current directory: never
    assert discover(chart, cwd=tmp_path) == (tmp_path / ".helmsim.yaml").resolve()
    (project / ".helmsim.yaml").write_text("profiles: [kind]\n")
    assert discover(chart, cwd=project) == (project / ".helmsim.yaml").resolve()
    # a chart outside the current directory: only its own directory is searched
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    assert discover(chart, cwd=elsewhere) is None
    (chart / ".helmsim.yaml").write_text("profiles: [eks-gp3]\n")
    assert discover(chart, cwd=elsewhere) == (chart / ".helmsim.yaml").resolve()


def test_reports_name_the_config_plainly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    assert describe(None) == "config: no config file" and config_file(None) is None
    assert describe(str(tmp_path / "sub" / ".helmsim.yaml")) == "config: sub/.helmsim.yaml"
    assert describe("/elsewhere/.helmsim.yaml") == "config: /elsewhere/.helmsim.yaml"


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
