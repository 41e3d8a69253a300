"""The behaviour catalog: what well-known images and commands need and do, as data.

Entries live in YAML files (``apiVersion: helmsim.dev/v1alpha1``, ``kind: BehaviourCatalog``):
the built-in ones in ``src/helmsim/catalog/*.yaml``, the user's in ``.helmsim.yaml``
(``behaviours:``) and in scenario files (``catalog:``). Each entry matches containers by image
repository and arguments (or by a regular expression over the shell script they run) and says
what the program needs (connections, served APIs, ready webhooks, objects), how it waits, what
it creates, when its probes answer, and how it ends. Every entry cites its upstream source.
docs/behaviour.md documents the format and every built-in entry.

:func:`builtin_catalog` loads the built-in files once; :func:`compile_entries` turns validated
entries into :class:`CompiledEntry` objects the pure behaviour model matches
(:func:`CompiledEntry.matches`); :func:`parse_catalog_document` validates a catalog document
with file:line errors (``.helmsim.yaml`` and scenario files embed the same ``entries`` list).
"""

from __future__ import annotations

from helmsim import wildcard
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from msgspec import Struct
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from helmsim.errors import InputError
from helmsim.kube.duration import Seconds
from helmsim.kube import imageref
from helmsim.yamlio import key_lines, load_one

API_VERSION = "helmsim.dev/v1alpha1"
KIND = "BehaviourCatalog"
_DATA_PACKAGE = "helmsim"
_DATA_DIR = "catalog"


# The commands whose arguments the behaviour model parses itself (docs/behaviour.md).
BuiltinCommand = Literal[
    "shell-wait-loop",
    "kubectl-apply",
    "kubectl-wait",
    "kubectl-rollout-status",
    "wait-for-port",
]


class _Model(BaseModel):
    """camelCase keys in YAML, unknown keys refused."""

    model_config = ConfigDict(
        defer_build=True, extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )


class Flag(_Model):
    """A value read from the command line: ``--wait=1m`` or ``--wait 1m`` (Go flag syntax)."""

    flag: str = Field(pattern=r"^--?[A-Za-z0-9][A-Za-z0-9-]*$")
    default: Seconds


Duration = Seconds | Flag


