"""Label selectors written as strings (``app=web,tier!=db,env in (a,b),!legacy``), as
k8s.io/apimachinery pkg/labels/selector.go ``Parse`` reads them: kustomize's ``labelSelector``
and ``annotationSelector`` targets, ``kubectl -l``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from msgspec import Struct

from helmsim.kube.selectors import Requirement

# pkg/labels/selector.go Lexer: these characters end an identifier
_TOKEN = re.compile(r"\s*(==|=|!=|!|,|\(|\)|[^\s=!,()]+)")


class SelectorError(ValueError):
    """A selector string that pkg/labels Parse refuses (its message)."""


class LabelSelector(Struct, frozen=True):
    """A parsed selector: every requirement must hold (an empty selector matches everything)."""

    text: str
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(req.matches(labels) for req in self.requirements)


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        out.append(m.group(1))
        pos = m.end()
    if text[pos:].strip():
        raise SelectorError(f"unable to parse requirement: found '{text[pos:].strip()}'")
    return out


def parse(text: str) -> LabelSelector:
    """``labels.Parse``: requirements separated by commas; operators ``=``, ``==``, ``!=``,
    ``in``, ``notin``, ``key`` (exists) and ``!key`` (does not exist)."""
    toks = _tokens(text)
    reqs: list[Requirement] = []
    i = 0
    while i < len(toks):
        negate = toks[i] == "!"
        if negate:
            i += 1
        if i >= len(toks) or toks[i] in (",", "=", "==", "!=", "(", ")"):
            found = toks[i] if i < len(toks) else "EOS"
            raise SelectorError(f"found '{found}', expected: identifier")
        key = toks[i]
        i += 1
        op = toks[i] if i < len(toks) else ","
        if negate or op == ",":
            reqs.append(_absent(key) if negate else _present(key))
        elif op in ("=", "==", "!="):
            if i + 1 >= len(toks) or toks[i + 1] in (",", "(", ")"):
                value = ""
                i += 1
            else:
                value = toks[i + 1]
                i += 2
            reqs.append(_equals(key, value) if op != "!=" else _differs(key, value))
        elif op in ("in", "notin"):
            if i + 1 >= len(toks) or toks[i + 1] != "(":
                raise SelectorError(f"found '{toks[i + 1] if i + 1 < len(toks) else 'EOS'}', expected: '('")
            j = i + 2
            values: set[str] = set()
            while j < len(toks) and toks[j] != ")":
                if toks[j] != ",":
                    values.add(toks[j])
                j += 1
            if j >= len(toks):
                raise SelectorError("found 'EOS', expected: ')'")
            i = j + 1
            reqs.append(_in(key, frozenset(values)) if op == "in" else _notin(key, frozenset(values)))
        else:
            raise SelectorError(f"found '{op}', expected: '=', '!=', '==', 'in', notin'")
        if i < len(toks):
            if toks[i] != ",":
                raise SelectorError(f"found '{toks[i]}', expected: ',' or 'end of string'")
            i += 1
    return LabelSelector(text, tuple(reqs))


# pkg/labels/selector.go Requirement.Matches: the string operators are the LabelSelector ones
# (NotEquals, like NotIn, holds when the key is absent)
def _present(key: str) -> Requirement:
    return Requirement(key, "Exists", frozenset())


def _absent(key: str) -> Requirement:
    return Requirement(key, "DoesNotExist", frozenset())


def _equals(key: str, value: str) -> Requirement:
    return Requirement(key, "In", frozenset({value}))


def _differs(key: str, value: str) -> Requirement:
    return Requirement(key, "NotIn", frozenset({value}))


def _in(key: str, values: frozenset[str]) -> Requirement:
    return Requirement(key, "In", values)


def _notin(key: str, values: frozenset[str]) -> Requirement:
    return Requirement(key, "NotIn", values)


__all__ = ["LabelSelector", "SelectorError", "parse"]
