"""Flux Kustomizations (kustomize-controller) around HelmReleases: what each applies, in
``dependsOn`` order, with ``wait``, ``healthChecks``, ``healthCheckExprs`` (CEL), ``timeout`` and
``retryInterval``, and the Ready conditions kustomize-controller writes.

fluxcd/kustomize-controller api/v1/kustomization_types.go (fields, GetTimeout, GetRetryInterval),
internal/controller/kustomization_controller.go (Reconcile, checkDependencies, reconcile,
checkHealth), internal/generator (a path without kustomization.yaml takes every manifest under
it); fluxcd/pkg runtime/cel (status_evaluator.go: healthCheckExprs), ssa/manager_wait.go.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import msgspec
import simpy
from msgspec import Struct, field
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmsim import kstatus
from helmsim.cluster.engine import Simulation
from helmsim.cluster.store import ApiError, clone
from helmsim.errors import InputError
from helmsim.flux.helmrelease import Duration, HelmRelease
from helmsim.flux.inputs import FluxTree
from helmsim.flux.reconcile import Condition, ReleaseState, go_duration
from helmsim.helm import actions
from helmsim.kstatus import ObjectId, Result, Status
from helmsim.kstatus.wait import decide
from helmsim.manifests import Resource, Source

if TYPE_CHECKING:
    from helmsim.kustomize.build import Overlay

Proc = Generator[simpy.Event, Any, Any]

GROUP = "kustomize.toolkit.fluxcd.io"
ACTOR = "kustomize-controller"
DEPENDENCY_REQUEUE = 30.0  # kustomize-controller main.go --requeue-dependency default 30s
POLL_INTERVAL = 5.0  # kustomization_controller.go checkHealth: WaitOptions Interval 5s
MIN_TIMEOUT = 30.0  # api/v1 GetTimeout: never below 30s


class _Model(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", populate_by_name=True, frozen=True)


class Dependency(_Model):
    name: str
    namespace: str | None = None
    ready_expr: str | None = Field(default=None, alias="readyExpr")


class HealthCheck(_Model):
    """meta.NamespacedObjectKindReference."""

    api_version: str = Field(default="", alias="apiVersion")
    kind: str
    name: str
    namespace: str | None = None


class HealthCheckExpr(_Model):
    """kustomize.CustomHealthCheck: CEL expressions for one apiVersion and kind."""

    api_version: str = Field(alias="apiVersion")
    kind: str = ""
    current: str
    in_progress: str | None = Field(default=None, alias="inProgress")
    failed: str | None = None


class Spec(_Model):
    """api/v1 KustomizationSpec; fields that do not change the rollout are accepted as given."""

    interval: Duration
    path: str = "./"
    source_ref: dict[str, Any] = Field(default_factory=dict, alias="sourceRef")
    depends_on: tuple[Dependency, ...] = Field(default=(), alias="dependsOn")
    wait: bool = False
    health_checks: tuple[HealthCheck, ...] = Field(default=(), alias="healthChecks")
    health_check_exprs: tuple[HealthCheckExpr, ...] = Field(default=(), alias="healthCheckExprs")
    timeout: Duration | None = None
    retry_interval: Duration | None = Field(default=None, alias="retryInterval")
    target_namespace: str | None = Field(default=None, alias="targetNamespace")
    suspend: bool = False
    prune: Any = None
    force: Any = None
    service_account_name: Any = Field(default=None, alias="serviceAccountName")
    common_metadata: Any = Field(default=None, alias="commonMetadata")
    decryption: Any = None
    kube_config: Any = Field(default=None, alias="kubeConfig")
    post_build: Any = Field(default=None, alias="postBuild")
    deletion_policy: Any = Field(default=None, alias="deletionPolicy")
    name_prefix: Any = Field(default=None, alias="namePrefix")
    name_suffix: Any = Field(default=None, alias="nameSuffix")
    patches: Any = None
    images: Any = None
    components: Any = None
    ignore_missing_components: Any = Field(default=None, alias="ignoreMissingComponents")
    ignore: Any = None
    build_metadata: Any = Field(default=None, alias="buildMetadata")


class Kustomization(_Model):
    name: str
    namespace: str
    spec: Spec
    source: str = ""
    line: int = 1

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def timeout(self) -> float:
        """api/v1 GetTimeout: spec.timeout, else interval − 30s; at least 30s."""
        t = self.spec.timeout if self.spec.timeout is not None else self.spec.interval - 30.0
        return max(MIN_TIMEOUT, t)

    @property
    def retry_interval(self) -> float:
        """api/v1 GetRetryInterval: spec.retryInterval, else the interval."""
        return self.spec.retry_interval if self.spec.retry_interval is not None else self.spec.interval

    def dependencies(self) -> list[str]:
        return [f"{d.namespace or self.namespace}/{d.name}" for d in self.spec.depends_on]


def overlay_of(ks: Kustomization) -> Overlay | None:
    """What kustomize-controller adds to the build of the Kustomization's path: its
    ``spec.patches`` and ``spec.images`` (fluxcd/pkg kustomize_generator.go GenerateManifest);
    None when it adds neither."""
    from helmsim.kustomize.build import Overlay
    from helmsim.kustomize.patches import Patch
    from helmsim.kustomize.select import Selector

    entries = []
    for p in ks.spec.patches or ():
        if not isinstance(p, Mapping):
            raise InputError(f"Kustomization {ks.ref}: spec.patches entries must be mappings", file=ks.source or None, line=ks.line)
        target = p.get("target")
        entries.append(Patch(str(p.get("patch") or ""), Selector.from_dict(target) if isinstance(target, Mapping) else None))
    found = tuple(i for i in ks.spec.images or () if isinstance(i, Mapping))
    if not entries and not found:
        return None
    return Overlay(tuple(entries), found)


def is_kustomization(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Kustomization" and str(obj.get("apiVersion", "")).startswith(f"{GROUP}/")


def is_kustomize_config(obj: Mapping[str, Any]) -> bool:
    """A kustomization.yaml (kustomize.config.k8s.io): build input, never applied."""
    return str(obj.get("apiVersion", "")).startswith("kustomize.config.k8s.io/")


def parse_kustomization(obj: Mapping[str, Any], *, source: str = "", line: int = 1) -> Kustomization:
    """Validate a Kustomization; errors name the file and the object's line."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name, namespace = meta.get("name"), meta.get("namespace", "default")
    if not isinstance(name, str) or not name or not isinstance(namespace, str) or not namespace:
        raise InputError("Kustomization has no metadata.name and namespace (strings)", file=source or None, line=line)
    try:
        spec = Spec.model_validate(obj.get("spec") or {})
        return Kustomization(name=name, namespace=namespace, spec=spec, source=source, line=line)
    except ValidationError as err:
        first = err.errors()[0]
        path = ".".join(str(p) for p in ("spec", *first["loc"]))
        if first["type"] == "extra_forbidden":
            raise InputError(f'Kustomization {name}: unknown field "{path}"', file=source or None, line=line) from None
        raise InputError(f"Kustomization {name}: {path}: {first['msg']}", file=source or None, line=line) from None


