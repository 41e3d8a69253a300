"""YAML documents with Kubernetes' scalar semantics, fast, bounded, and one-line errors.

Kubernetes and Helm read manifests with ``sigs.k8s.io/yaml``, which decodes through go-yaml v2:
YAML 1.1 booleans (``yes``/``on``/``y`` …), Go integer syntax (``0777`` is octal 511, ``0b101``,
underscores ignored) and timestamps kept as strings, then converts the result to JSON: mapping
keys become strings (``1`` → ``"1"``, ``true`` → ``"true"``). The Rust-backed ``yaml-rs`` parser
is ten times faster than PyYAML's C loader but reads YAML 1.2, so a document is parsed by
``yaml-rs`` only when it contains no plain scalar whose meaning differs between the two, no tag,
anchor or control character; the rest (and every error, for its line and column) goes through
PyYAML's C parser with a go-yaml v2 resolver. ``benchmarks/yaml_parse.py`` measures both paths.

Documents are split the way Helm splits rendered templates
(helm/helm pkg/release/v1/util/manifest.go: SplitManifests, ``(?:^|\\s*\\n)---\\s*``).
Duplicate mapping keys are an error naming the line (sigs.k8s.io/yaml YAMLToJSONStrict, as
kubectl's strict decoding reports them). A leading UTF-8 byte-order mark is dropped, as Helm's
chart loader and kubectl do. File size, document size, document count, nesting depth and alias
expansion are bounded by :mod:`helmsim.limits`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
import yaml_rs
from msgspec import Struct

from helmsim import limits
from helmsim.errors import InputError

# helm/helm pkg/release/v1/util/manifest.go: sep = regexp.MustCompile("(?:^|\\s*\n)---\\s*").
# The character before "---" must be a newline (or the start), so a multiline "^---" finds the
# same separators; the whitespace run before it is trimmed from the previous document.
_SEP = re.compile(r"(?m)^---[\t\n\f\r ]*")
_GO_SPACE = "\t\n\f\r "
# helm/helm pkg/chart/v2/loader/directory.go (utf8bom) and kubectl's BOMOverride reader: a
# leading UTF-8 byte-order mark is not part of the document.
_BOM = "\ufeff"

# Plain scalars that go-yaml v2 and YAML 1.2 read differently and that survive a yaml-rs parse
# as strings (checked on the parsed values) ...
_AMBIGUOUS_WORDS = frozenset(
    "y Y yes Yes YES n N no No NO on On ON off Off OFF =".split()
)
# ... or as different numbers: leading-zero octals (0777 is 511 in Go, 777 in YAML 1.2), 0b
# binaries, and "_1" (a string in Go). The text is searched for a plain scalar that is such a
# number as a whole: where a scalar can begin (the start of a line, after a blank or a flow
# indicator, or after a ':' or '-' that does not follow a letter or digit: {"a":012}, [-012]) and
# ending where a scalar can end. A kubectl dump's times and dates (2026-01-01T00:00:05Z) and uids
# (00000000-0000-…) are not such numbers, so they no longer send every object to the slow path.
# Over-matching only costs speed.
_NUMERIC_SUSPECT = re.compile(
    r"(?:^|[\s\[{,?]|(?<![0-9A-Za-z])[:-])"
    r"[-+]?(?:0[0-9_]+|0[bB][01_]*|_[0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9_]+)?"
    r"(?=[ \t]*(?:$|[\r\n,\]}#]|:(?:\s|$)))",
    re.MULTILINE,
)
# Tags and anchors (yaml-rs reads !!set, !!binary and self-referencing anchors differently from
# go-yaml) and characters YAML forbids (yaml-rs accepts some) send a document to PyYAML.
# Over-matching only costs speed.
_TAG_OR_ANCHOR = re.compile(r"(?:^|[\s\[{,])[!&][^\s]")
_FORBIDDEN_ASCII = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_FORBIDDEN = re.compile(r"[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010FFFF]")


def _goyaml_only(text: str) -> bool:
    """Whether ``text`` holds a tag, an anchor or a character YAML forbids."""
    if ("!" in text or "&" in text) and _TAG_OR_ANCHOR.search(text):
        return True
    return (_FORBIDDEN_ASCII if text.isascii() else _FORBIDDEN).search(text) is not None


class Document(Struct, frozen=True):
    """One YAML document of a file: its value, 0-based index and 1-based first line."""

    value: Any
    index: int
    line: int


# --- reading files ---------------------------------------------------------------------------------


def read_text(path: str | Path, what: str = "file") -> str:
    """A text input read as Kubernetes tools read it: UTF-8, a leading BOM dropped, at most
    ``--max-file-size``; every failure one line naming the file (and the line of a bad byte)."""
    p = Path(path)
    source = str(path)
    limit = limits.current().max_file_size
    try:
        limits.check("max_file_size", p.stat().st_size, what, file=source)
        with p.open("rb") as f:  # bounded even when the size is unknown (/dev/zero, a pipe)
            data = f.read(limit + 1) if limit else f.read()
        limits.check("max_file_size", len(data), what, file=source)
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=source) from None
    except IsADirectoryError:
        raise InputError(f"{what} is a directory", file=source) from None
    except OSError as err:
        raise InputError(f"cannot read {what}: {err.strerror or err}", file=source) from None
    return decode(data, source)


def read_stdin(source: str = "<stdin>") -> str:
    """Standard input as :func:`read_text` reads a file (UTF-8, no BOM, bounded)."""
    import sys

    limit = limits.current().max_file_size
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream (tests, embedding)
        text = sys.stdin.read(limit + 1 if limit else -1)
        limits.check("max_file_size", len(text), "manifest on standard input", file=source)
        return text.removeprefix(_BOM)
    data = stream.read(limit + 1 if limit else -1)
    limits.check("max_file_size", len(data), "manifest on standard input", file=source)
    return decode(data, source)


def decode(data: bytes, source: str) -> str:
    """UTF-8 bytes to text without a leading BOM; anything else is one line naming the byte."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError("UTF-16 text: save the file as UTF-8", file=source, line=1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise InputError(
            f"not UTF-8 text: byte 0x{data[err.start]:02x} at column {column}",
            file=source,
            line=line,
        ) from None
    return text.removeprefix(_BOM)


