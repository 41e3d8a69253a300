"""Network races: a workload that starts before the policy granting its needs is in effect.

HS101 workload-before-policy
    Helm created the workload before the policy that grants what it needs (a CRD-backed kind
    such as CiliumNetworkPolicy is applied after every built-in kind, Job included: helm/helm
    pkg/release/v1/util/kind_sorter.go), and the pod's endpoint was up before that policy was
    in effect. Where the CNI drops what no policy allows (Cilium ``policyEnforcementMode:
    always``, cilium/cilium Documentation/security/policy/intro.rst) its first connections are
    denied.
HS112 policy-propagation-race
    The policy was created first but took effect only after the pod's endpoint was up (policy
    propagation, cilium/cilium pkg/metrics policy_implementation_delay).

Evidence is the trace: ``behaviour`` sentences say which policy grants which need, ``created``
and ``policy-in-effect`` events give the order, ``connect-denied`` / ``connect-timeout`` /
``connected`` (attempt > 1) say whether it bit and how it ended. Denials of a container that
runs a wait loop (an init container polling its target) are the intended behaviour and do not
count.
"""

from __future__ import annotations

import re

from msgspec import Struct, field

from helmsim.cluster.engine import Simulation
from helmsim.cluster.trace import TraceEvent
from helmsim.diagnose import fixes
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix, Severity, Step, step
from helmsim.diagnose.registry import rule
from helmsim.diagnose.rules.programs import consequences

_NEEDS = re.compile(
    r"^(?P<container>[^:]+): needs (?P<need>.+?): "
    r"(?P<kind>CiliumNetworkPolicy|CiliumClusterwideNetworkPolicy|NetworkPolicy) (?P<ref>\S+) allows"
)
_WAITS = re.compile(r"^(?P<container>[^:]+): waits for ")


class Race(Struct):
    """A pod whose granting policy came into effect after the pod could send."""

    pod: str
    owner: str
    hr_ref: str
    policy: str
    needs: list[str]
    sandbox: TraceEvent
    policy_created: TraceEvent | None
    in_effect: TraceEvent | None
    owner_created: TraceEvent | None
    denied: list[TraceEvent] = field(default_factory=list)
    gave_up: list[TraceEvent] = field(default_factory=list)
    rescued: TraceEvent | None = None

    @property
    def ordering(self) -> bool:
        """Helm created the workload before the policy."""
        if self.policy_created is None or self.owner_created is None:
            return False
        return self.owner_created.id < self.policy_created.id


def races(run: ProfileRun) -> list[Race]:
    """Every (workload, policy) pair whose policy was not in effect when the pod came up."""
    behaviours: dict[str, list[TraceEvent]] = {}
    for ev in run.trace:
        if ev.what == "behaviour" and ev.obj.startswith("Pod/"):
            behaviours.setdefault(ev.obj, []).append(ev)
    found: dict[tuple[str, str], Race] = {}
    for pod, evs in behaviours.items():
        waiters = {m["container"] for e in evs if (m := _WAITS.match(e.message))}
        grants: dict[str, list[str]] = {}
        for e in evs:
            m = _NEEDS.match(e.message)
            if m and m["container"] not in waiters:
                kind, ref = m["kind"], m["ref"]
                grants.setdefault(f"{kind}/{ref}", []).append(m["need"])
        if not grants:
            continue
        owner = run.owner_of_pod(pod)
        if owner is None:
            continue
        located = run.resource(owner)
        if located is None:
            continue
        sandbox = evs[0]
        for policy, needs in grants.items():
            if run.resource(policy) is None:
                continue  # a cluster policy: in effect from the start
            in_effect = run.first(what="policy-in-effect", obj=policy)
            if in_effect is not None and in_effect.time <= sandbox.time:
                continue
            key = (owner, policy)
            race = found.get(key)
            if race is None:
                race = Race(
                    pod=pod,
                    owner=owner,
                    hr_ref=located[0],
                    policy=policy,
                    needs=needs,
                    sandbox=sandbox,
                    policy_created=run.created_by_helm(policy),
                    in_effect=in_effect,
                    owner_created=run.created_by_helm(owner),
                )
                found[key] = race
            limit = in_effect.time if in_effect is not None else float("inf")
            for e in run.events(obj=pod):
                if e.time > limit + 1e-9 or e.data.get("container") in waiters:
                    continue
                if e.what == "connect-denied":
                    race.denied.append(e)
                elif e.what == "connect-timeout":
                    race.gave_up.append(e)
            if race.rescued is None:
                race.rescued = next(
                    (
                        e
                        for e in run.events(what="connected", obj=pod)
                        if int(e.data.get("attempt", 1)) > 1
                    ),
                    None,
                )
    return list(found.values())


