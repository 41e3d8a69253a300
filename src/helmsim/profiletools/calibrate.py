"""Latency distributions measured from a cluster's own events and status timestamps.

Inputs are ``kubectl get events -A -o json`` (core/v1 Events, or events.k8s.io/v1 ones) and,
optionally, ``kubectl get pods,ciliumnetworkpolicies -A -o json`` for status timestamps. Each
latency the simulator uses is measured the way the simulator times it:

=====================  ====================================================================
latency                measured as
=====================  ====================================================================
imagePull              the kubelet's own figure in ``Pulled`` events, ``Successfully pulled
                       image "…" in 3.2s (3.2s including waiting)``: the *including waiting*
                       figure (Pulling event → Pulled event, what a pod waits), else the older
                       single figure (kubernetes/kubernetes pkg/kubelet/images/image_manager.go)
containerStart         a container's ``Pulled`` event → its ``Started`` event (same pod, same
                       ``involvedObject.fieldPath``)
scheduling             a pod's ``creationTimestamp`` → its ``PodScheduled`` condition, for pods
                       that never had a ``FailedScheduling`` event and mount no claim
volumeProvisioning     a claim's ``Provisioning`` → ``ProvisioningSucceeded`` events (the
                       external provisioner), without a ``ProvisioningFailed`` between them
volumeAttach           the later of the pod's ``Scheduled`` event and its volume's
                       ``ProvisioningSucceeded`` → ``SuccessfulAttachVolume``
policyPropagation      a CiliumNetworkPolicy's ``creationTimestamp`` → the last node's
                       ``status.nodes[*].lastUpdated`` with ``enforcing: true`` (Cilium with
                       CNP status updates on); one sample per policy at generation 1
=====================  ====================================================================

Timestamps with whole-second resolution (``firstTimestamp``, ``creationTimestamp``, conditions)
give whole-second differences: their mean is unbiased but their median is not finer than a
second, so such a latency's ``nominal`` (what deterministic runs use) is the samples' mean. When
only one end has whole-second resolution, half a second (the mean truncation) is corrected for.
A latency with fewer than ``min_samples`` samples keeps the prior and says so. More than
``max_samples`` are thinned to evenly spaced order statistics (quantiles), which keeps the
distribution's shape and its median.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from helmsim.cluster.latency import parse_duration
from helmsim.errors import InputError
from helmsim.kstatus.core import parse_rfc3339
from helmsim.profiletools.dumps import Dump, Located

if TYPE_CHECKING:
    from helmsim.cluster.profile import ClusterProfile
    from helmsim.profiletools.draft import Draft

MIN_SAMPLES = 10
MAX_SAMPLES = 500

# kubernetes/kubernetes pkg/kubelet/images/image_manager.go EnsureImageExists, across versions:
#   "Successfully pulled image %q in %v"                                           (<= 1.27)
#   "Successfully pulled image %q in %v (%v including waiting)"                    (1.28-1.29)
#   "Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes." (>= 1.30)
_PULLED = re.compile(
    r'^Successfully pulled image "(?P<image>[^"]*)" in (?P<pull>[0-9.]+[a-zµμ]+(?:[0-9.]+[a-zµμ]+)*)'
    r"(?: \((?P<total>[0-9.]+[a-zµμ]+(?:[0-9.]+[a-zµμ]+)*) including waiting\))?"
    r"(?:\. Image size: [0-9]+ bytes\.)?$"
)
# k8s.io/client-go tools/record/events_cache.go EventAggregate: similar events are combined
# under this prefix (the message is the latest one's).
_COMBINED = "(combined from similar events): "


class Stamp(Struct, frozen=True):
    """A point in time and whether it was written with whole-second resolution."""

    at: datetime
    coarse: bool


class Measure(Struct):
    """The samples of one latency, and what they were measured from."""

    key: str  # the profile path: latencies.imagePull, cni.policyPropagationSeconds
    method: str
    samples: list[float] = field(default_factory=list)
    times: list[datetime] = field(default_factory=list)
    coarse: bool = False
    sources: set[str] = field(default_factory=set)

    def add(self, seconds: float, at: datetime, source: str, coarse: bool = False) -> None:
        self.samples.append(max(0.0, seconds))
        self.times.append(at)
        self.sources.add(source)
        self.coarse = self.coarse or coarse


class Fitted(Struct, frozen=True):
    """A calibrated latency: the distribution (profile data) and its comment, or why not."""

    key: str
    value: dict[str, Any] | None  # None: too few samples, the prior is kept
    note: str
    count: int


def stamp(value: Any) -> Stamp | None:
    """An RFC3339 (Micro)Time; ``coarse`` when it has no fractional seconds."""
    if not isinstance(value, str) or not value:
        return None
    at = parse_rfc3339(value)
    if at is None:
        return None
    return Stamp(at, "." not in value[19:])


def _interval(start: Stamp, end: Stamp) -> tuple[float, bool]:
    """``end - start`` in seconds, corrected for one-sided truncation; and whether coarse."""
    seconds = (end.at - start.at).total_seconds()
    if start.coarse and not end.coarse:
        seconds -= 0.5  # the true start is on average half a second after its truncation
    elif end.coarse and not start.coarse:
        seconds += 0.5
    return max(0.0, seconds), start.coarse and end.coarse


# --- events -------------------------------------------------------------------------------------


class Event(Struct, frozen=True):
    """A Kubernetes Event, normalised across core/v1 and events.k8s.io/v1."""

    reason: str
    message: str
    kind: str  # of the regarding object
    namespace: str
    name: str
    uid: str
    field_path: str
    when: Stamp
    source: str


def events_of(dump: Dump) -> list[Event]:
    """Every Event of ``dump`` that has a time, sorted by time (then reading order)."""
    out: list[tuple[datetime, int, Event]] = []
    for i, o in enumerate(dump.of("Event")):
        obj = o.obj
        regarding = obj.get("involvedObject") or obj.get("regarding") or {}
        if not isinstance(regarding, Mapping):
            raise InputError(
                "an Event's involvedObject is not a mapping", file=o.source, line=o.line
            )
        when = _event_time(obj)
        if when is None:
            continue
        message = obj.get("message", obj.get("note"))
        text = str(message or "")
        out.append(
            (
                when.at,
                i,
                Event(
                    reason=str(obj.get("reason") or ""),
                    message=text.removeprefix(_COMBINED),
                    kind=str(regarding.get("kind") or ""),
                    namespace=str(regarding.get("namespace") or ""),
                    name=str(regarding.get("name") or ""),
                    uid=str(regarding.get("uid") or ""),
                    field_path=str(regarding.get("fieldPath") or ""),
                    when=when,
                    source=o.source,
                ),
            )
        )
    out.sort(key=lambda t: (t[0], t[1]))
    return [e for _, _, e in out]


def _event_time(obj: Mapping[str, Any]) -> Stamp | None:
    # core/v1 Event: eventTime (MicroTime, new-style recorders), firstTimestamp (the series'
    # first occurrence); events.k8s.io/v1: eventTime, deprecatedFirstTimestamp.
    for key in ("eventTime", "firstTimestamp", "deprecatedFirstTimestamp", "lastTimestamp"):
        found = stamp(obj.get(key))
        if found is not None:
            return found
    meta = obj.get("metadata")
    return stamp(meta.get("creationTimestamp")) if isinstance(meta, Mapping) else None


# --- measurements -------------------------------------------------------------------------------


def measure(dump: Dump) -> list[Measure]:
    """Every latency's samples from the events and status timestamps in ``dump``."""
    events = events_of(dump)
    return [
        _image_pulls(events),
        _container_starts(events),
        _scheduling(dump, events),
        _provisioning(events),
        _attach(events),
        _policy_propagation(dump),
    ]