# --- splitting and loading ------------------------------------------------------------------------


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


def load_documents(text: str, source: str, *, last_key_wins: bool = False) -> list[Document]:
    """Parse every document of ``text``; ``source`` names the file in errors.

    ``last_key_wins``: a key repeated in one mapping keeps its last value instead of being an
    error — how a manifest is decoded on its way to the API server (below)."""
    text = text.removeprefix(_BOM)
    limits.check("max_file_size", len(text), "manifest", file=source)
    chunks = split_documents(text)
    limits.check("max_objects", len(chunks), "YAML documents", file=source)
    suspect = _NUMERIC_SUSPECT.search(text) is not None
    return [
        Document(value=_load(chunk, source, line, suspect, last_key_wins), index=index, line=line)
        for index, (chunk, line) in enumerate(chunks)
    ]


def load_one(text: str, source: str, first_line: int = 1, *, last_key_wins: bool = False) -> Any:
    """Parse one YAML document with Kubernetes semantics; errors name ``source`` and the line
    (``last_key_wins`` as in :func:`load_documents`)."""
    text = text.removeprefix(_BOM)
    return _load(text, source, first_line, _NUMERIC_SUSPECT.search(text) is not None, last_key_wins)


def _load(
    text: str, source: str, first_line: int, suspect: bool, last_key_wins: bool = False
) -> Any:
    bounds = limits.current()
    if bounds.max_document_size and len(text) > bounds.max_document_size:
        limits.check("max_document_size", len(text), "YAML document", file=source, line=first_line)
    if not (suspect and _NUMERIC_SUSPECT.search(text)) and not _goyaml_only(text):
        try:
            value = yaml_rs.loads(
                text, parse_datetime=False, alias_limits=_alias_limits(bounds.max_aliases)
            )
        except (yaml_rs.YAMLDecodeError, ValueError, RecursionError):
            pass  # re-parsed below for a precise, uniform message
        else:
            if not isinstance(value, list) or not text.lstrip().startswith("---"):
                if not _needs_goyaml(value, bounds.max_depth):
                    return value
    return _load_goyaml(text, source, first_line, last_key_wins)