def _chain(run: ProfileRun, race: Race) -> list[Step]:
    out: list[Step] = []
    if race.owner_created is not None:
        out.append(step(race.owner_created, "created by Helm"))
    if race.policy_created is not None:
        why = (
            " (after the workload: Helm applies CRD-backed kinds after every built-in kind)"
            if race.ordering
            else ""
        )
        out.append(step(race.policy_created, f"created by Helm{why}"))
    out.append(step(race.sandbox, f"endpoint up, {race.policy.split('/')[0]} not in effect yet"))
    if race.denied:
        first = race.denied[0]
        out.append(step(first, first.message.split(": ", 1)[-1]))
    if race.in_effect is not None:
        out.append(step(race.in_effect, "in effect"))
    if race.gave_up:
        g = race.gave_up[0]
        out.append(step(g))
        exited = next(
            (e for e in run.events(what="container-exited", obj=race.pod) if e.time >= g.time), None
        )
        if exited is not None:
            out.append(step(exited))
    elif race.rescued is not None:
        out.append(
            step(
                race.rescued,
                f"connected on attempt {race.rescued.data.get('attempt')}: a retransmit made it",
            )
        )
    failed = next(
        (
            e
            for e in run.trace
            if e.obj == race.owner
            and e.what == "event"
            and e.data.get("reason") in ("BackoffLimitExceeded", "DeadlineExceeded")
        ),
        None,
    )
    if failed is not None:
        out.append(step(failed, f"{failed.data.get('reason')}: {failed.message}"))
    if not run.ready(race.hr_ref):
        out.extend(run.failure_tail(race.hr_ref))
    return out


def _candidate(run: ProfileRun, race: Race, rule_id: str) -> Candidate | None:
    if not race.denied:
        return None
    ready = run.ready(race.hr_ref)
    cni = run.profile.cni
    mode = (
        f"{cni.type} CNI, policyEnforcementMode {cni.policy_enforcement_mode}"
        if cni.type == "cilium"
        else f"{cni.type} CNI"
    )
    target = race.denied[0].data.get("target", "its needs")
    what = f"{race.owner} starts before {race.policy} is in effect" + (
        " (Helm creates the policy after the workload)"
        if race.ordering
        else " (policy propagation is slower than the pod)"
    )
    if race.gave_up and not ready:
        severity = Severity.error
        end = f"it gives up ({race.gave_up[0].message.split(': ', 1)[-1]}) and the release ends {run.outcome(race.hr_ref).outcome}"
    elif race.gave_up:
        severity = Severity.warning
        end = "the run fails and a retry succeeds: Ready by luck of timing"
    else:
        severity = Severity.warning
        end = "a retransmit makes it: Ready by luck of timing"
    if run.variant == "tight":
        seconds = run.in_effect_delay(race.policy)
        msg = (
            f"{what}. Under {run.name} ({mode}) with nominal latencies the image pull covers the gap, so it gets Ready by "
            f"luck of timing; with the image already on the node and policy propagation at its upper bound"
            + (f" ({seconds:g}s)" if seconds is not None else "")
            + f" its egress to {target} is denied and {end.split(': Ready by luck')[0]}"
        )
    else:
        msg = f"{what}; under {run.name} ({mode}) its egress to {target} is denied and {end}"
    fix_list = []
    if race.ordering:
        fix_list.append(
            Fix(
                f'render {race.policy} as a hook: helm.sh/hook: pre-install,pre-upgrade, helm.sh/hook-weight: "-5" '
                "(it then exists before any manifest object; policy propagation can still lag)",
                fixes.key("policy-as-hook", race.policy),
            )
        )
    denied_target = str(race.denied[0].data.get("target") or "")
    need = (
        denied_target
        if denied_target in race.needs or denied_target == "kube-apiserver"
        else (race.needs[0] if race.needs else "kube-apiserver")
    )
    fix_list.append(
        Fix(
            f"add a bounded init container to {race.owner} that waits for {need} "
            f"({fixes.wait_script(need)}): flavour-independent, also covers slow propagation",
            fixes.key("init-wait", race.owner, need),
        )
    )
    return Candidate(
        rule_id, race.hr_ref, race.owner, severity, msg, _chain(run, race), fix_list, run.variant
    )


