"""Programs: what a matching catalog entry or a recognised command makes a container do (pure).

:func:`container_view` reads a container as the kubelet starts it (command and args with
``$(VAR)`` expanded from its environment, the shell script it runs). :func:`match_program`
walks the catalog (the user's entries first, then the built-in ones) and returns the
:class:`Program` of the first entry that matches: the needs, checks, retries, waits, objects
and log lines the behaviour model (:mod:`helmsim.cluster.behaviour`) puts into the container's
model. Entries naming a built-in ``command`` (``kubectl wait``, ``kubectl rollout status``,
``wait-for-port``, shell wait loops) have their arguments parsed here.
"""

from __future__ import annotations

import configparser
import re
import shlex
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import Struct

from helmsim.cluster.behaviour import (
    DEFAULT_CONNECT_TIMEOUT,
    SHELLS,
    Check,
    Need,
    ProbeGate,
    Retry,
    WaitLoop,
    _host_need,
    parse_need,
    parse_wait_loop,
    script_of,
)
from helmsim.cluster.catalog import CheckSpec, CompiledEntry, EntrySpec, Flag
from helmsim.cluster.latency import parse_duration
from helmsim import wildcard
from helmsim.kube import addresses
from helmsim.errors import InputError
from helmsim.yamlio import load_one

# kubernetes third_party/forked/golang/expansion/expand.go: $(VAR) in command and args is
# replaced by the container's environment variable; $$ escapes; unknown references stay.
_EXPAND = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_TEMPLATE = re.compile(r"\$\{([^}]+)\}")

# kubectl wait's default --timeout (k8s.io/kubectl pkg/cmd/wait/wait.go: 30 s).
KUBECTL_WAIT_TIMEOUT = 30.0
# How often a simulated watch looks again (kubectl wait and rollout status watch; this is the
# resolution of the simulation, not a client interval).
WATCH_RESOLUTION = 1.0
# bitnami/wait-for-port cmd.go: --timeout defaults to 30 s, polls every 500 ms, each dial has a
# 60 s timeout bounded by the context.
WAIT_FOR_PORT_TIMEOUT = 30.0
WAIT_FOR_PORT_INTERVAL = 0.5
WAIT_FOR_PORT_DIAL = 60.0


@dataclass(frozen=True)
class ContainerView:
    """A container as its process sees it: image, expanded argv, shell script, environment."""

    name: str
    image: str
    argv: tuple[str, ...]
    script: str
    env: Mapping[str, str]
    files: Callable[[str], str | None] | None = field(default=None, compare=False)
    """The text of a file at a path inside the container (its ConfigMap mounts), None when
    unknown: what ``${file(--flag).a.b}`` templates read."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Its pod's labels (``${label.KEY}`` templates)."""
    env_names: frozenset[str] = frozenset()
    """Every variable its ``env`` defines, Secret references included (their values unread)."""
    env_from_secret: bool = False
    """It takes a Secret's keys through ``envFrom`` (names not known without the Secret)."""
    private_files: Callable[[str], str | None] | None = field(default=None, compare=False)
    """The text of a file in its ConfigMap or Secret mounts, for a ``file`` check's key presence
    only: a Secret's content never reaches a note, a need or a log line."""
    volumes: Mapping[str, str] = field(default_factory=dict)
    """The Secret or ConfigMap each of its pod's volumes names, by volume name
    (``${volume.NAME}`` templates)."""


