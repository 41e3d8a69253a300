"""Hooks: their failures, their order, and what they reference.

HS104 failing-hook-fails-release
    A hook that fails fails the release, post-* hooks included: the manifest is applied and
    waited for, then Helm marks the revision ``failed`` with "post-upgrade hooks failed: …"
    (helm/helm pkg/action/upgrade.go, install.go: execHook errors end the action). Turning a
    Job that must not gate the release into a post-upgrade hook does not keep it Ready.
HS107 hook-references-release-object
    A pre-install/pre-upgrade hook's pod uses an object (ServiceAccount, ConfigMap, Secret,
    claim) that is an ordinary resource of the same release: hooks run before the manifest is
    applied (helm/helm pkg/action/install.go), so on install the object does not exist yet. The
    API server rejects a pod whose ServiceAccount is missing (kubernetes
    plugin/pkg/admission/serviceaccount/admission.go: "error looking up service account"), a
    missing ConfigMap/Secret keeps the container in CreateContainerConfigError, and Helm waits
    for the hook until the timeout.
HS108 same-weight-hooks-by-name
    Hooks of one event and one weight run in name order, not kind order (helm/helm
    pkg/action/hooks.go: sort.Stable(hookByWeight), weight then name), so a hook Job named
    before the ServiceAccount/ConfigMap hook it uses is created first.
"""

from __future__ import annotations

from collections.abc import Iterator

from helmsim.diagnose import fixes
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.fixes import pod_spec
from helmsim.diagnose.model import Candidate, Fix, Severity, Step, step
from helmsim.diagnose.registry import rule
from helmsim.manifests import Resource


def references(res: Resource) -> Iterator[str]:
    """``Kind/ns/name`` of the objects a workload's pods need to exist (non-optional ones)."""
    spec = pod_spec(res.body)
    if not spec:
        return
    ns = res.namespace or ""
    sa = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if sa and sa != "default":
        yield f"ServiceAccount/{ns}/{sa}"
    for vol in spec.get("volumes") or []:
        vol = vol or {}
        if (cm := vol.get("configMap")) and not cm.get("optional"):
            yield f"ConfigMap/{ns}/{cm.get('name')}"
        if (sec := vol.get("secret")) and not sec.get("optional"):
            yield f"Secret/{ns}/{sec.get('secretName')}"
        if pvc := vol.get("persistentVolumeClaim"):
            yield f"PersistentVolumeClaim/{ns}/{pvc.get('claimName')}"
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for src in (c or {}).get("envFrom") or []:
            if (ref := src.get("configMapRef")) and not ref.get("optional"):
                yield f"ConfigMap/{ns}/{ref.get('name')}"
            if (ref := src.get("secretRef")) and not ref.get("optional"):
                yield f"Secret/{ns}/{ref.get('name')}"
        for env in (c or {}).get("env") or []:
            vf = (env or {}).get("valueFrom") or {}
            if (ref := vf.get("configMapKeyRef")) and not ref.get("optional"):
                yield f"ConfigMap/{ns}/{ref.get('name')}"
            if (ref := vf.get("secretKeyRef")) and not ref.get("optional"):
                yield f"Secret/{ns}/{ref.get('name')}"


def _hook_pod_steps(run: ProfileRun, hook: str) -> list[Step]:
    out: list[Step] = []
    exits = [
        e
        for e in run.trace
        if e.what == "container-exited"
        and e.data.get("exitCode") not in (0, None)
        and run.owner_of_pod(e.obj) == hook
    ]
    if exits:
        out.append(step(exits[0]))
    failed = next(
        (e for e in run.events(what="event", obj=hook) if e.data.get("type") == "Warning"), None
    )
    if failed is not None:
        out.append(step(failed, f"{failed.data.get('reason')}: {failed.message}"))
    return out


def _tests_ignored(run: ProfileRun, hr_ref: str) -> bool:
    """api/v2 GetTest().IgnoreFailures, or the active remediation's ignoreTestFailures
    (internal/reconcile/atomic_release.go: a failed test then changes nothing)."""
    spec = run.input(hr_ref).hr.spec
    if spec.test.ignore_failures:
        return True
    return any(getattr(spec, kind).remediation.ignore_test_failures is True for kind in ("install", "upgrade"))


