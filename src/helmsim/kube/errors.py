"""k8s.io/apimachinery pkg/util/errors: how an aggregate of errors prints."""

from __future__ import annotations

from collections.abc import Sequence


def aggregate(errors: Sequence[str]) -> str:
    """aggregate.Error: one error as is; more with repeated messages dropped, in their order,
    as ``[a, b]`` (or bare when one message is left)."""
    if len(errors) == 1:
        return errors[0]
    seen: list[str] = []
    for e in errors:
        if e not in seen:
            seen.append(e)
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


__all__ = ["aggregate"]
