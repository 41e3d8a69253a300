"""Reading the shell variables of a container's script, as far as plain text allows.

Init containers name their peers through variables: an assignment at the top of the script
(``host="https://ctl:9180"``), a bash array looped over (``etcd_hosts=( "http://etcd:2379" )`` then
``for host in "${etcd_hosts[@]}"``), a function's positional parameter (``${1:-default}``). These
helpers find those values; they never run the script, and a value they cannot read stays ``$NAME``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

_FUNCTION = re.compile(
    r"^(?P<indent>[ \t]*)(?:function\s+)?[A-Za-z_][\w-]*\s*\(\)\s*\{.*?^(?P=indent)\}", re.M | re.S
)
ASSIGNMENT = re.compile(
    r"^\s*(?:(?:local|export|readonly|declare)\s+(?:-\w+\s+)*)?(?P<name>[A-Za-z_]\w*)="
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s(]\S*)\s*$",
    re.M,
)
_ARRAY = re.compile(r"^\s*(?:(?:local|declare|readonly)\s+(?:-\w+\s+)*)?(?P<name>[A-Za-z_]\w*)=\((?P<items>[^)]*)\)", re.M)
_FOR = re.compile(r"\bfor\s+(?P<var>[A-Za-z_]\w*)\s+in\s+(?P<words>[^;\n]*?)\s*(?:;|\n)\s*do\b")
_DONE = re.compile(r"\bdone\b")
SHELL_VAR = re.compile(r"\$\{(?P<a>[A-Za-z_]\w*)\}|\$(?P<b>[A-Za-z_]\w*)")
_ARRAY_ALL = re.compile(r"^\$\{(?P<name>[A-Za-z_]\w*)\[[@*]\]\}$")
# bash(1) "Pipelines" and "Lists": a pipeline's commands are split by |, lists by ; & && ||;
# `if`, `while`, `until` and `!` lead a pipeline whose first command is the one that runs.
_STATEMENT = re.compile(r"&&|\|\||[;|&\n]")
_LEADING = frozenset({"if", "elif", "while", "until", "!", "then", "do", "else"})
MAX_VALUES = 64
"""At most this many values of one loop are read (a longer list is not a peer list)."""


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def top_level(script: str) -> str:
    """``script`` without its function bodies (what runs when the script itself runs)."""
    return _FUNCTION.sub("", script)


def expand(text: str, scope: Mapping[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` replaced from ``scope`` (unknown ones kept), outer quotes dropped."""
    return SHELL_VAR.sub(lambda v: scope.get(v.group("a") or v.group("b"), v.group(0)), text).strip("\"'")


def assignments(text: str, scope: Mapping[str, str]) -> dict[str, str]:
    """``scope`` extended, in order, by the plain ``NAME=value`` lines of ``text`` (each value
    expanded with the ones before it)."""
    out = dict(scope)
    for m in ASSIGNMENT.finditer(text):
        out[m.group("name")] = expand(m.group("value"), out)
    return out


def arrays(text: str, scope: Mapping[str, str]) -> dict[str, list[str]]:
    """The ``NAME=( word … )`` arrays of ``text``, each word expanded (bash(1) "Arrays")."""
    return {m.group("name"): [expand(w, scope) for w in _words(m.group("items"))] for m in _ARRAY.finditer(text)}


def loop_values(script: str, at: int, scope: Mapping[str, str]) -> tuple[str, list[str]] | None:
    """The variable and values of the ``for VAR in …; do`` loop that encloses offset ``at``
    (innermost first), its words expanded, ``"${arr[@]}"`` taken from the script's arrays; None
    outside a loop or when a word cannot be read."""
    found: tuple[str, list[str]] | None = None
    lists = arrays(script, scope)
    for m in _FOR.finditer(script, 0, at):
        if _DONE.search(script, m.end(), at) is not None:
            continue  # that loop ended before ``at``
        values: list[str] = []
        for word in _words(m.group("words")):
            whole = _ARRAY_ALL.match(word)
            if whole is not None:
                if whole.group("name") not in lists:
                    return None
                values.extend(lists[whole.group("name")])
                continue
            value = expand(word, scope)
            if "$" in value:
                return None
            values.append(value)
        if not values or len(values) > MAX_VALUES:
            return None
        found = m.group("var"), values
    return found


def commands(line: str) -> list[str]:
    """The simple commands of one line: split at pipes and lists, with a leading ``if``, ``while``,
    ``!`` … dropped (``if curl -s "$u" | grep ok; then`` → ``curl -s "$u"``, ``grep ok``)."""
    out: list[str] = []
    for part in _STATEMENT.split(line):
        words = part.split()
        while words and words[0] in _LEADING:
            words.pop(0)
        if words:
            out.append(" ".join(words))
    return out


__all__ = ["MAX_VALUES", "arrays", "assignments", "commands", "expand", "loop_values", "top_level"]