@rule(
    "HS101",
    "workload-before-policy",
    "A workload starts before the network policy that grants its needs",
)
def workload_before_policy(run: ProfileRun) -> list[Candidate]:
    out = [c for r in races(run) if r.ordering and (c := _candidate(run, r, "HS101"))]
    return out


@rule(
    "HS112",
    "policy-propagation-race",
    "A workload's policy exists but is not yet in effect when the pod starts",
)
def policy_propagation_race(run: ProfileRun) -> list[Candidate]:
    return [c for r in races(run) if not r.ordering and (c := _candidate(run, r, "HS112"))]


def has_race_window(run: ProfileRun) -> bool:
    """Whether some pod came up before its granting policy was in effect (worth a tight run)."""
    return bool(races(run))


class RacesSettled:
    """``stop`` for a tight run (``simulate(stop=…)``): true once :func:`races` can no longer
    find a denied connection, so HS101 and HS112 have nothing to report whatever happens next.

    :func:`races` counts a pod's ``connect-denied`` only up to the first ``policy-in-effect`` of
    the chart policy granting its need, and only for pods up before it. Once every chart policy
    had its first ``policy-in-effect`` strictly before now and no connection was denied so far,
    every later event is past each of those limits: each race keeps an empty ``denied`` list
    and :func:`_candidate` makes nothing of it. A tight run of a release that stalls (pods that
    do not fit) then stops seconds in instead of retrying the pods until Helm's timeout.
    """

    def __init__(self, policies: set[str]) -> None:
        self._pending = set(policies)  # chart policies not yet in effect ("Kind/ns/name")
        self._last = 0.0  # the latest first policy-in-effect seen
        self._read = 0  # trace events read so far
        self._denied = False

    def __call__(self, sim: Simulation) -> bool:
        trace = sim.trace
        for i in range(self._read, len(trace)):
            e = trace[i]
            if e.what == "connect-denied":
                self._denied = True
            elif e.what == "policy-in-effect" and e.obj in self._pending:
                self._pending.discard(e.obj)
                self._last = max(self._last, e.time)
        self._read = len(trace)
        # events still pending at ``now`` happen at ``now`` or later: past every limit (+1e-9)
        return not self._denied and not self._pending and sim.now > self._last + 1e-6


@rule(
    "HS113",
    "egress-never-allowed",
    "A workload's connections are denied and no policy of the release ever allows them",
)
def egress_never_allowed(run: ProfileRun) -> list[Candidate]:
    """Pods that give up on a connection no policy grants (not a race: nothing arrives later).

    Under a default-deny CNI (Cilium ``policyEnforcementMode: always``, or a namespace with a
    default-deny NetworkPolicy) a pod that needs the API server or a name and that no policy
    selects for that egress is dropped on every attempt.
    """
    racing = {(r.pod, str(d.data.get("target"))) for r in races(run) for d in r.denied}
    out: dict[str, Candidate] = {}
    # the program gave up on the connection, or the kubelet killed it (a liveness or startup
    # probe) while it was still connecting
    ends = [
        e
        for e in run.trace
        if e.what == "connect-timeout"
        or (e.what == "probe-killed" and str(e.data.get("doing", "")).startswith("connecting to "))
    ]
    for ev in ends:
        if not ev.obj.startswith("Pod/"):
            continue
        wanted = str(ev.data.get("doing", "")).removeprefix("connecting to ") if ev.what == "probe-killed" else None
        denial = next(
            (
                d
                for d in run.events(what="connect-denied", obj=ev.obj)
                if d.time <= ev.time and (wanted is None or str(d.data.get("target")) == wanted)
            ),
            None,
        )
        if denial is None:
            continue
        target = str(denial.data.get("target"))
        if (ev.obj, target) in racing:
            continue
        later = next(
            (
                c
                for c in run.events(what="connected", obj=ev.obj)
                if str(c.data.get("target")) == target
            ),
            None,
        )
        if later is not None:
            continue
        owner = run.owner_of_pod(ev.obj)
        located = run.resource(owner) if owner else None
        if owner is None or located is None or owner in out:
            continue
        hr_ref = located[0]
        ready = run.ready(hr_ref)
        chain = [step(denial, denial.message.split(": ", 1)[-1]), step(ev)]
        exited = next(
            (e for e in run.events(what="container-exited", obj=ev.obj) if e.time >= ev.time), None
        )
        if exited is not None:
            chain.append(step(exited))
        # what the denied need did to the program: its exit, the kubelet's back-off, the probes
        clause, steps = consequences(run, owner, need=target, dropped_first=True)
        known = {s.event_id for s in chain}
        chain.extend(s for s in steps if s.event_id not in known)
        chain.sort(key=lambda s: (s.time, s.event_id or 0))
        if not ready:
            chain.extend(run.failure_tail(hr_ref))
        msg = (
            f"{_never_allowed(run, owner, target, denial)}: every attempt is dropped"
            + clause
            + (f"; the release ends {run.outcome(hr_ref).outcome}" if not ready else "")
        )
        out[owner] = Candidate(
            "HS113",
            hr_ref,
            owner,
            Severity.error if not ready else Severity.warning,
            msg,
            chain,
            [_allow_fix(owner, target, denial)],
            run.variant,
        )
    _still_dropped_at_ready(run, racing, out)
    return list(out.values())


