"""The LimitRanger admission plugin: a namespace's LimitRanges default and bound pod resources.

plugin/pkg/admission/limitranger/admission.go. In the mutating phase each ``type: Container``
limit's ``default`` (limits) and ``defaultRequest`` (requests) fill what a container (or init
container) does not set, recorded in the pod's ``kubernetes.io/limit-ranger`` annotation; in the
validating phase ``min``, ``max`` and ``maxLimitRequestRatio`` bound each container and init
container (``type: Container``) and the pod's total (``type: Pod``: the containers' sum, or an
init container's if larger). A violation refuses the pod:
``pods "x" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi`` (several
are joined as ``[a, b]``: k8s.io/apimachinery pkg/util/errors NewAggregate). A claim's
``spec.resources.requests`` are bounded by each ``type: PersistentVolumeClaim`` item's ``min`` and
``max`` on create and on update (admission.go PersistentVolumeClaimValidateLimitFunc,
SupportsAttributes): ``persistentvolumeclaims "data" is forbidden: maximum storage usage per
PersistentVolumeClaim is 5Gi, but request is 8Gi``; claims are never defaulted.

A LimitRangeItem's own defaults are applied first (pkg/apis/core/v1/defaults.go
SetDefaults_LimitRangeItem: ``default`` from ``max``, ``defaultRequest`` from ``default`` then
``min``). Constraints are checked in resource-name order (upstream iterates a Go map, whose order
varies), so the text is the same on every run. The texts are upstream's since the error strings
lost their closing full stops (Go's style for errors); older API servers printed one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from helmsim.kube.quantity import canonical, is_binary, milli_value, parse_quantity, value
from helmsim.kube.errors import aggregate

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

# plugin/pkg/admission/limitranger/admission.go limitRangerAnnotation
ANNOTATION = "kubernetes.io/limit-ranger"


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _ranges(sim: Simulation, namespace: str) -> list[list[Mapping[str, Any]]]:
    """The items of each LimitRange of the namespace (admission.go runLimitFunc applies them one
    LimitRange at a time)."""
    out = []
    for lr in sim.store.list("LimitRange", namespace):
        limits = _map(lr.get("spec")).get("limits")
        out.append([item for item in (limits if isinstance(limits, list) else ()) if isinstance(item, Mapping)])
    return out


def _defaulted(item: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(default limits, default requests) of a Container item (SetDefaults_LimitRangeItem)."""
    default = {str(k): v for k, v in _map(item.get("default")).items()}
    request = {str(k): v for k, v in _map(item.get("defaultRequest")).items()}
    for key, v in _map(item.get("max")).items():
        default.setdefault(str(key), v)
    for key, v in default.items():
        request.setdefault(key, v)
    for key, v in _map(item.get("min")).items():
        request.setdefault(str(key), v)
    return default, request


def _containers(spec: Mapping[str, Any], *, init: bool = True) -> Iterator[dict[str, Any]]:
    for field in ("containers", "initContainers") if init else ("containers",):
        found = spec.get(field)
        for c in found if isinstance(found, list) else ():
            if isinstance(c, dict):
                yield c


def mutate(sim: Simulation, pod: dict[str, Any]) -> None:
    """Fill each container's unset limits and requests from the namespace's Container defaults
    (admission.go defaultContainerResourceRequirements, mergePodResourceRequirements), in place:
    one LimitRange after another, so the first to set a resource wins; within one, a later
    item's default overrides an earlier one's."""
    namespace = str(_map(pod.get("metadata")).get("namespace") or "default")
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    for items in _ranges(sim, namespace):
        limits: dict[str, Any] = {}
        requests: dict[str, Any] = {}
        for item in items:
            if item.get("type") == "Container":
                d, r = _defaulted(item)
                limits.update(d)
                requests.update(r)
        if limits or requests:
            _merge(pod, spec, limits, requests)


