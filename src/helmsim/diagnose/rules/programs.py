"""Programs that cannot work: what a container needed, why it failed, and what followed.

HS116 program-need-unmet
    A program the behaviour catalog describes (cert-manager's startupapicheck, cainjector,
    kube-webhook-certgen, kubectl wait, …) checked the cluster for something it needs — an API
    served, a ready webhook, an object, a condition — and gave up without it: its runs end with
    the program's own error and exit code, and the Job, hook or workload fails.

Evidence is the trace of the running path (helmsim.cluster.running): ``need-failed`` (the need
or check that ended a run, with the program's error and exit code), ``program-waiting``,
``probe-failed``, the kubelet's ``BackOff`` events. :func:`consequences` turns them into the
sentence and chain steps that HS113 (a denied connection) also uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from helmsim.cluster.trace import TraceEvent
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix, Severity, Step, step
from helmsim.diagnose.registry import rule


def pods_of(run: ProfileRun, owner: str) -> list[str]:
    """The pods (``Pod/ns/name``) the controller of release object ``owner`` created."""
    seen: dict[str, None] = {}
    for e in run.trace:
        if e.what == "created" and e.obj.startswith("Pod/") and run.owner_of_pod(e.obj) == owner:
            seen.setdefault(e.obj, None)
    return list(seen)


def _restarts(run: ProfileRun, pods: Sequence[str]) -> int:
    sim = run.result.sim
    if sim is None:
        return 0
    total = 0
    for ref in pods:
        _, ns, name = ref.split("/", 2)
        pod = sim.store.get("Pod", ns, name)
        for st in ((pod or {}).get("status") or {}).get("containerStatuses") or ():
            total = max(total, int(st.get("restartCount") or 0))
    return total


def consequences(
    run: ProfileRun, owner: str, *, need: str | None = None, named: bool = True
) -> tuple[str, list[Step]]:
    """What the failing need did to ``owner``'s pods: how the program ended, the kubelet's
    back-off, the probes; as a clause (``"; …"``, the program called "it" unless ``named``)
    and chain steps in time order."""
    pods = set(pods_of(run, owner))
    evs = [e for e in run.trace if e.obj in pods]
    failed = [e for e in evs if e.what == "need-failed" and (need is None or e.data.get("need") == need)]
    waiting = [e for e in evs if e.what == "program-waiting" and (need is None or e.data.get("need") == need)]
    killed = [e for e in evs if e.what == "probe-killed"]
    backoff = [e for e in evs if e.what == "event" and e.data.get("reason") == "BackOff" and "restarting" in e.message]
    probes = [e for e in evs if e.what == "probe-failed"]
    parts: list[str] = []
    steps: list[TraceEvent] = []
    if failed:
        first = failed[0]
        container = first.data.get("container")
        entry = str(first.data.get("entry") or "")
        who = (f"{container} ({entry.split(' ', 1)[0]})" if entry else str(container)) if named else "it"
        runs = len(failed)
        parts.append(
            f"{who} gives up ({first.data.get('error')}) and exits {first.data.get('exitCode')}"
            + (f", {runs} runs in all" if runs > 1 else "")
        )
        steps.append(first)
    elif killed:
        first = killed[0]
        who = str(first.data.get("container")) if named else "it"
        parts.append(
            f"the kubelet kills {who} when its {first.data.get('probe')} probe has failed while it is still "
            f"{first.data.get('doing') or 'starting'} (exit 143"
            + (f", {len(killed)} runs in all)" if len(killed) > 1 else ")")
        )
        steps.append(first)
    elif waiting:
        first = waiting[0]
        who = str(first.data.get("container")) if named else "it"
        parts.append(f"{who} keeps retrying ({first.data.get('error')}) and serves nothing")
        steps.append(first)
    if backoff:
        restarts = _restarts(run, sorted(pods))
        parts.append(
            "the kubelet restarts it with its back-off (CrashLoopBackOff"
            + (f", RESTARTS {restarts} at the end)" if restarts else ")")
        )
        steps.append(backoff[0])
    if probes:
        if killed and not failed:
            parts.append("so it is never Ready")
        else:
            parts.append(f"its {probes[0].data.get('probe')} probe fails while it is not serving, so it is never Ready")
        steps.insert(0, probes[0])
    text = ("; " + ", ".join(parts)) if parts else ""
    return text, [step(e) for e in sorted(steps, key=lambda e: e.id)]


_FIXES = {
    "api": "install the CRDs that serve {what} before it runs (the chart's CRD switch such as crds.enabled=true / installCRDs=true, its crds/ directory, or a HelmRelease this one dependsOn that installs them)",
    "webhook": "make sure the webhook it calls is ready before it runs: its Deployment Available and its Service selecting ready pods (a hook weight after the webhook, or a HelmRelease that dependsOn the webhook's)",
    "object": "create {what} before it runs (a lower hook weight, or an earlier kind group)",
}


def _check_kind(need: str) -> str:
    if need.endswith(" API served"):
        return "api"
    if need.startswith("the admission webhooks for "):
        return "webhook"
    return "object"


@rule(
    "HS116",
    "program-need-unmet",
    "A program gives up because something it checks for in the cluster is missing",
)
def program_need_unmet(run: ProfileRun) -> list[Candidate]:
    """Containers whose runs ended on a check (not a connection): an API not served, a webhook
    not ready, an object missing, a condition never met."""
    out: dict[tuple[str, str], Candidate] = {}
    for ev in run.events(what="need-failed"):
        if ev.data.get("network") or not ev.obj.startswith("Pod/"):
            continue
        owner = run.owner_of_pod(ev.obj)
        located = run.resource(owner) if owner else None
        need = str(ev.data.get("need"))
        if owner is None or located is None or (owner, need) in out:
            continue
        hr_ref = located[0]
        ready = run.ready(hr_ref)
        clause, steps = consequences(run, owner, need=need, named=False)
        entry = str(ev.data.get("entry") or "")
        program = f" (catalog entry {entry.split(' ', 1)[0]})" if entry else ""
        msg = (
            f"{owner}'s container {ev.data.get('container')}{program} needs {need}, which the cluster "
            f"does not have when it runs{clause}"
            + (f"; the release ends {run.outcome(hr_ref).outcome}" if not ready else "")
        )
        chain = [*steps]
        if not ready:
            chain.extend(run.failure_tail(hr_ref))
        kind = _check_kind(need)
        what = need.removeprefix("the ").removesuffix(" served").removesuffix(" present")
        if kind == "api":
            gv, _, api_kind = what.removesuffix(" API").rpartition("/")
            what = f"{api_kind} ({gv})"
        out[(owner, need)] = Candidate(
            "HS116",
            hr_ref,
            owner,
            Severity.error if not ready else Severity.warning,
            msg,
            chain,
            [Fix(_FIXES[kind].format(what=what))],
            run.variant,
        )
    return list(out.values())
