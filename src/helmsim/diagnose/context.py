"""One finished simulation as the rules query it: the trace, the rendered resources, the outcomes."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helmsim.cluster.profile import ClusterProfile
from helmsim.cluster.store import controller_of
from helmsim.kube.scope import guess_plural
from helmsim.cluster.trace import Trace, TraceEvent
from helmsim.diagnose.model import Location, Step, step
from helmsim.helm.actions import ChartRelease
from helmsim.manifests import Resource
from helmsim.redaction import clip
from helmsim.simulate import ReleaseInput, ReleaseOutcome, SimulationResult

# k8s.io/apiserver pkg/admission/errors.go NewForbidden, as Helm's create error carries it
_HELM_FORBIDDEN = re.compile(r'(?P<resource>[a-z0-9.-]+) "(?P<name>[^"]+)" is forbidden: (?P<reason>.*)$')
# helm/helm pkg/kube/client.go patchResourceServerSide: the object a server-side apply failed on
_HELM_SSA = re.compile(
    r"server-side apply failed for object (?P<ns>[^/\s]*)/(?P<name>\S+) (?P<gv>\S*), Kind=(?P<kind>\w+): (?P<reason>.*)$",
    re.S,
)

if TYPE_CHECKING:
    from helmsim.diagnose.model import Candidate
    from helmsim.diagnose.registry import RuleSpec


@dataclass
class ProfileRun:
    """A simulation under one profile plus what produced it."""

    profile: ClusterProfile
    inputs: list[ReleaseInput]
    result: SimulationResult
    charts: dict[str, ChartRelease]
    previous: dict[str, ChartRelease] = field(default_factory=dict)
    variant: str = "nominal"
    _memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    """Answers computed once per run: the run is finished, its trace never changes."""

    def candidates(self, spec: RuleSpec) -> list[Candidate]:
        """What rule ``spec`` reports on this run, computed once (a fix's run is judged by the
        rule it fixes and by every other rule, for each finding it fixes)."""
        key = ("rule", spec.id)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = tuple(spec.check(self))
        return list(found)

    # --- lookups ---------------------------------------------------------------------------------
    @property
    def trace(self) -> Trace:
        return self.result.trace

    @property
    def name(self) -> str:
        return self.profile.name

    def input(self, hr_ref: str) -> ReleaseInput:
        return next(r for r in self.inputs if r.hr.ref == hr_ref)

    def outcome(self, hr_ref: str) -> ReleaseOutcome:
        return next(o for o in self.result.releases if f"{o.namespace}/{o.name}" == hr_ref)

    def ready(self, hr_ref: str) -> bool:
        return self.outcome(hr_ref).outcome == "Ready"

    def label(self, hr_ref: str) -> str:
        """The Helm release as Flux names it: ``<targetNamespace>/<releaseName>``."""
        hr = self.input(hr_ref).hr
        return f"{hr.target_namespace}/{hr.release_name}"

    @cached_property
    def _by_ref(self) -> dict[str, tuple[str, Resource]]:
        out: dict[str, tuple[str, Resource]] = {}
        for hr_ref, chart in self.charts.items():
            for res in (*chart.crds, *chart.resources):
                out.setdefault(res.ref, (hr_ref, res))
        return out

    def resource(self, obj: str) -> tuple[str, Resource] | None:
        """``(HelmRelease ref, Resource)`` of a rendered object ``Kind/ns/name``."""
        return self._by_ref.get(obj)

    def resources(self, hr_ref: str) -> tuple[Resource, ...]:
        chart = self.charts.get(hr_ref)
        return chart.resources if chart else ()

    def location(self, hr_ref: str, res: Resource | None, obj: str | None = None) -> Location:
        """Where ``res`` comes from: its template under the chart directory, best-effort line."""
        if res is None:
            hr = self.input(hr_ref).hr
            return Location(obj or f"HelmRelease/{hr_ref}", hr.source or "", 1)
        chart = self.input(hr_ref).chart
        return Location(res.ref, *template_location(chart.path if chart else "", res))

    def hr_location(self, hr_ref: str) -> Location:
        """The HelmRelease's file and line; without a file (a default release), the chart's
        Chart.yaml."""
        r = self.input(hr_ref)
        if r.hr.source:
            return Location(f"HelmRelease/{hr_ref}", r.hr.source, _hr_line(r.hr.source, r.hr.name))
        chart = Path(r.chart.path) if r.chart else None
        if chart is not None and (chart / "Chart.yaml").is_file():
            return Location(f"HelmRelease/{hr_ref}", str(chart / "Chart.yaml"), 1)
        return Location(f"HelmRelease/{hr_ref}", str(chart) if chart else "", 1)

    # --- trace queries ---------------------------------------------------------------------------
    @cached_property
    def _by_what(self) -> dict[str, list[TraceEvent]]:
        out: dict[str, list[TraceEvent]] = {}
        for e in self.trace:
            out.setdefault(e.what, []).append(e)
        return out

    def _scan(self, what: str | None, obj: str | None) -> Sequence[TraceEvent] | Trace:
        """The trace events a query on ``what`` and ``obj`` can match, in trace order."""
        if obj is not None:
            return self.trace.of(obj)
        if what is not None:
            return self._by_what.get(what, [])
        return self.trace

    def events(
        self, *, what: str | None = None, obj: str | None = None, prefix: str | None = None
    ) -> list[TraceEvent]:
        return [
            e
            for e in self._scan(what, obj)
            if (what is None or e.what == what)
            and (obj is None or e.obj == obj)
            and (prefix is None or e.obj.startswith(prefix))
        ]

    def first(
        self, *, what: str | None = None, obj: str | None = None, after: float = -1.0
    ) -> TraceEvent | None:
        return next(
            (
                e
                for e in self._scan(what, obj)
                if (what is None or e.what == what)
                and (obj is None or e.obj == obj)
                and e.time >= after
            ),
            None,
        )

    def in_effect_delay(self, policy: str) -> float | None:
        """Seconds from a policy's creation until it was in effect (from the trace)."""
        ev = self.first(what="policy-in-effect", obj=policy)
        created = ev.data.get("created") if ev is not None else None
        return None if ev is None or created is None else round(ev.time - float(created), 3)

    def created_by_helm(self, obj: str) -> TraceEvent | None:
        """When Helm created ``obj`` (the first time)."""
        return next(
            (e for e in self.trace.of(obj) if e.what == "created" and e.actor == "helm"),
            None,
        )

    def release_object_of(self, ev: TraceEvent) -> str | None:
        """The release object (created by Helm) an event derives from, following its causes."""
        for e in reversed(self.trace.chain(ev.id)):
            if e.actor == "helm" and e.what == "created" and self.resource(e.obj) is not None:
                return e.obj
        return None

    @cached_property
    def _pod_created(self) -> dict[str, TraceEvent]:
        out: dict[str, TraceEvent] = {}
        for e in self.trace:
            if e.what == "created" and e.obj.startswith("Pod/"):
                out.setdefault(e.obj, e)
        return out

    def owner_of_pod(self, pod: str) -> str | None:
        """The release object whose controller created ``Pod/ns/name``: by the causes of its
        creation, else by the ownerReferences in the cluster at the end (a StatefulSet's next
        ordinal is created on a status change of the previous pod, which the causes may not
        lead back from)."""
        created = self._pod_created.get(pod)
        found = self.release_object_of(created) if created is not None else None
        return found if found is not None else self._owner_by_references(pod)

    def _owner_by_references(self, obj: str) -> str | None:
        sim = self.result.sim
        kind, _, rest = obj.partition("/")
        ns, _, name = rest.rpartition("/")
        for _ in range(4):  # Pod → ReplicaSet → Deployment at most, with room to spare
            if self.resource(f"{kind}/{ns}/{name}") is not None:
                return f"{kind}/{ns}/{name}"
            owner = controller_of(sim.store.get(kind, ns or None, name) if sim is not None else None)
            if owner is None:
                return None
            kind, name = owner
        return None

    @cached_property
    def refused_pods(self) -> dict[str, tuple[TraceEvent, ...]]:
        """Release object → the ``FailedCreate`` events of its controller whose pods the API
        server refused (``is forbidden``, or an admission webhook ``denied the request``) and
        that no later pod of the object overcame."""
        created = [e for e in self.trace if e.what == "created" and e.obj.startswith("Pod/")]
        found: dict[str, list[TraceEvent]] = {}
        for ev in self._by_what.get("event", ()):
            if ev.data.get("reason") == "FailedCreate" and ("is forbidden:" in ev.message or "denied the request" in ev.message):
                # a rollout's new ReplicaSet leads back to the Deployment by its owner
                owner = self.release_object_of(ev) or self._owner_by_references(ev.obj) or ev.obj
                found.setdefault(owner, []).append(ev)
        return {
            owner: tuple(evs)
            for owner, evs in found.items()
            if not any(p.time > evs[-1].time and self.owner_of_pod(p.obj) == owner for p in created)
        }

    def refusals(self, matches: Callable[[str], bool]) -> dict[str, list[tuple[TraceEvent, str]]]:
        """Release object → the API server's refusals whose reason ``matches``, each with its
        text (``<resource> "<name>" is forbidden: <reason>``): its controller's ``FailedCreate``
        of pods that nothing overcame (:attr:`refused_pods`), or Helm's own create of the object
        in the release's first failed attempt."""
        out: dict[str, list[tuple[TraceEvent, str]]] = {}
        for owner, evs in self.refused_pods.items():
            mine = [(e, e.message.removeprefix("Error creating: ")) for e in evs if matches(e.message)]
            if mine:
                out[owner] = mine
        for hr_ref in self.charts:
            attempt = self.first_failed_attempt(hr_ref)
            error = str(attempt[1].data.get("error") or "") if attempt is not None else ""
            ssa = _HELM_SSA.search(error)
            m = _HELM_FORBIDDEN.search(error)
            if attempt is None or (ssa is None and m is None):
                continue
            if ssa is not None and matches(ssa["reason"]):
                res = next(
                    (r for r in self.resources(hr_ref) if r.kind == ssa["kind"] and r.name == ssa["name"]), None
                )
                text = ssa["reason"]
            elif m is not None and matches(m["reason"]):
                plural = m["resource"].split(".", 1)[0]
                res = next(
                    (r for r in self.resources(hr_ref) if r.name == m["name"] and plural == guess_plural(r.kind)),
                    None,
                )
                text = error[m.start():]
            else:
                continue
            if res is not None:
                out.setdefault(res.ref, []).append((attempt[1], text))
        return out

    def refusal_candidate(
        self, rule: str, hr_ref: str, obj: str, first: TraceEvent, first_text: str, message: str, fixes: list[Any]
    ) -> Candidate:
        """A finding about an object (or its pods) the API server refused: the message with how
        the release ends, the refusal then the release's failure as the chain; an error unless
        the release is Ready anyway."""
        from helmsim.diagnose.model import Candidate, Severity

        ready = self.ready(hr_ref)
        if not ready:
            message += f"; the release ends {self.outcome(hr_ref).outcome}"
        chain = [step(first, f"{first.data.get('reason') or 'Helm'}: {first_text}")]
        if not ready:
            chain.extend(s for s in self.failure_tail(hr_ref) if s.time > first.time)
        return Candidate(rule, hr_ref, obj, Severity.error if not ready else Severity.warning, message, chain, fixes, self.variant)

    @cached_property
    def unstartable_pods(self) -> dict[str, tuple[TraceEvent, ...]]:
        """Release object → the kubelet's ``Failed`` "Error: …" events of its pods
        (CreateContainerConfigError) for pods no container of which started afterwards."""
        started: dict[str, float] = {}
        for e in self._by_what.get("event", ()):
            if e.data.get("reason") == "Started":
                started[e.obj] = max(started.get(e.obj, -1.0), e.time)
        found: dict[str, list[TraceEvent]] = {}
        for ev in self._by_what.get("event", ()):
            if (
                ev.data.get("reason") == "Failed"
                and ev.obj.startswith("Pod/")
                and ev.message.startswith("Error: ")
                and "ImagePull" not in ev.message
                and started.get(ev.obj, -1.0) < ev.time
            ):
                found.setdefault(self.owner_of_pod(ev.obj) or ev.obj, []).append(ev)
        return {owner: tuple(evs) for owner, evs in found.items()}

    def first_failed_attempt(self, hr_ref: str) -> tuple[TraceEvent, TraceEvent] | None:
        """``(action-start, release failed)`` of the first install/upgrade that failed."""
        label = self.label(hr_ref) + ".v"
        for e in self._by_what.get("release", ()):
            if e.obj.startswith(label) and e.data.get("status") == "failed":
                start = self.trace[e.cause] if e.cause is not None else e
                return start, e
        return None

    def failure_tail(self, hr_ref: str, *, after: float = -1.0) -> list[Step]:
        """How the release ended, as chain steps: Helm's error, the HelmRelease's conditions."""
        key = ("failure_tail", hr_ref, after)
        if key not in self._memo:
            self._memo[key] = tuple(self._failure_tail(hr_ref, after))
        return list(self._memo[key])

    def _failure_tail(self, hr_ref: str, after: float) -> list[Step]:
        out: list[Step] = []
        attempt = self.first_failed_attempt(hr_ref)
        if attempt is not None:
            start, failed = attempt
            ends = [e for w in ("wait-end", "hook-failed", "apply-error") for e in self._by_what.get(w, ())]
            cause = next(
                (
                    e
                    for e in sorted(ends, key=lambda e: e.id)
                    if start.time <= e.time <= failed.time
                    and (e.what != "wait-end" or e.data.get("error"))
                    and e.time >= after
                ),
                None,
            )
            if cause is not None and cause.what != "wait-end":
                out.append(step(cause))
            out.append(
                step(
                    failed,
                    f"Helm release {failed.data.get('status')}: {failed.data.get('error') or failed.message}",
                )
            )
        hr_obj = f"HelmRelease/{hr_ref}"
        cond = next(
            (
                e
                for e in self.trace.of(hr_obj)
                if e.what == "condition"
                and e.data.get("status") == "False"
                and e.data.get("reason") != "DependencyNotReady"
            ),
            None,
        )
        if cond is not None:
            out.append(step(cond, _short(cond.message)))
        stalled = next((e for e in self.trace.of(hr_obj) if e.what == "stalled"), None)
        if stalled is not None:
            o = self.outcome(hr_ref)
            out.append(
                step(
                    stalled,
                    f"Stalled {stalled.data.get('reason', '')}: {stalled.message} ({o.attempts} attempts)",
                )
            )
        return out


