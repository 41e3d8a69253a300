"""Release-level outcomes: dependencies, timeouts, missing CRDs, and the catch-all.

HS100 release-not-ready
    The release does not get Ready and no more specific rule explains why (the checker emits it
    only when no other error names the release under that profile).
HS106 dependents-blocked
    A HelmRelease is never reconciled because one it ``dependsOn`` is not Ready
    (fluxcd/helm-controller internal/controller/helmrelease_controller.go checkDependencies:
    "dependency '<ns>/<name>' is not ready"), or because the Kustomization that would apply it
    never does (its own ``dependsOn`` or health checks fail).
HS110 progress-deadline-exceeds-timeout
    A Deployment's ``progressDeadlineSeconds`` (default 600: kubernetes
    pkg/apis/apps/v1/defaults.go) is longer than the release timeout, so a stuck rollout ends
    in "timeout waiting for" instead of kstatus reading ProgressDeadlineExceeded as Failed
    (kubernetes-sigs/cli-utils pkg/kstatus/status/core.go deploymentConditions).
HS122 probe-delay-exceeds-timeout
    A container of a workload Helm waits for cannot be Ready before the release timeout: its
    startupProbe's (or readinessProbe's) ``initialDelaySeconds`` is at least the timeout, and the
    kubelet runs no readiness probe before the startup probe has passed (kubernetes
    pkg/kubelet/prober/worker.go: no probe before initialDelaySeconds; prober_manager.go: the
    readiness worker waits for the startup probe). bitnami odoo's ``startupProbe.enabled`` waits
    300 s, the default timeout.
HS111 custom-resource-without-crd
    A custom resource whose CRD is neither in the release (crds/ or templates) nor served by the
    cluster profile: the API server has no mapping, Helm fails with 'no matches for kind'
    (helm/helm pkg/kube/client.go Build → "resource mapping not found … ensure CRDs are installed
    first").
HS118 release-record-too-large
    Helm's release record (the chart's templates and files, the values, the rendered manifest,
    gzipped and base64-encoded into the Secret ``sh.helm.release.v1.<name>.v<revision>``:
    helm/helm pkg/storage/driver/util.go encodeRelease) is over the API server's 1 MiB limit on
    a Secret (kubernetes pkg/apis/core/validation/validation.go ValidateSecret) or its 3 MiB
    request limit: the install or upgrade fails before it creates any object.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from helmsim.cluster.behaviour import URL_UNREAD
from helmsim.cluster.trace import TraceEvent
from helmsim.diagnose import fixes
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix, Severity, Step, step
from helmsim.diagnose.registry import rule
from helmsim.kube.served import removal
from helmsim.manifests import Resource
from helmsim.kube.workloads import pod_template

DEFAULT_PROGRESS_DEADLINE = 600  # kubernetes pkg/apis/apps/v1/defaults.go SetDefaults_Deployment
_NAMED_OBJECT = re.compile(r"\[?([A-Z][A-Za-z]+/[^\s,\]]+(?:/[^\s,\]]+)?) status:")
# helm/helm pkg/kube/client.go: "… failed for object <ns>/<name> <group/version>, Kind=<Kind>"
# (server-side apply), and the API server's StatusError "<Kind>.<group> \"<name>\" is invalid"
_APPLY_OBJECT = re.compile(r"failed for object (?:(?P<ns>[^/\s]+)/)?(?P<name>[^\s/]+) [^\s]+, Kind=(?P<kind>[A-Za-z]+)")
_INVALID_OBJECT = re.compile(r"\b(?P<kind>[A-Z][A-Za-z]+)(?:\.[a-z0-9.-]+)? \"(?P<name>[^\"]+)\" is invalid")
_TIMEOUT_OBJECTS = re.compile(r"timeout waiting for: \[(?P<objs>[^\]]*)\]")


@rule(
    "HS100",
    "release-not-ready",
    "The release does not get Ready (no more specific rule explains it)",
)
def release_not_ready(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for o in run.result.releases:
        hr_ref = f"{o.namespace}/{o.name}"
        if not o.simulated or o.outcome in ("Ready", "Blocked"):
            continue
        chain = run.failure_tail(hr_ref)
        msg = f"HelmRelease {hr_ref} ends {o.outcome}: {o.message}"
        # point at the first release object Helm's error names, else at the HelmRelease
        named = [m.group(1) for m in _NAMED_OBJECT.finditer(o.message)]
        named += [
            f"{m.group('kind')}/{m.group('ns')}/{m.group('name')}" if m.group("ns") else f"{m.group('kind')}/{m.group('name')}"
            for m in _APPLY_OBJECT.finditer(o.message)
        ]
        named += [f"{m.group('kind')}/{o.namespace}/{m.group('name')}" for m in _INVALID_OBJECT.finditer(o.message)]
        obj = next((n for n in named if run.resource(n) is not None), f"HelmRelease/{hr_ref}")
        fix_list = []
        if "must contain at least one letter (a-z)" in o.message:
            # k8s.io/apimachinery pkg/util/validation/validation.go IsValidPortName: a port given
            # as a string is a port name (bitnami's discourse and odoo quote their policy ports)
            fix_list.append(Fix(f"write the port of {obj} as a number: quoted, it is a port name, which needs a letter"))
        out.append(Candidate("HS100", hr_ref, obj, Severity.error, msg, chain, fix_list, run.variant))
    return out


@rule(
    "HS106",
    "dependents-blocked",
    "HelmReleases that dependsOn a release that does not get Ready are blocked",
)
def dependents_blocked(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    outcomes = {f"{o.namespace}/{o.name}": o for o in run.result.releases}
    for o in run.result.releases:
        if o.outcome != "Blocked":
            continue
        hr_ref = f"{o.namespace}/{o.name}"
        hr = run.input(hr_ref).hr
        blocking = [
            d for d in hr.dependencies() if d in outcomes and outcomes[d].outcome != "Ready"
        ]
        chain: list[Step] = []
        for dep in blocking:
            if outcomes[dep].simulated:
                chain.extend(run.failure_tail(dep))
        last = [
            e
            for e in run.events(what="condition", obj=f"HelmRelease/{hr_ref}")
            if e.data.get("reason") == "DependencyNotReady"
        ]
        if last:
            chain.append(step(last[0], last[0].message))
        if not blocking and o.reason == "NotApplied":
            out.append(_not_applied(run, hr_ref, o.message))
            continue
        if o.reason == "Suspended":
            out.append(_suspended(run, hr_ref))
            continue
        via = ", ".join(
            f"{d} ({'suspended' if outcomes[d].reason == 'Suspended' else outcomes[d].outcome})" for d in blocking
        ) or "a dependency"
        msg = f"HelmRelease {hr_ref} is never reconciled: it dependsOn {via}"
        out.append(
            Candidate(
                "HS106",
                hr_ref,
                f"HelmRelease/{hr_ref}",
                Severity.error,
                msg,
                chain,
                [
                    Fix(
                        f"fix the release it depends on ({', '.join(blocking) or 'see its findings'}); this one follows"
                    )
                ],
                run.variant,
                roots=blocking_roots(run, hr_ref),
            )
        )
    return out


_KS_DEPENDENCY = re.compile(r"dependency '([^']+)' is not ready")


def _first_warning(run: ProfileRun, obj: str) -> TraceEvent | None:
    """The first Warning event of ``Kind/ns/name`` or of the ReplicaSets and Pods named after it
    (a Deployment's ``<name>-<hash>``, its pods' ``<name>-<hash>-<suffix>``)."""
    kind, _, rest = obj.partition("/")
    ns, _, name = rest.rpartition("/")
    owned = (f"ReplicaSet/{ns}/{name}-", f"Pod/{ns}/{name}-")
    return next(
        (
            e
            for e in run.events(what="event")
            if e.data.get("type") == "Warning" and (e.obj == obj or e.obj.startswith(owned))
        ),
        None,
    )


def _not_applied(run: ProfileRun, hr_ref: str, message: str) -> Candidate:
    """HS106 for a HelmRelease its Kustomization never applied: the Kustomizations that gate it,
    down the ``dependsOn`` chain to the one that fails for a reason of its own
    (fluxcd/kustomize-controller internal/controller/kustomization_controller.go
    checkDependencies: "dependency '<ns>/<name>' is not ready"), and what that one says."""
    by_ref = {f"{k.namespace}/{k.name}": k for k in run.result.kustomizations}
    gate = re.search(r"Kustomization (\S+) has not applied it", message)
    ks = by_ref.get(gate.group(1)) if gate else None
    seen: set[str] = set()
    while ks is not None and ks.reason == "DependencyNotReady" and f"{ks.namespace}/{ks.name}" not in seen:
        seen.add(f"{ks.namespace}/{ks.name}")
        dep = _KS_DEPENDENCY.search(ks.message)
        nxt = by_ref.get(dep.group(1)) if dep else None
        if nxt is None:
            break
        ks = nxt
    chain: list[Step] = []
    msg = message
    fix = "make the Kustomization that gates it Ready (see its conditions); this one follows"
    if ks is not None and ks.ready != "True":
        root = f"Kustomization/{ks.namespace}/{ks.name}"
        failed = [
            e
            for e in run.events(what="condition", obj=root)
            if e.message.startswith("Ready=False") and "DependencyNotReady" not in e.message
        ]
        if failed:
            chain.append(step(failed[0], failed[0].message))
        if gate is None or gate.group(1) != f"{ks.namespace}/{ks.name}":
            msg += f"; {root} is Ready=False {ks.reason}: {ks.message}"
        named = list(dict.fromkeys(m.group(1) for m in _NAMED_OBJECT.finditer(ks.message)))
        if named:
            fix = f"make what {root} waits for healthy ({', '.join(named)}: see their events); this one follows"
        for obj in named:
            warning = _first_warning(run, obj)
            if warning is not None:
                chain.append(step(warning, f"{warning.data.get('reason')}: {warning.message}"))
    applied = [
        e
        for e in run.events(what="condition", obj=f"HelmRelease/{hr_ref}")
        if e.data.get("reason") in ("DependencyNotReady", "NotApplied")
    ]
    chain.extend(step(e, e.message) for e in applied[:1])
    return Candidate(
        "HS106",
        hr_ref,
        f"HelmRelease/{hr_ref}",
        Severity.error,
        f"HelmRelease {hr_ref} is never reconciled: {msg.removeprefix(f'HelmRelease {hr_ref} is not applied: ')}",
        sorted(chain, key=lambda s: s.time),
        [Fix(fix)],
        run.variant,
    )


def _suspended(run: ProfileRun, hr_ref: str) -> Candidate:
    """A suspended HelmRelease (helmrelease_controller.go Reconcile returns before any action)."""
    dependents = sorted(
        f"{o.namespace}/{o.name}"
        for o in run.result.releases
        if hr_ref in run.input(f"{o.namespace}/{o.name}").hr.dependencies()
    )
    waiting = f"; {', '.join(dependents)} {'waits' if len(dependents) == 1 else 'wait'} for it (dependsOn)" if dependents else ""
    return Candidate(
        "HS106",
        hr_ref,
        f"HelmRelease/{hr_ref}",
        Severity.error if dependents else Severity.warning,
        f"HelmRelease {hr_ref} is suspended (spec.suspend: true): helm-controller does not reconcile it, nothing of it "
        f"is installed or upgraded{waiting}",
        [],
        [Fix("remove spec.suspend (or set it to false) when it should be reconciled (flux resume helmrelease)")],
        run.variant,
    )


def blocking_roots(run: ProfileRun, hr_ref: str) -> tuple[str, ...]:
    """The releases that block ``hr_ref`` at the root: following ``dependsOn`` through Blocked
    releases to the ones that are not Ready for a reason of their own (sorted)."""
    outcomes = {f"{o.namespace}/{o.name}": o for o in run.result.releases}
    roots: set[str] = set()
    seen = {hr_ref}
    todo = [hr_ref]
    while todo:
        ref = todo.pop()
        for dep in run.input(ref).hr.dependencies():
            o = outcomes.get(dep)
            if o is None or o.outcome == "Ready" or dep in seen:
                continue
            seen.add(dep)
            if o.outcome == "Blocked" and o.reason != "Suspended":
                todo.append(dep)
            else:
                roots.add(dep)
    return tuple(sorted(roots))


# fluxcd/pkg ssa/manager_wait.go WaitForSetWithContext: "[Kind/ns/name status: 'InProgress', …]"
_WAITED_OBJECT = re.compile(r"(?P<ref>[A-Za-z0-9]+/[^\s,\]]+) status:")


def _timed_out_resources(run: ProfileRun) -> Iterator[tuple[str, Resource, float]]:
    """``(HelmRelease, resource, timeout)`` for each release object Helm's wait timed out on in
    its release's first failed attempt (HS110, HS122)."""
    for hr_ref, chart in run.charts.items():
        timed_out = _timed_out(run, hr_ref)
        if timed_out is None:
            continue
        objs, timeout = timed_out
        for res in chart.manifest:
            if f"{res.kind}/{res.namespace}/{res.name}" in objs:
                yield hr_ref, res, timeout


