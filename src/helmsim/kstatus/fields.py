"""Field access with the semantics of Go's unstructured helpers, on JSON-like Python values.

Go decodes JSON integers as int64 and other numbers as float64. A Python ``int`` (not ``bool``)
plays int64 and a ``float`` plays float64, so ``replicas: 1.0`` is "not an int" exactly as in Go.
Accessor errors carry apimachinery's wording (k8s.io/apimachinery
pkg/apis/meta/v1/unstructured/helpers.go, pkg/runtime/converter.go).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct


class StatusError(Exception):
    """A status-function error; the polling layer turns it into ``Unknown`` with this text."""


def go_type(value: Any) -> str:
    """Go's %T of the value decoded from JSON."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    if isinstance(value, Sequence):
        return "[]interface {}"
    return type(value).__name__


def go_kind(value: Any) -> str:
    """Go's reflect.Kind name of the decoded value (used in converter errors)."""
    t = go_type(value)
    return {"map[string]interface {}": "map", "[]interface {}": "slice"}.get(t, t)


def go_value(value: Any) -> str:
    """Go's %v of a decoded JSON value (close enough for error messages)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        inner = " ".join(f"{k}:{go_value(v)}" for k, v in items)
        return f"map[{inner}]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    return str(value)


def is_map(value: Any) -> bool:
    """A JSON object (dict fast path; any Mapping counts)."""
    return type(value) is dict or isinstance(value, Mapping)


def _json_path(fields: Sequence[str]) -> str:
    return "." + ".".join(fields)


_MISSING = object()


def nested(obj: Any, *fields: str) -> Any:
    """unstructured.NestedFieldNoCopy: the value, ``_MISSING`` if absent, StatusError if a parent
    is not a map. A null parent counts as absent."""
    val = obj
    for i, field in enumerate(fields):
        if val is None:
            return _MISSING
        if type(val) is dict or isinstance(val, Mapping):
            if field not in val:
                return _MISSING
            val = val[field]
        else:
            raise StatusError(
                f"{_json_path(fields[: i + 1])} accessor error: {go_value(val)} is of the type "
                f"{go_type(val)}, expected map[string]interface{{}}"
            )
    return val


def is_missing(value: Any) -> bool:
    """Whether ``nested`` found nothing."""
    return value is _MISSING


def nested_string(obj: Any, *fields: str) -> str | None:
    """unstructured.NestedString: None if absent; StatusError if present and not a string."""
    val = nested(obj, *fields)
    if val is _MISSING:
        return None
    if not isinstance(val, str):
        raise StatusError(
            f"{_json_path(fields)} accessor error: {go_value(val)} is of the type {go_type(val)}, "
            "expected string"
        )
    return val


def nested_int64(obj: Any, *fields: str) -> int | None:
    """unstructured.NestedInt64: None if absent; StatusError if present and not an int64."""
    val = nested(obj, *fields)
    if val is _MISSING:
        return None
    if not is_int(val):
        raise StatusError(
            f"{_json_path(fields)} accessor error: {go_value(val)} is of the type {go_type(val)}, "
            "expected int64"
        )
    return int(val)


def is_int(value: Any) -> bool:
    """A Go int64 decoded from JSON (Python bool is not one)."""
    return type(value) is int or (isinstance(value, int) and not isinstance(value, bool))


@functools.cache
def _path(field_path: str) -> tuple[str, ...]:
    fields = field_path.split(".")
    return tuple(fields[1:] if fields and fields[0] == "" else fields)


def get_string_field(obj: Any, field_path: str, default: str) -> str:
    """cli-utils pkg/kstatus/status/util.go GetStringField: default unless a string is found."""
    try:
        val = nested(obj, *_path(field_path))
    except StatusError:
        return default
    return val if isinstance(val, str) else default


def get_int_field(obj: Any, field_path: str, default: int) -> int:
    """cli-utils util.go GetIntField: only int/int32/int64 count; a float returns the default."""
    try:
        val = nested(obj, *_path(field_path))
    except StatusError:
        return default
    return int(val) if is_int(val) else default


def get_bool_field(obj: Any, field_path: str, default: bool) -> bool:
    """kubernetes-sigs/cli-utils util.go GetBoolField (upstream only)."""
    try:
        val = nested(obj, *_path(field_path))
    except StatusError:
        return default
    return val if isinstance(val, bool) else default


class BasicCondition(Struct, frozen=True):
    """cli-utils util.go BasicCondition: type, status, reason, message."""

    type: str
    status: str
    reason: str
    message: str


_CONDITION_FIELDS = (
    ("type", "string"),
    ("status", "v1.ConditionStatus"),
    ("reason", "string"),
    ("message", "string"),
)


def conditions(obj: Any) -> list[BasicCondition]:
    """cli-utils util.go GetObjectWithConditions: ``status.conditions`` decoded by apimachinery's
    DefaultUnstructuredConverter; type mismatches raise StatusError with its wording."""
    if not is_map(obj):
        raise StatusError(f"cannot restore struct from: {go_kind(obj)}")
    status = obj.get("status")
    if status is None:
        return []
    if not is_map(status):
        raise StatusError(f"cannot restore struct from: {go_kind(status)}")
    conds = status.get("conditions")
    if conds is None:
        return []
    if type(conds) is not list and (
        isinstance(conds, str | Mapping) or not isinstance(conds, Sequence)
    ):
        raise StatusError(f"cannot restore slice from {go_kind(conds)}")
    out: list[BasicCondition] = []
    for item in conds:
        if item is None:
            out.append(BasicCondition("", "", "", ""))
            continue
        if not is_map(item):
            raise StatusError(f"cannot restore struct from: {go_kind(item)}")
        values: list[str] = []
        for name, go_dest in _CONDITION_FIELDS:
            v = item.get(name)
            if v is None:
                values.append("")
            elif type(v) is str or isinstance(v, str):
                values.append(v)
            elif is_int(v):
                # converter.go: integers are ConvertibleTo string but JSON forbids it
                raise StatusError(f"cannot convert int64 to {go_dest}")
            else:
                raise StatusError("unrecognized type: string")
        out.append(BasicCondition(*values))
    return out
