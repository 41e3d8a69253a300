"""Helm release records and their storage (the Secrets `sh.helm.release.v1.*` in a real cluster)."""

from __future__ import annotations

from typing import Literal

from msgspec import Struct, field

from helmsim.manifests import Resource

# helm/helm pkg/release/v1/status.go (same in v3)
ReleaseStatus = Literal[
    "unknown",
    "deployed",
    "uninstalled",
    "superseded",
    "failed",
    "uninstalling",
    "pending-install",
    "pending-upgrade",
    "pending-rollback",
]


class HookRun(Struct):
    """``HookExecution``: when a hook ran and how it ended (Unknown, Running, Succeeded, Failed)."""

    name: str
    kind: str
    started_at: float
    completed_at: float | None = None
    phase: str = "Running"


class Release(Struct):
    """One revision of a release."""

    name: str
    namespace: str
    revision: int
    chart: str
    status: ReleaseStatus
    manifest: tuple[Resource, ...]
    hooks: tuple[Resource, ...]
    description: str = ""
    apply_method: Literal["csa", "ssa"] = "ssa"
    hook_runs: list[HookRun] = field(default_factory=list)
    first_deployed: float = 0.0
    last_deployed: float = 0.0

    @property
    def id(self) -> str:
        return f"{self.namespace}/{self.name}.v{self.revision}"


class ReleaseStorage:
    """Every revision of every release, in revision order."""

    def __init__(self) -> None:
        self._history: dict[tuple[str, str], list[Release]] = {}

    def history(self, namespace: str, name: str) -> list[Release]:
        return list(self._history.get((namespace, name), ()))

    def add(self, rel: Release, max_history: int = 0, *, namespace: str | None = None) -> None:
        """Record a new revision in ``namespace`` (default: the release's), first pruning to
        ``max_history - 1`` older ones (0: unlimited).

        helm/helm pkg/storage/storage.go Create → removeLeastRecent: the oldest revisions go
        first, but never the last deployed one.
        """
        hist = self._history.setdefault((namespace or rel.namespace, rel.name), [])
        if max_history > 0:
            deployed = next((r for r in reversed(hist) if r.status == "deployed"), None)
            while len(hist) > max_history - 1:
                victim = next((r for r in hist if r is not deployed), None)
                if victim is None:
                    break
                hist.remove(victim)
        hist.append(rel)

    def last(self, namespace: str, name: str) -> Release | None:
        hist = self._history.get((namespace, name))
        return hist[-1] if hist else None

    def deployed(self, namespace: str, name: str) -> Release | None:
        """The newest ``deployed`` revision (pkg/storage Deployed)."""
        for rel in reversed(self._history.get((namespace, name), ())):
            if rel.status == "deployed":
                return rel
        return None

    def stored(self, namespace: str) -> int:
        """How many revisions (one Secret each: helm/helm pkg/storage/driver/secrets.go) are
        stored in ``namespace``."""
        return sum(len(hist) for (ns, _name), hist in self._history.items() if ns == namespace)

    def pruned_by(self, namespace: str, name: str, max_history: int) -> int:
        """How many of ``name``'s revisions storing one more removes (storage.go Create:
        removeLeastRecent down to ``max_history - 1``, never the deployed one)."""
        hist = self._history.get((namespace, name), [])
        if max_history <= 0 or len(hist) <= max_history - 1:
            return 0
        deployed = any(r.status == "deployed" for r in hist)
        return max(0, min(len(hist) - (max_history - 1), len(hist) - (1 if deployed else 0)))

    def purge(self, namespace: str, name: str) -> None:
        self._history.pop((namespace, name), None)

    def all(self) -> list[Release]:
        return [r for key in sorted(self._history) for r in self._history[key]]