def _still_dropped_at_ready(run: ProfileRun, racing: set[tuple[str, str]], out: dict[str, Candidate]) -> None:
    """Containers of a release that got Ready while every attempt of theirs was still being
    dropped, with no policy on its way (not a race): the release's readiness does not wait for
    them (no probe covers the connection), so the run ends before their dial timeout; once it
    expires the program gives up after the release is Ready. A warning."""
    for denial in run.events(what="connect-denied"):
        target = str(denial.data.get("target"))
        if not denial.obj.startswith("Pod/") or (denial.obj, target) in racing:
            continue
        owner = run.owner_of_pod(denial.obj)
        located = run.resource(owner) if owner else None
        if owner is None or located is None or owner in out or not run.ready(located[0]):
            continue
        if any(str(c.data.get("target")) == target for c in run.events(what="connected", obj=denial.obj)):
            continue
        if any(
            e.what in ("connect-timeout", "probe-killed") for e in run.events(obj=denial.obj) if e.time >= denial.time
        ):
            continue  # the loop above told what its end did
        hr_ref = located[0]
        container = str(denial.data.get("container") or "") or denial.obj
        dropped = [
            d
            for d in run.events(what="connect-denied", obj=denial.obj)
            if str(d.data.get("target")) == target and (str(d.data.get("container") or "") or d.obj) == container
        ]
        msg = (
            f"{_never_allowed(run, owner, target, denial)}: {len(dropped)} attempt"
            f"{'s' if len(dropped) > 1 else ''} of {container} dropped by t={dropped[-1].time:g}s, when the release was "
            f"already Ready (no probe waits for that connection); at its dial timeout the program gives up after the "
            "release is Ready, so what it does for the release (a sidecar's sync, a reload) never happens"
        )
        first = step(dropped[0], dropped[0].message.split(": ", 1)[-1])
        out[owner] = Candidate("HS113", hr_ref, owner, Severity.warning, msg, [first], [_allow_fix(owner, target, denial)], run.variant)


def _ingress_policies(denial: TraceEvent | None) -> str | None:
    """The policies that isolated the destination for ingress, when that is what dropped the
    connection (the egress was allowed), else None."""
    if denial is None or not str(denial.data.get("reason", "")).startswith("ingress to "):
        return None
    return ", ".join(str(p) for p in denial.data.get("decided_by") or ()) or "a policy of the destination"


def _never_allowed(run: ProfileRun, owner: str, target: str, denial: TraceEvent | None = None) -> str:
    cni = run.profile.cni
    policies = _ingress_policies(denial)
    if policies is not None:
        return (
            f"{owner} needs {target} but {policies} isolates the destination's pods for ingress and no rule "
            f"admits {owner}'s pods (their egress is allowed)"
        )
    return (
        f"{owner} needs {target} but under {run.name} ({cni.type} CNI, policyEnforcementMode "
        f"{cni.policy_enforcement_mode}) no policy allows that egress for its pods"
    )


def _allow_fix(owner: str, target: str, denial: TraceEvent | None = None) -> Fix:
    policies = _ingress_policies(denial)
    if policies is not None:
        return Fix(
            f"let {policies} admit the pods of {owner} on {target}'s port: give them the labels its ingress "
            "`from` selects, or add a rule that selects them"
        )
    return Fix(
        f"add a network policy of the release that selects the pods of {owner} and allows egress to {target}"
        f"{'' if target == 'dns' else ' (and DNS)'}, created before the workload (same kind group or a lower hook weight)"
    )
