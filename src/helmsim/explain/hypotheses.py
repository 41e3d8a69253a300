"""The hypothesis space of ``helmsim explain``: every fault the simulator models, instantiated on
the chart, the profile and what was observed, each with a documented prior.

A hypothesis is a set of scenario faults (and, for the identity label filter, a profile change);
the latencies of the profile stay random (Monte Carlo) under every one. Nothing here knows a
particular chart: workloads and policies come from the rendered resources, backends and
provisioners from the profile, targets from the observation. docs/explain.md lists the families
and their priors.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct, field

from helmsim.cluster.profile import ClusterProfile
from helmsim.cluster.trace import Trace
from helmsim.explain.observation import Observation
from helmsim.helm.actions import ChartRelease

WORKLOAD_KINDS = ("Job", "Deployment", "StatefulSet", "DaemonSet", "CronJob")
CILIUM_POLICIES = ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy")
# agent stalls tried, in seconds from the start of the upgrade (or install)
STALLS = (30.0, 60.0, 120.0, 300.0)
OUTAGE_SECONDS = 300.0

# Priors (docs/explain.md "Priors"): how plausible each family is before looking at the run,
# from how often each mechanism is reported (shared reference "seed 1", the issue tracker).
PRIORS: dict[str, float] = {
    "baseline": 0.30,
    "container-exit": 0.10,
    "label-filter": 0.08,
    "apiserver-identity": 0.08,
    "endpoint-init": 0.05,
    "agent-stall": 0.12,
    "image-pull": 0.05,
    "apiserver-outage": 0.02,
    "dns-proxy": 0.03,
    "provisioner": 0.05,
}


class Hypothesis(Struct, frozen=True):
    """One condition to test: faults (scenario fault mappings) and an optional profile change."""

    id: str
    family: str
    title: str
    prior: float
    faults: tuple[Mapping[str, Any], ...] = ()
    cni: Mapping[str, Any] = field(default_factory=dict)
    """Profile ``cni`` keys changed under this hypothesis (e.g. ``identityLabels``)."""
    mechanism: str = ""
    """What it does, and its upstream source."""

    @property
    def profile_key(self) -> str:
        return repr(sorted(self.cni.items()))


def _workloads(charts: Mapping[str, ChartRelease]) -> list[tuple[str, dict[str, str], dict[str, Any]]]:
    """(``Kind/namespace/name``, pod template labels, body) of every workload of the charts."""
    out = []
    for chart in charts.values():
        for r in chart.manifest:
            if r.kind not in WORKLOAD_KINDS:
                continue
            spec = r.body.get("spec") or {}
            if r.kind == "CronJob":
                spec = (spec.get("jobTemplate") or {}).get("spec") or {}
            tpl = (spec.get("template") or {}).get("metadata") or {}
            labels = {str(k): str(v) for k, v in (tpl.get("labels") or {}).items()}
            out.append((f"{r.kind}/{r.namespace or chart.namespace}/{r.name}", labels, r.body))
    return out


_REF = re.compile(r"\b([A-Z][A-Za-z]+)/([a-z0-9.-]+)/([a-z0-9.-]+)")


def targets(obs: Observation, charts: Mapping[str, ChartRelease]) -> list[tuple[str, dict[str, str]]]:
    """The chart's workloads the observation is about: those named by its workloads, else those
    named in the observed Ready message, else every Job (the usual failing kind)."""
    found = _workloads(charts)
    named = [w.object for w in obs.workloads]
    if not named and obs.helm_release is not None:
        text = (obs.helm_release.message or "") + " " + (obs.helm_release.message_contains or "")
        named = ["/".join(m.groups()) + "*" for m in _REF.finditer(text)]
    if named:
        pick = [(ref, labels) for ref, labels, _ in found if any(fnmatch.fnmatchcase(ref, _glob(n)) for n in named)]
        if pick or obs.workloads:
            return pick
    return [(ref, labels) for ref, labels, _ in found if ref.startswith("Job/") and not named]


def _glob(ref: str) -> str:
    # a real cluster's generated suffix differs: "Job/ns/x-migrate-596983f4" matches "x-migrate-*"
    return re.sub(r"-[0-9a-f]{8,10}\*?$", "-*", ref)


def _match(kind_ref: str) -> dict[str, Any]:
    kind, ns, name = kind_ref.split("/", 2)
    return {"kind": kind, "namespace": ns, "name": name}


def _selecting_policies(charts: Mapping[str, ChartRelease], ref: str, labels: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """Cilium policies of the charts whose endpointSelector matchLabels select ``labels``, with the
    label keys they select on."""
    _, ns, _ = ref.split("/", 2)
    out = []
    for chart in charts.values():
        for r in chart.resources:
            if r.kind not in CILIUM_POLICIES:
                continue
            if r.kind == "CiliumNetworkPolicy" and (r.namespace or chart.namespace) != ns:
                continue
            sel = ((r.body.get("spec") or {}).get("endpointSelector") or {}).get("matchLabels") or {}
            keys = [str(k).removeprefix("k8s:").removeprefix("any:") for k in sel]
            plain = {str(k).removeprefix("k8s:").removeprefix("any:"): str(v) for k, v in sel.items()}
            if keys and all(labels.get(k) == v for k, v in plain.items() if not k.startswith("io.")):
                out.append((f"{r.kind}/{r.namespace or chart.namespace}/{r.name}", keys))
    return out


def race(trace: Trace, charts: Mapping[str, ChartRelease], tgts: Sequence[tuple[str, dict[str, str]]], start: float) -> str | None:
    """The ordering race of the baseline run, if any: a policy selecting a target workload's pods
    created after the workload (Helm applies CRD-backed kinds last)."""
    created = {e.obj: e.time for e in trace if e.what == "created" and e.time >= start}
    for ref, labels in tgts:
        for pol, _keys in _selecting_policies(charts, ref, labels):
            tw, tp = created.get(ref), created.get(pol)
            if tw is not None and tp is not None and tp > tw:
                return f"{pol} is created {tp - tw:.2f} s after {ref}"
    return None


def _has_dns_rules(charts: Mapping[str, ChartRelease]) -> bool:
    """Whether a Cilium policy of the charts sends DNS through the proxy (``rules.dns``)."""
    for chart in charts.values():
        for r in chart.resources:
            if r.kind in CILIUM_POLICIES and '"dns"' in repr(r.body).replace("'", '"'):
                return True
    return False


def enumerate_hypotheses(
    obs: Observation,
    profile: ClusterProfile,
    charts: Mapping[str, ChartRelease],
    *,
    provisioners: Sequence[str],
    start: float,
    trace: Trace | None = None,
) -> list[Hypothesis]:
    """Every hypothesis for this observation, chart and profile, the baseline first.

    ``provisioners`` are the profile's external provisioners; ``start`` is when the upgrade (or
    install) begins in the baseline run (``trace``), the origin of stall and outage windows.
    """
    tgts = targets(obs, charts)
    raced = race(trace, charts, tgts, start) if trace is not None else None
    hs: list[Hypothesis] = [
        Hypothesis(
            "baseline",
            "baseline",
            f"the ordering race alone ({raced})" if raced else "no fault: the profile's latencies alone",
            PRIORS["baseline"],
            mechanism="the profile's latency distributions (Monte Carlo), no fault",
        )
    ]
    cilium = profile.cni.type == "cilium"
    for ref, labels in tgts:
        m = _match(ref)
        short = ref.split("/", 1)[1]
        hs.append(
            Hypothesis(
                f"container-exit:{short}",
                "container-exit",
                f"{ref} fails by itself (its containers exit 1 on every attempt)",
                PRIORS["container-exit"] / len(tgts),
                ({"containerExit": {"match": m, "exitCode": 1, "message": "error"}},),
                mechanism="scenario fault containerExit",
            )
        )
        hs.append(
            Hypothesis(
                f"image-pull:{short}",
                "image-pull",
                f"{ref}'s image cannot be pulled",
                PRIORS["image-pull"] / len(tgts),
                ({"imagePull": {"match": m, "error": "failed to pull and unpack image: not found"}},),
                mechanism="scenario fault imagePull (ErrImagePull, then the kubelet's back-off)",
            )
        )
        if not cilium:
            continue
        for pol, keys in _selecting_policies(charts, ref, labels):
            key = next((k for k in reversed(keys) if not k.startswith("io.")), keys[-1])
            hs.append(
                Hypothesis(
                    f"label-filter:{pol}",
                    "label-filter",
                    f"the policy does not apply to the pods: the identity label filter drops "
                    f"{key}, so {pol} selects no pod of {ref}",
                    PRIORS["label-filter"] / len(tgts),
                    cni={"identityLabels": [*profile.cni.identity_labels, f"k8s:!{key}"]},
                    mechanism="cilium pkg/labelsfilter/filter.go (the agent's labels option); cilium/cilium#18878",
                )
            )
        hs.append(
            Hypothesis(
                f"endpoint-init:{short}",
                "endpoint-init",
                f"the policy does not apply to the pods: {ref}'s endpoints never leave reserved:init",
                PRIORS["endpoint-init"] / len(tgts),
                ({"endpointInit": {"match": m}},),
                mechanism="scenario fault endpointInit; cilium/cilium#35993, #30524",
            )
        )
    if cilium and tgts:
        backends = len(profile.addressing.apiserver_backends)
        hs.append(
            Hypothesis(
                "apiserver-identity:all",
                "apiserver-identity",
                "the API server backends lack the kube-apiserver identity (all of them)",
                PRIORS["apiserver-identity"] * (0.6 if backends > 1 else 1.0),
                ({"apiserverIdentity": {"backends": "all"}},),
                mechanism="scenario fault apiserverIdentity; cilium pkg/k8s/watchers; cilium/cilium#24502, #25172, #37298",
            )
        )
        if backends > 1:
            hs.append(
                Hypothesis(
                    "apiserver-identity:one",
                    "apiserver-identity",
                    f"one of the {backends} API server backends lacks the kube-apiserver identity",
                    PRIORS["apiserver-identity"] * 0.4,
                    ({"apiserverIdentity": {"backends": 1}},),
                    mechanism="scenario fault apiserverIdentity (one backend)",
                )
            )
        for s in STALLS:
            hs.append(
                Hypothesis(
                    f"agent-stall:{s:g}s",
                    "agent-stall",
                    f"the Cilium agents import no policy for {s:g} s from the start",
                    PRIORS["agent-stall"] / len(STALLS),
                    ({"agentStall": {"node": "*", "from": round(start, 3), "to": round(start + s, 3)}},),
                    mechanism="scenario fault agentStall; cilium/cilium#31497, #29795",
                )
            )
    if cilium and tgts and _has_dns_rules(charts):
        hs.append(
            Hypothesis(
                "dns-proxy",
                "dns-proxy",
                f"the Cilium DNS proxy is not ready for {OUTAGE_SECONDS:g} s from the start (an agent restart)",
                PRIORS["dns-proxy"],
                ({"dnsProxy": {"node": "*", "from": round(start, 3), "to": round(start + OUTAGE_SECONDS, 3)}},),
                mechanism="scenario fault dnsProxy; cilium pkg/fqdn/dnsproxy; cilium/cilium#11004, #21059",
            )
        )
    if tgts or obs.helm_release is not None:
        hs.append(
            Hypothesis(
                "apiserver-outage",
                "apiserver-outage",
                f"the API server is unreachable for {OUTAGE_SECONDS:g} s from the start",
                PRIORS["apiserver-outage"],
                ({"apiserverOutage": {"from": round(start, 3), "to": round(start + OUTAGE_SECONDS, 3)}},),
                mechanism="scenario fault apiserverOutage",
            )
        )
    for prov in provisioners:
        share = PRIORS["provisioner"] / (2 * len(provisioners))
        hs.append(
            Hypothesis(
                f"provisioner-error:{prov}",
                "provisioner",
                f"the provisioner {prov} fails every attempt",
                share,
                ({"provisioner": {"name": prov, "error": "rpc error: code = Internal desc = could not create volume"}},),
                mechanism="scenario fault provisioner (error)",
            )
        )
        hs.append(
            Hypothesis(
                f"provisioner-slow:{prov}",
                "provisioner",
                f"the provisioner {prov} takes 10 minutes per volume",
                share,
                ({"provisioner": {"name": prov, "delay": 600}},),
                mechanism="scenario fault provisioner (delay)",
            )
        )
    return hs


def limit(hs: Sequence[Hypothesis], most: int | None) -> list[Hypothesis]:
    """The baseline and the ``most - 1`` likeliest others a priori (stable order on ties)."""
    if most is None or most >= len(hs):
        return list(hs)
    rest = sorted(hs[1:], key=lambda h: -h.prior)[: max(0, most - 1)]
    keep = {h.id for h in rest}
    return [hs[0], *(h for h in hs[1:] if h.id in keep)]
