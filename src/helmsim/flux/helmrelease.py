"""The HelmRelease v2 spec fields that decide a rollout, with Flux's defaults.

fluxcd/helm-controller api/v2/helmrelease_types.go. Unknown fields are ignored, as the API
server's structural-schema pruning drops them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from helmsim.cluster.latency import to_seconds
from helmsim.errors import InputError, Where
from helmsim.yamlio import go_float_text, non_json_number

Duration = Annotated[float, BeforeValidator(to_seconds)]
"""A Go duration string (``5m``, ``1h30m``) or seconds."""

DEFAULT_TIMEOUT = 300.0  # api/v2/helmrelease_types.go GetTimeout: 5m0s
DEFAULT_MAX_HISTORY = 5  # api/v2/helmrelease_types.go defaultMaxHistory
DEPENDENCY_REQUEUE = 30.0  # main.go --requeue-dependency default 30s
DEFAULT_RETRY_INTERVAL = 300.0  # api/v2 Strategy.RetryInterval default 5m


class _Model(BaseModel):
    # Unknown fields are errors, as kubectl's strict field validation reports them; fields of the
    # v2 API that do not change a rollout are accepted and ignored (declared as ``Any``).
    model_config = ConfigDict(defer_build=True, extra="forbid", populate_by_name=True, frozen=True)


class Remediation(_Model):
    """api/v2 UpgradeRemediation (``strategy``: rollback, the default, or uninstall) and
    InstallRemediation, which has no ``strategy`` (an install is remediated by uninstalling;
    :class:`Spec` refuses the field there)."""

    retries: int = 0
    remediate_last_failure: bool | None = Field(default=None, alias="remediateLastFailure")
    strategy: Literal["rollback", "uninstall"] = "rollback"
    ignore_test_failures: bool | None = Field(default=None, alias="ignoreTestFailures")

    def retries_exhausted(self, failures: int) -> bool:
        """api/v2 RetriesExhausted: retries >= 0 and failures > retries (negative = unlimited)."""
        return self.retries >= 0 and failures > self.retries


class Strategy(_Model):
    name: Literal["RemediateOnFailure", "RetryOnFailure"] = "RemediateOnFailure"
    retry_interval: Duration = Field(default=DEFAULT_RETRY_INTERVAL, alias="retryInterval")


class Action(_Model):
    """install / upgrade / rollback / uninstall / test options shared by all actions."""

    timeout: Duration | None = None
    disable_wait: bool = Field(default=False, alias="disableWait")
    disable_wait_for_jobs: bool = Field(default=False, alias="disableWaitForJobs")
    disable_hooks: bool = Field(default=False, alias="disableHooks")
    remediation: Remediation = Remediation()
    strategy: Strategy = Strategy()
    force: bool = False
    cleanup_on_fail: bool = Field(default=False, alias="cleanupOnFail")
    keep_history: bool = Field(default=False, alias="keepHistory")
    crds: Literal["Skip", "Create", "CreateReplace"] = "Create"
    create_namespace: bool = Field(default=False, alias="createNamespace")
    enable: bool = False
    ignore_failures: bool = Field(default=False, alias="ignoreFailures")
    disable_take_ownership: bool = Field(default=False, alias="disableTakeOwnership")
    """Refuse an existing object that is not the release's, as helm install does (api/v2)."""
    # accepted, not modelled
    disable_open_api_validation: Any = Field(default=None, alias="disableOpenAPIValidation")
    disable_schema_validation: Any = Field(default=None, alias="disableSchemaValidation")
    replace: Any = None
    skip_crds: Any = Field(default=None, alias="skipCRDs")
    server_side_apply: Any = Field(default=None, alias="serverSideApply")
    preserve_values: Any = Field(default=None, alias="preserveValues")
    chart_name_change_strategy: Any = Field(default=None, alias="chartNameChangeStrategy")
    recreate: Any = None
    deletion_propagation: Any = Field(default=None, alias="deletionPropagation")
    filters: tuple[TestFilter, ...] | None = None
    """``spec.test.filters`` (api/v2 Test.Filters): test hooks to run or to skip, by name."""


class TestFilter(_Model):
    """api/v2 Filter: a test hook by name, run or (``exclude``) skipped."""

    name: str
    exclude: bool = False


class Selector(_Model):
    """fluxcd/pkg apis/kustomize Selector: a patch or ignore-rule target."""

    group: str | None = None
    version: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    label_selector: str | None = Field(default=None, alias="labelSelector")
    annotation_selector: str | None = Field(default=None, alias="annotationSelector")


class KustomizePatch(_Model):
    """fluxcd/pkg apis/kustomize Patch: an inline strategic-merge or JSON 6902 patch."""

    patch: str
    target: Selector | None = None


class KustomizeImage(_Model):
    """fluxcd/pkg apis/kustomize Image."""

    name: str
    new_name: str | None = Field(default=None, alias="newName")
    new_tag: str | None = Field(default=None, alias="newTag")
    digest: str | None = None


class KustomizePostRenderer(_Model):
    patches: tuple[KustomizePatch, ...] = ()
    images: tuple[KustomizeImage, ...] = ()


