"""kstatus value types: Status, Condition, Result and the object id used in wait messages."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from msgspec import Struct


class Status(str, Enum):
    """A kstatus status (kubernetes-sigs/cli-utils pkg/kstatus/status/status.go constants)."""

    IN_PROGRESS = "InProgress"
    FAILED = "Failed"
    CURRENT = "Current"
    TERMINATING = "Terminating"
    # NotFound and Unknown come only from the polling layer (statusreaders/common.go).
    NOT_FOUND = "NotFound"
    UNKNOWN = "Unknown"

    def __str__(self) -> str:
        return self.value


# kubernetes-sigs/cli-utils pkg/kstatus/status/status.go: ConditionStalled / ConditionReconciling
STALLED = "Stalled"
RECONCILING = "Reconciling"


class Condition(Struct, frozen=True):
    """A standard condition carried by a Result (status.go Condition)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""

    def to_dict(self) -> dict[str, str]:
        """JSON shape, as Go marshals it (empty reason/message omitted)."""
        out = {"type": self.type, "status": self.status}
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        return out


class Result(Struct, frozen=True):
    """The status of one object.

    ``error`` is set only for ``Unknown`` results made from a status-function error (the Go
    ``ResourceStatus.Error``); ``message`` then repeats it so that tables show why.
    """

    status: Status
    message: str
    conditions: tuple[Condition, ...] = ()
    error: str | None = None


def in_progress(reason: str, message: str) -> Result:
    """cli-utils pkg/kstatus/status/util.go newInProgressStatus."""
    return Result(Status.IN_PROGRESS, message, (Condition(RECONCILING, "True", reason, message),))


def failed(reason: str, message: str) -> Result:
    """cli-utils pkg/kstatus/status/util.go newFailedStatus."""
    return Result(Status.FAILED, message, (Condition(STALLED, "True", reason, message),))


def current(message: str) -> Result:
    """A Current result; Go gives Current results an empty condition list."""
    return Result(Status.CURRENT, message, ())


def unknown(error: str) -> Result:
    """statusreaders/common.go errResourceToResourceStatus: a status-function error is Unknown."""
    return Result(Status.UNKNOWN, error, (), error)


class ObjectId(Struct, frozen=True):
    """An object identifier (cli-utils pkg/object ObjMetadata: group, kind, namespace, name)."""

    kind: str
    namespace: str
    name: str
    group: str = ""

    def __str__(self) -> str:
        # fluxcd/pkg ssa/utils/fmt.go FmtObjMetadata: <kind>/<namespace>/<name>, no empty namespace
        if self.namespace:
            return f"{self.kind}/{self.namespace}/{self.name}"
        return f"{self.kind}/{self.name}"

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectId:
        """The id of an object mapping; missing or non-string fields read as empty."""
        meta = obj.get("metadata") if isinstance(obj, Mapping) else None
        meta = meta if isinstance(meta, Mapping) else {}
        group, _ = group_version(obj.get("apiVersion") if isinstance(obj, Mapping) else None)
        return cls(
            kind=_s(obj.get("kind")) if isinstance(obj, Mapping) else "",
            namespace=_s(meta.get("namespace")),
            name=_s(meta.get("name")),
            group=group,
        )


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def group_version(api_version: Any) -> tuple[str, str]:
    """k8s.io/apimachinery schema.ParseGroupVersion: "v1" has group "", "apps/v1" group "apps".

    A value with more than one "/" is a parse error there; we return ("", "").
    """
    if not isinstance(api_version, str) or not api_version:
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    return "", ""