def _image_pulls(events: Iterable[Event]) -> Measure:
    m = Measure(
        "latencies.imagePull",
        "the kubelet's Pulled events (the 'including waiting' figure where reported)",
    )
    for e in events:
        if e.reason != "Pulled":
            continue
        match = _PULLED.match(e.message)
        if match is None:
            continue
        figure = match.group("total") or match.group("pull")
        try:
            seconds = parse_duration(figure)
        except ValueError:
            continue
        m.add(seconds, e.when.at, e.source)
    return m


def _container_starts(events: Iterable[Event]) -> Measure:
    m = Measure("latencies.containerStart", "a container's Pulled event → its Started event")
    pulled: dict[tuple[str, str], Stamp] = {}
    for e in events:
        if e.kind != "Pod" or not e.field_path:
            continue
        key = (e.uid or f"{e.namespace}/{e.name}", e.field_path)
        if e.reason == "Pulled":
            pulled[key] = e.when
        elif e.reason == "Started" and key in pulled:
            seconds, coarse = _interval(pulled.pop(key), e.when)
            m.add(seconds, e.when.at, e.source, coarse)
    return m


def _scheduling(dump: Dump, events: Iterable[Event]) -> Measure:
    m = Measure(
        "latencies.scheduling",
        "a pod's creationTimestamp → its PodScheduled condition (pods without FailedScheduling "
        "events and without claims)",
    )
    failed = {e.uid or f"{e.namespace}/{e.name}" for e in events if e.reason == "FailedScheduling"}
    for o in dump.of("Pod"):
        meta = o.obj.get("metadata") if isinstance(o.obj.get("metadata"), Mapping) else {}
        assert isinstance(meta, Mapping)
        uid = str(meta.get("uid") or "")
        if uid in failed or f"{o.namespace}/{o.name}" in failed:
            continue
        spec = o.obj.get("spec") if isinstance(o.obj.get("spec"), Mapping) else {}
        assert isinstance(spec, Mapping)
        volumes = spec.get("volumes") if isinstance(spec.get("volumes"), list) else []
        assert isinstance(volumes, list)
        if any(isinstance(v, Mapping) and "persistentVolumeClaim" in v for v in volumes):
            continue  # WaitForFirstConsumer binding happens inside scheduling
        created = stamp(meta.get("creationTimestamp"))
        status = o.obj.get("status") if isinstance(o.obj.get("status"), Mapping) else {}
        assert isinstance(status, Mapping)
        conditions = status.get("conditions") if isinstance(status.get("conditions"), list) else []
        assert isinstance(conditions, list)
        scheduled = next(
            (
                stamp(c.get("lastTransitionTime"))
                for c in conditions
                if isinstance(c, Mapping)
                and c.get("type") == "PodScheduled"
                and c.get("status") == "True"
            ),
            None,
        )
        if created is None or scheduled is None:
            continue
        seconds, coarse = _interval(created, scheduled)
        m.add(seconds, scheduled.at, o.source, coarse)
    return m


