"""Mechanical fixes as transforms of the rendered resources (or of the HelmRelease spec).

A fix is named by a key ``<kind>|<arg>|…`` so findings can share it and the checker runs each
distinct fix once per profile. :func:`transform_for` turns a key into the functions
:func:`helmsim.diagnose.runner.run_transformed` applies. Every transform is pure: it returns new
``Resource`` objects and never edits the rendered ones.
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Callable
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from helmsim.flux.helmrelease import HelmRelease
from helmsim.helm.actions import ChartRelease
from helmsim.kube.workloads import pod_template
from helmsim.manifests import (
    HOOK_ANNOTATION,
    HOOK_DELETE_ANNOTATION,
    HOOK_WEIGHT_ANNOTATION,
    Hook,
    Resource,
    parse_hook,
)

# The image a generated helper container runs: kubectl plus a POSIX shell (the seed's hook image).
KUBECTL_IMAGE = "docker.io/alpine/k8s:1.31.4"
# The bound of a generated wait loop, as the seed's init-wait fix uses (timeout 120 …).
WAIT_BOUND_SECONDS = 120


class FixTransform(Struct, frozen=True):
    """What to change for a fix: the charts, the HelmReleases, and whether to re-check it under
    the tight-timing variant (races)."""

    charts: Callable[[str, ChartRelease], ChartRelease] | None = None
    helmreleases: Callable[[HelmRelease], HelmRelease] | None = None
    tight: bool = False
    same_render: bool = False
    """``helmreleases`` changes nothing the chart's render or post-render reads (values,
    names, post-renderers), so the charts rendered for the finding's run are reused."""

    @property
    def renders_anew(self) -> bool:
        """The fixed run must render its charts again (its HelmReleases render otherwise)."""
        return self.helmreleases is not None and not self.same_render


def key(*parts: Any) -> str:
    return "|".join(str(p) for p in parts)


# --- resource helpers --------------------------------------------------------------------------------
def with_annotations(res: Resource, updates: dict[str, str | None]) -> Resource:
    """``res`` with annotations set (``None`` removes one), hook metadata re-parsed as Helm does."""
    body = copy.deepcopy(res.body)
    meta = body.setdefault("metadata", {})
    ann = dict(meta.get("annotations") or {})
    for k, v in updates.items():
        if v is None:
            ann.pop(k, None)
        else:
            ann[k] = v
    if ann:
        meta["annotations"] = ann
    else:
        meta.pop("annotations", None)
    hook = parse_hook({k: str(v) for k, v in ann.items()})
    return replace(
        res,
        body=body,
        annotations={k: str(v) for k, v in ann.items()},
        hook=hook if isinstance(hook, Hook) else None,
    )


def with_body(res: Resource, body: dict[str, Any]) -> Resource:
    return replace(res, body=body)


def _map(chart: ChartRelease, fn: Callable[[Resource], Resource | None]) -> ChartRelease:
    out: list[Resource] = []
    for res in chart.resources:
        new = fn(res)
        if new is not None:
            out.append(new)
    return replace(chart, resources=tuple(out))


def pod_spec(body: dict[str, Any]) -> dict[str, Any] | None:
    """The pod spec of a Pod or of a workload's (or CronJob's) pod template."""
    tpl = pod_template(body)
    spec = tpl.get("spec") if tpl is not None else None
    return spec if isinstance(spec, dict) else None


ChartEdit = Callable[[str, ChartRelease], ChartRelease]


def _edit_body(obj: str, mutate: Callable[[dict[str, Any]], bool]) -> ChartEdit:
    """A chart transform that lets ``mutate`` change a copy of ``obj``'s body; an object it
    returns ``False`` for stays as it was."""

    def fn(_ref: str, chart: ChartRelease) -> ChartRelease:
        def edit(r: Resource) -> Resource:
            if r.ref != obj:
                return r
            body = copy.deepcopy(r.body)
            return with_body(r, body) if mutate(body) else r

        return _map(chart, edit)

    return fn


def _edit_spec_field(obj: str, field: str, value: Any) -> ChartEdit:
    """A chart transform that sets ``spec.<field>`` of ``obj`` to ``value``."""

    def put(body: dict[str, Any]) -> bool:
        body.setdefault("spec", {})[field] = copy.deepcopy(value)
        return True

    return _edit_body(obj, put)


