"""Immutable-field violations: the API server's rejection of an upgrade patch, as Helm reports it.

Given the previous and the new manifest of one object (plus, where it matters, the live object
and the StorageClasses), :func:`violations` returns the error Helm would print for the patch:

* client-side apply: ``cannot patch "<name>" with kind <Kind>: <apiserver message>``
  (helm/helm pkg/kube/client.go patchResourceClientSide, v3 and v4);
* server-side apply (Helm v4): ``server-side apply failed for object <ns>/<name> <gvk>: <message>``
  (helm/helm pkg/kube/client.go patchResourceServerSide @v4.2.4; ``<gvk>`` is Go's
  ``GroupVersionKind.String()``, e.g. ``batch/v1, Kind=Job`` or ``/v1, Kind=Service``).

How the fields are compared (reasoned from Helm's three-way merge patch and from SSA, both of
which send what the chart renders and remove what the chart stopped rendering):

* A field set in neither manifest is whatever the server keeps (a generated Job selector, an
  allocated clusterIP, a bound volumeName): it does not change, so it never violates anything.
* A field the new manifest sets replaces the server's value; a field only the old manifest set is
  removed and falls back to the server default (or to nil where there is none).
* Whole structures (a Job's pod template, a StatefulSet's volumeClaimTemplates) are compared
  old manifest against new manifest after applying the Kubernetes defaults that commonly differ
  between a terse and an explicit manifest (imagePullPolicy, terminationMessagePath, protocol,
  probe timings, volume defaultMode, …) and treating empty and absent lists/maps as equal
  (apimachinery's ``Semantic.DeepEqual``). Server-added labels are on the live object on both
  sides of the real comparison, so they are left out on both sides here.
* The live object is only consulted for server-populated facts: a PVC's phase, capacity,
  volumeName and class; a Service's clusterIP; a Job's suspend/startTime; a CRD's Established.

The message text depends on the API server version (``kube_version``): up to Kubernetes 1.33 a
composite bad value is printed with Go's ``%#v`` (``core.PodTemplateSpec{ObjectMeta:…}``); from
1.34 it is JSON (kubernetes/apimachinery pkg/util/validation/field/errors.go ErrorBody, commit
c58e197e "Nicer value rendering in API errors", first in v0.34.0). Large struct dumps and
go-cmp diffs are abbreviated: the real type prefix is kept and the body is elided with ``…``
(``core.PodTemplateSpec{…}``, ``{…}``; a PVC/PV diff keeps only its changed top-level fields).
Everything else is reproduced byte for byte.

The default ``kube_version`` is 1.33 (the Go ``%#v`` rendering the reference incidents show).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from msgspec import Struct

from helmsim.kube.scope import CLUSTER_SCOPED_KINDS
from helmsim.kube.errors import aggregate

DEFAULT_KUBE_VERSION: tuple[int, int] = (1, 33)


class FieldError(Struct, frozen=True):
    """One ``field.Error``: its path, type, rendered bad value and detail."""

    path: str
    type: str  # "Invalid" | "Forbidden" | "Required"
    detail: str
    value: str | None = None

    def __str__(self) -> str:
        # kubernetes/apimachinery pkg/util/validation/field/errors.go: Error() = "<field>: <body>";
        # Required/Forbidden bodies carry no value; Invalid is "Invalid value: <value>".
        body = {"Invalid": f"Invalid value: {self.value}", "Forbidden": "Forbidden",
                "Required": "Required value"}[self.type]
        return f"{self.path}: {body}: {self.detail}" if self.detail else f"{self.path}: {body}"


class _Ctx(Struct, frozen=True):
    old: Mapping[str, Any]
    new: Mapping[str, Any]
    live: Mapping[str, Any] | None
    storage_classes: Mapping[str, Mapping[str, Any]]
    kube: tuple[int, int]

    @property
    def json_values(self) -> bool:
        # kubernetes/apimachinery v0.34.0 field/errors.go: composite values rendered as JSON.
        return self.kube >= (1, 34)


# ---------------------------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------------------------


def violations(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    live: Mapping[str, Any] | None = None,
    storage_classes: Mapping[str, Mapping[str, Any]] | None = None,
    server_side: bool = False,
    kube_version: str | tuple[int, int] | None = None,
    namespace: str | None = None,
    validating: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> list[str]:
    """The error(s) Helm reports when it patches ``old`` into ``new``; ``[]`` if the patch passes.

    ``live`` is the object as the cluster holds it (status included) when known; ``storage_classes``
    maps class name to StorageClass object (for PVC expansion); ``namespace`` is the namespace Helm
    applies into when the manifest has none. One patch yields at most one API error, so the list
    has at most one element.
    """
    kind = str(new.get("kind") or old.get("kind") or "")
    rule = _RULES.get(kind)
    if rule is None:
        return []
    ctx = _Ctx(old, new, live, storage_classes or {}, _parse_kube(kube_version))
    name = str(_get(new, "metadata.name") or _get(old, "metadata.name") or "")
    errors = rule(ctx)
    if errors:
        message = _invalid_message(kind, str(new.get("apiVersion") or ""), name, errors)
    else:
        # the validating plugins in kube-apiserver's order: LimitRanger (``validating``) before
        # PersistentVolumeClaimResize (pkg/kubeapiserver/options/plugins.go AllOrderedPlugins)
        forbidden = (validating(new) if validating is not None else None) or _admission(kind, ctx)
        if forbidden is None:
            return []
        message = forbidden
    return [patch_error(kind, str(new.get("apiVersion") or old.get("apiVersion") or ""), name,
                  _namespace(new, old, namespace), message, server_side)]


def _parse_kube(version: str | tuple[int, int] | None) -> tuple[int, int]:
    if version is None:
        return DEFAULT_KUBE_VERSION
    if isinstance(version, tuple):
        return version
    m = re.match(r"^v?(\d+)\.(\d+)", version.strip())
    if not m:
        raise ValueError(f"not a Kubernetes version: {version!r}")
    return (int(m.group(1)), int(m.group(2)))


def _namespace(new: Mapping[str, Any], old: Mapping[str, Any], default: str | None) -> str:
    # cli-runtime leaves resource.Info.Namespace empty for cluster-scoped kinds.
    if str(new.get("kind") or old.get("kind")) in CLUSTER_SCOPED_KINDS:
        return ""
    ns = _get(new, "metadata.namespace") or _get(old, "metadata.namespace") or default
    return str(ns or "")


def patch_error(kind: str, api_version: str, name: str, ns: str, message: str, server_side: bool) -> str:
    """The API server's refusal of a patch as Helm's update reports it."""
    if not server_side:
        # helm/helm pkg/kube/client.go patchResourceClientSide: "cannot patch %q with kind %s: %w".
        return f"cannot patch {_go_quote(name)} with kind {kind}: {message}"
    group, _, version = api_version.rpartition("/")
    # helm/helm pkg/kube/client.go @v4.2.4 patchResourceServerSide:
    # "server-side apply failed for object %s/%s %s: %w" with GroupVersionKind.String().
    return f"server-side apply failed for object {ns}/{name} {group}/{version}, Kind={kind}: {message}"


def _invalid_message(kind: str, api_version: str, name: str, errors: list[FieldError]) -> str:
    group = api_version.rpartition("/")[0]
    qualified = f"{kind}.{group}" if group else kind
    # kubernetes/apimachinery pkg/util/validation/field/errors.go ToAggregate drops repeated
    # messages; pkg/util/errors Aggregate.Error() prints one error bare, several as "[a, b]".
    agg = aggregate([str(err) for err in errors])
    # kubernetes/apimachinery pkg/api/errors/errors.go NewInvalid: "%s %q is invalid: %v".
    return f"{qualified} {_go_quote(name)} is invalid: {agg}"


# ---------------------------------------------------------------------------------------------
# Small helpers: paths, Go rendering, quantities, defaults
# ---------------------------------------------------------------------------------------------


def _get(obj: Mapping[str, Any] | None, path: str, default: Any = None) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return default
        cur = cur[part]
    return default if cur is None else cur


def _go_quote(text: str) -> str:
    """Go's ``%q`` for a string (printable ASCII/Unicode kept, the rest escaped)."""
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_json(value: Any) -> str:
    """``encoding/json.Marshal`` output: compact, map keys sorted, <, >, & escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _prune(value: Any) -> Any:
    """Drop nulls and empty lists/maps (apimachinery Semantic.DeepEqual: empty == nil)."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            pv = _prune(v)
            if pv is None or pv == {} or pv == []:
                continue
            out[str(k)] = pv
        return out
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