def container_env(
    c: Mapping[str, Any],
    pod: Mapping[str, Any],
    config_maps: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
) -> dict[str, str]:
    """Literal values, ConfigMap values (``envFrom`` and ``configMapKeyRef``, from
    ``config_maps`` by namespace and name) and the downward-API fields known before the pod
    runs. kubernetes pkg/kubelet/kubelet_pods.go makeEnvironmentVariables: every ``envFrom``
    source in order (``prefix`` prepended; a later source wins), then ``env``, which wins over
    them and expands ``$(VAR)`` of what came before. Secret values are not read."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    namespace = str(meta.get("namespace") or "default")
    fields = {
        "metadata.namespace": namespace,
        "metadata.name": str(meta.get("name") or ""),
        "spec.serviceAccountName": str(spec.get("serviceAccountName") or "default"),
        "spec.nodeName": str(spec.get("nodeName") or ""),
    }
    maps = config_maps or {}
    out: dict[str, str] = {}
    for source in c.get("envFrom") or ():
        ref = source.get("configMapRef") if isinstance(source, Mapping) else None
        if isinstance(ref, Mapping) and ref.get("name"):
            prefix = str(source.get("prefix") or "")
            for key, value in (maps.get((namespace, str(ref["name"]))) or {}).items():
                out[f"{prefix}{key}"] = str(value)
    for item in c.get("env") or ():
        if not isinstance(item, Mapping) or not item.get("name"):
            continue
        name = str(item["name"])
        if "value" in item and item["value"] is not None:
            out[name] = _expand(str(item["value"]), out)
            continue
        source = item.get("valueFrom") or {}
        ref = (source.get("fieldRef") or {}).get("fieldPath")
        key_ref = source.get("configMapKeyRef") or {}
        if ref in fields:
            out[name] = fields[str(ref)]
        elif key_ref.get("name") and key_ref.get("key"):
            found = (maps.get((namespace, str(key_ref["name"]))) or {}).get(str(key_ref["key"]))
            if found is not None:
                out[name] = str(found)
    return out


def _expand(text: str, env: Mapping[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env.get(name, m.group(0))

    return _EXPAND.sub(sub, text)


def container_view(
    c: Mapping[str, Any],
    pod: Mapping[str, Any],
    files: Callable[[str], str | None] | None = None,
    config_maps: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
) -> ContainerView:
    """The container's image, command + args (``$(VAR)`` expanded) and shell script; ``files``
    reads a file of the container by path; ``config_maps`` (``data`` by namespace and name) give
    the values its ``envFrom`` and ``configMapKeyRef`` variables take."""
    env = container_env(c, pod, config_maps)
    argv = tuple(_expand(str(a), env) for a in [*(c.get("command") or ()), *(c.get("args") or ())])
    expanded = dict(c)
    if c.get("command") is not None:
        expanded["command"] = [_expand(str(a), env) for a in c.get("command") or ()]
    if c.get("args") is not None:
        expanded["args"] = [_expand(str(a), env) for a in c.get("args") or ()]
    script = script_of(expanded)
    return ContainerView(
        name=str(c.get("name", "")),
        image=str(c.get("image") or ""),
        argv=argv,
        script=_mounted_script(argv, script, files) or script,
        env=env,
        files=files,
        labels={str(k): str(v) for k, v in ((pod.get("metadata") or {}).get("labels") or {}).items()},
        env_names=frozenset(
            [*env, *(str(e.get("name")) for e in c.get("env") or () if isinstance(e, Mapping) and e.get("name"))]
        ),
        env_from_secret=any(isinstance(e, Mapping) and e.get("secretRef") for e in c.get("envFrom") or ()),
        volumes=_volume_sources(pod),
    )


def _volume_sources(pod: Mapping[str, Any]) -> dict[str, str]:
    """Volume name → the Secret (``secretName``) or ConfigMap (``name``) it mounts."""
    out: dict[str, str] = {}
    for vol in (pod.get("spec") or {}).get("volumes") or ():
        if not isinstance(vol, Mapping) or not vol.get("name"):
            continue
        secret, config = vol.get("secret"), vol.get("configMap")
        source = (secret or {}).get("secretName") if isinstance(secret, Mapping) else None
        if source is None and isinstance(config, Mapping):
            source = config.get("name")
        if source:
            out[str(vol["name"])] = str(source)
    return out


def _mounted_script(argv: Sequence[str], script: str, files: Callable[[str], str | None] | None) -> str | None:
    """The text of the script the container executes from a mounted file (``/scripts/setup.sh``,
    ``bash /scripts/setup.sh``, ``sh -c /scripts/setup.sh``), when a ConfigMap mount holds it:
    what the process runs is the file, not its path."""
    if files is None or not argv:
        return None
    words = script.split()
    if len(words) == 1 and words[0].startswith("/") and words[0] != " ".join(argv):
        return files(words[0])  # sh -c /scripts/setup.sh
    called = [text for path in _CALLED_SCRIPT.findall(script) if (text := files(path)) is not None]
    if called:
        # sh -c "mkdir -p /x && /bin/sh -x /etc/grafana/download_dashboards.sh": the script
        # and the mounted files it runs (bitnami/charts-style and grafana's init containers)
        return "\n".join([script, *called])
    rest = list(argv)
    if rest[0].rsplit("/", 1)[-1] in SHELLS:
        rest.pop(0)
        while rest and rest[0].startswith("-"):
            if not rest[0].startswith("--") and "c" in rest[0]:
                return None  # sh -c 'TEXT' (handled above when TEXT is a path)
            rest.pop(0)
    return files(rest[0]) if rest and rest[0].startswith("/") else None


# a mounted script a compound `sh -c` runs: after a command separator (or at the start), with an
# optional shell in front (`/bin/sh -x /etc/x.sh`, `bash /scripts/a.sh`, `/scripts/a.sh`)
_CALLED_SCRIPT = re.compile(
    r"(?:^|[;&|(]\s*|&&\s*|\|\|\s*)(?:(?:/(?:usr/)?bin/)?(?:ba|da|a|z)?sh\s+(?:-[A-Za-z]+\s+)*)?(/[\w./-]+\.(?:sh|bash))\b",
    re.M,
)


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The value of ``--flag=v`` / ``--flag v`` (Go's flag and pflag syntax; last one wins)."""
    names = {flag, "-" + flag.lstrip("-"), "--" + flag.lstrip("-")}
    value: str | None = None
    for i, arg in enumerate(argv):
        name, eq, rest = arg.partition("=")
        if name in names:
            if eq:
                value = rest
            elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                value = argv[i + 1]
    return value


