"""Outputs that are safe to print: secrets redacted and control characters escaped.

Every report goes through one of these before it leaves the process (docs/security.md):

- text: :class:`SafeConsole` (Rich, markup off) scrubs each string with
  :func:`helmsim.redaction.scrub` before layout (so a long token is never folded into two
  unrecognizable halves) and escapes control characters in everything it writes, so an object
  named ``\\x1b]0;pwned\\x07`` prints as that text instead of retitling the terminal;
- JSON (JSON, SARIF, simulate/plan/diff JSON): :func:`dump_json`;
- XML (JUnit): :func:`safe_xml`;
- HTML: ``helmsim.report.html`` escapes through :func:`safe_text`.
"""

from __future__ import annotations

import json
import re
from typing import IO, TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

from helmsim.redaction import redact_object, scrub

if TYPE_CHECKING:  # every command imports this module at start-up; only the XML reports need ET
    from xml.etree import ElementTree as ET

# C0 controls but tab and newline, DEL, C1 controls, and the invisible format characters that
# reorder or hide text on a terminal (bidi overrides and isolates, line/paragraph separators).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# Inside JSON strings json.dumps already escapes C0; these it leaves raw (ensure_ascii=False).
_JSON_RAW = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _visible(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with control and bidi characters written as ``\\x1b``/``\\u202e`` (tab and
    newline kept)."""
    return _CONTROL.sub(lambda m: _visible(m.group(0)), text) if _CONTROL.search(text) else text


def safe_text(text: Any) -> str:
    """A string for a human: secrets scrubbed, then control characters escaped."""
    return escape_controls(scrub(str(text)))


def safe_data(data: Any) -> Any:
    """JSON-like report data with the object rule applied (``redact_object``: secret-like keys,
    env pairs, Secret data, secret-like values in every string)."""
    return redact_object(data)


def dump_json(data: Any, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """``data`` as JSON text (with a final newline), secrets redacted, and no raw character
    that a terminal would act on (json escapes C0; C1 and bidi controls become ``\\u`` escapes
    of four hex digits)."""
    text = json.dumps(safe_data(data), indent=indent, sort_keys=sort_keys, ensure_ascii=False)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text) + "\n"


def _xml_text(text: str) -> str:
    # XML 1.0 has no way to write most C0 controls at all: they are shown as \x1b.
    return escape_controls(scrub(text))


def safe_xml(root: ET.Element) -> ET.Element:
    """Scrub and escape every attribute value, text and tail of ``root`` in place."""
    for el in root.iter():
        for name, value in list(el.attrib.items()):
            el.set(name, _xml_text(value))
        if el.text:
            el.text = _xml_text(el.text)
        if el.tail:
            el.tail = _xml_text(el.tail)
    return root


# --- Rich ----------------------------------------------------------------------------------------


class _Escaped:
    """A renderable whose text segments have their control characters escaped (a net for
    ``Text`` objects, which do not pass through :meth:`SafeConsole.render_str`)."""

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for seg in console.render(self.inner, options):
            if seg.control or not _CONTROL.search(seg.text):
                yield seg
            else:
                yield Segment(escape_controls(seg.text), seg.style)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.inner)


class _EscapeHook(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        out: list[ConsoleRenderable] = []
        for r in renderables:
            if isinstance(r, Text):
                plain = safe_text(r.plain)
                if plain != r.plain:  # a secret or a control character: keep the base style
                    r = Text(plain, style=r.style, justify=r.justify, overflow=r.overflow, end=r.end)
            out.append(_Escaped(r))
        return out


class SafeConsole(Console):
    """A Rich console for reports: no markup, every string scrubbed and escaped.

    :meth:`document` prints a finished, already safe document (JSON from :func:`dump_json`,
    ``render`` output) without scrubbing it again; control characters are still escaped.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        kwargs.setdefault("highlight", False)
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **kwargs)
        self.push_render_hook(_EscapeHook())

    def document(self, text: str) -> None:
        """Write a finished document (JSON, XML, HTML, YAML, a text report rendered by a
        :class:`SafeConsole`) as it is, bypassing Rich's layout: already redacted by its
        reporter, only its control characters are escaped here."""
        self.file.write(escape_controls(text))
        self.file.flush()

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(safe_text(text), **kwargs)


def text_console(file: IO[str], *, width: int = 160) -> SafeConsole:
    """A plain (no colour) report console writing to ``file``, as ``--output FILE`` uses."""
    return SafeConsole(file=file, width=width, soft_wrap=True, no_color=True)


__all__ = [
    "SafeConsole",
    "dump_json",
    "escape_controls",
    "safe_data",
    "safe_text",
    "safe_xml",
    "text_console",
]
