"""Label selectors, written once: a LabelSelector (``matchLabels`` + ``matchExpressions``), its
Cilium EndpointSelector variant (``cilium=True``: ``k8s:``/``any:`` key prefixes), a map selector
(``Service.spec.selector``), compiled once into :class:`Selector` or matched directly from the
manifest (:func:`matches_selector`, :func:`matches_map`). ``helmsim.kube.labels`` parses the
string form (``app=web,tier!=db``) into the same requirements.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from msgspec import Struct

from helmsim.errors import InputError

Labels = Mapping[str, str]

# Cilium label sources a selector key may carry (cilium/cilium pkg/labels/labels.go
# LabelSource*): "k8s:" and "any:" match our (Kubernetes-sourced) pod labels; "reserved:" names an
# entity identity (reserved:host, reserved:world, reserved:kube-apiserver ...).
_ANY_SOURCES = ("k8s:", "any:", "unspec:", "container:")
RESERVED_PREFIX = "reserved:"


class Requirement(Struct, frozen=True):
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: frozenset[str]

    def matches(self, labels: Labels) -> bool:
        # kubernetes/apimachinery pkg/labels/selector.go Requirement.Matches: NotIn and
        # DoesNotExist match when the key is absent.
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        return not present  # DoesNotExist


class Selector(Struct, frozen=True):
    """A compiled selector: every requirement must hold. No requirements selects everything."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Labels) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def keys(self) -> frozenset[str]:
        return frozenset(r.key for r in self.requirements)

    def with_requirement(self, req: Requirement) -> Selector:
        return Selector(self.requirements + (req,))

    def without_keys(self, predicate: Callable[[str], bool]) -> Selector:
        return Selector(tuple(r for r in self.requirements if not predicate(r.key)))


MATCH_ALL = Selector(())
_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist"}


def _key(raw: Any, *, cilium: bool, where: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise InputError(f"{where}: label selector key must be a non-empty string, got {raw!r}")
    if cilium:
        for prefix in _ANY_SOURCES:
            if raw.startswith(prefix):
                return raw[len(prefix) :]
    return raw


def compile_selector(spec: Any, *, cilium: bool = False, where: str = "selector") -> Selector:
    """Compile ``{matchLabels, matchExpressions}``; ``None`` or ``{}`` selects everything.

    With ``cilium=True`` key prefixes ``k8s:``/``any:`` are dropped (they match Kubernetes labels)
    and ``reserved:`` keys are kept as written.
    """
    if spec is None:
        return MATCH_ALL
    if not isinstance(spec, Mapping):
        raise InputError(f"{where}: a label selector must be a mapping, got {type(spec).__name__}")
    reqs: list[Requirement] = []
    match_labels = spec.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise InputError(f"{where}: matchLabels must be a mapping")
    for k, v in match_labels.items():
        reqs.append(
            Requirement(
                _key(k, cilium=cilium, where=where), "In", frozenset({"" if v is None else str(v)})
            )
        )
    exprs = spec.get("matchExpressions") or []
    if not isinstance(exprs, list):
        raise InputError(f"{where}: matchExpressions must be a list")
    for e in exprs:
        if not isinstance(e, Mapping):
            raise InputError(f"{where}: each matchExpressions item must be a mapping")
        op = e.get("operator")
        if op not in _OPERATORS:
            raise InputError(f"{where}: unsupported selector operator {op!r}")
        values = e.get("values") or []
        if op in ("In", "NotIn") and not values:
            # kubernetes/apimachinery pkg/apis/meta/v1/validation: values must be non-empty
            raise InputError(f"{where}: operator {op} needs a non-empty values list")
        if op in ("Exists", "DoesNotExist") and values:
            raise InputError(f"{where}: operator {op} must not have values")
        reqs.append(
            Requirement(
                _key(e.get("key"), cilium=cilium, where=where),
                op,
                frozenset(str(v) for v in values),
            )
        )
    return Selector(tuple(reqs))


def labels_selector(labels: Labels) -> Selector:
    """A selector requiring exactly these key=value pairs (a Service selector)."""
    return Selector(tuple(Requirement(k, "In", frozenset({v})) for k, v in labels.items()))


def matches_selector(selector: Mapping[str, Any] | None, labels: Labels) -> bool:
    """Whether ``labels`` match a LabelSelector manifest, without compiling it.

    k8s.io/apimachinery pkg/apis/meta/v1/helper.go LabelSelectorAsSelector: an empty selector
    matches everything; a nil selector is treated the same here (callers decide nil semantics).
    Unknown operators match nothing (where :func:`compile_selector` refuses them).
    """
    if not selector:
        return True
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(str(k)) != str(v):
            return False
    for expr in selector.get("matchExpressions") or ():
        op = expr.get("operator")
        if op not in _OPERATORS:
            return False
        values = frozenset(str(v) for v in expr.get("values") or ())
        if not Requirement(str(expr.get("key", "")), op, values).matches(labels):
            return False
    return True


def matches_map(selector: Mapping[str, str] | None, labels: Labels) -> bool:
    """A plain ``map[string]string`` selector (Service.spec.selector): all pairs must match;
    an empty one selects nothing (pkg/controller/endpoint: Services without a selector)."""
    if not selector:
        return False
    return all(labels.get(str(k)) == str(v) for k, v in selector.items())
