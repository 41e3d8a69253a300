"""Write a ``Draft`` as profile YAML with each value's provenance as a comment.

Scalars are written as JSON (valid YAML whose strings are always quoted, so go-yaml v2 reads
``"yes"`` or ``"1.30"`` as the strings they are). Latency distributions and short scalar lists are
flow mappings/sequences on one line; everything else is block style.
"""

from __future__ import annotations

import json
import re
from typing import Any

from helmsim.profiletools.draft import Draft, Path

_INDENT = "  "
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_PLAIN_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_FLOW_WIDTH = 100


def comment_text(text: str) -> str:
    """One line of comment text: control characters (newlines included) escaped."""
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def scalar(value: Any) -> str:
    """A YAML scalar for ``value`` (JSON form; floats without a needless ``.0``)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return json.dumps(value, ensure_ascii=False)


def _key(key: str | int) -> str:
    text = str(key)
    return text if _PLAIN_KEY.match(text) else json.dumps(text, ensure_ascii=False)


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return scalar(value)


def _is_flow(value: Any) -> bool:
    """Distributions, empty containers and lists of scalars go on one line."""
    if isinstance(value, dict):
        return not value or "dist" in value
    if isinstance(value, list):
        return not value or all(not isinstance(v, (dict, list)) for v in value)
    return True


def _wrapped_flow(value: Any, indent: str) -> list[str]:
    """A flow value, wrapped after commas when long (continuation lines indented deeper)."""
    text = _flow(value)
    numbers = value.get("samples") if isinstance(value, dict) else value
    wrappable = isinstance(numbers, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers
    )
    if len(text) <= _FLOW_WIDTH or not wrappable:
        return [text]
    parts = text.split(", ")  # only numbers (and the dist keys) are split
    lines: list[str] = []
    current = ""
    for part in parts:
        if current and len(current) + len(part) + 2 > _FLOW_WIDTH:
            lines.append(current + ",")
            current = part
        else:
            current = f"{current}, {part}" if current else part
    lines.append(current)
    return [lines[0], *(indent + _INDENT * 2 + ln for ln in lines[1:])]


def render(draft: Draft) -> str:
    """The profile YAML text of ``draft``."""
    header = list(draft.header)
    orphans = [
        line
        for path, lines in draft.blocks.items()
        if not _present(draft.data, path)
        for line in lines
    ]
    if orphans:
        header += ["Also seen:", *(f"  {line}" for line in orphans)]
    out = [f"# {comment_text(line)}" if line else "#" for line in header]
    _mapping(draft, draft.data, (), "", out)
    return "\n".join(out) + "\n"


def _present(data: Any, path: Path) -> bool:
    for part in path:
        if isinstance(part, int):
            if not isinstance(data, list) or part >= len(data):
                return False
        elif not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _comment(note: str | None) -> str:
    return f"  # {comment_text(note)}" if note else ""


def _blocks(draft: Draft, path: Path, indent: str, out: list[str]) -> None:
    for line in draft.blocks.get(path, []):
        out.append(f"{indent}# {comment_text(line)}")


def _mapping(draft: Draft, data: dict[str, Any], path: Path, indent: str, out: list[str]) -> None:
    for key, value in data.items():
        sub = (*path, key)
        _blocks(draft, sub, indent, out)
        _entry(draft, f"{indent}{_key(key)}:", value, sub, indent, out, draft.notes.get(sub))


def _entry(
    draft: Draft,
    lead: str,
    value: Any,
    path: Path,
    indent: str,
    out: list[str],
    note: str | None,
) -> None:
    """``lead`` (``key:`` or ``- key:``) then ``value`` (at ``path``), ``note`` on its line."""
    noted_items = isinstance(value, list) and any(
        (*path, i) in draft.notes for i in range(len(value))
    )
    if _is_flow(value) and not noted_items:
        lines = _wrapped_flow(value, indent)
        lines[-1] += _comment(note)
        out.append(f"{lead} {lines[0]}")
        out.extend(lines[1:])
        return
    out.append(lead + _comment(note))
    child = indent + _INDENT
    if isinstance(value, dict):
        _mapping(draft, value, path, child, out)
        return
    for i, item in enumerate(value):
        sub = (*path, i)
        _blocks(draft, sub, child, out)
        if isinstance(item, dict) and not _is_flow(item):
            for n, (key, v) in enumerate(item.items()):
                kpath = (*sub, key)
                if n:
                    _blocks(draft, kpath, child + _INDENT, out)
                prefix = f"{child}- " if n == 0 else child + _INDENT
                # a list item's own note goes on its first line (unless that key has one)
                knote = draft.notes.get(kpath) or (draft.notes.get(sub) if n == 0 else None)
                _entry(draft, prefix + f"{_key(key)}:", v, kpath, child + _INDENT, out, knote)
        else:
            lines = _wrapped_flow(item, child)
            lines[-1] += _comment(draft.notes.get(sub))
            out.append(f"{child}- {lines[0]}")
            out.extend(lines[1:])