def _edit_pod_spec(obj: str, mutate: Callable[[dict[str, Any]], None]) -> ChartEdit:
    """A chart transform that lets ``mutate`` change a copy of ``obj``'s pod spec; an object
    without one stays as it was."""

    def on_body(body: dict[str, Any]) -> bool:
        spec = pod_spec(body)
        if spec is None:
            return False
        mutate(spec)
        return True

    return _edit_body(obj, on_body)


# --- the transforms ---------------------------------------------------------------------------------
def policy_as_hook(policy: str) -> FixTransform:
    """Render ``policy`` as a ``pre-install,pre-upgrade`` hook of weight -5 so it exists before
    any manifest object (helm/helm pkg/action/install.go: pre-install hooks run before the
    manifest is created)."""

    def fn(_ref: str, chart: ChartRelease) -> ChartRelease:
        return _map(
            chart,
            lambda r: (
                with_annotations(
                    r,
                    {
                        HOOK_ANNOTATION: "pre-install,pre-upgrade",
                        HOOK_WEIGHT_ANNOTATION: "-5",
                        HOOK_DELETE_ANNOTATION: "before-hook-creation",
                    },
                )
                if r.ref == policy
                else r
            ),
        )

    return FixTransform(charts=fn, tight=True)


def wait_script(need: str) -> str:
    """A bounded wait loop for ``need`` that the behaviour model recognises (docs/behaviour.md)."""
    if need in ("kube-apiserver", "dns") or not need:
        probe = (
            "kubectl get --raw /version"
            if need != "dns"
            else "nslookup kubernetes.default.svc.cluster.local"
        )
    elif need.startswith("svc/"):
        host, _, port = need[4:].rpartition(":")
        ns, _, name = host.rpartition("/")
        probe = (
            f"nc -z -w 3 {name}.{ns}.svc.cluster.local {port}"
            if ns
            else f"nc -z -w 3 {name} {port}"
        )
    else:
        host, _, port = need.rpartition(":")
        probe = f"nc -z -w 3 {host} {port}"
    return f"timeout {WAIT_BOUND_SECONDS} sh -c {shlex.quote(f'until {probe}; do sleep 2; done')}"


def init_wait(workload: str, need: str) -> FixTransform:
    """Add a bounded init container to ``workload`` that waits until ``need`` answers."""

    def add(spec: dict[str, Any]) -> None:
        inits = list(spec.get("initContainers") or [])
        inits.insert(
            0,
            {
                "name": "wait-for-network",
                "image": KUBECTL_IMAGE,
                "command": ["sh", "-c", wait_script(need)],
            },
        )
        spec["initContainers"] = inits

    return FixTransform(charts=_edit_pod_spec(workload, add), tight=True)


def job_out_of_release(obj: str) -> FixTransform:
    """Remove ``obj`` (a Job, hook or not) from the release: run it from elsewhere."""

    def fn(_ref: str, chart: ChartRelease) -> ChartRelease:
        return _map(chart, lambda r: None if r.ref == obj else r)

    return FixTransform(charts=fn)