@functools.lru_cache(maxsize=4)
def _alias_limits(max_aliases: int) -> Any:
    return yaml_rs.AliasLimits(
        max_total_replayed_events=max_aliases or 2**62, max_replay_stack_depth=64
    )


def _needs_goyaml(value: Any, max_depth: int) -> bool:
    """Whether a yaml-rs value must be re-read by the go-yaml path: a string go-yaml v2 reads
    as a boolean, a key that is not a string (JSON conversion, checks) or too deep a nesting."""
    if type(value) is str:
        return value in _AMBIGUOUS_WORDS
    stack = [(value, 1)]
    limit = max_depth or 2**62
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        values: Iterable[Any]
        if type(item) is dict:
            for key in item:
                if type(key) is not str or key in _AMBIGUOUS_WORDS:
                    return True
            values = item.values()
        elif type(item) is list:
            values = item
        else:
            continue
        for val in values:
            kind = type(val)
            if kind is dict or kind is list:
                stack.append((val, depth + 1))
            elif kind is str:
                if val in _AMBIGUOUS_WORDS:
                    return True
            elif kind is int and not -(2**63) <= val < 2**64:  # a float in Go
                return True
    return False


# --- PyYAML with go-yaml v2 scalar resolution ---------------------------------------------------

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _GoYamlLoader(_Base):  # type: ignore[misc, valid-type]
    """SafeLoader whose plain scalars resolve as go-yaml v2 does (gopkg.in/yaml.v2 resolve.go)."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    yaml_constructors = dict(_Base.yaml_constructors)
    yaml_multi_constructors: dict[str, Any] = {}


_GO_TAG = "tag:helmsim:go-plain"
_YAML_TAG = "tag:yaml.org,2002:"
_STR_TAG = _YAML_TAG + "str"
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
# gopkg.in/yaml.v2 resolve.go allowedTimestampFormats (what an explicit !!timestamp accepts)
_GO_TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:[Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]+)?(?:Z|[-+][0-9]{2}:[0-9]{2})?)?$"
)


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
                number = sign * int(digits, 8)  # Go's strconv.ParseInt(s, 0, 64): leading 0 is octal
            else:
                number = sign * int(digits)
            if -(2**63) <= number < 2**64:  # ParseInt, then ParseUint
                return number
            return float(plain) if _GO_FLOAT.match(plain) else text  # then yamlStyleFloat
        if _GO_FLOAT.match(plain):
            return float(plain)
    return text


def _construct_go_plain(loader: Any, node: yaml.ScalarNode) -> Any:
    return go_plain_scalar(node.value)


_GoYamlLoader.add_constructor(_GO_TAG, _construct_go_plain)


def _short_tag(value: Any) -> str:
    if value is None:
        return "!!null"
    return {bool: "!!bool", int: "!!int", float: "!!float"}.get(type(value), "!!str")


def _shown(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _explicit(tag: str) -> Any:
    """Constructor of an explicitly tagged scalar (``!!int 5``): gopkg.in/yaml.v2 resolve.go
    resolve(tag, in) — the value must resolve to the tag (an int is accepted as a float), else
    "cannot decode !!str `abc` as a !!int". On a mapping or sequence the tag is ignored."""

    def construct(loader: Any, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            return _construct_collection(loader, node)
        text = node.value
        if tag == "!!binary":
            # gopkg.in/yaml.v2 decode.go scalar(): base64-decoded into a string
            try:
                data = base64.b64decode("".join(text.split()), validate=True)
            except (binascii.Error, ValueError):
                raise yaml.constructor.ConstructorError(
                    None, None, "!!binary value contains invalid base64 data", node.start_mark
                ) from None
            return data.decode("utf-8", "replace")
        if tag == "!!timestamp":
            if _GO_TIMESTAMP.match(text):
                return text  # kept as written, as go-yaml v2 keeps timestamps in interface{}
            resolved: Any = text
        else:
            resolved = go_plain_scalar(text)
        rtag = _short_tag(resolved)
        if rtag == tag:
            return resolved
        if tag == "!!float" and rtag == "!!int":
            return float(resolved)
        raise yaml.constructor.ConstructorError(
            None, None, f"cannot decode {rtag} `{_shown(text)}` as a {tag}", node.start_mark
        )

    return construct


for _name in ("int", "float", "bool", "null", "timestamp", "binary"):
    _GoYamlLoader.add_constructor(_YAML_TAG + _name, _explicit("!!" + _name))


def _construct_str(loader: Any, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return node.value
    return _construct_collection(loader, node)


def _construct_collection(loader: Any, node: yaml.Node) -> Any:
    """Any other tag (``!foo``, ``!!set``, ``!!omap``, ``!!python/…``): go-yaml v2 ignores tags it
    does not resolve — a scalar stays its text, a mapping a mapping, a sequence a list."""
    if isinstance(node, yaml.MappingNode):
        return _construct_mapping(loader, node)
    if isinstance(node, yaml.SequenceNode):
        _enter(loader, node)
        try:
            return [loader.construct_object(child, deep=True) for child in node.value]
        finally:
            loader.depth -= 1
    return node.value


def _enter(loader: Any, node: yaml.Node) -> None:
    """Count one more level of nesting; past ``--max-depth`` the document is refused."""
    loader.depth += 1
    if loader.max_depth and loader.depth > loader.max_depth:
        raise limits.exceeded(
            "max_depth",
            f"YAML nested {loader.depth:,} levels deep",
            file=loader.source,
            line=loader.line_offset + 1 + node.start_mark.line,
        )


_GoYamlLoader.add_constructor(_YAML_TAG + "str", _construct_str)
_GoYamlLoader.add_constructor(_YAML_TAG + "seq", _construct_collection)
for _name in ("set", "omap", "pairs"):
    _GoYamlLoader.add_constructor(_YAML_TAG + _name, _construct_collection)
_GoYamlLoader.add_multi_constructor("", lambda loader, _suffix, node: _construct_collection(loader, node))
_GoYamlLoader.add_constructor(None, _construct_collection)


def json_key(key: Any) -> str | None:
    """A decoded mapping key as sigs.k8s.io/yaml converts it for JSON (yaml.go
    convertToJSONableObject): strings as they are, ints in decimal, booleans ``true``/``false``,
    floats as Go's FormatFloat(f, 'g', -1, 32); ``None`` for keys it refuses (null, lists, maps)."""
    kind = type(key)
    if kind is str:
        return key  # type: ignore[no-any-return]
    if kind is bool:
        return "true" if key else "false"
    if kind is int:
        return str(key)
    if kind is float:
        return _go_float32_text(key)
    return None