def _seconds(text: str) -> float | None:
    t = text.strip()
    if re.fullmatch(r"[0-9]+(\.[0-9]+)?", t):
        return float(t)
    try:
        return parse_duration(t)
    except ValueError:
        return None


class Program(Struct, frozen=True):
    """What a matched entry contributes to a container's model."""

    entry: str
    """``name (origin)`` of the catalog entry."""
    replaces_inference: bool
    """An image entry describes the whole program; a command entry only the command."""
    rbac: bool = True
    """Whether a RoleBinding of its ServiceAccount says it calls the API server."""
    ignore_env: frozenset[str] = frozenset()
    """Environment variables it does not dial at start (no need inferred from them)."""
    needs: tuple[Need, ...] | None = None
    also_needs: tuple[Need, ...] = ()
    """With ``needs`` None: needs added to the inferred ones."""
    checks: tuple[Check, ...] = ()
    retry: Retry | None = None
    fail_exit_code: int = 1
    wait: WaitLoop | None = None
    run_seconds: float | None = None
    run_set: bool = False
    probes_after_needs: bool = True
    liveness_after_needs: bool = True
    creates: tuple[Mapping[str, Any], ...] = ()
    fills: tuple[tuple[str, tuple[str, ...]], ...] = ()
    writes: tuple[str, ...] = ()
    probe_gate: ProbeGate | None = None
    log_ready: str = ""
    log_failed: str | None = ""
    log_waiting: str = ""
    assumes: tuple[str, ...] = ()
    notes: tuple[str, ...] = msgspec.field(default_factory=tuple)


def match_program(
    view: ContainerView,
    namespace: str,
    entries: Sequence[CompiledEntry],
    cluster_domain: str = addresses.CLUSTER_DOMAIN,
    services: Container[tuple[str, str]] = frozenset(),
) -> tuple[Program | None, list[str]]:
    """The program of the first entry matching ``view`` (and notes on entries that matched but
    whose arguments could not be read). ``services``: the ``(namespace, name)`` of the Services
    the simulation knows, so a host ``name.ns`` it dials is that Service (behaviour._name_need)."""
    notes: list[str] = []
    for entry in entries:
        if not entry.matches(view.image, view.argv, view.script, view.env):
            continue
        label = f"{entry.name} ({entry.origin})"
        spec = entry.spec
        if spec.command is None:
            return _image_program(spec, label, view, namespace, services), notes
        found = _command_program(spec, label, view, namespace, cluster_domain, services)
        if isinstance(found, Program):
            return found, notes
        if found:
            notes.append(found)
    return None, notes


# --- image entries --------------------------------------------------------------------------------


def _duration(value: float | Flag | None, view: ContainerView) -> float | None:
    if value is None or isinstance(value, float | int):
        return None if value is None else float(value)
    raw = flag_value(view.argv, value.flag)
    if raw is not None:
        parsed = _seconds(raw)
        if parsed is not None:
            return parsed
    return float(value.default)


def _template(text: str, view: ContainerView, namespace: str) -> str | None:
    """``${--flag}``, ``${namespace}``, ``${env.NAME}``, ``${label.KEY}``, ``${volume.NAME}``
    filled in; None when one is unknown."""
    missing = False

    def sub(m: re.Match[str]) -> str:
        nonlocal missing
        key = m.group(1).strip()
        value: str | None
        if key == "namespace":
            value = namespace
        elif key.startswith("env."):
            value = view.env.get(key[4:])
        elif key.startswith("label."):
            value = view.labels.get(key[6:])
        elif key.startswith("volume."):
            value = view.volumes.get(key[7:])
        elif key.startswith("-"):
            value = flag_value(view.argv, key)
        elif key.startswith("file("):
            value = _file_value(key, view)
        elif (m_arg := re.fullmatch(r"argv\[(-?[0-9]+)\]", key)) is not None:
            index = int(m_arg.group(1))
            value = view.argv[index] if -len(view.argv) <= index < len(view.argv) else None
        else:
            value = None
        if value is None or "$(" in value:
            missing = True
            return m.group(0)
        return value

    out = _TEMPLATE.sub(sub, text)
    return None if missing else out


_FILE_KEY = re.compile(
    r"file\((?P<flag>-{1,2}[A-Za-z0-9][A-Za-z0-9._-]*|/[A-Za-z0-9._/-]+)\)\.(?P<path>[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)"
)


