"""`helmsim check --format html`: one timeline per profile with the findings linked to lanes."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from helmsim.cli import app

SEED2 = Path(__file__).resolve().parents[2] / "examples" / "seed2-hf-cache"


def test_check_html_shows_each_profile_and_the_wffc_finding(tmp_path: Path) -> None:
    out = tmp_path / "check.html"
    result = CliRunner().invoke(
        app,
        ["check", str(SEED2), "--helmrelease", str(SEED2 / "flux"), "-p", "kind", "-p", "eks-gp3",
         "--no-verify", "--format", "html", "--output", str(out)],
    )
    assert result.exit_code == 1, result.stderr  # the WaitForFirstConsumer claim is an error
    html = out.read_text()
    assert "Profile <code>kind</code>" in html and "Profile <code>eks-gp3</code>" in html
    assert "HS102" in html and "hf-cache" in html
    assert "http://" not in html and "https://" not in html  # self-contained: nothing fetched


def test_check_html_needs_an_output_file() -> None:
    result = CliRunner().invoke(app, ["check", str(SEED2), "-p", "kind", "--format", "html"])
    assert result.exit_code == 2 and "--output" in result.stderr
