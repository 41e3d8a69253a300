"""Jobs inside a waited release.

HS103 failed-job-in-wait
    A Job of the release (not a hook) ends Failed while Helm waits. kstatus reads a Job with
    ``Failed=True`` as Failed (kubernetes-sigs/cli-utils pkg/kstatus/status/core.go
    jobConditions) and helm-controller's poller fails fast: "failed early due to stalled
    resources" (fluxcd/helm-controller internal/action/wait.go). ``disableWaitForJobs`` does not
    exclude the Job: it only stops waiting for completion (helm/helm pkg/action/install.go,
    upgrade.go: WaitForJobs). A Job that fails after the wait ended is a warning: the next
    upgrade's wait reads the same Failed Job. A Job that succeeds in the simulation but belongs
    to a release with ``disableWaitForJobs`` (its author meant it not to gate the release) is
    re-simulated forced to fail (every pod exits 1): when the release then fails, the finding is
    an error — the declared intent does not hold (seed 1's second defect).
HS109 job-ttl-shorter-than-wait
    ``spec.ttlSecondsAfterFinished`` deletes the Job (kubernetes
    pkg/controller/ttlafterfinished) while Helm still waits: helm-controller counts a Job with a
    TTL that is gone as done whether it completed or failed, and the next upgrade recreates it.
"""

from __future__ import annotations

from helmsim.diagnose import fixes
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix, Severity, Step, step
from helmsim.diagnose.registry import rule
from helmsim.manifests import Resource

_FAIL_REASONS = (
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "PodFailurePolicy",
    "MaxFailedIndexesExceeded",
)


def _wait_windows(run: ProfileRun, hr_ref: str) -> list[tuple[float, float, str | None]]:
    """(start, end, error) of every release-level wait of ``hr_ref``."""
    label = run.label(hr_ref) + ".v"
    out: list[tuple[float, float, str | None]] = []
    for start in run.events(what="wait-start"):
        if not start.obj.startswith(label):
            continue
        end = next((e for e in run.trace if e.what == "wait-end" and e.cause == start.id), None)
        out.append(
            (
                start.time,
                end.time if end else run.result.end_time,
                (end.data.get("error") if end else None),
            )
        )
    return out