def _filled_needs(
    texts: Sequence[str],
    entry: str,
    view: ContainerView,
    namespace: str,
    services: Container[tuple[str, str]],
    notes: list[str],
    *,
    quiet: bool = False,
) -> tuple[Need, ...]:
    """The needs of ``texts`` with their templates filled from the container; one that cannot be
    filled is noted (``quiet``: left out silently, an optional peer its file does not set)."""
    found: list[Need] = []
    for text in texts:
        filled = _template(text, view, namespace)
        if filled is None:
            if not quiet:
                source = (
                    "the files its ConfigMap volumes mount (a file elsewhere, or a key it lacks, is not read)"
                    if "${file(" in text
                    else "the container's arguments"
                )
                notes.append(f"cannot tell what {text} means from {source}: not needed")
            continue
        # a value listing several targets (ZooKeeper's `zk-0.zk-hs:2181,zk-1.zk-hs:2181`) is
        # one need each, in order; members behind one Service are one need
        for item in [p for p in re.split(r"[,;\s]+", filled) if p] or [filled]:
            try:
                need = parse_need(item, namespace=namespace, where=f"catalog entry {entry}", services=services)
            except InputError:
                notes.append(f"{item!r} (from {text}) is not a target: not needed")
                continue
            if need not in found:
                found.append(need)
    return tuple(found)


def _file_value(key: str, view: ContainerView) -> str | None:
    """``file(--flag).a.b`` (or ``file(/path).a.b``): the scalar at ``a.b`` of the YAML (or
    JSON; INI ``section.key`` for a ``.cnf``/``.ini``, an empty value none) file whose path is the value of ``--flag``; None
    when the flag, the file or the key is not there."""
    m = _FILE_KEY.fullmatch(key)
    where = m.group("flag") if m else ""
    path = where if where.startswith("/") else (flag_value(view.argv, where) if m else None)
    text = view.files(path) if path and m and view.files is not None else None
    if text is None or m is None or path is None:
        return None
    readable, value = config_value(text, path, m.group("path").split("."))
    if not readable or isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if path.endswith(_INI_SUFFIXES):
        return str(value).strip("\"'") or None  # an INI value may be quoted; empty is unset
    return str(value)


_INI_SUFFIXES = (".cnf", ".ini")
"""Configuration files read as INI (MySQL's my.cnf, grafana.ini): a key is ``section.name``."""


def config_value(text: str, path: str, parts: Sequence[str]) -> tuple[bool, Any]:
    """``(readable, value)``: the value at the key ``parts`` of a configuration file's ``text``
    (YAML or JSON; INI for ``.cnf``/``.ini``, as go-ini and Python read it), None when absent;
    ``readable`` False when the text does not parse (the program cannot read it either)."""
    if path.endswith(_INI_SUFFIXES):
        parser = configparser.ConfigParser(interpolation=None, strict=False, allow_no_value=True)
        try:
            parser.read_string(text)
        except configparser.Error:
            return False, None
        if len(parts) != 2 or not parser.has_section(parts[0]):
            return True, None
        found = parser.get(parts[0], parts[1], fallback=None)
        return True, None if found is None else found.strip()
    try:
        value: Any = load_one(text, path)
    except InputError:
        return False, None
    for part in parts:
        value = value.get(part) if isinstance(value, Mapping) else None
    return True, value


def _fill(obj: Any, view: ContainerView, namespace: str) -> Any:
    if isinstance(obj, str):
        return _template(obj, view, namespace)
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            filled = _fill(v, view, namespace)
            if filled is None and v is not None:
                return None
            out[k] = filled
        return out
    if isinstance(obj, list):
        items = [_fill(v, view, namespace) for v in obj]
        return None if any(i is None for i, v in zip(items, obj, strict=True) if v is not None) else items
    return obj


def _env_defined(alternative: str, view: ContainerView) -> bool:
    """``A`` or ``A+B`` (every one of them) is defined in the container's environment."""
    return all(name in view.env_names for name in alternative.split("+"))


ENV_SET = Check("env", "")
"""An ``env`` check that holds: the container defines one of its variables (or takes a Secret's
keys whose names are not known); it is not checked."""


def _file_key_set(spec: CheckSpec, view: ContainerView) -> bool | None:
    """Whether the ``key`` of the file a ``file`` check names is set and not empty (decided from
    the pod spec: its ConfigMap and Secret mounts; YAML or JSON, or INI for ``.cnf``/``.ini``
    with ``section.key``); None when the file cannot be read."""
    assert spec.file is not None and spec.key is not None
    path = spec.file if spec.file.startswith("/") else flag_value(view.argv, spec.file)
    text = view.private_files(path) if path and view.private_files is not None else None
    if text is None or path is None:
        return None
    from helmsim.cluster.running import path_parts

    readable, value = config_value(text, path, path_parts(spec.key))
    return readable and value not in (None, "", [], {})


