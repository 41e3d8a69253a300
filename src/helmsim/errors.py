"""The one error type for bad input: the CLI prints it as a single line and exits 2."""

from __future__ import annotations

import re
from typing import TypedDict

# Line breaks and other control characters in a message (they come from the input: a name, a
# key, a path) are escaped, so an error is always exactly one line.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with line breaks and control characters escaped (``\\n``, ``\\x1b``)."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return {"\n": "\\n", "\r": "\\r"}.get(char, f"\\u{ord(char):04x}" if ord(char) > 0xFF else f"\\x{ord(char):02x}")


class Where(TypedDict, total=False):
    """Where bad input is (``InputError(message, **where)``)."""

    file: str | None
    line: int | None


class InputError(Exception):
    """Bad user input: a file, a line (when known) and what is wrong with it."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        return one_line(f"{where}{self.message}")


def shorten(name: str, limit: int = 120) -> str:
    """``name`` as a one-line message shows it: whole up to ``limit`` characters, else its
    start and end with its length (a path too long for the file system, say)."""
    if len(name) <= limit:
        return name
    return f"{name[:60]}…{name[-40:]} ({len(name):,} characters)"