class PostRenderer(_Model):
    """api/v2 PostRenderer: only Kustomize exists."""

    kustomize: KustomizePostRenderer | None = None


class CommonMetadata(_Model):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class IgnoreRule(_Model):
    """api/v2 IgnoreRule: JSON pointers drift detection ignores, on the targeted objects."""

    paths: tuple[str, ...]
    target: Selector | None = None


class DriftDetection(_Model):
    """api/v2 DriftDetection: ``mode`` defaults to disabled (GetMode)."""

    mode: Literal["enabled", "warn", "disabled"] = "disabled"
    ignore: tuple[IgnoreRule, ...] = ()


class Dependency(_Model):
    name: str
    namespace: str | None = None
    ready_expr: Any = Field(default=None, alias="readyExpr")


class SourceRef(_Model):
    kind: str = "HelmRepository"
    name: str = ""
    namespace: str | None = None
    api_version: Any = Field(default=None, alias="apiVersion")


class ChartSpec(_Model):
    chart: str = ""
    version: str | None = None
    source_ref: SourceRef = Field(default=SourceRef(), alias="sourceRef")
    interval: Any = None
    reconcile_strategy: Any = Field(default=None, alias="reconcileStrategy")
    values_files: Any = Field(default=None, alias="valuesFiles")
    values_file: Any = Field(default=None, alias="valuesFile")
    ignore_missing_values_files: Any = Field(default=None, alias="ignoreMissingValuesFiles")
    verify: Any = None


class ChartTemplate(_Model):
    spec: ChartSpec = ChartSpec()
    metadata: Any = None


class ValuesReference(_Model):
    kind: Literal["ConfigMap", "Secret"]
    name: str
    values_key: str = Field(default="values.yaml", alias="valuesKey")
    target_path: str | None = Field(default=None, alias="targetPath")
    optional: bool = False
    # fluxcd/pkg apis/meta ValuesReference.Literal: with targetPath, merged as helm --set-literal
    literal: bool = False


class WaitStrategy(_Model):
    name: Literal["poller", "legacy"] = "poller"


class Spec(_Model):
    interval: Duration
    timeout: Duration = DEFAULT_TIMEOUT
    max_history: int = Field(default=DEFAULT_MAX_HISTORY, alias="maxHistory")
    # config/crd/bases/helm.toolkit.fluxcd.io_helmreleases.yaml: maxLength 53 / 63 (and min 1)
    release_name: str | None = Field(default=None, alias="releaseName", min_length=1, max_length=53)
    target_namespace: str | None = Field(default=None, alias="targetNamespace", min_length=1, max_length=63)
    storage_namespace: str | None = Field(default=None, alias="storageNamespace", min_length=1, max_length=63)
    depends_on: tuple[Dependency, ...] = Field(default=(), alias="dependsOn")
    chart: ChartTemplate | None = None
    chart_ref: SourceRef | None = Field(default=None, alias="chartRef")
    install: Action = Action()
    upgrade: Action = Action()
    rollback: Action = Action()
    uninstall: Action = Action()
    test: Action = Action()
    values: dict[str, Any] = Field(default_factory=dict)
    values_from: tuple[ValuesReference, ...] = Field(default=(), alias="valuesFrom")
    wait_strategy: WaitStrategy = Field(default=WaitStrategy(), alias="waitStrategy")
    suspend: bool = False
    service_account_name: str | None = Field(default=None, alias="serviceAccountName")
    drift_detection: DriftDetection = Field(default=DriftDetection(), alias="driftDetection")
    post_renderers: tuple[PostRenderer, ...] = Field(default=(), alias="postRenderers")
    post_render_strategy: Literal["combined", "separate", "nohooks"] | None = Field(
        default=None, alias="postRenderStrategy"
    )
    common_metadata: CommonMetadata | None = Field(default=None, alias="commonMetadata")
    # accepted, not modelled
    kube_config: Any = Field(default=None, alias="kubeConfig")
    persistent_client: Any = Field(default=None, alias="persistentClient")
    health_check_exprs: Any = Field(default=None, alias="healthCheckExprs")