class EntryMatch(_Model):
    """Which containers an entry describes.

    ``image``: shell globs on the image repository (registry included, tag and digest removed,
    Docker Hub names normalised: ``postgres`` is ``docker.io/library/postgres``); any may match.
    ``args``: shell globs each matching one element of the container's command + args, in this
    order (other elements may sit between them). ``script``: a regular expression searched in
    the shell script the container runs (the ``-c`` argument of a shell, else command + args).
    ``env``: globs on environment variables' values. Every field given must match.
    """

    image: list[str] = Field(default_factory=list)
    args: list[str] | None = None
    script: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    """Shell globs on the literal values of the container's environment variables (after
    ``$(VAR)`` expansion; downward-API fields known before the pod runs count): every one named
    must be set and match. A script branching on a variable is described per branch."""

    @field_validator("image", mode="before")
    @classmethod
    def _one(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("script")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as err:
                raise ValueError(f"not a regular expression: {err}") from None
        return v

    @model_validator(mode="after")
    def _something(self) -> EntryMatch:
        if not self.image and self.script is None:
            raise ValueError("a match needs image or script")
        return self


class WebhookErrors(_Model):
    """The program's words for each way the admission webhooks can fail it."""

    missing: str | None = None
    """No webhook configuration intercepts the request."""
    no_service: str | None = None
    """The webhook's Service does not exist."""
    not_ready: str | None = None
    """The webhook's Service has no ready endpoints."""


_PATH = r"^[A-Za-z0-9_-]+(?:\\\.[A-Za-z0-9_-]+)*(?:\.[A-Za-z0-9_-]+(?:\\\.[A-Za-z0-9_-]+)*)*$"
"""A dotted path whose keys may hold escaped dots (``data.tls\\.crt``)."""


class CheckSpec(_Model):
    """A condition of the cluster the program verifies through the API server.

    Exactly one of ``api`` (``group/version/Kind`` is served), ``webhook`` (``resource.group``:
    the admission webhooks intercepting its CREATE answer) or ``object`` (``Kind/namespace/name``
    or ``Kind/name`` exists; ``${...}`` templates allowed; with ``field``, a dotted path in it
    such as ``status.loadBalancer.ingress`` is also set and not empty) or ``state`` (a program of
    the simulation left that state behind: another entry's ``writes``) or ``env`` (the container
    defines one of these variables) or ``fact`` (the cluster's setup gives it: its profile says
    so, as ``metadataServer: gce`` gives "a GCE metadata server answering the pods"). ``error`` is what the
    program logs when the check fails (``webhookErrors`` for the webhook's three failure modes).
    """

    api: str | None = Field(default=None, pattern=r"^[a-z0-9.-]+/[a-z0-9]+/[A-Z][A-Za-z0-9]*$")
    webhook: str | None = Field(default=None, pattern=r"^[a-z0-9-]+\.[a-z0-9.-]+$")
    object: str | None = None
    state: str | None = Field(default=None, min_length=1)
    """State a program of the simulation left outside the cluster (an entry's ``writes``)."""
    env: list[str] | None = Field(default=None, min_length=1)
    """The container's environment defines one of these (``A``, or ``A+B`` for all of them): a
    literal, or from a Secret or ConfigMap, the value not read; a credential the program needs
    at start."""
    file: str | None = Field(default=None, pattern=r"^(?:/.+|-{1,2}[A-Za-z0-9][A-Za-z0-9._-]*)$")
    """The YAML or JSON file the program reads at start: a flag giving its path (``-config``) or
    the path; with ``key``, a dotted path in it that must be set and not empty."""
    key: str | None = Field(default=None, pattern=_PATH)
    """With ``file``: the key the program requires (``receivers``)."""
    field: str | None = Field(default=None, pattern=_PATH)
    """With ``object``: a dotted path in it that must be set and not empty (``\\.`` is a dot in a
    key: ``data.tls\\.crt``)."""
    error: str | None = None
    webhook_errors: WebhookErrors | None = None
    unless_args: list[str] = Field(default_factory=list)
    """Skip the check when an element of command + args matches one of these globs."""
    fact: str | None = Field(default=None, min_length=1)
    """A fact of the cluster's setup the program needs at start (from the profile, never waited
    for): "a GCE metadata server answering the pods"."""
    or_state: str | None = Field(default=None, min_length=1)
    """With ``env``: the check also holds when this state does (a fact of the cluster's setup,
    such as "a GCE metadata server answering the pods", where Google's default credentials need
    no key file)."""

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: list[str] | None) -> list[str] | None:
        for alt in v or ():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\+[A-Za-z_][A-Za-z0-9_]*)*", alt):
                raise ValueError(f"{alt!r} is not a variable name (or names joined by +)")
        return v

    @model_validator(mode="after")
    def _exactly_one(self) -> CheckSpec:
        given = [k for k in ("api", "webhook", "object", "state", "env", "file", "fact") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a check has exactly one of: api, webhook, object, state, env, file, fact")
        if (self.file is None) != (self.key is None):
            raise ValueError("file and key go together")
        if self.object is not None and self.object.count("/") not in (1, 2):
            raise ValueError("object: expected Kind/namespace/name or Kind/name")
        if self.field is not None and self.object is None:
            raise ValueError("field goes with object")
        if self.or_state is not None and self.env is None:
            raise ValueError("orState goes with env")
        return self


class RetrySpec(_Model):
    """What the program does while a need or check fails: try again every ``every``.

    ``for``: how long it keeps trying (``forever``, or a duration after which it gives up with
    ``exitCode``; 0 means a single attempt, which then fails with the entry's ``exitCode``).
    ``deadline: hard`` gives up exactly at ``for`` (a context deadline); ``soft`` checks the
    elapsed time after each failed attempt (``time.Since(start) > wait``).
    """

    every: Duration
    factor: float = Field(default=1.0, ge=1.0)
    """Each wait is ``factor`` times the previous (wait.Backoff's Factor; jitter is ignored)."""
    attempts: int | None = Field(default=None, ge=1)
    """At most this many attempts (wait.Backoff's Steps), then it gives up with ``exitCode``."""
    for_: Duration | Literal["forever"] = Field(default="forever", alias="for")
    exit_code: int = Field(default=1, ge=0, le=255)
    deadline: Literal["hard", "soft"] = "soft"
    on_need_failure: Literal["retry", "exit"] = "retry"
    """A connection that fails is retried too (``retry``), or ends the run at once (``exit``:
    the poll function returned the error)."""
    give_up_error: str | None = None
    """The error it reports when it gives up (default: the last failure's)."""


class ProbesFailSpec(_Model):
    """Probes the program answers as failed, though it serves, until a ``state`` holds (Vault's
    health while it is not initialized and unsealed). A probe counts when its exec command
    (joined by spaces) matches one of ``exec`` or its HTTP path one of ``http`` and none of
    ``unless``; ``output`` is what the kubelet's Unhealthy event quotes."""

    state: str = Field(min_length=1)
    exec: list[str] = Field(default_factory=list)
    http: list[str] = Field(default_factory=list)
    unless: list[str] = Field(default_factory=list)
    unless_args: list[str] = Field(default_factory=list)
    """No probe fails when an element of command + args matches one of these globs."""
    output: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    """Why, in words, for the trace and the findings."""
    fix: str = Field(min_length=1)
    """What makes the probes pass, for the finding."""
    after_install: bool = False
    """The step is meant to follow the install (Vault's init and unseal): the finding also
    proposes disabling Helm's wait, verified by re-simulation."""


class Logs(_Model):
    """Log lines the program writes (``{error}`` is replaced by the failure's text; ``failed``
    omitted: ``Error: {error}``; ``failed: ""``: it prints nothing when it fails)."""

    ready: str | None = None
    failed: str | None = None
    waiting: str | None = None


class FillSpec(_Model):
    """Fields a program writes into an object that already exists (``Kind/namespace/name``,
    ``${...}`` templates allowed), as the pod's ServiceAccount: a certificate controller filling
    the Secret its webhook mounts. While the object is absent the attempt fails with the API
    server's NotFound and the program retries as its ``retry`` says."""

    object: str = Field(min_length=1)
    fields: list[str] = Field(min_length=1)
    """Dotted paths it sets (``data.tls.crt``), each to a non-empty value."""

    @field_validator("fields")
    @classmethod
    def _paths(cls, v: list[str]) -> list[str]:
        for path in v:
            if not re.fullmatch(_PATH, path) or "." not in path.replace("\\.", ""):
                raise ValueError(f"{path!r} is not a dotted path below the object's top level (data.tls\\.crt)")
        return v


class EntrySpec(_Model):
    """One catalog entry (docs/behaviour.md, "Catalog entries")."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    summary: str = Field(min_length=1)
    sources: list[str] = Field(min_length=1)
    """Upstream files that show the behaviour: ``owner/repo path: what it shows``."""
    match: EntryMatch
    command: BuiltinCommand | None = None
    """A command whose arguments the simulator parses (kubectl wait, wait-for-port, …)."""
    needs: list[str] | None = None
    """Connections it makes, in order (kube-apiserver, dns, host:port, svc/<ns>/<name>:<port>,
    CIDR:port); omitted: inferred from RBAC and policies as for any container."""
    also_needs: list[str] = Field(default_factory=list)
    """With ``needs`` omitted: connections added to the inferred ones when their templates can be
    filled (a peer in a configuration file: ``${file(/etc/grafana/grafana.ini).database.host}``);
    one that cannot be filled is no need, silently (the file does not set it)."""
    api_server: Literal["inferred", "never"] = "inferred"
    """``never``: the program does not call the API server even when its pod's ServiceAccount
    is bound to a role (another container of the pod uses it); with ``needs`` omitted the
    other inferences (policies, environment) still apply."""
    ignore_env: list[str] = Field(default_factory=list)
    """Environment variables whose URL or host the program reads but does not dial at start
    (with ``needs`` omitted): no need is inferred from them; the others still are."""
    checks: list[CheckSpec] = Field(default_factory=list)
    retry: RetrySpec | None = None
    exit_code: int = Field(default=1, ge=0, le=255)
    """Exit code when a need or check fails and it does not retry."""
    run: Duration | Literal["forever"] | None = None
    """After its needs and checks pass: runs this long then exits 0, or ``forever``; omitted:
    the default for the pod (5 s for Job and run-to-completion pods, else forever)."""
    probes: Literal["after-needs", "at-start"] = "after-needs"
    probes_fail: ProbesFailSpec | None = None
    """Probes that fail while it serves, until a state holds (see :class:`ProbesFailSpec`)."""
    """When its readiness and startup probes can succeed: once its needs and checks pass, or
    from the start (it serves its health endpoint before connecting anywhere)."""
    liveness: Literal["after-needs", "at-start"] | None = None
    """When its liveness probe can succeed (default: as ``probes``); a liveness probe that keeps
    failing gets the container killed and restarted."""
    writes: list[str] = Field(default_factory=list)
    """State it leaves outside the cluster when it exits 0 (``${...}`` templates), which a
    ``state`` check of another program waits for: a database schema its migrations wrote."""
    creates: list[dict[str, Any]] = Field(default_factory=list)
    """Objects it creates as the pod's ServiceAccount when they do not exist (``${...}``
    templates allowed in strings)."""
    fills: list[FillSpec] = Field(default_factory=list)
    """Fields it writes into objects that exist, after its needs and checks pass (see
    :class:`FillSpec`)."""
    logs: Logs = Field(default_factory=Logs)
    assumes: list[str] = Field(default_factory=list)
    """What its success rests on that cannot be known offline ("the Cloud SQL instance answers"):
    the report says each once, when the program serves. Plain sentences, no templates, so no
    value of the pod's (a token, a password) can be printed."""

    @field_validator("needs")
    @classmethod
    def _needs(cls, v: list[str] | None) -> list[str] | None:
        from helmsim.cluster.behaviour import parse_need

        for item in v or ():
            if "${" in item:
                continue  # filled in from the container's arguments when it is matched
            try:
                parse_need(item, namespace="default", where="")
            except InputError as err:
                raise ValueError(err.message.removeprefix(": ")) from None
        return v

    @field_validator("ignore_env")
    @classmethod
    def _env_names(cls, v: list[str]) -> list[str]:
        for name in v:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return v

    @field_validator("creates")
    @classmethod
    def _objects(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for obj in v:
            if not obj.get("apiVersion") or not obj.get("kind"):
                raise ValueError("each object needs apiVersion and kind")
            if not (obj.get("metadata") or {}).get("name"):
                raise ValueError("each object needs metadata.name")
        return v

    @model_validator(mode="after")
    def _builtin(self) -> EntrySpec:
        if self.command is not None and (self.needs or self.checks or self.retry or self.creates or self.fills):
            raise ValueError(
                f"command {self.command}: the simulator parses its arguments; "
                "needs, checks, retry, creates and fills are not allowed with it"
            )
        return self


class CatalogDocument(_Model):
    """A catalog file."""

    api_version: Literal["helmsim.dev/v1alpha1"]
    kind: Literal["BehaviourCatalog"]
    entries: list[EntrySpec] = Field(min_length=1)


# --- compiled entries ------------------------------------------------------------------------------


class CompiledEntry(Struct, frozen=True):
    """A validated entry and where it came from, ready to match containers."""

    spec: EntrySpec
    origin: str
    """``src/helmsim/catalog/cert-manager.yaml``, ``.helmsim.yaml:12``, ``scenario.helmsim.yaml:30``."""

    @property
    def name(self) -> str:
        return self.spec.name

    def matches(
        self, image: str, argv: Sequence[str], script: str, env: Mapping[str, str] | None = None
    ) -> bool:
        """Whether a container with ``image``, command+args ``argv``, ``script`` and literal
        environment ``env`` matches."""
        m = self.spec.match
        for name, pattern in m.env.items():
            value = (env or {}).get(name)
            if value is None or not wildcard.matches(value, pattern):
                return False
        if m.image:
            repo = image_repository(image)
            if not any(_image_matcher(p)(repo) for p in m.image):
                return False
        if m.args is not None and not _in_order(m.args, argv):
            return False
        return m.script is None or re.search(m.script, script) is not None


def _in_order(patterns: Sequence[str], argv: Sequence[str]) -> bool:
    i = 0
    for arg in argv:
        if i < len(patterns) and wildcard.matches(arg, patterns[i]):
            i += 1
    return i == len(patterns)


@lru_cache(maxsize=4096)
def _image_matcher(pattern: str) -> wildcard.Matcher:
    return wildcard.matcher(imageref.normalise_pattern(pattern))


@lru_cache(maxsize=4096)  # pure; asked for every catalog entry of every container of every run
def image_repository(image: str) -> str:
    """The repository of an image reference, normalised as the container runtime does.

    ``postgres:16`` → ``docker.io/library/postgres``; ``bitnami/postgresql`` →
    ``docker.io/bitnami/postgresql``; ``quay.io/jetstack/x:v1@sha256:…`` → ``quay.io/jetstack/x``
    (github.com/distribution/reference normalize.go ParseNormalizedNamed). A reference the
    kubelet cannot parse keeps its name as written, tag dropped (its pod never starts anyway).
    """
    try:
        return imageref.parse(image).name
    except imageref.ImageRefError:
        ref = image.split("@", 1)[0]
        last = ref.rsplit("/", 1)
        if ":" in last[-1]:
            ref = ref[: len(ref) - len(last[-1]) + last[-1].index(":")]
        return imageref.normalise_pattern(ref)


# --- loading --------------------------------------------------------------------------------------


def _validation_error(
    err: ValidationError, lines: Mapping[tuple[Any, ...], int], file: str, prefix: tuple[Any, ...]
) -> InputError:
    first = err.errors(include_url=False)[0]
    loc = [*prefix, *first["loc"]]
    path: list[Any] = []
    for part in loc:
        if (*path, part) in lines:
            path.append(part)
        elif isinstance(part, str) and (*path, to_camel(part)) in lines:
            path.append(to_camel(part))
    shown = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path).replace(".[", "[")
    msg = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "missing":
        shown = f"{shown}.{loc[-1]}" if shown else str(loc[-1])
    elif first["type"] == "extra_forbidden":
        msg = f"unknown key {loc[-1]!r}"
    return InputError(f"{shown}: {msg}" if shown else msg, file=file, line=lines.get(tuple(path)))


