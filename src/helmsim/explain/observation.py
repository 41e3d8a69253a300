"""Observation files: what was seen on a real cluster, for ``helmsim explain``.

An observation (``apiVersion: helmsim.dev/v1alpha1``, ``kind: Observation``; docs/explain.md,
JSON Schema in docs/observation.schema.json) holds the HelmRelease's Ready condition as seen,
optionally workloads' pod counts and log lines, ``kubectl get events -o yaml`` output as is, and
rough times. :func:`load_observation` validates it; bad input raises ``InputError`` naming the
file and line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from msgspec import Struct
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from helmsim.errors import InputError
from helmsim.kube.duration import Seconds
from helmsim.scenario import _input_error  # one reading of pydantic errors as file:line
from helmsim.yamlio import key_lines, load_one, read_text

API_VERSION = "helmsim.dev/v1alpha1"
KIND = "Observation"


class _Model(BaseModel):
    model_config = ConfigDict(
        defer_build=True, extra="forbid", strict=True, frozen=True, alias_generator=to_camel, populate_by_name=True
    )


class ReleaseSeen(_Model):
    """The HelmRelease's Ready condition as ``kubectl get helmrelease`` showed it."""

    name: str | None = None
    """``namespace/name`` or ``name``; optional when one release is explained."""
    ready: Literal["True", "False", "Unknown"] | None = None
    message: str | None = None
    """The Ready message; generated name suffixes and chart build metadata are ignored."""
    message_contains: str | None = None
    failures: int | None = Field(default=None, ge=0)
    """How many install/upgrade attempts had failed when it was seen."""
    after: Seconds | None = None
    """Roughly how long after the upgrade (or install) started the message appeared."""

    @field_validator("ready", mode="before")
    @classmethod
    def _bool(cls, v: Any) -> Any:
        return str(v) if isinstance(v, bool) else v


class LogSeen(_Model):
    """A line each of the listed pods logged (1-based, in creation order; default: every pod)."""

    line: str = Field(min_length=1)
    pods: Literal["all"] | list[int] = "all"

    @field_validator("pods")
    @classmethod
    def _positive(cls, v: Any) -> Any:
        if isinstance(v, list) and any(i < 1 for i in v):
            raise ValueError("pods are numbered from 1")
        return v


class WorkloadSeen(_Model):
    """A workload's pods: how many were created, what they logged, how long it all took."""

    object: str = Field(min_length=3)
    """``Kind/namespace/name``; the name may be a glob (``*-migrate-*``)."""
    pods: int | None = Field(default=None, ge=0)
    logs: list[LogSeen] = Field(default_factory=list)
    span: Seconds | None = None
    """Roughly from its first pod's creation to its last pod's end."""

    @field_validator("object")
    @classmethod
    def _ref(cls, v: str) -> str:
        if v.count("/") != 2 or not all(v.split("/")):
            raise ValueError(f"{v!r} is not Kind/namespace/name")
        return v


class EventSeen(_Model):
    """One Kubernetes Event as ``kubectl get events -o yaml`` prints it (other keys ignored)."""

    model_config = ConfigDict(
        defer_build=True, extra="ignore", strict=False, frozen=True, alias_generator=to_camel, populate_by_name=True
    )

    reason: str = Field(min_length=1)
    type: str = "Normal"
    message: str = ""
    involved_object: dict[str, Any] = Field(alias="involvedObject")
    count: int | None = None

    @model_validator(mode="after")
    def _object(self) -> EventSeen:
        if not self.involved_object.get("kind") or not self.involved_object.get("name"):
            raise ValueError("involvedObject needs kind and name")
        return self

    @property
    def ref(self) -> str:
        o = self.involved_object
        return f"{o.get('kind')}/{o.get('namespace') or ''}/{o.get('name')}"


class Observation(_Model):
    """Everything seen; each part is optional but at least one must be given."""

    api_version: Literal["helmsim.dev/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Observation"]
    metadata: dict[str, Any] = Field(default_factory=dict)
    helm_release: ReleaseSeen | None = None
    workloads: list[WorkloadSeen] = Field(default_factory=list)
    events: list[EventSeen] = Field(default_factory=list)
    """Items of ``kubectl get events -o yaml`` (or the whole ``kind: List`` object)."""
    events_file: str | None = None
    """A file holding ``kubectl get events -o yaml`` output, relative to this file."""
    tolerance: float = Field(default=0.5, gt=0, le=10)
    """Relative tolerance of rough times (``after``, ``span``); at least 15 s either way."""

    @field_validator("events", mode="before")
    @classmethod
    def _list_object(cls, v: Any) -> Any:
        if isinstance(v, Mapping) and v.get("kind") == "List":
            return v.get("items") or []
        return v

    @model_validator(mode="after")
    def _something(self) -> Observation:
        if self.helm_release is None and not self.workloads and not self.events and not self.events_file:
            raise ValueError("an observation needs helmRelease, workloads or events")
        return self

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "observation")


class LoadedObservation(Struct, frozen=True):
    """A validated observation, its events (inline and from ``eventsFile``) and where it is."""

    observation: Observation
    events: tuple[EventSeen, ...]
    path: Path


def load_observation(path: str | Path) -> LoadedObservation:
    """Read and validate an observation file (one line ``file:line: …`` on bad input)."""
    p = Path(path)
    return parse_observation(read_text(p, "observation file"), p)


def parse_observation(text: str, path: Path) -> LoadedObservation:
    """Validate observation ``text`` read from ``path``."""
    data = load_one(text, str(path))
    if not isinstance(data, dict):
        raise InputError("an observation must be a YAML mapping", file=str(path), line=1)
    lines = key_lines(text)
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        raise InputError(
            f"not an observation: expected apiVersion {API_VERSION} and kind {KIND}",
            file=str(path),
            line=lines.get(("kind",)) or lines.get(("apiVersion",)) or 1,
        )
    try:
        obs = Observation.model_validate(data)
    except ValidationError as err:
        bad = _input_error(err, lines, str(path))
        raise InputError(bad.message, file=str(path), line=bad.line or 1) from None
    events = list(obs.events)
    if obs.events_file:
        events.extend(_events_file(path.parent / obs.events_file, str(path), lines.get(("eventsFile",))))
    return LoadedObservation(obs, tuple(events), path)


def _events_file(path: Path, owner: str, line: int | None) -> list[EventSeen]:
    if not path.is_file():
        raise InputError(f"eventsFile: no such file {str(path)!r}", file=owner, line=line)
    text = read_text(path, "events file")
    data = load_one(text, str(path))
    items = data.get("items") if isinstance(data, Mapping) and data.get("kind") == "List" else data
    if not isinstance(items, list):
        raise InputError("events: expected `kubectl get events -o yaml` output (a List)", file=str(path), line=1)
    lines = key_lines(text)
    out = []
    for i, item in enumerate(items):
        try:
            out.append(EventSeen.model_validate(item))
        except ValidationError as err:
            first = err.errors(include_url=False)[0]
            where = ("items", i) if isinstance(data, Mapping) else (i,)
            msg = str(first["msg"]).removeprefix("Value error, ")
            loc = ".".join(str(x) for x in first["loc"])
            raise InputError(f"items[{i}]{'.' + loc if loc else ''}: {msg}", file=str(path), line=lines.get(where) or 1) from None
    return out


def json_schema() -> dict[str, Any]:
    """The JSON Schema of observation files (docs/observation.schema.json)."""
    schema = Observation.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://helmsim.dev/schemas/observation-v1alpha1.json"
    schema["title"] = "helmsim Observation (helmsim.dev/v1alpha1)"
    return schema
