"""What ``kubectl get pods`` shows for a pod: READY, STATUS and RESTARTS, from its status.

Mirrors kubernetes pkg/printers/internalversion/printers.go ``printPod`` (kubectl's server-side
table printer) and k8s.io/apimachinery pkg/util/duration ``HumanDuration`` for the age of the
last restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from msgspec import Struct


class PodColumns(Struct, frozen=True):
    """The READY, STATUS and RESTARTS columns of ``kubectl get pods``."""

    ready: str
    status: str
    restarts: str


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery pkg/util/duration HumanDuration: ``45s``, ``2m5s``, ``12m``, ``3h5m``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value))  # Python 3.11 reads the Z suffix
    except ValueError:
        return None


def _terminated_reason(term: Mapping[str, Any], prefix: str = "") -> str:
    if term.get("reason"):
        return prefix + str(term["reason"])
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def kubectl_columns(pod: Mapping[str, Any], now: datetime) -> PodColumns:
    """READY, STATUS and RESTARTS of ``pod`` as ``kubectl get pods`` prints them at ``now``."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    total = len(spec.get("containers") or ())
    ready = 0
    restarts = 0
    last_restart: datetime | None = None
    reason = str(status.get("reason") or status.get("phase") or "")

    def note_restart(cs: Mapping[str, Any]) -> None:
        nonlocal last_restart
        finished = _time(((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt"))
        if finished is not None and (last_restart is None or finished > last_restart):
            last_restart = finished

    inits = spec.get("initContainers") or ()
    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or ()):
        restarts += int(cs.get("restartCount") or 0)
        note_restart(cs)
        state = cs.get("state") or {}
        term = state.get("terminated")
        waiting = state.get("waiting") or {}
        if term is not None and term.get("exitCode") == 0:
            continue
        if term is not None:
            reason = _terminated_reason(term, "Init:")
        elif waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(inits)}"
        initializing = True
        break
    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    if not initializing or initialized:
        restarts = 0
        last_restart = None
        has_running = False
        for cs in reversed(status.get("containerStatuses") or ()):
            restarts += int(cs.get("restartCount") or 0)
            note_restart(cs)
            state = cs.get("state") or {}
            waiting = state.get("waiting") or {}
            term = state.get("terminated")
            if waiting.get("reason"):
                reason = str(waiting["reason"])
            elif term is not None:
                reason = _terminated_reason(term)
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or ()
            )
            reason = "Running" if pod_ready else "NotReady"
    if meta.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif status.get("phase") not in ("Failed", "Succeeded"):
            reason = "Terminating"
    shown = str(restarts)
    if restarts and last_restart is not None:
        shown += f" ({human_duration((now - last_restart).total_seconds())} ago)"
    return PodColumns(f"{ready}/{total}", reason, shown)


__all__ = ["PodColumns", "human_duration", "kubectl_columns"]