def validate_entries(
    data: Any,
    *,
    file: str,
    lines: Mapping[tuple[Any, ...], int],
    prefix: tuple[Any, ...],
) -> list[CompiledEntry]:
    """Validate a list of entries found at key path ``prefix`` of ``file`` (errors: file:line)."""
    if not isinstance(data, list):
        raise InputError(
            f"{'.'.join(map(str, prefix))}: must be a list of catalog entries",
            file=file,
            line=lines.get(tuple(prefix)),
        )
    out: list[CompiledEntry] = []
    seen: set[str] = set()
    for i, raw in enumerate(data):
        try:
            spec = EntrySpec.model_validate(raw)
        except ValidationError as err:
            raise _validation_error(err, lines, file, (*prefix, i)) from None
        line = lines.get((*prefix, i))
        if spec.name in seen:
            raise InputError(
                f"{'.'.join(map(str, prefix))}[{i}].name: entry {spec.name!r} appears twice",
                file=file,
                line=lines.get((*prefix, i, "name")) or line,
            )
        seen.add(spec.name)
        out.append(CompiledEntry(spec, f"{file}:{line}" if line else file))
    return out


def parse_catalog_document(text: str, file: str) -> list[CompiledEntry]:
    """Validate a whole catalog file (``kind: BehaviourCatalog``)."""
    data = load_one(text, file)
    lines = key_lines(text)
    if not isinstance(data, dict) or data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        raise InputError(
            f"not a behaviour catalog: expected apiVersion {API_VERSION} and kind {KIND}",
            file=file,
            line=lines.get(("kind",)) or 1,
        )
    extra = sorted(str(k) for k in data if k not in ("apiVersion", "kind", "metadata", "entries"))
    if extra:
        raise InputError(f"{extra[0]}: unknown key {extra[0]!r}", file=file, line=lines.get((extra[0],)))
    if not data.get("entries"):
        raise InputError("entries: a catalog needs at least one entry", file=file, line=lines.get(("entries",)) or 1)
    return validate_entries(data.get("entries"), file=file, lines=lines, prefix=("entries",))


