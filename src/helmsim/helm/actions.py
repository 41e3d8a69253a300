"""Helm v4 actions (install, upgrade, rollback, uninstall) as processes on the simulated cluster.

Each action is a SimPy generator: ``result = yield from install(ctx, spec)``. They write release
records, run hooks one at a time, apply the manifest kind group by kind group, and wait with the
strategy helm-controller chose (fluxcd/helm-controller internal/action/wait.go).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Literal

import simpy
from msgspec import Struct

from helmsim import kstatus
from helmsim.cluster.admission import serves
from helmsim.cluster.controllers.crd import CRD, crd_names
from helmsim.cluster.engine import Simulation
from helmsim.cluster.store import ApiError, clone, merged_for_apply, spec_equal
from helmsim.helm import build, immutable, record
from helmsim.helm.order import hook_order, kind_groups, manifest_order
from helmsim.helm.record import RecordSize
from helmsim.helm.release import HookRun, Release, ReleaseStorage
from helmsim.kstatus import ObjectId, Result, Status
from helmsim.kstatus.wait import decide
from helmsim.kube import fieldcheck
from helmsim.manifests import Resource

Proc = Generator[simpy.Event, Any, Any]
WaitStrategy = Literal["poller", "legacy", "hookOnly"]

POLL_INTERVAL = 5.0  # fluxcd/helm-controller internal/action/wait.go: WaitOptions Interval 5s
DELETE_POLL_INTERVAL = 2.0  # internal/action/wait.go WaitForDelete: interval 2s
CRD_WAIT = 60.0  # helm-controller internal/action/crds.go: waiter.Wait(crds, 60s)


class ActionOptions(Struct, frozen=True):
    """What helm-controller passes to a Helm action (internal/action/install.go newInstall …)."""

    timeout: float = 300.0
    wait: WaitStrategy = "poller"
    wait_for_jobs: bool = True
    disable_hooks: bool = False
    server_side: bool = True
    take_ownership: bool = True
    max_history: int = 0  # helm-controller passes spec.maxHistory (default 5) to upgrade/rollback
    crds: str = "Create"  # spec.install.crds / spec.upgrade.crds (internal/action/crds.go)


class ChartRelease(Struct, frozen=True):
    """A rendered chart ready to be installed: release identity, chart, resources, crds/."""

    name: str
    namespace: str
    chart: str
    resources: tuple[Resource, ...]
    crds: tuple[Resource, ...] = ()
    notes: tuple[str, ...] = ()
    render_error: str | None = None
    """Helm's error when the chart does not render for this release (no objects then)."""
    record: RecordSize | None = None
    """How big the release record Helm stores is (None: not a chart, or not measured)."""

    @property
    def manifest(self) -> list[Resource]:
        return [r for r in self.resources if not r.is_hook]

    @property
    def hooks(self) -> list[Resource]:
        return [r for r in self.resources if r.is_hook]


class ActionResult(Struct):
    """How an action ended: the release revision it wrote and Helm's error text, if any."""

    action: str
    ok: bool
    release: Release | None
    error: str | None = None
    trace_id: int | None = None
    rollback_to: int | None = None
    tested_hooks: int = 0
    """How many test hooks a test action ran."""


class HelmContext(Struct):
    """The simulated cluster plus Helm's release storage."""

    sim: Simulation
    storage: ReleaseStorage
    actor: str = "helm"
    tenant: Any = None
    """The impersonated ServiceAccount every call is authorized as
    (:class:`helmsim.flux.impersonation.Tenant`); None: helm-controller's own identity."""
    storage_namespace: str | None = None
    """Where Helm stores the release records (helm-controller: spec.storageNamespace, else the
    HelmRelease's namespace; api/v2 GetStorageNamespace); None: the release's namespace, as the
    helm CLI does."""

    def storage_key(self, namespace: str) -> str:
        """The namespace the records of a release in ``namespace`` are stored in."""
        return self.storage_namespace or namespace


# --- objects -------------------------------------------------------------------------------------
def to_object(res: Resource, release: str, namespace: str) -> dict[str, Any]:
    """The object Helm sends: namespace set, ownership metadata added (pkg/action/validate.go)."""
    obj = clone(res.body)
    meta = obj.setdefault("metadata", {})
    if res.namespace:
        meta["namespace"] = res.namespace
    else:
        meta.pop("namespace", None)
    if not res.is_hook:
        # helm/helm pkg/action/validate.go setMetadataVisitor: ownership labels/annotations
        meta.setdefault("labels", {})["app.kubernetes.io/managed-by"] = "Helm"
        annotations = meta.setdefault("annotations", {})
        annotations["meta.helm.sh/release-name"] = release
        annotations["meta.helm.sh/release-namespace"] = namespace
    return obj


def field_error(sim: Simulation, obj: dict[str, Any]) -> str | None:
    """The API server's refusal of ``obj``'s fields when Helm applies it (server-side apply with
    fieldValidation=Strict), wrapped as Helm wraps it; None when the fields are acceptable."""
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    version = str(sim.profile.kubernetes_version)
    crd = None
    if not fieldcheck.is_builtin(version, api_version, kind):
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        crd = next(
            (
                c
                for c in sim.store.list(CRD)
                if (c.get("spec") or {}).get("group") == group and crd_names(c).get("kind") == kind
            ),
            None,
        )
    if crd is not None:
        err = fieldcheck.apply_error(obj, kube_version=version, crd=crd)
        return None if err is None else fieldcheck.helm_apply_error(obj, err)
    return _builtin_field_error(obj, version)


_BUILTIN_VERDICTS: dict[tuple[str, str], str | None] = {}
"""Field verdicts of built-in kinds by Kubernetes version and object content: the same rendered
object is applied in every run of a check (each profile, its tight and fixed runs)."""
_BUILTIN_VERDICTS_MAX = 50_000


def clear_field_verdicts() -> None:
    """Forget the cached field verdicts (a benchmark timing one simulation as a first run)."""
    _BUILTIN_VERDICTS.clear()


def _typed_json(value: Any) -> str:
    return f"<{type(value).__name__}:{value!r}>"  # a non-JSON leaf keeps its type in the key


def _builtin_field_error(obj: dict[str, Any], version: str) -> str | None:
    """:func:`field_error` of a built-in kind (a function of the object and the version)."""
    key = (version, json.dumps(obj, sort_keys=True, default=_typed_json))
    if key in _BUILTIN_VERDICTS:
        return _BUILTIN_VERDICTS[key]
    err = fieldcheck.apply_error(obj, kube_version=version, crd=None)
    verdict = None if err is None else fieldcheck.helm_apply_error(obj, err)
    if len(_BUILTIN_VERDICTS) >= _BUILTIN_VERDICTS_MAX:
        _BUILTIN_VERDICTS.clear()
    _BUILTIN_VERDICTS[key] = verdict
    return verdict


