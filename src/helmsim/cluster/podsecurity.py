"""Pod Security admission: the API server refuses a Pod that violates its namespace's level.

The namespace's ``pod-security.kubernetes.io/enforce`` label (and ``enforce-version``) names the
level, else the cluster's default (the profile's ``podSecurity.defaults``; the API server's own
default is ``privileged``, which checks nothing). A violating Pod is Forbidden:
``pods "<name>" is forbidden: violates PodSecurity "restricted:latest": <reason> (<detail>), …``
(k8s.io/pod-security-admission admission/admission.go EvaluatePod). Controllers that create pods
(ReplicaSet, Job, StatefulSet, DaemonSet) see it as their ``FailedCreate``; workload objects
themselves are only warned about, never refused, so a Deployment is applied and its pods never
appear.

The checks are the policy's "latest" version (staging/src/k8s.io/pod-security-admission/policy/
check_*.go), each with its upstream reason and detail text; a pinned ``enforce-version`` drops
the checks that version predates. Warn and audit modes change no outcome and are not modelled.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from msgspec import Struct

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

LEVELS = ("privileged", "baseline", "restricted")
# pod-security-admission api/constants.go: the namespace labels.
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
ENFORCE_VERSION_LABEL = "pod-security.kubernetes.io/enforce-version"
LATEST = "latest"


class Violation(Struct, frozen=True):
    """One failed check: its upstream id, ForbiddenReason and ForbiddenDetail."""

    check: str
    reason: str
    detail: str


# --- reading a pod spec that may be malformed (never raises) ----------------------------------------


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _seq(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """policy/visitor.go visitContainers: init containers, containers, ephemeral containers."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in _seq(spec.get(field)):
            if isinstance(c, Mapping):
                yield c


def _name(c: Mapping[str, Any]) -> str:
    return str(c.get("name") or "")