def claim_via_hook(claim: str, release: str, namespace: str) -> FixTransform:
    """Replace the claim by a ``post-install,post-upgrade`` hook Job that server-side-applies it
    (outside Helm's wait), with its own hook identity of weight -5 (the seed-2 shape)."""

    def fn(_ref: str, chart: ChartRelease) -> ChartRelease:
        pvc = next((r for r in chart.resources if r.ref == claim), None)
        if pvc is None:
            return chart
        body = copy.deepcopy(pvc.body)
        body.setdefault("metadata", {}).setdefault("namespace", pvc.namespace)
        body.pop("status", None)
        doc = json.dumps(body, separators=(",", ":"), sort_keys=True)
        name = f"{release}-{pvc.name}-claim"[:63]
        hook = {
            HOOK_ANNOTATION: "post-install,post-upgrade",
            HOOK_DELETE_ANNOTATION: "before-hook-creation,hook-succeeded",
        }
        ident_hook = {**hook, HOOK_WEIGHT_ANNOTATION: "-5"}
        src = pvc.source
        new = [
            _resource(
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": name, "namespace": namespace, "annotations": ident_hook},
                },
                src,
                namespace,
            ),
            _resource(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": {"name": name, "annotations": ident_hook},
                    "rules": [
                        {
                            "apiGroups": [""],
                            "resources": ["persistentvolumeclaims"],
                            "verbs": ["get", "create", "patch"],
                        }
                    ],
                },
                src,
                None,
            ),
            _resource(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": name, "annotations": ident_hook},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": name,
                    },
                    "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
                },
                src,
                None,
            ),
            _resource(
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "annotations": {**hook, HOOK_WEIGHT_ANNOTATION: "0"},
                    },
                    "spec": {
                        "backoffLimit": 3,
                        "template": {
                            "spec": {
                                "serviceAccountName": name,
                                "restartPolicy": "Never",
                                "containers": [
                                    {
                                        "name": "apply-claim",
                                        "image": KUBECTL_IMAGE,
                                        "command": ["sh", "-c"],
                                        "args": [
                                            f"echo {shlex.quote(doc)} | kubectl apply --server-side --force-conflicts --field-manager={release} -f -"
                                        ],
                                    }
                                ],
                            }
                        },
                    },
                },
                src,
                namespace,
            ),
        ]
        kept = [r for r in chart.resources if r.ref != claim]
        return replace(chart, resources=tuple(kept + new))

    return FixTransform(charts=fn)


def _resource(body: dict[str, Any], src: Any, namespace: str | None) -> Resource:
    meta = body["metadata"]
    ann = {k: str(v) for k, v in (meta.get("annotations") or {}).items()}
    hook = parse_hook(ann)
    return Resource(
        api_version=body["apiVersion"],
        kind=body["kind"],
        name=meta["name"],
        namespace=namespace,
        body=body,
        source=src,
        hook=hook if isinstance(hook, Hook) else None,
        annotations=ann,
    )


def set_hook_weight(obj: str, weight: int) -> FixTransform:
    """Give hook ``obj`` another ``helm.sh/hook-weight``."""

    def fn(_ref: str, chart: ChartRelease) -> ChartRelease:
        return _map(
            chart,
            lambda r: (
                with_annotations(r, {HOOK_WEIGHT_ANNOTATION: str(weight)}) if r.ref == obj else r
            ),
        )

    return FixTransform(charts=fn)


def make_hook(obj: str, events: str, weight: int) -> FixTransform:
    """Turn ``obj`` into a hook of ``events`` and ``weight`` (kept after the hook: no delete policy
    but ``before-hook-creation``)."""

    def fn(_ref: str, chart: ChartRelease) -> ChartRelease:
        return _map(
            chart,
            lambda r: (
                with_annotations(
                    r,
                    {
                        HOOK_ANNOTATION: events,
                        HOOK_WEIGHT_ANNOTATION: str(weight),
                        HOOK_DELETE_ANNOTATION: "before-hook-creation",
                    },
                )
                if r.ref == obj
                else r
            ),
        )

    return FixTransform(charts=fn)


def job_ttl(obj: str, seconds: int) -> FixTransform:
    """Set a Job's ``spec.ttlSecondsAfterFinished``."""
    return FixTransform(charts=_edit_spec_field(obj, "ttlSecondsAfterFinished", seconds))


def raise_timeout(hr_ref: str, seconds: float) -> FixTransform:
    """Set the HelmRelease's ``spec.timeout`` (and drop per-action overrides that are shorter)."""

    def fn(hr: HelmRelease) -> HelmRelease:
        if hr.ref != hr_ref:
            return hr
        spec = hr.spec
        updates: dict[str, Any] = {"timeout": seconds}
        for action in ("install", "upgrade"):
            act = getattr(spec, action)
            if act.timeout is not None and act.timeout < seconds:
                updates[action] = act.model_copy(update={"timeout": seconds})
        return hr.model_copy(update={"spec": spec.model_copy(update=updates)})

    # helm-controller internal/action/install.go: the timeout is the action's (Install.Timeout,
    # the wait's), not an input of the render
    return FixTransform(helmreleases=fn, same_render=True)


