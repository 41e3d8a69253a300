"""CustomResourceDefinitions: name acceptance, establishment, and which kinds the cluster serves.

Mirrors kubernetes/apiextensions-apiserver pkg/controller/status/naming_controller.go
(NamesAccepted, conflicts within a group) and pkg/controller/establish/establishing_controller.go
(Established). Clients map kinds through discovery, which lists a CRD's versions only once it is
Established (pkg/apiserver/customresource_discovery_controller.go), so a kind counts as served
from then on; the profile's pre-installed CRDs are served from the start.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from helmsim.cluster.store import clone
from helmsim.cluster.engine import Controller
from helmsim.kube.errors import aggregate

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

CRD = "CustomResourceDefinition"
CRD_API = "apiextensions.k8s.io/v1"


def crd_names(crd: Mapping[str, Any]) -> dict[str, Any]:
    """``spec.names`` with the API defaults (apiextensions v1 defaults.go: singular = lower-case
    kind, listKind = kind + "List")."""
    names = dict((crd.get("spec") or {}).get("names") or {})
    kind = str(names.get("kind") or "")
    if kind:
        names.setdefault("singular", kind.lower())
        names.setdefault("listKind", kind + "List")
    return names


def resource_name(sim: Simulation, api_version: str, kind: str) -> str:
    """The kind's resource (plural): its CRD's ``spec.names.plural`` when a CRD in the store
    serves it, else the lower-case plural the API server guesses (restmapper.go
    UnsafeGuessKindToResource)."""
    from helmsim.kube.scope import guess_plural

    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    for crd in sim.store.list(CRD):
        names = crd_names(crd)
        if (crd.get("spec") or {}).get("group") == group and names.get("kind") == kind and names.get("plural"):
            return str(names["plural"])
    return guess_plural(kind)


def crd_versions(crd: Mapping[str, Any]) -> list[str]:
    """Names of the served versions (``spec.versions[].served``; v1beta1's ``spec.version``)."""
    spec = crd.get("spec") or {}
    out = [str(v.get("name")) for v in spec.get("versions") or () if v.get("served", True)]
    if not out and spec.get("version"):
        out.append(str(spec["version"]))
    return out


def condition(crd: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    return next(
        (c for c in (crd.get("status") or {}).get("conditions") or () if c.get("type") == type_),
        None,
    )


def is_true(crd: Mapping[str, Any], type_: str) -> bool:
    cond = condition(crd, type_)
    return cond is not None and cond.get("status") == "True"


def crd_object(profile_crd: Any, timestamp: str) -> dict[str, Any]:
    """A profile CRD (installed before the release) as an Established CustomResourceDefinition."""
    kind = profile_crd.kind
    names = {
        "kind": kind,
        "listKind": kind + "List",
        "plural": profile_crd.resource,
        "singular": kind.lower(),
    }
    return {
        "apiVersion": CRD_API,
        "kind": CRD,
        "metadata": {"name": f"{profile_crd.resource}.{profile_crd.group}"},
        "spec": {
            "group": profile_crd.group,
            "names": names,
            "scope": profile_crd.scope,
            "versions": [{"name": profile_crd.version, "served": True, "storage": True}],
        },
        "status": {
            "acceptedNames": dict(names),
            "conditions": [
                _cond("NamesAccepted", "True", "NoConflicts", "no conflicts found", timestamp),
                _cond(
                    "Established",
                    "True",
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                    timestamp,
                ),
            ],
            "storedVersions": [profile_crd.version],
        },
    }


def seed_crds(sim: Simulation) -> list[dict[str, Any]]:
    """Create the profile's installed CRDs in the store, already Established; returns them."""
    out = []
    for c in getattr(sim.profile, "crds", ()) or ():
        obj = crd_object(c, sim.timestamp())
        if sim.store.get(CRD, "", obj["metadata"]["name"]) is None:
            out.append(sim.store.create(obj, actor="apiserver"))
    return out


class CRDController(Controller):
    """The naming and establishing controllers of the apiextensions-apiserver."""

    name = "apiextensions-controller"
    kinds = (CRD,)

    def __init__(self, sim: Simulation) -> None:
        self._writing = False
        self._queued: set[str] = set()
        super().__init__(sim)
        for crd in self.store.list(CRD):
            self._enqueue(crd["metadata"]["name"])

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        if self._writing:
            return
        if event == "DELETED":
            # naming_controller.go sync: a deleted CRD frees its names; requeue its group.
            group = (obj.get("spec") or {}).get("group")
            for other in self.store.list(CRD):
                if (other.get("spec") or {}).get("group") == group:
                    self._enqueue(other["metadata"]["name"])
            return
        self._enqueue(obj["metadata"]["name"])

    def _enqueue(self, name: str) -> None:
        if name in self._queued:
            return
        self._queued.add(name)
        self.sim.after(self.sim.latency("controller_sync"), self._sync_names, name)

    def _sync_names(self, name: str) -> None:
        """naming_controller.go sync + calculateNamesAndConditions."""
        self._queued.discard(name)
        crd = self.store.get(CRD, "", name)
        if crd is None or crd["metadata"].get("deletionTimestamp"):
            return
        requested = crd_names(crd)
        status = clone(crd.get("status") or {})
        accepted = dict(status.get("acceptedNames") or {})
        if requested == accepted and condition(crd, "NamesAccepted") is not None:
            self._maybe_establish(crd)
            return
        resources, kinds = self._names_in_group(crd)
        new_names = dict(accepted)
        reason = message = ""
        for field, pool, why in (
            ("plural", resources, "PluralConflict"),
            ("singular", resources, "SingularConflict"),
        ):
            err = _taken(requested.get(field), accepted.get(field), pool)
            if err:
                reason, message = why, err
            else:
                new_names[field] = requested.get(field)
        short = list(requested.get("shortNames") or ())
        if short != list(accepted.get("shortNames") or ()):
            mine = set(accepted.get("shortNames") or ())
            errs = [e for s in short if s not in mine for e in [_taken(s, "", resources)] if e]
            if errs:
                # k8s.io/apimachinery utilerrors.NewAggregate: one error alone, else "[a, b]".
                reason, message = (
                    "ShortNamesConflict",
                    aggregate(errs),
                )
            else:
                new_names["shortNames"] = short
        for field, why in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
            err = _taken(requested.get(field), accepted.get(field), kinds)
            if err:
                reason, message = why, err
            else:
                new_names[field] = requested.get(field)
        if "categories" in requested:
            new_names["categories"] = requested["categories"]
        now = self.sim.timestamp()
        if reason:
            names_cond = _cond("NamesAccepted", "False", reason, message, now)
        else:
            names_cond = _cond("NamesAccepted", "True", "NoConflicts", "no conflicts found", now)
        established = dict(
            condition(crd, "Established")
            or _cond("Established", "False", "NotAccepted", "not all names are accepted", now)
        )
        if established.get("status") != "True" and not reason:
            established = _cond(
                "Established", "False", "Installing", "the initial names have been accepted", now
            )
        status["acceptedNames"] = {k: v for k, v in new_names.items() if v is not None}
        status["conditions"] = _set_conditions(
            status.get("conditions") or [], names_cond, established
        )
        text = (
            f"NamesAccepted=False {reason}: {message}"
            if reason
            else "NamesAccepted=True NoConflicts: no conflicts found"
        )
        updated = self._write_status(crd, status, text)
        # The names just accepted may have been released by another CRD of the group.
        for other in self.store.list(CRD):
            if (
                other["metadata"]["name"] != name
                and (other.get("spec") or {}).get("group") == crd["spec"].get("group")
                and not is_true(other, "NamesAccepted")
            ):
                self._enqueue(other["metadata"]["name"])
        if updated is not None:
            self._maybe_establish(updated)

    def _maybe_establish(self, crd: Mapping[str, Any]) -> None:
        # customresource_handler.go updateCustomResourceDefinition queues the CRD for the
        # establishing controller (0 s with one apiserver, 5 s in HA); crd_establish models it.
        if is_true(crd, "NamesAccepted") and not is_true(crd, "Established"):
            self.sim.after(
                self.sim.latency("crd_establish"), self._establish, crd["metadata"]["name"]
            )

    def _establish(self, name: str) -> None:
        """establishing_controller.go sync."""
        crd = self.store.get(CRD, "", name)
        if crd is None or not is_true(crd, "NamesAccepted") or is_true(crd, "Established"):
            return
        status = clone(crd.get("status") or {})
        est = _cond(
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            self.sim.timestamp(),
        )
        status["conditions"] = _set_conditions(status.get("conditions") or [], est)
        self._write_status(
            crd,
            status,
            "Established=True InitialNamesAccepted: the initial names have been accepted",
        )

    def _names_in_group(self, crd: Mapping[str, Any]) -> tuple[set[str], set[str]]:
        """naming_controller.go getAcceptedNamesForGroup: accepted names of every CRD in the group."""
        resources: set[str] = set()
        kinds: set[str] = set()
        for other in self.store.list(CRD):
            if (other.get("spec") or {}).get("group") != crd["spec"].get("group"):
                continue
            acc = (other.get("status") or {}).get("acceptedNames") or {}
            resources.update(str(acc.get(f)) for f in ("plural", "singular") if acc.get(f))
            resources.update(str(s) for s in acc.get("shortNames") or ())
            kinds.update(str(acc.get(f)) for f in ("kind", "listKind") if acc.get(f))
        return resources, kinds

    def _write_status(
        self, crd: Mapping[str, Any], status: dict[str, Any], message: str
    ) -> dict[str, Any] | None:
        self._writing = True
        try:
            return self.store.update_status(
                CRD, None, crd["metadata"]["name"], status, actor=self.name, message=message
            )
        finally:
            self._writing = False


# --- served kinds -------------------------------------------------------------------------------


def served_kinds(sim: Simulation) -> dict[tuple[str, str], str]:
    """``(group/version, Kind) → scope`` for every custom kind the cluster serves now.

    The profile's ``crds`` (installed before the release), its ``apiVersions`` entries naming a
    kind (scope unknown: ``""``), and every Established CRD in the store.
    """
    out: dict[tuple[str, str], str] = {}
    profile = sim.profile
    for entry in getattr(profile, "api_versions", ()) or ():
        parts = str(entry).split("/")
        if parts[-1][:1].isupper():
            out[("/".join(parts[:-1]), parts[-1])] = ""
    for c in getattr(profile, "crds", ()) or ():
        out[(f"{c.group}/{c.version}", c.kind)] = c.scope
    for crd in sim.store.list(CRD):
        if not is_true(crd, "Established") or crd["metadata"].get("deletionTimestamp"):
            continue
        spec = crd.get("spec") or {}
        kind = str(
            ((crd.get("status") or {}).get("acceptedNames") or {}).get("kind")
            or crd_names(crd).get("kind")
        )
        for version in crd_versions(crd):
            out[(f"{spec.get('group')}/{version}", kind)] = str(spec.get("scope") or "Namespaced")
    return out


def served_group_versions(sim: Simulation) -> set[str]:
    """Group/versions the profile lists in ``apiVersions`` without a kind (any kind is served)."""
    return {
        str(e)
        for e in getattr(sim.profile, "api_versions", ()) or ()
        if not str(e).split("/")[-1][:1].isupper()
    }


# --- helpers -----------------------------------------------------------------------------------


def _taken(requested: Any, accepted: Any, used: set[str]) -> str:
    """naming_controller.go equalToAcceptedOrFresh: "" when fine, else the conflict text."""
    if requested == accepted or requested is None or str(requested) not in used:
        return ""
    return f'"{requested}" is already in use'


def _cond(type_: str, status: str, reason: str, message: str, ts: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": ts,
    }


def _set_conditions(conds: list[dict[str, Any]], *new: dict[str, Any]) -> list[dict[str, Any]]:
    """apiextensions helpers SetCRDCondition: replace by type, keep lastTransitionTime if the status is unchanged."""
    out = [dict(c) for c in conds]
    for cond in new:
        for i, old in enumerate(out):
            if old.get("type") == cond["type"]:
                keep = (
                    old.get("lastTransitionTime") if old.get("status") == cond["status"] else None
                )
                out[i] = {**cond, **({"lastTransitionTime": keep} if keep else {})}
                break
        else:
            out.append(dict(cond))
    return out


def install_crds(sim: Simulation) -> CRDController:
    """Seed the profile's CRDs (Established) and start the CRD controller."""
    seed_crds(sim)
    return CRDController(sim)