# --- what each Kustomization applies ---------------------------------------------------------------
class Unit(Struct, frozen=True):
    """One Kustomization and what its path holds in the tree."""

    ks: Kustomization
    directory: Path | None
    """The resolved ``spec.path`` (None when it does not exist)."""
    objects: tuple[Mapping[str, Any], ...] = ()
    helmreleases: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    """Kustomizations it applies."""
    owner: str | None = None
    """The Kustomization that applies this one (None: applied before the simulation)."""
    revision: str = ""
    build_error: str | None = None
    """Why its build fails (postBuild substitution: helmsim.flux.postbuild), None when it builds."""

    @property
    def ref(self) -> str:
        return self.ks.ref


def plan(tree: FluxTree, roots: Sequence[Path]) -> tuple[Unit, ...]:
    """The Kustomizations of ``tree``, each with the HelmReleases, Kustomizations and objects
    under its ``spec.path`` (resolved under the first of ``roots`` where it exists): a file
    belongs to the deepest Kustomization path holding it (a Kustomization holding its own file,
    like flux-system, is the root)."""
    kss = [
        parse_kustomization(obj, source=src[0], line=src[1])
        for obj, src in zip(tree.objects, tree.sources, strict=False)
        if is_kustomization(obj)
    ]
    seen: set[str] = set()
    for ks in kss:
        if ks.ref in seen:
            raise InputError(f"Kustomization {ks.ref} is defined twice", file=ks.source or None, line=ks.line)
        seen.add(ks.ref)
    dirs = {ks.ref: resolve_path(ks.spec.path, _roots_of(ks, tree, roots)) for ks in kss}

    def owner(file: str, self_ref: str | None = None) -> str | None:
        path = Path(file).resolve()
        best: tuple[int, str] | None = None
        for ref, d in dirs.items():
            if d is None or ref == self_ref or not path.is_relative_to(d):
                continue
            if best is None or len(d.parts) > best[0]:
                best = (len(d.parts), ref)
        return best[1] if best else None

    objects: dict[str, list[Mapping[str, Any]]] = {ks.ref: [] for ks in kss}
    hrs: dict[str, list[str]] = {ks.ref: [] for ks in kss}
    children: dict[str, list[str]] = {ks.ref: [] for ks in kss}
    owners: dict[str, str | None] = {}
    for ks in kss:
        own = owner(tree.applied_from(ks.source), ks.ref)
        owners[ks.ref] = own
        if own is not None:
            children[own].append(ks.ref)
    for obj, (file, _line) in zip(tree.objects, tree.sources, strict=False):
        if is_kustomization(obj) or is_kustomize_config(obj):
            continue
        own = owner(tree.applied_from(file))
        if own is not None:
            objects[own].append(obj)
    for hr in tree.helmreleases:
        own = owner(tree.applied_from(hr.source)) if hr.source else None
        if own is not None:
            hrs[own].append(hr.ref)
    return tuple(
        Unit(
            ks, dirs[ks.ref], tuple(objects[ks.ref]), tuple(hrs[ks.ref]), tuple(children[ks.ref]),
            owners[ks.ref], _revision(tree, ks, dirs[ks.ref]),
        )
        for ks in kss
    )


