"""Programs that cannot work: what a container needed, why it failed, and what followed.

HS116 program-need-unmet
    A program the behaviour catalog describes (cert-manager's startupapicheck, cainjector,
    kube-webhook-certgen, kubectl wait, …) checked the cluster for something it needs — an API
    served, a ready webhook, an object, a condition — and gave up without it: its runs end with
    the program's own error and exit code, and the Job, hook or workload fails. A peer it dials
    by a name that does not resolve (a Service that does not exist: Tempo's Kafka broker) and
    an object field nothing sets (a LoadBalancer address without a load-balancer controller)
    count too.

Evidence is the trace of the running path (helmsim.cluster.running): ``need-failed`` (the need
or check that ended a run, with the program's error and exit code), ``program-waiting``,
``probe-failed``, the kubelet's ``BackOff`` events. :func:`consequences` turns them into the
sentence and chain steps that HS113 (a denied connection) also uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from helmsim.cluster.behaviour import ENV_SUFFIX, FACT_SUFFIX, STATE_SUFFIX
from helmsim.cluster.running import RBAC_NEED_PREFIX
from helmsim.cluster.trace import TraceEvent
from helmsim.diagnose import fixes
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
    run: ProfileRun,
    owner: str,
    *,
    need: str | None = None,
    named: bool = True,
    dropped_first: bool = False,
) -> tuple[str, list[Step]]:
    """What the failing need did to ``owner``'s pods: how the program ended, the kubelet's
    back-off, the probes; as a clause (``"; …"``, the program called "it" unless ``named``)
    and chain steps in time order. ``dropped_first``: quote the first run that ended on a
    dropped connection (a timeout), not an earlier one refused while the peer was not up yet."""
    pods = set(pods_of(run, owner))
    evs = [e for e in run.trace if e.obj in pods]
    failed = [e for e in evs if e.what == "need-failed" and (need is None or e.data.get("need") == need)]
    if dropped_first:
        failed.sort(key=lambda e: "connection refused" in str(e.data.get("error") or ""))  # stable
    waiting = [e for e in evs if e.what == "program-waiting" and (need is None or e.data.get("need") == need)]
    killed = [e for e in evs if e.what == "probe-killed"]
    backoff = [e for e in evs if e.what == "event" and e.data.get("reason") == "BackOff" and "restarting" in e.message]
    # a Job's pods run to completion: whether their readiness probe passes says nothing of it
    probes = [] if owner.startswith(("Job/", "CronJob/")) else [e for e in evs if e.what == "probe-failed"]
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
    "field": "make sure something sets {path} of {what} before it gives up",
    "env": (
        "set {what} in the container's env, through env[].valueFrom.secretKeyRef or envFrom.secretRef "
        "for a credential (the chart's env or extraEnv values usually take it)"
    ),
    "fact": (
        "set {path} in the container's env (a credential file mounted from a Secret; the chart's "
        "values usually take it), or run it on a cluster that provides {what} (a profile saying so)"
    ),
    "fact-only": (
        "run it on a cluster that provides {what} (a profile saying so), or configure the program so "
        "that it does not need it"
    ),
    # helm/helm pkg/action/install.go performInstall: post-install hooks run after the wait
    "state": (
        "run what leaves {what} before this program gives up: when it is a post-install or "
        "post-upgrade hook (a migration Job), Helm runs it only after its wait on this very workload, "
        "so disable the wait for the release (HelmRelease spec.install.disableWait and "
        "spec.upgrade.disableWait; the hooks then run right after the objects are applied), or "
        "make it an ordinary object of the release"
    ),
    "peer-not-ready": (
        "if {container} retries {what} rather than exiting, say so in a catalog entry with retry "
        "(.helmsim.yaml catalog:, docs/behaviour.md); otherwise start it once {what} is ready (an init "
        "container that waits for it, or a HelmRelease this one dependsOn)"
    ),
    # kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go: only a rule of a role bound to the
    # account allows the call
    "rbac": (
        "grant it {what}: a rule with that verb on that resource in a Role (or ClusterRole) bound to the "
        "ServiceAccount by a RoleBinding in that namespace (or a ClusterRoleBinding)"
    ),
    "file": (
        "set {what}: the program reads it at start and exits without it (the chart's values that render "
        "that configuration file)"
    ),
    "peer-not-ready-known": (
        "make {what} ready before {container} gives up (when its own pods never get Ready, that is "
        "the finding to fix first), or start it once {what} is ready (a HelmRelease this one dependsOn)"
    ),
    "loopback": (
        "point {container} at its peer's Service instead of the pod's own loopback, or run what "
        "serves {what} as a container of the same pod (a sidecar, such as a database proxy, "
        "declaring that port)"
    ),
    "peer": (
        "make {what} exist before it runs (install what serves it first: a HelmRelease this one "
        "dependsOn, or a subchart), or point the container's configuration at a peer that exists"
    ),
    # k8s.io/cloud-provider controllers/service/controller.go: only a load-balancer controller
    # writes status.loadBalancer.ingress; kind and bare clusters run none
    "load-balancer": (
        "give the cluster a load-balancer controller that writes {path} of {what} (the cloud "
        "provider's, MetalLB, cloud-provider-kind; a profile with loadBalancer: hostname|ip), or "
        "configure the chart not to wait for a load-balancer address (e.g. a NodePort Service)"
    ),
}


def _unresolved(run: ProfileRun, need: str) -> str:
    """Why the name of a network need does not resolve, in words."""
    if need.startswith("svc/"):
        ns, _, rest = need.removeprefix("svc/").partition("/")
        name = rest.split(":", 1)[0]
        sim = run.result.sim
        if sim is not None and sim.store.get("Service", ns, name) is not None:
            return f"the headless Service {ns}/{name} has no ready endpoints, so its name has no records"
        return f"no Service {name} in namespace {ns}"
    return f"no DNS record for {need.rsplit(':', 1)[0]}"


def _check_kind(need: str) -> str:
    if need.startswith(RBAC_NEED_PREFIX):
        return "rbac"
    if need.endswith(" set") and " in /" in need:
        return "file"
    if need.endswith(FACT_SUFFIX):
        return "fact"
    if need.endswith(ENV_SUFFIX):
        return "env"
    if need.endswith(STATE_SUFFIX):
        return "state"
    if need.endswith(" API served"):
        return "api"
    if need.startswith("the admission webhooks for "):
        return "webhook"
    if need.endswith(" set") and " with " in need:
        return "load-balancer" if " with status.loadBalancer." in need else "field"
    return "object"


def _still_waiting(run: ProfileRun) -> list[TraceEvent]:
    """The last ``program-waiting`` of each container that retries a check without a bound and
    was never Ready after it (bitnami kong waiting for the schema a post-install hook writes):
    it never gives up, so no ``need-failed`` says it."""
    last: dict[tuple[str, str], TraceEvent] = {}
    for ev in run.events(what="program-waiting"):
        if not ev.data.get("network") and ev.obj.startswith("Pod/"):
            last[(ev.obj, str(ev.data.get("container")))] = ev
    out = []
    for (pod, container), ev in last.items():
        ready = f"container {container} ready"
        if not any(e.time >= ev.time and e.message == ready for e in run.events(what="status") if e.obj == pod):
            out.append(ev)
    return out


def _is_loopback(need: str) -> bool:
    """Whether the need names the pod's own loopback (``127.0.0.1:3306``, ``localhost:5432``)."""
    from helmsim.cluster.behaviour import parse_need
    from helmsim.errors import InputError

    try:
        return parse_need(need, namespace="default").kind == "loopback"
    except InputError:
        return False


