"""Where a ``values.schema.json`` violation comes from: the values file and line that set it.

Helm's engine (helm-python-sdk) validates the coalesced values against each chart's schema as
Helm v4 does (helm/helm pkg/chart/common/util/values.go ToRenderValuesWithSchemaValidation:
``values don't meet the specifications of the schema(s) in the following chart(s):\\n%w``, with
pkg/chart/common/util/jsonschema.go ValidateAgainstSchema listing ``<chart>:`` and one
``- at '<JSON pointer>': <reason>`` per error, subcharts under their own name). Helm names no
file; ``locate`` finds, for the first error, the values file whose key set the value (the last
one that sets it wins, as Helm merges values files in order), else the chart's ``values.yaml``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helmsim import yamlio

SCHEMA_ERROR = "values don't meet the specifications of the schema(s) in the following chart(s):"
_AT = re.compile(r"^- at '(?P<pointer>[^']*)': (?P<reason>.*)$")
# santhosh-tekuri/jsonschema v6 (Helm v4's validator) kinds: "additional properties 'x' not allowed"
_EXTRA = re.compile(r"^additional propert(?:y|ies) '(?P<name>[^']+)'")
_CHART = re.compile(r"^(?P<name>[^\s:'][^:]*):$")


def is_schema_error(helm_message: str) -> bool:
    return helm_message.lstrip().startswith(SCHEMA_ERROR)


def _pointer_path(pointer: str) -> tuple[str, ...]:
    # RFC 6901: "/a/b~1c" → ("a", "b/c")
    if not pointer:
        return ()
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/"))


def first_error_path(helm_message: str, top_chart: str) -> tuple[str, ...] | None:
    """The values key path of the first ``- at`` line (under its subchart's key), or None."""
    chart = top_chart
    for raw in helm_message.splitlines()[1:]:
        line = raw.strip()
        m = _CHART.match(line)
        if m:
            chart = m.group("name")
            continue
        m = _AT.match(line)
        if m:
            path = _pointer_path(m.group("pointer"))
            extra = _EXTRA.match(m.group("reason"))
            if extra:
                path = (*path, extra.group("name"))  # the key that is not allowed
            return path if chart == top_chart else (chart, *path)
    return None


def locate(
    helm_message: str, top_chart: str, values_files: Sequence[str], chart_dir: str | None
) -> tuple[str, int | None] | None:
    """(file, line) of the values file that set the first offending value; None if unknown."""
    path = first_error_path(helm_message, top_chart)
    if path is None:
        return None
    candidates = list(reversed(values_files))
    if chart_dir is not None and Path(chart_dir, "values.yaml").is_file():
        candidates.append(str(Path(chart_dir, "values.yaml")))
    for file in candidates:
        line = _line_of(file, path)
        if line is not None:
            return file, line
    # a missing property, or a value no file sets: the last values file the user gave
    return (values_files[-1], None) if values_files else None


def _line_of(file: str, path: tuple[str, ...]) -> int | None:
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines: dict[tuple[Any, ...], int] = yamlio.key_lines(text)
    # key_lines holds list indexes as ints; JSON pointers give them as digits
    for candidate in (path, tuple(int(p) if p.isdigit() else p for p in path)):
        if candidate in lines:
            return lines[candidate]
    return None


def one_line(helm_message: str) -> str:
    """Helm's multi-line text on one line (``: `` between its lines)."""
    return ": ".join(part.strip() for part in helm_message.splitlines() if part.strip()).replace(":: ", ": ")