def _go_float32_text(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32) (with go-yaml's .inf/.nan spellings)."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return ".inf" if value > 0 else "-.inf"
    digits = ""
    for precision in range(1, 10):  # the shortest digits that read back as the same float32
        digits = f"{single:.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(digits)))[0] == single:
            break
    mantissa, _, exp_text = digits.partition("e")
    exponent = int(exp_text)
    if exponent < -4 or exponent >= 21:  # Go's 'g' with shortest digits: %e past 21 digits
        return f"{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    return repr(float(digits)).removesuffix(".0")


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> dict[str, Any]:
    loader.flatten_mapping(node)
    _enter(loader, node)
    offset = loader.line_offset
    lines: dict[str, tuple[int, Any]] = {}  # JSON key -> (0-based line, key as decoded)
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):  # gopkg.in/yaml.v2 decode.go: invalid map key
            raise yaml.constructor.ConstructorError(
                None, None, "invalid map key: a mapping key cannot be a list or a mapping",
                key_node.start_mark,
            )
        tag = key_node.tag
        if tag == _GO_TAG:
            key = go_plain_scalar(key_node.value)
        elif tag == _STR_TAG:
            key = key_node.value
        else:
            key = loader.construct_object(key_node, deep=True)
        text = key if type(key) is str else json_key(key)
        if text is None:
            raise yaml.constructor.ConstructorError(
                None, None, "invalid map key: a mapping key cannot be null", key_node.start_mark
            )
        if text in lines and loader.last_key_wins:
            # Helm's kube client decodes a manifest with sigs.k8s.io/yaml YAMLToJSON (non-strict
            # gopkg.in/yaml.v2 into a map: a repeated key overwrites), so the API server only ever
            # sees the last value (helm/helm pkg/kube/client.go Build, resource.Builder Stream)
            del out[text]
        elif text in lines:
            first, earlier = lines[text]
            if type(earlier) is type(key) and earlier == key:
                # gopkg.in/yaml.v2 decode.go setMapIndex (strict): "key ... already set in map"
                why = f"first at line {first + 1 + offset}"
            else:  # 1 and "1" are one JSON key; sigs.k8s.io/yaml would keep either of them
                why = f"first at line {first + 1 + offset}, the same key once converted to JSON"
            raise yaml.constructor.ConstructorError(
                None, None, f'duplicate mapping key "{_shown(text)}" ({why})', key_node.start_mark
            )
        lines[text] = (key_node.start_mark.line, key)
        out[text] = loader.construct_object(value_node, deep=True)
    loader.depth -= 1
    return out


