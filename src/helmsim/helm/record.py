"""Helm's release record as the API server receives it, and the limits that refuse it.

Helm stores each revision in a Secret ``sh.helm.release.v1.<name>.v<revision>`` whose
``data.release`` is ``base64(gzip(json(release)))`` (helm/helm pkg/storage/driver/util.go
encodeRelease, gzip.BestCompression; pkg/storage/driver/secrets.go newSecretsObject). The JSON
holds the top-level chart as loaded (metadata, templates, values, schema and every other file,
as base64: pkg/chart/v2/chart.go; its subcharts are unexported, so not stored), the values the
user gave (``config``), the rendered manifest, the hooks and the rendered notes
(pkg/release/v1/release.go). The API server refuses a Secret whose data exceed 1 MiB
(kubernetes pkg/apis/core/validation/validation.go ValidateSecret) and a request body over
3 MiB (k8s.io/apiserver pkg/server/config.go MaxRequestBodyBytes).

helmsim builds the same JSON from Helm's loaded chart and compresses it with zlib, which bounds
what Go's compress/flate gives (:func:`gzip_range`); a record whose range holds a limit is said
to be uncertain rather than judged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import tarfile
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct

MAX_SECRET_SIZE = 1024 * 1024  # kubernetes pkg/apis/core/types.go MaxSecretSize
MAX_REQUEST_BODY = 3 * 1024 * 1024  # k8s.io/apiserver pkg/server/config.go MaxRequestBodyBytes
MARGIN = 0.01
"""How far beyond zlib's two sizes Go's gzip may land (the largest miss measured: 0.06 %)."""
_GZIP_LIMIT = MAX_SECRET_SIZE * 3 // 4  # the most gzip bytes whose base64 fits in 1 MiB
_SECRET_OVERHEAD = 400
"""Bytes of the Secret's JSON body besides ``data.release`` (apiVersion, kind, name, labels)."""
_ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time, as chart.SchemaModTime marshals
_FILE_TIME = "2026-01-01T00:00:00.000000000Z"
"""A file's ``modtime`` (pkg/chart/common/file.go): its length, not its value, counts."""


class ChartRecord(Struct, frozen=True):
    """The chart's part of a release record: its Go JSON and its largest stored files."""

    json: str
    largest: tuple[tuple[str, int], ...] = ()
    """(file, bytes) of the chart's largest templates and files, largest first (at most 5)."""