@rule(
    "HS103",
    "failed-job-in-wait",
    "A Job that can end Failed inside a waited release fails the release",
)
def failed_job_in_wait(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for hr_ref, chart in run.charts.items():
        hr = run.input(hr_ref).hr
        for res in chart.manifest:
            if res.kind != "Job":
                continue
            failed = next(
                (
                    e
                    for e in run.events(what="event", obj=res.ref)
                    if e.data.get("reason") in _FAIL_REASONS
                ),
                None,
            )
            dwj = [a for a in ("install", "upgrade") if getattr(hr.spec, a).disable_wait_for_jobs]
            if failed is None:
                if dwj and run.variant == "nominal" and run.ready(hr_ref):
                    what_if = _forced_failure(run, hr_ref, res, dwj)
                    if what_if is not None:
                        out.append(what_if)
                continue
            windows = _wait_windows(run, hr_ref)
            inside = [w for w in windows if w[0] <= failed.time <= w[1] + 1e-6]
            ready = run.ready(hr_ref)
            note = (
                f" spec.{'/'.join(dwj)}.disableWaitForJobs: true does not exclude it: it only stops waiting for"
                " completion, a Failed Job still fails the wait early."
                if dwj
                else ""
            )
            chain: list[Step] = []
            created = run.created_by_helm(res.ref)
            if created is not None:
                chain.append(step(created, "created by Helm (a release resource, not a hook)"))
            exits = [
                e
                for e in run.trace
                if e.what == "container-exited"
                and e.time <= failed.time
                and e.data.get("exitCode") not in (0, None)
                and run.owner_of_pod(e.obj) == res.ref
            ]
            if exits:
                chain.append(step(exits[0]))
                if len(exits) > 1:
                    chain.append(step(exits[-1], f"{exits[-1].message} (run {len(exits)})"))
            chain.append(step(failed, f"{failed.data.get('reason')}: {failed.message}"))
            if inside and not ready:
                chain.extend(run.failure_tail(hr_ref))
                severity = Severity.error
                msg = (
                    f"{res.ref} ends Failed while Helm waits, which fails the release ({run.outcome(hr_ref).outcome})."
                    + note
                )
            elif not inside:
                severity = Severity.warning
                last = windows[-1] if windows else None
                msg = (
                    f"{res.ref} ends Failed at t={failed.time:.0f}s, after the wait ended"
                    + (f" (t={last[1]:.0f}s)" if last else "")
                    + ": Ready by luck of timing; the next upgrade's wait reads the Failed Job and fails early."
                    + note
                )
            else:
                continue
            fix = Fix(
                f"take {res.ref} out of the release's health check: run it from a separate release that nothing dependsOn, "
                "or as a CronJob with suspend: true triggered once (a post-upgrade hook does not help: see HS104)",
                fixes.key("job-out", res.ref),
            )
            out.append(
                Candidate("HS103", hr_ref, res.ref, severity, msg, chain, [fix], run.variant)
            )
    return out


def _forced_failure(run: ProfileRun, hr_ref: str, res: Resource, dwj: list[str]) -> Candidate | None:
    """Re-simulate with every pod of ``res`` exiting 1; a finding when the release then fails."""
    from helmsim.cluster.behaviour import BehaviourOverride
    from helmsim.simulate import simulate

    force = BehaviourOverride(namespace=res.namespace, owner=f"Job/{res.name}", exit_code=1)
    result = simulate(run.profile, run.inputs, overrides=[force], horizon=run.result.end_time + 3600)
    outcome = next(o for o in result.releases if f"{o.namespace}/{o.name}" == hr_ref)
    failed = next(
        (e for e in result.trace.find(what="event", obj=res.ref) if e.data.get("reason") in _FAIL_REASONS),
        None,
    )
    if failed is None:
        return None
    released = outcome.conditions.get("Released", {}).get("message", outcome.message)
    chain: list[Step] = []
    if failed is not None:
        chain.append(step(failed, f"(forced to fail) {failed.data.get('reason')}: {failed.message}"))
    ends = [e for e in result.trace.find(what="condition", obj=f"HelmRelease/{hr_ref}") if e.data.get("status") == "False"]
    if ends:
        chain.append(step(ends[0]))
    intent = f"spec.{'/'.join(dwj)}.disableWaitForJobs: true does not keep a failing Job from failing the release"
    if outcome.outcome == "Ready":
        # it failed after the wait: this release got away with it, the next upgrade will not
        severity = Severity.warning
        msg = (
            f"{res.ref} succeeds here; forced to fail, it ends Failed at t={failed.time:.0f}s, after Helm's "
            f"wait, so the release is Ready by luck of timing — but {intent}: a failure while Helm waits, "
            "or on the next upgrade (whose wait reads the same Failed Job), fails it early"
        )
    else:
        severity = Severity.error
        msg = f"{res.ref} succeeds here, but {intent}: forced to fail, the release ends {outcome.outcome}: {released}"
    fix = Fix(
        f"take {res.ref} out of the release's health check: run it from a separate release that nothing "
        "dependsOn, or as a CronJob with suspend: true triggered once (a post-upgrade hook does not help: see HS104)",
        fixes.key("job-out", res.ref),
    )
    return Candidate("HS103", hr_ref, res.ref, severity, msg, chain, [fix], "forced failure")


@rule(
    "HS109",
    "job-ttl-shorter-than-wait",
    "A Job's ttlSecondsAfterFinished deletes it while Helm still waits",
)
def job_ttl_shorter_than_wait(run: ProfileRun) -> list[Candidate]:
    out: list[Candidate] = []
    for hr_ref, chart in run.charts.items():
        hr = run.input(hr_ref).hr
        for res in chart.manifest:
            if (
                res.kind != "Job"
                or (res.body.get("spec") or {}).get("ttlSecondsAfterFinished") is None
            ):
                continue
            deleted = next(
                (e for e in run.events(what="deleting", obj=res.ref) if e.actor.startswith("ttl")),
                None,
            )
            if deleted is None:
                continue
            windows = [w for w in _wait_windows(run, hr_ref) if w[0] <= deleted.time <= w[1]]
            if not windows:
                continue
            _start, end, _error = windows[0]
            ttl = int(res.body["spec"]["ttlSecondsAfterFinished"])
            ready = run.ready(hr_ref)
            failed = next(
                (
                    e
                    for e in run.events(what="event", obj=res.ref)
                    if e.data.get("reason") in _FAIL_REASONS
                ),
                None,
            )
            chain: list[Step] = []
            finished = failed or next(
                (
                    e
                    for e in run.events(what="event", obj=res.ref)
                    if e.data.get("reason") == "Completed"
                ),
                None,
            )
            if finished is not None:
                chain.append(step(finished, f"{finished.data.get('reason')}: {finished.message}"))
            chain.append(
                step(
                    deleted,
                    f"deleted by its TTL ({ttl}s after finishing) while the wait runs until t={end:.0f}s",
                )
            )
            gone = next(
                (
                    e
                    for e in run.events(what="poll", obj=res.ref)
                    if e.data.get("status") == "NotFound"
                ),
                None,
            )
            if gone is not None:
                chain.append(step(gone, "Helm's wait reads it NotFound"))
            if not ready:
                chain.extend(run.failure_tail(hr_ref))
                severity = Severity.error
            else:
                severity = Severity.warning
            msg = (
                f"{res.ref} is deleted by ttlSecondsAfterFinished={ttl} at t={deleted.time:.0f}s while Helm waits until "
                f"t={end:.0f}s: the wait counts the vanished Job as done"
                + (" even though it Failed" if failed is not None else "")
                + "; the next upgrade recreates it"
                + ("" if ready else f"; the release ends {run.outcome(hr_ref).outcome}")
            )
            longer = int(hr.timeout_for("upgrade") + 60)
            fix = Fix(
                f"raise ttlSecondsAfterFinished of {res.ref} above the release timeout (e.g. {longer}) or drop it",
                fixes.key("ttl", res.ref, longer),
            )
            out.append(
                Candidate("HS109", hr_ref, res.ref, severity, msg, chain, [fix], run.variant)
            )
    return out