def _provisioning(events: Iterable[Event]) -> Measure:
    m = Measure(
        "latencies.volumeProvisioning",
        "a claim's Provisioning → ProvisioningSucceeded events (no ProvisioningFailed between)",
    )
    started: dict[str, Stamp | None] = {}
    for e in events:
        if e.kind != "PersistentVolumeClaim":
            continue
        key = e.uid or f"{e.namespace}/{e.name}"
        if e.reason == "Provisioning":
            started.setdefault(key, e.when)
        elif e.reason == "ProvisioningFailed" and key in started:
            started[key] = None  # a retried provisioning is a fault, not the latency
        elif e.reason == "ProvisioningSucceeded":
            start = started.pop(key, None)
            if start is not None:
                seconds, coarse = _interval(start, e.when)
                m.add(seconds, e.when.at, e.source, coarse)
    return m


_ATTACHED = re.compile(r'AttachVolume\.Attach succeeded for volume "(?P<volume>[^"]+)"')


def _attach(events: list[Event]) -> Measure:
    m = Measure(
        "latencies.volumeAttach",
        "the later of the pod's Scheduled event and its volume's ProvisioningSucceeded → "
        "SuccessfulAttachVolume",
    )
    scheduled: dict[str, Stamp] = {}
    provisioned: dict[str, Stamp] = {}  # by PV name: pvc-<claim uid>
    for e in events:
        key = e.uid or f"{e.namespace}/{e.name}"
        if e.kind == "Pod" and e.reason == "Scheduled":
            scheduled.setdefault(key, e.when)
        elif e.kind == "PersistentVolumeClaim" and e.reason == "ProvisioningSucceeded" and e.uid:
            # sig-storage-lib-external-provisioner controller.go getProvisionedVolumeNameForClaim:
            # the volume is "pvc-" + the claim's UID.
            provisioned[f"pvc-{e.uid}"] = e.when
        elif e.kind == "Pod" and e.reason == "SuccessfulAttachVolume" and key in scheduled:
            match = _ATTACHED.search(e.message)
            start = scheduled[key]
            if match and match.group("volume") in provisioned:
                prov = provisioned[match.group("volume")]
                start = prov if prov.at > start.at else start
            seconds, coarse = _interval(start, e.when)
            m.add(seconds, e.when.at, e.source, coarse)
    return m