@lru_cache(maxsize=1)
def builtin_catalog() -> tuple[CompiledEntry, ...]:
    """Every built-in entry, file by file in name order (``src/helmsim/catalog/*.yaml``), read
    from the validated copy :mod:`helmsim.builtin_cache` keeps while the files are unchanged."""
    return cached_builtin_catalog()


def cached_builtin_catalog(*, write: bool | None = None) -> tuple[CompiledEntry, ...]:
    """:func:`builtin_catalog` without the in-process memo (``write``: see builtin_cache.load)."""
    from helmsim import builtin_cache

    root = resources.files(_DATA_PACKAGE).joinpath(_DATA_DIR)
    files = [(i.name, i.read_bytes()) for i in sorted(root.iterdir(), key=lambda p: p.name) if i.name.endswith(".yaml")]
    return builtin_cache.load(
        "catalog",
        [part for name, text in files for part in (name.encode(), text)],
        lambda: parse_builtin_catalog(files),
        lambda v: isinstance(v, tuple) and all(isinstance(e, CompiledEntry) for e in v),
        write=write,
    )


def parse_builtin_catalog(files: Sequence[tuple[str, bytes]]) -> tuple[CompiledEntry, ...]:
    """Validate the built-in catalog files (name, content), image entries first."""
    out: list[CompiledEntry] = []
    for name, text in files:
        out.extend(parse_catalog_document(text.decode("utf-8"), f"src/helmsim/catalog/{name}"))
    out = list(ordered(out))
    names = [e.name for e in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"built-in catalog entries defined twice: {', '.join(dupes)}")
    return tuple(out)