class RecordSize(Struct, frozen=True):
    """How big Helm's release record is: its JSON and, when the JSON alone cannot show that
    the record fits, the range the base64 of Go's gzip of it lies in (``data.release``)."""

    json_bytes: int
    stored: tuple[int, int] | None
    largest: tuple[tuple[str, int], ...] = ()

    @property
    def body(self) -> tuple[int, int] | None:
        """The range of the Secret's JSON request body (``data.release`` is base64 again)."""
        if self.stored is None:
            return None
        low, high = self.stored
        return 4 * -(-low // 3) + _SECRET_OVERHEAD, 4 * -(-high // 3) + _SECRET_OVERHEAD


def go_json(value: Any, *, sort: bool = True) -> str:
    """``encoding/json`` Marshal's compact text: map keys sorted, ``<``, ``>``, ``&`` and the
    line separators escaped as Go escapes them for HTML (encoding/json encode.go)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort, allow_nan=False)
    for char, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def raw_bytes(text: str) -> bytes:
    """The bytes a string from Helm's loader came from: Go's encoding/json replaced each invalid
    UTF-8 byte by U+FFFD, so such a character stands for one byte (its value is lost)."""
    return b"\xff".join(part.encode("utf-8", "surrogatepass") for part in text.split("\ufffd"))


def read_raw(chart_path: str, name: str) -> bytes | None:
    """The bytes of ``name`` in the chart directory or ``.tgz`` Helm loaded (None: unread)."""
    path = Path(chart_path)
    try:
        if path.is_dir():
            return (path / name).read_bytes()
        with tarfile.open(path, "r:*") as archive:
            for member in archive:
                # helm/helm pkg/chart/loader/archive/archive.go: the first path part is the chart's
                _, _, inner = member.name.partition("/")
                if inner == name and member.isfile():
                    data = archive.extractfile(member)
                    return data.read() if data is not None else None
    except (OSError, tarfile.TarError):
        return None
    return None


def _file_entry(name: str, data: bytes) -> str:
    return f'{{"name":{go_json(name)},"data":"{base64.b64encode(data).decode()}","modtime":"{_FILE_TIME}"}}'


def chart_record(
    chart_path: str,
    metadata: Mapping[str, Any],
    templates: Sequence[Mapping[str, str]],
    values: Mapping[str, Any],
    files: Sequence[Mapping[str, str]],
    schema_present: bool,
) -> ChartRecord:
    """The chart as helm/helm pkg/chart/v2/chart.go marshals it (struct fields in order), from
    Helm's loaded chart: a template or file whose text holds U+FFFD (not UTF-8) and the schema
    (stored as its file's bytes) are read from ``chart_path``."""
    sizes: list[tuple[str, int]] = []

    def entries(items: Sequence[Mapping[str, str]]) -> str:
        out = []
        for item in items:
            name, text = str(item.get("name", "")), str(item.get("data", ""))
            data = (read_raw(chart_path, name) if "\ufffd" in text else None) or raw_bytes(text)
            sizes.append((name, len(data)))
            out.append(_file_entry(name, data))
        return "[" + ",".join(out) + "]"

    schema = read_raw(chart_path, "values.schema.json") if schema_present else None
    if schema is not None:
        sizes.append(("values.schema.json", len(schema)))
    parts = [
        f'"metadata":{go_json(dict(metadata), sort=False)}',
        '"lock":null',
        f'"templates":{entries(templates)}',
        f'"values":{go_json(dict(values))}',
        f'"schema":{go_json(base64.b64encode(schema).decode()) if schema is not None else "null"}',
        f'"schemamodtime":"{_ZERO_TIME}"',
        f'"files":{entries(files)}',
        f'"modtime":"{_FILE_TIME}"',
    ]
    largest = tuple(sorted(sizes, key=lambda s: (-s[1], s[0]))[:5])
    return ChartRecord("{" + ",".join(parts) + "}", largest)


class StoredHook(Struct, frozen=True):
    """A hook as pkg/release/v1/hook.go marshals it (its manifest is in ``manifest`` text)."""

    name: str
    kind: str
    path: str
    events: tuple[str, ...]
    weight: int
    delete_policies: tuple[str, ...]


def release_json(
    chart: ChartRecord,
    *,
    name: str,
    namespace: str,
    revision: int,
    config: Mapping[str, Any],
    manifests: Iterable[tuple[str, str]],
    hooks: Sequence[StoredHook] = (),
    notes: str = "",
    apply_method: str = "ssa",
) -> str:
    """The release as helm/helm pkg/release/v1/release.go marshals it at ``Releases.Create``:
    ``manifests`` are the (template, text) Helm renders, written as pkg/action/action.go
    renderResources joins them (``---\\n# Source: …``). A hook's manifest is counted there too
    (Helm keeps it in the hook's entry instead: the same bytes)."""
    manifest_parts: list[str] = []
    for source, text in manifests:
        for doc in text.split("\n---"):
            doc = doc.strip("-\n ")
            if doc:
                manifest_parts.append(f"---\n# Source: {source}\n{doc}\n")
    info = {
        "first_deployed": _FILE_TIME,
        "last_deployed": _FILE_TIME,
        "description": "Initial install underway" if revision == 1 else "Preparing upgrade",
        "status": "pending-install" if revision == 1 else "pending-upgrade",
    }
    if notes:
        info["notes"] = notes
    stored_hooks = [
        {
            "name": h.name,
            "kind": h.kind,
            "path": h.path,
            "manifest": "",
            "events": list(h.events),
            "last_run": {"phase": ""},
            **({"weight": h.weight} if h.weight else {}),
            **({"delete_policies": list(h.delete_policies)} if h.delete_policies else {}),
        }
        for h in hooks
    ]
    parts = [
        f'"name":{go_json(name)}',
        f'"info":{go_json(info, sort=False)}',
        f'"chart":{chart.json}',
        *([f'"config":{go_json(dict(config))}'] if config else []),
        f'"manifest":{go_json("".join(manifest_parts))}',
        *([f'"hooks":{go_json(stored_hooks, sort=False)}'] if stored_hooks else []),
        f'"version":{revision}',
        f'"namespace":{go_json(namespace)}',
        f'"apply_method":{go_json(apply_method)}',
    ]
    return "{" + ",".join(parts) + "}"


_MEASURED: dict[str, tuple[int, int]] = {}
"""gzip size ranges by the SHA-256 of the JSON: a check's profiles store the same record."""


def gzip_range(data: bytes) -> tuple[int, int]:
    """The sizes Go's gzip.BestCompression of ``data`` lies between: zlib at level 9 with its
    default strategy and with Z_FILTERED, widened by ``MARGIN``. Go's compress/flate takes
    matches of 4 bytes or more (deflate.go minMatchLength) where zlib takes 3, so it lands
    between zlib's two strategies (measured on ten inputs with Go 1.19: tests/unit/test_record.py)."""
    key = hashlib.sha256(data).hexdigest()
    hit = _MEASURED.get(key)
    if hit is None:
        sizes = []
        for strategy in (zlib.Z_DEFAULT_STRATEGY, zlib.Z_FILTERED):
            compressor = zlib.compressobj(9, zlib.DEFLATED, 31, 9, strategy)  # wbits 31: gzip framing
            sizes.append(len(compressor.compress(data)) + len(compressor.flush()))
        hit = (int(min(sizes) * (1 - MARGIN)), int(max(sizes) * (1 + MARGIN)) + 1)
        if len(_MEASURED) >= 64:
            _MEASURED.pop(next(iter(_MEASURED)))
        _MEASURED[key] = hit
    return hit


def measure(text: str, largest: tuple[tuple[str, int], ...] = ()) -> RecordSize:
    """The record's size: gzip is computed only when the JSON is too big to fit for sure (gzip
    never grows data by more than 5 bytes per 16 KiB block and an 18-byte frame)."""
    data = text.encode("utf-8")
    bound = len(data) + 5 * (len(data) // 16384 + 1) + 18
    if bound <= _GZIP_LIMIT:
        return RecordSize(len(data), None, largest)
    low, high = gzip_range(data)
    return RecordSize(len(data), (4 * -(-low // 3), 4 * -(-high // 3)), largest)


def refusal(size: RecordSize | None, secret: str, kube_version: str) -> str | None:
    """The API server's answer to Helm's ``Secrets.Create`` of this record when every size it
    may have is refused (None: stored, or not sure: see :func:`uncertainty`).

    Over 3 MiB of body the request is refused before it is decoded
    (k8s.io/apiserver pkg/endpoints/handlers/rest.go limitedReadBody); otherwise a data over
    1 MiB fails validation, its text ``field.TooLong`` gives (apimachinery
    pkg/util/validation/field/errors.go: "must have at most N bytes" until Kubernetes 1.31,
    "may not be more than N bytes" from 1.32, kubernetes/kubernetes#128553).
    """
    if size is None or size.stored is None or size.body is None:
        return None
    if size.body[0] > MAX_REQUEST_BODY:
        return f"Request entity too large: limit is {MAX_REQUEST_BODY}"
    if size.stored[0] > MAX_SECRET_SIZE:
        detail = "may not be more than" if _minor(kube_version) >= 32 else "must have at most"
        return f'Secret "{secret}" is invalid: data: Too long: {detail} {MAX_SECRET_SIZE} bytes'
    return None


def _minor(kube_version: str) -> int:
    parts = kube_version.lstrip("v").split(".")
    try:
        return int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return 0


def uncertainty(size: RecordSize | None) -> str | None:
    """A note when the record's size range holds the 1 MiB limit: it may or may not be stored."""
    if size is None or size.stored is None:
        return None
    low, high = size.stored
    if not low <= MAX_SECRET_SIZE < high:
        return None
    return (
        f"Helm's release record (its Secret's data) is between {low:,} and {high:,} bytes and the "
        f"API server refuses more than {MAX_SECRET_SIZE:,}: helmsim compresses it with zlib, not "
        "Go's gzip, so it cannot tell whether the install stores it (largest: "
        + ", ".join(f"{name} {n:,} bytes" for name, n in size.largest[:3])
        + ")"
    )


def secret_name(name: str, revision: int) -> str:
    """helm/helm pkg/storage/storage.go makeKey: ``sh.helm.release.v1.<name>.v<revision>``."""
    return f"sh.helm.release.v1.{name}.v{revision}"