def object_id(res: Resource) -> ObjectId:
    return ObjectId(kind=res.kind, namespace=res.namespace or "", name=res.name, group=res.group)


def live_status(sim: Simulation, res: Resource, reader: str) -> Result:
    """What the named kstatus reader reports for the live object (NotFound when absent)."""
    obj = sim.store.get(res.kind, res.namespace, res.name)
    if obj is None:
        # fluxcd/cli-utils pkg/kstatus/polling/statusreaders/common.go: 404 → NotFound
        return Result(Status.NOT_FOUND, "Resource not found")
    pods: Sequence[dict[str, Any]] = ()
    if res.kind in ("ReplicaSet", "StatefulSet"):
        selector = (obj.get("spec") or {}).get("selector")
        pods = sim.store.list("Pod", res.namespace, selector) if selector else []  # the label index
    return kstatus.read(obj, reader=reader, now=sim.datetime(), pods=pods)


# --- waiting -------------------------------------------------------------------------------------
_CLOCKED_KINDS = frozenset({"Pod", "ReplicaSet", "StatefulSet"})
"""Kinds whose status is not a function of the object alone: a Pod's reads the clock (its 15 s
unschedulable window), a ReplicaSet's and a StatefulSet's read their pods."""


class _StatusCache:
    """``live_status`` for one wait, each object read again only after a write changed its
    ``resourceVersion`` (kstatus is a function of the object, but for :data:`_CLOCKED_KINDS`)."""

    def __init__(self, sim: Simulation, reader: str) -> None:
        self.sim = sim
        self.reader = reader
        self._seen: dict[tuple[str, str, str], tuple[str, Result]] = {}
        self._kinds: dict[str, tuple[int, list[Result]]] = {}
        self._waited: Sequence[Resource] | None = None
        self._by_kind: dict[str, list[int]] = {}

    def read_all(self, waited: Sequence[Resource]) -> list[Result]:
        """Each object's status, in order; the objects of a kind nothing wrote since the last
        poll keep their results without a lookup (most polls of a large release)."""
        if waited is not self._waited:  # a wait polls the same list: group it once
            self._waited, self._by_kind = waited, {}
            for i, r in enumerate(waited):
                self._by_kind.setdefault(r.kind, []).append(i)
        out: list[Result | None] = [None] * len(waited)
        for kind, idx in self._by_kind.items():
            writes = self.sim.store.writes(kind)
            kept = self._kinds.get(kind)
            if kept is not None and kept[0] == writes and kind not in _CLOCKED_KINDS:
                results = kept[1]
            else:
                results = [self(waited[i]) for i in idx]
                self._kinds[kind] = (writes, results)
            for i, res in zip(idx, results, strict=True):
                out[i] = res
        return [r for r in out if r is not None]

    def __call__(self, res: Resource) -> Result:
        if res.kind in _CLOCKED_KINDS:
            return live_status(self.sim, res, self.reader)
        key = (res.kind, res.namespace or "", res.name)
        obj = self.sim.store.get(*key)
        version = "" if obj is None else str((obj.get("metadata") or {}).get("resourceVersion") or "")
        seen = self._seen.get(key)
        if seen is not None and seen[0] == version and version:
            return seen[1]
        result = live_status(self.sim, res, self.reader)
        self._seen[key] = (version, result)
        return result


def wait_for(
    ctx: HelmContext,
    resources: Sequence[Resource],
    *,
    reader: str,
    timeout: float,
    fail_fast: bool,
    what: str,
    cause: int | None,
) -> Proc:
    """Poll like fluxcd/pkg ssa WaitForSetWithContext: at once, then every 5 s, until done.

    Returns the wait's error text or None. Paused Deployments are skipped and Jobs with
    ``ttlSecondsAfterFinished`` may disappear (helm-controller internal/action/wait.go).
    """
    sim = ctx.sim
    waited = [
        r for r in resources if not (r.kind == "Deployment" and (r.body.get("spec") or {}).get("paused") is True)
    ]
    ttl = {
        object_id(r)
        for r in waited
        if r.kind == "Job" and (r.body.get("spec") or {}).get("ttlSecondsAfterFinished") is not None
    }
    start = sim.now
    deadline = start + timeout
    last: dict[ObjectId, Status] = {}
    start_ev = sim.log(ctx.actor, "wait-start", what, f"waiting for {len(waited)} objects ({reader}, timeout {timeout:g}s)", cause=cause)
    read = _StatusCache(sim, reader)
    ids = [object_id(r) for r in waited]
    while True:
        if ctx.tenant is None and sim.store.unavailable(ctx.actor) is None:  # every GET answers
            entries = list(zip(ids, read.read_all(waited), strict=True))
        else:
            entries = [(oid, _read_error(ctx, r) or read(r)) for oid, r in zip(ids, waited, strict=True)]
        for oid, res in entries:
            if last.get(oid) is not res.status:
                last[oid] = res.status
                sim.log(ctx.actor, "poll", str(oid), f"{oid} status: '{res.status.value}': {res.message}", cause=start_ev.id, status=res.status.value, reader=reader)
        decision = decide(entries, jobs_with_ttl=ttl, fail_fast=fail_fast, deadline_exceeded=sim.now >= deadline)
        if decision.stop:
            sim.log(ctx.actor, "wait-end", what, decision.error or "all resources are ready", cause=start_ev.id, error=decision.error)
            return decision.error
        yield sim.sleep(min(POLL_INTERVAL, deadline - sim.now))


def _read_error(ctx: HelmContext, res: Resource) -> Result | None:
    """The poll's GET failing while the API server is unreachable: fluxcd/cli-utils
    pkg/kstatus/polling/statusreaders/common.go errIdentifierToResourceStatus turns any error but
    NotFound into Unknown carrying the error (helm-controller polls with the direct reader)."""
    ident = {"apiVersion": res.body.get("apiVersion"), "kind": res.kind, "metadata": {"namespace": res.namespace, "name": res.name}}
    err = ctx.sim.store.unreachable(ctx.actor, "Get", ident)
    if err is None and ctx.tenant is not None:
        denied = ctx.tenant.denied("get", ident)
        if denied is not None:
            return Result(Status.UNKNOWN, denied, error=denied)
    return None if err is None else Result(Status.UNKNOWN, err.message, error=err.message)


