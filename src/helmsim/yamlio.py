"""YAML documents with Kubernetes' scalar semantics, fast.

Kubernetes and Helm read manifests with ``sigs.k8s.io/yaml``, which decodes through go-yaml v2:
YAML 1.1 booleans (``yes``/``on``/``y`` …), Go integer syntax (``0777`` is octal 511, ``0b101``,
underscores ignored) and timestamps kept as strings. The Rust-backed ``yaml-rs`` parser is ten
times faster than PyYAML's C loader but reads YAML 1.2, so a document is parsed by ``yaml-rs``
only when it contains no plain scalar whose meaning differs between the two; the rest (and every
error, for its line and column) goes through PyYAML's C parser with a go-yaml v2 resolver.
``benchmarks/yaml_parse.py`` measures both paths.

Documents are split the way Helm splits rendered templates
(helm/helm pkg/release/v1/util/manifest.go: SplitManifests, ``(?:^|\\s*\\n)---\\s*``).
Duplicate mapping keys are an error naming the line (sigs.k8s.io/yaml YAMLToJSONStrict, as
kubectl's strict decoding reports them).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import yaml
import yaml_rs

from helmsim.errors import InputError

# helm/helm pkg/release/v1/util/manifest.go: sep = regexp.MustCompile("(?:^|\\s*\n)---\\s*").
# The character before "---" must be a newline (or the start), so a multiline "^---" finds the
# same separators; the whitespace run before it is trimmed from the previous document.
_SEP = re.compile(r"(?m)^---[\t\n\f\r ]*")
_GO_SPACE = "\t\n\f\r "

# Plain scalars that go-yaml v2 and YAML 1.2 read differently and that survive a yaml-rs parse
# as strings (checked on the parsed values) ...
_AMBIGUOUS_WORDS = frozenset(
    "y Y yes Yes YES n N no No NO on On ON off Off OFF =".split()
)
# ... or as different numbers: leading-zero octals (0777 is 511 in Go, 777 in YAML 1.2), 0b
# binaries, and "_1" (a string in Go). Over-matching only costs speed.
_NUMERIC_SUSPECT = re.compile(r"[\s:\[{,?-][-+]?(?:0[0-9_bB]|_)")

_ALIAS_LIMITS = yaml_rs.AliasLimits(max_total_replayed_events=100_000, max_replay_stack_depth=64)
_MAX_ALIAS_NODES = 100_000


@dataclass(frozen=True, slots=True)
class Document:
    """One YAML document of a file: its value, 0-based index and 1-based first line."""

    value: Any
    index: int
    line: int


def split_documents(text: str) -> list[tuple[str, int]]:
    """Split like Helm's SplitManifests; returns (document text, first line) for non-blank docs."""
    docs: list[tuple[str, int]] = []
    pos = 0
    line = 1  # line number at ``pos``
    for m in _SEP.finditer(text):
        if m.start() == pos and pos != 0:
            continue  # Go's pattern needs the newline the previous separator consumed
        _append(docs, text, pos, m.start(), line)
        line += text.count("\n", pos, m.end())
        pos = m.end()
    _append(docs, text, pos, len(text), line)
    return docs


def _append(docs: list[tuple[str, int]], text: str, start: int, end: int, line: int) -> None:
    chunk = text[start:end].rstrip(_GO_SPACE)
    stripped = chunk.lstrip(_GO_SPACE)
    if stripped:
        lead = len(chunk) - len(stripped)
        docs.append((stripped, line + text.count("\n", start, start + lead)))


def load_documents(text: str, source: str) -> list[Document]:
    """Parse every document of ``text``; ``source`` names the file in errors."""
    suspect = _NUMERIC_SUSPECT.search(text) is not None
    return [
        Document(value=_load(chunk, source, line, suspect), index=index, line=line)
        for index, (chunk, line) in enumerate(split_documents(text))
    ]


def load_one(text: str, source: str, first_line: int = 1) -> Any:
    """Parse one YAML document with Kubernetes semantics; errors name ``source`` and the line."""
    return _load(text, source, first_line, _NUMERIC_SUSPECT.search(text) is not None)


def _load(text: str, source: str, first_line: int, suspect: bool) -> Any:
    if not (suspect and _NUMERIC_SUSPECT.search(text)):
        try:
            value = yaml_rs.loads(text, parse_datetime=False, alias_limits=_ALIAS_LIMITS)
        except (yaml_rs.YAMLDecodeError, ValueError, RecursionError):
            pass  # re-parsed below for a precise, uniform message
        else:
            if not isinstance(value, list) or not text.lstrip().startswith("---"):
                if not _has_ambiguous_words(value):
                    return value
    return _load_goyaml(text, source, first_line)


def _has_ambiguous_words(value: Any) -> bool:
    """Whether a parsed value holds a string that go-yaml v2 would have read as a boolean."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            for key, val in item.items():
                if type(key) is str and key in _AMBIGUOUS_WORDS:
                    return True
                stack.append(val)
        elif kind is list:
            stack.extend(item)
        elif kind is str and item in _AMBIGUOUS_WORDS:
            return True
    return False


# --- PyYAML with go-yaml v2 scalar resolution ---------------------------------------------------

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _GoYamlLoader(_Base):  # type: ignore[misc, valid-type]
    """SafeLoader whose plain scalars resolve as go-yaml v2 does (gopkg.in/yaml.v2 resolve.go)."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}