_QTY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$")
_SUFFIX = {
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000), "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9),
    "T": Fraction(10**12), "P": Fraction(10**15), "E": Fraction(10**18),
}


def quantity(value: Any) -> Fraction | None:
    """A Kubernetes resource.Quantity as an exact number (``None`` if it does not parse)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    m = _QTY.match(str(value).strip())
    if not m:
        return None
    number = Fraction(m.group(1))
    if m.group(2):
        return number * _SUFFIX[m.group(2)]
    if m.group(3):
        return number * Fraction(10) ** int(m.group(3))
    return number


def _normalize_quantities(resources: Any) -> Any:
    if not isinstance(resources, Mapping):
        return resources
    out: dict[str, Any] = {}
    for section, values in resources.items():
        if isinstance(values, Mapping):
            out[section] = {k: (quantity(v) if quantity(v) is not None else v) for k, v in values.items()}
        else:
            out[section] = values
    return out


_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}


def _default_container(c: Any) -> Any:
    # kubernetes/kubernetes pkg/apis/core/v1/defaults.go SetDefaults_Container & friends: the
    # defaults that make a terse and an explicit manifest of the same container compare equal.
    if not isinstance(c, Mapping):
        return c
    c = dict(c)
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = str(c.get("image") or "")
    if "imagePullPolicy" not in c:
        tag = image.rsplit("/", 1)[-1]
        latest = "@" not in image and (":" not in tag or tag.endswith(":latest"))
        c["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    if isinstance(c.get("ports"), list):
        c["ports"] = [dict(p, protocol=p.get("protocol", "TCP")) if isinstance(p, Mapping) else p
                      for p in c["ports"]]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(c.get(probe), Mapping):
            p = {**_PROBE_DEFAULTS, **c[probe]}
            if isinstance(p.get("httpGet"), Mapping):
                p["httpGet"] = {"scheme": "HTTP", "path": "/", **p["httpGet"]}
            c[probe] = p
    res = c.get("resources")
    if isinstance(res, Mapping) and isinstance(res.get("limits"), Mapping):
        # kubernetes/kubernetes pkg/apis/core/v1/defaults.go SetDefaults_Pod: requests default to
        # limits for each resource that has a limit and no request.
        requests = dict(res.get("requests") or {})
        for key, val in res["limits"].items():
            requests.setdefault(key, val)
        c["resources"] = {**res, "requests": requests}
    if "resources" in c:
        c["resources"] = _normalize_quantities(c["resources"])
    return c


def _default_pod_template(template: Any) -> Any:
    """A pod template with the defaults of SetDefaults_PodSpec / _Container / _Volume applied."""
    if not isinstance(template, Mapping):
        return _prune(template)
    t = dict(template)
    spec = dict(t.get("spec") or {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    if spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [_default_container(c) for c in spec[key]]
    if isinstance(spec.get("volumes"), list):
        vols = []
        for v in spec["volumes"]:
            if isinstance(v, Mapping):
                v = dict(v)
                for src in ("configMap", "secret", "downwardAPI", "projected"):
                    if isinstance(v.get(src), Mapping):
                        v[src] = {"defaultMode": 420, **v[src]}
            vols.append(v)
        spec["volumes"] = vols
    t["spec"] = spec
    meta = dict(t.get("metadata") or {})
    meta.pop("creationTimestamp", None)
    t["metadata"] = meta
    return _prune(t)


# ---------------------------------------------------------------------------------------------
# Value rendering (%#v up to 1.33, JSON from 1.34)
# ---------------------------------------------------------------------------------------------


def _null(ctx: _Ctx) -> str:
    # field/errors.go: a nil value is the string "null" printed with %q up to 1.33, JSON null after.
    return "null" if ctx.json_values else '"null"'


def _render_scalar(ctx: _Ctx, value: Any) -> str:
    """A scalar bad value (string, string typedef, number, or nil pointer)."""
    if value is None:
        return _null(ctx)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return _go_json(str(value)) if ctx.json_values else _go_quote(str(value))


def _go_string_map(m: Mapping[str, Any] | None) -> str:
    if not m:
        return "map[string]string(nil)"
    items = ", ".join(f"{_go_quote(str(k))}:{_go_quote(str(v))}" for k, v in sorted(m.items()))
    return "map[string]string{" + items + "}"


def _go_string_slice(values: Any) -> str:
    if not values:
        return "[]string(nil)"
    return "[]string{" + ", ".join(_go_quote(str(v)) for v in values) + "}"


def _render_selector(ctx: _Ctx, sel: Mapping[str, Any] | None) -> str:
    """A *metav1.LabelSelector as ValidateImmutableField prints it."""
    if sel is None:
        return _null(ctx)
    labels = sel.get("matchLabels") or {}
    exprs = sel.get("matchExpressions") or []
    if ctx.json_values:
        out: dict[str, Any] = {}
        if labels:
            out["matchLabels"] = {str(k): str(labels[k]) for k in sorted(labels, key=str)}
        if exprs:
            out["matchExpressions"] = [
                {k: v for k, v in (("key", e.get("key")), ("operator", e.get("operator")),
                                   ("values", e.get("values") or None)) if v is not None}
                for e in exprs if isinstance(e, Mapping)
            ]
        return _go_json(out)
    # Up to 1.33 the dereferenced struct is not a fmt.Stringer (String() has a pointer receiver),
    # so it is printed with %#v, e.g. real Helm reports of Deployment selector changes.
    if exprs:
        reqs = ", ".join(
            "v1.LabelSelectorRequirement{Key:" + _go_quote(str(e.get("key", ""))) + ", Operator:"
            + _go_quote(str(e.get("operator", ""))) + ", Values:" + _go_string_slice(e.get("values")) + "}"
            for e in exprs if isinstance(e, Mapping)
        )
        expr_text = "[]v1.LabelSelectorRequirement{" + reqs + "}"
    else:
        expr_text = "[]v1.LabelSelectorRequirement(nil)"
    return "v1.LabelSelector{MatchLabels:" + _go_string_map(labels) + ", MatchExpressions:" + expr_text + "}"


def _render_struct(ctx: _Ctx, go_type: str, value: Any) -> str:
    """A composite internal type, abbreviated: ``core.PodTemplateSpec{…}`` or ``{…}``."""
    if value is None:
        return _null(ctx)
    return "{…}" if ctx.json_values else go_type + "{…}"


def _immutable(ctx: _Ctx, path: str, rendered: str) -> FieldError:
    # kubernetes/apimachinery pkg/api/validation/objectmeta.go ValidateImmutableField:
    # field.Invalid(fldPath, newVal, "field is immutable").
    return FieldError(path, "Invalid", "field is immutable", rendered)


def _diff_lines(go_type: str, changes: list[tuple[str, str, str]]) -> str:
    """A go-cmp style diff abbreviated to its changed top-level fields."""
    lines = [f"  {go_type}{{", "  \t…"]
    for field, before, after in changes:
        lines.append(f"- \t{field}: {before},")
        lines.append(f"+ \t{field}: {after},")
    lines.append("  \t…")
    lines.append("  }")
    return "\n".join(lines) + "\n"


def _go_value(value: Any, pointer: bool = False) -> str:
    """A field value as go-cmp prints it in a diff line (scalars exact, composites elided)."""
    if value is None:
        return "nil"
    if isinstance(value, (Mapping, list)):
        return "{…}"
    text = _go_quote(str(value)) if isinstance(value, str) else str(value)
    return "&" + text if pointer else text


# ---------------------------------------------------------------------------------------------
# Per-kind rules
# ---------------------------------------------------------------------------------------------


def _before_after(ctx: _Ctx, path: str, default: Any = None, *, use_live: bool = False) -> tuple[Any, Any]:
    """(value on the server before the patch, value after it) for a scalar field."""
    o = _get(ctx.old, path)
    n = _get(ctx.new, path)
    live = _get(ctx.live, path) if (use_live and ctx.live is not None) else None
    before = live if live is not None else (o if o is not None else default)
    if n is not None:
        after = n
    elif o is not None:
        after = default  # the chart stopped rendering it: the patch removes it
    else:
        after = before  # never in the chart: the server's value stays
    return before, after


def _job(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes pkg/apis/batch/validation/validation.go ValidateJobSpecUpdate: the
    # order below is the order of the checks there.
    errs: list[FieldError] = []
    old_spec = _get(ctx.old, "spec", {})
    new_spec = _get(ctx.new, "spec", {})

    # kubernetes/kubernetes pkg/apis/batch/v1/defaults.go SetDefaults_Job: with neither
    # completions nor parallelism both become 1 (at creation; afterwards the stored value stays
    # unless the chart sets or drops it).
    if ctx.live is not None and _get(ctx.live, "spec.completions") is not None:
        old_c = _get(ctx.live, "spec.completions")
    elif old_spec.get("completions") is None and old_spec.get("parallelism") is None:
        old_c = 1
    else:
        old_c = old_spec.get("completions")
    if new_spec.get("completions") is not None:
        new_c = new_spec.get("completions")
    elif old_spec.get("completions") is not None:
        # Dropped from the chart: nil, defaulted back to 1 only if parallelism is nil too.
        no_parallelism = new_spec.get("parallelism") is None and old_spec.get("parallelism") is None
        new_c = 1 if no_parallelism else None
    else:
        new_c = old_c
    indexed = new_spec.get("completionMode") == "Indexed"
    if old_c != new_c:
        if not indexed:
            errs.append(_immutable(ctx, "spec.completions", _render_scalar(ctx, new_c)))
        elif new_c is not None and new_c != _parallelism_after(ctx):
            # validation.go validateCompletions (elastic Indexed Jobs, GA 1.31).
            errs.append(FieldError("spec.completions", "Invalid",
                                   "can only be modified in tandem with spec.parallelism",
                                   _render_scalar(ctx, new_c)))
    old_sel, new_sel = _prune(old_spec.get("selector")), _prune(new_spec.get("selector"))
    if old_sel != new_sel and (old_sel is not None or new_sel is not None):
        # Without spec.selector in the chart the server generated one (controller-uid) and keeps
        # it; only a selector the chart sets, changes or drops is a change.
        errs.append(_immutable(ctx, "spec.selector", _render_selector(ctx, new_spec.get("selector"))))
    old_t = _default_pod_template(old_spec.get("template"))
    new_t = _default_pod_template(new_spec.get("template"))
    if _scheduling_mutable(ctx):
        old_t, new_t = _strip_scheduling(old_t), _strip_scheduling(new_t)
    if old_t != new_t:
        errs.append(_immutable(ctx, "spec.template",
                               _render_struct(ctx, "core.PodTemplateSpec", new_spec.get("template"))))
    for fld, default, go_type in (
        ("completionMode", "NonIndexed", None),
        ("podFailurePolicy", None, "batch.PodFailurePolicy"),
        ("backoffLimitPerIndex", None, None),
        ("managedBy", None, None),
        ("successPolicy", None, "batch.SuccessPolicy"),
    ):
        before = _prune(old_spec.get(fld, default))
        after = _prune(new_spec.get(fld, default))
        if before != after:
            value = (_render_struct(ctx, go_type, new_spec.get(fld)) if go_type
                     else _render_scalar(ctx, new_spec.get(fld, default)))
            errs.append(_immutable(ctx, f"spec.{fld}", value))
    return errs


def _parallelism_after(ctx: _Ctx) -> Any:
    if _get(ctx.new, "spec.parallelism") is not None:
        return _get(ctx.new, "spec.parallelism")
    if _get(ctx.old, "spec.parallelism") is not None:
        return 1  # dropped from the chart: defaulted to 1 again
    return (_get(ctx.live, "spec.parallelism") if ctx.live is not None else None) or 1


def _scheduling_mutable(ctx: _Ctx) -> bool:
    # kubernetes/kubernetes pkg/registry/batch/job/strategy.go: AllowMutableSchedulingDirectives
    # for a suspended Job that never started (no status.startTime).
    was_suspended = bool(_get(ctx.live, "spec.suspend") if ctx.live else _get(ctx.old, "spec.suspend"))
    started = ctx.live is not None and _get(ctx.live, "status.startTime") is not None
    return was_suspended and bool(_get(ctx.new, "spec.suspend")) and not started


def _strip_scheduling(template: Any) -> Any:
    # validation.go validatePodTemplateUpdate: nodeSelector, tolerations, labels, annotations,
    # schedulingGates and affinity.nodeAffinity may change while the Job is suspended.
    if not isinstance(template, Mapping):
        return template
    t = dict(template)
    meta = dict(t.get("metadata") or {})
    meta.pop("labels", None)
    meta.pop("annotations", None)
    spec = dict(t.get("spec") or {})
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        spec.pop(key, None)
    if isinstance(spec.get("affinity"), Mapping):
        spec["affinity"] = {k: v for k, v in spec["affinity"].items() if k != "nodeAffinity"}
    t["metadata"], t["spec"] = meta, spec
    return _prune(t)


def _selector_only(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes pkg/registry/apps/{deployment,replicaset,daemonset}/strategy.go
    # ValidateUpdate: for apps/v1 "disallow mutation of selector" (ValidateImmutableField).
    old_sel = _prune(_get(ctx.old, "spec.selector"))
    new_sel = _prune(_get(ctx.new, "spec.selector"))
    if old_sel == new_sel:
        return []
    return [_immutable(ctx, "spec.selector", _render_selector(ctx, _get(ctx.new, "spec.selector")))]


def _vct(templates: Any) -> Any:
    if not isinstance(templates, list):
        return _prune(templates)
    out = []
    for t in templates:
        if not isinstance(t, Mapping):
            out.append(t)
            continue
        t = {k: v for k, v in t.items() if k not in ("apiVersion", "kind", "status")}
        spec = dict(t.get("spec") or {})
        spec.setdefault("volumeMode", "Filesystem")
        if "resources" in spec:
            spec["resources"] = _normalize_quantities(spec["resources"])
        t["spec"] = spec
        out.append(t)
    return _prune(out)


def _statefulset(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes pkg/apis/apps/validation/validation.go ValidateStatefulSetUpdate:
    # everything in spec except the listed fields must stay equal (Semantic.DeepEqual). The
    # selector is part of that comparison: a StatefulSet selector change gets this Forbidden
    # error, not "field is immutable".
    mutable = {"replicas", "template", "updateStrategy", "minReadySeconds", "ordinals",
               "persistentVolumeClaimRetentionPolicy"}
    listed = "'replicas', 'ordinals', 'template', 'updateStrategy', "
    if ctx.kube >= (1, 33):
        # UNVERIFIED version: kubernetes/kubernetes#130263 (Feb 2025) made revisionHistoryLimit
        # mutable; later servers list it (seen in 2025-26 error reports), 1.31 servers do not.
        mutable.add("revisionHistoryLimit")
        listed += "'revisionHistoryLimit', "
    listed += "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds'"
    defaults = {"podManagementPolicy": "OrderedReady", "revisionHistoryLimit": 10}

    def frozen(spec: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in spec.items() if k not in mutable}
        for k, v in defaults.items():
            if k not in mutable:
                out.setdefault(k, v)
        if "volumeClaimTemplates" in out:
            out["volumeClaimTemplates"] = _vct(out["volumeClaimTemplates"])
        return _prune(out)

    if frozen(_get(ctx.old, "spec", {})) == frozen(_get(ctx.new, "spec", {})):
        return []
    return [FieldError("spec", "Forbidden",
                       f"updates to statefulset spec for fields other than {listed} are forbidden")]


def _pvc(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes pkg/apis/core/validation/validation.go ValidatePersistentVolumeClaimUpdate.
    errs: list[FieldError] = []
    old_spec = dict(_get(ctx.old, "spec", {}))
    new_spec = dict(_get(ctx.new, "spec", {}))
    bound = _pvc_bound(ctx)
    changes: list[tuple[str, str, str]] = []

    # volumeName: set once (the binder sets it; a chart rarely does).
    vn_before, vn_after = _before_after(ctx, "spec.volumeName", "", use_live=True)
    if vn_before and vn_after != vn_before:
        changes.append(("VolumeName", _go_value(vn_before), _go_value(vn_after or "")))

    # storageClassName: nil -> value is allowed (validateStorageClassUpgradeFromNil); any other
    # change, including dropping it from the chart (value -> nil), is a spec change.
    sc_before = _get(ctx.live, "spec.storageClassName") if ctx.live is not None else None
    if sc_before is None:
        sc_before = old_spec.get("storageClassName")
    if sc_before is None and ctx.live is None:
        sc_before = _default_class(ctx.storage_classes)
    sc_after = new_spec["storageClassName"] if "storageClassName" in new_spec else (
        None if "storageClassName" in old_spec else sc_before)
    if sc_before is not None and sc_after != sc_before:
        changes.append(("StorageClassName", _go_value(sc_before, True), _go_value(sc_after, True)))

    old_req = _get(old_spec, "resources.requests.storage")
    new_req = _get(new_spec, "resources.requests.storage")
    old_size, new_size = quantity(old_req), quantity(new_req)
    for fld, go_name in (("accessModes", "AccessModes"), ("selector", "Selector"),
                         ("volumeMode", "VolumeMode"), ("dataSource", "DataSource"),
                         ("dataSourceRef", "DataSourceRef")):
        default = "Filesystem" if fld == "volumeMode" else None
        before = _prune(old_spec.get(fld, default))
        after = _prune(new_spec.get(fld, default))
        if before != after:
            changes.append((go_name, _go_value(before, fld == "volumeMode"),
                            _go_value(after, fld == "volumeMode")))
    res_before = _normalize_quantities(_prune(old_spec.get("resources")) or {})
    res_after = _normalize_quantities(_prune(new_spec.get("resources")) or {})
    if bound:
        # "lets make sure storage values are same": a bound claim's storage request is masked.
        for res in (res_before, res_after):
            if isinstance(res.get("requests"), Mapping):
                res["requests"] = {k: v for k, v in res["requests"].items() if k != "storage"}
    if _prune(res_before) != _prune(res_after):
        changes.append(("Resources", "{…}", "{…}"))
    if changes:
        tail = "" if ctx.kube < (1, 29) else " and volumeAttributesClassName"
        detail = (f"spec is immutable after creation except resources.requests{tail} for bound claims\n"
                  + _diff_lines("core.PersistentVolumeClaimSpec", changes))
        errs.append(FieldError("spec", "Forbidden", detail))
    if old_size is not None and new_size is not None and new_size < old_size:
        if ctx.kube >= (1, 32):
            # RecoverVolumeExpansionFailure (beta, on by default from 1.32; GA 1.34): a request
            # may drop, but not to or below status.capacity.
            capacity = quantity(_get(ctx.live, "status.capacity.storage")) if ctx.live else None
            capacity = old_size if capacity is None else capacity
            if new_size <= capacity:
                errs.append(FieldError("spec.resources.requests.storage", "Forbidden",
                                       "field can not be less than status.capacity"))
        else:
            errs.append(FieldError("spec.resources.requests.storage", "Forbidden",
                                   "field can not be less than previous value"))
    vm_before = old_spec.get("volumeMode", "Filesystem")
    vm_after = new_spec.get("volumeMode", "Filesystem")
    if vm_before != vm_after:
        # The path really is "volumeMode" (field.NewPath("volumeMode")), not spec.volumeMode.
        errs.append(_immutable(ctx, "volumeMode", _render_scalar(ctx, vm_after)))
    return errs


def _pvc_bound(ctx: _Ctx) -> bool:
    # Without the live object a claim is assumed Bound: upgrades normally meet claims in use.
    if ctx.live is None:
        return True
    return _get(ctx.live, "status.phase") == "Bound"


def _default_class(classes: Mapping[str, Mapping[str, Any]]) -> str | None:
    for name, sc in classes.items():
        anns = _get(sc, "metadata.annotations", {}) or {}
        if str(anns.get("storageclass.kubernetes.io/is-default-class", "")).lower() == "true":
            return name
    return None


def _pvc_resize_forbidden(ctx: _Ctx) -> str | None:
    # kubernetes/kubernetes plugin/pkg/admission/storage/persistentvolume/resize/admission.go:
    # runs after validation passed, so only for a bound claim (validation rejects the rest).
    old_size = quantity(_get(ctx.old, "spec.resources.requests.storage"))
    new_size = quantity(_get(ctx.new, "spec.resources.requests.storage"))
    if old_size is None or new_size is None or new_size <= old_size:
        return None
    name = str(_get(ctx.new, "metadata.name") or "")
    prefix = f"persistentvolumeclaims {_go_quote(name)} is forbidden: "
    if not _pvc_bound(ctx):
        return prefix + "Only bound persistent volume claims can be expanded"
    cls = _get(ctx.live, "spec.storageClassName") if ctx.live is not None else None
    cls = cls or _get(ctx.new, "spec.storageClassName") or _default_class(ctx.storage_classes)
    sc = ctx.storage_classes.get(str(cls)) if cls else None
    # allowResize: the claim needs a class, the class must exist and allowVolumeExpansion: true.
    if sc is None or sc.get("allowVolumeExpansion") is not True:
        return (prefix + "only dynamically provisioned pvc can be resized and the storageclass "
                "that provisions the pvc must support resize")
    return None


def _admission(kind: str, ctx: _Ctx) -> str | None:
    if kind == "PersistentVolumeClaim":
        return _pvc_resize_forbidden(ctx)
    return None


_PV_NOT_SOURCE = {"accessModes", "capacity", "claimRef", "persistentVolumeReclaimPolicy",
                  "storageClassName", "mountOptions", "volumeMode", "nodeAffinity",
                  "volumeAttributesClassName"}
_PV_SOURCE_GO = {"nfs": "NFS", "hostPath": "HostPath", "csi": "CSI", "local": "Local",
                 "iscsi": "ISCSI", "fc": "FC", "rbd": "RBD", "cephfs": "CephFS",
                 "glusterfs": "Glusterfs", "awsElasticBlockStore": "AWSElasticBlockStore",
                 "gcePersistentDisk": "GCEPersistentDisk", "azureDisk": "AzureDisk",
                 "azureFile": "AzureFile", "vsphereVolume": "VsphereVolume"}


def _pv(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes pkg/apis/core/validation/validation.go ValidatePersistentVolumeUpdate.
    errs: list[FieldError] = []
    old_spec = _get(ctx.old, "spec", {})
    new_spec = _get(ctx.new, "spec", {})
    changes = []
    for key in sorted(set(old_spec) | set(new_spec)):
        if key in _PV_NOT_SOURCE:
            continue
        before, after = _prune(old_spec.get(key)), _prune(new_spec.get(key))
        if before != after:
            go = _PV_SOURCE_GO.get(key, key[:1].upper() + key[1:])
            changes.append((go, "nil" if before is None else "&{…}", "nil" if after is None else "&{…}"))
    if changes:
        errs.append(FieldError("spec.persistentvolumesource", "Forbidden",
                               "spec.persistentvolumesource is immutable after creation\n"
                               + _diff_lines("core.PersistentVolumeSource", changes)))
    if old_spec.get("volumeMode", "Filesystem") != new_spec.get("volumeMode", "Filesystem"):
        errs.append(_immutable(ctx, "volumeMode", _render_scalar(ctx, new_spec.get("volumeMode", "Filesystem"))))
    if old_spec.get("nodeAffinity") is not None and _prune(old_spec.get("nodeAffinity")) != _prune(new_spec.get("nodeAffinity")):
        # validation.go validatePvNodeAffinity (beta-to-GA label rewrites are not modelled).
        errs.append(FieldError("nodeAffinity", "Forbidden",
                               "field is immutable, except for updating from beta label to GA"))
    return errs


def _service(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes pkg/apis/core/validation/validation.go validateUpgradeDowngradeClusterIPs.
    if "ExternalName" in (_get(ctx.old, "spec.type"), _get(ctx.new, "spec.type")):
        return []
    new_ip = _get(ctx.new, "spec.clusterIP") or ""
    new_ips = _get(ctx.new, "spec.clusterIPs") or ([new_ip] if new_ip else [])
    if not new_ips:
        return []  # "" / absent: the allocated address is kept (patchAllocatedValues)
    old_ip = (_get(ctx.live, "spec.clusterIP") if ctx.live is not None else None) or \
        _get(ctx.old, "spec.clusterIP") or ""
    if not old_ip or old_ip == new_ips[0] or (old_ip == "None" and new_ips[0] == "None"):
        return []
    value = _go_json(list(new_ips)) if ctx.json_values else _go_string_slice(new_ips)
    return [FieldError("spec.clusterIPs[0]", "Invalid", "may not change once set", value)]


def _storageclass(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes pkg/apis/storage/validation/validation.go ValidateStorageClassUpdate.
    errs: list[FieldError] = []
    o, n = ctx.old, ctx.new
    if (_prune(o.get("parameters")) or None) != (_prune(n.get("parameters")) or None):
        errs.append(FieldError("parameters", "Forbidden", "updates to parameters are forbidden."))
    if o.get("provisioner") != n.get("provisioner"):
        errs.append(FieldError("provisioner", "Forbidden", "updates to provisioner are forbidden."))
    if (o.get("reclaimPolicy") or "Delete") != (n.get("reclaimPolicy") or "Delete"):
        errs.append(FieldError("reclaimPolicy", "Forbidden", "updates to reclaimPolicy are forbidden."))
    before = o.get("volumeBindingMode") or "Immediate"
    after = n.get("volumeBindingMode") or "Immediate"
    if before != after:
        errs.append(_immutable(ctx, "volumeBindingMode", _render_scalar(ctx, after)))
    return errs


def _was_immutable(ctx: _Ctx) -> bool:
    source = ctx.live if ctx.live is not None else ctx.old
    return source.get("immutable") is True


def _configmap(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes pkg/apis/core/validation/validation.go ValidateConfigMapUpdate.
    if not _was_immutable(ctx):
        return []
    detail = "field is immutable when `immutable` is set"
    errs: list[FieldError] = []
    if ctx.new.get("immutable") is not True:
        errs.append(FieldError("immutable", "Forbidden", detail))
    for fld in ("data", "binaryData"):
        if _prune(ctx.old.get(fld)) != _prune(ctx.new.get(fld)):
            errs.append(FieldError(fld, "Forbidden", detail))
    return errs


def _secret_bytes(obj: Mapping[str, Any]) -> dict[str, bytes]:
    # The server folds stringData into data before validating (pkg/registry/core/secret/strategy.go).
    out: dict[str, bytes] = {}
    for k, v in (obj.get("data") or {}).items():
        try:
            out[str(k)] = base64.b64decode(str(v), validate=False)
        except (ValueError, TypeError):
            out[str(k)] = str(v).encode()
    for k, v in (obj.get("stringData") or {}).items():
        out[str(k)] = str(v).encode()
    return out


def _secret(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes pkg/apis/core/validation/validation.go ValidateSecretUpdate; messages
    # never include the data.
    errs: list[FieldError] = []
    old_type = ctx.old.get("type") or "Opaque"
    new_type = ctx.new.get("type") or "Opaque"
    if old_type != new_type:
        errs.append(_immutable(ctx, "type", _render_scalar(ctx, new_type)))
    if _was_immutable(ctx):
        detail = "field is immutable when `immutable` is set"
        if ctx.new.get("immutable") is not True:
            errs.append(FieldError("immutable", "Forbidden", detail))
        if _secret_bytes(ctx.old) != _secret_bytes(ctx.new):
            errs.append(FieldError("data", "Forbidden", detail))
    return errs


def _crd(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/
    # validation/validation.go validateCustomResourceDefinitionSpecUpdate: scope and names.kind
    # only once Established (assumed unless the live object says otherwise); group and
    # names.plural always.
    errs: list[FieldError] = []
    established = True
    if ctx.live is not None:
        conds = _get(ctx.live, "status.conditions", []) or []
        established = any(isinstance(c, Mapping) and c.get("type") == "Established"
                          and c.get("status") == "True" for c in conds)
    checks = [("spec.scope", "Namespaced"), ("spec.names.kind", None)] if established else []
    checks += [("spec.group", None), ("spec.names.plural", None)]
    for path, default in checks:
        before, after = _get(ctx.old, path, default), _get(ctx.new, path, default)
        if before != after:
            errs.append(_immutable(ctx, path, _render_scalar(ctx, after)))
    return errs


def _rolebinding(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes pkg/apis/rbac/validation/validation.go ValidateRoleBindingUpdate /
    # ValidateClusterRoleBindingUpdate: field.Invalid(roleRef, newRoleRef, "cannot change roleRef").
    before = {k: _get(ctx.old, f"roleRef.{k}", "") for k in ("apiGroup", "kind", "name")}
    after = {k: _get(ctx.new, f"roleRef.{k}", "") for k in ("apiGroup", "kind", "name")}
    if before == after:
        return []
    if ctx.json_values:
        # UNVERIFIED: the internal rbac.RoleRef has no json tags, so Go field names are expected.
        value = _go_json({"APIGroup": after["apiGroup"], "Kind": after["kind"], "Name": after["name"]})
    else:
        value = ("rbac.RoleRef{APIGroup:" + _go_quote(str(after["apiGroup"])) + ", Kind:"
                 + _go_quote(str(after["kind"])) + ", Name:" + _go_quote(str(after["name"])) + "}")
    return [FieldError("roleRef", "Invalid", "cannot change roleRef", value)]


def _priorityclass(ctx: _Ctx) -> list[FieldError]:
    # kubernetes/kubernetes pkg/apis/scheduling/validation/validation.go ValidatePriorityClassUpdate.
    if ctx.old.get("value") != ctx.new.get("value"):
        return [FieldError("value", "Forbidden", "may not be changed in an update.")]
    return []


_RULES: dict[str, Callable[[_Ctx], list[FieldError]]] = {
    "Job": _job,
    "Deployment": _selector_only,
    "ReplicaSet": _selector_only,
    "DaemonSet": _selector_only,
    "StatefulSet": _statefulset,
    "PersistentVolumeClaim": _pvc,
    "PersistentVolume": _pv,
    "Service": _service,
    "StorageClass": _storageclass,
    "ConfigMap": _configmap,
    "Secret": _secret,
    "CustomResourceDefinition": _crd,
    "RoleBinding": _rolebinding,
    "ClusterRoleBinding": _rolebinding,
    "PriorityClass": _priorityclass,
}
"""Kinds with update rules. Namespace, ConfigMap without ``immutable``, CronJob, Ingress,
NetworkPolicy, ServiceAccount, custom resources … have none that a chart change can trip."""
