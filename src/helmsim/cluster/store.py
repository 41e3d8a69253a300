"""The simulated API server's object store: create, apply, status updates, delete, watch.

Objects are plain dicts shaped like real Kubernetes objects (so kstatus reads them unchanged).
Keys are ``(kind, namespace, name)``; cluster-scoped objects have namespace ``""``.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from helmsim import limits
from helmsim.cluster.selectors import matches_selector

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

Key = tuple[str, str, str]
Objects = list[dict[str, Any]]
"""Objects as the store's reads return them (``list`` is a method name inside ``Store``)."""
WatchFn = Callable[[str, dict[str, Any]], None]

# metadata fields the API server owns; an apply never overwrites them.
_SERVER_META = ("uid", "creationTimestamp", "resourceVersion", "generation", "deletionTimestamp")


_ATOMS = frozenset({str, int, float, bool, type(None)})


def clone(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), several times faster than
    ``copy.deepcopy``, which the store calls on every write (scalars, most of the leaves, are
    returned without a call)."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _ATOMS else clone(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _ATOMS else clone(v) for v in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)


Scope = tuple[str, str]
"""``(kind, namespace)``."""


class _Indexed(dict):  # type: ignore[type-arg]
    """``Key -> object`` with the indexes the controllers' reads need, kept by every write.

    Per kind and per (kind, namespace): the keys in sorted order (rebuilt only after a key is
    added or removed); per (kind, namespace) and label pair: the keys carrying it; per owner
    uid: the keys of its dependents (``metadata.ownerReferences``). Objects are replaced, never
    mutated in place, so an index entry changes only when ``__setitem__`` or ``pop`` runs.
    """

    def __init__(self) -> None:
        super().__init__()
        self._kinds: dict[str, dict[Key, dict[str, Any]]] = defaultdict(dict)
        self._scopes: dict[Scope, dict[Key, dict[str, Any]]] = defaultdict(dict)
        self._sorted: dict[str | Scope, list[Key]] = {}
        self._labels: dict[Scope, dict[tuple[str, str], set[Key]]] = defaultdict(lambda: defaultdict(set))
        self._dependents: dict[str, set[Key]] = defaultdict(set)
        self._indexed: dict[Key, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {}
        self._seq: dict[Key, int] = {}
        self._next = 0
        self._pod_node: dict[Key, str] = {}
        self.node_load: dict[str, int] = defaultdict(int)
        """Pods bound to each node and not Succeeded or Failed (the scheduler's spreading count)."""

    def __setitem__(self, key: Key, value: dict[str, Any]) -> None:
        added = key not in self
        super().__setitem__(key, value)
        kind, ns, _ = key
        self._kinds[kind][key] = value
        self._scopes[(kind, ns)][key] = value
        if added:
            self._next += 1
            self._seq[key] = self._next
            self._sorted.pop(kind, None)
            self._sorted.pop((kind, ns), None)
        if kind == "Pod":
            self._place(key, value)
        meta = value.get("metadata") or {}
        labels = tuple((str(k), str(v)) for k, v in (meta.get("labels") or {}).items())
        owners = tuple(str(o.get("uid")) for o in meta.get("ownerReferences") or () if o.get("uid"))
        entry = (labels, owners)
        previous = self._indexed.get(key)
        if previous != entry:
            if previous is not None:
                self._unindex(key, previous)
            self._indexed[key] = entry
            by_label = self._labels[(kind, ns)]
            for pair in labels:
                by_label[pair].add(key)
            for uid in owners:
                self._dependents[uid].add(key)

    def _place(self, key: Key, pod: Mapping[str, Any] | None) -> None:
        node = None
        if pod is not None:
            node = (pod.get("spec") or {}).get("nodeName")
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                node = None
        before = self._pod_node.get(key)
        if before == node:
            return
        if before is not None:
            self.node_load[before] -= 1
            del self._pod_node[key]
        if node:
            self._pod_node[key] = str(node)
            self.node_load[str(node)] += 1

    def _unindex(self, key: Key, entry: tuple[tuple[tuple[str, str], ...], tuple[str, ...]]) -> None:
        labels, owners = entry
        by_label = self._labels[(key[0], key[1])]
        for pair in labels:
            by_label[pair].discard(key)
        for uid in owners:
            self._dependents[uid].discard(key)

    def __delitem__(self, key: Key) -> None:
        self.pop(key)

    def pop(self, key: Key, *default: Any) -> Any:  # type: ignore[override]
        if key in self:
            kind, ns, _ = key
            self._kinds[kind].pop(key, None)
            self._scopes[(kind, ns)].pop(key, None)
            self._sorted.pop(kind, None)
            self._sorted.pop((kind, ns), None)
            self._seq.pop(key, None)
            if kind == "Pod":
                self._place(key, None)
            entry = self._indexed.pop(key, None)
            if entry is not None:
                self._unindex(key, entry)
        return super().pop(key, *default)

    def sorted_keys(self, kind: str, namespace: str | None) -> list[Key]:
        """The keys of ``kind`` (in ``namespace`` when given), sorted."""
        scope: str | Scope = kind if namespace is None else (kind, namespace)
        keys = self._sorted.get(scope)
        if keys is None:
            source = self._kinds.get(kind, {}) if namespace is None else self._scopes.get((kind, namespace), {})
            keys = self._sorted[scope] = sorted(source)
        return keys

    def labelled(self, kind: str, namespace: str, pairs: Iterable[tuple[str, str]]) -> set[Key] | None:
        """Keys of ``kind`` in ``namespace`` carrying every label pair (None: no pairs given)."""
        by_label = self._labels.get((kind, namespace))
        found: set[Key] | None = None
        for pair in pairs:
            keys = by_label.get(pair) if by_label is not None else None
            if not keys:
                return set()
            found = set(keys) if found is None else found & keys
            if not found:
                return found
        return found

    def dependents(self, uid: str) -> list[Key]:
        """Keys of the objects with an ownerReference to ``uid``, in the order they were stored
        (the order a scan of the store meets them)."""
        return sorted(self._dependents.get(uid) or (), key=self._seq.__getitem__)

    def of_kind(self, kind: str) -> list[tuple[Key, dict[str, Any]]]:
        return list(self._kinds.get(kind, {}).items())


class ApiError(Exception):
    """An API error with Kubernetes' reason (AlreadyExists, NotFound, Invalid, Forbidden)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class ApiUnreachable(ApiError):
    """The client never reached the API server (a transport error, not a server response).

    ``message`` is client-go's text, ``why`` what the availability hook said (for traces).
    """

    def __init__(self, message: str, why: str) -> None:
        super().__init__("Unreachable", message)
        self.why = why


Availability = Callable[[str], "str | None"]
"""``availability(actor)``: why ``actor`` cannot reach the API server now, or None."""


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", "")))


def ref_of(obj: Mapping[str, Any]) -> str:
    """``Kind/ns/name`` or ``Kind/name`` (fluxcd/pkg ssa/utils/fmt.go FmtObjMetadata)."""
    kind, ns, name = key_of(obj)
    return f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}"


def api_path(obj: Mapping[str, Any], *, item: bool = True) -> str:
    """The REST path of ``obj`` (``item``) or of its collection: ``/apis/batch/v1/namespaces/ns/jobs``.

    k8s.io/client-go rest/request.go URL: ``/api/v1`` for the core group, ``/apis/<group>/<version>``
    otherwise, then ``namespaces/<ns>``, the lowercase plural resource and the name.
    """
    api = str(obj.get("apiVersion") or "v1")
    kind, ns, name = key_of(obj)
    path = (f"/api/{api}" if "/" not in api else f"/apis/{api}") + (f"/namespaces/{ns}" if ns else "")
    path += f"/{_resource_name(kind)}"
    return f"{path}/{name}" if item else path


def _resource_name(kind: str) -> str:
    # The lowercase plural the API server names objects by in errors (e.g. jobs.batch "x").
    lower = kind.lower()
    if lower.endswith("y") and not lower.endswith("ey"):
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x")):
        return lower + "es"
    return lower + "s"


class Store:
    """In-memory API objects with watches; every write goes to the simulation's trace."""

    def __init__(self, sim: Simulation) -> None:
        self._sim = sim
        self._objects: _Indexed = _Indexed()
        self._watchers: dict[str, list[WatchFn]] = defaultdict(list)
        self._uid = 0
        self._rv = 0
        self.pods_created = 0
        """Pods created so far; past ``--max-pods`` more than ``pods_baseline`` (the cluster's
        own pods) the simulation stops (helmsim.limits)."""
        self.pods_baseline = 0
        # What each field manager last applied, per object: server-side apply's field ownership.
        self._applied: dict[tuple[Key, str], dict[str, Any]] = {}
        self._writes: dict[str, int] = defaultdict(int)
        self.admission: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
        """Called on every create (API server admission); may mutate, or raise ApiError."""
        self.validation: Callable[[Mapping[str, Any]], None] | None = None
        self.acting = ""
        """Who the write under admission or validation is made by (its ``actor``)."""
        """Called on every update and apply of an existing object (the API server's update
        validation); raises ApiError."""
        self.availability: Availability | None = None
        """Consulted before every write: a reason refuses the writer (see :meth:`unavailable`)."""

    # --- availability -----------------------------------------------------------------------------
    def unavailable(self, actor: str) -> str | None:
        """Why ``actor`` cannot reach the API server now (None: it can).

        Every write (create, apply, update, update_status, delete) asks first and raises
        :class:`ApiUnreachable` with client-go's error text when refused; clients ask before a
        read they model as failing (:meth:`unreachable`). Who is refused is the hook's choice:
        only refuse writers that handle the error (Helm, helm-controller, pods, the kubelet, the
        scheduler, external provisioners).
        """
        return self.availability(actor) if self.availability is not None else None

    def unreachable(
        self, actor: str, verb: str, obj: Mapping[str, Any], *, item: bool = True, sub: str = ""
    ) -> ApiUnreachable | None:
        """The error ``actor``'s ``verb`` (Get, Post, Put, Patch, Delete) on ``obj`` meets now.

        golang/go src/net/url/url.go Error.Error prints ``<Op> "<URL>": <Err>``; client-go's
        in-cluster config dials the ``kubernetes`` Service address (rest.InClusterConfig:
        KUBERNETES_SERVICE_HOST:443), and a closed port answers ``connect: connection refused``.
        Query parameters (``fieldManager``, ``timeout``) are not modelled.
        """
        why = self.unavailable(actor)
        if why is None:
            return None
        host = f"{self.apiserver_ip()}:443"
        url = f"https://{host}{api_path(obj, item=item)}" + (f"/{sub}" if sub else "")
        return ApiUnreachable(f'{verb} "{url}": dial tcp {host}: connect: connection refused', why)

    def apiserver_ip(self) -> str:
        """The ClusterIP of the ``kubernetes`` Service (the profile's, default 10.96.0.1)."""
        from helmsim.cluster.profile import addressing_of  # the profile module loads pydantic models

        return addressing_of(self._sim.profile).apiserver_cluster_ip

    def _refuse(self, actor: str, verb: str, obj: Mapping[str, Any], *, item: bool = True, sub: str = "") -> None:
        err = self.unreachable(actor, verb, obj, item=item, sub=sub)
        if err is not None:
            raise err  # the caller reports it as its client does

    # --- reads ------------------------------------------------------------------------------------
    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The live object (do not mutate it; use the write methods)."""
        return self._objects.get((kind, namespace or "", name))

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        selector: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Objects of ``kind`` (in ``namespace`` when given) matching a LabelSelector, by name."""
        objects = self._objects
        if selector and namespace is not None:
            pairs = [(str(k), str(v)) for k, v in (selector.get("matchLabels") or {}).items()]
            candidates = objects.labelled(kind, namespace, pairs) if pairs else None
            if candidates is not None:
                return [
                    objects[k] for k in sorted(candidates) if matches_selector(selector, _labels(objects[k]))
                ]
        keys = objects.sorted_keys(kind, namespace)
        if selector is None:
            return [objects[k] for k in keys]
        return [objects[k] for k in keys if matches_selector(selector, _labels(objects[k]))]

    def select(self, kind: str, namespace: str, selector: Mapping[str, str] | None) -> Objects:
        """Objects of ``kind`` in ``namespace`` a map selector (``Service.spec.selector``) selects,
        by name; an empty or absent selector selects nothing (``matches_map``)."""
        if not selector:
            return []
        objects = self._objects
        found = objects.labelled(kind, namespace, ((str(k), str(v)) for k, v in selector.items()))
        return [objects[k] for k in sorted(found or ())]

    def node_load(self) -> Mapping[str, int]:
        """Pods bound to each node that are not Succeeded or Failed (read-only)."""
        return self._objects.node_load

    def owned_by(self, kind: str, uid: str | None) -> Objects:
        """Objects of ``kind`` with an ownerReference to ``uid``, by key."""
        if not uid:
            return []
        objects = self._objects
        return [objects[k] for k in sorted(objects.dependents(uid)) if k[0] == kind]

    def all(self) -> Objects:
        """Every object, in a stable order."""
        return [self._objects[k] for k in sorted(self._objects)]

    # --- writes -----------------------------------------------------------------------------------
    def watch(self, kinds: Iterable[str], fn: WatchFn) -> None:
        """Call ``fn(event, obj)`` (ADDED, MODIFIED, DELETED) after each write to these kinds."""
        for kind in kinds:
            self._watchers[kind].append(fn)

    def create(self, obj: Mapping[str, Any], *, actor: str, cause: int | None = None) -> dict[str, Any]:
        """Create; raises ``ApiError("AlreadyExists")`` when the object exists."""
        self._refuse(actor, "Post", obj, item=False)
        key = key_of(obj)
        if key in self._objects:
            kind, _, name = key
            group = _group(obj)
            res = _resource_name(kind) + (f".{group}" if group else "")
            raise ApiError("AlreadyExists", f'{res} "{name}" already exists')
        self.acting = actor
        new = clone(dict(obj)) if self.admission is None else self.admission(obj)
        meta = new.setdefault("metadata", {})
        self._uid += 1
        meta["uid"] = f"00000000-0000-4000-8000-{self._uid:012d}"
        meta["creationTimestamp"] = self._sim.timestamp()
        meta["generation"] = 1
        self._bump(new)
        if key[0] == "Pod":
            self.pods_created += 1
            limits.check(
                "max_pods",
                self.pods_created - self.pods_baseline,
                f"pods created by t={self._sim.now:g}s",
                subject=f"simulation on profile {getattr(self._sim.profile, 'name', '?')}",
            )
        self._objects[key] = new
        self._sim.log(actor, "created", ref_of(new), f"{ref_of(new)} created", cause=cause)
        self._notify("ADDED", new)
        return new

    def apply(
        self, obj: Mapping[str, Any], *, actor: str, cause: int | None = None
    ) -> tuple[dict[str, Any], bool]:
        """Server-side apply by field manager ``actor``: create, or merge what it owns.

        k8s.io/apimachinery pkg/util/managedfields: fields the manager applied before and no
        longer sends are removed; fields other managers set (a Service's clusterIP, a claim's
        volumeName, controller-written status) are kept. Lists of objects merge by their key
        (name, port, mountPath …); other lists are atomic. ``metadata.generation`` increases when
        anything but metadata and status changes (k8s.io/apiserver: generation tracks the spec).
        """
        self._refuse(actor, "Patch", obj)
        key = key_of(obj)
        applied = _strip_server_fields(clone(dict(obj)))
        live = self._objects.get(key)
        if live is None:
            created = self.create(obj, actor=actor, cause=cause)
            self._applied[(key, actor)] = applied
            return created, True
        previous = self._applied.get((key, actor), {})
        merged = _ssa_merge(clone(live), applied, previous)
        merged["metadata"] = {
            **merged.get("metadata", {}),
            **{f: live["metadata"][f] for f in _SERVER_META if f in live["metadata"]},
        }
        if "status" in live:
            merged["status"] = live["status"]
        spec_changed = _without_meta(live) != _without_meta(merged)
        if spec_changed and self.validation is not None:
            self.acting = actor
            self.validation(merged)
        if spec_changed:
            merged["metadata"]["generation"] = int(live["metadata"].get("generation", 1)) + 1
        self._applied[(key, actor)] = applied
        self._bump(merged)
        self._objects[key] = merged
        what = "configured" if spec_changed else "unchanged"
        self._sim.log(actor, what, ref_of(merged), f"{ref_of(merged)} {what}", cause=cause)
        self._notify("MODIFIED", merged)
        return merged, False

    def update(self, obj: Mapping[str, Any], *, actor: str, cause: int | None = None, quiet: bool = False) -> dict[str, Any]:
        """Replace an existing object as a controller does (metadata and spec, status kept)."""
        self._refuse(actor, "Put", obj)
        key = key_of(obj)
        live = self._objects.get(key)
        if live is None:
            raise ApiError("NotFound", f'{key[0]} "{key[2]}" not found')
        new = clone(dict(obj))
        if "status" in live and "status" not in new:
            new["status"] = live["status"]
        if self.validation is not None:
            self.acting = actor
            self.validation(new)
        self._bump(new)
        self._objects[key] = new
        if not quiet:
            self._sim.log(actor, "updated", ref_of(new), f"{ref_of(new)} updated", cause=cause)
        self._notify("MODIFIED", new)
        return new

    def update_status(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        status: Mapping[str, Any],
        *,
        actor: str,
        cause: int | None = None,
        message: str | None = None,
    ) -> dict[str, Any] | None:
        """Replace ``status`` of a live object (no-op returning None when it is gone)."""
        live = self.get(kind, namespace, name)
        if live is None:
            return None
        self._refuse(actor, "Put", live, sub="status")
        new = {**live, "status": clone(dict(status))}
        self._bump(new)
        self._objects[key_of(new)] = new
        if message:
            self._sim.log(actor, "status", ref_of(new), message, cause=cause)
        self._notify("MODIFIED", new)
        return new

    def delete(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        *,
        actor: str,
        cause: int | None = None,
        grace: float = 0.0,
    ) -> bool:
        """Delete (background propagation): mark, remove after ``grace``, then collect dependents.

        Returns False when the object does not exist. No finalizers are modelled.
        """
        live = self.get(kind, namespace, name)
        if live is None:
            return False
        self._refuse(actor, "Delete", live)
        if live["metadata"].get("deletionTimestamp"):
            return True
        marked = clone(live)
        marked["metadata"]["deletionTimestamp"] = self._sim.timestamp()
        self._bump(marked)
        self._objects[key_of(marked)] = marked
        ev = self._sim.log(actor, "deleting", ref_of(marked), f"{ref_of(marked)} deletion requested", cause=cause)
        self._notify("MODIFIED", marked)
        if grace > 0:
            self._sim.after(grace, self._remove, key_of(marked), ev.id)
        else:
            self._remove(key_of(marked), ev.id)
        return True

    def _remove(self, key: Key, cause: int | None) -> None:
        obj = self._objects.pop(key, None)
        if obj is None:
            return
        ev = self._sim.log("apiserver", "deleted", ref_of(obj), f"{ref_of(obj)} deleted", cause=cause)
        self._notify("DELETED", obj)
        uid = obj["metadata"].get("uid")
        # kubernetes pkg/controller/garbagecollector: dependents of a deleted owner are deleted.
        for dep in [self._objects[k] for k in self._objects.dependents(str(uid))] if uid else []:
            k, ns, n = key_of(dep)
            grace = self._sim.pod_grace(dep) if k == "Pod" else 0.0
            self._sim.after(self._sim.latency("controller_sync"), self._gc, k, ns, n, grace, ev.id)

    def _gc(self, kind: str, ns: str, name: str, grace: float, cause: int) -> None:
        self.delete(kind, ns, name, actor="garbage-collector", cause=cause, grace=grace)

    def record_event(
        self,
        obj: Mapping[str, Any],
        type_: str,
        reason: str,
        message: str,
        *,
        source: str,
        cause: int | None = None,
    ) -> int:
        """A Kubernetes Event (``kubectl describe`` shows it) on ``obj``; returns its trace id."""
        ev = self._sim.log(
            source, "event", ref_of(obj), message, cause=cause, reason=reason, type=type_
        )
        return ev.id

    def _bump(self, obj: dict[str, Any]) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)

    def writes(self, kind: str) -> int:
        """How many writes to ``kind`` so far (a cache of what a kind holds is stale when it grew)."""
        return self._writes.get(kind, 0)

    def _notify(self, event: str, obj: dict[str, Any]) -> None:
        kind = str(obj.get("kind"))
        self._writes[kind] += 1
        for fn in list(self._watchers.get(kind, ())):
            fn(event, obj)