def ordered(entries: Sequence[CompiledEntry]) -> tuple[CompiledEntry, ...]:
    """Entries that match an image before those that only match a script (each kept in order):
    a program the catalog knows by its image wins over a command its script runs."""
    return tuple(sorted(entries, key=lambda e: not e.spec.match.image))


def catalog_entries(*groups: Sequence[CompiledEntry]) -> tuple[CompiledEntry, ...]:
    """The catalog a simulation matches against: each group in turn (a scenario's entries, then
    ``.helmsim.yaml``'s), image entries first within a group, then the built-in catalog."""
    out: list[CompiledEntry] = []
    for group in groups:
        out.extend(ordered(group))
    out.extend(builtin_catalog())
    return tuple(out)


def catalog_json_schema() -> dict[str, Any]:
    """The JSON Schema of one catalog entry (used in docs and editor tooling)."""
    return EntrySpec.model_json_schema(by_alias=True, mode="validation")


__all__ = [
    "API_VERSION",
    "KIND",
    "CatalogDocument",
    "CheckSpec",
    "CompiledEntry",
    "EntryMatch",
    "EntrySpec",
    "Flag",
    "Logs",
    "RetrySpec",
    "WebhookErrors",
    "builtin_catalog",
    "cached_builtin_catalog",
    "parse_builtin_catalog",
    "catalog_entries",
    "catalog_json_schema",
    "image_repository",
    "ordered",
    "parse_catalog_document",
    "validate_entries",
]
