"""Drift detection of a deployed release against the cluster, and its correction.

fluxcd/helm-controller internal/reconcile/state.go (DetermineReleaseState: InSync unless the diff
has changes), internal/action/diff.go (Diff: a server-side dry-run apply of each release object
compared with the live one; the ignore rules; objects annotated
``helm.toolkit.fluxcd.io/driftDetection: disabled`` excluded; ApplyDiff), internal/diff/summarize.go
(SummarizeDiffSet), internal/reconcile/atomic_release.go (Drifted condition, DriftDetected event,
CorrectClusterDrift only in mode enabled), internal/reconcile/correct_cluster_drift.go (events).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any, Literal

import jsonpatch
from msgspec import Struct

from helmsim.cluster.engine import Simulation
from helmsim.cluster.store import ApiError, clone, merged_for_apply
from helmsim.flux.helmrelease import DriftDetection
from helmsim.helm.actions import to_object
from helmsim.helm.release import Release
from helmsim.kustomize import KustomizeError
from helmsim.kustomize.select import Selector, select
from helmsim.manifests import Resource

DISABLED_ANNOTATION = "helm.toolkit.fluxcd.io/driftDetection"  # api/v2 DriftDetectionMetadataKey
_SERVER_META = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "deletionTimestamp")

DiffType = Literal["removed", "changed", "excluded"]


class Change(Struct, frozen=True):
    """One object of the release that is not as the release wants it."""

    res: Resource
    type: DiffType
    added: int = 0
    changed: int = 0
    removed: int = 0

    @property
    def name(self) -> str:
        """internal/diff/summarize.go ResourceName: ``Kind/namespace/name``."""
        return self.res.ref

    def summary(self) -> str:
        if self.type == "changed":
            return f"{self.name} changed ({self.added} additions, {self.changed} changes, {self.removed} removals)"
        return f"{self.name} {self.type}"


def _clean(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = clone(dict(obj))
    out.pop("status", None)
    meta = out.get("metadata") or {}
    for f in _SERVER_META:
        meta.pop(f, None)
    return out


def _drop(doc: dict[str, Any], pointer: str) -> None:
    """Remove the value at a JSON pointer, if present (ssa/jsondiff ignore paths)."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    node: Any = doc
    for part in parts[:-1]:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return
    if not parts:
        return
    last = parts[-1]
    if isinstance(node, dict):
        node.pop(last, None)
    elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
        node.pop(int(last))


def _ignored_paths(res: Resource, desired: Mapping[str, Any], drift: DriftDetection) -> list[str]:
    paths: list[str] = []
    for rule in drift.ignore:
        t = rule.target
        if t is not None:
            sel = Selector(t.group or "", t.version or "", t.kind or "", t.name or "", t.namespace or "",
                           t.label_selector or "", t.annotation_selector or "")
            try:
                if not select([desired], sel):
                    continue
            except KustomizeError:
                continue
        paths.extend(rule.paths)
    return paths


def diff(sim: Simulation, rel: Release, drift: DriftDetection) -> list[Change]:
    """action.Diff: each release object dry-run applied over the live one by Helm's field
    manager, compared with the live object (ignore rules removed from both); a missing object is
    ``removed``, one annotated ``driftDetection: disabled`` is ``excluded``."""
    out: list[Change] = []
    for res in rel.manifest:
        desired = to_object(res, rel.name, rel.namespace)
        live = sim.store.get(res.kind, res.namespace, res.name)
        annotations = ((live or desired).get("metadata") or {}).get("annotations") or {}
        if annotations.get(DISABLED_ANNOTATION) == "disabled":
            out.append(Change(res, "excluded"))
            continue
        if live is None:
            out.append(Change(res, "removed"))
            continue
        dry_run = _clean(merged_for_apply(live, desired, desired))
        current = _clean(live)
        for path in _ignored_paths(res, desired, drift):
            _drop(dry_run, path)
            _drop(current, path)
        ops = jsonpatch.make_patch(current, dry_run).patch
        if not ops:
            continue
        counts = {k: sum(1 for o in ops if o["op"] == k) for k in ("add", "replace", "remove")}
        out.append(Change(res, "changed", counts["add"], counts["replace"], counts["remove"]))
    return out


def has_changes(changes: Sequence[Change]) -> bool:
    """jsondiff DiffSet HasChanges: a removed or changed object (excluded ones do not count)."""
    return any(c.type in ("removed", "changed") for c in changes)


def summarize(changes: Sequence[Change]) -> str:
    """internal/diff/summarize.go SummarizeDiffSet (create, update and exclude entries)."""
    return "\n".join(c.summary() for c in changes)


def correct(sim: Simulation, actor: str, rel: Release, changes: Sequence[Change], cause: int | None) -> tuple[list[str], list[str]]:
    """action.ApplyDiff: re-create what was removed, re-apply what changed; the change set
    (``Deployment/apps/web configured``) and the errors."""
    done: list[str] = []
    errors: list[str] = []
    for c in changes:
        obj = to_object(c.res, rel.name, rel.namespace)
        try:
            if c.type == "removed":
                sim.store.create(obj, actor=actor, cause=cause)
                done.append(f"{c.name} created")
            elif c.type == "changed":
                sim.store.apply(obj, actor=actor, cause=cause)
                done.append(f"{c.name} configured")
        except ApiError as err:
            what = "creation" if c.type == "removed" else "patch"
            errors.append(f"{c.name} {what} failure: {err.message}")
    return done, errors


def detect(rec: Any, last: Release) -> Generator[Any, Any, bool]:
    """The in-sync release checked against the cluster (``rec``: the HelmRelease's
    ``Reconciler``): Drifted True with helm-controller's message and a Warning event when it
    drifted, corrected in mode ``enabled`` (True: determine the state again), Drifted False
    NoDriftDetected otherwise; nothing in mode ``disabled``."""
    spec = rec.hr.spec.drift_detection
    if spec.mode == "disabled":
        return False
    sim = rec.ctx.sim
    changes = diff(sim, last, spec)
    if not has_changes(changes):
        rec._mark("Drifted", "False", "NoDriftDetected", "No drift detected against the cluster state")
        return False
    # atomic_release.go ReleaseStatusDrifted
    message = f"Cluster state of release {last.id} has drifted from the desired state:\n{summarize(changes)}"
    rec._log("event", message, reason="DriftDetected", type="Warning")
    rec._mark("Drifted", "True", "DriftDetected", message)
    if spec.mode != "enabled":
        return False
    ready = rec.state.get("Ready")
    # correct_cluster_drift.go: Ready Unknown while correcting, then summarize restores it
    rec._mark("Ready", "Unknown", "Progressing", "correcting cluster drift")
    yield sim.sleep(sim.latency("api_write"))
    done, errors = correct(sim, rec.ctx.actor, last, changes, None)
    if errors:
        text = "Failed to " + ("partially " if done else "") + f"correct cluster state of release {last.id}:\n" + "\n".join(errors)
        if done:
            text += "\n\nSuccessful corrections:\n" + "\n".join(done)
        rec._log("event", text, reason="DriftCorrectionFailed", type="Warning")
    elif done:
        text = f"Cluster state of release {last.id} has been corrected:\n" + "\n".join(done)
        rec._log("event", text, reason="DriftCorrected", type="Normal")
    if ready is not None:
        rec._mark("Ready", ready.status, ready.reason, ready.message)
    return True


__all__ = ["Change", "correct", "detect", "diff", "has_changes", "summarize"]