def artifact_key(ks: Kustomization) -> str | None:
    """``namespace/name`` of the ExternalArtifact the Kustomization builds from, if it does."""
    ref = ks.spec.source_ref
    if ref.get("kind") != "ExternalArtifact":
        return None
    return f"{ref.get('namespace') or ks.namespace}/{ref.get('name')}"


def _roots_of(ks: Kustomization, tree: FluxTree, roots: Sequence[Path]) -> Sequence[Path]:
    """Where the Kustomization's path is read: its ExternalArtifact's content, else ``roots``."""
    key = artifact_key(ks)
    found = tree.artifacts.get(key) if key is not None else None
    # an ExternalArtifact no ArtifactGenerator of the input makes is taken to serve the local
    # tree (the report says so: unmodelled_notes)
    return [Path(found)] if found else roots


def resolve_path(path: str, roots: Sequence[Path]) -> Path | None:
    """A Kustomization's ``spec.path`` under the first of ``roots`` where it is a directory,
    joined as kustomize-controller joins it (securejoin.SecureJoin: ``..`` and an absolute path
    stay inside the root; kustomization_controller.go reconcile)."""
    kept: list[str] = []
    for part in PurePosixPath(path).parts:
        if part in ("/", "."):
            continue
        if part == "..":
            if kept:
                kept.pop()
            continue
        kept.append(part)
    for root in roots:
        d = root.joinpath(*kept).resolve()
        if d.is_dir():
            return d
    return None


def _revision(tree: FluxTree, ks: Kustomization, directory: Path | None) -> str:
    """``<branch>@sha1:<digest>``: the source's branch (GitRepository spec.ref.branch, default
    master) and helmsim's digest of the files under the path, standing for the commit."""
    ref = ks.spec.source_ref
    branch = "master"
    for obj in tree.objects:
        meta = obj.get("metadata") or {}
        if obj.get("kind") == ref.get("kind") and meta.get("name") == ref.get("name"):
            spec_ref = ((obj.get("spec") or {}).get("ref") or {}) if isinstance(obj.get("spec"), Mapping) else {}
            branch = str(spec_ref.get("branch") or branch) if isinstance(spec_ref, Mapping) else branch
    digest = hashlib.sha1()
    if directory is not None:
        for f in sorted(directory.rglob("*")):
            if f.is_file() and f.suffix in (".yaml", ".yml", ".json"):
                digest.update(str(f.relative_to(directory)).encode() + b"\0" + f.read_bytes())
    return f"{branch}@sha1:{digest.hexdigest()}"


def _stage(obj: Mapping[str, Any]) -> int:
    """fluxcd/pkg ssa/manager_apply.go ApplyAllStaged: CRDs, Namespaces and ClusterRoles first
    (utils/is.go IsClusterDefinition), then class definitions (kinds ending in "Class"), then the
    rest."""
    kind, api = str(obj.get("kind") or ""), str(obj.get("apiVersion") or "")
    if (kind == "CustomResourceDefinition" and api.startswith("apiextensions.k8s.io/")) or (
        kind == "Namespace" and api == "v1") or (kind == "ClusterRole" and api.startswith("rbac.authorization.k8s.io/")):
        return 0
    return 1 if kind.endswith("Class") else 2