def _delete(ctx: HelmContext, res: Resource, cause: int | None) -> tuple[bool, str | None]:
    """Delete ``res`` (background propagation); (whether it existed, the client's error)."""
    if ctx.tenant is not None:
        # the authorizer answers before the object is looked up: a denied delete fails even
        # when there is nothing to delete
        denied = ctx.tenant.denied("delete", to_object(res, "", ""))
        if denied is not None:
            ctx.sim.log(ctx.actor, "apply-error", res.ref, denied, cause=cause)
            return True, denied
    try:
        return ctx.sim.store.delete(res.kind, res.namespace, res.name, actor=ctx.actor, cause=cause, grace=_grace(ctx.sim, res)), None
    except ApiError as err:
        ctx.sim.log(ctx.actor, "apply-error", res.ref, err.message, cause=cause)
        return True, err.message


def wait_deleted(ctx: HelmContext, resources: Sequence[Resource], timeout: float) -> Proc:
    """WaitForDelete: poll every 2 s until every object is gone; error on timeout."""
    sim = ctx.sim
    deadline = sim.now + timeout
    while True:
        remaining = [r for r in resources if sim.store.get(r.kind, r.namespace, r.name) is not None]
        if not remaining:
            return None
        if sim.now >= deadline:
            r = remaining[0]
            # helm-controller internal/action/wait.go WaitForDelete → WaitForTermination
            return f"{object_id(r)} termination timeout: context deadline exceeded"
        yield sim.sleep(min(DELETE_POLL_INTERVAL, deadline - sim.now))


# --- applying ------------------------------------------------------------------------------------
def _create_group(
    ctx: HelmContext, group: Sequence[Resource], rel: Release, opts: ActionOptions, cause: int | None
) -> Proc:
    """Create one kind group concurrently; returns the API errors (pkg/kube/client.go batchPerform).

    An object that already exists is adopted (updated) when its ownership metadata names this
    release or take-ownership is on (helm-controller's default), else Helm refuses the install
    (helm/helm pkg/action/validate.go existingResourceConflict).
    """
    sim = ctx.sim
    yield sim.sleep(sim.latency("api_write"))
    errors: list[str] = []
    for res in group:
        obj = to_object(res, rel.name, rel.namespace)
        refused = field_error(sim, obj)
        if refused is not None:
            errors.append(refused)
            sim.log(ctx.actor, "apply-error", res.ref, refused, cause=cause)
            continue
        denied = _denied_write(ctx, obj, opts.server_side)
        if denied is not None:
            errors.append(denied)
            sim.log(ctx.actor, "apply-error", res.ref, denied, cause=cause)
            continue
        live = sim.store.get(res.kind, res.namespace, res.name)
        try:
            if live is None:
                sim.store.create(obj, actor=ctx.actor, cause=cause)
                continue
            conflict = _ownership_conflict(live, rel)
            if conflict and not opts.take_ownership:
                raise ApiError("Conflict", conflict)
            if conflict:
                # helm-controller's take-ownership (its default): the object becomes this
                # release's whoever made it (helm/helm pkg/action/validate.go)
                sim.log(
                    ctx.actor, "adopted", res.ref,
                    f"{res.ref} exists and is not this release's; taken over into {rel.id}",
                    cause=cause, conflict=conflict,
                )
            else:
                sim.log(ctx.actor, "adopted", res.ref, f"{res.ref} exists; adopted into {rel.id}", cause=cause)
            sim.store.apply(obj, actor=ctx.actor, cause=cause)
        except ApiError as err:
            text = _admission_refusal(obj, err, opts.server_side)
            errors.append(text)
            sim.log(ctx.actor, "apply-error", res.ref, text, cause=cause)
    return errors


def _admission_refusal(obj: Mapping[str, Any], err: ApiError, server_side: bool) -> str:
    """An API error as Helm reports it: a server-side apply wraps every error of its patch
    (helm/helm pkg/kube/client.go patchResourceServerSide: "server-side apply failed for object
    …"); a create returns it as is, and so is Helm's own ownership refusal (``Conflict``,
    pkg/action/validate.go, raised before any request)."""
    if not server_side or err.reason == "Conflict":
        return err.message
    return fieldcheck.helm_apply_error(obj, err.message)


def _denied_write(ctx: HelmContext, obj: dict[str, Any], server_side: bool) -> str | None:
    """The impersonated tenant's refusal to create or apply ``obj``, as Helm reports it
    (helm/helm pkg/kube/client.go: server-side apply wraps the API error, a create returns it)."""
    if ctx.tenant is None:
        return None
    if server_side:
        denied = ctx.tenant.denied_apply(obj)
        return None if denied is None else ctx.tenant.ssa_failed(obj, denied)
    return ctx.tenant.denied_create(obj)


def _denied_storage(ctx: HelmContext, verb: str) -> str | None:
    """helm/helm pkg/storage/driver/secrets.go: the release Secret write refused, wrapped."""
    if ctx.tenant is None:
        return None
    denied = ctx.tenant.denied_storage(verb)
    return None if denied is None else f"{verb}: failed to {verb}: {denied}"


def _record_refused(
    ctx: HelmContext, spec: ChartRelease, revision: int, action: str, max_history: int = 0
) -> ActionResult | None:
    """The API server refusing the release Secret Helm creates before any object
    (helm/helm pkg/storage/driver/secrets.go Create: "create: failed to create: …"; the limits
    in ``helmsim.helm.record``): the action fails and no release is stored."""
    secret = record.secret_name(spec.name, revision)
    refused = record.refusal(spec.record, secret, ctx.sim.profile.kubernetes_version)
    if refused is None:
        over_quota = _record_quota(ctx, spec, secret, max_history)
        if over_quota is None:
            return None
        text = f"create: failed to create: {over_quota}"
        ev = ctx.sim.log(ctx.actor, "record-refused", f"{spec.namespace}/{spec.name}", text, action=action)
        return ActionResult(action, False, None, text, trace_id=ev.id)
    text = f"create: failed to create: {refused}"
    assert spec.record is not None and spec.record.stored is not None
    ev = ctx.sim.log(
        ctx.actor, "record-refused", f"{spec.namespace}/{spec.name}", text, action=action,
        stored=list(spec.record.stored), json=spec.record.json_bytes,
        largest=[list(item) for item in spec.record.largest],
    )
    return ActionResult(action, False, None, text, trace_id=ev.id)


