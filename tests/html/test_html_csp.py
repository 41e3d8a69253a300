"""The HTML report's Content-Security-Policy allows its one inline script and its one inline
stylesheet by their SHA-256 hashes, never 'unsafe-inline' code (issue 12; docs/security.md).

The hashes are recomputed here from the page's own blocks, as a browser does (CSP Level 3
§8.4: base64 of the SHA-256 of the element's text content, UTF-8)."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser

from html_runs import run

from helmsim.report.html import render_html


class _Blocks(HTMLParser):
    """The CSP meta element, the text of every <script>/<style>, and inline event handlers."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.csp: list[str] = []
        self.blocks: dict[str, list[str]] = {"script": [], "style": []}
        self.handlers: list[str] = []
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp.append(a.get("content") or "")
        self.handlers += [f"{tag} {k}" for k, _ in attrs if k.startswith("on")]
        if tag in self.blocks:
            self._open = tag
            self.blocks[tag].append("")

    def handle_endtag(self, tag: str) -> None:
        self._open = None

    def handle_data(self, data: str) -> None:
        if self._open:
            self.blocks[self._open][-1] += data


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def _policy(page: str) -> tuple[dict[str, list[str]], _Blocks]:
    parsed = _Blocks()
    parsed.feed(page)
    [csp] = parsed.csp
    directives = {}
    for part in filter(None, (p.strip() for p in csp.split(";"))):
        name, *sources = part.split()
        directives[name] = sources
    return directives, parsed


def test_the_inline_script_and_style_run_by_their_hashes(race) -> None:
    for page in (render_html(race), render_html(run("seed2-hf-cache", "kind"), config="config: no config file")):
        csp, parsed = _policy(page)
        [script], [style] = parsed.blocks["script"], parsed.blocks["style"]
        assert csp["script-src"] == [_sha256(script)]
        assert csp["style-src"] == [_sha256(style)]
        assert csp["default-src"] == ["'none'"]
        assert "'unsafe-inline'" not in csp["script-src"] + csp["style-src"] + csp["default-src"]
        # only style attributes (positions of spans and markers) are allowed inline: they run no code
        assert csp["style-src-attr"] == ["'unsafe-inline'"]
        assert parsed.handlers == []  # an inline handler (onsubmit=…) would be blocked by the hash


def test_a_hostile_name_cannot_add_a_script(race) -> None:
    """Names reach the page escaped: a `</script><script>` in a title stays text, so the
    page still has one script, the hashed one."""
    page = render_html(race, title="x</script><script>alert(1)</script><style>*{}</style>")
    csp, parsed = _policy(page)
    assert len(parsed.blocks["script"]) == 1 and len(parsed.blocks["style"]) == 1
    assert csp["script-src"] == [_sha256(parsed.blocks["script"][0])]
    assert re.search(r"<h1>x&lt;/script&gt;&lt;script&gt;alert\(1\)", page)