def disable_wait(hr_ref: str) -> FixTransform:
    """Set the HelmRelease's ``spec.install.disableWait`` and ``spec.upgrade.disableWait``: Helm
    then runs post-install and post-upgrade hooks right after it applies the objects
    (helm/helm pkg/action/install.go performInstall: the wait only when Wait is set)."""

    def fn(hr: HelmRelease) -> HelmRelease:
        if hr.ref != hr_ref:
            return hr
        spec = hr.spec
        updates = {a: getattr(spec, a).model_copy(update={"disable_wait": True}) for a in ("install", "upgrade")}
        return hr.model_copy(update={"spec": spec.model_copy(update=updates)})

    return FixTransform(helmreleases=fn, same_render=True)


def recreate(obj: str) -> FixTransform:
    """Set Deployment ``obj``'s ``spec.strategy`` to ``Recreate``: the controller scales the old
    ReplicaSets to zero and waits for their pods to go before it creates new ones
    (kubernetes pkg/controller/deployment/recreate.go rolloutRecreate)."""
    return FixTransform(charts=_edit_spec_field(obj, "strategy", {"type": "Recreate"}))


def no_surge(obj: str) -> FixTransform:
    """Set Deployment ``obj``'s rolling update to ``maxSurge: 0``, ``maxUnavailable: 1``: the
    controller removes an old pod before it creates a new one, so the rollout never holds more
    pods than replicas (kubernetes pkg/controller/deployment/rolling.go reconcileNewReplicaSet)."""
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    return FixTransform(charts=_edit_spec_field(obj, "strategy", strategy))


def restricted_context(obj: str) -> FixTransform:
    """Give ``obj``'s pods what the restricted Pod Security level requires of fields a chart's
    securityContext values set (pod-security-admission policy/check_*.go): the pod
    ``runAsNonRoot: true`` and ``seccompProfile: RuntimeDefault`` unless it sets them, each
    container ``allowPrivilegeEscalation: false`` and ``capabilities.drop: [ALL]`` (keeping an
    added NET_BIND_SERVICE)."""

    def harden(spec: dict[str, Any]) -> None:
        sc = spec.get("securityContext")
        sc = spec["securityContext"] = sc if isinstance(sc, dict) else {}
        sc.setdefault("runAsNonRoot", True)
        sc.setdefault("seccompProfile", {"type": "RuntimeDefault"})
        for field in ("initContainers", "containers"):
            for c in spec.get(field) or ():
                if not isinstance(c, dict):
                    continue
                csc = c.get("securityContext")
                csc = c["securityContext"] = csc if isinstance(csc, dict) else {}
                csc["allowPrivilegeEscalation"] = False
                got = csc.get("capabilities")
                caps: dict[str, Any] = got if isinstance(got, dict) else {}
                added = [a for a in caps.get("add") or () if a == "NET_BIND_SERVICE"]
                csc["capabilities"] = {"drop": ["ALL"], **({"add": added} if added else {})}

    return FixTransform(charts=_edit_pod_spec(obj, harden))


def replace_image(obj: str, old: str, new: str) -> FixTransform:
    """Give every container (init containers too) of ``obj``'s pods that runs image ``old``
    the image ``new`` instead."""

    def swap(spec: dict[str, Any]) -> None:
        for field in ("initContainers", "containers"):
            for c in spec.get(field) or ():
                if isinstance(c, dict) and c.get("image") == old:
                    c["image"] = new

    return FixTransform(charts=_edit_pod_spec(obj, swap))


def transform_for(fix_key: str) -> FixTransform | None:
    """The transform a fix key names, ``None`` for keys this module does not know."""
    kind, *args = fix_key.split("|")
    if kind == "policy-as-hook":
        return policy_as_hook(args[0])
    if kind == "init-wait":
        return init_wait(args[0], args[1])
    if kind == "job-out":
        return job_out_of_release(args[0])
    if kind == "claim-via-hook":
        return claim_via_hook(args[0], args[1], args[2])
    if kind == "hook-weight":
        return set_hook_weight(args[0], int(args[1]))
    if kind == "make-hook":
        return make_hook(args[0], args[1], int(args[2]))
    if kind == "ttl":
        return job_ttl(args[0], int(args[1]))
    if kind == "timeout":
        return raise_timeout(args[0], float(args[1]))
    if kind == "no-wait":
        return disable_wait(args[0])
    if kind == "recreate":
        return recreate(args[0])
    if kind == "no-surge":
        return no_surge(args[0])
    if kind == "restricted-context":
        return restricted_context(args[0])
    if kind == "image":
        return replace_image(args[0], args[1], args[2])
    return None