_GO_TAG = "tag:helmsim:go-plain"
# Every plain scalar goes through one resolver; the constructor applies go-yaml v2's rules.
for _first in list("-+.0123456789~nNyYtTfFoO=") + [""]:
    _GoYamlLoader.yaml_implicit_resolvers.setdefault(_first, []).append(
        (_GO_TAG, re.compile(r"^.*$", re.S))
    )
_GoYamlLoader.add_implicit_resolver(  # merge keys, as go-yaml v2 supports them
    "tag:yaml.org,2002:merge", re.compile(r"^<<$"), ["<"]
)

_BOOLS = {
    **dict.fromkeys(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"], True),
    **dict.fromkeys(["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"], False),
}
_NULLS = {"", "~", "null", "Null", "NULL"}
_SPECIAL_FLOATS = {
    ".inf": math.inf, ".Inf": math.inf, ".INF": math.inf,
    "+.inf": math.inf, "+.Inf": math.inf, "+.INF": math.inf,
    "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf,
    ".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan,
}
# gopkg.in/yaml.v2 resolve.go: yamlStyleFloat
_GO_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_GO_INT = re.compile(r"^[-+]?(0[bB][01]+|0[oO]?[0-7]+|0[xX][0-9a-fA-F]+|[1-9][0-9]*|0)$")


def go_plain_scalar(text: str) -> Any:
    """Resolve an untagged plain scalar as go-yaml v2 does (gopkg.in/yaml.v2 resolve.go)."""
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    if text and (text[0] in "-+.0123456789"):
        plain = text.replace("_", "")
        if _GO_INT.match(plain):
            sign = -1 if plain[0] == "-" else 1
            digits = plain.lstrip("+-")
            if digits[:2] in ("0b", "0B"):
                return sign * int(digits[2:], 2)
            if digits[:2] in ("0x", "0X"):
                return sign * int(digits[2:], 16)
            if digits[:2] in ("0o", "0O"):
                return sign * int(digits[2:], 8)
            if len(digits) > 1 and digits[0] == "0":
                return sign * int(digits, 8)  # Go's strconv.ParseInt(s, 0, 64): leading 0 is octal
            return sign * int(digits)
        if _GO_FLOAT.match(plain):
            return float(plain)
    return text


def _construct_go_plain(loader: Any, node: yaml.ScalarNode) -> Any:
    return go_plain_scalar(node.value)


_GoYamlLoader.add_constructor(_GO_TAG, _construct_go_plain)


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, int] = {}
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "found an unhashable mapping key", key_node.start_mark
            ) from None
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f'duplicate mapping key "{key}" '
                f"(first at line {seen[key] + 1 + getattr(loader, 'line_offset', 0)})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_GoYamlLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
# Timestamps stay strings (gopkg.in/yaml.v2 decode.go keeps them as strings in interface{}).
_GoYamlLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node)
)


def _load_goyaml(text: str, source: str, first_line: int) -> Any:
    try:
        loader = _GoYamlLoader(text)
        loader.line_offset = first_line - 1
        try:
            if not loader.check_node():
                return None
            node = loader.get_node()
            if loader.check_node():
                extra = loader.get_node()
                raise InputError(
                    "more than one YAML document where one was expected",
                    file=source,
                    line=first_line + extra.start_mark.line,
                )
            _check_alias_expansion(node, source, first_line)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = first_line + mark.line if mark is not None else first_line
        problem = err.problem or err.context or "invalid YAML"
        raise InputError(f"invalid YAML: {problem}", file=source, line=line) from None
    except yaml.YAMLError as err:
        raise InputError(f"invalid YAML: {err}", file=source, line=first_line) from None


def _check_alias_expansion(root: yaml.Node, source: str, first_line: int) -> None:
    """Refuse documents whose alias expansion exceeds a fixed node budget (YAML bombs)."""
    expanded = _expanded_size(root, set(), 0)
    if expanded > _MAX_ALIAS_NODES:
        raise InputError(
            f"YAML aliases expand to more than {_MAX_ALIAS_NODES} nodes (possible YAML bomb)",
            file=source,
            line=first_line,
        )


def _expanded_size(node: yaml.Node, stack: set[int], depth: int) -> int:
    """Node count with every alias expanded; stops counting past the budget."""
    key = id(node)
    if key in stack or isinstance(node, yaml.ScalarNode):
        return 1
    if depth > 512:
        return _MAX_ALIAS_NODES + 1
    stack.add(key)
    total = 1
    children = (
        node.value if isinstance(node, yaml.SequenceNode) else [c for kv in node.value for c in kv]
    )
    for child in children:
        total += _expanded_size(child, stack, depth + 1)
        if total > _MAX_ALIAS_NODES:
            break
    stack.discard(key)
    return total


def key_lines(text: str) -> dict[tuple[Any, ...], int]:
    """Each key path (and list index path) of a YAML document → its 1-based line, via PyYAML's
    composer; for pointing an error at the field it is about. Best effort: ``{}`` on bad YAML."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    out: dict[tuple[Any, ...], int] = {}

    def walk(node: yaml.Node, path: tuple[Any, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    sub = (*path, key.value)
                    out.setdefault(sub, key.start_mark.line + 1)
                    walk(value, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                sub = (*path, i)
                out.setdefault(sub, item.start_mark.line + 1)
                walk(item, sub)

    if root is not None:
        walk(root, ())
    return out
