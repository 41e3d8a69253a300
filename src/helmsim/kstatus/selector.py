"""Label selectors as the pod-controller readers use them (``spec.selector`` → pods).

Mirrors fluxcd/cli-utils pkg/kstatus/polling/statusreaders/common.go toSelector and
k8s.io/apimachinery metav1.LabelSelectorAsSelector. Label key/value syntax is not validated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from helmsim.kstatus.fields import StatusError, go_type, go_value, is_missing, nested
from helmsim.kube.selectors import Requirement, Selector

Matcher = Callable[[Mapping[str, str]], bool]

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def selector_of(obj: Mapping[str, Any]) -> Matcher:
    """The matcher for ``spec.selector``; StatusError when it is missing or malformed."""
    raw = nested(obj, "spec", "selector")
    if is_missing(raw):
        # statusreaders/common.go toSelector: NestedMap found nothing
        raise StatusError("no selector found")
    if not isinstance(raw, Mapping):
        # apimachinery NestedMap: a present non-map value (null included) is an accessor error
        raise StatusError(
            f".spec.selector accessor error: {go_value(raw)} is of the type {go_type(raw)}, "
            "expected map[string]interface{}"
        )
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping) or not all(
        isinstance(v, str) for v in match_labels.values()
    ):
        raise StatusError("json: cannot unmarshal spec.selector.matchLabels into map[string]string")
    exprs = raw.get("matchExpressions") or []
    if not isinstance(exprs, list):
        raise StatusError(
            "json: cannot unmarshal spec.selector.matchExpressions into []LabelSelectorRequirement"
        )
    reqs: list[tuple[str, str, frozenset[str]]] = []
    for e in exprs:
        if not isinstance(e, Mapping):
            raise StatusError("json: cannot unmarshal spec.selector.matchExpressions entry")
        key, op, values = e.get("key", ""), e.get("operator", ""), e.get("values") or []
        if op not in _OPERATORS:
            # metav1 LabelSelectorAsSelector
            raise StatusError(f'"{op}" is not a valid label selector operator')
        reqs.append((str(key), str(op), frozenset(str(v) for v in values)))
    selector = Selector(
        tuple(Requirement(str(k), "In", frozenset({v})) for k, v in match_labels.items())
        + tuple(Requirement(key, op, values) for key, op, values in reqs)
    )
    return selector.matches


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    """metadata.labels as strings (non-string values are ignored)."""
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): v for k, v in labels.items() if isinstance(v, str)}