def _compile_check(spec: CheckSpec, view: ContainerView, namespace: str) -> Check | None:
    """The check, or None when its object cannot be named from the container's arguments."""
    errors: list[tuple[str, str]] = []
    if spec.error:
        errors.append(("unmet", _filled(spec.error, view, namespace)))
    if spec.webhook_errors is not None:
        for key, text in (
            ("missing", spec.webhook_errors.missing),
            ("no-service", spec.webhook_errors.no_service),
            ("not-ready", spec.webhook_errors.not_ready),
        ):
            if text:
                errors.append((key, text))
    if spec.api is not None:
        return Check("api", spec.api, errors=tuple(errors))
    if spec.env:
        # decided from the pod spec: it holds (None is "cannot be named", so an always-true
        # check is dropped by its caller through the `env` sentinel) or fails every attempt
        if view.env_from_secret or any(_env_defined(alt, view) for alt in spec.env):
            return ENV_SET
        wanted = " or ".join(a.replace("+", " and ") for a in spec.env)
        if spec.or_state is not None:  # unset here: it holds only where the cluster gives that fact
            return Check("fact", spec.or_state, selector=wanted, errors=tuple(errors))
        return Check("env", wanted, errors=tuple(errors))
    if spec.fact is not None:  # the profile gives it from the start or never (running.evaluate_check)
        return Check("fact", spec.fact, errors=tuple(errors))
    if spec.state is not None:
        state = _template(spec.state, view, namespace)
        return None if state is None else Check("state", state, errors=tuple(errors))
    if spec.webhook is not None:
        return Check("webhook", spec.webhook, errors=tuple(errors))
    target = _template(str(spec.object), view, namespace)
    if target is None:
        return None
    parts = target.split("/")
    if len(parts) == 2:
        target = f"{parts[0]}//{parts[1]}"
    return Check("object", target, errors=tuple(errors), path=spec.field or "")


def _filled(text: str, view: ContainerView, namespace: str) -> str:
    """A log line with its ``${…}`` templates filled from the container (kept as written when
    one cannot be)."""
    if "${" not in text:
        return text
    filled = _template(text, view, namespace)
    return text if filled is None else filled


def _image_program(
    spec: EntrySpec,
    label: str,
    view: ContainerView,
    namespace: str,
    services: Container[tuple[str, str]] = frozenset(),
) -> Program:
    notes = [f"behaviour from catalog entry {label}: {spec.summary}"]
    needs: tuple[Need, ...] | None = None
    if spec.needs is not None:
        needs = _filled_needs(spec.needs, spec.name, view, namespace, services, notes)
    also = _filled_needs(spec.also_needs, spec.name, view, namespace, services, notes, quiet=True) if spec.needs is None else ()
    checks: list[Check] = []
    for c in spec.checks:
        if any(wildcard.matches(a, p) for a in view.argv for p in c.unless_args):
            continue
        if c.file is not None:
            held = _file_key_set(c, view)
            if held is None:
                notes.append(
                    f"cannot tell whether {c.key} is set in the file {c.file} names (not in its ConfigMap or Secret "
                    "mounts): assumed set"
                )
            elif not held:
                path = c.file if c.file.startswith("/") else flag_value(view.argv, c.file)
                checks.append(Check("file", f"{c.key} in {path}", errors=(("unmet", c.error or f"{c.key}: not set"),)))
            continue
        compiled = _compile_check(c, view, namespace)
        if compiled is ENV_SET:
            wanted = c.env or []
            if view.env_from_secret and not any(_env_defined(alt, view) for alt in wanted):
                notes.append(
                    f"cannot tell whether {' or '.join(a.replace('+', ' and ') for a in wanted)} is set "
                    "(it takes a Secret's keys through envFrom): assumed set"
                )
            continue
        if compiled is None:
            notes.append(
                f"cannot tell which state {c.state} it waits for from the container: not checked"
                if c.state is not None
                else f"cannot tell which object check {c.object} means from the container's arguments: not checked"
            )
            continue
        checks.append(compiled)
    retry = None
    if spec.retry is not None:
        r = spec.retry
        every = _duration(r.every, view) or 0.0
        bound = None if r.for_ == "forever" else _duration(r.for_, view)
        retry = Retry(
            max(every, 0.1),
            bound,
            r.exit_code,
            hard=r.deadline == "hard",
            factor=r.factor,
            attempts=r.attempts,
            needs=r.on_need_failure == "retry",
            give_up_error=r.give_up_error or "",
        )
    creates: list[Mapping[str, Any]] = []
    for obj in spec.creates:
        filled = _fill(obj, view, namespace)
        if filled is None:
            notes.append(
                f"cannot tell the name of the {obj.get('kind')} it creates from the container's arguments: not created"
            )
            continue
        filled.setdefault("metadata", {}).setdefault("namespace", namespace)
        creates.append(filled)
    fills: list[tuple[str, tuple[str, ...]]] = []
    for fill in spec.fills:
        target = _template(fill.object, view, namespace)
        if target is None:
            notes.append(f"cannot tell which object {fill.object} it fills from the container's arguments: not filled")
            continue
        if target.count("/") == 1:
            target = target.replace("/", "//", 1)
        # it reads the object before writing it: absent, the attempt fails with NotFound
        checks.append(Check("object", target))
        fills.append((target, tuple(fill.fields)))
    writes: list[str] = []
    for text in spec.writes:
        key = _template(text, view, namespace)
        if key is None:
            notes.append(f"cannot tell which state {text} it leaves from the container: not recorded")
            continue
        writes.append(key)
    gate: ProbeGate | None = None
    if spec.probes_fail is not None and not any(
        wildcard.matches(a, g) for a in view.argv for g in spec.probes_fail.unless_args
    ):
        pf = spec.probes_fail
        key = _template(pf.state, view, namespace)
        if key is None:
            notes.append(f"cannot tell which state {pf.state} its probes wait for from the container: taken as there")
        else:
            gate = ProbeGate(
                key, tuple(pf.exec), tuple(pf.http), tuple(pf.unless), pf.output, pf.reason, pf.fix, pf.after_install
            )
    run = spec.run
    run_seconds = None if run in (None, "forever") else _duration(run, view)  # type: ignore[arg-type]
    if spec.api_server == "never":
        notes.append("does not call the API server, whatever its ServiceAccount is bound to (catalog entry)")
    return Program(
        entry=label,
        replaces_inference=True,
        rbac=spec.api_server == "inferred",
        ignore_env=frozenset(spec.ignore_env),
        needs=needs,
        also_needs=also,
        checks=tuple(checks),
        retry=retry,
        fail_exit_code=spec.exit_code,
        run_seconds=run_seconds,
        run_set=run is not None,
        probes_after_needs=spec.probes == "after-needs",
        liveness_after_needs=(spec.liveness or spec.probes) == "after-needs",
        creates=tuple(creates),
        fills=tuple(fills),
        writes=tuple(writes),
        probe_gate=gate,
        log_ready=_filled(spec.logs.ready or "", view, namespace),
        log_failed=None if spec.logs.failed == "" else _filled(spec.logs.failed or "", view, namespace),
        log_waiting=_filled(spec.logs.waiting or "", view, namespace),
        assumes=tuple(spec.assumes),  # plain sentences: no template could print a value of the pod
        notes=tuple(notes),
    )