def _merge(pod: dict[str, Any], spec: dict[str, Any], limits: Mapping[str, Any], requests: Mapping[str, Any]) -> None:
    """mergePodResourceRequirements: one LimitRange's defaults into what the containers leave
    unset, and its ``kubernetes.io/limit-ranger`` annotation."""
    notes: list[str] = []
    inits = spec.get("initContainers")
    for c, label in [(c, "container") for c in _containers(spec, init=False)] + [
        (c, "init container") for c in (inits if isinstance(inits, list) else ()) if isinstance(c, dict)
    ]:
        resources = c.get("resources")
        if not isinstance(resources, dict):
            resources = c["resources"] = {}
        got_l, got_r = resources.get("limits"), resources.get("requests")
        have_l: dict[str, Any] = got_l if isinstance(got_l, dict) else {}
        have_r: dict[str, Any] = got_r if isinstance(got_r, dict) else {}
        # pkg/apis/core/v1/defaults.go SetDefaults_Pod ran first: requests default to limits
        for key, v in list(have_l.items()):
            have_r.setdefault(key, v)
        set_r = sorted((k for k in requests if k not in have_r), key=str)
        set_l = sorted((k for k in limits if k not in have_l), key=str)
        for key in set_r:
            have_r[key] = requests[key]
        for key in set_l:
            have_l[key] = limits[key]
        if have_l:
            resources["limits"] = have_l
        if have_r:
            resources["requests"] = have_r
        name = str(c.get("name") or "")
        if set_r:
            notes.append(f"{', '.join(set_r)} request for {label} {name}")
        if set_l:
            notes.append(f"{', '.join(set_l)} limit for {label} {name}")
    if notes:
        meta = pod.setdefault("metadata", {})
        annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
        annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
        meta["annotations"] = annotations


def _quantities(values: Any) -> dict[str, tuple[Decimal, str]]:
    out: dict[str, tuple[Decimal, str]] = {}
    for key, raw in _map(values).items():
        try:
            out[str(key)] = (parse_quantity(raw), str(raw))
        except ValueError:
            continue  # field validation refuses it first
    return out


def _text(q: Decimal, raw: str) -> str:
    return canonical(q, is_binary(raw))


def _minimums(kind: str, item: Mapping[str, Any], req: dict[str, tuple[Decimal, str]], lim: dict[str, tuple[Decimal, str]]) -> list[str]:
    """minConstraint (admission.go) of each ``min`` of the item."""
    errs: list[str] = []
    for name, (bound, raw) in sorted(_quantities(item.get("min")).items()):
        shown = _text(bound, raw)
        if name not in req:
            errs.append(f"minimum {name} usage per {kind} is {shown}.  No request is specified")
        elif milli_value(req[name][0]) < milli_value(bound):
            errs.append(f"minimum {name} usage per {kind} is {shown}, but request is {_text(*req[name])}")
        elif name in lim and milli_value(lim[name][0]) < milli_value(bound):
            errs.append(f"minimum {name} usage per {kind} is {shown}, but limit is {_text(*lim[name])}")
    return errs


def _maximums(
    kind: str, item: Mapping[str, Any], req: dict[str, tuple[Decimal, str]], lim: dict[str, tuple[Decimal, str]] | None
) -> list[str]:
    """maxConstraint of each ``max`` of the item; with no limits (``lim`` None: a claim's)
    maxRequestConstraint, which bounds the request alone (admission.go)."""
    errs: list[str] = []
    for name, (bound, raw) in sorted(_quantities(item.get("max")).items()):
        shown = _text(bound, raw)
        if lim is None and name not in req:
            errs.append(f"maximum {name} usage per {kind} is {shown}.  No request is specified")
        elif lim is not None and name not in lim:
            errs.append(f"maximum {name} usage per {kind} is {shown}.  No limit is specified")
        elif lim is not None and milli_value(lim[name][0]) > milli_value(bound):
            errs.append(f"maximum {name} usage per {kind} is {shown}, but limit is {_text(*lim[name])}")
        elif name in req and milli_value(req[name][0]) > milli_value(bound):
            errs.append(f"maximum {name} usage per {kind} is {shown}, but request is {_text(*req[name])}")
    return errs


