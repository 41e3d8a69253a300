"""helm-controller's reconcile loop for one HelmRelease, as a process on the simulated cluster.

fluxcd/helm-controller internal/controller/helmrelease_controller.go (dependencies, requeues)
and internal/reconcile/atomic_release.go, state.go, install.go, upgrade.go, *_remediation.go
(release state → action, failure counting, remediation, Stalled).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from msgspec import Struct, field
import simpy

from helmsim.kube.gotime import go_duration
from helmsim.flux import drift
from helmsim.flux.helmrelease import DEPENDENCY_REQUEUE, HelmRelease
from helmsim.helm import actions
from helmsim.helm.actions import ActionOptions, ChartRelease, HelmContext

Proc = Generator[simpy.Event, Any, Any]

# fluxcd/pkg runtime/controller rate_limiter.go: per-item exponential backoff 750ms .. 15m
REQUEUE_MIN = 0.75
REQUEUE_MAX = 900.0


class Condition(Struct):
    type: str
    status: str
    reason: str
    message: str
    time: float


class ReleaseState(Struct):
    """The HelmRelease status helm-controller keeps (api/v2 HelmReleaseStatus), simplified."""

    conditions: dict[str, Condition] = field(default_factory=dict)
    install_failures: int = 0
    upgrade_failures: int = 0
    failures: int = 0
    last_attempted_action: str = ""
    attempts: int = 0
    stalled: bool = False
    ready_at: float | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    tested_revision: int | None = None
    """The release revision whose test hooks ran (api/v2 Snapshot.HasBeenTested)."""
    test_failed: bool = False
    """A test hook of ``tested_revision`` failed (Snapshot.HasTestInPhase(Failed))."""
    in_reconcile: bool = False
    """A reconcile is under way: status.observedGeneration is not yet the generation, so
    dependents (checkDependencies) and kstatus do not count the object Ready yet."""

    def set(self, type_: str, status: str, reason: str, message: str, now: float) -> None:
        self.conditions[type_] = Condition(type_, status, reason, message, now)

    def drop(self, type_: str) -> None:
        self.conditions.pop(type_, None)

    def get(self, type_: str) -> Condition | None:
        return self.conditions.get(type_)

    @property
    def ready(self) -> bool:
        c = self.conditions.get("Ready")
        return c is not None and c.status == "True"

    @property
    def observed_ready(self) -> bool:
        """Ready=True with the generation observed (helmrelease_controller.go checkDependencies)."""
        return self.ready and not self.in_reconcile


def unready_dependency(
    hr: HelmRelease, states: dict[str, ReleaseState], known: frozenset[str] | None = None
) -> str | None:
    """The Ready message of ``hr`` while a dependency is not ready, None once all are
    (``known``: the HelmReleases that exist; a dependency outside it is not found)."""
    for dep in hr.dependencies():
        if known is not None and dep not in known:
            # helmrelease_controller.go checkDependencies: the Get fails
            ns, name_ = dep.split("/", 1)
            return (
                f"unable to get '{dep}' dependency: helmreleases.helm.toolkit.fluxcd.io "
                f'"{name_}" not found'
            )
        st = states.get(dep)
        # helmrelease_controller.go checkDependencies: generation observed and Ready=True
        if st is None or not st.observed_ready:
            return f"dependency '{dep}' is not ready"
    return None


class Reconciler(Struct):
    """Reconciles one HelmRelease until Ready, Stalled or the horizon.

    ``chart_for(upgrade: bool)`` returns the rendered chart to install or upgrade to; ``states``
    is shared by all reconcilers so ``dependsOn`` can read other releases' Ready condition.
    """

    ctx: HelmContext
    hr: HelmRelease
    chart_for: Callable[[bool], ChartRelease]
    states: dict[str, ReleaseState]
    target_revision_installed: bool = False
    known: frozenset[str] | None = None
    """HelmReleases that exist (``ns/name``); a dependency outside it is not found."""
    intervals: bool = True
    """After Ready, reconcile again every spec.interval (helmrelease_controller.go: RequeueAfter
    the interval); False stops at the first Ready or Stalled."""

    @property
    def state(self) -> ReleaseState:
        return self.states.setdefault(self.hr.ref, ReleaseState())

    def _log(self, what: str, message: str, **data: Any) -> int:
        return self.ctx.sim.log("helm-controller", what, f"HelmRelease/{self.hr.ref}", message, **data).id

    def _mark(self, type_: str, status: str, reason: str, message: str) -> None:
        self.state.set(type_, status, reason, message, self.ctx.sim.now)
        if type_ == "Ready":
            self._log("condition", f"Ready={status} {reason}: {message}", type=type_, status=status, reason=reason)

    def _options(self, action: str) -> ActionOptions:
        spec = getattr(self.hr.spec, action)
        if spec.disable_wait:
            wait = "hookOnly"  # internal/action/wait.go getWaitStrategy: disableWait → HookOnly
        elif self.hr.spec.wait_strategy.name == "legacy":
            wait = "legacy"
        else:
            wait = "poller"
        return ActionOptions(
            timeout=self.hr.timeout_for(action),
            wait=wait,  # type: ignore[arg-type]
            wait_for_jobs=not spec.disable_wait_for_jobs,
            disable_hooks=spec.disable_hooks,
            server_side=True,
            # internal/action/upgrade.go, rollback.go: MaxHistory = GetMaxHistory()
            max_history=self.hr.spec.max_history if action in ("upgrade", "rollback") else 0,
            crds=spec.crds,
            # internal/action/install.go, upgrade.go: TakeOwnership = !DisableTakeOwnership
            take_ownership=not spec.disable_take_ownership,
        )

    def _release_label(self, chart: ChartRelease) -> str:
        return f"{self.hr.target_namespace}/{self.hr.release_name}"

    def run(self, until_stable: bool = True) -> Proc:
        """The reconcile loop: dependencies, then release actions, requeueing as Flux does."""
        sim = self.ctx.sim
        requeues = 0
        while True:
            blocked = self._unready_dependency()
            if blocked:
                self._mark("Reconciling", "True", "Progressing", "Fulfilling prerequisites")
                self._mark("Ready", "False", "DependencyNotReady", blocked)
                yield sim.sleep(DEPENDENCY_REQUEUE)  # --requeue-dependency 30s, not jittered
                continue
            self.state.in_reconcile = True
            try:
                outcome = yield from self._reconcile_release()
            finally:
                self.state.in_reconcile = False
            if outcome == "stalled" or (outcome == "done" and not self.intervals):
                return outcome
            if outcome == "done":
                # helmrelease_controller.go: success requeues after spec.interval (the ±5%
                # --interval-jitter-percentage is not applied: runs stay reproducible)
                requeues = 0
                yield sim.sleep(self.hr.spec.interval)
                continue
            requeues += 1
            delay = min(REQUEUE_MAX, REQUEUE_MIN * 2 ** (requeues - 1))
            if outcome == "retry":
                # internal/reconcile/atomic_release.go: RetryOnFailure → RequeueAfter retryInterval
                kind = self.state.last_attempted_action or "install"
                delay = getattr(self.hr.spec, kind).strategy.retry_interval
                self._mark("Reconciling", "True", "ProgressingWithRetry", f"retrying after {go_duration(delay)}")
            self._log("requeue", f"requeue after {delay:g}s", delay=delay)
            yield sim.sleep(delay)

    def _unready_dependency(self) -> str | None:
        return unready_dependency(self.hr, self.states, self.known)

    def _reconcile_release(self) -> Proc:
        """One AtomicRelease.Reconcile: state → action until success, stop or remediation."""
        st = self.state
        storage = self.ctx.storage
        ns, name = self.hr.storage_namespace, self.hr.release_name
        ran: set[str] = set()
        while True:
            denied = self.ctx.tenant.denied_storage("list") if self.ctx.tenant is not None else None
            if denied is not None:
                # internal/reconcile/state.go DetermineReleaseState → atomic_release.go: StateError,
                # returned as an error (requeued with backoff); helm/helm secrets.go Query wraps it
                message = (
                    "Could not determine release state: failed to retrieve last release from storage: "
                    f"query: failed to query with labels: {denied}"
                )
                self._mark("Ready", "False", "StateError", message)
                self._log("event", message, reason="StateError", type="Warning")
                return "requeue"
            # internal/reconcile/state.go DetermineReleaseState
            last = storage.last(self.hr.storage_namespace, name)
            if last is None or last.status == "uninstalled":
                state = "Absent"
            elif last.status.startswith("pending-"):
                state = "Locked"
            elif last.status in ("failed", "uninstalling"):
                state = "Failed"
            elif last.status == "deployed" and self.target_revision_installed:
                state = self._tested_state(last.revision)
            else:
                state = "OutOfSync"
            if state == "Locked":
                assert last is not None  # Locked: a stored release is pending
                # internal/reconcile/unlock.go: a pending release is marked failed, then retried
                stale = last.status
                last.status = "failed"
                last.description = f"Release unlocked from stale '{stale}' state"
                # unlock.go fmtUnlockSuccess: "Unlocked Helm release %s with chart %s in %s state"
                self._mark(
                    "Released", "False", "PendingRelease", f"Unlocked Helm release {last.id} with chart {last.chart} in {stale} state"
                )
                continue
            if state == "InSync":
                assert last is not None  # InSync: a deployed release
                if "drift" not in ran and (yield from drift.detect(self, last)):
                    ran.add("drift")
                    continue  # atomic_release.go: corrected; determine the state again
                return "done"
            if state == "Untested":
                assert last is not None  # Untested: the stored release was deployed
                if "test" in ran:
                    return "requeue"
                ran.add("test")
                yield from self._run_test(last.revision)
                continue
            if state == "Absent":
                if self.hr.spec.install.remediation.retries_exhausted(st.install_failures):
                    return self._stall("install")
                action = "install"
            elif state == "OutOfSync":
                if self.hr.spec.upgrade.remediation.retries_exhausted(st.upgrade_failures):
                    return self._stall("upgrade")
                action = "upgrade"
            else:  # Failed: remediate (state.go actionForState)
                kind = st.last_attempted_action or "install"
                failures = st.install_failures if kind == "install" else st.upgrade_failures
                rem = getattr(self.hr.spec, kind).remediation
                if getattr(self.hr.spec, kind).strategy.name == "RetryOnFailure" or not st.last_attempted_action:
                    action = "upgrade"
                elif rem.retries_exhausted(failures) and not self.hr.remediate_last_failure(kind):
                    return self._stall(kind)
                elif kind == "install" or rem.strategy == "uninstall":
                    action = "uninstall"
                elif not self._has_rollback_target():
                    # internal/reconcile/atomic_release.go: ErrMissingRollbackTarget → Stalled
                    return self._stall(kind, reason="MissingRollbackTarget",
                                       message="Failed to perform remediation: missing target release for rollback: "
                                       "cannot remediate failed release")
                else:
                    action = "rollback"
            if action in ran:
                return "requeue"
            ran.add(action)
            result = yield from self._run_action(action, ns, name)
            if action in ("uninstall", "rollback"):
                # MustStop after remediation; exhausted → Stalled, else requeue with retry
                kind = st.last_attempted_action
                failures = st.install_failures if kind == "install" else st.upgrade_failures
                rem = getattr(self.hr.spec, kind).remediation
                # atomic_release.go: after an uninstall remediating an upgrade
                # (IsUninstallAfterUpgrade) helm-controller always requeues; the next reconcile
                # installs, on the install retry budget
                after_upgrade = kind == "upgrade" and action == "uninstall"
                if rem.retries_exhausted(failures) and not after_upgrade:
                    return self._stall(kind)
                ready = st.get("Ready")
                self._mark("Reconciling", "True", "ProgressingWithRetry", ready.message if ready else "")
                return "requeue"
            if result.ok:
                continue  # atomic_release.go: the next state (InSync, or Untested with tests)
            if getattr(self.hr.spec, action).strategy.name == "RetryOnFailure":
                return "retry"

    def _ignore_test_failures(self) -> bool:
        """The active remediation's MustIgnoreTestFailures(spec.test.ignoreFailures)."""
        kind = self.state.last_attempted_action or "install"
        rem = getattr(self.hr.spec, kind).remediation
        if rem.ignore_test_failures is not None:
            return bool(rem.ignore_test_failures)
        return self.hr.spec.test.ignore_failures

    def _tested_state(self, revision: int) -> str:
        """internal/reconcile/state.go: a deployed, in-sync release is Untested until its tests
        ran (test.enable), Failed when one failed and failures are not ignored."""
        test = self.hr.spec.test
        st = self.state
        if test.enable:
            if st.tested_revision != revision:
                return "Untested"
            if st.test_failed and st.last_attempted_action and not self._ignore_test_failures():
                return "Failed"
        return "InSync"

    def _run_test(self, revision: int) -> Proc:
        """internal/reconcile/test.go: Helm's test action on the latest release, its result as
        the TestSuccess condition; a failure counts for the active remediation."""
        st = self.state
        timeout = self.hr.timeout_for("test")
        self._mark("Reconciling", "True", "Progressing", f"Running 'test' action with timeout of {go_duration(timeout)}")
        opts = self._options("test")
        filters = [(f.name, f.exclude) for f in self.hr.spec.test.filters or ()]
        result = yield from actions.release_test(self.ctx, self.hr.target_namespace, self.hr.release_name, opts, filters)
        rel = result.release
        label = rel.id if rel is not None else f"{self.hr.target_namespace}/{self.hr.release_name}"
        chart = rel.chart if rel is not None else self.hr.chart_name
        hooks = result.tested_hooks
        st.tested_revision = revision
        st.test_failed = not result.ok
        # api/v2 summarize: TestSuccess ranks before Released unless failures are ignored
        counts = not self.hr.spec.test.ignore_failures
        if result.ok:
            # internal/reconcile/test.go success(): fmtTestSuccess with the hook count
            hook_msg = "no test hooks" if not hooks else f"{hooks} test hook{'s' if hooks > 1 else ''} completed successfully"
            message = f"Helm test succeeded for release {label} with chart {chart}: {hook_msg}"
            self._mark("TestSuccess", "True", "TestSucceeded", message)
            if counts:
                self._mark("Ready", "True", "TestSucceeded", message)
            self._log("event", message, reason="TestSucceeded", type="Normal")
        else:
            message = f"Helm test failed for release {label} with chart {chart}: {(result.error or '').strip()}"
            st.failures += 1
            self._mark("TestSuccess", "False", "TestFailed", message)
            self._log("event", message, reason="TestFailed", type="Warning")
            if st.last_attempted_action and not self._ignore_test_failures():
                # test.go failure(): the active remediation's failure count
                if st.last_attempted_action == "install":
                    st.install_failures += 1
                else:
                    st.upgrade_failures += 1
            if counts:
                self._mark("Ready", "False", "TestFailed", message)
                st.ready_at = None
        st.history.append({"time": self.ctx.sim.now, "action": "test", "ok": result.ok, "error": result.error})
        st.drop("Reconciling")
        return result

    def _run_action(self, action: str, ns: str, name: str) -> Proc:
        st = self.state
        sim = self.ctx.sim
        timeout = self.hr.timeout_for(action if action in ("install", "upgrade", "rollback", "uninstall") else "install")
        msg = f"Running '{action}' action with timeout of {go_duration(timeout)}"
        self._mark("Reconciling", "True", "Progressing", msg)
        if action in ("install", "upgrade"):
            self._mark("Ready", "Unknown", "Progressing", msg)
        opts = self._options(action)
        if action in ("install", "upgrade"):
            # internal/reconcile/install.go, upgrade.go: a new attempt clears Remediated; its
            # release is a new snapshot, not yet tested
            st.drop("Remediated")
            st.drop("TestSuccess")
            st.tested_revision, st.test_failed = None, False
        if action == "install":
            chart = self.chart_for(False)
            st.last_attempted_action = "install"
            st.attempts += 1
            if chart.render_error is not None:
                result = yield from self._unrenderable(action, chart, opts)
            else:
                result = yield from actions.install(self.ctx, chart, opts)
        elif action == "upgrade":
            chart = self.chart_for(True)
            st.last_attempted_action = "upgrade"
            st.attempts += 1
            if chart.render_error is not None:
                result = yield from self._unrenderable(action, chart, opts)
            else:
                result = yield from actions.upgrade(self.ctx, chart, opts)
        elif action == "rollback":
            chart = self.chart_for(True)
            self.target_revision_installed = False  # the rolled-back release is not the desired one
            result = yield from actions.rollback(self.ctx, self.hr.target_namespace, name, opts)
        else:
            chart = self.chart_for(False)
            self.target_revision_installed = False
            result = yield from actions.uninstall(
                self.ctx, self.hr.target_namespace, name, opts, keep_history=self.hr.spec.uninstall.keep_history
            )
        label = f"{self.hr.target_namespace}/{name}"
        chart_id = chart.chart
        rel_id = result.release.id if result.release else label
        if action in ("install", "upgrade"):
            verb = action
            if result.ok:
                self.target_revision_installed = True
                message = f"Helm {verb} succeeded for release {rel_id} with chart {chart_id}"
                reason = "InstallSucceeded" if verb == "install" else "UpgradeSucceeded"
                self._mark("Released", "True", reason, message)
                st.drop("Remediated")
                st.drop("Reconciling")
                self._mark("Ready", "True", reason, message)
                st.ready_at = sim.now
            else:
                if result.release is not None:
                    st.failures += 1
                    if verb == "install":
                        st.install_failures += 1
                    else:
                        st.upgrade_failures += 1
                # install.go, upgrade.go failure: GetReleaseNamespace()/GetReleaseName(), unshortened
                full = f"{self.hr.target_namespace}/{self.hr.full_release_name}"
                message = f"Helm {verb} failed for release {full} with chart {chart_id}: {result.error}"
                reason = "InstallFailed" if verb == "install" else "UpgradeFailed"
                self._mark("Released", "False", reason, message)
                self._mark("Ready", "False", reason, message)
                self._log("event", message, reason=reason, type="Warning")
        elif action == "rollback":
            # internal/reconcile/rollback_remediation.go: the release and chart rolled back TO
            target = f"{label}.v{result.rollback_to}" if result.rollback_to else label
            chart_id = result.release.chart if result.release is not None else chart_id
            if result.ok:
                message = f"Helm rollback to previous release {target} with chart {chart_id} succeeded"
                self._mark("Remediated", "True", "RollbackSucceeded", message)
                self._mark("Ready", "False", "RollbackSucceeded", message)
            else:
                message = f"Helm rollback to previous release {target} with chart {chart_id} failed: {result.error}"
                self._mark("Remediated", "False", "RollbackFailed", message)
                self._mark("Ready", "False", "RollbackFailed", message)
                st.failures += 1
        else:
            rel_id = result.release.id if result.release else label
            if result.ok:
                message = f"Helm uninstall remediation for release {rel_id} with chart {chart_id} succeeded"
                self._mark("Remediated", "True", "UninstallSucceeded", message)
                self._mark("Ready", "False", "UninstallSucceeded", message)
            else:
                message = f"Helm uninstall remediation for release {rel_id} with chart {chart_id} failed: {result.error}"
                self._mark("Remediated", "False", "UninstallFailed", message)
                self._mark("Ready", "False", "UninstallFailed", message)
                st.failures += 1
        st.history.append({"time": sim.now, "action": action, "ok": result.ok, "error": result.error})
        return result

    def _unrenderable(self, action: str, chart: ChartRelease, opts: ActionOptions) -> Proc:
        """An install or upgrade of a chart Helm's engine refuses: helm-controller applies its
        ``crds/`` first (internal/action/install.go, upgrade.go applyCRDs), then Helm's action
        fails while rendering, before any release is stored (helm/helm pkg/action/install.go
        RunWithContext: renderResources precedes Releases.Create), so no failure is counted for
        remediation and the reconcile is retried with backoff (internal/reconcile/install.go)."""
        assert chart.render_error is not None
        if chart.crds:
            err = yield from actions.apply_crds(self.ctx, chart.crds, opts)
            if err:
                return actions.ActionResult(action, False, None, err)
        self.ctx.sim.log(
            self.ctx.actor, "render-failed", f"{self.hr.target_namespace}/{self.hr.release_name}",
            chart.render_error, action=action,
        )
        return actions.ActionResult(action, False, None, chart.render_error)

    def _has_rollback_target(self) -> bool:
        history = self.ctx.storage.history(self.hr.storage_namespace, self.hr.release_name)
        return any(r.status in ("deployed", "superseded") for r in history[:-1])

    def _stall(self, kind: str, *, reason: str = "RetriesExceeded", message: str | None = None) -> str:
        st = self.state
        n = st.install_failures if kind == "install" else st.upgrade_failures
        message = message or f"Failed to {kind} after {n} attempt(s)"
        st.drop("Reconciling")  # MarkStalled deletes Reconciling
        self._mark("Stalled", "True", reason, message)
        st.stalled = True
        self._log("stalled", message, reason=reason)
        return "stalled"
