"""Kubernetes label selectors (matchLabels + matchExpressions), pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def matches_selector(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` match a LabelSelector.

    k8s.io/apimachinery pkg/apis/meta/v1/helper.go LabelSelectorAsSelector: an empty selector
    matches everything; a nil selector is treated the same here (callers decide nil semantics).
    Unknown operators match nothing.
    """
    if not selector:
        return True
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(str(k)) != str(v):
            return False
    for expr in selector.get("matchExpressions") or ():
        key = str(expr.get("key", ""))
        op = expr.get("operator")
        values = [str(v) for v in expr.get("values") or ()]
        present = key in labels
        if op == "In":
            if not present or labels[key] not in values:
                return False
        elif op == "NotIn":
            if present and labels[key] in values:
                return False
        elif op == "Exists":
            if not present:
                return False
        elif op == "DoesNotExist":
            if present:
                return False
        else:
            return False
    return True


def matches_map(selector: Mapping[str, str] | None, labels: Mapping[str, str]) -> bool:
    """A plain ``map[string]string`` selector (Service.spec.selector): all pairs must match."""
    if not selector:
        return False
    return all(labels.get(str(k)) == str(v) for k, v in selector.items())