def _record_quota(ctx: HelmContext, spec: ChartRelease, secret: str, max_history: int) -> str | None:
    """The storage namespace's quotas refusing the release Secret (a ``count/secrets`` quota
    counts every revision Helm keeps; storage.go Create prunes to maxHistory first)."""
    from helmsim.cluster import quota
    from helmsim.cluster.store import ApiError

    namespace = ctx.storage_key(spec.namespace)
    obj = {
        "apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
        "metadata": {"name": secret, "namespace": namespace, "labels": {"owner": "helm", "name": spec.name}},
    }
    pruned = ctx.storage.pruned_by(namespace, spec.name, max_history)
    try:
        quota.admit(ctx.sim, obj, released=pruned)
    except ApiError as err:
        return err.message
    return None


def _ownership_conflict(live: dict[str, Any], rel: Release) -> str | None:
    """helm/helm pkg/action/validate.go checkOwnership: the text when ``live`` is not ours."""
    meta = live.get("metadata") or {}
    ann = meta.get("annotations") or {}
    kind, ns, name = live.get("kind"), meta.get("namespace"), meta.get("name")
    where = f' in namespace "{ns}"' if ns else ""
    prefix = (
        f'Unable to continue with install: {kind} "{name}"{where} exists and cannot be imported '
        "into the current release: invalid ownership metadata; "
    )
    if (meta.get("labels") or {}).get("app.kubernetes.io/managed-by") != "Helm":
        return prefix + 'label validation error: missing key "app.kubernetes.io/managed-by": must be set to "Helm"'
    if ann.get("meta.helm.sh/release-name") != rel.name:
        current = ann.get("meta.helm.sh/release-name")
        if current is None:
            return prefix + 'annotation validation error: missing key "meta.helm.sh/release-name": must be set to "' + rel.name + '"'
        return prefix + f'annotation validation error: key "meta.helm.sh/release-name" must equal "{rel.name}": current value is "{current}"'
    if ann.get("meta.helm.sh/release-namespace") != rel.namespace:
        current = ann.get("meta.helm.sh/release-namespace")
        return prefix + f'annotation validation error: key "meta.helm.sh/release-namespace" must equal "{rel.namespace}": current value is "{current}"'
    return None


def _apply_hook(ctx: HelmContext, hook: Resource, rel: Release, server_side: bool, cause: int | None) -> Proc:
    sim = ctx.sim
    yield sim.sleep(sim.latency("api_write"))
    obj = to_object(hook, rel.name, rel.namespace)
    refused = field_error(sim, obj) or _denied_write(ctx, obj, server_side)
    if refused is not None:
        return refused
    try:
        if server_side:
            sim.store.apply(obj, actor=ctx.actor, cause=cause)
        else:
            sim.store.create(obj, actor=ctx.actor, cause=cause)
    except ApiError as err:
        return _admission_refusal(obj, err, server_side)
    return None


def exec_hooks(ctx: HelmContext, rel: Release, hooks: Sequence[Resource], event: str, opts: ActionOptions, cause: int | None) -> Proc:
    """Run the hooks of ``event`` one at a time (helm/helm pkg/action/hooks.go execHook).

    Returns the error (None on success). Each hook gets the full timeout; hook waits ignore
    disableWait and disableWaitForJobs (helm-controller internal/action/wait.go WatchUntilReady).
    """
    sim = ctx.sim
    executing = hook_order(hooks, event)
    for hook in executing:
        assert hook.hook is not None
        policies = hook.hook.delete_policies or ("before-hook-creation",)
        ev = sim.log(ctx.actor, "hook-start", hook.ref, f"{event} hook {hook.ref} (weight {hook.hook.weight})", cause=cause, event=event)
        if "before-hook-creation" in policies and hook.kind != "CustomResourceDefinition":
            existed, err = _delete(ctx, hook, ev.id)
            if err:
                return err
            if existed and opts.wait != "hookOnly":
                # hooks.go deleteHookByPolicy → WaitForDelete (a no-op under HookOnly)
                err = yield from wait_deleted(ctx, [hook], opts.timeout)
                if err:
                    return err
        # helm/helm pkg/action/hooks.go: each hook is built (mapped) right before it is created
        unmapped = build.mapping_error(hook, serves(sim))
        if unmapped is not None:
            text = build.HOOK.format(event=event, path=hook.source.path, err=unmapped)
            sim.log(ctx.actor, "apply-error", hook.ref, text, cause=ev.id)
            return text
        run = HookRun(name=hook.name, kind=hook.kind, started_at=sim.now)
        rel.hook_runs.append(run)
        err = yield from _apply_hook(ctx, hook, rel, opts.server_side, ev.id)
        if err:
            run.phase, run.completed_at = "Failed", sim.now
            # helm/helm pkg/action/hooks.go: create errors are wrapped so
            return f"warning: Hook {event} {hook.source.path} failed: {err}"
        err = yield from wait_for(ctx, [hook], reader="hook", timeout=opts.timeout, fail_fast=False, what=hook.ref, cause=ev.id)
        run.completed_at = sim.now
        if err:
            run.phase = "Failed"
            sim.log(ctx.actor, "hook-failed", hook.ref, err, cause=ev.id, event=event)
            if "hook-failed" in policies:
                yield from _delete_hook(ctx, hook, ev.id, opts)
            for earlier in executing[: executing.index(hook)]:
                assert earlier.hook is not None
                if "hook-succeeded" in (earlier.hook.delete_policies or ()):
                    yield from _delete_hook(ctx, earlier, ev.id, opts)
            return err
        run.phase = "Succeeded"
        sim.log(ctx.actor, "hook-succeeded", hook.ref, f"{event} hook {hook.ref} succeeded", cause=ev.id, event=event)
    for hook in reversed(executing):
        assert hook.hook is not None
        if "hook-succeeded" in (hook.hook.delete_policies or ()):
            err = yield from _delete_hook(ctx, hook, cause, opts)
            if err:
                return err
    return None


def _delete_hook(ctx: HelmContext, hook: Resource, cause: int | None, opts: ActionOptions) -> Proc:
    """hooks.go deleteHookByPolicy: delete, then wait for the deletion (unless HookOnly);
    CRDs are never deleted. Returns the error or None."""
    if hook.kind == "CustomResourceDefinition":
        return None
    existed, err = _delete(ctx, hook, cause)
    if err:
        return err
    if existed and opts.wait != "hookOnly":
        err = yield from wait_deleted(ctx, [hook], opts.timeout)
        return err
    return None


def _grace(sim: Simulation, res: Resource) -> float:
    return sim.pod_grace(res.body) if res.kind == "Pod" else 0.0


def _reader(opts: ActionOptions) -> str:
    # helm-controller internal/action/wait.go: WaitWithJobs adds Flux's Job reader
    return "flux-wait-jobs" if opts.wait_for_jobs else "flux-wait"


