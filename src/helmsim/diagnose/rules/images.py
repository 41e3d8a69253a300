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
``ErrImageNeverPull``, for pods no container of which started afterwards. Pulls a scenario's
fault injection fails are left out (the scenario asked for them).
"""

from __future__ import annotations

import re

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
            f"pull {moved} instead (the snapshot the withdrawal left, which gets no updates; in a Bitnami chart "
            "set the image's repository value to bitnamilegacy/…), or an image you build or mirror yourself",
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
    started: dict[str, float] = {}
    for e in run.events(what="event"):
        if e.data.get("reason") == "Started":
            started[e.obj] = max(started.get(e.obj, -1.0), e.time)
    seen: set[tuple[str, str]] = set()
    out: list[Candidate] = []
    for ev in run.events(what="event"):
        if not ev.obj.startswith("Pod/") or started.get(ev.obj, -1.0) >= ev.time:
            continue
        failure = _image_failure(ev.message, str(ev.data.get("reason") or ""))
        if failure is None:
            continue
        image, kind = failure
        owner = run.owner_of_pod(ev.obj) or ev.obj
        if (owner, image) in seen:
            continue
        seen.add((owner, image))
        located = run.resource(owner)
        if located is None:
            continue
        hr_ref, _res = located
        why = {
            "InvalidImageName": "its reference does not parse",
            "ErrImageNeverPull": "it is not on the node and the pull policy is Never",
            "ErrImagePull": "its registry no longer has it",
        }[kind]
        verdict = registries.withdrawn(image) if kind == "ErrImagePull" else None
        what = f" ({verdict.withdrawal.what}, {verdict.withdrawal.source})" if verdict is not None else ""
        msg = f"{owner}: its pods never start: the kubelet cannot get image {image}: {why}{what} ({kind}: {ev.message})"
        out.append(run.refusal_candidate("HS126", hr_ref, owner, ev, ev.message, msg, _fix(kind, image, owner)))
    return out