def _timed_out(run: ProfileRun, hr_ref: str) -> tuple[frozenset[str], float] | None:
    """The objects (``Kind/namespace/name``) Helm's wait timed out on in the release's first
    failed attempt (its "timeout waiting for: [...]" list) and that action's timeout, or None."""
    attempt = run.first_failed_attempt(hr_ref)
    if attempt is None:
        return None
    m = _TIMEOUT_OBJECTS.search(str(attempt[1].data.get("error") or ""))
    if not m:
        return None
    action = str(run.trace[attempt[0].id].data.get("action") or "install")
    objs = frozenset(o["ref"] for o in _WAITED_OBJECT.finditer(m["objs"]))
    return objs, run.input(hr_ref).hr.timeout_for(action if action in ("install", "upgrade") else "install")


@rule(
    "HS110",
    "progress-deadline-exceeds-timeout",
    "A Deployment's progressDeadlineSeconds is longer than the release timeout",
)
def progress_deadline_exceeds_timeout(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for hr_ref, res, timeout in _timed_out_resources(run):
        if res.kind != "Deployment" or res.ref in run.refused_pods or res.ref in run.unstartable_pods:
            continue  # pods refused, or whose containers cannot be created, are not a slow rollout
        given = (res.body.get("spec") or {}).get("progressDeadlineSeconds")
        deadline = int(given or DEFAULT_PROGRESS_DEADLINE)
        default = "" if given else " (the default)"
        if deadline < timeout:
            continue
        chain: list[Step] = []
        created = run.created_by_helm(res.ref)
        if created is not None:
            chain.append(step(created, f"created by Helm (progressDeadlineSeconds {deadline})"))
        chain.extend(run.failure_tail(hr_ref))
        msg = (
            f"{res.ref} has progressDeadlineSeconds {deadline}{default} ≥ the release timeout {timeout:g}s: the rollout is still "
            "InProgress when the wait gives up, so the release times out instead of failing with ProgressDeadlineExceeded"
        )
        new_timeout = deadline + 60
        fix_list = [
            Fix(
                f"raise the HelmRelease timeout above the rollout's deadline (spec.timeout: {new_timeout}s) if the rollout "
                "is just slow",
                fixes.key("timeout", hr_ref, new_timeout),
            ),
        ]
        if timeout >= 2:  # a deadline must be a positive number of seconds below the timeout
            fix_list.append(
                Fix(f"or set progressDeadlineSeconds of {res.ref} below {timeout:g} so a stuck rollout fails fast with its reason")
            )
        out.append(
            Candidate(
                "HS110", hr_ref, res.ref, Severity.error, msg, chain, fix_list, run.variant
            )
        )
    return out


def _earliest_ready(container: dict[str, Any]) -> tuple[int, str] | None:
    """The first second after the container starts at which it can be Ready, and which probe
    sets it; None without a probe delaying it."""
    delays: list[tuple[int, str]] = []
    for name in ("startupProbe", "readinessProbe"):
        probe = container.get(name)
        if isinstance(probe, dict):
            delay = probe.get("initialDelaySeconds")
            if isinstance(delay, int) and not isinstance(delay, bool) and delay > 0:
                delays.append((delay, name))
    return max(delays) if delays else None


@rule(
    "HS122",
    "probe-delay-exceeds-timeout",
    "A container cannot be Ready before the release timeout: its probe's initial delay is longer",
)
def probe_delay_exceeds_timeout(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for hr_ref, res, timeout in _timed_out_resources(run):
        tpl = pod_template(res.body) if res.kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet") else None
        if tpl is None:
            continue
        containers = [c for c in (tpl.get("spec") or {}).get("containers") or () if isinstance(c, dict)]
        found = [(e, str(c.get("name"))) for c in containers if (e := _earliest_ready(c)) is not None and e[0] >= timeout]
        if not found:
            continue
        (delay, probe), container = max(found)
        why = (
            "; the kubelet runs no readiness probe before the startup probe has passed"
            if probe == "startupProbe"
            else ""
        )
        msg = (
            f"{res.ref}'s container {container} cannot be Ready sooner than {delay}s after it starts "
            f"({probe}.initialDelaySeconds {delay}{why}), and the release timeout is {timeout:g}s: Helm's wait "
            f"always times out; the release ends {run.outcome(hr_ref).outcome}"
        )
        chain: list[Step] = []
        created = run.created_by_helm(res.ref)
        if created is not None:
            chain.append(step(created, f"created by Helm ({container}: {probe}.initialDelaySeconds {delay})"))
        chain.extend(run.failure_tail(hr_ref))
        new_timeout = delay + 120
        fix_list = [
            Fix(
                f"raise the HelmRelease timeout above the probe's delay (spec.timeout: {new_timeout}s)",
                fixes.key("timeout", hr_ref, new_timeout),
            ),
            Fix(
                f"or lower {probe}.initialDelaySeconds and bound the start-up with failureThreshold × periodSeconds "
                "instead: the probe then passes as soon as the program serves"
            ),
        ]
        out.append(Candidate("HS122", hr_ref, res.ref, Severity.error, msg, chain, fix_list, run.variant))
    return out


@rule(
    "HS111",
    "custom-resource-without-crd",
    "A custom resource whose CRD is neither in the release nor in the cluster profile",
)
def custom_resource_without_crd(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    seen: set[str] = set()
    for ev in run.events(what="apply-error"):
        if (
            "no matches for kind" not in ev.message
            and "resource mapping not found" not in ev.message
        ):
            continue
        if ev.obj in seen:
            continue
        seen.add(ev.obj)
        located = run.resource(ev.obj)
        if located is None:
            continue
        hr_ref, res = located
        chain: list[Step] = [step(ev, ev.message)]
        if not run.ready(hr_ref):
            chain.extend(run.failure_tail(hr_ref, after=ev.time))
        article = "an" if res.api_version[:1].lower() in "aeiou" else "a"
        group = res.api_version.rpartition("/")[0]
        in_templates = next(
            (
                c
                for c in run.charts[hr_ref].manifest
                if c.kind == "CustomResourceDefinition"
                and ((c.body.get("spec") or {}).get("group") == group)
                and (((c.body.get("spec") or {}).get("names") or {}).get("kind") == res.kind)
            ),
            None,
        )
        if in_templates is not None:
            # helm/helm pkg/action/install.go: Build maps every manifest object before any is
            # created; only crds/ is applied before it
            where = f" ({in_templates.source.path})"
            msg = (
                f"{res.ref} is {article} {res.api_version} {res.kind}, and its CRD {in_templates.name}{where} is in the "
                f"release's templates: Helm maps every object before it creates any, so the kind is not served yet "
                f"under {run.name}"
            )
            fix = Fix(
                f"move the CRD of {res.kind} to the chart's crds/ directory (applied before the templates are mapped), "
                "or into a HelmRelease this one dependsOn"
            )
        elif (removed := removal(run.profile.kubernetes_version, res.api_version, res.kind)) is not None:
            # a built-in kind at a version the API server no longer serves: no CRD can help
            # (kubernetes/website deprecation-guide.md; helmsim.kube.served)
            minor, served = removed
            now = f"serves {res.kind} as {', '.join(served)}" if served else f"serves no {res.kind} at all"
            msg = (
                f"{res.ref} is {article} {res.api_version} {res.kind}, an API Kubernetes stopped serving in 1.{minor}: "
                f"{run.name} (Kubernetes {run.profile.kubernetes_version}) {now}, so Helm cannot map it"
            )
            fix = Fix(
                f"render {res.kind} with apiVersion {served[0]} (charts often pick it from .Capabilities.APIVersions; "
                "check the fields that changed between the versions)"
                if served
                else f"remove {res.kind} from the release: Kubernetes 1.{minor} removed it with no successor in its group"
            )
        else:
            msg = (
                f"{res.ref} is {article} {res.api_version} {res.kind}, but no CRD for it is in the release or served by the "
                f"cluster profile {run.name}: Helm cannot map the kind"
            )
            fix = Fix(
                f"install the CRD of {res.kind} first: put it in the chart's crds/ directory, or in a HelmRelease this one "
                "dependsOn; or add it to the cluster profile (crds:) if the cluster already has it"
            )
            fetched = [e for e in run.events(what="behaviour-assumed") if e.message.endswith(URL_UNREAD)]
            if fetched:
                # argo-workflows' pre-install hook applies its CRDs from raw.githubusercontent.com
                msg += (
                    f"; but {fetched[0].message.split(' runs `', 1)[0]} applies objects from a URL helmsim does not read: "
                    "if they include this CRD, the kind is served once that has run and this finding does not hold"
                )
                fix = Fix(
                    f"if that container installs the CRD of {res.kind}, add the CRD to the cluster profile (crds:) to "
                    "rehearse the release with it; otherwise " + fix.summary
                )
        out.append(
            Candidate("HS111", hr_ref, res.ref, Severity.error, msg, chain, [fix], run.variant)
        )
    return out


@rule(
    "HS118",
    "release-record-too-large",
    "Helm's release record is too big for the Secret it is stored in",
)
def release_record_too_large(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for hr_ref in run.charts:
        refused = run.events(what="record-refused", obj=hr_ref)
        if not refused:
            continue
        first = refused[0]
        low, high = first.data.get("stored") or (0, 0)
        largest = [(str(n), int(b)) for n, b in first.data.get("largest") or ()]
        biggest = ", ".join(f"{name} ({size:,} bytes)" for name, size in largest[:3])
        msg = (
            f"HelmRelease {hr_ref}: Helm's release record is {low:,}–{high:,} bytes once gzipped and "
            f"base64-encoded, over the API server's limit: {first.message}"
        )
        chain = [step(first, first.message), *run.failure_tail(hr_ref)]
        files = Fix(
            "keep what Helm does not need out of the chart with .helmignore (documents, archives, "
            "images), or move large templates and files into a subchart, which Helm does not store "
            f"with the release (largest stored: {biggest or 'none'})"
        )
        manifest = Fix(
            "render less into this release (split it in two, or move bulk data out of its objects): "
            "the rendered manifest is stored whole, subcharts' objects included"
        )
        # the chart's files are stored as base64 (4/3 of their bytes): lead with what is bigger
        stored_files = 4 * sum(size for _, size in largest) // 3
        fix_list = [files, manifest] if stored_files * 2 >= int(first.data.get("json") or 0) else [manifest, files]
        out.append(
            Candidate(
                "HS118", hr_ref, f"HelmRelease/{hr_ref}", Severity.error, msg,
                sorted(chain, key=lambda s: s.time), fix_list, run.variant,
            )
        )
    return out