def _wait_release(ctx: HelmContext, resources: Sequence[Resource], opts: ActionOptions, what: str, cause: int | None) -> Proc:
    if opts.wait == "hookOnly":
        ctx.sim.log(ctx.actor, "wait-skipped", what, "disableWait: the release wait is skipped (hookOnly)", cause=cause)
        return None
    if opts.wait == "legacy":
        err = yield from wait_legacy(ctx, resources, opts, what, cause)
        return err
    err = yield from wait_for(ctx, resources, reader=_reader(opts), timeout=opts.timeout, fail_fast=True, what=what, cause=cause)
    return err


LEGACY_POLL_INTERVAL = 2.0  # helm/helm pkg/kube/wait.go: PollUntilContextCancel(ctx, 2*time.Second, …)
LEGACY_RETRIES = 30  # pkg/kube/wait.go: waitRetries


def wait_legacy(ctx: HelmContext, resources: Sequence[Resource], opts: ActionOptions, what: str, cause: int | None) -> Proc:
    """Helm's legacy waiter: every 2 s, stop at the first object not ready; ``context deadline
    exceeded`` at the timeout; a readiness error is retried up to 30 times in a row."""
    from helmsim.helm.legacy_ready import is_ready

    sim = ctx.sim
    deadline = sim.now + opts.timeout
    errors: dict[tuple[str, str, str, str], int] = {}
    start = sim.log(ctx.actor, "wait-start", what, f"waiting for {len(resources)} objects (legacy, timeout {opts.timeout:g}s)", cause=cause)
    while True:
        pending: Resource | None = None
        for res in resources:
            live = sim.store.get(res.kind, res.namespace, res.name)
            if live is None:
                pending = res
                break
            verdict = is_ready(live, lambda kind, ns: sim.store.list(kind, ns), check_jobs=opts.wait_for_jobs)
            if verdict.error:
                errors[res.key] = errors.get(res.key, 0) + 1
                if errors[res.key] > LEGACY_RETRIES:
                    sim.log(ctx.actor, "wait-end", what, verdict.error, cause=start.id, error=verdict.error)
                    return verdict.error
                pending = res
                break
            errors.pop(res.key, None)
            if not verdict.ready:
                pending = res
                break
        if pending is None:
            sim.log(ctx.actor, "wait-end", what, "all resources are ready", cause=start.id)
            return None
        if sim.now >= deadline:
            err = "context deadline exceeded"
            sim.log(ctx.actor, "wait-end", what, f"{err} (waiting for {pending.ref})", cause=start.id, error=err)
            return err
        yield sim.sleep(min(LEGACY_POLL_INTERVAL, deadline - sim.now))


def _build(ctx: HelmContext, manifest: Sequence[Resource], what: str, cause: int | None = None) -> str | None:
    """Helm's Build of a release manifest against the APIs served now (``helmsim.helm.build``):
    the aggregate error, or None; each unmapped object's error goes to the trace on its lane."""
    failed = build.unmapped(manifest_order(list(manifest)), serves(ctx.sim))
    for res, err in failed:
        ctx.sim.log(ctx.actor, "apply-error", res.ref, err, cause=cause, build=what)
    return build.aggregate([e for _, e in failed])


# --- install -------------------------------------------------------------------------------------
def install(ctx: HelmContext, spec: ChartRelease, opts: ActionOptions) -> Proc:
    """``helm install`` (helm/helm pkg/action/install.go RunWithContext)."""
    sim = ctx.sim
    if spec.crds:
        # helm-controller internal/action/install.go: CRDs are applied before Helm's install runs,
        # so a failure here stores no release (and counts no install failure)
        err = yield from apply_crds(ctx, spec.crds, opts)
        if err:
            return ActionResult("install", False, None, err)
    # helm/helm pkg/action/install.go RunWithContext: the manifest (hooks excluded) is built
    # before any hook runs, any object is created or the release is stored
    unmapped = _build(ctx, spec.manifest, f"{spec.namespace}/{spec.name}")
    if unmapped is not None:
        text = build.INSTALL.format(unmapped)
        ev = sim.log(ctx.actor, "build-failed", f"{spec.namespace}/{spec.name}", text, action="install")
        return ActionResult("install", False, None, text, trace_id=ev.id)
    if ctx.tenant is not None:
        for res in manifest_order(spec.manifest):
            obj = to_object(res, spec.name, spec.namespace)
            denied = ctx.tenant.denied("get", obj)
            if denied is not None:
                # helm/helm pkg/action/validate.go requireAdoption, install.go: before any write
                text = (
                    "unable to continue with install: could not get information about the resource "
                    f'{res.kind} "{res.name}" in namespace "{res.namespace or ""}": {denied}'
                )
                return ActionResult("install", False, None, text)
        denied = _denied_storage(ctx, "create")
        if denied is not None:
            return ActionResult("install", False, None, denied)  # install.go: Releases.Create
    history = ctx.storage.history(ctx.storage_key(spec.namespace), spec.name)
    revision = (history[-1].revision + 1) if history else 1
    refused = _record_refused(ctx, spec, revision, "install")  # install.go: Releases.Create
    if refused is not None:
        return refused
    rel = Release(
        name=spec.name, namespace=spec.namespace, revision=revision, chart=spec.chart,
        status="pending-install", manifest=tuple(manifest_order(spec.manifest)),
        hooks=tuple(spec.hooks), description="Initial install underway",
        apply_method="ssa" if opts.server_side else "csa",
        first_deployed=sim.now, last_deployed=sim.now,
    )
    ctx.storage.add(rel, namespace=ctx.storage_key(rel.namespace))
    start = sim.log(ctx.actor, "action-start", rel.id, f"install {rel.id} ({spec.chart})", action="install")
    if not opts.disable_hooks:
        err = yield from exec_hooks(ctx, rel, spec.hooks, "pre-install", opts, start.id)
        if err:
            return _fail(ctx, rel, f"failed pre-install: {err}", "install", start.id)
    errors: list[str] = []
    for kind, group in kind_groups(list(rel.manifest)):
        ev = sim.log(ctx.actor, "apply-group", kind, f"creating {len(group)} {kind}", cause=start.id, kind=kind, count=len(group))
        errors += yield from _create_group(ctx, group, rel, opts, ev.id)
    if errors:
        # helm/helm pkg/kube/client.go perform: errors.Join (one per line)
        return _fail(ctx, rel, "\n".join(errors), "install", start.id)
    err = yield from _wait_release(ctx, rel.manifest, opts, rel.id, start.id)
    if err:
        return _fail(ctx, rel, err, "install", start.id)
    if not opts.disable_hooks:
        err = yield from exec_hooks(ctx, rel, spec.hooks, "post-install", opts, start.id)
        if err:
            return _fail(ctx, rel, f"failed post-install: {err}", "install", start.id)
    rel.status, rel.description = "deployed", "Install complete"
    done = sim.log(ctx.actor, "release", rel.id, f"{rel.id} deployed: Install complete", cause=start.id, status="deployed")
    return ActionResult("install", True, rel, trace_id=done.id)