def _policy_propagation(dump: Dump) -> Measure:
    m = Measure(
        "cni.policyPropagationSeconds",
        "a CiliumNetworkPolicy's creationTimestamp → the last node's status.nodes[*].lastUpdated "
        "with enforcing: true (generation 1 only)",
    )
    for o in dump.of("CiliumNetworkPolicy") + dump.of("CiliumClusterwideNetworkPolicy"):
        meta = o.obj.get("metadata")
        if not isinstance(meta, Mapping) or meta.get("generation", 1) != 1:
            continue
        created = stamp(meta.get("creationTimestamp"))
        status = o.obj.get("status")
        nodes = status.get("nodes") if isinstance(status, Mapping) else None
        if created is None or not isinstance(nodes, Mapping) or not nodes:
            continue
        # cilium/cilium pkg/k8s/apis/cilium.io/v2/cnp_types.go CiliumNetworkPolicyNodeStatus:
        # ok, enforcing, lastUpdated per node.
        done = [
            stamp(s.get("lastUpdated"))
            for s in nodes.values()
            if isinstance(s, Mapping) and s.get("ok") and s.get("enforcing")
        ]
        if not done or len(done) != len(nodes) or any(d is None for d in done):
            continue  # not enforcing everywhere yet
        last = max((d for d in done if d is not None), key=lambda d: d.at)
        seconds, coarse = _interval(created, last)
        m.add(seconds, last.at, o.source, coarse)
    return m


# --- fitting ------------------------------------------------------------------------------------


def thin(samples: list[float], limit: int) -> list[float]:
    """At most ``limit`` samples: evenly spaced order statistics (min and max kept)."""
    ordered = sorted(samples)
    if len(ordered) <= limit:
        return ordered
    if limit == 1:
        return [float(statistics.median(ordered))]
    step = (len(ordered) - 1) / (limit - 1)
    return [ordered[round(i * step)] for i in range(limit)]


def _iso(at: datetime) -> str:
    text = at.isoformat().replace("+00:00", "Z")
    return text


def fit(m: Measure, *, min_samples: int = MIN_SAMPLES, max_samples: int = MAX_SAMPLES) -> Fitted:
    """The empirical distribution of ``m``, or the reason the prior is kept."""
    n = len(m.samples)
    sources = ", ".join(sorted(m.sources)) or "the inputs"
    if n < min_samples:
        return Fitted(
            m.key,
            None,
            f"kept the prior: {n} sample{'s' if n != 1 else ''} from {m.method}, fewer than "
            f"--min-samples {min_samples}",
            n,
        )
    window = f"{_iso(min(m.times))} .. {_iso(max(m.times))}"
    values = [round(s, 3) for s in thin(m.samples, max_samples)]
    value: dict[str, Any] = {"dist": "empirical", "samples": values}
    median = statistics.median(m.samples)
    note = (
        f"calibrated: {n} samples from {m.method}; {sources}; window {window}; median {median:g}s"
    )
    if len(values) < n:
        note += f"; thinned to {len(values)} quantiles (--max-samples)"
    if m.coarse:
        mean = round(statistics.fmean(m.samples), 3)
        value["nominal"] = min(max(mean, min(values)), max(values))
        note += f"; whole-second timestamps, nominal is the mean {mean:g}s"
    return Fitted(m.key, value, note, n)


def calibrate(
    dump: Dump, *, min_samples: int = MIN_SAMPLES, max_samples: int = MAX_SAMPLES
) -> list[Fitted]:
    """Fit every latency measurable from ``dump``."""
    if min_samples < 1 or max_samples < 2:
        raise InputError("--min-samples must be >= 1 and --max-samples >= 2")
    return [fit(m, min_samples=min_samples, max_samples=max_samples) for m in measure(dump)]


def located_events(dump: Dump) -> list[Located]:
    """The Event objects read (for the CLI's summary and errors)."""
    return dump.of("Event")


def calibrated_draft(
    fitted: list[Fitted], *, base_ref: str, base: ClusterProfile, name: str, origin: str
) -> Draft:
    """A profile that ``extends`` the base and sets the calibrated latencies, with their notes."""
    from helmsim.profiletools.draft import Draft

    draft = Draft()
    draft.header += [
        f"Calibrated by `helmsim profiles calibrate` from {origin}.",
        "The latencies below were measured on the cluster; every other value is the base profile's.",
    ]
    draft.put(("name",), name, "--name")
    draft.put(
        ("description",),
        f"{base.description} (latencies calibrated from the cluster's events)".lstrip(" "),
        "the base profile's description",
    )
    draft.put(("extends",), base_ref, "--profile: the prior")
    for f in fitted:
        section, key = f.key.split(".", 1)
        if f.value is None:
            draft.note_block((section,), f"{key}: {f.note}")
            continue
        draft.put((section, key), f.value, f.note)
    return draft
