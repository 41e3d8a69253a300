"""The top of the HTML report in a real headless Chromium (issue 18 item 8): the verdict and,
for check, a release × profile table linking to the timelines and findings, above the fold at
1000 px and 380 px wide; fixes with their re-simulation; pod lanes labelled per Job; no lane
label or table cell clipped. Screenshots go to the test's tmp directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from html_cdp import Browser
from html_runs import FAILS_VALUES, SEED1, SEED2
from typer.testing import CliRunner

from helmsim.cli import app

MAIN = "agent-platform/agent-platform-connectivity"
WIDTHS = [(1000, 700), (380, 740)]


def _cli_html(tmp: Path, name: str, *args: str) -> Path:
    out = tmp / f"{name}.html"
    result = CliRunner().invoke(app, [*args, "--format", "html", "--output", str(out)])
    assert result.exit_code in (0, 1), result.output
    return out


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("html-overview")
    check = _cli_html(
        tmp, "check-seed2", "check", str(SEED2), "--helmrelease", str(SEED2 / "flux"), "-p", "kind", "-p", "cilium-always"
    )
    simulate = _cli_html(
        tmp, "simulate-seed1", "simulate", str(SEED1), "--helmrelease", str(SEED1 / "flux"),
        "-p", "cilium-always", "-f", str(FAILS_VALUES),
    )
    return {"check": check, "simulate": simulate}


def _open(browser: Browser, path: Path, width: int, height: int) -> None:
    browser.viewport(width, height)
    browser.open(path.as_uri())
    assert browser.eval("document.documentElement.getAttribute('data-js')") == "ready"


def _verdict_box(browser: Browser) -> dict:
    return browser.eval(
        "(() => { const v = document.querySelector('.overview .verdict'); const r = v.getBoundingClientRect();"
        " return {top: r.top, bottom: r.bottom, h: innerHeight, text: v.textContent}; })()"
    )


@pytest.mark.parametrize(("width", "height"), WIDTHS)
@pytest.mark.parametrize("kind", ["check", "simulate"])
def test_the_verdict_is_above_the_fold(
    browser: Browser, pages: dict[str, Path], kind: str, width: int, height: int, tmp_path: Path
) -> None:
    _open(browser, pages[kind], width, height)
    box = _verdict_box(browser)
    assert 0 <= box["top"] and box["bottom"] <= box["h"], box
    assert box["text"].strip().startswith("✕ FAIL")
    shot = tmp_path / f"{kind}-{width}.png"
    browser.screenshot(shot, full_page=False)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5_000
    page = browser.eval("({page: document.scrollingElement.scrollWidth, view: innerWidth})")
    assert page["page"] <= page["view"] + 1  # the table scrolls inside its box, not the page


def test_check_summary_links_every_release_and_profile_to_its_timeline(browser: Browser, pages: dict[str, Path]) -> None:
    _open(browser, pages["check"], 1000, 700)
    table = browser.eval(
        "(() => { const t = document.querySelector('.overview table.matrix');"
        " const heads = [...t.querySelectorAll('thead th')].map(h => h.textContent);"
        " const rows = [...t.querySelectorAll('tbody tr')].map(r => ({name: r.querySelector('th').textContent,"
        "  cells: [...r.querySelectorAll('td')].map(c => c.textContent.trim()),"
        "  links: [...r.querySelectorAll('td a')].map(a => a.getAttribute('href'))}));"
        " const missing = [...t.querySelectorAll('a')].map(a => a.getAttribute('href'))"
        "  .filter(h => !document.getElementById(h.slice(1)));"
        " return {heads, rows, missing}; })()"
    )
    assert table["heads"] == ["HelmRelease", "kind", "cilium-always"]
    assert table["missing"] == []  # every link lands on a timeline or a finding
    main = next(r for r in table["rows"] if r["name"] == MAIN)
    assert main["cells"] == ["✕ StalledHS102", "✕ StalledHS102"]
    assert any(h.startswith("#tl-r0-") for h in main["links"]) and any(h.startswith("#finding-") for h in main["links"])
    # the dependents are listed under the root cause, not as findings of their own
    titles = browser.eval("[...document.querySelectorAll('.finding strong')].map(s => s.textContent)")
    assert titles and all("HS102" in t for t in titles)
    fix = browser.eval("document.querySelector('.finding .fixes li').textContent")
    assert fix.startswith("fix: apply PersistentVolumeClaim/model-serving/hf-cache from a post-install")
    assert "not enough under cilium-always: HS102 resolved, but the release still ends Stalled: HS113" in fix


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_pod_lanes_are_labelled_per_job_and_no_label_is_clipped(
    browser: Browser, pages: dict[str, Path], width: int, height: int
) -> None:
    _open(browser, pages["simulate"], width, height)
    notes = browser.eval(
        "[...document.querySelectorAll('li.lane[data-kind=\"Pod\"] .note-tag')].map(n => n.textContent)"
    )
    migrate = [n for n in notes if n.startswith("agent-manager-migrate-")]
    assert migrate and migrate[0].endswith(" pod 1/" + migrate[0].rsplit("/", 1)[1])
    assert len({n.rsplit(" pod ", 1)[0] for n in migrate}) == 1
    clipped = browser.eval(
        "[...document.querySelectorAll('.lane-label, .overview th, .overview td, .note-tag')]"
        ".filter(e => e.offsetParent !== null && (e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1))"
        ".map(e => e.textContent)"
    )
    assert clipped == []
