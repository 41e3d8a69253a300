"""The workload behaviour model: what each container of a pod needs, how long it runs, how it ends.

Pure: ``model_pod(pod, context)`` takes a Pod manifest and a :class:`BehaviourContext` (policies,
RBAC bindings, ConfigMaps, Services and addresses known to the simulation) and returns a
:class:`PodModel` with one :class:`ContainerModel` per container. Every inference is recorded as
a sentence (``ContainerModel.notes``) so reports can show why the simulator thinks a container
talks to the API server or waits for a Service. docs/behaviour.md documents every default.

Precedence, lowest first: inference, then pod annotations (``helmsim.dev/...``), then scenario
overrides (:class:`BehaviourOverride`, e.g. from ``sim.behaviour_overrides``).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import ipaddress
import re
import shlex
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from msgspec import Struct
from msgspec.structs import replace

from helmsim.cluster import shellscript
from helmsim.cluster.latency import parse_duration
from helmsim.errors import InputError
from helmsim.kube import addresses
from helmsim.kube.nulls import drop_nulls
from helmsim.kube.scope import CLUSTER_SCOPED_KINDS
from helmsim.yamlio import load_documents

ANNOTATION_PREFIX = "helmsim.dev/"
NEEDS_ANNOTATION = "helmsim.dev/needs"
RUN_SECONDS_ANNOTATION = "helmsim.dev/run-seconds"
EXIT_CODE_ANNOTATION = "helmsim.dev/exit-code"
CONNECT_TIMEOUT_ANNOTATION = "helmsim.dev/connect-timeout-seconds"

# k8s.io/client-go transport/cache.go: the dialer client-go builds has Timeout 30 s, so a dropped
# SYN to the API server surfaces as "dial tcp 10.96.0.1:443: i/o timeout" after 30 s.
DEFAULT_CONNECT_TIMEOUT = 30.0
# Assumption (docs/behaviour.md): a Job or run-to-completion pod does its work in 5 s.
DEFAULT_RUN_SECONDS = 5.0
# Assumption: the probe interval of a wait loop without a visible `sleep N`.
DEFAULT_WAIT_INTERVAL = 2.0
# Linux: with net.ipv4.tcp_syn_retries = 6 (Documentation/networking/ip-sysctl.rst) a connect
# without its own timeout fails after 1+2+4+8+16+32+64 = 127 s (net/ipv4/tcp_timer.c).
KERNEL_CONNECT_TIMEOUT = 127.0
# coreutils timeout(1): "If the command times out ... exit with status 124".
TIMEOUT_EXIT_CODE = 124

NeedKind = Literal["kube-apiserver", "dns", "fqdn", "service", "cidr", "loopback"]


class Need(Struct, frozen=True):
    """A connection a container makes: the API server, cluster DNS, a name, a Service, a CIDR,
    or its own pod's loopback.

    ``host`` is the FQDN (``fqdn``), ``namespace/name`` (``service``), the CIDR (``cidr``), the
    name to resolve (``dns``, optional) or the loopback address as written (``loopback``:
    ``localhost``, ``127.0.0.1``, ``::1``). ``port`` is 0 for ``kube-apiserver`` and ``dns``.
    """

    kind: NeedKind
    host: str = ""
    port: int = 0
    protocol: str = "TCP"

    def __str__(self) -> str:
        if self.kind in ("kube-apiserver", "dns"):
            return self.kind
        if self.kind == "service":
            return f"svc/{self.host}:{self.port}"
        return f"{self.host}:{self.port}"

    @property
    def is_name(self) -> bool:
        """Whether reaching it starts with a DNS lookup."""
        return self.kind in ("fqdn", "service")


def parse_need(
    text: str,
    *,
    namespace: str,
    where: str = NEEDS_ANNOTATION,
    services: Container[tuple[str, str]] = frozenset(),
) -> Need:
    """Parse ``kube-apiserver``, ``dns``, ``host:port``, ``svc/<ns>/<name>:<port>``, ``CIDR:port``,
    an ``http(s)://host[:port]/…`` URL (its scheme's port by default) or another scheme's
    ``SCHEME://host:port[/…]`` (a Kafka listener, a ``jdbc:postgresql://…`` URL) (a host named
    ``name.ns`` is a Service when ``services`` holds it: :func:`_name_need`)."""
    item = text.strip()
    if item in ("kube-apiserver", "apiserver"):
        return Need("kube-apiserver")
    if item == "dns":
        return Need("dns")
    broker = _SCHEME_HOST_PORT.match(item)
    if broker is not None and broker.group("scheme").lower() not in ("http", "https") and 0 < int(broker.group("port")) < 65536:
        # a Kafka listener URL (PLAINTEXT://kafka:9092, SASL_SSL://…): the host and port it dials
        return _host_need(broker.group("host").strip("[]"), int(broker.group("port")), namespace, addresses.CLUSTER_DOMAIN, services)
    url = _URL.match(item)
    if url is not None and item[url.end():][:1] in ("", "/", "?", "#"):
        port = int(url.group("port") or (443 if url.group("scheme") == "https" else 80))
        item = f"{url.group('host').strip('[]')}:{port}"
    host, sep, port_text = item.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 < int(port_text) < 65536 or not host:
        raise InputError(
            f"{where}: {item!r} is not kube-apiserver, dns, host:port, svc/<ns>/<name>:<port> "
            "or CIDR:port"
        )
    port = int(port_text)
    if host.startswith("svc/"):
        parts = host[4:].split("/")
        if len(parts) == 1 and parts[0]:
            return Need("service", f"{namespace}/{parts[0]}", port)
        if len(parts) == 2 and all(parts):
            return Need("service", "/".join(parts), port)
        raise InputError(f"{where}: {item!r}: expected svc/<namespace>/<name>:<port>")
    try:
        net = ipaddress.ip_network(host, strict=False)
    except ValueError:
        return _name_need(host, port, namespace, services=services)
    if net.num_addresses == 1 and net.is_loopback:
        return Need("loopback", str(net.network_address), port)
    return Need("cidr", str(net), port)


# kubernetes pkg/kubelet/kubelet_pods.go managedHostsFileContent: every pod's /etc/hosts maps
# localhost (and ip6-localhost, ip6-loopback) to its own loopback, before any DNS lookup.
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})


def _name_need(
    host: str,
    port: int,
    namespace: str,
    cluster_domain: str = addresses.CLUSTER_DOMAIN,
    services: Container[tuple[str, str]] = frozenset(),
) -> Need:
    """A host name: the apiserver's Service, an in-cluster Service name, or an external FQDN.

    ``services`` holds the ``(namespace, name)`` of the Services the simulation knows: a
    two-label ``name.ns`` is the Service ``name`` of namespace ``ns`` when it is one of them,
    else an external name (the engine resolves it again at the dial: :func:`search_service`).
    """
    name = host.lower().rstrip(".")
    if name in LOOPBACK_NAMES:
        return Need("loopback", name, port)
    suffix = f".svc.{cluster_domain}"
    if name.endswith(suffix):
        name = name[: -len(suffix)] + ".svc"
    labels = name.split(".")
    if name in ("kubernetes", "kubernetes.default", "kubernetes.default.svc"):
        return Need("kube-apiserver")
    if len(labels) == 1:
        return Need("service", f"{namespace}/{labels[0]}", port)
    if len(labels) == 3 and labels[2] == "svc":
        return Need("service", f"{labels[1]}/{labels[0]}", port)
    ref = search_service(name, services) or endpoint_service(labels, namespace, services)
    if ref is not None:
        return Need("service", f"{ref[0]}/{ref[1]}", port)
    return Need("fqdn", name, port)


def endpoint_service(
    labels: list[str], namespace: str, services: Container[tuple[str, str]]
) -> tuple[str, str] | None:
    """``(namespace, name)`` of the Service whose endpoint a pod's name dials: a StatefulSet pod
    under its headless Service, ``zk-0.zk-headless[.ns[.svc]]`` (``labels`` with the cluster
    domain cut to ``svc``). CoreDNS's kubernetes plugin answers
    ``<endpoint>.<service>.<namespace>.svc.<zone>`` with that endpoint's address (coredns/coredns
    plugin/kubernetes parse.go, kubernetes.go: an endpoint hostname of a headless Service), and a
    pod's search path reaches it from the shorter forms: ``zk-0.zk-headless`` first as
    ``zk-0.zk-headless.<ns>.svc.<domain>``, ``zk-0.zk-headless.ns`` as ``….ns.svc.<domain>``
    (kubernetes pkg/kubelet/network/dns/dns.go generateSearchesForDNSClusterFirst). The Service
    must be one the simulation knows; the connection is then to the pods behind it. (A two-label
    name that is also a Service of another namespace is read as that Service: helmsim does not
    know which Services have endpoint hostnames.)"""
    if len(labels) == 4 and labels[3] == "svc":
        ref = (labels[2], labels[1])
    elif len(labels) == 3:
        ref = (labels[2], labels[1])
    elif len(labels) == 2:
        ref = (namespace, labels[1])
    else:
        return None
    return ref if all(labels) and ref in services else None


def search_service(host: str, services: Container[tuple[str, str]]) -> tuple[str, str] | None:
    """``(namespace, name)`` of the Service a two-label ``name.ns`` reaches from a pod, if it is
    one of ``services``; else None (the name is looked up outside the cluster).

    kubernetes pkg/kubelet/network/dns/dns.go generateSearchesForDNSClusterFirst: a ClusterFirst
    pod's resolv.conf searches ``<ns>.svc.<domain> svc.<domain> <domain>`` with ``ndots:5``
    (defaultDNSOptions); glibc resolv/res_query.c and musl src/network/lookup_name.c try a name
    with fewer dots than ndots with each search suffix before the name itself, so ``db.ops``
    is first ``db.ops.<ns>.svc.<domain>`` (NXDOMAIN: no Service ``ops`` has an endpoint
    hostname ``db``, assumed), then ``db.ops.svc.<domain>``, which CoreDNS's kubernetes plugin
    answers for the Service ``db`` of namespace ``ops`` (coredns/coredns plugin/kubernetes
    parse.go: ``<service>.<namespace>.svc.<zone>``), and only when there is none the absolute
    ``db.ops``."""
    labels = host.lower().rstrip(".").split(".")
    if len(labels) != 2 or not all(labels):
        return None
    ref = (labels[1], labels[0])
    return ref if ref in services else None


class WaitLoop(Struct, frozen=True):
    """An init container polling a target until it answers (``until nc -z db 5432; do …``)."""

    target: Need
    interval: float = DEFAULT_WAIT_INTERVAL
    probe_timeout: float = DEFAULT_CONNECT_TIMEOUT
    bound: float | None = None  # `timeout N sh -c '…'`: exit 124 after N seconds
    exit_code: int = TIMEOUT_EXIT_CODE
    """The exit code when ``bound`` expires (124 for coreutils timeout, 1 for wait-for-port)."""
    resolve_once: bool = False
    """A name that does not resolve on the first probe ends the run at once with exit 1
    (wait-for-port validates its host before polling)."""
    gave_up: str = ""
    """The program's words when ``bound`` expires (logged as a container log line)."""
    also: tuple[Need, ...] = ()
    """Further targets, waited for in turn once ``target`` answers, each with a fresh ``bound``
    (``for host in "${hosts[@]}"; do retry_while "check $host"``)."""


CheckKind = Literal["api", "webhook", "object", "condition", "rollout", "deleted", "state", "env", "file", "fact"]
STATE_SUFFIX = " (left outside the cluster by another program)"
"""How a ``state`` check reads in needs and findings: ``the <state> (left outside …)``."""


ENV_SUFFIX = " in its environment"
"""How an ``env`` check reads in a need (``CF_API_TOKEN or CF_API_KEY+CF_API_EMAIL in its environment``)."""
FACT_SUFFIX = " (a fact of the cluster's setup)"
"""How a ``fact`` check reads in a need: ``<fact> (a fact …)``, or ``A in its environment, or <fact> (a fact …)``."""