def _check(kind: str, item: Mapping[str, Any], req: dict[str, tuple[Decimal, str]], lim: dict[str, tuple[Decimal, str]]) -> list[str]:
    """minConstraint, maxConstraint, limitRequestRatioConstraint (admission.go), comparing in
    thousandths as requestLimitEnforcedValues does."""
    errs = _minimums(kind, item, req, lim) + _maximums(kind, item, req, lim)
    for name, (bound, raw) in sorted(_quantities(item.get("maxLimitRequestRatio")).items()):
        shown = _text(bound, raw)
        r = milli_value(req[name][0]) if name in req else 0
        li = milli_value(lim[name][0]) if name in lim else 0
        if r == 0:
            errs.append(f"{name} max limit to request ratio per {kind} is {shown}, but no request is specified or request is 0")
        elif li == 0:
            errs.append(f"{name} max limit to request ratio per {kind} is {shown}, but no limit is specified or limit is 0")
        elif li / r * 1000 > milli_value(bound):
            # Go's %f: six decimals
            errs.append(f"{name} max limit to request ratio per {kind} is {shown}, but provided ratio is {li / r:f}")
    return errs


def _sum(lists: list[dict[str, tuple[Decimal, str]]]) -> dict[str, tuple[Decimal, str]]:
    """admission.go sum: a resource every container sets, totalled (cpu in thousandths);
    the total is a DecimalSI quantity."""
    keys = sorted({k for d in lists for k in d})
    out: dict[str, tuple[Decimal, str]] = {}
    for key in keys:
        if all(key in d for d in lists):
            if key == "cpu":
                total = Decimal(sum(milli_value(d[key][0]) for d in lists)) / 1000
            else:
                total = Decimal(sum(value(d[key][0]) for d in lists))
            out[key] = (total, str(total))
    return out


def validate(sim: Simulation, pod: Mapping[str, Any]) -> str | None:
    """The reason the namespace's LimitRanges refuse ``pod`` (admission.go PodValidateLimitFunc),
    None when they admit it."""
    namespace = str(_map(pod.get("metadata")).get("namespace") or "default")
    spec = _map(pod.get("spec"))

    def lists(init: bool) -> list[tuple[dict[str, tuple[Decimal, str]], dict[str, tuple[Decimal, str]]]]:
        field = spec.get("initContainers" if init else "containers")
        return [
            (_quantities(_map(c.get("resources")).get("requests")), _quantities(_map(c.get("resources")).get("limits")))
            for c in (field if isinstance(field, list) else ())
            if isinstance(c, Mapping)
        ]

    app, init = lists(False), lists(True)
    for items in _ranges(sim, namespace):
        errs = []
        for item in items:
            kind = item.get("type")
            if kind == "Container":
                for req, lim in app + init:  # PodLimitFunc: containers, then init containers
                    errs.extend(_check("Container", item, req, lim))
            elif kind == "Pod":
                requests, limits = _sum([r for r, _ in app]), _sum([li for _, li in app])
                for req, lim in init:  # take max(sum of the containers, any init container)
                    for into, more in ((requests, req), (limits, lim)):
                        for name, (q, raw) in more.items():
                            if name not in into or q > into[name][0]:
                                into[name] = (q, raw)
                errs.extend(_check("Pod", item, requests, limits))
        if errs:
            # runLimitFunc: the first LimitRange that refuses answers (NewAggregate of its errors)
            return aggregate(errs)
    return None


# plugin/pkg/admission/limitranger/admission.go LimitTypePersistentVolumeClaim
CLAIM = "PersistentVolumeClaim"


def claim_errors(items: list[Mapping[str, Any]], claim: Mapping[str, Any]) -> list[str]:
    """What one LimitRange's ``type: PersistentVolumeClaim`` items say against ``claim``
    (admission.go PersistentVolumeClaimValidateLimitFunc): ``min`` through minConstraint with no
    limits (a claim's limits are not user input), ``max`` through maxRequestConstraint, both over
    ``spec.resources.requests`` only, in resource-name order."""
    requests = _quantities(_map(_map(_map(claim.get("spec")).get("resources")).get("requests")))
    errs: list[str] = []
    for item in items:
        if item.get("type") != CLAIM:
            continue
        errs.extend(_minimums(CLAIM, item, requests, {}) + _maximums(CLAIM, item, requests, None))
    return errs


def validate_claim(sim: Simulation, claim: Mapping[str, Any]) -> str | None:
    """The reason the namespace's LimitRanges refuse ``claim`` on create or update, None when
    they admit it (the first LimitRange that refuses answers, as for pods)."""
    namespace = str(_map(claim.get("metadata")).get("namespace") or "default")
    for items in _ranges(sim, namespace):
        errs = claim_errors(items, claim)
        if errs:
            return aggregate(errs)
    return None
