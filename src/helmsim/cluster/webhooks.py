"""Admission webhooks on create: the API server calls every matching webhook of the
Mutating- then ValidatingWebhookConfigurations in the store before it stores an object
(k8s.io/apiserver pkg/admission/plugin/webhook/generic/webhook.go Dispatch, mutating first).

A webhook whose Service is missing or has no ready endpoint cannot be called: with
``failurePolicy: Fail`` (the v1 default) the create is refused with the API server's error,
``Internal error occurred: failed calling webhook "x": failed to call webhook: Post
"https://svc.ns.svc:443/path?timeout=10s": no endpoints available for service "svc"``; with
``Ignore`` it is let through. A webhook that can be called is assumed to answer and admit (its
TLS trusted, its decision unknown), and the report says so once per webhook. Only creates are
intercepted here; updates and deletes are not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from helmsim.cluster.controllers.crd import resource_name
from helmsim.cluster.running import service_ready
from helmsim.cluster.store import ApiError
from helmsim.kube.scope import CLUSTER_SCOPED_KINDS
from helmsim.kube.selectors import matches_selector

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

CONFIGURATIONS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")

# k8s.io/apiserver pkg/admission/plugin/webhook/predicates/rules/rules.go
# IsExemptAdmissionConfigurationResource: webhooks are never called for these.
EXEMPT = frozenset(
    {
        *CONFIGURATIONS,
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
    }
)

ASSUMED = "behaviour-assumed"
API_ACTOR = "kube-apiserver"


def call_webhooks(
    sim: Simulation, obj: Mapping[str, Any], kinds: tuple[str, ...] = CONFIGURATIONS
) -> None:
    """Call the webhooks that intercept creating ``obj`` (of the configuration ``kinds``); raises
    ``ApiError`` when one that must be answered (``failurePolicy: Fail``) cannot be called."""
    kind = str(obj.get("kind") or "")
    if kind in EXEMPT:
        return
    configurations = [(k, cfg) for k in kinds for cfg in sim.store.list(k)]
    if not configurations:
        return
    api_version = str(obj.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    resource = resource_name(sim, api_version, kind)
    namespaced = kind not in CLUSTER_SCOPED_KINDS
    for cfg_kind, cfg in configurations:
        for hook in cfg.get("webhooks") or ():
            if not isinstance(hook, Mapping):
                continue
            if not any(rule_matches(r, group, resource, version, namespaced) for r in hook.get("rules") or ()):
                continue
            if not _selects(sim, hook, obj, kind):
                continue
            name = str(hook.get("name") or cfg["metadata"]["name"])
            failure = _call_failure(sim, hook)
            if failure is None:
                _assume_once(sim, cfg_kind, cfg, name)
                continue
            if str(hook.get("failurePolicy") or "Fail") == "Ignore":
                # generic/webhook.go: a call error under Ignore is logged and admits
                continue
            raise ApiError(
                "InternalError",
                f'Internal error occurred: failed calling webhook "{name}": failed to call webhook: {failure}',
            )


def rule_matches(rule: Any, group: str, resource: str, version: str | None = None, namespaced: bool | None = None) -> bool:
    """Whether a webhook rule intercepts creating ``resource`` of ``group`` (and ``version``, of
    that scope, when given). k8s.io/api admissionregistration/v1 RuleWithOperations;
    predicates/rules/rules.go Matcher."""
    if not isinstance(rule, Mapping):
        return False
    ops = rule.get("operations") or ()
    groups = rule.get("apiGroups") or ()
    versions = rule.get("apiVersions") or ()
    resources = rule.get("resources") or ()
    scope = str(rule.get("scope") or "*")
    return (
        ("CREATE" in ops or "*" in ops)
        and (group in groups or "*" in groups)
        and (version is None or version in versions or "*" in versions)
        # "*" is every resource, "*/*" every resource and subresource
        and (resource in resources or "*" in resources or "*/*" in resources)
        and (namespaced is None or scope == "*" or scope == ("Namespaced" if namespaced else "Cluster"))
    )


def _selects(sim: Simulation, hook: Mapping[str, Any], obj: Mapping[str, Any], kind: str) -> bool:
    """The webhook's objectSelector on the object's labels and namespaceSelector on its
    namespace's (predicates/namespace/matcher.go: a cluster-scoped object other than a
    Namespace is never excluded by the namespace selector)."""
    meta = obj.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    object_selector = hook.get("objectSelector")
    if isinstance(object_selector, Mapping) and object_selector and not matches_selector(object_selector, labels):
        return False
    namespace_selector = hook.get("namespaceSelector")
    if not isinstance(namespace_selector, Mapping) or not namespace_selector:
        return True
    if kind == "Namespace":
        ns_labels = {**labels, "kubernetes.io/metadata.name": str(meta.get("name") or "")}
    elif kind in CLUSTER_SCOPED_KINDS:
        return True
    else:
        ns = sim.store.get("Namespace", "", str(meta.get("namespace") or "default"))
        ns_labels = {str(k): str(v) for k, v in (((ns or {}).get("metadata") or {}).get("labels") or {}).items()}
        ns_labels.setdefault("kubernetes.io/metadata.name", str(meta.get("namespace") or "default"))
    return matches_selector(namespace_selector, ns_labels)


def _call_failure(sim: Simulation, hook: Mapping[str, Any]) -> str | None:
    """Why the API server cannot call the webhook (its Service missing or without a ready
    endpoint: pkg/proxy resolution of the webhook's service reference), else None."""
    client = hook.get("clientConfig") or {}
    ref = client.get("service") if isinstance(client, Mapping) else None
    if not isinstance(ref, Mapping):
        return None  # a URL webhook: outside the cluster, assumed reachable (said in the note)
    ns, name = str(ref.get("namespace") or "default"), str(ref.get("name") or "")
    port = ref.get("port") or 443
    timeout = hook.get("timeoutSeconds") or 10
    url = f'Post "https://{name}.{ns}.svc:{port}{ref.get("path") or ""}?timeout={timeout}s"'
    state = service_ready(sim, ns, name)
    if state == "missing":
        return f'{url}: service "{name}" not found'
    if state == "not-ready":
        return f'{url}: no endpoints available for service "{name}"'
    return None


def _assume_once(sim: Simulation, cfg_kind: str, cfg: Mapping[str, Any], name: str) -> None:
    message = (
        f"admission webhook {name} ({cfg_kind} {cfg['metadata']['name']}) is assumed to answer and to admit "
        "what it is asked (its TLS trusted, its decision unknown)"
    )
    if not any(e.message == message for e in sim.trace.find(what=ASSUMED)):
        sim.log(API_ACTOR, ASSUMED, f"{cfg_kind}/{cfg['metadata']['name']}", message)
