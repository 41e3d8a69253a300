"""What a running container does over simulated time: the kubelet's running-container path.

:func:`behave` runs one container run of a :class:`~helmsim.cluster.behaviour.ContainerModel`
inside the kubelet's process: its wait loop, its connections, its checks of the cluster (served
APIs, ready webhooks, objects, conditions), retries with their bounds, the objects it creates or
applies, and its run time; it returns the exit code. :func:`schedule_probes` decides when the
container's readiness (and startup) probes first succeed: a process that is still connecting,
or waiting for what it needs, serves nothing, so probes that target it fail
(``Readiness probe failed: Get "http://10.244.0.10:8080/healthz": dial tcp 10.244.0.10:8080:
connect: connection refused``) until :func:`behave` reports it serving.

The trace says which need failed and why: ``need-failed`` (the run ended on it, with the
container's exit code to come), ``program-waiting`` (a program that retries is still waiting,
logged when the reason changes), ``container-log`` (what the program prints), ``probe-failed``.
"""

from __future__ import annotations

import base64
import copy
import math
import re
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from helmsim.cluster import registries
from helmsim.cluster.behaviour import CYCLE_NOTE, URL_UNREAD, Check, ContainerModel, Need, ProbeGate
from helmsim.cluster.selectors import matches_map
from helmsim.cluster.store import ApiError, ApiUnreachable, controller_of

if TYPE_CHECKING:
    from helmsim.cluster.controllers.kubelet import PodRuntime
    from helmsim.cluster.netstate import ConnectResult
    from helmsim.cluster.engine import Simulation

# k8s.io/api core/v1/types.go Probe: periodSeconds defaults to 10, successThreshold and
# failureThreshold to 1 and 3.
PROBE_PERIOD = 10.0
FAILURE_THRESHOLD = 3


# --- the checks a program makes through the API server ------------------------------------------


def _resource(kind: str) -> str:
    from helmsim.cluster.programs import resource_plural

    return resource_plural(kind)


def _split(target: str) -> tuple[str, str | None, str]:
    kind, ns, name = (target.split("/", 2) + ["", ""])[:3]
    return kind, (ns or None), name


def _ready_pod(pod: Mapping[str, Any]) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conds = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def service_ready(sim: Simulation, namespace: str, name: str) -> str | None:
    """``None`` when Service ``namespace/name`` has a ready endpoint, else ``missing``/``not-ready``."""
    svc = sim.store.get("Service", namespace, name)
    if svc is None:
        return "missing"
    selector = (svc.get("spec") or {}).get("selector") or {}
    if not selector:
        return None  # endpoints managed by someone else: not modelled, taken as reachable
    for pod in sim.store.list("Pod", namespace):
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if matches_map(selector, labels) and _ready_pod(pod):
            return None
    return "not-ready"


def _webhooks(sim: Simulation, target: str) -> list[tuple[str, Mapping[str, Any]]]:
    from helmsim.cluster.webhooks import rule_matches  # it reads service_ready of this module

    resource, _, group = target.partition(".")
    found: list[tuple[str, Mapping[str, Any]]] = []
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for cfg in sim.store.list(kind):
            for hook in cfg.get("webhooks") or ():
                if any(rule_matches(r, group, resource) for r in hook.get("rules") or ()):
                    found.append((str(hook.get("name") or cfg["metadata"]["name"]), hook))
    return found


