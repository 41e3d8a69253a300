"""Pod Security Admission checks against the upstream test tables.

``tests/data/podsecurity/cases.yaml`` holds the cases of the upstream ``check_*_test.go`` files
(kubernetes/kubernetes, staging/src/k8s.io/pod-security-admission/policy/), rewritten as Pods in
Kubernetes JSON shape with the exact upstream ForbiddenReason / ForbiddenDetail, for the latest
policy version. Each case runs its one check (``only=``) at the level the check belongs to.

The property tests below check two things upstream guarantees for the latest version: restricted
is at least as strict as baseline, and evaluating a malformed pod never raises.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helmsim.cluster.podsecurity import check_pod

CASES_FILE = Path(__file__).resolve().parents[1] / "data" / "podsecurity" / "cases.yaml"

BASELINE_CHECKS = frozenset(
    {
        "hostNamespaces",
        "privileged",
        "capabilities_baseline",
        "hostPathVolumes",
        "hostPorts",
        "appArmorProfile",
        "seLinuxOptions",
        "procMount",
        "seccompProfile_baseline",
        "sysctls",
        "windowsHostProcess",
        "hostProbesAndHostLifecycle",
    }
)
RESTRICTED_CHECKS = frozenset(
    {
        "restrictedVolumes",
        "allowPrivilegeEscalation",
        "runAsNonRoot",
        "runAsUser",
        "seccompProfile_restricted",
        "capabilities_restricted",
    }
)

# Upstream (policy/registry.go) a restricted check may replace a baseline one at restricted level
# (Check.Versions[].OverrideCheckIDs): the baseline failure then shows under the restricted id.
OVERRIDDEN_BY = {
    "hostPathVolumes": "restrictedVolumes",
    "seccompProfile_baseline": "seccompProfile_restricted",
    "capabilities_baseline": "capabilities_restricted",
    "procMount": "procMount_restricted",
}


def _load_cases() -> list[dict[str, Any]]:
    cases = yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))
    assert isinstance(cases, list) and cases, f"{CASES_FILE}: expected a non-empty list"
    return cases


CASES = _load_cases()


def _level(check: str) -> str:
    if check in BASELINE_CHECKS:
        return "baseline"
    if check in RESTRICTED_CHECKS:
        return "restricted"
    raise AssertionError(f"case names unknown check {check!r}")


def test_cases_file_is_well_formed() -> None:
    ids = [f"{c['check']}:{c['name']}" for c in CASES]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    for case in CASES:
        assert {"check", "source", "name", "pod", "allowed"} <= case.keys(), case.get("name")
        assert case["source"] == "check_" + case["source"][len("check_") :]
        assert case["source"].endswith("_test.go")
        _level(case["check"])
        if case["allowed"]:
            assert "reason" not in case and "detail" not in case, case["name"]
        else:
            assert isinstance(case["reason"], str) and isinstance(case["detail"], str)
        assert isinstance(case["pod"], dict) and isinstance(case["pod"].get("spec"), dict)
    # every check asked for has at least one case
    assert {c["check"] for c in CASES} == BASELINE_CHECKS | RESTRICTED_CHECKS


@pytest.mark.parametrize("case", CASES, ids=[f"{c['check']}:{c['name']}" for c in CASES])
def test_upstream_case(case: dict[str, Any]) -> None:
    violations = check_pod(case["pod"], _level(case["check"]), only=case["check"])
    got = [(v.check, v.reason, v.detail) for v in violations]
    if case["allowed"]:
        assert got == [], f"expected allowed, got {got}"
    else:
        assert got == [(case["check"], case["reason"], case["detail"])]


# --- properties ------------------------------------------------------------------------------------

PROPERTY_SETTINGS = settings(
    max_examples=300,
    deadline=timedelta(seconds=2),
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_CAPS = ["ALL", "NET_RAW", "NET_BIND_SERVICE", "CHOWN", "SYS_ADMIN", "KILL", "AUDIT_WRITE", "FOO"]
_maybe_bool = st.none() | st.booleans()


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


_capabilities = st.builds(
    lambda add, drop: _drop_none({"add": add, "drop": drop}),
    st.none() | st.lists(st.sampled_from(_CAPS), max_size=3),
    st.none() | st.lists(st.sampled_from(_CAPS), max_size=3),
)
_seccomp = st.none() | st.builds(
    lambda t: {"type": t}, st.sampled_from(["RuntimeDefault", "Localhost", "Unconfined", "bogus"])
)
_container_sc = st.none() | st.builds(
    lambda priv, ape, nonroot, user, caps, seccomp, proc: _drop_none(
        {
            "privileged": priv,
            "allowPrivilegeEscalation": ape,
            "runAsNonRoot": nonroot,
            "runAsUser": user,
            "capabilities": caps,
            "seccompProfile": seccomp,
            "procMount": proc,
        }
    ),
    _maybe_bool,
    _maybe_bool,
    _maybe_bool,
    st.none() | st.sampled_from([0, 1000]),
    st.none() | _capabilities,
    _seccomp,
    st.none() | st.sampled_from(["Default", "Unmasked"]),
)
_port = st.builds(
    lambda cp, hp: _drop_none({"containerPort": cp, "hostPort": hp}),
    st.sampled_from([80, 8080]),
    st.none() | st.sampled_from([0, 80, 8443]),
)
_container = st.builds(
    lambda name, sc, ports: _drop_none(
        {"name": name, "securityContext": sc, "ports": ports or None}
    ),
    st.sampled_from(["a", "b", "c", "web", "sidecar"]),
    _container_sc,
    st.lists(_port, max_size=2),
)
_volume = st.one_of(
    st.builds(
        lambda n: {"name": n, "hostPath": {"path": "/var/run"}}, st.sampled_from(["h1", "h2"])
    ),
    st.builds(lambda n: {"name": n, "emptyDir": {}}, st.sampled_from(["e1", "e2"])),
    st.builds(lambda n: {"name": n, "configMap": {"name": "cm"}}, st.sampled_from(["c1"])),
    st.builds(lambda n: {"name": n, "nfs": {"server": "x", "path": "/"}}, st.sampled_from(["n1"])),
)
_pod_sc = st.none() | st.builds(
    lambda nonroot, user, seccomp: _drop_none(
        {"runAsNonRoot": nonroot, "runAsUser": user, "seccompProfile": seccomp}
    ),
    _maybe_bool,
    st.none() | st.sampled_from([0, 1000]),
    _seccomp,
)
# No spec.os here: upstream exempts windows pods (spec.os.name=windows) from the restricted
# capabilities / seccomp checks that override the baseline ones, so for such a pod baseline can
# reject what restricted admits (policy 1.25+); the superset property holds only without it.
_pod = st.builds(
    lambda hn, hpid, hipc, husers, sc, containers, init, volumes: {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": _drop_none(
            {
                "hostNetwork": hn,
                "hostPID": hpid,
                "hostIPC": hipc,
                "hostUsers": husers,
                "securityContext": sc,
                "containers": containers,
                "initContainers": init or None,
                "volumes": volumes or None,
            }
        ),
    },
    _maybe_bool,
    _maybe_bool,
    _maybe_bool,
    _maybe_bool,
    _pod_sc,
    st.lists(_container, min_size=1, max_size=3),
    st.lists(_container, max_size=1),
    st.lists(_volume, max_size=3),
)


@PROPERTY_SETTINGS
@given(pod=_pod)
def test_restricted_is_a_superset_of_baseline(pod: dict[str, Any]) -> None:
    baseline = check_pod(pod, "baseline")
    restricted = check_pod(pod, "restricted")
    restricted_ids = {v.check for v in restricted}
    for v in baseline:
        assert v.check in restricted_ids or OVERRIDDEN_BY.get(v.check) in restricted_ids, (
            f"baseline violation {v.check!r} ({v.reason}: {v.detail}) missing at restricted; "
            f"restricted gave {sorted(restricted_ids)}"
        )
    if baseline:
        assert restricted


# Keys a pod reader looks at, so the fuzz reaches past the top level.
_KEYS = st.sampled_from(
    [
        "metadata",
        "annotations",
        "spec",
        "securityContext",
        "containers",
        "initContainers",
        "ephemeralContainers",
        "name",
        "capabilities",
        "add",
        "drop",
        "privileged",
        "allowPrivilegeEscalation",
        "runAsNonRoot",
        "runAsUser",
        "seccompProfile",
        "type",
        "procMount",
        "seLinuxOptions",
        "user",
        "role",
        "appArmorProfile",
        "windowsOptions",
        "hostProcess",
        "sysctls",
        "value",
        "volumes",
        "hostPath",
        "emptyDir",
        "ports",
        "hostPort",
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "hostUsers",
        "os",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
        "postStart",
        "preStop",
        "httpGet",
        "tcpSocket",
        "host",
        "container.apparmor.security.beta.kubernetes.io/a",
    ]
)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["Unconfined", "RuntimeDefault", "Unmasked", "windows", "ALL", "0"])
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(_KEYS | st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=30,
)


def _replace_at(value: Any, path: list[int], junk: Any) -> Any:
    """``value`` with the node reached by ``path`` (indices into its keys / items) replaced."""
    if not path:
        return junk
    step, rest = path[0], path[1:]
    if isinstance(value, dict) and value:
        key = list(value)[step % len(value)]
        return {**value, key: _replace_at(value[key], rest, junk)}
    if isinstance(value, list) and value:
        i = step % len(value)
        return [*value[:i], _replace_at(value[i], rest, junk), *value[i + 1 :]]
    return junk


@PROPERTY_SETTINGS
@given(
    pod=_pod,
    junk=st.lists(
        st.tuples(st.lists(st.integers(0, 7), max_size=6), _json), min_size=1, max_size=3
    ),
)
def test_never_raises_on_a_corrupted_pod(
    pod: dict[str, Any], junk: list[tuple[list[int], Any]]
) -> None:
    for path, value in junk:
        corrupted = _replace_at(pod, path, value)
        pod = corrupted if isinstance(corrupted, dict) else {"spec": corrupted}
    for level in ("baseline", "restricted"):
        assert isinstance(check_pod(pod, level), list)


@PROPERTY_SETTINGS
@given(metadata=_json, spec=_json)
def test_never_raises_on_arbitrary_json(metadata: Any, spec: Any) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    for level in ("baseline", "restricted"):
        assert isinstance(check_pod(pod, level), list)
    for check in sorted(BASELINE_CHECKS | RESTRICTED_CHECKS):
        check_pod(pod, _level(check), only=check)
