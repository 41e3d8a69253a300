"""The HTML timeline in a real headless Chromium (issue 9): it opens offline, lanes are laid out
in order, focusing or hovering a marker shows its message, keys move between markers, zoom and
filters work, a narrow window does not overflow; screenshots land in the session's tmp directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from html_cdp import Browser, dump_dom
from html_dom import lane, parse

from helmsim.report.html import render_html

JOB = "Job/kagent/agent-platform-connectivity-agent-manager-migrate"
CNP = "CiliumNetworkPolicy/kagent/agent-platform-connectivity-agent-manager-migrate"


@pytest.fixture(scope="module")
def race_file(race, artifacts: Path) -> Path:
    path = artifacts / "seed1-race.html"
    path.write_text(render_html(race), encoding="utf-8")
    return path


@pytest.fixture()
def page(browser: Browser, race_file: Path) -> Browser:
    browser.viewport(1400, 1000)
    browser.open(race_file.as_uri())
    assert browser.eval("document.documentElement.getAttribute('data-js')") == "ready"
    return browser


def _js(obj: str) -> str:
    return json.dumps(obj)


def _tip(page: Browser) -> dict:
    return page.eval(
        "(() => { const t = document.getElementById('tip'); const r = t.getBoundingClientRect();"
        " return {hidden: t.hidden, text: t.textContent, for: t.getAttribute('data-for'),"
        " left: r.left, right: r.right, top: r.top, bottom: r.bottom, w: innerWidth, h: innerHeight}; })()"
    )


def _active(page: Browser) -> dict:
    return page.eval(
        "(() => { const a = document.activeElement; return {id: a.id, cls: a.className,"
        " what: a.getAttribute('data-what'), obj: a.getAttribute('data-obj'), msg: a.getAttribute('data-msg'),"
        " described: a.getAttribute('aria-describedby')}; })()"
    )


def test_dump_dom_after_scripts_has_the_ordered_lanes(chromium: str, race_file: Path) -> None:
    dom = dump_dom(chromium, race_file.as_uri())
    doc = parse(dom)
    assert 'data-js="ready"' in dom  # the inline script ran without throwing
    job_i, _ = lane(doc, "Job", JOB)
    cnp_i, _ = lane(doc, "CiliumNetworkPolicy", CNP)
    assert job_i < cnp_i


def test_opens_offline_without_errors_and_lays_the_race_out_in_order(page: Browser) -> None:
    requests = [e["params"]["request"]["url"] for e in page.events if e["method"] == "Network.requestWillBeSent"]
    assert all(u.startswith("file://") for u in requests), requests
    assert not [e for e in page.events if e["method"] == "Runtime.exceptionThrown"]
    # the stylesheet ran under its CSP hash (h1 is 1.3rem, not the browser's 2em)
    assert page.eval("parseFloat(getComputedStyle(document.querySelector('h1')).fontSize)") < 24
    box = page.eval(
        "(() => { const q = s => document.querySelector(s).getBoundingClientRect();"
        f" const job = q('li.lane[data-obj^={_js(JOB)}]');"
        f" const cnp = q('li.lane[data-obj={_js(CNP)}]');"
        " const pod = document.querySelector('li.lane[data-kind=\"Pod\"][data-obj*=\"migrate\"]');"
        " const running = pod.querySelector('.span[data-state=\"Running\"]').getBoundingClientRect();"
        f" const effect = document.querySelector('li.lane[data-obj={_js(CNP)}] .span[data-state=\"in effect\"]').getBoundingClientRect();"
        " const denied = pod.querySelector('.span.st-denied').getBoundingClientRect();"
        " return {job: job.top, cnp: cnp.top, running: running.left, effect: effect.left,"
        "  deniedL: denied.left, deniedR: denied.right, deniedW: denied.width}; })()"
    )
    assert box["job"] < box["cnp"]  # the Job lane is drawn above its policy's lane
    assert box["running"] < box["effect"]  # the pod runs before the policy is in effect …
    assert box["deniedL"] <= box["effect"] <= box["deniedR"] + 1  # … so it is denied until then
    assert box["deniedW"] > 20  # visible at a glance, without zooming


def test_focusing_a_marker_with_the_keyboard_shows_its_message(page: Browser, artifacts: Path) -> None:
    for _ in range(80):  # Tab through the filters and zoom buttons to the first marker
        page.key("Tab")
        if "mk" in _active(page)["cls"].split():
            break
    first = _active(page)
    assert "mk" in first["cls"].split(), "Tab never reached a timeline marker"
    tip = _tip(page)
    assert not tip["hidden"] and tip["for"] == first["id"] and first["described"] == "tip"
    assert first["msg"].splitlines()[0] in tip["text"]
    # ↓ through the lanes to the migrate Job's pod, → along it to the denied SYN
    for _ in range(40):
        if "Pod/kagent/agent-platform-connectivity-agent-manager-migrate" in (_active(page)["obj"] or ""):
            break
        page.key("ArrowDown")
    for _ in range(10):
        if _active(page)["what"] == "connect-denied":
            break
        page.key("ArrowRight")
    active = _active(page)
    assert active["what"] == "connect-denied", active
    tip = _tip(page)
    assert "SYN 1 to kube-apiserver (10.96.0.1:443) dropped" in tip["text"] and tip["for"] == active["id"]
    assert 0 <= tip["left"] and tip["right"] <= tip["w"] and 0 <= tip["top"] and tip["bottom"] <= tip["h"]
    detail = page.eval("document.activeElement.closest('.timeline').querySelector('.detail').textContent")
    assert "SYN 1 to kube-apiserver" in detail
    page.screenshot(artifacts / "seed1-race-focus.png", full_page=False)
    page.key("Escape")
    assert _tip(page)["hidden"]


def test_hovering_a_marker_shows_its_message(page: Browser) -> None:
    where = page.eval(
        f"(() => {{ const m = document.querySelector('li.lane[data-obj={_js(CNP)}] .mk[data-what=\"policy-in-effect\"]');"
        " m.scrollIntoView({block: 'center'});"
        " return new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => {"
        "  const r = m.getBoundingClientRect(); done({x: r.left + r.width / 2, y: r.top + r.height / 2, id: m.id}); })));"
        " })()"
    )
    page.hover(where["x"], where["y"])
    tip = _tip(page)
    assert not tip["hidden"] and tip["for"] == where["id"]
    assert f"{CNP} in effect (created at 0.080 s" in tip["text"]
    page.hover(5, 5)
    assert _tip(page)["hidden"]


def test_zoom_widens_the_lanes_and_redraws_the_axis(page: Browser) -> None:
    def widths() -> dict:
        return page.eval(
            "(() => { const tl = document.querySelector('.timeline'); return {body: tl.querySelector('.tl-body').offsetWidth,"
            " ticks: tl.querySelectorAll('.axis-track .tick').length, level: tl.querySelector('.zoom-level').textContent}; })()"
        )

    before = widths()
    page.eval("document.querySelector('.timeline [data-zoom=\"in\"]').click()")
    page.eval("document.querySelector('.timeline [data-zoom=\"in\"]').click()")
    after = widths()
    assert after["level"] == "×4" and after["body"] > 3 * before["body"] * 0.8
    assert after["ticks"] > before["ticks"]
    page.eval("document.querySelector('.timeline [data-zoom=\"fit\"]').click()")
    assert widths() == before


def test_filters_hide_lanes_by_kind_and_namespace(page: Browser) -> None:
    def shown(selector: str) -> int:
        return page.eval(f"[...document.querySelectorAll({_js(selector)})].filter(l => l.offsetParent !== null).length")

    pods = shown("li.lane[data-kind='Pod']")
    assert pods == 3 and shown("li.lane[data-kind='Job']") == 1
    page.eval("document.querySelector('input[name=kind][value=Pod]').click()")
    assert shown("li.lane[data-kind='Pod']") == 0 and shown("li.lane[data-kind='Job']") == 1
    assert "lanes shown" in page.eval("document.querySelector('.filter-status').textContent")
    page.eval("document.querySelector('input[name=ns][value=kagent]').click()")
    assert shown("li.lane[data-ns='kagent']") == 0 and shown("li.lane[data-kind='HelmRelease']") == 1


def test_full_page_and_narrow_window_screenshots(page: Browser, artifacts: Path) -> None:
    shot = artifacts / "seed1-race.png"
    page.screenshot(shot)
    assert shot.stat().st_size > 20_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page.viewport(380, 800)
    page.eval("location.reload()")
    page.wait_event("Page.loadEventFired")
    layout = page.eval(
        "(() => ({page: document.scrollingElement.scrollWidth, view: innerWidth,"
        " lanes: [...document.querySelectorAll('li.lane')].filter(l => l.offsetParent !== null).length,"
        " scroller: document.querySelector('.tl-scroll').getBoundingClientRect().right}))()"
    )
    assert layout["page"] <= layout["view"] + 1  # no sideways scrolling of the whole page
    assert layout["scroller"] <= layout["view"] + 1 and layout["lanes"] > 10
    page.eval("document.querySelector('li.lane[data-kind=\"Pod\"] .mk').focus()")
    tip = _tip(page)
    assert not tip["hidden"] and 0 <= tip["left"] and tip["right"] <= tip["w"]
    narrow = artifacts / "seed1-race-narrow.png"
    page.screenshot(narrow)
    assert narrow.stat().st_size > 10_000