def evaluate_check(sim: Simulation, check: Check, namespace: str) -> tuple[str, str, bool] | None:
    """``None`` when ``check`` holds now, else ``(reason, the program's words, fatal)``.

    A fatal failure ends the program at once whatever its retries (kubectl wait and rollout
    status exit on NotFound).
    """
    if check.kind == "api":
        # the REST mapping Helm's Build pre-flight uses (helmsim.helm.build via admission.serves):
        # built-in kinds of the cluster's version, profile APIs, Established CRDs in the store
        from helmsim.cluster.admission import no_kind_match_message, serves

        gv, _, kind = check.target.rpartition("/")
        if not serves(sim)(gv, kind):
            return "unmet", check.error("unmet", no_kind_match_message(gv, kind)), False
        return None
    if check.kind in ("env", "file"):
        # compiled only when the container defines none of the variables, or its configuration
        # file lacks the key (decided from the pod spec: programs._compile_check, _file_key_set)
        return "unmet", check.error("unmet", f"{check.target}: not set"), True
    if check.kind == "fact":
        # the cluster's setup (its profile) gives it from the start or never: no retry waits for it
        if check.target in sim.external_state:
            return None
        missing = f"{check.selector}: not set" if check.selector else f"{check.target}: not given by the cluster"
        return "unmet", check.error("unmet", missing), True
    if check.kind == "state":
        if check.target in sim.external_state:
            return None
        return "unmet", check.error("unmet", f"{check.target} is not there yet"), False
    if check.kind == "webhook":
        hooks = _webhooks(sim, check.target)
        if not hooks:
            return "missing", check.error("missing", f"no admission webhook intercepts creating {check.target}"), False
        for name, hook in hooks:
            ref = (hook.get("clientConfig") or {}).get("service")
            if not ref:
                continue  # a URL webhook: not modelled, taken as reachable
            svc_ns, svc_name = str(ref.get("namespace") or "default"), str(ref.get("name") or "")
            state = service_ready(sim, svc_ns, svc_name)
            if state == "missing":
                return "no-service", check.error(
                    "no-service", f'failed calling webhook "{name}": service "{svc_name}" not found'
                ), False
            if state == "not-ready":
                return "not-ready", check.error(
                    "not-ready", f'failed calling webhook "{name}": connect: connection refused'
                ), False
        return None
    kind, ns, name = _split(check.target)
    fields = {"kind": kind, "resource": _resource(kind), "name": name, "namespace": ns or ""}
    if check.kind == "object":
        obj = sim.store.get(kind, ns, name)
        if obj is None:
            return "unmet", _subst(check.error("unmet", '{resource} "{name}" not found'), fields), False
        if check.path and not _field_set(obj, check.path):
            return "unmet", _subst(check.error("unmet", f'{{resource}} "{{name}}" has no {check.path}'), fields), False
        return None
    if check.kind == "deleted":
        if sim.store.get(kind, ns, name) is not None:
            return "unmet", _subst("error: timed out waiting for the condition on {resource}/{name}", fields), False
        return None
    if check.kind == "rollout":
        obj = sim.store.get(kind, ns, name)
        if obj is None:
            return "not-found", _subst('Error from server (NotFound): {resource} "{name}" not found', fields), True
        from helmsim.kstatus import compute

        if compute(obj).status.value != "Current":
            return "unmet", "error: timed out waiting for the condition", False
        return None
    # condition (kubectl wait --for=condition=…)
    if name:
        objs = [sim.store.get(kind, ns, name)]
        if objs[0] is None:
            return "not-found", _subst('Error from server (NotFound): {resource} "{name}" not found', fields), True
    else:
        sel = _parse_selector(check.selector)
        objs = [o for o in sim.store.list(kind, ns) if matches_map(sel, (o.get("metadata") or {}).get("labels") or {})]
        if not objs:
            return "none", "error: no matching resources found", True
    for obj in objs:
        assert obj is not None
        conds = (obj.get("status") or {}).get("conditions") or ()
        # k8s.io/kubectl pkg/cmd/wait/condition.go: names and statuses compare case-insensitively.
        if not any(
            str(c.get("type", "")).lower() == check.condition.lower()
            and str(c.get("status", "")).lower() == check.status.lower()
            for c in conds
        ):
            return "unmet", _subst(
                "error: timed out waiting for the condition on {resource}/{name}",
                {**fields, "name": str(obj["metadata"]["name"])},
            ), False
    return None


def path_parts(path: str) -> list[str]:
    """The keys of a dotted path; ``\\.`` is a dot inside a key (``data.tls\\.crt``, as kubectl's
    JSONPath writes it: k8s.io/client-go util/jsonpath)."""
    return [part.replace("\0", ".") for part in path.replace("\\.", "\0").split(".")]


def _field_set(obj: Mapping[str, Any], path: str) -> bool:
    """Whether the dotted ``path`` of ``obj`` holds something (not absent, null or empty)."""
    value: Any = obj
    for part in path_parts(path):
        if not isinstance(value, Mapping):
            return False
        value = value.get(part)
    return value not in (None, "", [], {})


_PLACEHOLDER = re.compile(r"\{(kind|resource|name|namespace)\}")


def _subst(text: str, fields: Mapping[str, str]) -> str:
    """Fill ``{kind}``, ``{resource}``, ``{name}``, ``{namespace}``; other braces stay."""
    return _PLACEHOLDER.sub(lambda m: fields[m.group(1)], text)