def _sc(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    sc = obj.get("securityContext")
    return sc if isinstance(sc, Mapping) else None


def _join_quote(items: Sequence[str]) -> str:
    """policy/helpers.go joinQuote."""
    return '"' + '", "'.join(items) + '"' if items else ""


def _plural(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural


def _containers_phrase(names: Sequence[str]) -> str:
    return f"{_plural('container', 'containers', len(names))} {_join_quote(names)}"


def _bad_containers(spec: Mapping[str, Any], bad: Callable[[Mapping[str, Any]], bool]) -> list[str]:
    return [_name(c) for c in _containers(spec) if bad(c)]


# --- baseline ----------------------------------------------------------------------------------------

# check_appArmorProfile.go: allowed annotation values and profile types.
_APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def _app_armor(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_appArmorProfile.go appArmorProfileV1Dot0."""

    def bad_type(sc: Mapping[str, Any] | None) -> str | None:
        if not sc or not isinstance(sc.get("appArmorProfile"), Mapping):
            return None
        kind = str(sc["appArmorProfile"].get("type") or "")
        return None if kind in ("RuntimeDefault", "Localhost") else kind

    setters: list[str] = []
    values: set[str] = set()
    pod_bad = bad_type(_sc(spec))
    if pod_bad is not None:
        setters.append("pod")
        values.add(pod_bad)
    containers = []
    for c in _containers(spec):
        v = bad_type(_sc(c))
        if v is not None:
            containers.append(_name(c))
            values.add(v)
    if containers:
        setters.append(_containers_phrase(containers))
    annotations = sorted(
        f'{k}="{v}"'
        for k, v in _map(meta.get("annotations")).items()
        if str(k).startswith(_APPARMOR_ANNOTATION)
        and not (not v or v == "runtime/default" or str(v).startswith("localhost/"))
    )
    bad_values = sorted(values) + annotations
    if annotations:
        setters.append(_plural("annotation", "annotations", len(annotations)))
    if not setters:
        return None
    return Violation(
        "appArmorProfile",
        _plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(bad_values)),
        f"{' and '.join(setters)} must not set AppArmor profile type to {_join_quote(bad_values)}",
    )


def _host_namespaces(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_hostNamespaces.go hostNamespaces_1_0."""
    used = [f"{f}=true" for f in ("hostNetwork", "hostPID", "hostIPC") if spec.get(f) is True]
    return Violation("hostNamespaces", "host namespaces", ", ".join(used)) if used else None


def _host_path(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_hostPathVolumes.go hostPathVolumes_1_0."""
    names = [
        str(v.get("name") or "")
        for v in _seq(spec.get("volumes"))
        if isinstance(v, Mapping) and v.get("hostPath") is not None
    ]
    if not names:
        return None
    return Violation("hostPathVolumes", "hostPath volumes", f"{_plural('volume', 'volumes', len(names))} {_join_quote(names)}")


def _host_ports(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_hostPorts.go hostPorts_1_0 (the ports as a sorted set of strings)."""
    bad: list[str] = []
    ports: set[str] = set()
    for c in _containers(spec):
        found = [p.get("hostPort") for p in _seq(c.get("ports")) if isinstance(p, Mapping)]
        found = [p for p in found if p not in (None, 0) and not isinstance(p, bool)]
        if found:
            bad.append(_name(c))
            ports.update(str(p) for p in found)
    if not bad:
        return None
    return Violation(
        "hostPorts",
        "hostPort",
        f"{_containers_phrase(bad)} {_plural('uses', 'use', len(bad))} "
        f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}",
    )


def _handler_hosts(handler: Any) -> list[str]:
    h = _map(handler)
    return [
        str(_map(h.get(k)).get("host"))
        for k in ("httpGet", "tcpSocket")
        if _map(h.get(k)).get("host") not in (None, "")
    ]


def _host_probes(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_hostProbesAndhostLifecycle.go hostProbesAndHostLifecycleV1Dot34."""
    bad: set[str] = set()
    hosts: set[str] = set()
    for c in _containers(spec):
        lifecycle = _map(c.get("lifecycle"))
        found = [
            h
            for handler in (
                c.get("livenessProbe"),
                c.get("readinessProbe"),
                c.get("startupProbe"),
                lifecycle.get("postStart"),
                lifecycle.get("preStop"),
            )
            for h in _handler_hosts(handler)
        ]
        if found:
            bad.add(_name(c))
            hosts.update(found)
    if not bad:
        return None
    names = sorted(bad)
    return Violation(
        "hostProbesAndHostLifecycle",
        "probe or lifecycle host",
        f"{_containers_phrase(names)} {_plural('uses', 'use', len(names))} "
        f"{_plural('probe or lifecycle host', 'probe or lifecycle hosts', len(hosts))} {_join_quote(sorted(hosts))}",
    )


def _privileged(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_privileged.go privileged_1_0."""
    bad = _bad_containers(spec, lambda c: _map(_sc(c)).get("privileged") is True)
    if not bad:
        return None
    return Violation("privileged", "privileged", f"{_containers_phrase(bad)} must not set securityContext.privileged=true")


def _user_namespaced(spec: Mapping[str, Any]) -> bool:
    """``hostUsers: false``: the pod runs in its own user namespace (KEP-127; procMount,
    runAsNonRoot and runAsUser admit it since the UserNamespacesPodSecurityStandards gate went)."""
    return spec.get("hostUsers") is False


def _windows(spec: Mapping[str, Any]) -> bool:
    """``spec.os.name: windows``: the Linux-only restricted checks admit it (policy 1.25)."""
    return _map(spec.get("os")).get("name") == "windows"


def _proc_mount(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_procMount.go procMount_1_34 (unset or "Default")."""
    if _user_namespaced(spec):
        return None
    bad: list[str] = []
    kinds: set[str] = set()
    for c in _containers(spec):
        value = _map(_sc(c)).get("procMount")
        if value is not None and value != "Default":
            bad.append(_name(c))
            kinds.add(str(value))
    if not bad:
        return None
    return Violation(
        "procMount",
        "procMount",
        f"{_containers_phrase(bad)} must not set securityContext.procMount to {_join_quote(sorted(kinds))}",
    )


# check_seLinuxOptions.go selinux_allowed_types (container_engine_t since policy 1.31)
_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})


def _selinux(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_seLinuxOptions.go seLinuxOptions_1_0."""
    bad_types: set[str] = set()
    set_user = set_role = False

    def valid(sc: Mapping[str, Any] | None) -> bool:
        nonlocal set_user, set_role
        if sc is None or not isinstance(sc.get("seLinuxOptions"), Mapping):
            return True
        opts = sc["seLinuxOptions"]
        ok = True
        kind = str(opts.get("type") or "")
        if kind not in _SELINUX_TYPES:
            ok = False
            bad_types.add(kind)
        if opts.get("user"):
            ok, set_user = False, True
        if opts.get("role"):
            ok, set_role = False, True
        return ok

    setters = [] if valid(_sc(spec)) else ["pod"]
    bad = _bad_containers(spec, lambda c: not valid(_sc(c)))
    if bad:
        setters.append(_containers_phrase(bad))
    if not setters:
        return None
    data: list[str] = []
    if bad_types:
        data.append(f"{_plural('type', 'types', len(bad_types))} {_join_quote(sorted(bad_types))}")
    if set_user:
        data.append("user may not be set")
    if set_role:
        data.append("role may not be set")
    return Violation(
        "seLinuxOptions",
        "seLinuxOptions",
        f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}",
    )


def _seccomp_type(sc: Mapping[str, Any] | None) -> str | None:
    """The seccompProfile type a security context sets, None when it sets none."""
    if sc is None or not isinstance(sc.get("seccompProfile"), Mapping):
        return None
    return str(sc["seccompProfile"].get("type") or "")


def _valid_seccomp(kind: str) -> bool:
    return kind in ("RuntimeDefault", "Localhost")  # check_seccompProfile_baseline.go validSeccomp


def _seccomp(spec: Mapping[str, Any], *, required: bool, check: str) -> Violation | None:
    """check_seccompProfile_baseline.go seccompProfileBaseline_1_19 and, ``required``,
    check_seccompProfile_restricted.go seccompProfileRestricted_1_19."""
    setters: list[str] = []
    values: set[str] = set()
    pod_type = _seccomp_type(_sc(spec))
    pod_set = False
    if pod_type is not None:
        if _valid_seccomp(pod_type):
            pod_set = True
        else:
            setters.append("pod")
            values.add(pod_type)
    explicit: list[str] = []
    implicit: list[str] = []
    for c in _containers(spec):
        kind = _seccomp_type(_sc(c))
        if kind is not None:
            if not _valid_seccomp(kind):
                explicit.append(_name(c))
                values.add(kind)
        elif not pod_set:
            implicit.append(_name(c))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return Violation(
            check,
            "seccompProfile",
            f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_join_quote(sorted(values))}",
        )
    if required and implicit:
        return Violation(
            check,
            "seccompProfile",
            f'pod or {_containers_phrase(implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
        )
    return None


def _seccomp_baseline(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    return _seccomp(spec, required=False, check="seccompProfile_baseline")


def _seccomp_restricted(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    if _windows(spec):  # seccompProfileRestricted_1_25
        return None
    return _seccomp(spec, required=True, check="seccompProfile_restricted")


# check_sysctls.go: the safe sysctls and the policy version that made each one safe.
_SAFE_SYSCTLS: dict[str, int] = {
    "kernel.shm_rmid_forced": 0,
    "net.ipv4.ip_local_port_range": 0,
    "net.ipv4.tcp_syncookies": 0,
    "net.ipv4.ping_group_range": 0,
    "net.ipv4.ip_unprivileged_port_start": 0,
    "net.ipv4.ip_local_reserved_ports": 27,
    "net.ipv4.tcp_keepalive_time": 29,
    "net.ipv4.tcp_fin_timeout": 29,
    "net.ipv4.tcp_keepalive_intvl": 29,
    "net.ipv4.tcp_keepalive_probes": 29,
    "net.ipv4.tcp_rmem": 32,
    "net.ipv4.tcp_wmem": 32,
}


def _sysctls(meta: Mapping[str, Any], spec: Mapping[str, Any], minor: int | None = None) -> Violation | None:
    """check_sysctls.go (in the pod's order; a pinned ``minor`` admits only what it made safe)."""

    def safe(name: str) -> bool:
        since = _SAFE_SYSCTLS.get(name)
        return since is not None and (minor is None or minor >= since)

    names = [
        str(s.get("name") or "")
        for s in _seq(_map(_sc(spec)).get("sysctls"))
        if isinstance(s, Mapping) and not safe(str(s.get("name") or ""))
    ]
    return Violation("sysctls", "forbidden sysctls", ", ".join(names)) if names else None


def _windows_host_process(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_windowsHostProcess.go windowsHostProcess_1_0."""

    def host_process(sc: Mapping[str, Any] | None) -> bool:
        return _map(_map(sc).get("windowsOptions")).get("hostProcess") is True

    setters = ["pod"] if host_process(_sc(spec)) else []
    bad = _bad_containers(spec, lambda c: host_process(_sc(c)))
    if bad:
        setters.append(_containers_phrase(bad))
    if not setters:
        return None
    return Violation(
        "windowsHostProcess",
        "hostProcess",
        f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true",
    )


# check_capabilities_baseline.go capabilities_allowed_1_0
_BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
        "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
    }
)


def _capabilities(c: Mapping[str, Any]) -> Mapping[str, Any] | None:
    sc = _sc(c)
    caps = sc.get("capabilities") if sc else None
    return caps if isinstance(caps, Mapping) else None


def _capabilities_baseline(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_capabilities_baseline.go capabilitiesBaseline_1_0."""
    bad: list[str] = []
    extra: set[str] = set()
    for c in _containers(spec):
        added = [str(a) for a in _seq(_map(_capabilities(c)).get("add")) if str(a) not in _BASELINE_CAPABILITIES]
        if added:
            bad.append(_name(c))
            extra.update(added)
    if not bad:
        return None
    return Violation(
        "capabilities_baseline",
        "non-default capabilities",
        f"{_containers_phrase(bad)} must not include {_join_quote(sorted(extra))} in securityContext.capabilities.add",
    )


# --- restricted ----------------------------------------------------------------------------------------


def _allow_privilege_escalation(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_allowPrivilegeEscalation.go allowPrivilegeEscalation_1_25: must be set to false."""
    if _windows(spec):
        return None
    bad = _bad_containers(spec, lambda c: _map(_sc(c)).get("allowPrivilegeEscalation") is not False)
    if not bad:
        return None
    return Violation(
        "allowPrivilegeEscalation",
        "allowPrivilegeEscalation != false",
        f"{_containers_phrase(bad)} must set securityContext.allowPrivilegeEscalation=false",
    )


def _capabilities_restricted(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_capabilities_restricted.go capabilitiesRestricted_1_25: drop ALL, add at most
    NET_BIND_SERVICE."""
    if _windows(spec):
        return None
    missing: list[str] = []
    adding: list[str] = []
    forbidden: set[str] = set()
    for c in _containers(spec):
        caps = _capabilities(c)
        if caps is None:
            missing.append(_name(c))
            continue
        if "ALL" not in [str(d) for d in _seq(caps.get("drop"))]:
            missing.append(_name(c))
        added = [str(a) for a in _seq(caps.get("add")) if str(a) != "NET_BIND_SERVICE"]
        if added:
            adding.append(_name(c))
            forbidden.update(added)
    details = []
    if missing:
        details.append(f'{_containers_phrase(missing)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(
            f"{_containers_phrase(adding)} must not include {_join_quote(sorted(forbidden))} in securityContext.capabilities.add"
        )
    return Violation("capabilities_restricted", "unrestricted capabilities", "; ".join(details)) if details else None


# check_restrictedVolumes.go: the volume sources restricted pods may use (image since 1.33),
# and the type names it reports for the others.
_ALLOWED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected", "secret"}
)
_RESTRICTED_VOLUMES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
    "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
    "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos",
)


def _restricted_volumes(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_restrictedVolumes.go restrictedVolumesV1Dot0 (volumes in pod order, types sorted)."""
    names: list[str] = []
    kinds: set[str] = set()
    for v in _seq(spec.get("volumes")):
        if not isinstance(v, Mapping) or any(v.get(k) is not None for k in _ALLOWED_VOLUMES):
            continue
        names.append(str(v.get("name") or ""))
        kinds.add(next((k for k in _RESTRICTED_VOLUMES if v.get(k) is not None), "unknown"))
    if not names:
        return None
    return Violation(
        "restrictedVolumes",
        "restricted volume types",
        f"{_plural('volume', 'volumes', len(names))} {_join_quote(names)} {_plural('uses', 'use', len(names))} "
        f"{_plural('restricted volume type', 'restricted volume types', len(kinds))} {_join_quote(sorted(kinds))}",
    )


def _run_as_non_root(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_runAsNonRoot.go runAsNonRoot_1_34."""
    if _user_namespaced(spec):
        return None
    setters: list[str] = []
    pod_value = _map(_sc(spec)).get("runAsNonRoot")
    pod_true = False
    if pod_value is not None:
        if pod_value is True:
            pod_true = True
        else:
            setters.append("pod")
    explicit: list[str] = []
    implicit: list[str] = []
    for c in _containers(spec):
        value = _map(_sc(c)).get("runAsNonRoot")
        if value is not None:
            if value is not True:
                explicit.append(_name(c))
        elif not pod_true:
            implicit.append(_name(c))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return Violation(
            "runAsNonRoot", "runAsNonRoot != true", f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false"
        )
    if implicit:
        return Violation(
            "runAsNonRoot",
            "runAsNonRoot != true",
            f"pod or {_containers_phrase(implicit)} must set securityContext.runAsNonRoot=true",
        )
    return None


def _run_as_user(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Violation | None:
    """check_runAsUser.go runAsUser_1_23."""
    if _user_namespaced(spec):
        return None

    def root(sc: Mapping[str, Any] | None) -> bool:
        value = _map(sc).get("runAsUser")
        return value == 0 and not isinstance(value, bool)

    setters = ["pod"] if root(_sc(spec)) else []
    bad = _bad_containers(spec, lambda c: root(_sc(c)))
    if bad:
        setters.append(_containers_phrase(bad))
    if not setters:
        return None
    return Violation("runAsUser", "runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0")


_Check = Callable[[Mapping[str, Any], Mapping[str, Any]], "Violation | None"]

# (id, level, overridden at restricted, minimum minor version): a baseline check a restricted one
# overrides (OverrideCheckIDs: capabilities, seccompProfile, hostPath volumes) runs only at
# baseline (policy/registry.go EvaluatePod).
_CHECKS: tuple[tuple[str, str, bool, int, _Check], ...] = (
    ("allowPrivilegeEscalation", "restricted", False, 8, _allow_privilege_escalation),
    ("appArmorProfile", "baseline", False, 0, _app_armor),
    ("capabilities_baseline", "baseline", True, 0, _capabilities_baseline),
    ("capabilities_restricted", "restricted", False, 22, _capabilities_restricted),
    ("hostNamespaces", "baseline", False, 0, _host_namespaces),
    ("hostPathVolumes", "baseline", True, 0, _host_path),
    ("hostPorts", "baseline", False, 0, _host_ports),
    ("hostProbesAndHostLifecycle", "baseline", False, 34, _host_probes),
    ("privileged", "baseline", False, 0, _privileged),
    ("procMount", "baseline", False, 0, _proc_mount),
    ("restrictedVolumes", "restricted", False, 0, _restricted_volumes),
    ("runAsNonRoot", "restricted", False, 0, _run_as_non_root),
    ("runAsUser", "restricted", False, 23, _run_as_user),
    ("seLinuxOptions", "baseline", False, 0, _selinux),
    ("seccompProfile_baseline", "baseline", True, 19, _seccomp_baseline),
    ("seccompProfile_restricted", "restricted", False, 19, _seccomp_restricted),
    ("sysctls", "baseline", False, 0, _sysctls),
    ("windowsHostProcess", "baseline", False, 0, _windows_host_process),
)
CHECK_LEVELS: dict[str, str] = {c[0]: c[1] for c in _CHECKS}
"""Each check's level (upstream ids)."""


# api/helpers.go versionRegexp
_VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")


def _minor(version: str) -> int | None:
    """The minor of ``v1.N`` (None for latest or anything else)."""
    m = _VERSION.match(version)
    return int(m.group(1)) if m else None


def check_pod(
    pod: Mapping[str, Any], level: str, only: str | None = None, version: str = LATEST
) -> list[Violation]:
    """The checks ``pod`` fails at ``level`` and policy ``version``, in upstream order
    (policy/registry.go EvaluatePod); ``only`` runs one check by id."""
    if level not in ("baseline", "restricted"):
        return []
    meta = _map(pod.get("metadata"))
    spec = _map(pod.get("spec"))
    minor = _minor(version)
    out: list[Violation] = []
    # policy/registry.go populate: baseline ids sorted, then restricted ids sorted; at restricted
    # the baseline checks a restricted one overrides are left out.
    baseline = sorted((c for c in _CHECKS if c[1] == "baseline"), key=lambda c: c[0])
    if level == "baseline":
        ordered = baseline
    else:
        restricted = sorted((c for c in _CHECKS if c[1] == "restricted"), key=lambda c: c[0])
        ordered = [c for c in baseline if not c[2]] + restricted
    for check_id, _lvl, _overlap, minimum, fn in ordered:
        if (only is not None and check_id != only) or (minor is not None and minor < minimum):
            continue
        violation = _sysctls(meta, spec, minor) if fn is _sysctls else fn(meta, spec)
        if violation is not None:
            out.append(violation)
    return out


def forbidden_detail(violations: Sequence[Violation]) -> str:
    """policy/checks.go AggregateCheckResult.ForbiddenDetail: ``reason (detail)``, joined by ", "."""
    return ", ".join(f"{v.reason} ({v.detail})" if v.detail else v.reason for v in violations)


def enforced(labels: Mapping[str, Any], default_level: str, default_version: str) -> tuple[str, str]:
    """The enforce level and version a namespace's labels give (api/helpers.go PolicyToEvaluate):
    an invalid level is ``restricted``, an invalid version ``latest`` (it fails closed)."""
    level, version = default_level, default_version
    if ENFORCE_LABEL in labels:
        value = str(labels[ENFORCE_LABEL])
        level = value if value in LEVELS else "restricted"
    if ENFORCE_VERSION_LABEL in labels:
        value = str(labels[ENFORCE_VERSION_LABEL])
        version = value if value == LATEST or _minor(value) is not None else LATEST
    return level, version


def _api_defaults(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    """What decoding defaults before admission sees the pod (pkg/apis/core/v1/defaults.go):
    a volume with no source is an emptyDir (SetDefaults_Volume), and a hostNetwork pod's
    container ports are host ports (defaultHostNetworkPorts). A copy; ``pod`` is unchanged."""
    spec = _map(pod.get("spec"))
    volumes = [
        {**v, "emptyDir": {}} if isinstance(v, Mapping) and all(x is None for k, x in v.items() if k != "name") else v
        for v in _seq(spec.get("volumes"))
    ]
    out_spec: dict[str, Any] = {**spec, "volumes": volumes} if volumes else dict(spec)
    if spec.get("hostNetwork") is True:
        for field in ("initContainers", "containers"):
            out_spec[field] = [
                {
                    **c,
                    "ports": [
                        {**p, "hostPort": p.get("containerPort")} if isinstance(p, Mapping) and not p.get("hostPort") else p
                        for p in _seq(c.get("ports"))
                    ],
                }
                if isinstance(c, Mapping)
                else c
                for c in _seq(spec.get(field))
            ]
    return {**pod, "spec": out_spec}


_MODES = ("enforce", "audit", "warn")


def namespace_label_errors(namespace: Mapping[str, Any]) -> list[str]:
    """Why the plugin refuses a Namespace's Pod Security labels on create or update
    (admission/admission.go ValidateNamespace; api/helpers.go PolicyToEvaluate's field errors,
    in its order: each mode's level, then its version)."""
    labels = _map(_map(namespace.get("metadata")).get("labels"))
    errors: list[str] = []
    for mode in _MODES:
        key = f"pod-security.kubernetes.io/{mode}"
        if key in labels and str(labels[key]) not in LEVELS:
            errors.append(f'metadata.labels[{key}]: Invalid value: "{labels[key]}": must be one of {", ".join(LEVELS)}')
        key = f"{key}-version"
        if key in labels and str(labels[key]) != LATEST and _minor(str(labels[key])) is None:
            errors.append(f'metadata.labels[{key}]: Invalid value: "{labels[key]}": must be "latest" or "v1.x"')
    return errors


def admit(sim: Simulation, pod: Mapping[str, Any]) -> None:
    """Refuse ``pod`` (``ApiError`` Forbidden) when it violates its namespace's enforced level."""
    from helmsim.cluster.podadmission import forbidden_pod

    meta = _map(pod.get("metadata"))
    namespace = str(meta.get("namespace") or "default")
    settings = getattr(sim.profile, "pod_security", None)
    default_level, default_version = ("privileged", LATEST)
    exempt_namespaces: Sequence[str] = ()
    exempt_classes: Sequence[str] = ()
    if settings is not None:
        default_level = settings.defaults.enforce
        default_version = settings.defaults.enforce_version
        exempt_namespaces = settings.exemptions.namespaces
        exempt_classes = settings.exemptions.runtime_classes
    # admission/admission.go: exempt namespaces and runtime classes are never evaluated.
    if namespace in exempt_namespaces:
        return
    if str(_map(pod.get("spec")).get("runtimeClassName") or "") in exempt_classes and exempt_classes:
        return
    ns = sim.store.get("Namespace", "", namespace)
    labels = _map(_map(ns.get("metadata")).get("labels")) if ns else {}
    level, version = enforced(labels, default_level, default_version)
    if level == "privileged":
        return  # policy/check_*.go: the privileged level checks nothing
    pod = _api_defaults(pod)
    violations = check_pod(pod, level, version=version)
    if violations:
        raise forbidden_pod(pod, f'violates PodSecurity "{level}:{version}": {forbidden_detail(violations)}')