def _staged(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The objects in the order the staged apply sends them (stable within a stage)."""
    return sorted(objects, key=_stage)


def _dry_run_error(body: Mapping[str, Any], err: ApiError) -> str:
    """fluxcd/pkg ssa/errors/errors.go DryRunErr.Error: the dry-run before the apply names the
    object (utils.FmtUnstructured ``Kind/namespace/name``) and the API server's reason."""
    meta = body.get("metadata") or {}
    ns = str(meta.get("namespace") or "")
    what = f"{body.get('kind')}/{ns + '/' if ns else ''}{meta.get('name')}"
    if err.reason == "NotFound":
        return f"{what} {'not found' if ns else 'namespace not specified'}: {err.message}"
    reason = {"NoKindMatch": "", "InternalError": "InternalError"}.get(err.reason, err.reason)
    return f"{what} dry-run failed{f' ({reason})' if reason else ''}: {err.message}"


# fields of api/v1 KustomizationSpec that change what is applied and are not simulated
_UNMODELLED = (
    ("name_prefix", "namePrefix"), ("name_suffix", "nameSuffix"),
    ("components", "components"), ("decryption", "decryption"), ("kube_config", "kubeConfig"),
    ("service_account_name", "serviceAccountName"),
)


def unmodelled_notes(ks: Kustomization, known: set[tuple[str, str, str]]) -> list[str]:
    """What the report says of a Kustomization's fields and source it does not simulate."""
    out = []
    if ks.spec.suspend:
        # kustomization_controller.go Reconcile: a suspended object is returned before any step
        out.append(
            f"Kustomization {ks.ref} is suspended (spec.suspend: true): kustomize-controller does not reconcile it, "
            "so nothing it holds is applied by it"
        )
    fields = [yaml for attr, yaml in _UNMODELLED if getattr(ks.spec, attr) not in (None, [], {}, ())]
    if fields:
        out.append(f"Kustomization {ks.ref}: spec.{', spec.'.join(fields)} not applied to what it applies (not modelled)")
    exprs = [d.name for d in ks.spec.depends_on if d.ready_expr]
    if exprs:
        # kustomization_controller.go checkDependencies: a readyExpr replaces the Ready check
        out.append(
            f"Kustomization {ks.ref}: the readyExpr of dependsOn {', '.join(exprs)} is not evaluated; the simulation "
            "waits for the dependency's Ready condition instead"
        )
    ref = ks.spec.source_ref
    kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    namespace = str(ref.get("namespace") or ks.namespace)
    if kind and (kind, namespace, name) not in known:
        out.append(
            f"Kustomization {ks.ref}: its source {kind}/{namespace}/{name} is not in the input; assumed Ready and "
            "serving the files given (kustomize-controller would be ArtifactFailed without it)"
        )
    return out


def gated_releases(units: Sequence[Unit]) -> dict[str, str]:
    """HelmRelease ref → the Kustomization that applies it."""
    return {hr: u.ref for u in units for hr in u.helmreleases}


# --- status of Flux objects, as kstatus reads them --------------------------------------------------
def flux_object(kind: str, api_version: str, ref: str, st: ReleaseState | None) -> dict[str, Any]:
    """A HelmRelease or Kustomization as the API server holds it, from its reconciler's state:
    generation 1, observed once the controller finished a reconcile (before that, or before the
    controller first saw it, kstatus reads it InProgress: LatestGenerationNotObserved)."""
    ns, name = ref.split("/", 1)
    observed = st is not None and bool(st.conditions) and not st.in_reconcile
    conds = [
        {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
        for c in (st.conditions.values() if st is not None else ())
    ]
    return {
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": ns, "generation": 1},
        "status": {"observedGeneration": 1 if observed else 0, "conditions": conds},
    }


class CelReader(Struct):
    """fluxcd/pkg runtime/cel StatusEvaluator: for a matching GroupKind, InProgress, then Failed,
    then Current expressions; none true → InProgress; a generation not observed → InProgress.
    Evaluated with the ``cel`` library (common-expression-language)."""

    exprs: Sequence[HealthCheckExpr]
    _programs: dict[str, Any] = field(default_factory=dict)

    def supports(self, api_version: str, kind: str) -> HealthCheckExpr | None:
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        for e in self.exprs:
            g = e.api_version.rsplit("/", 1)[0] if "/" in e.api_version else ""
            if g == group and (e.kind == kind or not e.kind):
                return e
        return None

    def read(self, e: HealthCheckExpr, obj: Mapping[str, Any]) -> Result:
        gen = (obj.get("metadata") or {}).get("generation")
        observed = (obj.get("status") or {}).get("observedGeneration") if isinstance(obj.get("status"), Mapping) else None
        if isinstance(gen, int) and isinstance(observed, int) and gen != observed:
            return Result(Status.IN_PROGRESS, "")
        for expr, status in ((e.in_progress, Status.IN_PROGRESS), (e.failed, Status.FAILED), (e.current, Status.CURRENT)):
            if not expr:
                continue
            try:
                value = self._program(expr).execute(dict(obj))
            except Exception as err:  # noqa: BLE001 - the library's evaluation errors
                # runtime/cel/expression.go EvaluateBoolean; the reader error makes it Unknown
                msg = f"failed to evaluate the CEL expression '{expr}': {err}"
                return Result(Status.UNKNOWN, msg, error=msg)
            if not isinstance(value, bool):
                msg = f"failed to evaluate CEL expression as boolean: '{expr}'"
                return Result(Status.UNKNOWN, msg, error=msg)
            if value:
                return Result(status, "")
        return Result(Status.IN_PROGRESS, "")

    def _program(self, expr: str) -> Any:
        import cel

        if expr not in self._programs:
            self._programs[expr] = cel.compile(expr)
        return self._programs[expr]


def check_expressions(ks: Kustomization) -> str | None:
    """runtime/cel NewStatusReader: the error for an expression that does not parse (the
    Kustomization is then Stalled InvalidCELExpression)."""
    import cel

    for i, e in enumerate(ks.spec.health_check_exprs):
        for label, expr in (("Current", e.current), ("InProgress", e.in_progress), ("Failed", e.failed)):
            if not expr:
                continue
            try:
                cel.compile(expr)
            except Exception as err:  # noqa: BLE001 - the library's parse errors
                return (
                    f"failed to create custom status evaluator for healthchecks[{i}]: failed to parse the expression "
                    f"{label}: failed to parse the CEL expression '{expr}': {err}"
                )
    return None


# --- the reconciler ----------------------------------------------------------------------------------
TERMINAL = "Reconciliation failed terminally due to configuration error"  # kustomization_controller.go TerminalErrorMessage


class KustomizationReconciler(Struct):
    """kustomize-controller's loop for one Kustomization on the simulated cluster.

    ``states`` holds every Kustomization's state (``dependsOn`` reads them), ``hr_states`` the
    HelmReleases' (health checks read them); ``applied[ref]`` fires when the object is first
    applied to the cluster (a HelmRelease's reconciler and a child Kustomization wait for it).
    """

    sim: Simulation
    unit: Unit
    states: dict[str, ReleaseState]
    hr_states: dict[str, ReleaseState]
    applied: dict[str, simpy.Event]
    known: frozenset[str]

    @property
    def state(self) -> ReleaseState:
        return self.states.setdefault(self.unit.ref, ReleaseState())

    def _mark(self, type_: str, status: str, reason: str, message: str) -> None:
        self.state.set(type_, status, reason, message, self.sim.now)
        if type_ == "Ready":
            self.sim.log(ACTOR, "condition", f"Kustomization/{self.unit.ref}", f"Ready={status} {reason}: {message}",
                         type=type_, status=status, reason=reason)

    def _event(self, message: str, severity: str = "info") -> None:
        self.sim.log(ACTOR, "event", f"Kustomization/{self.unit.ref}", message, severity=severity)

    def run(self) -> Proc:
        ks, unit, st = self.unit.ks, self.unit, self.state
        if unit.owner is not None and unit.ref in self.applied:
            yield self.applied[unit.ref]
        if ks.spec.suspend:
            return "suspended"
        invalid = check_expressions(ks)
        if invalid:
            msg = f"{TERMINAL}: {invalid}"
            self._mark("Ready", "False", "InvalidCELExpression", msg)
            self._mark("Stalled", "True", "InvalidCELExpression", msg)
            st.stalled = True
            return "stalled"
        while True:
            blocked = self._unready_dependency()
            if blocked:
                self._mark("Ready", "False", "DependencyNotReady", blocked)
                self._event(f"Dependencies do not meet ready condition, retrying in {go_duration(DEPENDENCY_REQUEUE)}")
                yield self.sim.sleep(DEPENDENCY_REQUEUE)
                continue
            st.in_reconcile = True
            try:
                ok = yield from self._reconcile()
            finally:
                st.in_reconcile = False
            if ok:
                yield self.sim.sleep(ks.spec.interval)  # RequeueAfter interval (jitter not modelled)
            else:
                yield self.sim.sleep(ks.retry_interval)

    def _unready_dependency(self) -> str | None:
        """kustomization_controller.go checkDependencies (same source: the revision matches)."""
        for dep in self.unit.ks.dependencies():
            if dep not in self.known:
                ns, name = dep.split("/", 1)
                return (
                    f"dependency '{dep}' not found: kustomizations.{GROUP} \"{name}\" not found"
                )
            st = self.states.get(dep)
            if st is None or not st.observed_ready:
                return f"dependency '{dep}' is not ready"
        return None

    def _reconcile(self) -> Proc:
        ks, unit = self.unit.ks, self.unit
        rev = unit.revision
        timeout = go_duration(self.unit.ks.timeout)
        self._mark("Reconciling", "True", "Progressing", f"Building manifests for revision {rev} with a timeout of {timeout}")
        if self.state.get("Ready") is None:
            self._mark("Ready", "Unknown", "Progressing", "Reconciliation in progress")
        if unit.directory is None:
            msg = f"kustomization path not found: stat {ks.spec.path}: no such file or directory"
            self._mark("Ready", "False", "ArtifactFailed", msg)
            self.state.drop("Reconciling")
            self._event(msg, "error")
            return False
        if unit.build_error is not None:
            # kustomization_controller.go reconcile: the build (postBuild included) failed
            self._mark("Ready", "False", "BuildFailed", unit.build_error)
            self.state.drop("Reconciling")
            self._event(unit.build_error, "error")
            return False
        yield self.sim.sleep(self.sim.latency("api_write"))
        applied: list[tuple[str, str, str, str]] = []  # apiVersion, kind, namespace, name
        for obj in _staged(unit.objects):
            body = self._namespaced(clone(dict(obj)))
            meta = body.get("metadata") or {}
            try:
                self.sim.store.apply(body, actor=ACTOR)
            except ApiError as err:
                msg = _dry_run_error(body, err)
                self._mark("Ready", "False", "ReconciliationFailed", msg)
                self.state.drop("Reconciling")
                self._event(msg, "error")
                return False
            applied.append((str(body.get("apiVersion")), str(body.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name"))))
        for ref in (*unit.helmreleases, *unit.children):
            ev = self.applied.get(ref)
            if ev is not None and not ev.triggered:
                self.sim.log(ACTOR, "applied", ref, f"{ref} created by Kustomization/{unit.ref}")
                ev.succeed()
        for ref in unit.helmreleases:
            ns, name = ref.split("/", 1)
            applied.append(("helm.toolkit.fluxcd.io/v2", "HelmRelease", ns, name))
        for ref in unit.children:
            ns, name = ref.split("/", 1)
            applied.append((f"{GROUP}/v1", "Kustomization", ns, name))
        unhealthy = yield from self._check_health(applied)
        self.state.drop("Reconciling")
        if unhealthy is not None:
            self._mark("Ready", "False", "HealthCheckFailed", unhealthy)
            self._event(unhealthy, "error")
            return False
        self._mark("Ready", "True", "ReconciliationSucceeded", f"Applied revision: {rev}")
        if self.state.ready_at is None:
            self.state.ready_at = self.sim.now
        return True

    def _namespaced(self, body: dict[str, Any]) -> dict[str, Any]:
        """spec.targetNamespace overrides every namespaced object's namespace (kustomize's
        namespace transformer)."""
        target = self.unit.ks.spec.target_namespace
        meta = body.setdefault("metadata", {})
        if target and (meta.get("namespace") or body.get("kind") not in _CLUSTER_KINDS):
            meta["namespace"] = target
        return body

    def _check_health(self, applied: Sequence[tuple[str, str, str, str]]) -> Proc:
        """checkHealth: with wait every applied object, else spec.healthChecks; polled every 5s
        until all Current, one Failed (fail-fast, the default) or the timeout."""
        ks = self.unit.ks
        if ks.spec.wait:
            targets = [t for t in applied if not (t[1] == "Kustomization" and f"{t[2]}/{t[3]}" == self.unit.ref)]
        else:
            targets = [(h.api_version, h.kind, h.namespace or ks.namespace, h.name) for h in ks.spec.health_checks]
        if not targets:
            self.state.drop("Healthy")
            return None
        rev, timeout = self.unit.revision, ks.timeout
        msg = f"Running health checks for revision {rev} with a timeout of {go_duration(timeout)}"
        self._mark("Reconciling", "True", "Progressing", msg)
        self._mark("Healthy", "Unknown", "Progressing", msg)
        cel_reader = CelReader(ks.spec.health_check_exprs)
        start = self.sim.now
        deadline = start + timeout
        # the first poll follows the apply: the controllers of what was applied have seen it
        yield self.sim.sleep(self.sim.latency("api_write"))
        while True:
            entries = [(self._oid(t), self._status(t, cel_reader)) for t in targets]
            decision = decide(entries, fail_fast=True, deadline_exceeded=self.sim.now >= deadline)
            if decision.stop:
                break
            yield self.sim.sleep(min(POLL_INTERVAL, deadline - self.sim.now))
        took = go_duration(self.sim.now - start)
        if decision.error:
            self._mark("Healthy", "False", "HealthCheckFailed", decision.error)
            return f"health check failed after {took}: {decision.error}"
        self._mark("Healthy", "True", "Succeeded", f"Health check passed in {took}")
        return None

    @staticmethod
    def _oid(t: tuple[str, str, str, str]) -> ObjectId:
        api, kind, ns, name = t
        return ObjectId(kind=kind, namespace=ns, name=name, group=api.rsplit("/", 1)[0] if "/" in api else "")

    def _status(self, t: tuple[str, str, str, str], cel_reader: CelReader) -> Result:
        api, kind, ns, name = t
        ref = f"{ns}/{name}"
        if kind == "HelmRelease" and api.startswith("helm.toolkit.fluxcd.io/"):
            obj: Mapping[str, Any] | None = (
                flux_object(kind, api, ref, self.hr_states.get(ref)) if self._exists(ref) else None
            )
        elif kind == "Kustomization" and api.startswith(f"{GROUP}/"):
            obj = flux_object(kind, api, ref, self.states.get(ref)) if ref in self.known else None
        else:
            obj = self.sim.store.get(kind, ns or None, name)
            if obj is not None and (expr := cel_reader.supports(api, kind)) is None:
                res = Resource(api, kind, name, ns or None, dict(obj), Source(self.unit.ks.source, 0, 1))
                return actions.live_status(self.sim, res, "flux-wait-jobs")
        if obj is None:
            return Result(Status.NOT_FOUND, "Resource not found")
        expr = cel_reader.supports(api, kind)
        if expr is not None:
            return cel_reader.read(expr, obj)
        return kstatus.read(dict(obj), reader="flux-wait-jobs", now=self.sim.datetime())

    def _exists(self, hr_ref: str) -> bool:
        ev = self.applied.get(hr_ref)
        return ev is None or ev.triggered


_CLUSTER_KINDS = frozenset(
    {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PersistentVolume",
     "StorageClass", "PriorityClass", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
     "CiliumClusterwideNetworkPolicy", "IngressClass", "RuntimeClass"}
)


# --- outcomes ------------------------------------------------------------------------------------------
class KustomizationOutcome(Struct):
    """The prediction for one Kustomization."""

    name: str
    namespace: str
    ready: str
    reason: str
    message: str
    ready_at: float | None
    conditions: dict[str, dict[str, str]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "namespace": self.namespace, "ready": self.ready, "reason": self.reason,
            "message": self.message, "readyAt": None if self.ready_at is None else round(self.ready_at, 3),
            "conditions": self.conditions,
        }


def outcome(unit: Unit, st: ReleaseState | None) -> KustomizationOutcome:
    ready: Condition | None = st.get("Ready") if st is not None else None
    stalled = st.get("Stalled") if st is not None else None
    return KustomizationOutcome(
        unit.ks.name, unit.ks.namespace,
        ready.status if ready else "Unknown",
        stalled.reason if stalled else (ready.reason if ready else ""),
        ready.message if ready else (f"not applied: Kustomization {unit.owner} has not applied it" if unit.owner else ""),
        st.ready_at if st is not None else None,
        {k: {"status": c.status, "reason": c.reason, "message": c.message} for k, c in sorted((st.conditions if st else {}).items())},
    )


def settled(
    units: Sequence[Unit], states: Mapping[str, ReleaseState], hr_states: Mapping[str, ReleaseState] | None = None
) -> bool:
    """Every Kustomization is where it stays: Ready, Stalled, failing its health checks on a
    HelmRelease that is not Ready, blocked by a dependency (or an owner) that stays not Ready."""
    by_ref = {u.ref: u for u in units}
    hr_states = hr_states or {}

    def stuck(ref: str, path: frozenset[str]) -> bool:
        u, st = by_ref.get(ref), states.get(ref)
        if u is None or ref in path:
            return True
        if st is None or st.get("Ready") is None:
            # not applied yet: stays so while its owner stays not Ready
            return u.owner is not None and stuck(u.owner, path | {ref}) and not _ready(states, u.owner)
        ready = st.get("Ready")
        assert ready is not None
        if st.stalled or st.observed_ready:
            return True
        if st.in_reconcile or ready.status == "Unknown":
            return False
        if ready.reason == "DependencyNotReady":
            unready = [d for d in u.ks.dependencies() if not _ready(states, d)]
            return bool(unready) and all(stuck(d, path | {ref}) for d in unready)
        # a failed reconcile is retried; it stays failed while what it checks is not Ready
        return not u.helmreleases or any(not (hr_states.get(h) and hr_states[h].observed_ready) for h in u.helmreleases)

    return all(stuck(u.ref, frozenset()) for u in units)


def _ready(states: Mapping[str, ReleaseState], ref: str) -> bool:
    st = states.get(ref)
    return st is not None and st.observed_ready


def start(
    sim: Simulation, units: Sequence[Unit], hr_states: dict[str, ReleaseState]
) -> tuple[dict[str, ReleaseState], dict[str, simpy.Event]]:
    """Run kustomize-controller for ``units``; returns their states and the ``applied`` events
    (one per HelmRelease and Kustomization a Kustomization applies)."""
    states: dict[str, ReleaseState] = {}
    applied: dict[str, simpy.Event] = {}
    for u in units:
        for ref in (*u.helmreleases, *u.children):
            applied.setdefault(ref, sim.env.event())
    known = frozenset(u.ref for u in units)
    for u in units:
        sim.process(KustomizationReconciler(sim, u, states, hr_states, applied, known).run())
    return states, applied


def after(event: simpy.Event | None, proc: Proc) -> Proc:
    """``proc`` once ``event`` fired (a HelmRelease reconciled only after it is applied)."""
    if event is not None:
        yield event
    result = yield from proc
    return result


def not_applied_message(hr: HelmRelease, unit_ref: str, states: Mapping[str, ReleaseState]) -> str:
    """What the report says of a HelmRelease its Kustomization never applied (the object does not
    exist in the cluster; these are helmsim's words)."""
    st = states.get(unit_ref)
    ready = st.get("Ready") if st is not None else None
    why = f": {ready.reason}: {ready.message}" if ready is not None else ""
    return f"HelmRelease {hr.ref} is not applied: Kustomization {unit_ref} has not applied it{why}"


def load_units(
    tree: FluxTree, roots: Sequence[Path], build_errors: Mapping[str, str] | None = None
) -> tuple[Unit, ...]:
    """``plan`` of a tree, reading each ``kustomization.yaml``'s ``resources`` when a path has
    one; ``build_errors`` are the Kustomizations whose build fails (by ref)."""
    from msgspec.structs import replace

    units = plan(_with_kustomize_resources(tree, roots), roots)
    errors = build_errors or {}
    return tuple(replace(u, build_error=errors[u.ref]) if u.ref in errors else u for u in units)


def owner_of(units: Sequence[Unit], applied_from: Callable[[str], str] = str) -> Callable[[str], str | None]:
    """The Kustomization that applies a file: the deepest ``spec.path`` holding it (or holding
    the directory that built it: ``applied_from``)."""

    def owner(file: str) -> str | None:
        path = Path(applied_from(file)).resolve()
        best: tuple[int, str] | None = None
        for u in units:
            d = u.directory
            if d is None or not path.is_relative_to(d):
                continue
            if best is None or len(d.parts) > best[0]:
                best = (len(d.parts), u.ref)
        return best[1] if best else None

    return owner


def _with_kustomize_resources(tree: FluxTree, roots: Sequence[Path]) -> FluxTree:
    """Drop what a path's kustomization.yaml does not list in ``resources`` (kustomize builds only
    those; internal/generator takes every manifest only when there is none)."""
    listed: dict[Path, set[Path]] = {}
    for obj, (file, _line) in zip(tree.objects, tree.sources, strict=False):
        if is_kustomize_config(obj) and obj.get("kind") == "Kustomization":
            base = Path(file).resolve().parent
            res = obj.get("resources") or []
            listed[base] = {(base / str(r)).resolve() for r in res if isinstance(r, str)}
    if not listed:
        return tree

    def kept(file: str) -> bool:
        path = Path(file).resolve()
        for base, entries in listed.items():
            if path.is_relative_to(base):
                if not any(path == e or path.is_relative_to(e) for e in entries):
                    return False
        return True

    pairs = [(o, s) for o, s in zip(tree.objects, tree.sources, strict=False) if is_kustomization(o) or kept(s[0])]
    hrs = tuple(h for h in tree.helmreleases if not h.source or kept(h.source))
    return msgspec.structs.replace(tree, helmreleases=hrs, objects=tuple(o for o, _ in pairs), sources=tuple(s for _, s in pairs))


__all__ = [
    "Kustomization",
    "overlay_of",
    "KustomizationOutcome",
    "KustomizationReconciler",
    "Unit",
    "after",
    "gated_releases",
    "is_kustomization",
    "load_units",
    "not_applied_message",
    "outcome",
    "parse_kustomization",
    "plan",
    "settled",
    "start",
]


class Controller(Struct):
    """kustomize-controller over a simulation: the Kustomizations' states, which HelmRelease
    each applies, and the gate a HelmRelease's reconciler waits at."""

    units: tuple[Unit, ...]
    states: dict[str, ReleaseState] = field(default_factory=dict)
    applied: dict[str, simpy.Event] = field(default_factory=dict)
    hr_states: dict[str, ReleaseState] = field(default_factory=dict)

    @classmethod
    def begin(cls, sim: Simulation, units: Sequence[Unit], hr_states: dict[str, ReleaseState]) -> Controller:
        states, applied = start(sim, units, hr_states) if units else ({}, {})
        return cls(tuple(units), states, applied, hr_states)

    def gate(self, ref: str, proc: Proc) -> Proc:
        """The reconciler of HelmRelease ``ref``, started once its Kustomization applied it."""
        return after(self.applied.get(ref), proc)

    def not_applied(self, ref: str) -> bool:
        ev = self.applied.get(ref)
        return ev is not None and not ev.triggered

    def settled(self) -> bool:
        return settled(self.units, self.states, self.hr_states)

    def stays_unapplied(self, ref: str) -> bool:
        """HelmRelease ``ref`` is not applied, and the Kustomization that would apply it stays
        not Ready."""
        owner = gated_releases(self.units).get(ref)
        return self.not_applied(ref) and owner is not None and not _ready(self.states, owner) and self.settled()

    def unowned(self, objects: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
        """``objects`` no Kustomization applies (in the cluster before the simulation)."""
        owned = {id(o) for u in self.units for o in u.objects}
        return tuple(o for o in objects if id(o) not in owned)

    def outcomes(self) -> list[KustomizationOutcome]:
        return [outcome(u, self.states.get(u.ref)) for u in self.units]

    def mark_not_applied(self, hr: HelmRelease, o: Any) -> None:
        """A HelmRelease never applied is Blocked: it does not exist in the cluster."""
        if not self.not_applied(hr.ref):
            return
        owner = gated_releases(self.units)[hr.ref]
        o.outcome, o.ready, o.reason = "Blocked", "Unknown", "NotApplied"
        o.message = not_applied_message(hr, owner, self.states)

    def notes(self, tree_objects: Sequence[Mapping[str, Any]] = ()) -> list[str]:
        """The report's notes on the Kustomizations (``tree_objects``: every object of the input,
        to tell whether a source is there)."""
        if not self.units:
            return []
        out = [
            "Kustomization revisions are helmsim's digest of the files under each path "
            "(<branch>@sha1:<digest>), not the Git commit kustomize-controller reports"
        ]
        from helmsim.flux.artifacts import generated

        objects = (*tree_objects, *(o for u in self.units for o in u.objects))
        known = {
            (str(o.get("kind")), str((o.get("metadata") or {}).get("namespace") or ""), str((o.get("metadata") or {}).get("name")))
            for o in objects
        }
        produced = generated(objects)
        known |= {("ExternalArtifact", ns, name) for ns, name in produced}
        for u in self.units:
            out += unmodelled_notes(u.ks, known)
            ref = u.ks.spec.source_ref
            key = (str(ref.get("namespace") or u.ks.namespace), str(ref.get("name") or ""))
            if ref.get("kind") == "ExternalArtifact" and key in produced:
                out.append(
                    f"Kustomization {u.ks.ref}: its source ExternalArtifact/{key[0]}/{key[1]} is composed by "
                    f"ArtifactGenerator {produced[key]} from the local tree (its copy operations applied); the generator "
                    "is assumed Ready"
                )
        return out