def _parse_selector(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            out[key.strip().rstrip("=")] = value.strip().lstrip("=")
    return out


# --- one run ----------------------------------------------------------------------------------------


def behave(rt: PodRuntime, model: ContainerModel, run: int, cause: int) -> Generator[Any, Any, int]:
    """One run of ``model`` in pod runtime ``rt``; returns the exit code."""
    name = model.name
    sim = rt.sim
    last: int | None = cause
    if model.wait is not None:
        code = yield from wait_loop(rt, model, cause)
        if code != 0:
            return code
    start = sim.now
    retry = model.retry
    pause = retry.interval if retry is not None else 0.0
    attempt = 0
    said: str | None = None
    while True:
        attempt += 1
        began = sim.now
        deadline = start + retry.bound if retry is not None and retry.hard and retry.bound else None
        failure: tuple[str, str, int | None, bool, bool] | None = None  # need, error, event, network, fatal
        for target in model.needs:
            rt.activity[name] = f"connecting to {target}"
            timeout = model.connect_timeout if deadline is None else max(0.0, min(model.connect_timeout, deadline - sim.now))
            res = yield from dial(rt, target, timeout, last, name)
            if not res.ok:
                failure = (str(target), res.error, res.event, True, False)
                break
            last = res.event
            if target.kind in ("fqdn", "cidr"):
                _assume_outside(rt, str(target), name, last)
        if failure is None:
            for check in model.checks:
                found = evaluate_check(sim, check, rt.key[0])
                if found is not None:
                    failure = (str(check), found[1], last, False, found[2])
                    break
        if failure is None:
            break
        need, error, ev, network, fatal = failure
        rt.activity[name] = f"waiting for {need} ({error})"
        retries = (
            retry is not None and retry.bound != 0 and not fatal and (retry.needs or not network)
        )
        code = model.fail_exit_code
        if retries:
            assert retry is not None
            exhausted = (retry.attempts is not None and attempt >= retry.attempts) or (
                retry.bound is not None
                and (sim.now >= start + retry.bound if retry.hard else sim.now - start > retry.bound)
            )
            if not exhausted:
                if error != said:
                    said = error
                    waiting = rt.log(
                        "program-waiting",
                        f"{name}: waiting for {need}: {error}",
                        ev,
                        container=name,
                        need=need,
                        error=error,
                        attempt=attempt,
                        entry=model.entry,
                        network=network,
                    )
                    if model.log_waiting:
                        line = model.log_waiting.replace("{error}", error)
                        rt.log("container-log", f"{name}: {line}", waiting, container=name, line=line)
                if retry.factor == 1.0:
                    # wait.PollUntilContextCancel/Timeout (not sliding): attempts every interval.
                    wake = began + pause
                else:
                    # wait.ExponentialBackoff: sleeps after each attempt, each sleep × Factor.
                    wake = sim.now + pause
                    pause *= retry.factor
                if deadline is not None and wake >= deadline:
                    if deadline > sim.now:
                        yield sim.sleep(deadline - sim.now)
                else:
                    if wake > sim.now:
                        yield sim.sleep(wake - sim.now)
                    continue
            error = retry.give_up_error or error
            code = retry.exit_code
        said_last: str | None = None  # the catalog says it prints nothing when it gives up
        if model.log_failed is not None:
            said_last = model.log_failed.replace("{error}", error) if model.log_failed else f"Error: {error}"
        return _give_up(rt, model, need, error, code, said_last, ev, network=network)
    rt.activity.pop(name, None)
    rt.now_serving(name, run)
    for text in model.assumes:
        say_once(rt, f"{model.entry}: {text}", f"{text}: assumed (container {name} of {rt.ref.split('/', 1)[1]}, catalog entry {model.entry.split(' ', 1)[0]})", last, name)
    if model.creates:
        code = yield from _create(rt, model, last)
        if code:
            return code
    if model.fills:
        code = yield from _fill(rt, model, last)
        if code:
            return code
    if model.applies:
        code = yield from _apply(rt, model, last)
        if code:
            return code
    if model.log_ready:
        rt.log("container-log", f"{name}: {model.log_ready}", last, container=name, line=model.log_ready)
    if model.run_seconds is None and model.writes:
        _leave_state(rt, model, last)
    if model.run_seconds is None:
        yield sim.env.event()  # runs until stopped
    elif model.run_seconds > 0:
        yield sim.sleep(model.run_seconds)
    faults = sim.faults
    forced = faults.exit_code(rt.store.get("Pod", *rt.key) or {}, name, run) if faults else None
    code = int(forced) if forced is not None else model.exit_code
    if code == 0 and model.run_seconds is not None:
        _leave_state(rt, model, last)
    return code


def _leave_state(rt: PodRuntime, model: ContainerModel, cause: int | None) -> None:
    """Record what the program leaves outside the cluster (its entry's ``writes``): a program
    that runs to completion when it exits 0, a server once it serves."""
    sim = rt.sim
    new = [key for key in model.writes if key not in sim.external_state]
    sim.external_state.update(model.writes)
    if new:
        rt.log(
            "state-written", f"{model.name}: leaves the {', '.join(new)} (catalog entry {model.entry})", cause,
            container=model.name, state=new,
        )


def _give_up(
    rt: PodRuntime,
    model: ContainerModel,
    need: str,
    error: str,
    code: int,
    line: str | None,
    cause: int | None,
    *,
    network: bool = True,
) -> int:
    """End the run on ``need``: the program's last log ``line`` (``None``: it prints none), then
    ``need-failed``; returns the exit code."""
    name = model.name
    logged = cause if line is None else rt.log("container-log", f"{name}: {line}", cause, container=name, line=line)
    rt.log(
        "need-failed",
        f"{name}: {need} failed ({error}): the run ends with exit code {code}",
        logged,
        container=name,
        need=need,
        error=error,
        exitCode=code,
        network=network,
        entry=model.entry,
    )
    return code


def _forbidden(rt: PodRuntime, model: ContainerModel, verb: str, obj: Mapping[str, Any], last: int | None) -> bool:
    """Whether RBAC refuses the program's ``verb`` on ``obj`` (its log line is written); an
    undecidable call (a ClusterRole the simulation lacks) is allowed and said once."""
    sa = str(rt.spec.get("serviceAccountName") or rt.spec.get("serviceAccount") or "default")
    err, unresolved = rt.k.auth.decide(rt.key[0], sa, verb, obj)
    if unresolved:
        meta = obj.get("metadata") or {}
        text = (
            f"container {model.name} of {_workload(rt)} may {verb} {obj.get('kind')}/{meta.get('name')} only through a "
            f"role the simulation does not hold ({unresolved}): assumed allowed"
        )
        say_once(rt, text, text, last, model.name)
    if err is None:
        return False
    meta = obj.get("metadata") or {}
    where = f" in {meta.get('namespace')}" if meta.get("namespace") else ""
    need = f"{RBAC_NEED_PREFIX}{verb} {rt.k.auth.resource_of(obj)}{where} as ServiceAccount {sa}"
    _give_up(rt, model, need, err, model.fail_exit_code, err, last, network=False)
    return True


RBAC_NEED_PREFIX = "permission to "
"""How a need on RBAC reads: ``permission to update secrets in ns as ServiceAccount sa``."""


def _actor(rt: PodRuntime) -> str:
    sa = rt.spec.get("serviceAccountName") or rt.spec.get("serviceAccount") or "default"
    return f"system:serviceaccount:{rt.key[0]}:{sa}"


def _refused(rt: PodRuntime) -> str:
    # kubernetes/kubectl pkg/cmd/util/helpers.go standardErrorMessage: a refused connection is
    # reported with the server's host:port.
    return (
        f"The connection to the server {rt.store.apiserver_ip()}:443 was refused - "
        "did you specify the right host or port?"
    )


def _create(rt: PodRuntime, model: ContainerModel, last: int | None) -> Generator[Any, Any, int]:
    """Create each of ``model.creates`` unless it exists (the program's get-or-create)."""
    name = model.name
    for obj in model.creates:
        meta = obj.get("metadata") or {}
        kind = str(obj.get("kind"))
        if rt.store.get(kind, meta.get("namespace"), str(meta.get("name"))) is not None:
            continue
        if _forbidden(rt, model, "create", obj, last):
            return 1
        try:
            rt.store.create(dict(obj), actor=_actor(rt), cause=last)
        except ApiUnreachable:
            line = _refused(rt)
            rt.log("container-log", f"{name}: {line}", last, container=name, line=line)
            return 1
        except ApiError as err:
            if err.reason == "AlreadyExists":
                continue
            rt.log("container-log", f"{name}: {err.message}", last, container=name, line=err.message)
            return 1
        rt.log("created-by-program", f"{name} created {kind}/{meta.get('name')}", last, container=name)
    return 0
    yield  # a generator like the other steps


FILLED = "(set by the program)"
"""The value a ``fills`` entry writes: the simulation knows a field is set, not its content."""


def _fill(rt: PodRuntime, model: ContainerModel, last: int | None) -> Generator[Any, Any, int]:
    """Set each of ``model.fills``' fields in its object (read, then updated as the pod's
    ServiceAccount: a certificate controller writing the Secret its webhook mounts)."""
    name = model.name
    for target, paths in model.fills:
        kind, ns, obj_name = _split(target)
        live = rt.store.get(kind, ns, obj_name)
        if live is None:
            continue  # its existence was this attempt's check; deleted since, it is filled next time
        if all(_field_set(live, path) for path in paths):
            continue
        if _forbidden(rt, model, "update", live, last):
            return 1
        obj = copy.deepcopy(live)
        for path in paths:
            *parents, leaf = path_parts(path)
            node = obj
            for part in parents:
                child = node.get(part)
                if not isinstance(child, dict):
                    child = node[part] = {}
                node = child
            # a Secret's data values are base64 (kubernetes pkg/apis/core/types.go Secret.Data)
            node[leaf] = base64.b64encode(FILLED.encode()).decode() if kind == "Secret" and parents[:1] == ["data"] else FILLED
        try:
            rt.store.update(obj, actor=_actor(rt), cause=last)
        except ApiUnreachable:
            line = _refused(rt)
            rt.log("container-log", f"{name}: {line}", last, container=name, line=line)
            return 1
        except ApiError as err:
            rt.log("container-log", f"{name}: {err.message}", last, container=name, line=err.message)
            return 1
        rt.log("filled-by-program", f"{name} set {', '.join(paths)} of {kind}/{obj_name}", last, container=name)
    return 0
    yield  # a generator like the other steps


def _apply(rt: PodRuntime, model: ContainerModel, last: int | None) -> Generator[Any, Any, int]:
    name = model.name
    for obj in model.applies:
        meta = obj.get("metadata") or {}
        exists = rt.store.get(str(obj.get("kind")), meta.get("namespace"), str(meta.get("name"))) is not None
        # kubectl apply: a PATCH of an object that exists, else a CREATE
        if _forbidden(rt, model, "patch" if exists else "create", obj, last):
            return 1
        try:
            live, created = rt.store.apply(obj, actor=_actor(rt), cause=last)
        except ApiUnreachable:
            line = _refused(rt)
            rt.log("container-log", f"{name}: {line}", last, container=name, line=line)
            return 1
        except ApiError as err:
            rt.log(
                "container-log",
                f"{name}: Error from server ({err.reason}): {err.message}",
                last,
                container=name,
                line=err.message,
            )
            return 1
        kind = str(obj.get("kind", "")).lower()
        # kubectl apply prints "<kind>/<name> created|configured" per object.
        line = f"{kind}/{live['metadata']['name']} {'created' if created else 'configured'}"
        rt.log("container-log", f"{name}: {line}", last, container=name, line=line)
    return 0
    yield  # a generator like the other steps


def dial(rt: PodRuntime, target: Need, timeout: float, cause: int | None, container: str) -> Generator[Any, Any, ConnectResult]:
    """Connect to ``target`` from container ``container`` of the pod: its own loopback within
    the pod, anything else through the network state."""
    if target.kind != "loopback":
        return (yield from rt.k.net.connect(rt.key, target, timeout, cause=cause, container=container))
    return _loopback(rt, target, cause, container)


def _loopback(rt: PodRuntime, target: Need, cause: int | None, container: str) -> ConnectResult:
    """A connection to the pod's own loopback: the containers of a pod share its network
    namespace (kubernetes pkg/kubelet/kuberuntime: one sandbox per pod), so a sibling container
    listening on the port answers and nothing else can; no network policy applies to it (the
    Kubernetes NetworkPolicy API: traffic to and from the node's and the pod's own addresses is
    not selected). A sibling that declares no ports is taken to listen, and that is said once."""
    from helmsim.cluster.netstate import ConnectResult

    sim = rt.sim
    listener, assumed = rt.listener(target.port, container)
    if listener is not None and assumed:
        text = (
            f"{target} is taken to be served by container {listener} of the same pod (it declares no ports; "
            f"container {container} of {_workload(rt)} connects to it)"
        )
        say_once(rt, text, text, cause, container)
    if listener is not None and rt.serves(listener):
        event = rt.log(
            "connected",
            f"{container} connected to {target} on the pod's loopback: container {listener} listens on {target.port}",
            cause, target=str(target), attempt=1, dial=f"127.0.0.1:{target.port}", container=container, decided_by=[],
        )
        return ConnectResult(True, sim.now, "", event)
    # the kernel answers a SYN to a loopback port nobody listens on with RST at once
    address = "[::1]" if target.host == "::1" else "127.0.0.1"
    error = f"dial tcp {address}:{target.port}: connect: connection refused"
    why = (
        f"container {listener} of the pod, which listens on it, is not serving yet"
        if listener is not None
        else "no other container of the pod listens on it"
    )
    event = rt.log(
        "connect-refused", f"{container} could not connect to {target} ({why}): {error}",
        cause, target=str(target), container=container, error=error, loopback=True,
    )
    return ConnectResult(False, sim.now, error, event)


def wait_loop(rt: PodRuntime, model: ContainerModel, cause: int) -> Generator[Any, Any, int]:
    """Poll the wait loop's targets in turn until each answers or a bound expires."""
    assert model.wait is not None
    last = cause
    for target in (model.wait.target, *model.wait.also):
        code, last = yield from _wait_for(rt, model, target, last)
        if code != 0:
            return code
    return 0


def _wait_for(rt: PodRuntime, model: ContainerModel, target: Need, cause: int) -> Generator[Any, Any, tuple[int, int]]:
    """Poll one target until it answers (0) or the loop's bound expires (its exit code)."""
    assert model.wait is not None
    sim = rt.sim
    wait = model.wait
    start = sim.now
    end = start + wait.bound if wait.bound is not None else None
    last: int = cause
    logged = False
    first = True
    rt.activity[model.name] = f"waiting for {target}"
    while True:
        limit = wait.probe_timeout if end is None else min(wait.probe_timeout, end - sim.now)
        res = yield from dial(rt, target, limit, last, model.name)
        if res.ok:
            event = rt.log(
                "container-log",
                f"{model.name}: {target} reachable after {sim.now - start:g} s",
                res.event,
                container=model.name,
            )
            return 0, event
        last = res.event if res.event is not None else last
        if first and wait.resolve_once and target.is_name and "lookup" in res.error:
            # bitnami/wait-for-port cmd.go validateHost: a host that does not resolve ends it.
            line = f"cannot resolve host {target.host.split('/')[-1]!r}: {res.error}"
            return _give_up(rt, model, str(target), res.error, 1, line, last), last
        first = False
        if not logged:
            rt.log(
                "container-log",
                f"{model.name}: waiting for {target}: {res.error}",
                res.event,
                container=model.name,
                line=res.error,
            )
            logged = True
        if end is not None and sim.now + wait.interval >= end:
            if end > sim.now:
                yield sim.sleep(end - sim.now)
            text = wait.gave_up or f"gave up waiting for {target} after {wait.bound:g} s"
            return _give_up(rt, model, str(target), res.error, wait.exit_code, text, last), last
        yield sim.sleep(wait.interval)


# --- assumptions -----------------------------------------------------------------------------------

ASSUMED = "no behaviour known for image {image}: assumed to start and succeed"
NOT_MODELLED = ": not modelled"
"""How a catalog entry that matched a container but could not read its program ends its note."""


def note_assumptions(rt: PodRuntime, cause: int | None) -> None:
    """Say once (per simulation) for each image and assumption that nothing describes what it
    does; a second assumption about the same image names the workload it is about."""
    assert rt.model is not None
    seen = rt.k.assumed_images
    for model in rt.model.containers.values():
        for note in model.notes:
            if note.endswith(URL_UNREAD):
                # `kubectl apply -f https://…`: the objects it creates (CRDs) are not in the simulation
                text = f"container {model.name} of {_workload(rt)} {note.removeprefix('needs ').split(': ', 1)[-1]}"
                say_once(rt, text, text, cause, model.name)
        if model.known or not model.image or registries.unobtainable(model.image, rt.sim.profile.images.pullable, rt.sim.profile.images.present):
            continue  # nothing is assumed of an image that never runs (helmsim.cluster.registries)
        text = ASSUMED.format(image=model.image)
        peers = [str(n) for n in model.needs if n.kind not in ("dns", "kube-apiserver")]
        if peers:
            # the needs inferred from its environment and policies: dialled once each at start
            text += f", connecting at start to {', '.join(peers)} and exiting 1 when one does not answer"
        cyclic = [n.partition(": ")[0] for n in model.notes if n.endswith(CYCLE_NOTE)]
        if cyclic:
            text += (
                f", {'and ' if peers else ''}not waiting at start for {', '.join(cyclic)} (its policies or environment name "
                "it, but the pods behind it would in turn wait for this one: the needs inferred form a cycle)"
            )
        if model.run_seconds is None:
            text += " (it runs until stopped)"
        unread = [n for n in model.notes if n.endswith(NOT_MODELLED)]
        if unread:
            text += f"; it {'; '.join(unread)}"
        # what would change a verdict keys the note; whether it runs until stopped is the
        # workload's kind (a Job's pod and a Deployment's of one image), said the first time only
        # a catalog entry describes a sibling of the same image (bitnami wordpress's init
        # container runs the wordpress image too): the note is about this container only
        sibling = any(m.known and m.image == model.image for m in rt.model.containers.values() if m is not model)
        if sibling:
            text += f" (container {model.name} of {_workload(rt)}; a catalog entry describes the pod's other container of this image)"
        said = seen.setdefault(model.image, set())
        key = text.replace(" (it runs until stopped)", "")
        if key in said:
            continue
        said.add(key)
        if len(said) > 1 and not sibling:
            text += f" (container {model.name} of {_workload(rt)})"
        rt.log("behaviour-assumed", text, cause, container=model.name, image=model.image)


def _workload(rt: PodRuntime) -> str:
    """The pod's topmost controller as ``Kind/namespace/name`` (a ReplicaSet's Deployment)."""
    ns, kind, name = rt.key[0], "Pod", rt.key[1]
    for _ in range(3):  # Pod → ReplicaSet → Deployment, with room to spare
        owner = controller_of(rt.sim.store.get(kind, ns, name))
        if owner is None:
            break
        kind, name = owner
    return f"{kind}/{ns}/{name}"


def _assume_outside(rt: PodRuntime, target: str, container: str, cause: int | None) -> None:
    """Say once that a peer outside the cluster was taken to exist and answer: the simulation
    cannot reach it, and a name that does not resolve or a server that is down would fail it."""
    text = (
        f"{target} is outside the cluster: assumed to resolve and to answer "
        f"(container {container} of {rt.ref.split('/', 1)[1]} connects to it; were it missing or down, it would fail)"
    )
    say_once(rt, f"{target} is outside the cluster", text, cause, container)


def say_once(rt: PodRuntime, key: str, text: str, cause: int | None, container: str) -> None:
    """Log the assumption ``text`` the first time ``key`` is said in this simulation (the
    report's notes: :func:`assumed_behaviours`)."""
    if key not in rt.k.said_once:
        rt.k.said_once.add(key)
        rt.log("behaviour-assumed", text, cause, container=container)


def assumed_behaviours(trace: Any) -> list[str]:
    """The report's notes: each image whose behaviour was assumed, once, in order."""
    return [e.message for e in trace if e.what == "behaviour-assumed"]


# --- probes ----------------------------------------------------------------------------------------


def _probe_error(rt: PodRuntime, c: Mapping[str, Any], probe: Mapping[str, Any]) -> str:
    """What the kubelet's prober reports for a probe of a process that does not listen yet."""
    ports = {str(p.get("name")): p.get("containerPort") for p in c.get("ports") or () if p.get("name")}
    ip = rt.ip or "0.0.0.0"

    def port_of(value: Any) -> Any:
        return ports.get(str(value), value)

    http = probe.get("httpGet")
    if isinstance(http, Mapping):
        # kubernetes pkg/probe/http/http.go DoHTTPProbe: the Go client's error for the GET.
        scheme = str(http.get("scheme") or "HTTP").lower()
        host = http.get("host") or ip
        port = port_of(http.get("port"))
        path = str(http.get("path") or "/")
        return f'Get "{scheme}://{host}:{port}{path}": dial tcp {host}:{port}: connect: connection refused'
    tcp = probe.get("tcpSocket")
    if isinstance(tcp, Mapping):
        # kubernetes pkg/probe/tcp/tcp.go DoTCPProbe: the dial error.
        port = port_of(tcp.get("port"))
        return f"dial tcp {tcp.get('host') or ip}:{port}: connect: connection refused"
    grpc = probe.get("grpc")
    if isinstance(grpc, Mapping):
        # kubernetes pkg/probe/grpc/grpc.go: "timeout: failed to connect service %q within %v".
        timeout = int(probe.get("timeoutSeconds") or 1)
        return f'timeout: failed to connect service "{ip}:{grpc.get("port")}" within {timeout}s'
    return ""  # exec: the command's output, which the simulation does not know


def _ticks(probe: Mapping[str, Any], start: float) -> tuple[float, float]:
    """(first probe time, period): probes run at start + initialDelaySeconds + k × period, k ≥ 1."""
    period = float(probe.get("periodSeconds") or PROBE_PERIOD)
    return start + float(probe.get("initialDelaySeconds") or 0) + period, period


def _first_at_or_after(first: float, period: float, t: float) -> float:
    if t <= first:
        return first
    return first + math.ceil((t - first) / period - 1e-9) * period


def probe_times(
    c: Mapping[str, Any], start: float, serving_at: float
) -> tuple[float, float | None]:
    """When the container counts as started (startup probe) and ready (readiness probe), for a
    run started at ``start`` whose process serves from ``serving_at``."""
    startup = c.get("startupProbe")
    readiness = c.get("readinessProbe")
    started = serving_at if not startup else _first_at_or_after(*_ticks(startup, start), serving_at)
    if not readiness:
        return started, started
    first, period = _ticks(readiness, start)
    need = int(readiness.get("successThreshold") or 1)
    ok = _first_at_or_after(first, period, max(serving_at, started))
    ready = ok + (need - 1) * period
    if startup:
        # the readiness worker probes only once the startup probe succeeded
        ready = max(ready, started + period)
    return started, ready


def schedule_probes(rt: PodRuntime, c: Mapping[str, Any], st: dict[str, Any], run: int, model: ContainerModel) -> None:
    """Readiness after the probes' first success (docs/behaviour.md "Readiness").

    Without probes the container is ready once running (the kubelet's default). With probes, a
    container whose process still connects or waits serves nothing: its probes fail (one
    ``Unhealthy`` event per run, at the first failed probe) until :func:`behave` reports it
    serving, and succeed from the next probe after that.
    """
    start = rt.sim.now
    probes = [p for p in ("startupProbe", "readinessProbe") if c.get(p)]
    waiting = model.probes_after_needs and bool(model.needs or model.checks or model.wait)
    gated = _gated_probe(rt, c, model)
    if gated is not None:
        probes, waiting = [gated], True
    if not probes or not waiting:
        started, ready = probe_times(c, start, start)
        _schedule_marks(rt, st, run, start, started if c.get("startupProbe") else None, ready)
        return
    rt.pending_probes[st["name"]] = (run, start)
    probe = c.get(probes[0]) or {}
    first, _ = _ticks(probe, start)
    label = "Startup" if probes[0] == "startupProbe" else "Readiness"
    error = model.probe_gate.output if gated is not None and model.probe_gate is not None else _probe_error(rt, c, probe)
    rt.sim.after(first - start, _probe_failed, rt, st, run, label, error, gated is not None)
    _schedule_kill(rt, c, st, run, model)


def _gate_of(rt: PodRuntime, name: str) -> ProbeGate | None:
    """The probe gate of container ``name``'s catalog entry (``probesFail``), if any."""
    model = rt.model.containers.get(name) if rt.model is not None else None
    return model.probe_gate if model is not None else None


def _gated_probe(rt: PodRuntime, c: Mapping[str, Any], model: ContainerModel) -> str | None:
    """The first of the container's startup and readiness probes that its program answers as
    failed while the state its catalog entry names is not there (``probesFail``), else None."""
    gate = model.probe_gate
    if gate is None or gate.state in rt.sim.external_state:
        return None
    return next((p for p in ("startupProbe", "readinessProbe") if gate.covers(c.get(p))), None)


def _schedule_kill(rt: PodRuntime, c: Mapping[str, Any], st: dict[str, Any], run: int, model: ContainerModel) -> None:
    """A startup probe — or, without one, a liveness probe that depends on the process — that
    fails ``failureThreshold`` times in a row (default 3) gets the container killed
    (kubernetes pkg/kubelet/prober/worker.go; kuberuntime_manager.go computePodActions)."""
    startup, liveness = c.get("startupProbe"), c.get("livenessProbe")
    if startup:
        probe, label = startup, "startup"
    elif liveness and model.liveness_after_needs:
        probe, label = liveness, "liveness"
    else:
        return
    first, period = _ticks(probe, rt.sim.now)
    threshold = int(probe.get("failureThreshold") or FAILURE_THRESHOLD)
    at = first + (threshold - 1) * period
    rt.sim.after(at - rt.sim.now, _probe_kill, rt, st, run, label, threshold, _probe_error(rt, c, probe), probe)


PROBE_KILL = "probe-kill"


def is_probe_kill(cause: Any) -> bool:
    """Whether a process interrupt is the kubelet killing the container for a failed probe."""
    return isinstance(cause, tuple) and bool(cause) and cause[0] == PROBE_KILL


def _probe_kill(
    rt: PodRuntime, st: dict[str, Any], run: int, label: str, threshold: int, error: str,
    probe: Mapping[str, Any] | None = None,
) -> None:
    name = st["name"]
    if rt.stopped or rt.runs[name] != run + 1 or "running" not in st["state"]:
        return
    if rt.pending_probes.get(name, (None, 0.0))[0] != run:
        return  # it serves: the probe passed
    gate = _gate_of(rt, name)
    if gate is not None and rt.gated_serving.get(name) == run and not gate.covers(probe):
        return  # it serves, and this probe is not one it answers as failed
    proc = rt.procs.get(name)
    if proc is None or not proc.is_alive:
        return
    rt.pending_probes.pop(name, None)
    doing = rt.activity.get(name, "")
    # kubernetes pkg/kubelet/prober/prober.go: each failure is an Unhealthy event;
    # kuberuntime_manager.go: "Container %s failed %s probe, will be restarted" (Killing).
    failed = rt.event("Warning", "Unhealthy", f"{label.capitalize()} probe failed: {error}")
    restart = rt.policy != "Never"
    message = f"Container {name} failed {label} probe" + (", will be restarted" if restart else "")
    ev = rt.event("Normal", "Killing", message, failed)
    rt.log(
        "probe-killed",
        f"{name}: killed after its {label} probe failed {threshold} times"
        + (f", while it was still {doing}" if doing else ""),
        ev,
        container=name,
        probe=label,
        doing=doing,
    )
    proc.interrupt((PROBE_KILL, label))


def _schedule_marks(rt: PodRuntime, st: dict[str, Any], run: int, now: float, started: float | None, ready: float | None) -> None:
    if started is not None:
        rt.sim.after(max(0.0, started - now), rt.mark, st, run, "started")
    if ready is not None:
        rt.sim.after(max(0.0, ready - now), rt.mark, st, run, "ready")


def _probe_failed(rt: PodRuntime, st: dict[str, Any], run: int, label: str, error: str, gated: bool = False) -> None:
    name = st["name"]
    if rt.stopped or rt.runs[name] != run + 1 or "running" not in st["state"]:
        return
    if rt.pending_probes.get(name, (None, 0.0))[0] != run:
        return  # serving already
    # kubernetes pkg/kubelet/prober/prober.go: "<Readiness|Startup> probe failed: <output>".
    ev = rt.event("Warning", "Unhealthy", f"{label} probe failed: {error}")
    gate = _gate_of(rt, name) if gated else None
    why = (
        f"{name}: {label.lower()} probe fails while it serves: {gate.reason}"
        if gated and gate is not None
        else f"{name}: {label.lower()} probe fails while the process is not serving (it is still connecting or waiting)"
    )
    extra = (
        {"reason": gate.reason, "entry": rt.model.containers[name].entry, "fix": gate.fix, "afterInstall": gate.after_install}
        if gate is not None and rt.model
        else {}
    )
    rt.log("probe-failed", why, ev, container=name, probe=label.lower(), gated=gated, **extra)


def now_serving(rt: PodRuntime, c: Mapping[str, Any], st: dict[str, Any], run: int) -> None:
    """The process of run ``run`` serves from now: schedule its probes' first successes."""
    pending = rt.pending_probes.get(st["name"])
    if pending is None or pending[0] != run:
        return
    model = rt.model.containers.get(st["name"]) if rt.model is not None else None
    if model is not None and _gated_probe(rt, c, model) is not None:
        # it serves, but answers its probes as failed until the state is there: look again
        # at each probe period (a program of the simulation may leave it meanwhile)
        rt.gated_serving[st["name"]] = run
        probe = c.get(_gated_probe(rt, c, model) or "") or {}
        _, period = _ticks(probe, rt.sim.now)
        rt.sim.after(period, now_serving, rt, c, st, run)
        return
    rt.pending_probes.pop(st["name"], None)
    start = pending[1]
    started, ready = probe_times(c, start, rt.sim.now)
    _schedule_marks(rt, st, run, rt.sim.now, started if c.get("startupProbe") else None, ready)


__all__ = [
    "ASSUMED",
    "PROBE_PERIOD",
    "assumed_behaviours",
    "behave",
    "evaluate_check",
    "is_probe_kill",
    "note_assumptions",
    "now_serving",
    "probe_times",
    "schedule_probes",
    "service_ready",
    "wait_loop",
]
