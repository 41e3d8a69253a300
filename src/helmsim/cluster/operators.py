"""Custom resources and CRDs that come from outside the simulation.

- :class:`OperatorController` plays the operators a profile models (``operators``): it writes the
  status of their custom resources as the model says, so kstatus (and Helm's wait) read it.
- :func:`install_declared_crds` serves the CRDs an unmapped HelmRelease declares
  (``unmappedReleases``) once that release is modelled Ready.
- :func:`unreconciled_notes` say, once per kind, which custom resources nothing here reconciles:
  kstatus then reads them from what the chart wrote (fluxcd/cli-utils pkg/kstatus/status
  generic.go: no conditions and no observedGeneration reads Current).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from helmsim.cluster.controllers.crd import CRD, crd_object
from helmsim.cluster.engine import Controller
from helmsim.cluster.profile import CRD as ProfileCRD
from helmsim.cluster.profile import OperatorModel
from helmsim.kube.fieldcheck import is_builtin

if TYPE_CHECKING:
    from helmsim.cluster.engine import Simulation

# Custom kinds whose effect helmsim does simulate (the network model enforces them); nothing
# writes their status in a real cluster either, so kstatus reading them Current is not a guess.
SIMULATED_KINDS: frozenset[tuple[str, str]] = frozenset(
    {("cilium.io", "CiliumNetworkPolicy"), ("cilium.io", "CiliumClusterwideNetworkPolicy")}
)


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class OperatorController(Controller):
    """Writes the status of custom resources as the profile's operator models say."""

    name = "operator-models"

    def __init__(self, sim: Simulation, models: Sequence[OperatorModel]) -> None:
        self.models = list(models)
        self.kinds = tuple(sorted({k.rpartition("/")[2] for m in self.models for k in m.kinds}))
        super().__init__(sim)

    def model_for(self, obj: Mapping[str, Any]) -> OperatorModel | None:
        group, kind = _group(str(obj.get("apiVersion") or "")), str(obj.get("kind") or "")
        return next((m for m in self.models if m.covers(group, kind)), None)

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        if event == "DELETED":
            return
        model = self.model_for(obj)
        meta = obj.get("metadata") or {}
        generation = meta.get("generation")
        raw = obj.get("status")
        status: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        if model is None or status.get("observedGeneration") == generation:
            return  # not modelled, or this generation is already being reconciled
        key = (str(obj.get("kind")), meta.get("namespace") or None, str(meta.get("name")))
        label = model.label
        after = model.ready_after
        message = f"{label} (modelled) never makes it Ready" if after is None else f"{label} (modelled): Ready after {after:g}s"
        self._write(key, generation, {"observedGeneration": generation, "conditions": [
            _condition(self.sim, "Ready", "False", "Progressing", message)
        ]}, f"{label} (modelled) reconciles generation {generation}")
        if after is not None:
            final: dict[str, Any] = dict(model.status) if model.status is not None else {
                "conditions": [_condition(self.sim, "Ready", "True", "Succeeded", f"{label} (modelled)")]
            }
            final.setdefault("observedGeneration", generation)
            self.sim.after(after, self._write, key, generation, final, f"{label} (modelled) wrote its status", model)

    def _write(
        self,
        key: tuple[str, str | None, str],
        generation: Any,
        status: dict[str, Any],
        message: str,
        model: OperatorModel | None = None,
    ) -> None:
        live = self.store.get(*key)
        if live is None or (live.get("metadata") or {}).get("generation") != generation:
            return  # deleted, or a newer generation took over
        for template in model.creates if model is not None else ():
            obj = _filled(template, live)
            meta = obj.setdefault("metadata", {})
            if key[1] and not meta.get("namespace"):
                meta["namespace"] = key[1]
            if self.store.get(str(obj.get("kind")), meta.get("namespace"), str(meta.get("name"))) is None:
                self.store.create(obj, actor=self.name)
        self.store.update_status(*key, status, actor=self.name, message=message)


def _filled(value: Any, obj: Mapping[str, Any]) -> Any:
    """``value`` with each ``${a.b}`` in its strings replaced by that field of ``obj`` (empty
    when absent)."""
    if isinstance(value, dict):
        return {k: _filled(v, obj) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, obj) for v in value]
    if isinstance(value, str):
        return _FIELD.sub(lambda m: str(_field(obj, m.group(1))), value)
    return value


def _field(obj: Mapping[str, Any], path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    return "" if cur is None else cur


_FIELD = re.compile(r"\$\{([A-Za-z0-9_.]+)\}")


def _condition(sim: Simulation, type_: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": sim.timestamp()}


def install_operator_models(sim: Simulation, models: Sequence[OperatorModel]) -> OperatorController | None:
    """Start the operator models of the profile (none: nothing to start)."""
    return OperatorController(sim, models) if models else None


def install_declared_crds(sim: Simulation, crds: Iterable[ProfileCRD], actor: str) -> list[str]:
    """Create ``crds`` Established in the store (one object per group and plural, every
    declared version served); returns the names of those created."""
    by_name: dict[str, dict[str, Any]] = {}
    for c in crds:
        obj = crd_object(c, sim.timestamp())
        name = obj["metadata"]["name"]
        if name in by_name:
            by_name[name]["spec"]["versions"].append({"name": c.version, "served": True, "storage": False})
            continue
        by_name[name] = obj
    created = []
    for name, obj in by_name.items():
        if sim.store.get(CRD, None, name) is None:
            sim.store.create(obj, actor=actor)
            created.append(name)
    return created


def unreconciled_notes(
    kube_version: str,
    resources: Iterable[Any],
    models: Sequence[OperatorModel],
    statuses: Mapping[tuple[str, str, str], str],
) -> list[str]:
    """One line per kind of custom resource (``helmsim.manifests.Resource``) that no operator
    model reconciles, with the status kstatus read for its first object (``statuses``: kind,
    namespace, name → status at the end of the run)."""
    seen: dict[str, str] = {}
    for res in resources:
        if res.kind == CRD or is_builtin(kube_version, res.api_version, res.kind):
            continue
        if (res.group, res.kind) in SIMULATED_KINDS or any(m.covers(res.group, res.kind) for m in models):
            continue
        status = statuses.get((res.kind, res.namespace or "", res.name))
        if status is not None and status != "NotFound":  # never created (a failed Build): nothing to reconcile
            seen.setdefault(res.kind, status)
    return [
        f"nothing in this simulation reconciles {kind}; kstatus reads it as {status} "
        "(a profile's operators can model how it gets Ready)"
        for kind, status in seen.items()
    ]


__all__ = [
    "OperatorController",
    "SIMULATED_KINDS",
    "install_declared_crds",
    "install_operator_models",
    "unreconciled_notes",
]
