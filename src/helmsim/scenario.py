"""Scenario files: a profile, releases, behaviour overrides, faults and expectations in one YAML.

``apiVersion: helmsim.dev/v1alpha1``, ``kind: Scenario``; validated by :class:`Scenario`
(docs/scenarios.md, JSON Schema in docs/scenario.schema.json). :func:`load_scenario` reads a
file (errors name the file and line of the offending key); :func:`run_scenario` simulates it.
Paths inside a scenario are relative to the scenario file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Struct
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from helmsim import render
from helmsim.cluster.behaviour import BehaviourOverride, parse_need
from helmsim.cluster.catalog import EntrySpec
from helmsim.cluster.profile import ClusterProfile, load_profile, profile_from_mapping
from helmsim.errors import InputError
from helmsim.kube.duration import Seconds
from helmsim.simulate import DEFAULT_HORIZON, UNMAPPED_READY_AFTER, ReleaseInput, SimulationResult
from helmsim.yamlio import key_lines, load_one, read_text

API_VERSION = "helmsim.dev/v1alpha1"
KIND = "Scenario"
SUFFIXES = (".helmsim.yaml", ".helmsim.yml")
"""Scenario files are recognised in directories by these suffixes."""


def is_scenario_name(name: str) -> bool:
    """A file name ending in one of :data:`SUFFIXES`, other than the config file's own
    (``.helmsim.yaml``, :mod:`helmsim.config`), which sits beside charts and Flux trees."""
    return name.endswith(SUFFIXES) and name not in SUFFIXES

# Owners of pods by workload kind: a Deployment's pods belong to its ReplicaSets
# (kubernetes pkg/controller/deployment: ReplicaSet name = <deployment>-<pod-template-hash>),
# a CronJob's to its Jobs (pkg/controller/cronjob: Job name = <cronjob>-<scheduled time>).
_OWNER_OF_PODS = {"Deployment": "ReplicaSet", "CronJob": "Job"}
_WORKLOAD_KINDS = ("Pod", "Job", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "CronJob")


class _Model(BaseModel):
    """camelCase keys in YAML, unknown keys refused."""

    model_config = ConfigDict(defer_build=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


# --- matching workloads --------------------------------------------------------------------------


class Match(_Model):
    """Which containers: the workload by kind, namespace and name (shell globs), and container.

    ``kind: Job, name: "*-migrate-*"`` matches the pods of those Jobs; ``kind: Pod`` matches pod
    names. ``None`` matches anything.
    """

    kind: Literal["Pod", "Job", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "CronJob"] | None = None
    namespace: str | None = None
    name: str | None = None
    container: str | None = None

    def override(self, **values: Any) -> BehaviourOverride:
        """A :class:`BehaviourOverride` with this match and ``values``."""
        pod = owner = None
        if self.kind == "Pod":
            pod = self.name
        elif self.kind is not None:
            owner_kind = _OWNER_OF_PODS.get(self.kind, self.kind)
            name = self.name or "*"
            if owner_kind != self.kind and not name.endswith("*"):
                name += "-*"
            owner = f"{owner_kind}/{name}"
        elif self.name is not None:
            owner = f"*/{self.name}"
        return BehaviourOverride(
            namespace=self.namespace, pod=pod, owner=owner, container=self.container, **values
        )

    def matches(self, pod: Mapping[str, Any], container: str) -> bool:
        """Whether ``container`` of ``pod`` is matched."""
        return self.override().matches(pod, container)

    def describe(self) -> str:
        parts = [f"{self.kind or '*'}/{self.namespace or '*'}/{self.name or '*'}"]
        if self.container:
            parts.append(f"container {self.container}")
        return " ".join(parts)


class Behaviour(_Model):
    """A behaviour override: the same fields as the ``helmsim.dev/*`` pod annotations."""

    match: Match = Field(default_factory=Match)
    needs: list[str] | None = None
    """``helmsim.dev/needs``: kube-apiserver, dns, host:port, svc/<ns>/<name>:<port>, CIDR:port."""
    run_seconds: Seconds | Literal["forever"] | None = None
    """``helmsim.dev/run-seconds``: how long each run lasts, or ``forever``."""
    exit_code: int | None = Field(default=None, ge=0, le=255)
    """``helmsim.dev/exit-code``: the exit code of every run."""
    connect_timeout_seconds: Seconds | None = None
    """``helmsim.dev/connect-timeout-seconds``."""

    @field_validator("needs")
    @classmethod
    def _needs(cls, v: list[str] | None) -> list[str] | None:
        for item in v or ():
            try:
                parse_need(item, namespace="default", where="")
            except InputError as err:
                raise ValueError(err.message.removeprefix(": ")) from None
        return v

    def to_override(self) -> BehaviourOverride:
        return self.match.override(
            needs=None if self.needs is None else tuple(self.needs),
            run_seconds=self.run_seconds if isinstance(self.run_seconds, float) else None,
            run_forever=self.run_seconds == "forever",
            exit_code=self.exit_code,
            connect_timeout=self.connect_timeout_seconds,
        )


# --- faults --------------------------------------------------------------------------------------


class Attempts(_Model):
    """Attempts ``from``..``to`` (1-based, inclusive; ``to`` omitted: every later attempt)."""

    from_: int = Field(default=1, ge=1, alias="from")
    to: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _order(self) -> Attempts:
        if self.to is not None and self.to < self.from_:
            raise ValueError(f"attempts: to ({self.to}) is before from ({self.from_})")
        return self

    def covers(self, attempt: int) -> bool:
        return attempt >= self.from_ and (self.to is None or attempt <= self.to)

    def describe(self) -> str:
        if self.to is None:
            return f"attempts {self.from_}+" if self.from_ > 1 else "every attempt"
        return f"attempt {self.from_}" if self.to == self.from_ else f"attempts {self.from_}-{self.to}"


class ContainerExit(_Model):
    """Matching containers exit with ``exitCode`` (logging ``message``) on attempts N..M.

    Attempts count the runs of matching containers per workload (a Job's pods, a pod's restarts).
    """

    match: Match
    exit_code: int = Field(ge=0, le=255)
    message: str = ""
    attempts: Attempts = Field(default_factory=Attempts)


class ImagePull(_Model):
    """Image pulls of matching containers (and ``image`` glob) fail with ``error`` or take
    ``delay`` longer, on pull attempts N..M."""

    match: Match = Field(default_factory=Match)
    image: str | None = None
    error: str | None = None
    delay: Seconds | None = None
    attempts: Attempts = Field(default_factory=Attempts)

    @model_validator(mode="after")
    def _one(self) -> ImagePull:
        if (self.error is None) == (self.delay is None):
            raise ValueError("imagePull: give exactly one of error or delay")
        return self


class ApiserverOutage(_Model):
    """The API server is unreachable from ``from`` to ``to`` (simulated time)."""

    from_: Seconds = Field(alias="from")
    to: Seconds

    @model_validator(mode="after")
    def _order(self) -> ApiserverOutage:
        if self.to <= self.from_:
            raise ValueError("apiserverOutage: to must be after from")
        return self


class Provisioner(_Model):
    """The external provisioner ``name`` (glob) fails each attempt N..M with ``error``, or takes
    ``delay`` longer per volume."""

    name: str = "*"
    error: str | None = None
    delay: Seconds | None = None
    attempts: Attempts = Field(default_factory=Attempts)

    @model_validator(mode="after")
    def _one(self) -> Provisioner:
        if (self.error is None) == (self.delay is None):
            raise ValueError("provisioner: give exactly one of error or delay")
        return self


class PolicyPropagation(_Model):
    """Policies matching ``policy`` (``Kind/namespace/name`` glob) take effect ``delay`` later."""

    policy: str
    delay: Seconds


class NodeLost(_Model):
    """Node ``node`` is lost at ``at``: its pods stop, the Node goes away, PodGC deletes them."""

    node: str
    at: Seconds


class EndpointInit(_Model):
    """Matching pods' Cilium endpoints keep the ``reserved:init`` identity for ``seconds`` after
    their build (``null``: they never get their own), on pod attempts N..M of each workload."""

    match: Match = Field(default_factory=Match)
    seconds: Seconds | None = None
    attempts: Attempts = Field(default_factory=Attempts)


class ApiserverIdentity(_Model):
    """The ``kube-apiserver`` identity label is missing on API server backends from ``from`` to
    ``to`` (``null``: until the end): ``all`` of them, the first N, or those IPs / node names."""

    backends: Literal["all"] | int | list[str] = "all"
    from_: Seconds = Field(default=0.0, alias="from")
    to: Seconds | None = None

    @model_validator(mode="after")
    def _order(self) -> ApiserverIdentity:
        if self.to is not None and self.to <= self.from_:
            raise ValueError("apiserverIdentity: to must be after from")
        if isinstance(self.backends, int) and self.backends < 1:
            raise ValueError("apiserverIdentity: backends must be at least 1")
        return self


class AgentStall(_Model):
    """The Cilium agent on the nodes matching ``node`` (glob) imports no policy from ``from`` to
    ``to`` (``null``: never again); what arrives meanwhile is enforced there at ``to``."""

    node: str = "*"
    from_: Seconds = Field(default=0.0, alias="from")
    to: Seconds | None = None

    @model_validator(mode="after")
    def _order(self) -> AgentStall:
        if self.to is not None and self.to <= self.from_:
            raise ValueError("agentStall: to must be after from")
        return self


class DnsProxy(_Model):
    """The Cilium agent's DNS proxy on the nodes matching ``node`` (glob) is not ready from
    ``from`` to ``to`` (``null``: until the end), as while an agent restarts: DNS queries policy
    sends through it (a port with ``rules.dns``) go unanswered."""

    node: str = "*"
    from_: Seconds = Field(default=0.0, alias="from")
    to: Seconds | None = None

    @model_validator(mode="after")
    def _order(self) -> DnsProxy:
        if self.to is not None and self.to <= self.from_:
            raise ValueError("dnsProxy: to must be after from")
        return self


class ObjectChange(_Model):
    """At ``at``, another field manager (``manager``, e.g. someone's ``kubectl edit``) changes
    the live ``object`` (``Kind/namespace/name``): ``set`` JSON pointers to values, or
    ``delete`` it. What helm-controller's drift detection sees (docs/flux.md)."""

    at: Seconds
    object: str = Field(pattern=r"^[A-Za-z0-9]+/([^/]+/)?[^/]+$")
    manager: str = "kubectl-edit"
    set: dict[str, Any] = Field(default_factory=dict)
    delete: bool = False

    @model_validator(mode="after")
    def _one_change(self) -> ObjectChange:
        if self.delete == bool(self.set):
            raise ValueError("objectChange: give either set or delete: true")
        bad = next((p for p in self.set if not p.startswith("/")), None)
        if bad is not None:
            raise ValueError(f"objectChange: {bad!r} is not a JSON pointer (it starts with /)")
        return self


class Fault(_Model):
    """Exactly one fault."""

    container_exit: ContainerExit | None = None
    image_pull: ImagePull | None = None
    apiserver_outage: ApiserverOutage | None = None
    provisioner: Provisioner | None = None
    policy_propagation: PolicyPropagation | None = None
    node_lost: NodeLost | None = None
    endpoint_init: EndpointInit | None = None
    apiserver_identity: ApiserverIdentity | None = None
    agent_stall: AgentStall | None = None
    dns_proxy: DnsProxy | None = None
    object_change: ObjectChange | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Fault:
        set_ = [k for k in _FAULT_KEYS if getattr(self, _snake(k)) is not None]
        if len(set_) != 1:
            raise ValueError("a fault has exactly one of: " + ", ".join(_FAULT_KEYS))
        return self

    @property
    def kind(self) -> str:
        return next(k for k in _FAULT_KEYS if getattr(self, _snake(k)) is not None)

    @property
    def spec(self) -> Any:
        return getattr(self, _snake(self.kind))


_FAULT_KEYS = (
    "containerExit",
    "imagePull",
    "apiserverOutage",
    "provisioner",
    "policyPropagation",
    "nodeLost",
    "endpointInit",
    "apiserverIdentity",
    "agentStall",
    "dnsProxy",
    "objectChange",
)


def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in camel)


# --- expectations --------------------------------------------------------------------------------

Outcome = Literal["Ready", "Failed", "Stalled", "Blocked", "Progressing"]


class _Expect(_Model):
    name: str | None = None
    """A label for reports (default: generated from the fields)."""
    min_probability: float | None = Field(default=None, ge=0, le=1)
    """Monte Carlo only: pass when the expectation holds in at least this share of runs
    (default: every run)."""


class ReleaseExpect(_Expect):
    """A HelmRelease's predicted outcome, Ready condition, messages, attempts, Helm status."""

    release: str
    """``namespace/name`` or ``name`` of the HelmRelease."""
    outcome: Outcome | None = None
    ready: Literal["True", "False", "Unknown"] | None = None
    reason: str | None = None
    message: str | None = None
    message_contains: str | None = None
    attempts: int | None = Field(default=None, ge=0)
    max_attempts: int | None = Field(default=None, ge=0)
    helm_status: str | None = None
    """Status of the latest Helm revision (deployed, failed, superseded, uninstalled …)."""
    within: Seconds | None = None
    """Ready within this long (of the upgrade start when ``upgradeFrom`` is used)."""

    @field_validator("ready", mode="before")
    @classmethod
    def _bool(cls, v: Any) -> Any:
        return str(v) if isinstance(v, bool) else v


class ObjectExpect(_Expect):
    """A release object's final kstatus, or how many pods a workload created (attempts)."""

    object: str
    """``Kind/namespace/name`` (name may be a glob; every match must hold)."""
    status: Literal["InProgress", "Failed", "Current", "Terminating", "NotFound", "Unknown"] | None = None
    attempts: int | None = Field(default=None, ge=0)
    """Pods created for it (a Job's attempts)."""
    max_attempts: int | None = Field(default=None, ge=0)


class EventExpect(_Expect):
    """A Kubernetes Event (or any trace event) is seen, or not."""

    event: str
    """The Event reason (``BackoffLimitExceeded``) or, with ``what``, any reason."""
    object: str | None = None
    """``Kind/namespace/name`` glob of the object the event is about."""
    type: Literal["Normal", "Warning"] | None = None
    message_contains: str | None = None
    seen: bool = True
    within: Seconds | None = None


class ConnectionExpect(_Expect):
    """How a workload's connection went: ``from`` a workload's pod ``pod`` (1 = its first)."""

    connection: str
    """The target as the behaviour model names it: kube-apiserver, dns, host:port, svc/ns/name:port."""
    from_: str = Field(alias="from")
    """``Kind/namespace/name`` glob of the workload (``Job/kagent/*-migrate-*``) or ``Pod/ns/name``."""
    pod: int | None = Field(default=1, ge=1)
    """Which pod of the workload, in creation order (null: any pod)."""
    container: str | None = None
    result: Literal["connected-first-try", "connected", "dropped", "failed"]
    """connected-first-try: connected with no packet dropped; dropped: at least one packet dropped."""


def _expect_tag(value: Any) -> str | None:
    keys = set(value) if isinstance(value, dict) else {
        k for k in ("release", "object", "event", "connection") if hasattr(value, k)
    }
    for tag in ("release", "event", "connection", "object"):
        if tag in keys:
            return tag
    return None


Expectation = Annotated[
    Annotated[ReleaseExpect, Tag("release")]
    | Annotated[ObjectExpect, Tag("object")]
    | Annotated[EventExpect, Tag("event")]
    | Annotated[ConnectionExpect, Tag("connection")],
    Discriminator(
        _expect_tag,
        custom_error_type="expectation",
        custom_error_message="an expectation needs one of: release, object, event, connection",
    ),
]


# --- releases and the scenario -------------------------------------------------------------------


class UpgradeFrom(_Model):
    """The previous release, installed first: a chart (or rendered manifest) and its values."""

    chart: str
    values_files: list[str] = Field(default_factory=list)
    values: dict[str, Any] = Field(default_factory=dict)
    set: list[str] = Field(default_factory=list)


class ReleaseSpec(_Model):
    """One chart and/or HelmRelease tree, as ``helmsim simulate`` takes them."""

    chart: str | None = None
    """Chart directory or .tgz (or rendered YAML); omit to take charts from ``charts``."""
    helm_release: Annotated[
        list[str],
        BeforeValidator(lambda v: [v] if isinstance(v, str) else v),
        WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
    ] = Field(default_factory=list)
    """HelmRelease files or directories (their specs drive helm-controller)."""
    charts: dict[str, str] = Field(default_factory=dict)
    """Chart name (or HelmRelease name) → local chart path."""
    values_files: list[str] = Field(default_factory=list)
    values: dict[str, Any] = Field(default_factory=dict)
    set: list[str] = Field(default_factory=list)
    release_name: str | None = None
    namespace: str = render.DEFAULT_NAMESPACE
    upgrade_from: UpgradeFrom | None = None

    @model_validator(mode="after")
    def _target(self) -> ReleaseSpec:
        if self.chart is None and not self.helm_release:
            raise ValueError("a release needs a chart, a helmRelease, or both")
        return self


class Metadata(_Model):
    name: str = ""
    description: str = ""


class Scenario(_Model):
    """A scenario file (``apiVersion: helmsim.dev/v1alpha1``, ``kind: Scenario``)."""

    api_version: Literal["helmsim.dev/v1alpha1"]
    kind: Literal["Scenario"]
    metadata: Metadata = Field(default_factory=Metadata)
    profile: str | dict[str, Any] = "kind"
    """A built-in profile name, a profile file, or an inline profile (``extends`` + overrides)."""
    releases: list[ReleaseSpec] = Field(min_length=1)
    behaviours: list[Behaviour] = Field(default_factory=list)
    catalog: list[EntrySpec] = Field(default_factory=list)
    """Behaviour-catalog entries (docs/behaviour.md), before the built-in catalog."""
    faults: list[Fault] = Field(default_factory=list)
    expect: list[Expectation] = Field(default_factory=list)
    horizon: Annotated[Seconds, Field(gt=0)] = DEFAULT_HORIZON
    unmapped_ready_after: Seconds = UNMAPPED_READY_AFTER
    seed: int = 0
    sample_latencies: bool = False
    """Draw latencies from the profile's distributions (with ``seed``) instead of nominal values."""


# --- loading -------------------------------------------------------------------------------------


class LoadedScenario(Struct, frozen=True):
    """A validated scenario and where it came from."""

    scenario: Scenario
    path: Path
    lines: Mapping[tuple[Any, ...], int] = msgspec.field(default_factory=dict)
    catalog: tuple[Any, ...] = ()
    """The ``catalog`` entries, validated (``helmsim.cluster.catalog.CompiledEntry``)."""

    @property
    def name(self) -> str:
        return self.scenario.metadata.name or _stem(self.path)

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def line_of(self, *path: Any) -> int | None:
        """The line of a key path (``("expect", 2)``), when known."""
        return self.lines.get(tuple(path))


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (*SUFFIXES, ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def load_scenario(path: str | Path) -> LoadedScenario:
    """Read and validate a scenario file; bad input raises ``InputError`` with file and line."""
    p = Path(path)
    return parse_scenario(read_text(p, "scenario file"), p)


def parse_scenario(text: str, path: Path) -> LoadedScenario:
    """Validate scenario ``text`` (read from ``path``)."""
    data = load_one(text, str(path))
    if not isinstance(data, dict):
        raise InputError("a scenario must be a YAML mapping", file=str(path), line=1)
    lines = key_lines(text)
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        raise InputError(
            f"not a scenario: expected apiVersion {API_VERSION} and kind {KIND}",
            file=str(path),
            line=lines.get(("kind",)) or lines.get(("apiVersion",)) or 1,
        )
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        raise _input_error(err, lines, str(path)) from None
    if not scenario.expect:
        # a scenario file that checks nothing would always pass
        raise InputError("expect: a scenario needs at least one expectation", file=str(path), line=lines.get(("expect",)) or 1)
    from helmsim.cluster.catalog import validate_entries

    catalog = tuple(validate_entries(data.get("catalog") or [], file=str(path), lines=lines, prefix=("catalog",)))
    return LoadedScenario(scenario, path, lines, catalog)


def _input_error(err: ValidationError, lines: Mapping[tuple[Any, ...], int], file: str) -> InputError:
    first = err.errors(include_url=False)[0]
    loc = list(first["loc"])
    if len(loc) > 2 and loc[0] == "expect" and loc[2] in ("release", "object", "event", "connection"):
        del loc[2]  # the discriminator's tag, not a YAML key
    path: list[Any] = []
    for part in loc:
        if (*path, part) in lines:
            path.append(part)
    shown = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path).replace(".[", "[")
    msg = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "missing":
        shown = f"{shown}.{loc[-1]}" if shown else str(loc[-1])
    elif first["type"] == "extra_forbidden":
        msg = f"unknown key {loc[-1]!r}"
    return InputError(f"{shown}: {msg}" if shown else msg, file=file, line=lines.get(tuple(path)))


def discover(paths: Sequence[str | Path]) -> list[Path]:
    """Scenario files among ``paths``: files as given, directories searched for ``*.helmsim.yaml``."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and is_scenario_name(f.name)))
        elif p.is_file():
            out.append(p)
        else:
            raise InputError("no such scenario file or directory", file=str(p))
    return out


# --- building the simulation ---------------------------------------------------------------------


def _resolve(base: Path, ref: str) -> str:
    p = Path(ref)
    return str(p if p.is_absolute() else base / p)


def scenario_profile(loaded: LoadedScenario) -> ClusterProfile:
    """The scenario's cluster profile: built-in, file (relative to the scenario) or inline."""
    ref = loaded.scenario.profile
    if isinstance(ref, dict):
        data = dict(ref)
        data.setdefault("name", f"{loaded.name} (inline)")
        return profile_from_mapping(data, source=str(loaded.path), base_dir=loaded.base_dir)
    candidate = loaded.base_dir / ref
    if ("/" in ref or ref.endswith((".yaml", ".yml"))) and candidate.is_file():
        return load_profile(str(candidate))
    return load_profile(ref)


def scenario_inputs(loaded: LoadedScenario) -> list[ReleaseInput]:
    """The ``ReleaseInput`` of every release of the scenario."""
    from helmsim.release_inputs import build_inputs  # the CLI's chart/HelmRelease pairing

    base = loaded.base_dir
    out: list[ReleaseInput] = []
    for spec in loaded.scenario.releases:
        target = _resolve(base, spec.chart) if spec.chart else _resolve(base, spec.helm_release[0])
        hrs = [_resolve(base, h) for h in (spec.helm_release if spec.chart else spec.helm_release[1:])]
        prev = spec.upgrade_from
        inputs = build_inputs(
            target,
            values=[_resolve(base, f) for f in spec.values_files],
            sets=list(spec.set),
            helmrelease=hrs,
            charts=[f"{k}={_resolve(base, v)}" for k, v in spec.charts.items()],
            release_name=spec.release_name,
            namespace=spec.namespace,
            upgrade_from=_resolve(base, prev.chart) if prev else None,
            upgrade_from_values=[_resolve(base, f) for f in prev.values_files] if prev else [],
            upgrade_from_set=list(prev.set) if prev else [],
        )
        for r in inputs:
            chart, previous = r.chart, r.previous
            if chart is not None and spec.values and (spec.chart is None or chart.path == target):
                chart = msgspec.structs.replace(chart, values=render.merge_values(dict(chart.values), spec.values))
            if previous is not None and prev is not None and prev.values:
                previous = msgspec.structs.replace(
                    previous, values=render.merge_values(dict(previous.values), prev.values)
                )
            out.append(msgspec.structs.replace(r, chart=chart, previous=previous))
    seen: set[str] = set()
    for r in out:
        if r.hr.ref in seen:
            raise InputError(f"HelmRelease {r.hr.ref} appears in two releases", file=str(loaded.path))
        seen.add(r.hr.ref)
    return out


class Prepared(Struct, frozen=True):
    """Everything ``simulate`` needs for a scenario, built once and reusable across runs."""

    loaded: LoadedScenario
    profile: ClusterProfile
    releases: tuple[ReleaseInput, ...]
    overrides: tuple[BehaviourOverride, ...]


def prepare(loaded: LoadedScenario) -> Prepared:
    """Resolve the profile, releases and behaviour overrides (renders nothing yet)."""
    from helmsim.cluster.catalog import CompiledEntry
    from helmsim.simulate import with_catalog

    catalog = loaded.catalog or tuple(
        CompiledEntry(spec, str(loaded.path)) for spec in loaded.scenario.catalog
    )
    return Prepared(
        loaded,
        scenario_profile(loaded),
        tuple(with_catalog(scenario_inputs(loaded), catalog)),
        tuple(b.to_override() for b in loaded.scenario.behaviours),
    )


def run_prepared(prepared: Prepared, *, seed: int | None = None, sample_latencies: bool | None = None) -> SimulationResult:
    """Simulate a prepared scenario; ``seed``/``sample_latencies`` override the file's."""
    from helmsim.faults import ScenarioFaults
    from helmsim.simulate import simulate

    sc = prepared.loaded.scenario
    faults = ScenarioFaults(sc.faults)
    return simulate(
        prepared.profile,
        prepared.releases,
        horizon=sc.horizon,
        seed=sc.seed if seed is None else seed,
        sample_latencies=sc.sample_latencies if sample_latencies is None else sample_latencies,
        unmapped_ready_after=sc.unmapped_ready_after,
        overrides=prepared.overrides,
        faults=faults,
        setup=faults.setup,
    )


def run_scenario(loaded: LoadedScenario) -> SimulationResult:
    """Simulate the scenario once, as its file says."""
    return run_prepared(prepare(loaded))


def iter_expectations(loaded: LoadedScenario) -> Iterator[tuple[int, Any]]:
    """``(index, expectation)`` in file order."""
    yield from enumerate(loaded.scenario.expect)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of scenario files (docs/scenario.schema.json)."""
    schema = Scenario.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://helmsim.dev/schemas/scenario-v1alpha1.json"
    schema["title"] = "helmsim Scenario (helmsim.dev/v1alpha1)"
    return schema


__all__ = [
    "API_VERSION",
    "AgentStall",
    "ApiserverIdentity",
    "ApiserverOutage",
    "Attempts",
    "Behaviour",
    "ConnectionExpect",
    "ContainerExit",
    "DnsProxy",
    "EndpointInit",
    "EventExpect",
    "Expectation",
    "Fault",
    "ImagePull",
    "LoadedScenario",
    "Match",
    "NodeLost",
    "ObjectExpect",
    "PolicyPropagation",
    "Prepared",
    "Provisioner",
    "ReleaseExpect",
    "ReleaseSpec",
    "Scenario",
    "UpgradeFrom",
    "discover",
    "json_schema",
    "load_scenario",
    "parse_scenario",
    "prepare",
    "run_prepared",
    "run_scenario",
    "scenario_inputs",
    "scenario_profile",
]
