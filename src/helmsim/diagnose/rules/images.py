"""Containers whose image the kubelet can never get.

HS126 image-unpullable
    A workload's (or hook's) pods never start because the kubelet cannot get an image: the
    reference does not parse (``InvalidImageName``: an empty tag from an unset value,
    ``repo:``), the public registry withdrew it (``ErrImagePull`` / ``ImagePullBackOff`` with the
    runtime's ``not found``: Bitnami's deletion of docker.io/bitnami, helmsim.cluster.registries),
    or the pull policy is ``Never`` and the node does not hold it (``ErrImageNeverPull``). The
    finding names the container's image, the kubelet's text and where the image went when the
    withdrawal says so.

Evidence is the kubelet's Events: ``InspectFailed``, ``Failed`` "Failed to pull image …" and
``ErrImageNeverPull``, for containers of that image that did not start afterwards, and the
controllers' ``FailedCreate`` when the API server refuses pods whose image has leading or
trailing whitespace (validation.go validateContainersOnlyForPod).
"""

from __future__ import annotations

import re
from typing import Any

from helmsim.cluster import registries
from helmsim.diagnose import fixes
from helmsim.diagnose.context import ProfileRun
from helmsim.diagnose.model import Candidate, Fix
from helmsim.diagnose.registry import rule

_PULL = re.compile(r'^Failed to pull image "(?P<image>(?:[^"\\]|\\.)*)": (?P<err>.*)$')
_INVALID = re.compile(r'^Failed to apply default image tag "(?P<image>(?:[^"\\]|\\.)*)": ')
_NEVER = re.compile(r'^Container image "(?P<image>(?:[^"\\]|\\.)*)" is not present with pull policy of Never$')


def _image_failure(message: str, reason: str) -> tuple[str, str] | None:
    """``(image, kind)`` of a kubelet Event that says an image cannot be had."""
    if reason == "InspectFailed" and (m := _INVALID.match(message)):
        return m.group("image"), "InvalidImageName"
    if reason == "ErrImageNeverPull" and (m := _NEVER.match(message)):
        return m.group("image"), "ErrImageNeverPull"
    if reason == "Failed" and (m := _PULL.match(message)) and _withdrawn(m.group("image")):
        return m.group("image"), "ErrImagePull"
    return None


def _withdrawn(image: str) -> bool:
    verdict = registries.withdrawn(image)
    return verdict is not None and bool(verdict.error)


def _fix(kind: str, image: str, owner: str) -> list[Fix]:
    if kind == "Invalid":
        return [Fix(f"remove the whitespace around the image reference {image!r} (a values string with a stray space or newline)")]
    if kind == "InvalidImageName":
        return [Fix(
            f"give the container a valid image reference (repository[:tag][@digest], lowercase): {image!r} does not "
            "parse; an empty tag usually comes from an unset value (image.tag) or a chart whose default tag is "
            "its appVersion"
        )]
    if kind == "ErrImageNeverPull":
        return [Fix(
            f"load {image} onto the nodes before the install (kind load docker-image; list it under the profile's "
            "images.present), or use imagePullPolicy IfNotPresent with a registry that serves it"
        )]
    moved = registries.replacement(image)
    verdict = registries.withdrawn(image)
    source = verdict.withdrawal.source if verdict is not None else ""
    out = []
    if moved is not None:
        out.append(Fix(
            f"pull {moved} instead (the snapshot the withdrawal left, which gets no updates and which Broadcom calls "
            "temporary; in a Bitnami chart set the image's repository value to bitnamilegacy/…), or better an image you "
            "build or mirror yourself",
            fixes.key("image", owner, image, moved),
        ))
    out.append(Fix(
        f"serve {image} from a registry the nodes use (a mirror or pull-through cache that still holds it: list it "
        f"under the profile's images.pullable), or move to a maintained image ({source})"
    ))
    return out


@rule(
    "HS126",
    "image-unpullable",
    "Pods never start because the kubelet cannot get an image: the reference does not parse, its registry withdrew it, or it is not on the node under pull policy Never",
)
def image_unpullable(run: ProfileRun) -> list[Candidate]:
    started: dict[tuple[str, str], float] = {}  # (pod, container) → when it last started
    for e in run.events(what="event"):
        if e.data.get("reason") == "Started" and e.message.startswith("Started container "):
            key = (e.obj, e.message.removeprefix("Started container "))
            started[key] = max(started.get(key, -1.0), e.time)
    seen: set[tuple[str, str]] = set()
    out: list[Candidate] = []
    for ev in run.events(what="event"):
        reason = str(ev.data.get("reason") or "")
        if reason == "FailedCreate" and _WHITESPACE in ev.message:
            failure: tuple[str, str] | None = (_spaced_image(ev.message), "Invalid")
            owner = run.release_object_of(ev) or run.owner_of_pod(ev.obj) or ev.obj
        elif ev.obj.startswith("Pod/"):
            failure = _image_failure(ev.message, reason)
            owner = run.owner_of_pod(ev.obj) or ev.obj
        else:
            continue
        if failure is None or (owner, failure[0]) in seen:
            continue
        image, kind = failure
        located = run.resource(owner)
        if located is None:
            continue
        hr_ref, res = located
        if kind != "Invalid" and _started_since(run, ev, res.body, image, started):
            continue  # the node got it after all (another pod pulled it)
        seen.add((owner, image))
        why = {
            "Invalid": "the API server refuses its pods: the image has leading or trailing whitespace",
            "InvalidImageName": "its reference does not parse",
            "ErrImageNeverPull": "it is not on the node and the pull policy is Never",
            "ErrImagePull": "its registry no longer has it",
        }[kind]
        verdict = registries.withdrawn(image) if kind == "ErrImagePull" else None
        what = f" ({verdict.withdrawal.what}, {verdict.withdrawal.source})" if verdict is not None else ""
        msg = f"{owner}: its pods never start: the kubelet cannot get image {image!r}: {why}{what} ({kind}: {ev.message})"
        if kind == "Invalid":
            msg = f"{owner}: its pods are never created: {why} ({ev.message})"
        out.append(run.refusal_candidate("HS126", hr_ref, owner, ev, ev.message, msg, _fix(kind, image, owner)))
    return out


_WHITESPACE = "must not have leading or trailing whitespace"
_SPACED = re.compile(r'image: Invalid value: "(?P<image>(?:[^"\\]|\\.)*)": must not have leading or trailing whitespace')


def _spaced_image(message: str) -> str:
    m = _SPACED.search(message)
    return m.group("image") if m else ""


def _started_since(run: ProfileRun, ev: Any, body: dict[str, Any], image: str, started: dict[tuple[str, str], float]) -> bool:
    """Whether every container of the failing pod that runs ``image`` started after ``ev``."""
    spec = fixes.pod_spec(body) or {}
    names = [
        str(c.get("name"))
        for field in ("initContainers", "containers")
        for c in spec.get(field) or ()
        if isinstance(c, dict) and c.get("image") == image
    ]
    return bool(names) and all(started.get((ev.obj, n), -1.0) > ev.time for n in names)
