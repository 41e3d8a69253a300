"""Read the report's lanes, spans and markers back from HTML (stdlib html.parser)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class El:
    tag: str
    attrs: dict[str, str]
    text: str = ""

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


@dataclass
class Lane:
    attrs: dict[str, str]
    spans: list[El] = field(default_factory=list)
    markers: list[El] = field(default_factory=list)
    label: str = ""

    @property
    def obj(self) -> str:
        return self.attrs["data-obj"]

    def span_states(self) -> list[tuple[str, str]]:
        return [(s.attrs["data-state"], s.attrs["data-style"]) for s in self.spans]


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[El] = []
        self.lanes: list[Lane] = []
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self._stack: list[tuple[str, El]] = []
        self._lane: Lane | None = None
        self._in_label = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        el = El(tag, a)
        self.elements.append(el)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        cls = el.classes
        if tag == "li" and "lane" in cls:
            self._lane = Lane(a)
            self.lanes.append(self._lane)
        elif self._lane is not None and "span" in cls and tag == "div":
            self._lane.spans.append(el)
        elif self._lane is not None and "mk" in cls:
            self._lane.markers.append(el)
        if "lane-label" in cls:
            self._in_label = True
        if tag not in ("br", "meta", "input", "img", "rect"):
            self._stack.append((tag, el))

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            t, el = self._stack.pop()
            if "lane-label" in el.classes:
                self._in_label = False
            if t == "li" and self._lane is not None and "lane" in el.classes:
                self._lane = None
            if t == tag:
                break

    def handle_data(self, data: str) -> None:
        for _, el in self._stack:
            el.text += data
        if self._in_label and self._lane is not None:
            self._lane.label += data


def parse(document: str) -> _Parser:
    """Parse a report; ``.lanes`` in document order, ``.ids``, ``.hrefs``, ``.elements``."""
    p = _Parser()
    p.feed(document)
    p.close()
    return p


def lane(doc: _Parser, kind: str, contains: str = "") -> tuple[int, Lane]:
    """The first lane of ``kind`` whose object ref contains ``contains``, with its index."""
    for i, ln in enumerate(doc.lanes):
        if ln.attrs.get("data-kind") == kind and contains in ln.obj:
            return i, ln
    raise AssertionError(f"no {kind} lane containing {contains!r}: {[x.obj for x in doc.lanes]}")