_GoYamlLoader.add_constructor(_YAML_TAG + "map", _construct_mapping)


def _load_goyaml(text: str, source: str, first_line: int, last_key_wins: bool = False) -> Any:
    try:
        loader = _GoYamlLoader(text)
        loader.last_key_wins = last_key_wins
        loader.line_offset = first_line - 1
        loader.source = source
        loader.depth = 0
        loader.max_depth = limits.current().max_depth
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
            if "&" in text:  # aliases need anchors: only then can a node be reached twice
                _check_node_budget(node, source, first_line)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = first_line + mark.line if mark is not None else first_line
        problem = err.problem or err.context or "invalid YAML"
        max_depth = limits.current().max_depth
        if "maximum nesting depth" in problem and 0 < max_depth < 1000:  # libyaml stops at 1,000
            raise limits.exceeded(
                "max_depth", "YAML nested more than 1,000 levels deep", file=source, line=line
            ) from None
        raise InputError(f"invalid YAML: {one_line(problem)}", file=source, line=line) from None
    except yaml.reader.ReaderError as err:
        # CParser reports the offset in the UTF-8 encoding of the text
        line = first_line + text.encode("utf-8", "surrogatepass")[: max(0, err.position)].count(b"\n")
        char = err.character if isinstance(err.character, int) else ord(str(err.character)[:1] or "?")
        raise InputError(
            f"invalid YAML: unacceptable character #x{char:04x}: {err.reason}", file=source, line=line
        ) from None
    except yaml.YAMLError as err:
        raise InputError(f"invalid YAML: {one_line(str(err))}", file=source, line=first_line) from None
    except UnicodeEncodeError as err:  # a lone surrogate: text that never was UTF-8
        raise InputError(
            f"invalid YAML: unacceptable character #x{ord(text[err.start]):04x}: not Unicode text",
            file=source,
            line=first_line + text.count("\n", 0, err.start),
        ) from None
    except RecursionError:
        raise InputError(
            "invalid YAML: nested too deeply for the parser (lower --max-depth)",
            file=source,
            line=first_line,
        ) from None


def one_line(text: str) -> str:
    """A message on one line: its lines joined with ``; ``."""
    parts = [part.strip() for part in str(text).splitlines() if part.strip()]
    return "; ".join(parts)


def _check_node_budget(root: yaml.Node, source: str, first_line: int) -> None:
    """Refuse a document nested deeper than ``--max-depth``, whose aliases expand to more than
    ``--max-aliases`` nodes (a YAML bomb) or whose anchor contains itself (go-yaml v2 decode.go:
    "anchor '%s' value contains itself"). Iterative: any depth is safe to inspect."""
    bounds = limits.current()
    max_depth = bounds.max_depth or 2**62
    max_replayed = bounds.max_aliases or 2**62
    seen: set[int] = set()
    on_path: set[int] = set()
    replayed = 0
    stack: list[tuple[yaml.Node, int, bool, bool]] = [(root, 1, False, False)]
    while stack:
        node, depth, replay, leaving = stack.pop()
        key = id(node)
        if leaving:
            on_path.discard(key)
            continue
        replay = replay or key in seen
        seen.add(key)
        if replay:
            replayed += 1
            if replayed > max_replayed:
                raise limits.exceeded(
                    "max_aliases",
                    "YAML aliases that expand to more nodes (a YAML bomb?)",
                    file=source,
                    line=first_line,
                )
        if isinstance(node, yaml.ScalarNode):
            continue
        if depth > max_depth:
            raise limits.exceeded(
                "max_depth",
                f"YAML nested {depth:,} levels deep",
                file=source,
                line=first_line + node.start_mark.line,
            )
        if key in on_path:
            raise InputError(
                "invalid YAML: an anchor's value contains an alias of itself",
                file=source,
                line=first_line + node.start_mark.line,
            )
        on_path.add(key)
        stack.append((node, depth, replay, True))
        children = (
            node.value if isinstance(node, yaml.SequenceNode) else [c for kv in node.value for c in kv]
        )
        for child in reversed(children):
            stack.append((child, depth + 1, replay, False))