def apply_crds(ctx: HelmContext, crds: Sequence[Resource], opts: ActionOptions) -> Proc:
    """helm-controller's own CRD step before an install or upgrade (internal/action/crds.go):
    ``Skip`` does nothing; ``Create`` creates the CRDs that do not exist; ``CreateReplace`` also
    updates existing ones; new or changed CRDs are waited on (60 s) unless the wait is disabled.
    Returns the error text or None."""
    sim = ctx.sim
    if opts.crds == "Skip":
        return None
    start = sim.log("helm-controller", "crds", "crds", f"applying {len(crds)} CustomResourceDefinition(s) (policy {opts.crds})")
    changed: list[Resource] = []
    for crd in crds:
        yield sim.sleep(sim.latency("api_write"))
        refused = field_error(sim, clone(crd.body)) or _denied_write(ctx, clone(crd.body), True)
        if refused is not None:
            return (
                "failed to apply CustomResourceDefinitions: failed to create CustomResourceDefinition "
                f"{crd.name}: {refused}"
            )
        try:
            if sim.store.get(crd.kind, None, crd.name) is None:
                sim.store.create(clone(crd.body), actor="helm-controller", cause=start.id)
                changed.append(crd)
            elif opts.crds == "CreateReplace":
                sim.store.apply(clone(crd.body), actor="helm-controller", cause=start.id)
                changed.append(crd)
        except ApiError as err:
            return (
                "failed to apply CustomResourceDefinitions: failed to create CustomResourceDefinition "
                f"{crd.name}: {err.message}"
            )
    if changed and opts.wait != "hookOnly":
        waited = yield from wait_for(ctx, changed, reader="flux-wait", timeout=CRD_WAIT, fail_fast=True, what="crds", cause=start.id)
        if waited:
            return f"failed to apply CustomResourceDefinitions: failed to wait for CustomResourceDefinition(s): {waited}"
    return None


def _fail(ctx: HelmContext, rel: Release, err: str, action: str, cause: int | None) -> ActionResult:
    rel.status = "failed"
    # helm/helm pkg/action/install.go failRelease / upgrade.go: descriptions
    rel.description = f'Release "{rel.name}" failed: {err}' if action == "install" else f'Upgrade "{rel.name}" failed: {err}'
    ev = ctx.sim.log(ctx.actor, "release", rel.id, f"{rel.id} failed: {err}", cause=cause, status="failed", error=err)
    return ActionResult(action, False, rel, err, trace_id=ev.id)


# --- upgrade -------------------------------------------------------------------------------------
def upgrade(ctx: HelmContext, spec: ChartRelease, opts: ActionOptions) -> Proc:
    """``helm upgrade`` (helm/helm pkg/action/upgrade.go; pkg/kube/client.go update)."""
    sim = ctx.sim
    current = ctx.storage.deployed(ctx.storage_key(spec.namespace), spec.name) or ctx.storage.last(ctx.storage_key(spec.namespace), spec.name)
    if current is None:
        return ActionResult("upgrade", False, None, f'"{spec.name}" has no deployed releases')
    last = ctx.storage.last(ctx.storage_key(spec.namespace), spec.name)
    assert last is not None
    if spec.crds:
        # helm-controller internal/action/upgrade.go: applyCRDs(spec.upgrade.crds) before the upgrade
        err = yield from apply_crds(ctx, spec.crds, opts)
        if err:
            return ActionResult("upgrade", False, None, err)
    if last.status.startswith("pending-"):
        # helm/helm pkg/action/upgrade.go: errPending
        return ActionResult("upgrade", False, None, "another operation (install/upgrade/rollback) is in progress")
    # helm/helm pkg/action/upgrade.go prepareUpgrade validateManifest: the new manifest's Build
    # error is returned as is; performUpgrade then builds the current release's manifest; both
    # before the new release is stored
    unmapped = _build(ctx, spec.manifest, f"{spec.namespace}/{spec.name}")
    if unmapped is None and (current_err := _build(ctx, current.manifest, current.id)) is not None:
        unmapped = build.CURRENT.format(current_err)
    if unmapped is not None:
        ev = sim.log(ctx.actor, "build-failed", f"{spec.namespace}/{spec.name}", unmapped, action="upgrade")
        return ActionResult("upgrade", False, None, unmapped, trace_id=ev.id)
    denied = _denied_storage(ctx, "create")
    if denied is not None:
        return ActionResult("upgrade", False, None, denied)  # upgrade.go: Releases.Create
    refused = _record_refused(ctx, spec, last.revision + 1, "upgrade", opts.max_history)  # performUpgrade: Releases.Create
    if refused is not None:
        return refused
    rel = Release(
        name=spec.name, namespace=spec.namespace, revision=last.revision + 1, chart=spec.chart,
        status="pending-upgrade", manifest=tuple(manifest_order(spec.manifest)), hooks=tuple(spec.hooks),
        description="Preparing upgrade", apply_method=current.apply_method,
        first_deployed=current.first_deployed, last_deployed=sim.now,
    )
    ctx.storage.add(rel, opts.max_history, namespace=ctx.storage_key(rel.namespace))
    start = sim.log(ctx.actor, "action-start", rel.id, f"upgrade {rel.id} ({spec.chart})", action="upgrade")
    if not opts.disable_hooks:
        err = yield from exec_hooks(ctx, rel, spec.hooks, "pre-upgrade", opts, start.id)
        if err:
            return _fail(ctx, rel, f"pre-upgrade hooks failed: {err}", "upgrade", start.id)
    err = yield from update(ctx, current, rel, server_side=rel.apply_method == "ssa", cause=start.id)
    if err:
        return _fail(ctx, rel, err, "upgrade", start.id)
    err = yield from _wait_release(ctx, rel.manifest, opts, rel.id, start.id)
    if err:
        return _fail(ctx, rel, err, "upgrade", start.id)
    if not opts.disable_hooks:
        err = yield from exec_hooks(ctx, rel, spec.hooks, "post-upgrade", opts, start.id)
        if err:
            return _fail(ctx, rel, f"post-upgrade hooks failed: {err}", "upgrade", start.id)
    current.status = "superseded"
    rel.status, rel.description = "deployed", "Upgrade complete"
    done = sim.log(ctx.actor, "release", rel.id, f"{rel.id} deployed: Upgrade complete", cause=start.id, status="deployed")
    return ActionResult("upgrade", True, rel, trace_id=done.id)