class Check(Struct, frozen=True):
    """A condition of the cluster a program verifies through the API server, each attempt.

    ``api``: ``target`` = ``group/version/Kind`` is served (REST mapping). ``webhook``:
    ``target`` = ``resource.group``: the admission webhooks intercepting its CREATE have a
    Service with ready endpoints. ``object``: ``target`` = ``Kind/namespace/name`` (or
    ``Kind//name`` cluster-scoped) exists, and with ``path`` that dotted path in it is set and
    not empty. ``condition``: the objects ``target`` names (or
    ``selector`` selects in ``Kind/namespace/``) have condition ``condition`` with
    ``status``. ``rollout``: ``target`` is rolled out (kstatus Current). ``deleted``: ``target``
    is gone. ``state``: a program of the simulation left ``target`` behind outside the cluster
    (a database schema migrated: ``Simulation.external_state``). ``env``: one of the variables
    ``target`` names (``A or B``) is set in the container's environment; decided from the pod
    spec, so a compiled one never holds. ``fact``: it holds only where the cluster's setup gives
    the fact ``target`` (with ``selector``: none of the variables it names is set, which would
    do instead)
    (``Simulation.external_state``, from the profile: a GCE metadata server). ``errors`` maps each way of failing (``unmet``, ``missing``, ``no-service``,
    ``not-ready``, ``not-found``, ``none``) to the program's words; ``{name}``, ``{kind}`` and
    ``{resource}`` are filled in.
    """

    kind: CheckKind
    target: str
    selector: str = ""
    condition: str = ""
    status: str = "True"
    errors: tuple[tuple[str, str], ...] = ()
    path: str = ""

    def error(self, reason: str, default: str) -> str:
        """The program's words for ``reason``, else ``default``."""
        return next((text for key, text in self.errors if key == reason), default)

    def __str__(self) -> str:
        if self.kind == "api":
            return f"the {self.target} API served"
        if self.kind == "webhook":
            return f"the admission webhooks for {self.target} ready"
        if self.kind == "object":
            what = self.target.replace("//", "/")
            return f"{what} with {self.path} set" if self.path else f"{what} present"
        if self.kind == "condition":
            what = f"{self.target}{'?' + self.selector if self.selector else ''}"
            return f"{what} {self.condition}={self.status}"
        if self.kind == "rollout":
            return f"{self.target} rolled out"
        if self.kind == "state":
            return f"the {self.target}{STATE_SUFFIX}"
        if self.kind == "env":
            return f"{self.target}{ENV_SUFFIX}"
        if self.kind == "fact":
            fact = f"{self.target}{FACT_SUFFIX}"
            return f"{self.selector}{ENV_SUFFIX}, or {fact}" if self.selector else fact
        if self.kind == "file":
            return f"{self.target} set"
        return f"{self.target} deleted"


class ProbeGate(Struct, frozen=True):
    """Probes a serving program fails until ``state`` is in ``Simulation.external_state``: those
    whose exec command matches ``exec`` or whose HTTP path matches ``http`` and not ``unless``
    (fnmatch globs)."""

    state: str
    exec: tuple[str, ...] = ()
    http: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()
    output: str = ""
    reason: str = ""
    fix: str = ""
    after_install: bool = False

    def covers(self, probe: Mapping[str, Any] | None) -> bool:
        """Whether ``probe`` (a container's probe) asks what the program answers as failed."""
        if not isinstance(probe, Mapping):
            return False
        command = (probe.get("exec") or {}).get("command") if isinstance(probe.get("exec"), Mapping) else None
        if isinstance(command, list):
            text = " ".join(str(a) for a in command)
            if any(fnmatch.fnmatchcase(text, g) for g in self.exec):
                return True
        http = probe.get("httpGet")
        if isinstance(http, Mapping):
            path = str(http.get("path") or "/")
            return any(fnmatch.fnmatchcase(path, g) for g in self.http) and not any(
                fnmatch.fnmatchcase(path, g) for g in self.unless
            )
        return False


class Retry(Struct, frozen=True):
    """A program that tries its needs and checks again every ``interval`` while they fail.

    ``bound`` ``None`` tries forever; 0 is a single attempt (which fails like a program that
    does not retry); otherwise it gives up with ``exit_code``, exactly at ``bound`` when
    ``hard`` (a context deadline) or after the first failed attempt that ends past it (soft,
    ``time.Since(start) > wait``).
    """

    interval: float
    bound: float | None = None
    exit_code: int = 1
    hard: bool = False
    factor: float = 1.0
    """Each wait is ``factor`` times the previous one (exponential back-off)."""
    attempts: int | None = None
    """At most this many attempts; then it gives up with ``exit_code``."""
    needs: bool = True
    """A failing connection is retried too; ``False``: it ends the run at once."""
    give_up_error: str = ""
    """What it reports when it gives up (default: the last failure)."""