# --- built-in commands ----------------------------------------------------------------------------

# kubectl api-resources short names and plurals for the kinds kubectl wait/rollout target.
_RESOURCES = {
    "pod": "Pod", "pods": "Pod", "po": "Pod",
    "deployment": "Deployment", "deployments": "Deployment", "deploy": "Deployment",
    "deployment.apps": "Deployment", "deployments.apps": "Deployment",
    "statefulset": "StatefulSet", "statefulsets": "StatefulSet", "sts": "StatefulSet",
    "statefulset.apps": "StatefulSet", "statefulsets.apps": "StatefulSet",
    "daemonset": "DaemonSet", "daemonsets": "DaemonSet", "ds": "DaemonSet",
    "daemonset.apps": "DaemonSet", "daemonsets.apps": "DaemonSet",
    "job": "Job", "jobs": "Job", "job.batch": "Job", "jobs.batch": "Job",
    "persistentvolumeclaim": "PersistentVolumeClaim", "persistentvolumeclaims": "PersistentVolumeClaim",
    "pvc": "PersistentVolumeClaim",
    "customresourcedefinition": "CustomResourceDefinition",
    "customresourcedefinitions": "CustomResourceDefinition", "crd": "CustomResourceDefinition",
    "crds": "CustomResourceDefinition",
    "customresourcedefinition.apiextensions.k8s.io": "CustomResourceDefinition",
    "customresourcedefinitions.apiextensions.k8s.io": "CustomResourceDefinition",
    "node": "Node", "nodes": "Node", "no": "Node",
    "service": "Service", "services": "Service", "svc": "Service",
    "namespace": "Namespace", "namespaces": "Namespace", "ns": "Namespace",
}
_CLUSTER = {"CustomResourceDefinition", "Node", "Namespace"}
# The group of the kinds programs name, for the REST resource kubectl and client-go print
# (``deployments.apps``; core kinds have none). Custom kinds print their own plural.
_GROUPS = {
    "Deployment": "apps", "StatefulSet": "apps", "DaemonSet": "apps", "ReplicaSet": "apps",
    "Job": "batch", "CronJob": "batch",
    "CustomResourceDefinition": "apiextensions.k8s.io",
    "ValidatingWebhookConfiguration": "admissionregistration.k8s.io",
    "MutatingWebhookConfiguration": "admissionregistration.k8s.io",
    "APIService": "apiregistration.k8s.io",
    "Lease": "coordination.k8s.io",
    "Role": "rbac.authorization.k8s.io", "ClusterRole": "rbac.authorization.k8s.io",
    "RoleBinding": "rbac.authorization.k8s.io", "ClusterRoleBinding": "rbac.authorization.k8s.io",
    "StorageClass": "storage.k8s.io", "Ingress": "networking.k8s.io", "NetworkPolicy": "networking.k8s.io",
}