@rule(
    "HS104",
    "failing-hook-fails-release",
    "A failing hook fails the release, post-install/post-upgrade hooks included",
)
def failing_hook_fails_release(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    seen: set[str] = set()
    for ev in run.events(what="hook-failed"):
        located = run.resource(ev.obj)
        if located is None or ev.obj in seen:
            continue
        seen.add(ev.obj)
        hr_ref, _res = located
        event = str(ev.data.get("event", ""))
        if event == "test" and _tests_ignored(run, hr_ref):
            continue  # helm-controller ignores the tests' failures (spec.test.ignoreFailures)
        start = next(
            (e for e in run.events(what="hook-start", obj=ev.obj) if e.time <= ev.time), None
        )
        chain: list[Step] = []
        if start is not None:
            chain.append(step(start))
        chain.extend(_hook_pod_steps(run, ev.obj))
        chain.append(step(ev, f"{event} hook failed: {ev.message}"))
        ready = run.ready(hr_ref)
        if not ready:
            chain.extend(run.failure_tail(hr_ref, after=ev.time))
        post = event.startswith("post-")
        # helm/helm pkg/action/hooks.go execHook: the hook's wait ends in its timeout when the
        # Job is still running (kstatus InProgress), not only when it failed
        timed_out = ev.message.startswith("timeout waiting for")
        verb = "does not complete within the release timeout (it is still running: Helm's wait on it times out)" if timed_out else "fails"
        consequence = (
            "helm-controller marks TestSuccess=False and remediates the release"
            if event == "test"
            else "Helm marks the release failed"
        )
        msg = (
            f"{ev.obj} ({event} hook) {verb} and {consequence}"
            + (
                ": a post-* hook runs after the manifest is applied and waited for, and still fails the revision"
                if post
                else ""
            )
            + (f"; the release ends {run.outcome(hr_ref).outcome}" if not ready else "")
        )
        fix = Fix(
            f"take {ev.obj} out of the release if its failure must not fail it (a separate release nothing dependsOn, "
            "or a CronJob with suspend: true triggered once); keep it a hook only if its failure should fail the release",
            fixes.key("job-out", ev.obj),
        )
        out.append(
            Candidate(
                "HS104",
                hr_ref,
                ev.obj,
                Severity.error if not ready else Severity.warning,
                msg,
                chain,
                [fix],
                run.variant,
            )
        )
    return out


@rule(
    "HS107",
    "hook-references-release-object",
    "A pre-install hook uses an ordinary object of the same release",
)
def hook_references_release_object(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for hr_ref, chart in run.charts.items():
        manifest = {r.ref: r for r in chart.manifest}
        for hook in chart.hooks:
            assert hook.hook is not None
            pre = [e for e in hook.hook.events if e in ("pre-install", "pre-upgrade")]
            if not pre:
                continue
            start = next(iter(run.events(what="hook-start", obj=hook.ref)), None)
            if start is None:
                continue
            for ref in dict.fromkeys(references(hook)):
                if ref not in manifest:
                    continue
                created = run.created_by_helm(ref)
                if created is not None and created.time <= start.time and created.id < start.id:
                    continue  # it existed already (an upgrade)
                chain: list[Step] = [step(start)]
                if created is not None:
                    chain.append(
                        step(created, "created by Helm with the manifest, after the pre-* hooks")
                    )
                msg = (
                    f"{hook.ref} ({start.data.get('event')} hook) uses {ref}, an ordinary resource of the same release that "
                    "Helm creates only after the pre-* hooks: the hook's pod cannot start (the API server refuses "
                    "it without its ServiceAccount; the kubelet keeps it ContainerCreating or in "
                    "CreateContainerConfigError without its ConfigMap or Secret) and the hook times out"
                )
                fix = Fix(
                    f"make {ref} a hook too ({','.join(hook.hook.events)}, weight {hook.hook.weight - 1}) so it exists before {hook.ref}",
                    fixes.key("make-hook", ref, ",".join(hook.hook.events), hook.hook.weight - 1),
                )
                out.append(
                    Candidate(
                        "HS107", hr_ref, hook.ref, Severity.error, msg, chain, [fix], run.variant
                    )
                )
    return out


@rule(
    "HS108", "same-weight-hooks-by-name", "Hooks of equal weight run in name order, not kind order"
)
def same_weight_hooks_by_name(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for hr_ref, chart in run.charts.items():
        hooks = {h.ref: h for h in chart.hooks}
        for user in chart.hooks:
            assert user.hook is not None
            for ref in dict.fromkeys(references(user)):
                dep = hooks.get(ref)
                if dep is None or dep.hook is None or dep.hook.weight != user.hook.weight:
                    continue
                shared = set(dep.hook.events) & set(user.hook.events)
                if not shared:
                    continue
                u_start = next(iter(run.events(what="hook-start", obj=user.ref)), None)
                d_start = next(iter(run.events(what="hook-start", obj=dep.ref)), None)
                if u_start is None or (d_start is not None and d_start.id < u_start.id):
                    continue
                chain: list[Step] = [
                    step(
                        u_start, f"{u_start.message} runs first: same weight, its name sorts first"
                    )
                ]
                if d_start is not None:
                    chain.append(step(d_start))
                ready = run.ready(hr_ref)
                if not ready:
                    chain.extend(run.failure_tail(hr_ref))
                msg = (
                    f"{user.ref} and {dep.ref} are {'/'.join(sorted(shared))} hooks of weight {user.hook.weight}; Helm orders "
                    f"them by name, so {user.ref} is created before the {dep.kind} it uses"
                )
                fix = Fix(
                    f'give {dep.ref} a lower weight (helm.sh/hook-weight: "{dep.hook.weight - 1}")',
                    fixes.key("hook-weight", dep.ref, dep.hook.weight - 1),
                )
                out.append(
                    Candidate(
                        "HS108", hr_ref, user.ref, Severity.error, msg, chain, [fix], run.variant
                    )
                )
    return out
