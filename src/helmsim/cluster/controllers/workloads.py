"""Shared pieces of the workload controllers and ``install_workload_controllers``.

Helpers here mirror kubernetes/kubernetes pkg/controller (controller_utils.go, the work queue's
AddAfter) and pkg/api/v1/pod (IsPodReady, IsPodAvailable); each says which.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from helmsim.cluster.engine import EPOCH
from helmsim.cluster.jobmath import parse_time
from helmsim.cluster.store import Store, clone, owner_reference, ref_of

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

# k8s.io/apimachinery pkg/util/rand/rand.go: alphanums (no vowels, no 0/1/3 to avoid words).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
# k8s.io/apiserver pkg/storage/names/generate.go: maxGeneratedNameLength = 63 - 5
_MAX_GENERATE_NAME = 58
# k8s.io/client-go util/workqueue/default_rate_limiters.go DefaultTypedControllerRateLimiter: a key
# whose sync failed is retried after 5 ms, doubling per failure up to 1000 s (the ReplicaSet,
# StatefulSet, DaemonSet and Deployment controllers' queues).
CONTROLLER_RETRY = (0.005, 1000.0)


class KeyedQueue:
    """A work queue with ``AddAfter``: one pending sync per key, the earliest wins.

    client-go util/workqueue delaying_queue.go: adding a key that is already waiting keeps the
    earlier ready time; a due key runs once however many times it was added.
    """

    def __init__(self, sim: Simulation, fn: Callable[[Any, int | None], None]) -> None:
        self._sim = sim
        self._fn = fn
        self._due: dict[Any, float] = {}
        self._cause: dict[Any, int | None] = {}
        self._failures: dict[Any, int] = {}

    def add_after(self, key: Any, delay: float, cause: int | None = None) -> None:
        """Run ``fn(key, cause)`` ``delay`` seconds from now unless it already runs sooner."""
        due = self._sim.now + max(0.0, delay)
        if cause is not None or key not in self._cause:
            self._cause[key] = cause
        current = self._due.get(key)
        if current is not None and current <= due:
            return
        self._due[key] = due
        self._sim.after(due - self._sim.now, self._fire, key, due)

    def add_rate_limited(
        self, key: Any, limits: tuple[float, float], cause: int | None = None
    ) -> float:
        """Retry ``key`` after its sync failed: ItemExponentialFailureRateLimiter.When, i.e.
        ``base · 2^failures`` capped (client-go util/workqueue/default_rate_limiters.go).
        Returns the delay."""
        base, cap = limits
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        delay = min(base * 2.0 ** min(n, 64), cap)
        self.add_after(key, delay, cause)
        return delay

    def forget(self, key: Any) -> None:
        """The sync succeeded: the next failure starts from the base delay again (Forget)."""
        self._failures.pop(key, None)

    def failures(self, key: Any) -> int:
        """How many syncs of ``key`` failed in a row (NumRequeues)."""
        return self._failures.get(key, 0)

    def pending(self, key: Any) -> float | None:
        """When ``key`` will next be synced, if it is queued."""
        return self._due.get(key)

    def _fire(self, key: Any, due: float) -> None:
        if self._due.get(key) != due:
            return  # superseded by an earlier add
        del self._due[key]
        self._fn(key, self._cause.pop(key, None))


# --- names and hashes -----------------------------------------------------------------------------


def safe_encode(text: str) -> str:
    """apimachinery pkg/util/rand SafeEncodeString: each byte mapped onto the alphanums."""
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in text.encode())


def random_suffix(seed: str, n: int = 5) -> str:
    """``n`` characters as apimachinery rand.String(n) draws them, derived from ``seed``."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in digest[:n])


def generate_name(base: str, seed: str) -> str:
    """A ``metadata.generateName`` completion: ``base`` (trimmed to 58) + 5 random-looking chars.

    apiserver pkg/storage/names/generate.go simpleNameGenerator; deterministic here (from ``seed``).
    """
    return base[:_MAX_GENERATE_NAME] + random_suffix(seed)


def fnv32a(data: bytes) -> int:
    """FNV-1a, 32 bit (Go hash/fnv New32a)."""
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """The ``pod-template-hash`` of a pod template.

    kubernetes pkg/controller/controller_utils.go ComputeHash: FNV-32a of the template (plus the
    collision count), SafeEncodeString of its decimal value. Upstream hashes a spew dump of the Go
    struct; here canonical JSON, so values differ from a real cluster but are equally stable.
    """
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    return safe_encode(str(fnv32a(data)))


# --- time ---------------------------------------------------------------------------------------


def sim_seconds(timestamp: Any) -> float | None:
    """An RFC3339 timestamp of this simulation as simulated seconds (None when absent)."""
    dt = parse_time(timestamp)
    if dt is None:
        return None
    return (dt - EPOCH).total_seconds()


# --- pods ---------------------------------------------------------------------------------------


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """metav1.GetControllerOf: the ownerReference with ``controller: true``."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def owned(store: Store, kind: str, owner: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Objects of ``kind`` in the owner's namespace whose controller is ``owner`` (by uid)."""
    meta = owner.get("metadata") or {}
    uid = meta.get("uid")
    ns = meta.get("namespace") or ""
    out = []
    for obj in store.owned_by(kind, uid):  # the store's owner index, in name order
        ref = controller_ref(obj)
        if ref is not None and ref.get("uid") == uid and (obj["metadata"].get("namespace") or "") == ns:
            out.append(obj)
    return out


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """controller_utils.go IsPodActive: not Succeeded/Failed and not being deleted."""
    return pod_phase(pod) not in ("Succeeded", "Failed") and not is_terminating(pod)


def ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond  # type: ignore[no-any-return]
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """pkg/api/v1/pod IsPodReady: the Ready condition is True."""
    cond = ready_condition(pod)
    return cond is not None and cond.get("status") == "True"


def available_at(pod: Mapping[str, Any], min_ready_seconds: int) -> float | None:
    """When a ready pod becomes available (Ready since ``minReadySeconds``), or None if not ready.

    pkg/api/v1/pod IsPodAvailable: ``lastTransitionTime + minReadySeconds < now``. Simulated times
    are exact, so equality counts as available here (a real clock is never exactly on it).
    """
    cond = ready_condition(pod)
    if cond is None or cond.get("status") != "True":
        return None
    if min_ready_seconds <= 0:
        return float("-inf")
    since = sim_seconds(cond.get("lastTransitionTime"))
    return None if since is None else since + min_ready_seconds


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    at = available_at(pod, min_ready_seconds)
    return at is not None and at <= now


def pod_from_template(
    owner: Mapping[str, Any],
    template: Mapping[str, Any],
    name: str,
    *,
    generate_base: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Pod built from a pod template, owned by ``owner`` (controller_utils.go GetPodFromTemplate)."""
    tmeta = template.get("metadata") or {}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": (owner.get("metadata") or {}).get("namespace") or "default",
        "labels": {**(tmeta.get("labels") or {}), **(labels or {})},
        "ownerReferences": [owner_reference(owner)],
    }
    if generate_base is not None:
        meta["generateName"] = generate_base
    ann = {**(tmeta.get("annotations") or {}), **(annotations or {})}
    if ann:
        meta["annotations"] = ann
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": clone(dict(template.get("spec") or {})),
        "status": {"phase": "Pending"},
    }


def int_or_percent(value: Any, total: int, *, round_up: bool, default: Any) -> int:
    """apimachinery pkg/util/intstr GetScaledValueFromIntOrPercent."""
    if value is None:
        value = default
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        try:
            pct = int(text[:-1])
        except ValueError:
            return 0
        scaled = pct * total
        return -(-scaled // 100) if round_up else scaled // 100
    try:
        return int(text)
    except ValueError:
        return 0


def set_condition(
    conditions: list[dict[str, Any]],
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: str,
    *,
    update_time: bool = False,
) -> bool:
    """Set a condition in place; keep lastTransitionTime while the status stays. Returns changed."""
    for i, cond in enumerate(conditions):
        if cond.get("type") != type_:
            continue
        if (
            cond.get("status") == status
            and cond.get("reason") == reason
            and cond.get("message") == message
        ):
            return False
        new = {"type": type_, "status": status, "reason": reason, "message": message}
        if update_time:
            new["lastUpdateTime"] = now
        new["lastTransitionTime"] = (
            cond.get("lastTransitionTime", now) if cond.get("status") == status else now
        )
        conditions[i] = new
        return True
    new = {"type": type_, "status": status, "reason": reason, "message": message}
    if update_time:
        new["lastUpdateTime"] = now
    new["lastTransitionTime"] = now
    conditions.append(new)
    return True


def trigger_cause(sim: Simulation, obj: Mapping[str, Any]) -> int | None:
    """The id of the trace event that just wrote ``obj``, if the last event concerns it."""
    if len(sim.trace) == 0:
        return None
    last = sim.trace[len(sim.trace) - 1]
    return last.id if last.obj == ref_of(obj) else None


def enqueue_owner(
    sim: Simulation, queue: KeyedQueue, owner_kind: str, event: str, obj: Mapping[str, Any]
) -> None:
    """The shared watch rule of owner controllers: sync an ``owner_kind`` object when it changes
    (not when deleted), and its controller when one of its dependents changes (client-go
    informer handlers resolving the controllerRef, e.g. pkg/controller/statefulset addPod)."""
    sync = sim.latency("controller_sync")
    meta = obj["metadata"]
    if obj.get("kind") == owner_kind:
        if event != "DELETED":
            queue.add_after((meta.get("namespace") or "", meta["name"]), sync, trigger_cause(sim, obj))
        return
    ref = controller_ref(obj)
    if ref is not None and ref.get("kind") == owner_kind:
        queue.add_after((meta.get("namespace") or "", ref["name"]), sync, trigger_cause(sim, obj))


def delete_owned_pod(
    ctrl: Any, owner: Mapping[str, Any], pod: Mapping[str, Any], message: str, cause: int | None
) -> None:
    """Delete ``pod`` with its grace period and record SuccessfulDelete on ``owner``."""
    m = pod["metadata"]
    ctrl.store.delete(
        "Pod", m.get("namespace"), m["name"], actor=ctrl.name, cause=cause, grace=ctrl.sim.pod_grace(pod)
    )
    ctrl.store.record_event(owner, "Normal", "SuccessfulDelete", message, source=ctrl.name, cause=cause)


def install_workload_controllers(sim: Simulation) -> list[Any]:
    """Start every workload controller on ``sim``: Job (+ TTL-after-finished), Deployment,
    ReplicaSet, StatefulSet, DaemonSet, CronJob."""
    from helmsim.cluster.controllers.cronjob import CronJobController
    from helmsim.cluster.controllers.daemonset import DaemonSetController
    from helmsim.cluster.controllers.deployment import DeploymentController, ReplicaSetController
    from helmsim.cluster.controllers.job import JobController, TTLAfterFinishedController
    from helmsim.cluster.controllers.statefulset import StatefulSetController

    return [
        JobController(sim),
        TTLAfterFinishedController(sim),
        DeploymentController(sim),
        ReplicaSetController(sim),
        StatefulSetController(sim),
        DaemonSetController(sim),
        CronJobController(sim),
    ]