class HelmRelease(_Model):
    """A parsed ``helm.toolkit.fluxcd.io/v2`` HelmRelease."""

    name: str
    namespace: str
    spec: Spec
    source: str = ""

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def target_namespace(self) -> str:
        return self.spec.target_namespace or self.namespace

    @property
    def storage_namespace(self) -> str:
        return self.spec.storage_namespace or self.namespace

    @property
    def full_release_name(self) -> str:
        """api/v2 GetReleaseName: ``spec.releaseName``, else ``[targetNamespace-]name``, unshortened
        (what install and upgrade failure messages name: internal/reconcile/install.go failure)."""
        if self.spec.release_name:
            return self.spec.release_name
        return f"{self.spec.target_namespace}-{self.name}" if self.spec.target_namespace else self.name

    @property
    def release_name(self) -> str:
        """The release's name in Helm: :attr:`full_release_name`, shortened with a hash past 53
        characters (internal/release ShortenName)."""
        name = self.full_release_name
        if len(name) > 53:
            # fluxcd/helm-controller internal/release ShortenName: name[:40] + "-" + sha256[:12]
            digest = hashlib.sha256(name.encode()).hexdigest()[:12]
            name = f"{name[:40]}-{digest}"
        return name

    @property
    def chart_name(self) -> str:
        if self.spec.chart is not None and self.spec.chart.spec.chart:
            return self.spec.chart.spec.chart
        if self.spec.chart_ref is not None:
            return self.spec.chart_ref.name
        return self.name

    def timeout_for(self, action: str) -> float:
        """``spec.<action>.timeout`` or ``spec.timeout`` (GetTimeout)."""
        act: Action = getattr(self.spec, action)
        return act.timeout if act.timeout is not None else self.spec.timeout

    def dependencies(self) -> list[str]:
        """``ns/name`` of each dependency; the namespace defaults to this release's."""
        return [f"{d.namespace or self.namespace}/{d.name}" for d in self.spec.depends_on]

    def remediate_last_failure(self, action: str) -> bool:
        """api/v2 MustRemediateLastFailure: install defaults to false, upgrade to retries > 0."""
        rem = getattr(self.spec, action).remediation
        if rem.remediate_last_failure is not None:
            return bool(rem.remediate_last_failure)
        return action == "upgrade" and rem.retries > 0


def _field_line(
    loc: tuple[Any, ...], lines: Mapping[tuple[Any, ...], int] | None, start: int | None
) -> int | None:
    """The file line of the deepest key of ``loc`` found in ``lines`` (camelCase YAML keys)."""
    if not lines:
        return None
    found: int | None = None
    path: list[Any] = []
    for part in loc:
        key = part if isinstance(part, int) else _camel(str(part))
        if (*path, key) in lines:
            path.append(key)
        elif (*path, part) in lines:
            path.append(part)
        else:
            break
        found = lines[tuple(path)]
    if found is None:
        return None
    return found + (start - 1 if start else 0)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def is_helmrelease(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "HelmRelease" and str(obj.get("apiVersion", "")).startswith(
        "helm.toolkit.fluxcd.io/"
    )


def parse_helmrelease(
    obj: Mapping[str, Any],
    *,
    source: str = "",
    line: int | None = None,
    lines: Mapping[tuple[Any, ...], int] | None = None,
) -> HelmRelease:
    """Validate a HelmRelease object; errors name the file, the field and its line (``lines``:
    key path → line within the document, from ``yamlio.key_lines``; ``line``: where it starts)."""
    meta = obj.get("metadata") or {}
    where: Where = {"file": source or None, "line": line}
    if not isinstance(meta, Mapping):
        # the API server: cannot unmarshal <type> into Go struct field HelmRelease.metadata
        raise InputError(
            f"HelmRelease metadata must be a mapping, not a {_yaml_type(meta)}",
            file=source or None,
            line=_field_line(("metadata",), lines, line) or line,
        )
    name, namespace = meta.get("name"), meta.get("namespace", "default")
    if not isinstance(name, str) or not name:
        raise InputError("HelmRelease has no metadata.name (a string)", **where)
    if not isinstance(namespace, str) or not namespace:
        # the API server: cannot unmarshal <type> into Go struct field ObjectMeta.namespace
        raise InputError(
            f"HelmRelease {name}: metadata.namespace must be a string, got {namespace!r} "
            "(quote it: YAML reads y/yes/on as booleans)",
            **where,
        )
    spec = obj.get("spec") or {}
    install = spec.get("install") if isinstance(spec, Mapping) else None
    remediation = install.get("remediation") if isinstance(install, Mapping) else None
    if isinstance(remediation, Mapping) and "strategy" in remediation:
        # api/v2 InstallRemediation has no strategy (an install is remediated by uninstalling)
        loc = ("spec", "install", "remediation", "strategy")
        at = _field_line(loc, lines, line)
        raise InputError(
            f'HelmRelease {name}: unknown field "{".".join(loc)}"', file=source or None, line=at if at is not None else line
        )
    try:
        hr = HelmRelease(name=name, namespace=namespace, spec=spec, source=source)  # type: ignore[arg-type]  # pydantic validates the mapping into Spec
    except ValidationError as err:
        first = err.errors()[0]
        path = ".".join(str(p) for p in first["loc"])
        field_line = _field_line(tuple(first["loc"]), lines, line)
        if field_line is not None:
            where = {"file": source or None, "line": field_line}
        if first["type"] == "extra_forbidden":
            raise InputError(f'HelmRelease {name}: unknown field "{path}"', **where) from None
        raise InputError(f"HelmRelease {name}: {path}: {first['msg']}", **where) from None
    bad = non_json_number(hr.spec.values)
    if bad is not None:
        loc, number = bad
        field_line = _field_line(("spec", "values", *loc), lines, line)
        raise InputError(
            f"HelmRelease {name}: spec.values.{'.'.join(map(str, loc))}: {go_float_text(number)} "
            f"cannot be converted to JSON (json: unsupported value: {go_float_text(number)})",
            file=source or None,
            line=field_line or line,
        )
    return hr


def _yaml_type(value: Any) -> str:
    return "list" if isinstance(value, list) else "scalar"
