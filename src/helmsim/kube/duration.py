"""A duration field of helmsim's YAML readers: seconds, or a Go duration (``90s``, ``1m30s``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, WithJsonSchema

from helmsim.cluster.latency import to_seconds

Seconds = Annotated[
    float,
    BeforeValidator(to_seconds),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": 0},
                {"type": "string", "pattern": "^([0-9]*(\\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$|^0$"},
            ],
            "description": "seconds, or a Go duration such as 90s, 5m, 1m30s",
        }
    ),
]
"""A duration: a number of seconds or a Go duration string (helmsim.cluster.latency.to_seconds)."""

__all__ = ["Seconds"]