def merged_for_apply(
    live: Mapping[str, Any], applied: Mapping[str, Any], previous: Mapping[str, Any] | None
) -> dict[str, Any]:
    """What ``live`` would become if ``applied`` were applied over it by a manager whose last
    applied config was ``previous`` (without writing; status and server metadata kept)."""
    merged = _ssa_merge(
        clone(dict(live)),
        _strip_server_fields(clone(dict(applied))),
        _strip_server_fields(clone(dict(previous))) if previous else {},
    )
    if "status" in live:
        merged["status"] = live["status"]
    return merged


def spec_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal apart from metadata and status."""
    return _without_meta(a) == _without_meta(b)


_LIST_KEYS = ("name", "port", "containerPort", "mountPath", "devicePath", "key", "type", "ip")


def _strip_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    obj.pop("status", None)
    meta = obj.get("metadata") or {}
    for f in _SERVER_META:
        meta.pop(f, None)
    return obj


def _without_meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _ssa_merge(live: Any, applied: Any, previous: Any) -> Any:
    """Merge an applied config into the live value, dropping what the manager stopped sending."""
    if isinstance(live, dict) and isinstance(applied, dict):
        out = dict(live)
        prev = previous if isinstance(previous, dict) else {}
        for k in prev:
            if k not in applied:
                out.pop(k, None)
        for k, v in applied.items():
            out[k] = _ssa_merge(live.get(k), v, prev.get(k)) if k in live else clone(v)
        return out
    if isinstance(live, list) and isinstance(applied, list):
        key = _list_key(live, applied)
        if key is not None:
            live_by = {item.get(key): item for item in live}
            prev_by = {
                item.get(key): item for item in (previous if isinstance(previous, list) else [])
                if isinstance(item, dict)
            }
            return [
                _ssa_merge(live_by[item.get(key)], item, prev_by.get(item.get(key)))
                if item.get(key) in live_by else clone(item)
                for item in applied
            ]
    return clone(applied)


def _list_key(live: list[Any], applied: list[Any]) -> str | None:
    items = live + applied
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    for key in _LIST_KEYS:
        values = [i.get(key) for i in applied]
        if all(v is not None for v in values) and len(set(map(str, values))) == len(values):
            if all(i.get(key) is not None for i in live):
                return key
    return None


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _group(obj: Mapping[str, Any]) -> str:
    api = str(obj.get("apiVersion", ""))
    return api.rsplit("/", 1)[0] if "/" in api else ""


def owner_reference(owner: Mapping[str, Any], *, controller: bool = True) -> dict[str, Any]:
    """An ownerReference to ``owner`` as controllers set it."""
    return {
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """``(kind, name)`` of the ownerReference with ``controller: true`` (apimachinery
    pkg/apis/meta/v1/controller_ref.go GetControllerOf), or None."""
    refs = ((obj or {}).get("metadata") or {}).get("ownerReferences") or ()
    owner = next((r for r in refs if isinstance(r, Mapping) and r.get("controller")), None)
    return None if owner is None else (str(owner.get("kind") or ""), str(owner.get("name") or ""))