def _limit_refusal(sim: Simulation, obj: Mapping[str, Any]) -> str | None:
    """LimitRanger's refusal of a patched claim, before the resize plugin's (helmsim.cluster.admission)."""
    if obj.get("kind") != "PersistentVolumeClaim" or obj.get("apiVersion") != "v1":
        return None
    from helmsim.cluster.admission import admit_claim

    try:
        admit_claim(sim, obj)
    except ApiError as err:
        return err.message
    return None


def update(ctx: HelmContext, original: Release, target: Release, *, server_side: bool, cause: int | None) -> Proc:
    """Walk the target one object at a time; create or patch; then delete what left the chart.

    helm/helm pkg/kube/client.go update: patch errors collected (joined " && "), a create error
    stops the walk, deletes only when nothing failed, skipping live objects with resource-policy
    keep. Returns the error text or None.
    """
    sim = ctx.sim
    old_by_key = {r.key: r for r in original.manifest}
    errors: list[str] = []
    for res in target.manifest:
        yield sim.sleep(sim.latency("api_write"))
        live = sim.store.get(res.kind, res.namespace, res.name)
        obj = to_object(res, target.name, target.namespace)
        unreachable = sim.store.unreachable(ctx.actor, "Get", obj)
        get_error = unreachable.message if unreachable is not None else None
        if get_error is None and ctx.tenant is not None:
            get_error = ctx.tenant.denied("get", obj)
        if get_error is not None:
            # helm/helm pkg/kube/client.go update: the GET before each create-or-patch stops the walk
            err_text = f"could not get information about the resource: {get_error}"
            sim.log(ctx.actor, "apply-error", res.ref, err_text, cause=cause)
            return err_text
        refused = field_error(sim, obj) or _denied_write(ctx, obj, server_side)
        if live is None:
            if refused is not None:
                text = f"failed to create resource: {refused}"
                sim.log(ctx.actor, "apply-error", res.ref, text, cause=cause)
                return text
            try:
                sim.store.create(obj, actor=ctx.actor, cause=cause)
            except ApiError as err:
                # pkg/kube/client.go update: a create error stops the walk, wrapped so
                text = f"failed to create resource: {err.message}"
                sim.log(ctx.actor, "apply-error", res.ref, text, cause=cause)
                return text
            continue
        if refused is not None:
            sim.log(ctx.actor, "apply-error", res.ref, refused, cause=cause)
            errors.append(refused)
            continue
        old = old_by_key.get(res.key)
        # What the patch changes: the target over the live object, with what the previous
        # manifest set but the target drops removed (pkg/kube/client.go createPatch: three-way).
        merged = merged_for_apply(live, obj, to_object(old, original.name, original.namespace) if old else None)
        problems: list[str] = []
        if not spec_equal(merged, live):
            problems = immutable.violations(
                live, merged, live=live, server_side=server_side,
                kube_version=getattr(sim.profile, "kubernetes_version", None), namespace=res.namespace,
                # the resize admission reads the claim's StorageClass as the cluster holds it
                storage_classes={str(sc["metadata"]["name"]): sc for sc in sim.store.list("StorageClass")},
                validating=lambda o: _limit_refusal(sim, o),
            )
        if problems:
            for p in problems:
                sim.log(ctx.actor, "apply-error", res.ref, p, cause=cause)
            errors.extend(problems)
            continue
        try:
            sim.store.apply(obj, actor=ctx.actor, cause=cause)
        except ApiError as err:
            # pkg/kube/client.go patchResourceServerSide / patchResourceClientSide wrap the refusal
            text = immutable.patch_error(res.kind, res.api_version, res.name, res.namespace or "", err.message, server_side)
            sim.log(ctx.actor, "apply-error", res.ref, text, cause=cause)
            errors.append(text)
    if errors:
        return " && ".join(errors)
    new_keys = {r.key for r in target.manifest}
    for res in original.manifest:
        if res.key in new_keys:
            continue
        live = sim.store.get(res.kind, res.namespace, res.name)
        if live is None:
            continue
        if ((live.get("metadata") or {}).get("annotations") or {}).get("helm.sh/resource-policy") == "keep":
            sim.log(ctx.actor, "kept", res.ref, f"{res.ref} kept (helm.sh/resource-policy: keep)", cause=cause)
            continue
        _, failed = _delete(ctx, res, cause)
        if failed:
            # pkg/kube/client.go update: delete errors other than NotFound are collected
            errors.append(f"failed to delete resource namespace={res.namespace or ''}, name={res.name}, kind={res.kind}: {failed}")
    return " && ".join(errors) if errors else None


# --- test ----------------------------------------------------------------------------------------
def release_test(
    ctx: HelmContext, namespace: str, name: str, opts: ActionOptions, filters: Sequence[tuple[str, bool]] = ()
) -> Proc:
    """``helm test`` (helm/helm pkg/action/release_testing.go Run): the latest release's hooks,
    filtered by name (``(name, exclude)``: excluded names first, then only the included ones),
    run as the ``test`` event one at a time (pkg/action/hooks.go execHook); the result carries
    Helm's hook error and the number of test hooks."""
    sim = ctx.sim
    rel = ctx.storage.last(ctx.storage_key(namespace), name)
    if rel is None:
        return ActionResult("test", False, None, "release: not found")
    hooks = list(rel.hooks)
    excluded = {n for n, exclude in filters if exclude}
    included = {n for n, exclude in filters if not exclude}
    if excluded:
        hooks = [h for h in hooks if h.name not in excluded]
    if included:
        hooks = [h for h in hooks if h.name in included]
    tests = hook_order(hooks, "test")
    start = sim.log(ctx.actor, "action-start", rel.id, f"test {rel.id}: {len(tests)} test hook(s)", action="test")
    before = len(rel.hook_runs)
    err = yield from exec_hooks(ctx, rel, hooks, "test", opts, start.id)
    runs = rel.hook_runs[before:]
    ev = sim.log(
        ctx.actor, "tested", rel.id, err or f"{len(tests)} test hook(s) succeeded", cause=start.id,
        hooks=len(tests), failed=sum(r.phase == "Failed" for r in runs), error=err,
    )
    return ActionResult("test", err is None, rel, err, trace_id=ev.id, tested_hooks=len(tests))