def _dropped_later(run: ProfileRun, ev: TraceEvent) -> bool:
    """Whether a later run of the container whose connection was refused at ``ev`` had the same
    need fail another way (dropped once the peer was ready): the refusal was not the cause."""
    container, need = ev.data.get("container"), ev.data.get("need")
    return any(
        e.time > ev.time
        and e.data.get("container") == container
        and e.data.get("need") == need
        and "connection refused" not in str(e.data.get("error") or "")
        for e in run.events(what="need-failed", obj=ev.obj)
    )


def _recovered(run: ProfileRun, ev: TraceEvent) -> bool:
    """Whether the container whose need failed at ``ev`` was Ready later in the same pod."""
    ready = f"container {ev.data.get('container')} ready"
    return any(e.time > ev.time and e.message == ready for e in run.events(what="status", obj=ev.obj))


@rule(
    "HS116",
    "program-need-unmet",
    "A program gives up because something it checks for in the cluster is missing",
)
def program_need_unmet(run: ProfileRun) -> list[Candidate]:
    """Containers whose runs ended on a check (an API not served, a webhook not ready, an object
    missing, a condition never met), on a peer whose name does not resolve (a Service that does
    not exist), or — when the release does not get Ready — on a peer that refused the connection
    because no endpoint of it was ready yet."""
    out: dict[tuple[str, str], Candidate] = {}
    for ev in [*run.events(what="need-failed"), *_still_waiting(run)]:
        # net/http and Go's resolver: "dial tcp: lookup <name> on <dns>: no such host" (NXDOMAIN)
        error = str(ev.data.get("error") or "")
        unresolved = bool(ev.data.get("network")) and "no such host" in error
        # a Service without a ready endpoint yet: the kernel refuses the SYN (no backend)
        refused = bool(ev.data.get("network")) and "connection refused" in error
        if (ev.data.get("network") and not (unresolved or refused)) or not ev.obj.startswith("Pod/"):
            continue
        owner = run.owner_of_pod(ev.obj)
        located = run.resource(owner) if owner else None
        need = str(ev.data.get("need"))
        if owner is None or located is None:
            continue
        loopback = refused and _is_loopback(need)
        kind = "peer" if unresolved else "loopback" if loopback else "peer-not-ready" if refused else _check_kind(need)
        if kind in ("peer", "peer-not-ready", "loopback") and _recovered(run, ev):
            continue  # a later run of it got through: its peer came up, slower is no failure
        if kind == "peer-not-ready" and _dropped_later(run, ev):
            continue  # its peer came up and a policy dropped it: HS113's finding, not this one
        # one finding per workload and check: each pod of a StatefulSet may check its own object
        key = (owner, f"{ev.data.get('container')}:{kind}:{ev.data.get('entry') or need}")
        if key in out:
            continue
        hr_ref = located[0]
        ready = run.ready(hr_ref)
        if (kind in ("peer-not-ready", "loopback") or ev.what == "program-waiting") and ready:
            continue  # it restarted or waited until its peer was up: slower, not a failure
        clause, steps = consequences(run, owner, need=need, named=False)
        entry = str(ev.data.get("entry") or "")
        program = f" (catalog entry {entry.split(' ', 1)[0]})" if entry else ""
        missing = (
            f"which does not resolve ({_unresolved(run, need)})"
            if unresolved
            else "which is the pod's own loopback, where no other container of the pod listens on that port "
            "(connection refused): no Service or other pod can answer it"
            if loopback
            else "which has no ready endpoint yet when it connects (connection refused)"
            if refused
            else "which no program has left when it runs"
            if kind == "state"
            else "which RBAC does not grant it (Forbidden)"
            if kind == "rbac"
            else "which its configuration file does not set (read from the file its ConfigMap or Secret mount holds)"
            if kind == "file"
            else "which its pod spec does not set"
            if kind == "env"
            else "which its pod spec does not set and the cluster does not provide"
            if kind == "fact" and f"{ENV_SUFFIX}, or " in need
            else "which the cluster does not provide"
            if kind == "fact"
            else "which the cluster does not have when it runs"
        )
        if refused and not entry and not loopback:
            missing += (
                ", and no behaviour is known for its image: helmsim assumed it connects once at start "
                "and exits when refused (a program that retries would wait for its peer instead)"
            )
        msg = (
            f"{owner}'s container {ev.data.get('container')}{program} needs {need}, {missing}{clause}"
            + (f"; the release ends {run.outcome(hr_ref).outcome}" if not ready else "")
        )
        chain = [*steps]
        if not ready:
            chain.extend(run.failure_tail(hr_ref))
        what = need.removeprefix("the ").removesuffix(" served").removesuffix(" present")
        path = ""
        if kind in ("field", "load-balancer"):
            what, _, path = what.removesuffix(" set").partition(" with ")
        if kind == "api":
            gv, _, api_kind = what.removesuffix(" API").rpartition("/")
            what = f"{api_kind} ({gv})"
        if kind == "state":
            what = what.removesuffix(STATE_SUFFIX)
        if kind == "env":
            what = what.removesuffix(ENV_SUFFIX)
        fix_kind = f"{kind}-known" if kind == "peer-not-ready" and entry else kind
        if kind == "fact":
            path, _, what = what.removesuffix(FACT_SUFFIX).rpartition(f"{ENV_SUFFIX}, or ")
            fix_kind = "fact" if path else "fact-only"
        if kind == "file":
            what = what.removesuffix(" set")
        out[key] = Candidate(
            "HS116",
            hr_ref,
            owner,
            Severity.error if not ready else Severity.warning,
            msg,
            chain,
            [
                Fix(
                    _FIXES[fix_kind].format(
                        what=what, path=path, container=ev.data.get("container")
                    ),
                    fixes.key("no-wait", hr_ref) if kind == "state" else None,
                )
            ],
            run.variant,
        )
    for ev in run.events(what="probe-failed"):
        if not ev.data.get("gated") or not ev.obj.startswith("Pod/"):
            continue
        owner = run.owner_of_pod(ev.obj)
        located = run.resource(owner) if owner else None
        if owner is None or located is None:
            continue
        key = (owner, f"{ev.data.get('container')}:probe-gate")
        hr_ref = located[0]
        if key in out or run.ready(hr_ref):
            continue
        entry = str(ev.data.get("entry") or "").split(" ", 1)[0]
        msg = (
            f"{owner}'s container {ev.data.get('container')} (catalog entry {entry}) serves, but answers its "
            f"{ev.data.get('probe')} probe as failed: {ev.data.get('reason')}; its pods are never Ready and the "
            f"release ends {run.outcome(hr_ref).outcome}"
        )
        chain = [step(ev, ev.message), *run.failure_tail(hr_ref)]
        fix_list = [Fix(str(ev.data.get("fix") or "make the probe pass"))]
        if ev.data.get("afterInstall"):
            fix_list.append(
                Fix(
                    "or disable Helm's wait for this release (HelmRelease spec.install.disableWait and "
                    "spec.upgrade.disableWait) and do that step after the install",
                    fixes.key("no-wait", hr_ref),
                )
            )
        out[key] = Candidate(
            "HS116", hr_ref, owner, Severity.error, msg, sorted(chain, key=lambda s: s.time), fix_list, run.variant,
        )
    return list(out.values())