# --- where keys are -------------------------------------------------------------------------------


def _key_text(node: yaml.Node) -> Any:
    """A key node as the decoded document spells it (plain keys resolved and JSON-converted)."""
    if not isinstance(node, yaml.ScalarNode):
        return None
    if node.tag == _GO_TAG:
        return json_key(go_plain_scalar(node.value)) or node.value
    return node.value


class _KeyLineLoader(_Base):  # type: ignore[misc, valid-type]
    """A composer whose plain scalars carry the go-plain tag, so keys resolve as in documents."""

    yaml_implicit_resolvers = _GoYamlLoader.yaml_implicit_resolvers


def key_lines(text: str) -> dict[tuple[Any, ...], int]:
    """Each key path (and list index path) of a YAML document → its 1-based line, via PyYAML's
    composer; for pointing an error at the field it is about. Best effort: ``{}`` on bad YAML."""
    try:
        root = yaml.compose(text.removeprefix(_BOM), Loader=_KeyLineLoader)
    except (yaml.YAMLError, RecursionError):
        return {}
    out: dict[tuple[Any, ...], int] = {}
    stack: list[tuple[yaml.Node, tuple[Any, ...]]] = [(root, ())] if root is not None else []
    seen: set[int] = set()
    budget = 1_000_000  # aliases are not re-walked; this bounds a pathological document
    while stack and budget > 0:
        node, path = stack.pop()
        budget -= 1
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = _key_text(key)
                if name is None:
                    continue
                sub = (*path, name)
                out.setdefault(sub, key.start_mark.line + 1)
                stack.append((value, sub))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                sub = (*path, i)
                out.setdefault(sub, item.start_mark.line + 1)
                stack.append((item, sub))
    return out


def line_in(text: str, doc: Document, path: tuple[Any, ...]) -> int:
    """The file line of key ``path`` in document ``doc`` of ``text`` (the document's first line
    when the key is not found)."""
    chunks = split_documents(text.removeprefix(_BOM))
    if doc.index >= len(chunks):
        return doc.line
    lines = key_lines(chunks[doc.index][0])
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return doc.line + lines[path[:end]] - 1
    return doc.line


def non_json_number(value: Any) -> tuple[tuple[Any, ...], float] | None:
    """The path and value of the first NaN or infinite number in ``value``: JSON has no such
    numbers, so sigs.k8s.io/yaml (YAMLToJSON, json.Marshal) refuses them wherever Kubernetes or
    Helm read YAML ("json: unsupported value: +Inf")."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        kind = type(item)
        if kind is float and not math.isfinite(item):
            return path, item
        if kind is dict:
            stack.extend((v, (*path, k)) for k, v in item.items())
        elif kind is list:
            stack.extend((v, (*path, i)) for i, v in enumerate(item))
    return None


def go_float_text(value: float) -> str:
    """How Go's encoding/json names a number it refuses: ``+Inf``, ``-Inf``, ``NaN``."""
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def check_json_numbers(value: Any, text: str, doc: Document, source: str, what: str) -> None:
    """Refuse a NaN or infinity in ``value`` (document ``doc`` of ``text``) with its line, as
    Helm refuses such values: "json: unsupported value: +Inf"."""
    found = non_json_number(value)
    if found is None:
        return
    path, number = found
    where = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path).replace(".[", "[")
    raise InputError(
        f"{what} {where}: {go_float_text(number)} cannot be converted to JSON as Helm and "
        f"Kubernetes require (json: unsupported value: {go_float_text(number)})",
        file=source,
        line=line_in(text, doc, path),
    )