# --- rollback and uninstall ----------------------------------------------------------------------
def rollback(ctx: HelmContext, namespace: str, name: str, opts: ActionOptions) -> Proc:
    """``helm rollback`` to the previous deployed-or-superseded revision (pkg/action/rollback.go)."""
    sim = ctx.sim
    history = ctx.storage.history(ctx.storage_key(namespace), name)
    if len(history) < 2:
        return ActionResult("rollback", False, None, f'release "{name}" has no previous revision')
    current = history[-1]
    target_rev = next((r for r in reversed(history[:-1]) if r.status in ("deployed", "superseded")), None)
    if target_rev is None:
        return ActionResult("rollback", False, None, "no revision to roll back to")
    rel = Release(
        name=name, namespace=namespace, revision=current.revision + 1, chart=target_rev.chart,
        status="pending-rollback", manifest=target_rev.manifest, hooks=target_rev.hooks,
        description=f"Rollback to {target_rev.revision}", apply_method=target_rev.apply_method,
        first_deployed=target_rev.first_deployed, last_deployed=sim.now,
    )
    ctx.storage.add(rel, opts.max_history, namespace=ctx.storage_key(rel.namespace))
    start = sim.log(ctx.actor, "action-start", rel.id, f"rollback {namespace}/{name} to revision {target_rev.revision}", action="rollback")
    # helm/helm pkg/action/rollback.go performRollback: both manifests are built after the
    # rollback release is stored; a failure leaves it pending-rollback
    unmapped = _build(ctx, current.manifest, current.id, start.id)
    text = build.CURRENT.format(unmapped) if unmapped is not None else None
    if text is None and (unmapped := _build(ctx, rel.manifest, rel.id, start.id)) is not None:
        text = build.NEW.format(unmapped)
    if text is not None:
        sim.log(ctx.actor, "build-failed", rel.id, text, cause=start.id, action="rollback")
        return ActionResult("rollback", False, rel, text, rollback_to=target_rev.revision)
    if not opts.disable_hooks:
        err = yield from exec_hooks(ctx, rel, rel.hooks, "pre-rollback", opts, start.id)
        if err:
            return ActionResult("rollback", False, rel, err)  # record stays pending-rollback
    err = yield from update(ctx, current, rel, server_side=rel.apply_method == "ssa", cause=start.id)
    if err:
        # helm/helm pkg/action/rollback.go performRollback: an update failure marks the current
        # release superseded and the new one failed ('Rollback "x" failed: …')
        current.status = "superseded"
        rel.status, rel.description = "failed", f'Rollback "{name}" failed: {err}'
        sim.log(ctx.actor, "release", rel.id, f"{rel.id} failed: {err}", cause=start.id, status="failed", error=err)
        return ActionResult("rollback", False, rel, err, rollback_to=target_rev.revision)
    err = yield from _wait_release(ctx, rel.manifest, opts, rel.id, start.id)
    if err:
        # rollback.go: a wait failure records 'Release "x" failed: …' and returns it wrapped
        rel.status, rel.description = "failed", f'Release "{name}" failed: {err}'
        sim.log(ctx.actor, "release", rel.id, f"{rel.id} failed: {err}", cause=start.id, status="failed", error=err)
        return ActionResult("rollback", False, rel, f"release {name} failed: {err}", rollback_to=target_rev.revision)
    if not opts.disable_hooks:
        err = yield from exec_hooks(ctx, rel, rel.hooks, "post-rollback", opts, start.id)
        if err:
            return ActionResult("rollback", False, rel, err)
    for old in history:
        if old.status == "deployed":
            old.status = "superseded"
    current.status = "superseded" if current.status != "failed" else "failed"
    rel.status = "deployed"
    done = sim.log(ctx.actor, "release", rel.id, f"{rel.id} deployed: Rollback to {target_rev.revision}", cause=start.id, status="deployed")
    return ActionResult("rollback", True, rel, trace_id=done.id, rollback_to=target_rev.revision)


def uninstall(ctx: HelmContext, namespace: str, name: str, opts: ActionOptions, *, keep_history: bool = False) -> Proc:
    """``helm uninstall`` (pkg/action/uninstall.go): pre-delete hooks, deletes in UninstallOrder."""
    from helmsim.helm.order import UNINSTALL_ORDER_V4

    sim = ctx.sim
    rel = ctx.storage.last(ctx.storage_key(namespace), name)
    if rel is None:
        return ActionResult("uninstall", False, None, f"uninstall: Release not loaded: {name}: release: not found")
    rel.status = "uninstalling"
    start = sim.log(ctx.actor, "action-start", rel.id, f"uninstall {rel.id}", action="uninstall")
    if not opts.disable_hooks:
        err = yield from exec_hooks(ctx, rel, rel.hooks, "pre-delete", opts, start.id)
        if err:
            return ActionResult("uninstall", False, rel, err)
    errors: list[str] = []
    to_delete: list[Resource] = []
    yield sim.sleep(sim.latency("api_write"))
    for res in manifest_order(list(rel.manifest), UNINSTALL_ORDER_V4):
        # helm/helm pkg/action/resource_policy.go filterManifestsToKeep: lowercased, trimmed; any
        # other non-empty value is neither deleted nor listed
        policy = res.annotations.get("helm.sh/resource-policy", "").strip().lower()
        if policy:
            if policy == "keep":
                sim.log(ctx.actor, "kept", res.ref, f"{res.ref} kept due to the resource policy", cause=start.id)
            continue
        to_delete.append(res)
        _, err = _delete(ctx, res, start.id)
        if err:
            errors.append(err)
    # helm/helm pkg/action/uninstall.go: errors of the deletes, the wait and the post-delete hooks
    # are collected; the release is still marked uninstalled (and purged)
    if opts.wait != "hookOnly":
        err = yield from wait_deleted(ctx, to_delete, opts.timeout)
        if err:
            errors.append(err)
    if not opts.disable_hooks:
        err = yield from exec_hooks(ctx, rel, rel.hooks, "post-delete", opts, start.id)
        if err:
            errors.append(err)
    rel.status, rel.description = "uninstalled", "Uninstallation complete"
    if not keep_history:
        ctx.storage.purge(ctx.storage_key(namespace), name)
    done = sim.log(ctx.actor, "release", rel.id, f"{rel.id} uninstalled", cause=start.id, status="uninstalled")
    if errors:
        text = f"uninstallation completed with {len(errors)} error(s): " + "; ".join(errors)
        return ActionResult("uninstall", False, rel, text, trace_id=done.id)
    return ActionResult("uninstall", True, rel, trace_id=done.id)