class ContainerModel(Struct, frozen=True):
    """What one container does each time it runs.

    It first connects to each of ``needs`` in order (each with ``connect_timeout``); a need that
    cannot be reached ends the run with exit code 1 at the timeout. A ``wait`` loop polls its
    target instead. Then it applies ``applies`` (as the pod's ServiceAccount), runs
    ``run_seconds`` (``None``: forever) and exits with ``exit_code``.
    """

    name: str
    init: bool
    needs: tuple[Need, ...] = ()
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    run_seconds: float | None = DEFAULT_RUN_SECONDS
    exit_code: int = 0
    wait: WaitLoop | None = None
    applies: tuple[Mapping[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    image: str = ""
    checks: tuple[Check, ...] = ()
    """Conditions of the cluster it verifies after connecting (a catalog entry's checks)."""
    retry: Retry | None = None
    """How it retries failing needs and checks; ``None``: the first failure ends the run."""
    fail_exit_code: int = 1
    """The exit code of a run ended by a failing need or check (without retry)."""
    probes_after_needs: bool = True
    """Readiness and startup probes answer only once its needs and checks passed (a process
    that is still connecting serves nothing); ``False``: from the start."""
    liveness_after_needs: bool = True
    """Its liveness probe, likewise (a liveness endpoint served from the start: ``False``)."""
    creates: tuple[Mapping[str, Any], ...] = ()
    """Objects it creates (when absent) as the pod's ServiceAccount after its needs pass."""
    fills: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """``(Kind/namespace/name, dotted paths)`` it sets in existing objects after its checks pass."""
    writes: tuple[str, ...] = ()
    """State it leaves outside the cluster when it exits 0 (``Simulation.external_state``)."""
    probe_gate: ProbeGate | None = None
    """Probes it fails while it serves, until a state holds (Vault sealed)."""
    entry: str = ""
    """The catalog entry that described it (``name (origin)``), if any."""
    known: bool = False
    """Whether its behaviour is known (a catalog entry, a recognised command, an annotation or
    an override) rather than assumed."""
    log_ready: str = ""
    log_failed: str | None = ""
    """Log lines on success and on failure (``{error}``: what failed; ``""`` on failure:
    ``Error: {error}``, as most CLIs print; ``None``: it prints nothing)."""
    log_waiting: str = ""
    assumes: tuple[str, ...] = ()
    """What its success rests on that cannot be known offline (its catalog entry's ``assumes``),
    said once in the report when it serves."""


class PodModel(Struct, frozen=True):
    """The behaviour of every container of one pod, init containers first."""

    containers: Mapping[str, ContainerModel]

    def container(self, name: str) -> ContainerModel:
        return self.containers[name]

    @property
    def notes(self) -> tuple[tuple[str, str], ...]:
        """``(container, sentence)`` for every inference, in container order."""
        return tuple((c.name, n) for c in self.containers.values() for n in c.notes)


class BehaviourOverride(Struct, frozen=True):
    """A scenario's override for matching containers (the seam for later scenario files).

    Match fields are shell globs (``fnmatch``); ``None`` matches anything. ``owner`` matches
    ``Kind/name`` of the pod's controller (``Job/db-migrate``). Value fields left ``None`` keep
    what was inferred or annotated.
    """

    namespace: str | None = None
    pod: str | None = None
    owner: str | None = None
    container: str | None = None
    needs: tuple[str, ...] | None = None
    run_seconds: float | None = None
    run_forever: bool = False
    exit_code: int | None = None
    connect_timeout: float | None = None

    def matches(self, pod: Mapping[str, Any], container: str) -> bool:
        meta = pod.get("metadata") or {}
        owner = _controller_ref(pod)
        owner_text = f"{owner.get('kind')}/{owner.get('name')}" if owner else ""
        return all(
            pattern is None or fnmatch.fnmatchcase(value, pattern)
            for pattern, value in (
                (self.namespace, str(meta.get("namespace") or "")),
                (self.pod, str(meta.get("name") or "")),
                (self.owner, owner_text),
                (self.container, container),
            )
        )


class Faults(Protocol):
    """Fault injection (``simulate(..., faults=...)``, read from ``sim.faults``).

    Consulted by the kubelet: ``image_pull_error`` returns an error text to fail that pull
    (``ErrImagePull``) or ``None``; ``image_pull_delay`` extra seconds for that pull or ``None``
    (``attempt`` 0-based for both); ``exit_code`` a forced exit code for run number ``run``
    (0-based) or ``None``. By the network state: ``policy_propagation`` the propagation of a new
    version of policy ``doc`` given the profile's ``sampled`` one. By external provisioners:
    ``provision_error`` the driver's error for provisioning attempt ``attempt`` (1-based) of
    ``claim`` or ``None``; ``provision_delay`` extra seconds before its volume exists or ``None``.
    Callers tolerate objects without the newer methods.
    """

    def image_pull_error(
        self, pod: Mapping[str, Any], container: str, attempt: int
    ) -> str | None: ...

    def image_pull_delay(
        self, pod: Mapping[str, Any], container: str, attempt: int
    ) -> float | None: ...

    def exit_code(self, pod: Mapping[str, Any], container: str, run: int) -> int | None: ...

    def policy_propagation(self, doc: Mapping[str, Any], sampled: float) -> float: ...

    def provision_error(
        self, claim: Mapping[str, Any], provisioner: str, attempt: int
    ) -> str | None: ...

    def provision_delay(self, claim: Mapping[str, Any], provisioner: str) -> float | None: ...


class PolicyCache:
    """Policy manifests compiled once each, and per list of manifests an index by namespace and
    label of the Kubernetes NetworkPolicies' pod selectors (a pod is checked only against the
    policies that can select it). Manifests are keyed by identity and kept alive here: the
    store replaces an object on every write, so a changed policy is a new manifest."""

    def __init__(self) -> None:
        self._compiled: dict[int, tuple[Mapping[str, Any], Any]] = {}
        self._indexes: dict[int, tuple[Sequence[Mapping[str, Any]], _PolicyIndex]] = {}

    def compiled(self, doc: Mapping[str, Any]) -> Any:
        """``doc`` as a ``PolicySet``; None when the enforcer cannot import it
        (helmsim.cluster.netstate: not enforced)."""
        from helmsim.cluster.network.policies import PolicySet

        hit = self._compiled.get(id(doc))
        if hit is None or hit[0] is not doc:
            try:
                hit = (doc, PolicySet.from_manifests([doc]))
            except InputError:
                hit = (doc, None)
            self._compiled[id(doc)] = hit
        return hit[1]

    def candidates(
        self, policies: Sequence[Mapping[str, Any]], namespace: str, labels: Mapping[str, str]
    ) -> list[tuple[Mapping[str, Any], Any]]:
        """(manifest, compiled) of the ``policies`` that may select a pod of ``namespace`` with
        ``labels``, in their order; the caller still asks each whether it selects the pod."""
        hit = self._indexes.get(id(policies))
        if hit is None or hit[0] is not policies:
            hit = self._indexes[id(policies)] = (policies, _PolicyIndex(self, policies))
        return hit[1].candidates(namespace, labels)


class _PolicyIndex:
    def __init__(self, cache: PolicyCache, policies: Sequence[Mapping[str, Any]]) -> None:
        self.entries: list[tuple[Mapping[str, Any], Any]] = []
        self.always: list[int] = []
        self.by_namespace: dict[str, list[int]] = {}
        self.by_label: dict[tuple[str, str, str], list[int]] = {}
        for doc in policies:
            compiled = cache.compiled(doc)
            if compiled is None:
                continue
            i = len(self.entries)
            self.entries.append((doc, compiled))
            if compiled.cilium or len(compiled.k8s) != 1:
                self.always.append(i)
                continue
            (np,) = compiled.k8s
            # a NetworkPolicy selects pods of its own namespace only, and a one-value In
            # requirement (a matchLabels pair) only pods carrying that label
            pairs = [
                (r.key, next(iter(r.values))) for r in np.pod_selector.requirements if r.operator == "In" and len(r.values) == 1
            ]
            if pairs:
                self.by_label.setdefault((np.namespace, *pairs[0]), []).append(i)
            else:
                self.by_namespace.setdefault(np.namespace, []).append(i)

    def candidates(self, namespace: str, labels: Mapping[str, str]) -> list[tuple[Mapping[str, Any], Any]]:
        found = set(self.always)
        found.update(self.by_namespace.get(namespace, ()))
        for k, v in labels.items():
            found.update(self.by_label.get((namespace, k, v), ()))
        return [self.entries[i] for i in sorted(found)]


@dataclass(frozen=True)
class BehaviourContext:
    """What the simulation knows when the model is built (all plain manifests).

    ``policies`` are NetworkPolicy / CiliumNetworkPolicy / CiliumClusterwideNetworkPolicy
    manifests of the cluster *and* of the release being installed (a policy that has not arrived
    yet still tells what the workload is meant to reach). ``bindings`` are RoleBindings and
    ClusterRoleBindings, likewise. ``config_maps`` maps ``(namespace, name)`` to ``data``.
    """

    policies: Sequence[Mapping[str, Any]] = ()
    bindings: Sequence[Mapping[str, Any]] = ()
    roles: Sequence[Mapping[str, Any]] = ()
    """Roles and ClusterRoles (to tell a binding to a role without rules)."""
    service_accounts: Sequence[Mapping[str, Any]] = ()
    """ServiceAccounts (to tell whether a pod gets a token: ``automountServiceAccountToken``)."""
    config_maps: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    secret_data: Callable[[str, str], Mapping[str, str] | None] | None = field(default=None, compare=False)
    """``(namespace, name)`` → a Secret's decoded files, read when asked: only for a ``file``
    check's key presence (:func:`_secret_file`), never into notes or needs."""
    services: Sequence[Mapping[str, Any]] = ()
    pod_templates: Sequence[tuple[str, Mapping[str, str], tuple[tuple[str, int], ...]]] = ()
    pod_specs: Sequence[tuple[str, Mapping[str, Any]]] = ()
    """(namespace, pod template) of the release's workloads: whose inferred needs lead where
    (a cycle of inferred needs is no start-time dependency: :func:`_cyclic`)."""
    """(namespace, labels, named container ports) of the release's pods and pod templates: what a
    Service's named ``targetPort`` resolves to (kubernetes pkg/api/v1/pod FindPort)."""
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    apiserver_cluster_ip: str = addresses.APISERVER_CLUSTER_IP
    apiserver_endpoint: str = addresses.APISERVER_ENDPOINT
    kube_dns_ip: str = addresses.KUBE_DNS_CLUSTER_IP
    cluster_domain: str = addresses.CLUSTER_DOMAIN
    overrides: Sequence[BehaviourOverride] = ()
    catalog: Sequence[Any] | None = None
    """Catalog entries (:class:`helmsim.cluster.catalog.CompiledEntry`), the user's first;
    ``None``: the built-in catalog."""
    policy_cache: PolicyCache = field(default_factory=lambda: PolicyCache(), compare=False, repr=False)
    _by_name: dict[str, Mapping[tuple[str, str], Mapping[str, Any]]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def services_by_name(self, namespace: str) -> Mapping[tuple[str, str], Mapping[str, Any]]:
        """``services`` by (namespace, name), a Service without a namespace in ``namespace``
        (built once per context and namespace)."""
        found = self._by_name.get(namespace)
        if found is None:
            found = self._by_name[namespace] = {
                (str((svc.get("metadata") or {}).get("namespace") or namespace), str((svc.get("metadata") or {}).get("name"))): svc
                for svc in self.services
            }
        return found
    """Policies compiled and indexed so far; the kubelet shares one across contexts so each
    policy is compiled once."""


# --- the model ------------------------------------------------------------------------------------


def model_pod(pod: Mapping[str, Any], ctx: BehaviourContext) -> PodModel:
    """The behaviour of ``pod``'s containers (init containers first, in spec order)."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
    where = f"Pod {namespace}/{meta.get('name', '')}"

    granted, grant_notes = _break_cycles(pod, ctx, *_policy_needs(pod, ctx))
    rbac_note = _rbac_binding(pod, ctx)
    completes, run_note = _runs_to_completion(pod)
    services = ctx.services_by_name(namespace)
    ann = _annotations(annotations, namespace, where, services)

    entries = ctx.catalog if ctx.catalog is not None else _builtin_entries()
    out: dict[str, ContainerModel] = {}
    for c in spec.get("initContainers") or ():
        model = _container(c, pod, ctx, namespace, entries, init=True)
        out[model.name] = _apply_overrides(model, pod, ctx.overrides, namespace, services)
    for c in spec.get("containers") or ():
        model = _container(
            c,
            pod,
            ctx,
            namespace,
            entries,
            init=False,
            inferred=(rbac_note, granted, grant_notes),
            completes=(completes, run_note),
            explicit_needs=ann.needs is not None,
        )
        model = _apply_annotations(model, ann)
        out[model.name] = _apply_overrides(model, pod, ctx.overrides, namespace, services)
    return PodModel(out)


def _dedupe(needs: Iterable[Need]) -> list[Need]:
    seen: dict[Need, None] = {}
    for n in needs:
        seen.setdefault(n, None)
    return list(seen)


def _with_dns(needs: list[Need], notes: list[str]) -> list[Need]:
    """Add ``dns`` right after the API server when any need is a name (and none is ``dns``).

    A ``dns`` need without a name probes the first name the container resolves (an external
    name, else a Service's ``name.namespace.svc``), so a denial names the lookup it makes.
    """
    if any(n.is_name for n in needs) and not any(n.kind == "dns" for n in needs):
        names = ", ".join(str(n) for n in needs if n.is_name)
        notes.append(f"needs cluster DNS because it reaches names ({names})")
        at = 1 if needs and needs[0].kind == "kube-apiserver" else 0
        needs = [*needs[:at], Need("dns"), *needs[at:]]
    first = next((n for n in needs if n.kind == "fqdn"), None) or next((n for n in needs if n.kind == "service"), None)
    if first is not None:
        host = first.host if first.kind == "fqdn" else "{1}.{0}.svc".format(*first.host.split("/", 1))
        needs = [Need("dns", host) if n.kind == "dns" and not n.host else n for n in needs]
    return needs


def _controller_ref(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    refs = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return next((r for r in refs if r.get("controller")), refs[0] if refs else None)


def _runs_to_completion(pod: Mapping[str, Any]) -> tuple[bool, str]:
    owner = _controller_ref(pod)
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    if owner is not None and owner.get("kind") == "Job":
        return True, f"runs {DEFAULT_RUN_SECONDS:g} s then exits 0 (assumption for Job pods)"
    if owner is not None:
        return False, f"runs until stopped (pod of {owner.get('kind')} {owner.get('name')})"
    if policy in ("Never", "OnFailure"):
        return True, (
            f"runs {DEFAULT_RUN_SECONDS:g} s then exits 0 (assumption for a bare pod with "
            f"restartPolicy {policy})"
        )
    return False, "runs until stopped (bare pod with restartPolicy Always)"


# --- RBAC -----------------------------------------------------------------------------------------


def _rbac_binding(pod: Mapping[str, Any], ctx: BehaviourContext) -> tuple[str, bool] | None:
    """When the pod's ServiceAccount is bound to a (Cluster)Role: a sentence naming the binding,
    and whether that makes the API server a need (not when the pod holds no token of the
    account: no program of it can call the API)."""
    spec = pod.get("spec") or {}
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    sa = str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")
    token = _has_token(spec, sa, namespace, ctx)
    missing: str | None = None
    for b in ctx.bindings:
        kind = b.get("kind")
        bmeta = b.get("metadata") or {}
        bns = str(bmeta.get("namespace") or "")
        if kind == "RoleBinding" and bns != namespace:
            continue  # a RoleBinding grants only in its own namespace
        for s in b.get("subjects") or ():
            if s.get("kind") != "ServiceAccount" or s.get("name") != sa:
                continue
            # kubernetes pkg/apis/rbac/validation: a ServiceAccount subject of a RoleBinding
            # without namespace defaults to the binding's namespace.
            sns = s.get("namespace") or (bns if kind == "RoleBinding" else "")
            if sns != namespace:
                continue
            role = b.get("roleRef") or {}
            if _grants_nothing(role, bns, ctx):
                continue
            bound = f"ServiceAccount {sa} is bound to {role.get('kind', 'Role')} {role.get('name', '?')} by {kind} {bmeta.get('name', '?')}"
            if role.get("kind") == "Role" and _bound_role(role, bns, ctx) is None:
                # kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go: a binding's roleRef is
                # resolved at each request, and a Role that does not exist grants no rule
                missing = missing or f"{bound}, a Role neither the release nor the profile holds (taken as absent: it grants nothing): not a need"
                continue
            only = _grants_no_call_at_start(role, bns, ctx)
            if only:
                return f"{bound}, which grants only {only}: not a need", False
            if not token:
                return f"{bound}, but the pod mounts no token of it (automountServiceAccountToken: false): not a need", False
            return f"talks to the API server: {bound}", True
    return (missing, False) if missing else None


def _has_token(spec: Mapping[str, Any], sa: str, namespace: str, ctx: BehaviourContext) -> bool:
    """Whether the pod gets its ServiceAccount's token: mounted by the ServiceAccount admission
    plugin unless the pod's ``automountServiceAccountToken``, else the account's, is false
    (kubernetes plugin/pkg/admission/serviceaccount/admission.go shouldAutomount), or projected
    by a volume of the pod itself (a ``serviceAccountToken`` source)."""
    for vol in spec.get("volumes") or ():
        sources = ((vol or {}).get("projected") or {}).get("sources") or ()
        if any(isinstance(src, Mapping) and src.get("serviceAccountToken") is not None for src in sources):
            return True
    own = spec.get("automountServiceAccountToken")
    if own is not None:
        return bool(own)
    for account in ctx.service_accounts:
        meta = account.get("metadata") or {}
        if str(meta.get("name")) == sa and str(meta.get("namespace") or namespace) == namespace:
            return account.get("automountServiceAccountToken") is not False
    return True


def _bound_role(ref: Mapping[str, Any], binding_ns: str, ctx: BehaviourContext) -> Mapping[str, Any] | None:
    """The Role or ClusterRole a binding's roleRef names, when the simulation knows it."""
    kind, name = str(ref.get("kind") or "ClusterRole"), str(ref.get("name") or "")
    for role in ctx.roles:
        meta = role.get("metadata") or {}
        if role.get("kind") != kind or str(meta.get("name")) != name:
            continue
        if kind == "Role" and str(meta.get("namespace") or "") != binding_ns:
            continue
        return role
    return None


def _grants_nothing(ref: Mapping[str, Any], binding_ns: str, ctx: BehaviourContext) -> bool:
    """Whether the bound role is known and has no rules (nor an aggregationRule): binding an
    account to it authorises nothing, so it says nothing about API calls (kubernetes
    pkg/apis/rbac/types.go: a ClusterRole's rules may be aggregated from others)."""
    role = _bound_role(ref, binding_ns, ctx)
    return role is not None and not role.get("rules") and not role.get("aggregationRule")


# Rules that authorise no call a program makes at start: ``use`` of a PodSecurityPolicy or an
# OpenShift SecurityContextConstraints is checked by admission when its pods are created
# (kubernetes plugin/pkg/admission/security/podsecuritypolicy: authorizer "use"); creating
# TokenReviews and SubjectAccessReviews is delegated authentication and authorisation of each
# incoming request (k8s.io/apiserver pkg/authentication/authenticatorfactory/delegating.go,
# pkg/authorization/authorizerfactory/delegating.go: kube-rbac-proxy, metrics endpoints).
_NO_START_CALL = {
    ("policy", "podsecuritypolicies", "use"): "use of a PodSecurityPolicy (checked by admission)",
    ("extensions", "podsecuritypolicies", "use"): "use of a PodSecurityPolicy (checked by admission)",
    ("security.openshift.io", "securitycontextconstraints", "use"): "use of a SecurityContextConstraints (checked by admission)",
    ("authentication.k8s.io", "tokenreviews", "create"): "delegated authentication of incoming requests (TokenReviews)",
    ("authorization.k8s.io", "subjectaccessreviews", "create"): "delegated authorisation of incoming requests (SubjectAccessReviews)",
}


def _grants_no_call_at_start(ref: Mapping[str, Any], binding_ns: str, ctx: BehaviourContext) -> str:
    """What the bound role grants, when every rule is in :data:`_NO_START_CALL` (else "")."""
    role = _bound_role(ref, binding_ns, ctx)
    if role is None or role.get("aggregationRule") or not role.get("rules"):
        return ""
    said: list[str] = []
    for rule in role.get("rules") or ():
        if not isinstance(rule, Mapping) or rule.get("nonResourceURLs"):
            return ""
        for group in rule.get("apiGroups") or ("",):
            for resource in rule.get("resources") or ("",):
                for verb in rule.get("verbs") or ("",):
                    what = _NO_START_CALL.get((str(group), str(resource), str(verb)))
                    if what is None:
                        return ""
                    if what not in said:
                        said.append(what)
    return " and ".join(said)


# --- what the policies selecting the pod grant ------------------------------------------------------


def _policy_needs(pod: Mapping[str, Any], ctx: BehaviourContext) -> tuple[list[Need], list[str]]:
    if not ctx.policies:
        return [], []
    selecting = _selecting_policies(pod, ctx)
    needs: list[Need] = []
    notes: list[str] = []
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    for doc in selecting:
        kind = doc.get("kind")
        pmeta = doc.get("metadata") or {}
        pns = pmeta.get("namespace")
        ref = f"{kind} {pns + '/' if pns else ''}{pmeta.get('name')}"
        if kind == "NetworkPolicy":
            found = _np_grants(doc, namespace, ctx)
        else:
            found = _cnp_grants(doc, namespace, ctx)
        for need, why in found:
            if _fronts_pod(need, pod, ctx):
                notes.append(f"{ref} allows {why}, which fronts this pod itself: {_SELF_NOTE}")
                continue
            needs.append(need)
            notes.append(f"needs {need}: {ref} allows {why}")
    return needs, notes


_SELF_NOTE = (
    "not a need (a program does not dial itself at start, and its replicas find each other "
    "by their pods' names)"
)


CYCLE_NOTE = (
    "not a need at start: the pods behind it would in turn wait for this one (the needs inferred "
    "from policies and environments form a cycle; were each dialled at start and fatal when "
    "refused, no install could finish, so at least one program tolerates its peer's absence, and "
    "which is unknown)"
)


def _break_cycles(
    pod: Mapping[str, Any], ctx: BehaviourContext, needs: list[Need], notes: list[str]
) -> tuple[list[Need], list[str]]:
    """``needs`` (inferred from the policies selecting ``pod``) without the Services that lead
    back to ``pod`` through the release's other pods' policy-inferred needs, each said in the
    notes: such a cycle cannot be start-time dependencies of every program on it (harbor core and
    jobservice, whose policies each allow the other: bitnami/charts bitnami/harbor
    templates/core/networkpolicy.yaml, templates/jobservice/networkpolicy.yaml)."""
    cyclic = _cyclic(pod, ctx, [n for n in needs if n.kind == "service"])
    return _without(needs, notes, cyclic)


def _without(needs: list[Need], notes: list[str], cyclic: set[Need]) -> tuple[list[Need], list[str]]:
    """``needs`` without ``cyclic``, each one's ``needs X: why`` note saying why it is dropped."""
    if not cyclic:
        return needs, notes
    kept_notes = []
    for note in notes:
        need = next((n for n in cyclic if note.startswith(f"needs {n}: ")), None)
        kept_notes.append(note if need is None else f"{note.removeprefix('needs ')}, but {CYCLE_NOTE}")
    return [n for n in needs if n not in cyclic], kept_notes


def _cyclic(pod: Mapping[str, Any], ctx: BehaviourContext, services: list[Need]) -> set[Need]:
    """The Service needs of ``services`` from whose pods (the release's pod templates the
    Service selects) a chain of inferred Service needs — from the policies selecting a template
    (by its namespace and labels; its ServiceAccount taken as ``default``) and from its app
    containers' environment (literal values and ConfigMaps) — leads back to ``pod``."""
    if not services or not (ctx.pod_templates or ctx.pod_specs):
        return set()
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    own = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    specs: dict[tuple[str, tuple[tuple[str, str], ...]], list[Mapping[str, Any]]] = {}
    for ns, labels, _ in ctx.pod_templates:
        specs.setdefault((ns, tuple(sorted(labels.items()))), [])
    for ns, tpl in ctx.pod_specs:
        labels = {str(k): str(v) for k, v in ((tpl.get("metadata") or {}).get("labels") or {}).items()}
        specs.setdefault((ns, tuple(sorted(labels.items()))), []).append(tpl)
    nodes = list(specs)
    edges: dict[int, list[tuple[str, Mapping[str, Any]]]] = {}

    def selector(need: Need) -> tuple[str, Mapping[str, Any]]:
        ns, _, name = need.host.partition("/")
        svc = ctx.services_by_name(namespace).get((ns, name)) or {}
        return ns, (svc.get("spec") or {}).get("selector") or {}

    def selects(sel: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
        return bool(sel) and all(labels.get(str(k)) == str(v) for k, v in sel.items())

    def behind(ns: str, sel: Mapping[str, Any]) -> list[int]:
        return [i for i, (nns, labels) in enumerate(nodes) if nns == ns and selects(sel, dict(labels))]

    def out_of(i: int) -> list[tuple[str, Mapping[str, Any]]]:
        if i not in edges:
            ns, labels = nodes[i]
            shape = {"metadata": {"namespace": ns, "labels": dict(labels)}}
            found, _ = _policy_needs(shape, ctx)
            for tpl in specs[nodes[i]]:
                found.extend(_template_env_needs(ns, tpl, ctx))
            edges[i] = [selector(n) for n in found if n.kind == "service"]
        return edges[i]

    def leads_back(start: list[int]) -> bool:
        seen, todo = set(start), list(start)
        while todo:
            for ns, sel in out_of(todo.pop()):
                if ns == namespace and selects(sel, own):
                    return True
                for j in behind(ns, sel):
                    if j not in seen:
                        seen.add(j)
                        todo.append(j)
        return False

    return {n for n in services if leads_back(behind(*selector(n)))}


def _template_env_needs(namespace: str, tpl: Mapping[str, Any], ctx: BehaviourContext) -> list[Need]:
    """The Services a pod template's app containers dial at start as :func:`_container` models
    them: a catalog entry's declared needs, else what their environments name (:func:`env_peers`,
    less the entry's ``ignoreEnv``)."""
    from helmsim.cluster.programs import container_view, match_program

    shape = {"metadata": {**(tpl.get("metadata") or {}), "namespace": namespace}, "spec": tpl.get("spec") or {}}
    entries = ctx.catalog if ctx.catalog is not None else _builtin_entries()
    out: list[Need] = []
    for c in (tpl.get("spec") or {}).get("containers") or ():
        if not isinstance(c, Mapping):
            continue
        view = container_view(c, shape, None, ctx.config_maps)
        program, _ = match_program(view, namespace, entries, ctx.cluster_domain, ctx.services_by_name(namespace))
        if program is not None and program.replaces_inference and program.needs is not None:
            out.extend(program.needs)
            continue
        ignore = program.ignore_env if program is not None else frozenset()
        found, _ = env_peers(view.env, namespace, ctx, ignore, fronts=lambda need: _fronts_pod(need, shape, ctx))
        out.extend(found)
    return out


def _fronts_pod(need: Need, pod: Mapping[str, Any], ctx: BehaviourContext) -> bool:
    """Whether ``need`` is a Service whose selector selects ``pod`` itself (its own Service:
    a headless Service of its StatefulSet, the Service in front of its Deployment)."""
    if need.kind != "service":
        return False
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    ns, _, name = need.host.partition("/")
    if ns != namespace:
        return False
    svc = ctx.services_by_name(namespace).get((ns, name))
    selector = ((svc or {}).get("spec") or {}).get("selector") or {}
    labels = meta.get("labels") or {}
    return bool(selector) and all(str(labels.get(k)) == str(v) for k, v in selector.items())


def _selecting_policies(pod: Mapping[str, Any], ctx: BehaviourContext) -> list[Mapping[str, Any]]:
    """The policy manifests whose subject selector selects ``pod``, via the network evaluator."""
    from helmsim.cluster.network.flows import pod_peer
    from helmsim.cluster.network.model import ClusterView
    from helmsim.cluster.network.model import Pod as NetPod

    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    namespace = str(meta.get("namespace") or "default")
    net_pod = NetPod(
        namespace=namespace,
        name=str(meta.get("name") or ""),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        service_account=str(spec.get("serviceAccountName") or "default"),
    )
    view = ClusterView(namespaces={namespace: ctx.namespace_labels.get(namespace, {})})
    peer = pod_peer(net_pod, view)
    out = []
    for doc, compiled in ctx.policy_cache.candidates(ctx.policies, namespace, net_pod.labels):
        if any(p.selects(peer) for p in compiled.k8s) or any(
            p.selects(peer) for p in compiled.cilium
        ):
            out.append(doc)
    return out


def _ports(items: Any, default: int | None) -> list[tuple[int, str]]:
    """Numeric (port, protocol) pairs of a ports list; ``[(default, TCP)]`` when none is numeric."""
    out: list[tuple[int, str]] = []
    for p in items or ():
        if not isinstance(p, Mapping):
            continue
        port = p.get("port")
        proto = str(p.get("protocol") or "TCP").upper()
        if isinstance(port, str) and port.isdigit():
            port = int(port)
        if isinstance(port, int) and not isinstance(port, bool) and port > 0:
            out.append((port, proto))
    if not out and default is not None:
        out.append((default, "TCP"))
    return out


def _is_dns_ports(ports: Sequence[tuple[int, str]]) -> bool:
    return bool(ports) and all(p == 53 for p, _ in ports)


def _selects_kube_dns(selector: Any) -> bool:
    labels = (selector or {}).get("matchLabels") or {} if isinstance(selector, Mapping) else {}
    return any(str(k).split(":", 1)[-1] == "k8s-app" and v == "kube-dns" for k, v in labels.items())


def _apiserver_in(cidr: str, ctx: BehaviourContext) -> bool:
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False
    host = ctx.apiserver_endpoint.rpartition(":")[0].strip("[]")
    for ip in (host, ctx.apiserver_cluster_ip):
        try:
            if net.prefixlen > 0 and ipaddress.ip_address(ip) in net:
                return True
        except ValueError:
            continue
    return False


def _service_needs(
    selector: Any, ns: str, ports: list[tuple[int, str]], ctx: BehaviourContext
) -> list[Need]:
    """Services in ``ns`` whose selector the peer's matchLabels satisfy (the pods they front)."""
    labels = {
        str(k).split(":", 1)[-1]: str(v)
        for k, v in (
            ((selector or {}).get("matchLabels") or {}) if isinstance(selector, Mapping) else {}
        ).items()
    }
    if not labels:
        return []
    out: list[Need] = []
    for svc in ctx.services:
        smeta = svc.get("metadata") or {}
        sel = (svc.get("spec") or {}).get("selector") or {}
        if str(smeta.get("namespace") or "default") != ns or not sel:
            continue
        if all(labels.get(str(k)) == str(v) for k, v in sel.items()):
            svc_ports = [p for p in (svc.get("spec") or {}).get("ports") or () if isinstance(p, Mapping) and "port" in p]
            if not ports:
                out.extend(Need("service", f"{ns}/{smeta.get('name')}", int(p["port"])) for p in svc_ports[:1])
                continue
            # A policy's port is the pod's (the destination after the Service's DNAT: kubernetes
            # pkg/apis/networking/types.go NetworkPolicyPort): a client dials the Service port whose
            # targetPort it is (pkg/apis/core/types.go ServicePort: targetPort defaults to port).
            # A port no Service port leads to says nothing of what the pod dials through a Service.
            # A named targetPort is the backing pods' containerPort of that name (kubernetes
            # pkg/api/v1/pod/util.go FindPort): a name none of the release's pods behind the
            # Service declares leads nowhere; pods from elsewhere are not known, so then it is kept.
            for want, proto in ports:
                for p in svc_ports:
                    target = p.get("targetPort", p["port"])
                    if isinstance(target, str) and target.isdigit():
                        target = int(target)
                    leads = target == want or (
                        isinstance(target, str) and bool(target) and _named_port_leads(sel, ns, target, want, ctx)
                    )
                    if str(p.get("protocol") or "TCP").upper() == proto and leads:
                        out.append(Need("service", f"{ns}/{smeta.get('name')}", int(p["port"])))
    return out


def _named_port_leads(selector: Mapping[str, Any], ns: str, name: str, want: int, ctx: BehaviourContext) -> bool:
    """Whether the pods ``selector`` selects in ``ns`` may serve container port ``name`` on
    ``want``: one of the release's pod templates behind it declares it, or none is known."""
    behind = [
        ports
        for tpl_ns, labels, ports in ctx.pod_templates
        if tpl_ns == ns and all(labels.get(str(k)) == str(v) for k, v in selector.items())
    ]
    return not behind or any((name, want) in ports for ports in behind)


def _np_grants(
    doc: Mapping[str, Any], namespace: str, ctx: BehaviourContext
) -> list[tuple[Need, str]]:
    # kubernetes/api networking/v1/types.go NetworkPolicyEgressRule: `to` AND `ports`.
    out: list[tuple[Need, str]] = []
    for rule in (doc.get("spec") or {}).get("egress") or ():
        ports = _ports(rule.get("ports"), None)
        for peer in rule.get("to") or ():
            block = peer.get("ipBlock")
            if isinstance(block, Mapping):
                cidr = str(block.get("cidr", ""))
                if _apiserver_in(cidr, ctx):
                    out.append(
                        (Need("kube-apiserver"), f"egress to ipBlock {cidr} (the API server)")
                    )
                elif not cidr.endswith("/0"):
                    for port, proto in ports or [(443, "TCP")]:
                        out.append((Need("cidr", cidr, port, proto), f"egress to ipBlock {cidr}"))
                continue
            if _selects_kube_dns(peer.get("podSelector")) or _is_dns_ports(ports):
                out.append((Need("dns"), "egress to kube-dns on port 53"))
                continue
            ns_sel = peer.get("namespaceSelector")
            target_ns = namespace
            if isinstance(ns_sel, Mapping):
                name = (ns_sel.get("matchLabels") or {}).get("kubernetes.io/metadata.name")
                if not name:
                    continue
                target_ns = str(name)
            for need in _service_needs(peer.get("podSelector"), target_ns, ports, ctx):
                out.append((need, f"egress to the pods behind Service {need.host}"))
        if not rule.get("to") and _is_dns_ports(ports):
            out.append((Need("dns"), "egress on port 53"))
    return out


def _cnp_grants(
    doc: Mapping[str, Any], namespace: str, ctx: BehaviourContext
) -> list[tuple[Need, str]]:
    # cilium/cilium pkg/policy/api/egress.go EgressRule: toEntities, toFQDNs, toCIDR(Set),
    # toEndpoints, toServices, each with toPorts.
    specs = [doc.get("spec")] if doc.get("spec") else []
    specs += list(doc.get("specs") or ())
    out: list[tuple[Need, str]] = []
    for spec in specs:
        if not isinstance(spec, Mapping):
            continue
        for rule in spec.get("egress") or ():
            ports = [pp for tp in rule.get("toPorts") or () for pp in _ports(tp.get("ports"), None)]
            for entity in rule.get("toEntities") or ():
                if entity == "kube-apiserver":
                    out.append((Need("kube-apiserver"), "toEntities kube-apiserver"))
            for fq in rule.get("toFQDNs") or ():
                name = (fq or {}).get("matchName")
                if name:
                    for port, proto in ports or [(443, "TCP")]:
                        out.append(
                            (
                                Need("fqdn", str(name).lower().rstrip("."), port, proto),
                                f"toFQDNs {name}",
                            )
                        )
            for cidr in [
                *(rule.get("toCIDR") or ()),
                *((s or {}).get("cidr") for s in rule.get("toCIDRSet") or ()),
            ]:
                if not cidr:
                    continue
                if _apiserver_in(str(cidr), ctx):
                    out.append((Need("kube-apiserver"), f"toCIDR {cidr} (the API server)"))
                elif not str(cidr).endswith("/0"):
                    for port, proto in ports or [(443, "TCP")]:
                        out.append((Need("cidr", str(cidr), port, proto), f"toCIDR {cidr}"))
            for sel in rule.get("toEndpoints") or ():
                if _selects_kube_dns(sel) or _is_dns_ports(ports):
                    out.append((Need("dns"), "egress to kube-dns on port 53"))
                    continue
                labels = (sel or {}).get("matchLabels") or {}
                target_ns = next(
                    (
                        str(v)
                        for k, v in labels.items()
                        if str(k).split(":", 1)[-1] == "io.kubernetes.pod.namespace"
                    ),
                    namespace,
                )
                for need in _service_needs(sel, target_ns, ports, ctx):
                    out.append((need, f"toEndpoints of Service {need.host}"))
            for svc in rule.get("toServices") or ():
                ref = (svc or {}).get("k8sService") or {}
                name, ns = ref.get("serviceName"), ref.get("namespace") or namespace
                if name == "kubernetes" and ns == "default":
                    out.append((Need("kube-apiserver"), "toServices default/kubernetes"))
                elif name:
                    for port, _ in ports or [(80, "TCP")]:
                        out.append(
                            (Need("service", f"{ns}/{name}", port), f"toServices {ns}/{name}")
                        )
    return out


# --- annotations and overrides --------------------------------------------------------------------


class _Annotated(Struct, frozen=True):
    needs: tuple[Need, ...] | None = None
    run_seconds: float | None = None
    run_forever: bool = False
    exit_code: int | None = None
    connect_timeout: float | None = None


def _seconds(value: str, key: str, where: str) -> float:
    try:
        return (
            float(value)
            if re.fullmatch(r"[0-9]+(\.[0-9]+)?", value.strip())
            else parse_duration(value)
        )
    except ValueError:
        raise InputError(
            f"{where}: annotation {key}: {value!r} is not a number of seconds or a duration"
        ) from None


def _annotations(
    ann: Mapping[str, str],
    namespace: str,
    where: str,
    services: Container[tuple[str, str]] = frozenset(),
) -> _Annotated:
    out = _Annotated()
    if NEEDS_ANNOTATION in ann:
        items = [s for s in ann[NEEDS_ANNOTATION].split(",") if s.strip()]
        out = replace(
            out,
            needs=tuple(
                parse_need(
                    s,
                    namespace=namespace,
                    where=f"{where}: annotation {NEEDS_ANNOTATION}",
                    services=services,
                )
                for s in items
            ),
        )
    if RUN_SECONDS_ANNOTATION in ann:
        value = ann[RUN_SECONDS_ANNOTATION].strip()
        if value.lower() in ("forever", "inf", "infinity"):
            out = replace(out, run_forever=True)
        else:
            out = replace(out, run_seconds=_seconds(value, RUN_SECONDS_ANNOTATION, where))
    if EXIT_CODE_ANNOTATION in ann:
        value = ann[EXIT_CODE_ANNOTATION].strip()
        if not value.isdigit() or int(value) > 255:
            raise InputError(
                f"{where}: annotation {EXIT_CODE_ANNOTATION}: {value!r} is not an exit code 0-255"
            )
        out = replace(out, exit_code=int(value))
    if CONNECT_TIMEOUT_ANNOTATION in ann:
        out = replace(
            out,
            connect_timeout=_seconds(
                ann[CONNECT_TIMEOUT_ANNOTATION], CONNECT_TIMEOUT_ANNOTATION, where
            ),
        )
    return out


def _apply_annotations(model: ContainerModel, ann: _Annotated) -> ContainerModel:
    notes = list(model.notes)
    if ann.needs is not None:
        model = replace(model, needs=ann.needs)
        notes.append(
            f"needs {', '.join(map(str, ann.needs)) or 'nothing'} (annotation {NEEDS_ANNOTATION})"
        )
    if ann.run_forever:
        model = replace(model, run_seconds=None)
        notes.append(f"runs until stopped (annotation {RUN_SECONDS_ANNOTATION})")
    elif ann.run_seconds is not None:
        model = replace(model, run_seconds=ann.run_seconds)
        notes.append(f"runs {ann.run_seconds:g} s (annotation {RUN_SECONDS_ANNOTATION})")
    if ann.exit_code is not None:
        if model.run_seconds is None and not ann.run_forever:
            model = replace(model, run_seconds=DEFAULT_RUN_SECONDS)
            notes.append(f"runs {DEFAULT_RUN_SECONDS:g} s before the forced exit (assumption)")
        model = replace(model, exit_code=ann.exit_code)
        notes.append(f"exits {ann.exit_code} on every run (annotation {EXIT_CODE_ANNOTATION})")
    if ann.connect_timeout is not None:
        model = replace(model, connect_timeout=ann.connect_timeout)
        notes.append(
            f"gives up a connection after {ann.connect_timeout:g} s (annotation {CONNECT_TIMEOUT_ANNOTATION})"
        )
    return replace(model, notes=tuple(notes))


def _apply_overrides(
    model: ContainerModel,
    pod: Mapping[str, Any],
    overrides: Sequence[BehaviourOverride],
    namespace: str,
    services: Container[tuple[str, str]] = frozenset(),
) -> ContainerModel:
    for ov in overrides:
        if not ov.matches(pod, model.name):
            continue
        notes = list(model.notes)
        if ov.needs is not None:
            needs = tuple(
                parse_need(s, namespace=namespace, where="behaviour override", services=services)
                for s in ov.needs
            )
            model = replace(model, needs=needs, wait=None)
            notes.append(f"needs {', '.join(map(str, needs)) or 'nothing'} (scenario override)")
        if ov.run_forever:
            model = replace(model, run_seconds=None)
            notes.append("runs until stopped (scenario override)")
        elif ov.run_seconds is not None:
            model = replace(model, run_seconds=ov.run_seconds)
            notes.append(f"runs {ov.run_seconds:g} s (scenario override)")
        if ov.exit_code is not None:
            if model.run_seconds is None and not ov.run_forever:
                model = replace(model, run_seconds=DEFAULT_RUN_SECONDS)
            model = replace(model, exit_code=ov.exit_code)
            notes.append(f"exits {ov.exit_code} (scenario override)")
        if ov.connect_timeout is not None:
            model = replace(model, connect_timeout=ov.connect_timeout)
            notes.append(
                f"gives up a connection after {ov.connect_timeout:g} s (scenario override)"
            )
        model = replace(model, notes=tuple(notes))
    return model


# --- init containers: wait loops ------------------------------------------------------------------


SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
"""The shells whose ``-c`` argument is the script a container runs."""


def script_of(container: Mapping[str, Any]) -> str:
    """The shell text a container runs: the ``-c`` script of a shell, else command + args."""
    argv = [str(a) for a in [*(container.get("command") or ()), *(container.get("args") or ())]]
    for i, arg in enumerate(argv[:-1]):
        is_c = arg == "-c" or (
            arg.startswith("-") and arg.endswith("c") and not arg.startswith("--")
        )
        if is_c and i > 0 and argv[0].rsplit("/", 1)[-1] in SHELLS:
            return argv[i + 1]
    return " ".join(shlex.quote(a) if " " in a else a for a in argv)


_LOOP = re.compile(
    r"\b(?:until|while\s+!)\s+(?P<probe>.+?);?\s*do\b(?P<body>.*?)\bdone\b", re.DOTALL
)
_TIMEOUT = re.compile(
    r"\btimeout\s+(?:-[a-zA-Z]+(?:\s+\S+)?\s+)*(?P<n>[0-9.]+)(?P<u>[smhd]?)\s+(?:sh|bash|ash)\b"
)
_SLEEP = re.compile(r"\bsleep\s+(?P<n>[0-9.]+)(?P<u>[smh]?)")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_SCHEME_HOST_PORT = re.compile(
    r"^(?:jdbc:)?(?P<scheme>[A-Za-z_][A-Za-z0-9_+.-]*)://(?:[^@/\s]*@)?(?P<host>\[[^\]]+\]|[^/:?#;@\s'\"]+):(?P<port>[0-9]{1,5})(?:[/?#;]\S*)?$",
    re.IGNORECASE,
)
_URL = re.compile(r"(?P<scheme>https?)://(?P<host>\[[^\]]+\]|[^/:?#\s'\"]+)(?::(?P<port>[0-9]+))?")


def parse_wait_loop(
    script: str,
    namespace: str,
    cluster_domain: str = addresses.CLUSTER_DOMAIN,
    services: Container[tuple[str, str]] = frozenset(),
    env: Mapping[str, str] | None = None,
) -> tuple[WaitLoop | None, str]:
    """Recognise ``until <probe>; do sleep N; done`` (optionally under ``timeout N sh -c``), or
    Bitnami's ``retry_while "check_…"`` over a function that probes one peer (:func:`_retry_while`;
    ``env``: the container's literal environment, for the ``$VAR`` the probe names).

    Returns the loop and a sentence describing it, ``(None, sentence)`` when the script is a wait
    loop whose peer cannot be read, or ``(None, "")``.
    """
    m = _LOOP.search(script)
    if m is None:
        return _retry_while(script, namespace, cluster_domain, services, env or {})
    probe, body = m.group("probe").strip(), m.group("body")
    found = _probe_target(probe, namespace, cluster_domain, services)
    if found is None:
        return None, ""
    target, probe_timeout, what = found
    sleep = _SLEEP.search(body)
    interval = (
        float(sleep.group("n")) * _UNITS[sleep.group("u")] if sleep else DEFAULT_WAIT_INTERVAL
    )
    tm = _TIMEOUT.search(script)
    bound = float(tm.group("n")) * _UNITS[tm.group("u")] if tm else None
    bound_text = (
        f", gives up after {bound:g} s (timeout exits {TIMEOUT_EXIT_CODE})"
        if bound
        else ", without a bound"
    )
    return (
        WaitLoop(target, interval, probe_timeout, bound),
        f"waits for {target} ({what}, every {interval:g} s{bound_text})",
    )


_RETRY_WHILE = re.compile(
    r"\bretry_while\s+(?P<q>[\"']?)(?P<fn>[A-Za-z_]\w*)(?P<args>[^\"'\n;|&]*)(?P=q)"
    r"(?:\s+(?P<retries>[0-9]+))?(?:\s+(?P<sleep>[0-9]+))?"
)
_POSITIONAL = re.compile(r"\$\{(?P<a>[1-9])(?::?[-=?][^}]*)?\}|\$(?P<b>[1-9])")
# bitnami/containers bitnami/os-shell rootfs/opt/bitnami/scripts/libos.sh retry_while: 12 tries,
# 5 s apart (a sleep after the last too), returns 1 when none succeeded.
RETRY_WHILE_RETRIES = 12
RETRY_WHILE_SLEEP = 5.0
# bitnami/containers rootfs/opt/bitnami/scripts/libpostgresql.sh postgresql_remote_execute HOST PORT …,
# libmysql.sh mysql_remote_execute HOST PORT …; redis-cli -h HOST -p PORT.
_REMOTE_EXECUTE = re.compile(
    r"\b(?:postgresql|mysql|mariadb)_remote_execute(?:_print_output)?\s+(?P<host>\"[^\"]+\"|'[^']+'|\S+)\s+(?P<port>\"[^\"]+\"|'[^']+'|\S+)"
)
_ERROR_LINE = re.compile(r"\berror\s+(?P<q>[\"'])(?P<text>[^\"']+)(?P=q)")
_EMPTY_ARRAY = re.compile(r"^[\"']?\$\{[A-Za-z_]\w*\[[@*]\]\}[\"']?$")  # "${opts[@]}": options, not a peer


def _retry_while(
    script: str, namespace: str, domain: str, services: Container[tuple[str, str]], env: Mapping[str, str]
) -> tuple[WaitLoop | None, str]:
    """``retry_while "check_x" [retries [sleep]]`` whose function ``check_x() { … }`` probes one
    peer (redis-cli -h/-p, postgresql/mysql_remote_execute, nc, curl, wget), the way Bitnami's
    charts write wait-for-db init containers (bitnami/charts bitnami/superset templates/_helpers.tpl
    superset.initContainers.waitForDB, waitForRedis; bitnami/argo-cd templates/server/deployment.yaml).
    It ends with exit 1 once every try has failed: bounded at tries × sleep, the time it takes
    when each try fails at once (a dropped SYN would make each try longer). Under
    ``for host in "${hosts[@]}"; do retry_while "check_x $host"`` each value is waited for in turn
    (bitnami/charts bitnami/apisix templates/_helpers.tpl apisix.waitForETCDInitContainer).

    Returns ``(None, sentence)`` when the script calls retry_while but its peer cannot be read."""
    m = _RETRY_WHILE.search(script)
    if m is None:
        return None, ""
    fn = m.group("fn")
    body = re.search(rf"\b{re.escape(fn)}\s*\(\)\s*\{{(?P<body>.*?)\n\s*\}}", script, re.DOTALL)
    unread = f"runs retry_while {fn}, whose peer could not be read from the script: not modelled"
    if body is None:
        return None, unread
    scope = shellscript.assignments(shellscript.top_level(script), env)
    loop = shellscript.loop_values(script, m.start(), scope)
    runs = [scope] if loop is None else [{**scope, loop[0]: value} for value in loop[1]]
    found = [_retry_probe(m.group("args"), body.group("body"), run, namespace, domain, services) for run in runs]
    if not found or any(f is None for f in found):
        return None, unread
    probes = [f for f in found if f is not None]
    target, probe_timeout, what = probes[0]
    targets = list(dict.fromkeys(p[0] for p in probes))
    retries = int(m.group("retries") or RETRY_WHILE_RETRIES)
    sleep = float(m.group("sleep") or RETRY_WHILE_SLEEP)
    said = _ERROR_LINE.search(script[m.end():])
    bound = retries * sleep
    each = f"each of {', '.join(map(str, targets))} in turn" if len(targets) > 1 else str(target)
    return (
        WaitLoop(
            target, sleep, probe_timeout, bound, exit_code=1, gave_up=said.group("text") if said else "",
            also=tuple(targets[1:]),
        ),
        f"waits for {each} (retry_while {fn}: {what}, {retries} tries {sleep:g} s apart, "
        f"then exit 1 after {bound:g} s)",
    )


def _retry_probe(
    call_args: str,
    body: str,
    scope: Mapping[str, str],
    namespace: str,
    domain: str,
    services: Container[tuple[str, str]],
) -> tuple[Need, float, str] | None:
    """The peer the function ``body`` probes when called with ``call_args`` under ``scope``."""
    # `retry_while "check_host db 5432"`: the function's positional arguments, and the locals
    # it assigns from them (bitnami/charts bitnami/mlflow templates/_helpers.tpl check_host)
    try:
        args = [shellscript.expand(a, scope) for a in shlex.split(call_args)]
    except ValueError:
        args = call_args.split()
    text = _POSITIONAL.sub(
        lambda v: args[int(v.group("a") or v.group("b")) - 1] if int(v.group("a") or v.group("b")) <= len(args) else v.group(0),
        body,
    )
    local = shellscript.assignments(text, scope)

    def expand(text: str) -> str:
        return shellscript.expand(text, local)

    remote = _REMOTE_EXECUTE.search(text)
    if remote is not None:
        host, port = expand(remote.group("host")), expand(remote.group("port"))
        if port.isdigit() and "$" not in host:
            return _host_need(host, int(port), namespace, domain, services), KERNEL_CONNECT_TIMEOUT, f"`{remote.group(0)}`"
    for line in text.splitlines():
        line = line.strip()
        if re.search(r"\bwait-for-port\b", line):
            from helmsim.cluster.programs import parse_wait_for_port

            port_wait = parse_wait_for_port(expand(line), namespace, domain, services)
            if isinstance(port_wait, tuple):
                return port_wait[0], port_wait[1], "`wait-for-port`"  # its --timeout bounds each try
            continue
        cli = re.search(r"\bredis-cli\b(?P<args>[^)\n]*)", line)
        if cli is not None:
            tokens = expand(cli.group("args")).split()
            host = next((tokens[i + 1] for i, tok in enumerate(tokens[:-1]) if tok == "-h"), "127.0.0.1")
            port_text = next((tokens[i + 1] for i, tok in enumerate(tokens[:-1]) if tok == "-p"), "6379")
            if port_text.isdigit() and "$" not in host:
                return _host_need(host, int(port_text), namespace, domain, services), KERNEL_CONNECT_TIMEOUT, "`redis-cli … PING`"
            continue
        if re.search(r"\bcqlsh\b", line):
            cql = _cqlsh_target(line, local)
            if cql is not None:
                return _host_need(cql[0], cql[1], namespace, domain, services), cql[2], "`cqlsh`"
            continue
        for command in shellscript.commands(line):
            words = [expand(w) for w in command.split() if not _EMPTY_ARRAY.match(w)]
            probe = _probe_target(" ".join(words), namespace, domain, services)
            if probe is not None:
                return probe
    return None


# apache/cassandra bin/cqlsh.py: `cqlsh [options] [host [port]]`, host and port else $CQLSH_HOST
# and $CQLSH_PORT else 127.0.0.1:9042; --connect-timeout defaults to 5 s.
_CQLSH_VALUED = frozenset(
    {"--browser", "-u", "--username", "-p", "--password", "-k", "--keyspace", "-f", "--file", "--encoding",
     "--cqlshrc", "--cqlversion", "-e", "--execute", "--connect-timeout", "--request-timeout"}
)


def _cqlsh_target(line: str, scope: Mapping[str, str]) -> tuple[str, int, float] | None:
    """The host, port and connect timeout ``cqlsh`` on ``line`` dials, or None when a shell
    variable in them is unknown."""
    m = re.search(r"\bcqlsh\b(?P<args>.*)", line)
    if m is None:
        return None
    # the command ends at the first | ; & outside quotes (the -e statement holds a ;)
    lexer = shlex.shlex(m.group("args"), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    tokens: list[str] = []
    try:
        for tok in lexer:
            if tok and set(tok) <= set(";&|"):
                break
            tokens.append(tok)
    except ValueError:
        return None  # an unclosed quote: not read
    positional: list[str] = []
    timeout = 5.0
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        flag, eq, value = tok.partition("=")
        if flag in _CQLSH_VALUED:
            if not eq:
                value = tokens[i + 1] if i + 1 < len(tokens) else ""
                i += 1
            if flag == "--connect-timeout":
                timeout = float(value) if value.isdigit() else timeout
        elif not tok.startswith("-"):
            positional.append(shellscript.expand(tok, scope))
        i += 1
    host = positional[0] if positional else scope.get("CQLSH_HOST", "127.0.0.1")
    port = positional[1] if len(positional) > 1 else scope.get("CQLSH_PORT", "9042")
    if "$" in host or not port.isdigit():
        return None
    return host, int(port), timeout


def _flag_value(tokens: Sequence[str], *flags: str) -> float | None:
    for i, tok in enumerate(tokens):
        for flag in flags:
            if tok == flag and i + 1 < len(tokens):
                try:
                    return float(tokens[i + 1])
                except ValueError:
                    return None
            if tok.startswith(flag + "=") or (
                len(flag) == 2 and tok.startswith(flag) and tok[2:].isdigit()
            ):
                try:
                    return float(tok.split("=", 1)[1] if "=" in tok else tok[2:])
                except ValueError:
                    return None
    return None


def _kubectl_timeout(tokens: list[str]) -> float:
    """kubectl's ``--request-timeout`` (k8s.io/cli-runtime genericclioptions: a bare number is
    seconds, else a Go duration; 0 means no timeout), bounding each probe; else the dial timeout."""
    from helmsim.cluster.latency import to_seconds

    for i, tok in enumerate(tokens):
        value: str | None = None
        if tok.startswith("--request-timeout="):
            value = tok.split("=", 1)[1]
        elif tok == "--request-timeout" and i + 1 < len(tokens):
            value = tokens[i + 1]
        if value is not None:
            try:
                seconds = to_seconds(float(value) if value.replace(".", "", 1).isdigit() else value)
            except ValueError:
                return DEFAULT_CONNECT_TIMEOUT
            return seconds if seconds > 0 else DEFAULT_CONNECT_TIMEOUT
    return DEFAULT_CONNECT_TIMEOUT


def _probe_target(
    probe: str, namespace: str, domain: str, services: Container[tuple[str, str]] = frozenset()
) -> tuple[Need, float, str] | None:
    try:
        tokens = shlex.split(probe)
    except ValueError:
        tokens = probe.split()
    if not tokens:
        return None
    cmd = tokens[0].rsplit("/", 1)[-1]
    if cmd == "kubectl":
        # client-go transport: 30 s dial timeout (k8s.io/client-go transport/cache.go).
        return Need("kube-apiserver"), _kubectl_timeout(tokens), f"polls `{probe}`"
    if cmd in ("nc", "ncat", "netcat"):
        args = [t for t in tokens[1:] if not t.startswith("-")]
        wait = _flag_value(tokens, "-w")
        positional = [a for a in args if not (wait is not None and a == f"{wait:g}")]
        if len(positional) >= 2 and positional[-1].isdigit():
            need = _host_need(positional[-2], int(positional[-1]), namespace, domain, services)
            return need, wait or KERNEL_CONNECT_TIMEOUT, f"polls `{probe}`"
        return None
    if cmd in ("wget", "curl"):
        m = _URL.search(probe)
        if m is None:
            return None
        port = int(m.group("port") or (443 if m.group("scheme") == "https" else 80))
        need = _host_need(m.group("host").strip("[]"), port, namespace, domain, services)
        limit = _flag_value(tokens, "-T", "--timeout", "--connect-timeout", "-m", "--max-time")
        return need, limit or KERNEL_CONNECT_TIMEOUT, f"polls `{probe}`"
    if cmd in ("nslookup", "getent", "host", "dig"):
        names = [t for t in tokens[1:] if not t.startswith("-") and t not in ("hosts", "ahosts")]
        if names:
            return Need("dns", names[0]), 10.0, f"polls `{probe}`"
    return None


def _host_need(
    host: str, port: int, namespace: str, domain: str, services: Container[tuple[str, str]] = frozenset()
) -> Need:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return _name_need(host, port, namespace, domain, services)
    if address.is_loopback:
        return Need("loopback", str(address), port)
    return Need("cidr", f"{host}/{32 if ':' not in host else 128}", port)


# Programs that fetch the URL they are given as they run, once (not a wait loop): what they
# reach is a need, and when they cannot they exit non-zero.
_FETCH_COMMANDS = ("kubectl", "git", "curl", "wget")
_STATEMENT = re.compile(r"&&|\|\||[;|\n]")
_SSH_URL = re.compile(r"^(?:ssh://)?(?:[A-Za-z0-9._-]+@)(?P<host>[A-Za-z0-9.-]+)(?::(?P<port>[0-9]+)(?=/)|:)")


def fetches(
    script: str,
    namespace: str,
    domain: str = addresses.CLUSTER_DOMAIN,
    services: Container[tuple[str, str]] = frozenset(),
    env: Mapping[str, str] | None = None,
) -> list[tuple[Need, str]]:
    """What the container's script fetches by URL outside any wait loop, each with its sentence:
    ``kubectl apply|create|replace -f URL`` (k8s.io/cli-runtime pkg/resource/visitor.go: a
    filename that is a URL is read with an HTTP GET first), ``git clone URL`` (https, or ssh on
    port 22), ``curl URL`` and ``wget URL``. ``$VAR`` and ``${VAR}`` are the container's literal
    ``env``, as the shell expands them; a URL whose host or port is still a variable is not read."""
    out: list[tuple[Need, str]] = []
    values = env or {}
    script = shellscript.SHELL_VAR.sub(lambda v: values.get(v.group("a") or v.group("b"), v.group(0)), script)
    # a backslash-newline continues the line (POSIX sh 2.2.1): join before splitting statements
    for statement in _STATEMENT.split(_LOOP.sub(" ", script.replace("\\\n", " "))):
        try:
            tokens = shlex.split(statement)
        except ValueError:
            tokens = statement.split()
        while tokens and ("=" in tokens[0] and not tokens[0].startswith("-") or tokens[0] in ("exec", "command")):
            tokens = tokens[1:]  # VAR=value prefixes, exec
        if not tokens or tokens[0].rsplit("/", 1)[-1] not in _FETCH_COMMANDS:
            continue
        cmd = tokens[0].rsplit("/", 1)[-1]
        if cmd == "kubectl":
            if not {"apply", "create", "replace"} & set(tokens[1:3]):
                continue
            urls = [
                t.split("=", 1)[1] if "=" in t else tokens[i + 1]
                for i, t in enumerate(tokens)
                if (t in ("-f", "--filename") and i + 1 < len(tokens)) or t.startswith(("-f=", "--filename="))
            ]
        elif cmd == "git":
            if "clone" not in tokens[1:3]:
                continue
            urls = [t for t in tokens if _URL.match(t) or _SSH_URL.match(t)][:1]
        else:
            urls = [t for t in tokens[1:] if _URL.match(t)][:1]
        for url in urls:
            m = _URL.match(url)
            ssh = None if m is not None else _SSH_URL.match(url)
            if m is not None:
                host, port = m.group("host").strip("[]"), int(m.group("port") or (443 if m.group("scheme") == "https" else 80))
            elif ssh is not None and cmd == "git":
                host, port = ssh.group("host"), int(ssh.group("port") or 22)
            else:
                continue
            if "$" in host:
                continue  # a variable the environment does not set: where it points is unknown
            need = _host_need(host, port, namespace, domain, services)
            unread = f"; {URL_UNREAD}" if cmd == "kubectl" else ""
            out.append((need, f"needs {need}: runs `{cmd} … {url}`, which fetches it (assumed to exit non-zero when it cannot){unread}"))
    return out


URL_UNREAD = "what it serves is not read: the simulation creates none of its objects"
"""How a container's note says that ``kubectl apply -f <URL>`` applies objects helmsim cannot see."""


# Default ports of URL schemes found in connection-string variables (IANA service names).
_SCHEME_PORTS = {
    "http": 80, "https": 443, "ws": 80, "wss": 443, "postgres": 5432, "postgresql": 5432,
    "mysql": 3306, "mariadb": 3306, "redis": 6379, "rediss": 6379, "amqp": 5672, "amqps": 5671,
    "mongodb": 27017, "nats": 4222, "kafka": 9092, "memcached": 11211, "tcp": 0,
}
_ENV_URL = re.compile(
    r"^(?P<scheme>[a-z][a-z0-9+.-]*)://(?:[^@/\s]*@)?(?P<host>[A-Za-z0-9.-]+)(?::(?P<port>[0-9]+))?(?:[/?#;]|$)"
)
_JDBC = re.compile(r"^jdbc:(?=[a-z][a-z0-9+.-]*://)", re.IGNORECASE)
_ENV_HOSTPORT = re.compile(r"^(?P<host>[A-Za-z][A-Za-z0-9.-]*):(?P<port>[0-9]{1,5})$")


def env_peers(
    env: Mapping[str, str],
    namespace: str,
    ctx: BehaviourContext,
    ignore: frozenset[str] = frozenset(),
    entry: str = "",
    fronts: Callable[[Need], bool] | None = None,
) -> tuple[list[Need], list[str]]:
    """Services of the cluster or the release that the container's environment names: a URL
    (``postgres://app@db:5432/app``), ``host:port`` or a list of them (``a:2181,b:2181``), or
    ``X_HOST`` with ``X_PORT``; a host may be a pod's name under its headless Service
    (``zk-0.zk-hs.ns.svc.cluster.local``: :func:`endpoint_service`). Only names
    that are Services the simulation knows count (an external name may not be dialled at start).
    Variables in ``ignore`` (a catalog entry's ``ignoreEnv``: read, not dialled at start) are
    noted and give no need, and so do Services ``fronts`` says front the pod itself."""
    known = ctx.services_by_name(namespace)
    found: list[tuple[str, str, int]] = []
    for key, value in sorted(env.items()):
        # a JDBC URL is jdbc:<subprotocol>:<subname> (java.sql.DriverManager), the subname a URL
        # for the network drivers: jdbc:postgresql://db:5432/app (bitnami keycloak KC_DB_URL)
        text = _JDBC.sub("", value.strip())
        m = _ENV_URL.match(text)
        if m is not None:
            port = int(m.group("port") or _SCHEME_PORTS.get(m.group("scheme"), 0))
            found.append((key, m.group("host"), port))
            continue
        m = _ENV_HOSTPORT.match(text)
        if m is not None:
            found.append((key, m.group("host"), int(m.group("port"))))
            continue
        parts = [p for p in re.split(r"[,;\s]+", text) if p]
        listed = [_ENV_HOSTPORT.match(p) for p in parts]
        if len(parts) > 1 and all(listed):
            # a connection string listing a cluster's members (ZooKeeper's `zk-0.zk-hs:2181,…`,
            # Kafka's bootstrap servers): each is a need; members of one Service are one need
            found.extend((key, x.group("host"), int(x.group("port"))) for x in listed if x is not None)
            continue
        for suffix in ("_HOST", "_HOSTNAME", "_SERVER"):
            if key.endswith(suffix) and re.fullmatch(r"[A-Za-z][A-Za-z0-9.-]*", text):
                port_text = env.get(key[: -len(suffix)] + "_PORT", "")
                found.append((key, text, int(port_text) if port_text.isdigit() else 0))
    needs: list[Need] = []
    notes: list[str] = []
    for key, host, port in found:
        need = _name_need(host, port or 1, namespace, ctx.cluster_domain, known)
        if need.kind == "kube-apiserver":
            continue  # reached through KUBERNETES_SERVICE_HOST, covered by RBAC
        if need.kind != "service":
            continue
        ns, name = need.host.split("/", 1)
        svc = known.get((ns, name))
        if svc is None:
            continue
        if not port:
            ports = [int(p["port"]) for p in (svc.get("spec") or {}).get("ports") or () if "port" in p]
            if not ports:
                continue
            need = Need("service", need.host, ports[0])
        if key in ignore:
            notes.append(
                f"environment variable {key} names {need}, which catalog entry {entry} does not "
                "dial at start: not a need"
            )
            continue
        if fronts is not None and fronts(need):
            notes.append(f"environment variable {key} names {need}, which fronts this pod itself: {_SELF_NOTE}")
            continue
        if need in needs:
            continue
        notes.append(f"needs {need}: environment variable {key} names it (assumed to connect at start)")
        needs.append(need)
    return needs, notes


_LOCAL_CHECKS = frozenset({"state", "env", "file", "fact"})
"""Check kinds decided without the API server (:func:`helmsim.cluster.running.evaluate_check`)."""


def _builtin_entries() -> Sequence[Any]:
    from helmsim.cluster.catalog import builtin_catalog

    return builtin_catalog()


def _container(
    c: Mapping[str, Any],
    pod: Mapping[str, Any],
    ctx: BehaviourContext,
    namespace: str,
    entries: Sequence[Any],
    *,
    init: bool,
    inferred: tuple[tuple[str, bool] | None, Sequence[Need], Sequence[str]] = (None, (), ()),
    completes: tuple[bool, str] = (True, ""),
    explicit_needs: bool = False,
) -> ContainerModel:
    """One container's model: the first catalog entry that matches it (an image entry describes
    the whole program, a command entry what its script waits for), else inference."""
    from helmsim.cluster.programs import container_view, match_program

    name = str(c.get("name", ""))
    view = container_view(c, pod, lambda path: _mounted_file(path, c, pod, ctx, namespace), ctx.config_maps)
    view = dataclasses.replace(view, private_files=lambda path: _secret_file(path, c, pod, ctx, namespace))
    program, notes = match_program(
        view, namespace, entries, ctx.cluster_domain, ctx.services_by_name(namespace)
    )
    apply_entry = next(
        (e for e in entries if e.spec.command == "kubectl-apply" and e.matches(view.image, view.argv, view.script, view.env)),
        None,
    )
    applies, apply_notes = _applies(c, pod, ctx, namespace) if apply_entry is not None else ([], [])
    if applies and apply_entry is not None:
        apply_notes.insert(0, f"recognised by catalog entry {apply_entry.name} ({apply_entry.origin})")
    rbac_note, granted, grant_notes = inferred
    does_complete, run_note = completes
    needs: list[Need] = []
    described = program is not None and program.replaces_inference and program.needs is not None
    if not described:
        if rbac_note and (program is None or program.rbac):
            if rbac_note[1]:
                needs.append(Need("kube-apiserver"))
            notes.append(rbac_note[0])
        needs.extend(granted)
        notes.extend(grant_notes)
        if not init:
            peers, peer_notes = env_peers(
                view.env,
                namespace,
                ctx,
                program.ignore_env if program is not None else frozenset(),
                program.entry if program is not None else "",
                fronts=lambda need: _fronts_pod(need, pod, ctx),
            )
            cyclic = _cyclic(pod, ctx, [n for n in peers if n.kind == "service"])
            peers, peer_notes = _without(peers, peer_notes, cyclic)
            needs.extend(peers)
            notes.extend(peer_notes)
    if program is not None:
        notes[:0] = program.notes
        if program.needs is None and program.also_needs:
            # a peer the program's configuration file names (catalog alsoNeeds): as for the
            # environment, a Service counts only when the simulation knows it (env_peers)
            services = ctx.services_by_name(namespace)
            for need in program.also_needs:
                if need.kind == "service" and tuple(need.host.split("/", 1)) not in services:
                    notes.append(f"its configuration file names {need}, which is no Service the simulation knows: not a need")
                elif need not in needs:
                    needs.append(need)
                    notes.append(f"needs {need}: its configuration file names it (catalog entry)")
        if program.needs is not None:
            needs = [*program.needs, *needs]
            if described:
                notes.append(f"needs {', '.join(map(str, needs)) or 'nothing'} (catalog entry)")
    notes.extend(apply_notes)
    if not described:
        for need, why in fetches(view.script, namespace, ctx.cluster_domain, ctx.services_by_name(namespace), view.env):
            needs.append(need)
            notes.append(why)
    # checks go through the API server, except those of what it holds or is given: a state left
    # outside the cluster (a database's), its environment, a mounted file, the cluster's setup
    api_checks = program is not None and any(c.kind not in _LOCAL_CHECKS for c in program.checks)
    if applies or api_checks or (program is not None and program.creates):
        needs.insert(0, Need("kube-apiserver"))
    needs = _with_dns(_dedupe(needs), notes)
    known = program is not None or bool(applies)
    if init:
        if program is not None and program.run_set:
            run_seconds: float | None = program.run_seconds
        elif known:
            run_seconds = 0.0
        else:
            run_seconds = DEFAULT_RUN_SECONDS
            notes.append(
                f"runs {DEFAULT_RUN_SECONDS:g} s then exits 0 (assumption for init containers)"
            )
    else:
        if not needs and not explicit_needs and program is None:
            notes.append("needs nothing on the network (no policy grants egress, no RBAC binding)")
        if program is not None and program.run_set:
            run_seconds = program.run_seconds
            notes.append(
                "runs until stopped (catalog entry)"
                if run_seconds is None
                else f"runs {run_seconds:g} s then exits 0 (catalog entry)"
            )
        else:
            run_seconds = DEFAULT_RUN_SECONDS if does_complete else None
            notes.append(run_note)
    return ContainerModel(
        name=name,
        init=init,
        needs=tuple(needs),
        run_seconds=run_seconds,
        wait=program.wait if program is not None else None,
        applies=tuple(applies),
        notes=tuple(notes),
        image=view.image,
        checks=program.checks if program is not None else (),
        retry=program.retry if program is not None else None,
        fail_exit_code=program.fail_exit_code if program is not None else 1,
        probes_after_needs=program.probes_after_needs if program is not None else True,
        liveness_after_needs=program.liveness_after_needs if program is not None else True,
        creates=program.creates if program is not None else (),
        fills=program.fills if program is not None else (),
        writes=program.writes if program is not None else (),
        probe_gate=program.probe_gate if program is not None else None,
        entry=program.entry if program is not None else "",
        known=known,
        log_ready=program.log_ready if program is not None else "",
        log_failed=program.log_failed if program is not None else "",
        log_waiting=program.log_waiting if program is not None else "",
        assumes=program.assumes if program is not None else (),
    )


# --- kubectl apply ---------------------------------------------------------------------------------

_HEREDOC = re.compile(
    r"kubectl\s+(?:apply|create)\b[^\n]*?-f\s*-[^\n]*?<<-?\s*(?P<q>['\"]?)(?P<tag>\w+)(?P=q)[^\n]*\n(?P<body>.*?)\n\s*(?P=tag)\s*(?:\n|$)",
    re.DOTALL,
)
_CAT_HEREDOC = re.compile(
    r"cat\s+<<-?\s*(?P<q>['\"]?)(?P<tag>\w+)(?P=q)\s*\|\s*kubectl\s+(?:apply|create)\b[^\n]*\n(?P<body>.*?)\n\s*(?P=tag)\s*(?:\n|$)",
    re.DOTALL,
)
_ECHO = re.compile(
    r"(?:echo|printf)\s+(?:-[a-z]+\s+)*(?:'%s\\?n?'\s+)?(?P<q>['\"])(?P<body>.*?)(?P=q)\s*\|\s*kubectl\s+(?:apply|create)\b",
    re.DOTALL,
)
_FILE = re.compile(
    r"kubectl\s+(?:apply|create)\b[^|\n;&]*?(?:-f|--filename)[=\s]+(?P<path>/[^\s;&|]+)"
)


_ASSIGN = re.compile(r"^[ \t]*(?P<name>[A-Za-z_][A-Za-z0-9_]*)='(?P<value>[^']*)'[ \t]*$", re.M)


def expand_simple_vars(script: str) -> str:
    """Substitute shell variables assigned a single-quoted literal (``claim='{…}'``) where they
    are used (``"$claim"``, ``${claim}``), so a manifest piped from a variable is found."""
    for m in _ASSIGN.finditer(script):
        name, value = m.group("name"), m.group("value")
        quoted = f"'{value}'"
        for ref in (f'"${{{name}}}"', f'"${name}"', f"${{{name}}}"):
            script = script.replace(ref, quoted)
        script = re.sub(rf"\${name}(?![A-Za-z0-9_])", _literal(quoted), script)
    return script


def _literal(text: str) -> Callable[[re.Match[str]], str]:
    """A ``re.sub`` replacement inserting ``text`` as it is (no backslash escapes)."""
    return lambda _m: text


def _applies(
    c: Mapping[str, Any], pod: Mapping[str, Any], ctx: BehaviourContext, namespace: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """Objects the container creates with ``kubectl apply`` (inline or from a ConfigMap file)."""
    script = expand_simple_vars(script_of(c))
    if "kubectl" not in script:
        return [], []
    texts: list[tuple[str, str]] = []
    for rx in (_HEREDOC, _CAT_HEREDOC):
        texts += [(m.group("body"), "an inline manifest (heredoc)") for m in rx.finditer(script)]
    texts += [
        (m.group("body"), "an inline manifest (echo | kubectl apply -f -)")
        for m in _ECHO.finditer(script)
    ]
    for m in _FILE.finditer(script):
        path = m.group("path")
        for text, origin in _config_map_files(path, c, pod, ctx, namespace):
            texts.append((text, origin))
    objs: list[dict[str, Any]] = []
    notes: list[str] = []
    for text, origin in texts:
        try:
            # null = absent, as the API server decodes what kubectl sends (helmsim.kube.nulls)
            docs = [drop_nulls(d.value) for d in load_documents(text, origin) if isinstance(d.value, dict)]
        except InputError:
            notes.append(f"runs kubectl apply of {origin} that is not valid YAML or JSON (ignored)")
            continue
        for d in docs:
            if d.get("kind") == "List":
                docs.extend(i for i in d.get("items") or () if isinstance(i, dict))
                continue
            if not d.get("kind") or not (d.get("metadata") or {}).get("name"):
                continue
            if _namespaced(d):
                d.setdefault("metadata", {}).setdefault("namespace", namespace)
            objs.append(d)
            meta = d["metadata"]
            ref = f"{d['kind']} {meta.get('namespace') + '/' if meta.get('namespace') else ''}{meta['name']}"
            notes.append(f"applies {ref} from {origin} (needs the API server)")
    return objs, notes


def _namespaced(doc: Mapping[str, Any]) -> bool:
    return str(doc.get("kind")) not in CLUSTER_SCOPED_KINDS


def _config_map_files(
    path: str, c: Mapping[str, Any], pod: Mapping[str, Any], ctx: BehaviourContext, namespace: str
) -> list[tuple[str, str]]:
    """The ConfigMap data behind ``path`` (a file or a directory) through the container's mounts."""
    return [(text, where) for text, where, _ in _config_map_entries(path, c, pod, ctx, namespace)]


def _config_map_entries(
    path: str,
    c: Mapping[str, Any],
    pod: Mapping[str, Any],
    ctx: BehaviourContext,
    namespace: str,
    *,
    secrets: bool = False,
) -> list[tuple[str, str, bool]]:
    """As :func:`_config_map_files`, each entry also saying whether it is the file at ``path``
    itself (not a file of the directory ``path``); ``secrets``: Secret volumes too (read only for
    a ``file`` check's key presence, :func:`_secret_file`)."""
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or ()}
    out: list[tuple[str, str, bool]] = []
    for mount in c.get("volumeMounts") or ():
        mpath = str(mount.get("mountPath", "")).rstrip("/")
        vol = volumes.get(mount.get("name")) or {}
        cm = vol.get("configMap")
        secret = vol.get("secret") if secrets and not cm else None
        if not (cm or secret) or not mpath or not (path == mpath or path.startswith(mpath + "/")):
            continue
        source: Mapping[str, Any] = cm or secret or {}
        name = str(source.get("name") if cm else source.get("secretName"))
        data = ctx.config_maps.get((namespace, name)) if cm else (ctx.secret_data(namespace, name) if ctx.secret_data else None)
        if data is None:
            continue
        # kubernetes pkg/volume/configmap and pkg/volume/secret: `items` maps keys to paths,
        # else every key is a file.
        files = {str(i.get("path")): str(i.get("key")) for i in source.get("items") or ()} or {
            k: k for k in data
        }
        if mount.get("subPath"):
            files = {"": files.get(str(mount["subPath"]), str(mount["subPath"]))}
        rel = path[len(mpath) :].lstrip("/")
        for fpath, key in sorted(files.items()):
            if key in data and rel in ("", fpath):
                out.append(
                    (
                        str(data[key]),
                        f"{path if rel else mpath + '/' + fpath} ({'ConfigMap' if cm else 'Secret'} {name} key {key})",
                        bool(rel) or not fpath,
                    )
                )
    return out


def _secret_file(
    path: str, c: Mapping[str, Any], pod: Mapping[str, Any], ctx: BehaviourContext, namespace: str
) -> str | None:
    """The text of the file at ``path`` when a ConfigMap or Secret mount of the container holds it."""
    found = [text for text, _, exact in _config_map_entries(path, c, pod, ctx, namespace, secrets=True) if exact]
    return found[0] if found else None


def _mounted_file(
    path: str, c: Mapping[str, Any], pod: Mapping[str, Any], ctx: BehaviourContext, namespace: str
) -> str | None:
    """The text of the file at ``path`` when a ConfigMap mount of the container holds it."""
    found = [text for text, _, exact in _config_map_entries(path, c, pod, ctx, namespace) if exact]
    return found[0] if found else None


def needs_summary(model: ContainerModel) -> str:
    """``kube-apiserver, dns, api.github.com:443`` or ``nothing``."""
    return ", ".join(str(n) for n in model.needs) or "nothing"