def resource_plural(kind: str) -> str:
    """The resource kubectl and client-go name in messages (``pods``, ``deployments.apps``,
    ``validatingwebhookconfigurations.admissionregistration.k8s.io``)."""
    from helmsim.kube.scope import guess_plural

    plural = guess_plural(kind)
    group = _GROUPS.get(kind)
    return f"{plural}.{group}" if group else plural


def _kubectl_argv(script: str, verb: tuple[str, ...]) -> list[str] | None:
    """The arguments of the first ``kubectl <verb…>`` command line in ``script``."""
    for line in re.split(r"[;\n]|&&|\|\|", script):
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError:
            tokens = line.split()
        for i, tok in enumerate(tokens):
            if tok.rsplit("/", 1)[-1] != "kubectl":
                continue
            rest = tokens[i + 1 :]
            words = [t for t in rest if not t.startswith("-")]
            if tuple(words[: len(verb)]) == verb:
                out = list(rest)
                for v in verb:
                    out.remove(v)
                return out
    return None


def _flag(args: Sequence[str], *names: str) -> str | None:
    for name in names:
        value = flag_value(args, name)
        if value is not None:
            return value
    return None


def _positional(args: Sequence[str], with_value: Sequence[str]) -> list[str]:
    """Non-flag arguments, skipping the values of the flags in ``with_value`` (``-n ns``)."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a.startswith("-"):
            if "=" not in a and a in with_value:
                skip = True
            continue
        out.append(a)
    return out


_KUBECTL_VALUE_FLAGS = ("-n", "--namespace", "-l", "--selector", "--for", "--timeout", "--context",
                        "--kubeconfig", "-f", "--filename", "--request-timeout", "-o", "--output")


def _targets(args: Sequence[str], namespace: str) -> tuple[str, list[str], str] | str:
    """``(kind, names, ns)`` of a kubectl resource argument list, or a sentence saying why not."""
    pos = _positional(args, _KUBECTL_VALUE_FLAGS)
    ns = _flag(args, "-n", "--namespace") or namespace
    if not pos:
        return "names no resource"
    first = pos[0]
    if "/" in first:
        kinds = {_RESOURCES.get(p.split("/", 1)[0].lower()) for p in pos}
        if None in kinds or len(kinds) != 1:
            return f"targets {', '.join(pos)}"
        kind = kinds.pop()
        assert kind is not None
        return kind, [p.split("/", 1)[1] for p in pos], ns
    kind_or_none = _RESOURCES.get(first.lower())
    if kind_or_none is None:
        return f"targets resource {first}"
    return kind_or_none, pos[1:], ns


def _kubectl_wait(view: ContainerView, namespace: str) -> Program | str | None:
    args = _kubectl_argv(view.script, ("wait",))
    if args is None:
        return None
    found = _targets(args, namespace)
    if isinstance(found, str):
        return f"runs kubectl wait that {found}: not modelled"
    kind, names, ns = found
    selector = _flag(args, "-l", "--selector") or ""
    cond = _flag(args, "--for") or ""
    timeout_text = _flag(args, "--timeout")
    timeout = KUBECTL_WAIT_TIMEOUT if timeout_text is None else _seconds(timeout_text)
    if timeout is None:
        return f"runs kubectl wait with --timeout={timeout_text}: not a duration, not modelled"
    scope = "" if kind in _CLUSTER else ns
    if cond == "delete":
        checks = tuple(Check("deleted", f"{kind}/{scope}/{n}") for n in names)
    elif cond.lower().startswith("condition="):
        ctype, _, status = cond[len("condition=") :].partition("=")
        checks = tuple(
            Check("condition", f"{kind}/{scope}/{n}", condition=ctype, status=status or "True")
            for n in names
        ) or (Check("condition", f"{kind}/{scope}/", selector=selector, condition=ctype, status=status or "True"),)
    else:
        return f"runs kubectl wait --for={cond or '(none)'}: only condition= and delete are modelled"
    if not names and not selector and "--all" not in args:
        return "runs kubectl wait without a name, -l or --all: not modelled"
    # k8s.io/kubectl pkg/cmd/wait/wait.go: a timeout of 0 checks once; negative waits a week.
    bound: float | None = timeout if timeout >= 0 else None
    what = f"{resource_plural(kind)}/{names[0]}" if names else f"{resource_plural(kind)} -l {selector or '(all)'}"
    return Program(
        entry="",
        replaces_inference=False,
        needs=(Need("kube-apiserver"),),
        checks=checks,
        retry=Retry(WATCH_RESOLUTION, bound, 1, hard=True),
        fail_exit_code=1,
        log_failed="{error}",
        notes=(f"runs kubectl wait --for={cond} on {what} (timeout {timeout:g} s)",),
    )


def _kubectl_rollout(view: ContainerView, namespace: str) -> Program | str | None:
    args = _kubectl_argv(view.script, ("rollout", "status"))
    if args is None:
        return None
    found = _targets(args, namespace)
    if isinstance(found, str):
        return f"runs kubectl rollout status that {found}: not modelled"
    kind, names, ns = found
    if kind not in ("Deployment", "StatefulSet", "DaemonSet") or len(names) != 1:
        return "runs kubectl rollout status on something other than one Deployment, StatefulSet or DaemonSet: not modelled"
    timeout_text = _flag(args, "--timeout")
    # k8s.io/kubectl pkg/cmd/rollout/rollout_status.go: --timeout defaults to 0, wait forever.
    timeout = 0.0 if timeout_text is None else _seconds(timeout_text)
    if timeout is None:
        return f"runs kubectl rollout status with --timeout={timeout_text}: not a duration, not modelled"
    res = kind.lower()
    return Program(
        entry="",
        replaces_inference=False,
        needs=(Need("kube-apiserver"),),
        checks=(Check("rollout", f"{kind}/{ns}/{names[0]}"),),
        retry=Retry(WATCH_RESOLUTION, timeout or None, 1, hard=True),
        fail_exit_code=1,
        log_ready=f'{res} "{names[0]}" successfully rolled out',
        log_failed="{error}",
        notes=(
            f"runs kubectl rollout status {res}/{names[0]}"
            + (f" (timeout {timeout:g} s)" if timeout else " (no timeout)"),
        ),
    )


def parse_wait_for_port(
    text: str, namespace: str, domain: str, services: Container[tuple[str, str]] = frozenset()
) -> tuple[Need, float, bool] | str | None:
    """The first ``wait-for-port [--host=H] [--timeout=N] PORT`` in ``text``: its target, its
    timeout and whether a host was given; a sentence when its arguments are not modelled."""
    m = re.search(r"\bwait-for-port\b(?P<args>[^;&|\n]*)", text)
    if m is None:
        return None
    try:
        tokens = shlex.split(m.group("args").replace("\\\n", " "))
    except ValueError:
        tokens = m.group("args").split()
    host = _flag(tokens, "--host", "-h") or ""
    state = _flag(tokens, "--state", "-s") or "inuse"
    timeout_text = _flag(tokens, "--timeout", "-t")
    pos = _positional(tokens, ("--host", "-h", "--state", "-s", "--timeout", "-t"))
    if state != "inuse":
        return f"runs wait-for-port --state={state}: only inuse is modelled"
    if not pos or not pos[-1].isdigit() or "$" in host or (timeout_text and not timeout_text.isdigit()):
        return "runs wait-for-port with arguments from shell variables: not modelled"
    timeout = float(timeout_text) if timeout_text else WAIT_FOR_PORT_TIMEOUT
    return _host_need(host or "127.0.0.1", int(pos[-1]), namespace, domain, services), timeout, bool(host)


def _wait_for_port(
    view: ContainerView, namespace: str, domain: str, services: Container[tuple[str, str]] = frozenset()
) -> Program | str | None:
    found = parse_wait_for_port(view.script, namespace, domain, services)
    if not isinstance(found, tuple):
        return found
    target, timeout, host = found
    return Program(
        entry="",
        replaces_inference=False,
        wait=WaitLoop(
            target,
            interval=WAIT_FOR_PORT_INTERVAL,
            probe_timeout=WAIT_FOR_PORT_DIAL,
            bound=timeout,
            exit_code=1,
            resolve_once=host,
            gave_up='timeout reached before the port went into state "inuse"',
        ),
        notes=(f"waits for {target} (wait-for-port, every 0.5 s, gives up after {timeout:g} s: exit 1)",),
    )


def _shell_wait(
    view: ContainerView, namespace: str, domain: str, services: Container[tuple[str, str]] = frozenset()
) -> Program | str | None:
    wait, sentence = parse_wait_loop(view.script, namespace, domain, services, view.env)
    if wait is None:
        return sentence or None
    return Program(entry="", replaces_inference=False, wait=wait, notes=(sentence,))


def _command_program(
    spec: EntrySpec,
    label: str,
    view: ContainerView,
    namespace: str,
    domain: str,
    services: Container[tuple[str, str]] = frozenset(),
) -> Program | str | None:
    found: Program | str | None
    if spec.command == "kubectl-wait":
        found = _kubectl_wait(view, namespace)
    elif spec.command == "kubectl-rollout-status":
        found = _kubectl_rollout(view, namespace)
    elif spec.command == "wait-for-port":
        found = _wait_for_port(view, namespace, domain, services)
    elif spec.command == "shell-wait-loop":
        found = _shell_wait(view, namespace, domain, services)
    else:
        return None  # kubectl-apply: the behaviour model parses it with the pod's ConfigMaps
    if isinstance(found, Program):
        return msgspec.structs.replace(found, entry=label, notes=(*found.notes, f"recognised by catalog entry {label}"))
    return found


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "ContainerView",
    "Program",
    "container_env",
    "container_view",
    "flag_value",
    "match_program",
    "parse_wait_for_port",
    "resource_plural",
]