def _short(text: str, limit: int = 240) -> str:
    return clip(text, limit)  # scrubbed before it is cut: no half secret survives


# --- template locations ----------------------------------------------------------------------------
_DOC_SPLIT = re.compile(r"^---\s*$", re.MULTILINE)


def template_location(chart_path: str, res: Resource) -> tuple[str, int]:
    """``(file, line)`` of ``res`` in its template: the chart directory plus the path Helm
    names (``<chart>/templates/x.yaml``), and the line of ``kind:`` in the document with the
    same index (best effort: conditionals can shift documents; falls back to the rendered line)."""
    path = res.source.path
    root = Path(chart_path) if chart_path else None
    if root is not None and root.is_dir() and "/" in path:
        candidate = root / path.split("/", 1)[1]
        if candidate.is_file():
            return str(candidate), _kind_line(
                candidate, res.source.index, res.kind
            ) or res.source.line
    return path, res.source.line


def _kind_line(path: Path, index: int, kind: str) -> int | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")  # Helm renders any bytes
    except OSError:
        return None
    lines = text.splitlines()
    starts = [0] + [i + 1 for i, line in enumerate(lines) if _DOC_SPLIT.match(line)]
    docs = [
        (s, (starts[n + 1] - 1) if n + 1 < len(starts) else len(lines))
        for n, s in enumerate(starts)
    ]
    # documents holding a kind: line; the index counts rendered documents, which drop empty ones
    with_kind = [
        (s, e) for s, e in docs if any(re.match(r"^kind:\s*", lines[i]) for i in range(s, e))
    ]
    ordered = ([with_kind[index]] if index < len(with_kind) else []) + with_kind
    for s, e in ordered:
        for i in range(s, e):
            if re.match(rf"^kind:\s*['\"]?{re.escape(kind)}['\"]?\s*$", lines[i]):
                return i + 1
    return None


def _hr_line(source: str, name: str) -> int:
    if not source or not Path(source).is_file():
        return 1
    lines = Path(source).read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"^\s*name:\s*['\"]?{re.escape(name)}['\"]?\s*$", line):
            # the document's kind: line above it, else the name line
            for j in range(i, -1, -1):
                if lines[j].startswith("kind:"):
                    return j + 1
            return i + 1
    return 1
