"""What public registries no longer serve, and what the cluster's own registries do.

helmsim does not contact registries. It knows a few public withdrawals, each dated and cited
(:data:`WITHDRAWALS`): a pull of an image they removed fails on every cluster, with the
runtime's ``not found``. A profile says what its nodes can pull or already hold beyond that
(``images.pullable``: a mirror or pull-through cache that still serves the images;
``images.present``: loaded on every node, as ``kind load docker-image`` does). Everything else
is assumed to exist; the images :func:`uncertain` names are said in the report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from msgspec import Struct

from helmsim import wildcard
from helmsim.kube.imageref import ImageRef, ImageRefError, normalise_pattern, parse


class Withdrawal(Struct, frozen=True):
    """A public registry's removal of images: the repositories (wildcards over the normalised
    name), the tags removed (a regular expression; empty: every tag), what is kept."""

    repositories: tuple[str, ...]
    since: str
    what: str
    source: str
    tags: str = ""
    """Tags removed, matched in full; empty: every tag and digest but those ``unknown`` keeps."""
    unknown: str = ""
    """Tags helmsim cannot tell about (kept for some repositories only), matched in full."""
    unknown_why: str = ""
    kept: tuple[str, ...] = ()
    """Repositories of the pattern not affected."""
    removes: bool = True
    """False: the evidence is mixed, and the tags are only said to be uncertain (``unknown``)."""
    moved_to: str = ""
    """Where the images went, ``{path}`` standing for the repository's path after its namespace."""


WITHDRAWALS: tuple[Withdrawal, ...] = (
    Withdrawal(
        repositories=("docker.io/bitnami/*",),
        since="2025-09-29",
        what=(
            "Bitnami deleted its public catalog docker.io/bitnami on 2025-09-29: versioned tags moved to "
            "docker.io/bitnamilegacy, a snapshot of 2025-08-28 that gets no updates"
        ),
        source="https://github.com/bitnami/containers/issues/83267",
        unknown=r"latest",
        unknown_why=(
            "docker.io/bitnami keeps only the latest tag of the images in Bitnami's free subset "
            "(bitnami/containers#83267); helmsim does not know whether this one is"
        ),
        # bitnami/sealed-secrets#1790 and bitnami/minideb#196: Sealed Secrets and minideb are still
        # released there
        kept=(
            "docker.io/bitnami/sealed-secrets-controller",
            "docker.io/bitnami/sealed-secrets-kubeseal",
            "docker.io/bitnami/minideb",
        ),
        moved_to="docker.io/bitnamilegacy/{path}",
    ),
    Withdrawal(
        repositories=("docker.io/bitnamilegacy/*",),
        since="2025-08-28",
        what="docker.io/bitnamilegacy is Bitnami's snapshot of its catalog of 2025-08-28",
        source="https://github.com/bitnami/containers/issues/86251",
        # bitnami/containers#86251 and bitnami/charts#36229: tags of distributions deprecated over
        # three years before were not copied (or were removed); #83640 shows some that were
        unknown=r"(?:.*-)?(?:debian-(?:8|9|10)|centos-7|ol-7)(?:-.*)?",
        unknown_why=(
            "Bitnami did not copy every tag of distributions it deprecated over three years before (debian-8, "
            "debian-9, debian-10, centos-7, ol-7) to docker.io/bitnamilegacy (bitnami/containers#86251); this one "
            "may be missing"
        ),
        removes=False,
    ),
)


class PullVerdict(Struct, frozen=True):
    """Why a pull fails (``error``, the runtime's text) or is uncertain (``note``)."""

    withdrawal: Withdrawal
    error: str = ""
    note: str = ""


def _matches(patterns: Sequence[str], name: str) -> bool:
    return any(wildcard.matcher(p)(name) for p in patterns)


@lru_cache(maxsize=4096)
def withdrawn(image: str) -> PullVerdict | None:
    """The public withdrawal that makes pulling ``image`` fail or uncertain, if one does."""
    try:
        ref = parse(image)
    except ImageRefError:
        return None  # the kubelet refuses it before any pull (InvalidImageName)
    name = _hub(ref.name)
    for w in WITHDRAWALS:
        if not _matches(w.repositories, name) or name in w.kept:
            continue
        tag = ref.tag or ("" if ref.digest else "latest")
        if ref.digest:
            return PullVerdict(w, note=f"{image}: assumed pullable by its digest, but {w.what}")
        if w.unknown and re.fullmatch(w.unknown, tag):
            return PullVerdict(w, note=f"{image}: assumed pullable, but {w.unknown_why}")
        if not w.removes or (w.tags and not re.fullmatch(w.tags, tag)):
            continue
        return PullVerdict(w, error=not_found(ref))
    return None


def _hub(name: str) -> str:
    """``registry-1.docker.io/…`` is Docker Hub too (the host docker.io resolves to), though
    distribution/reference keeps it as written."""
    return "docker.io/" + name.removeprefix("registry-1.docker.io/") if name.startswith("registry-1.docker.io/") else name


def not_found(ref: ImageRef) -> str:
    """containerd's error for a reference its registry does not have (as the kubelet reports
    the CRI's gRPC status: internal/cri/server/images/image_pull.go PullImage, remotes/docker
    resolver.go Resolve → errdefs.ErrNotFound). This is the text of the CRI's local pull
    (containerd 1.7 and 2.0); 2.1's transfer service words it ``failed to resolve image: …: not
    found``."""
    full = ref.pulled
    return (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{full}": '
        f'failed to resolve reference "{full}": {full}: not found'
    )


def replacement(image: str) -> str | None:
    """Where the image went, when its withdrawal names a place (``docker.io/bitnamilegacy/…``)."""
    verdict = withdrawn(image)
    if verdict is None or not verdict.error or not verdict.withdrawal.moved_to:
        return None
    ref = parse(image)
    path = ref.path.split("/", 1)[1] if "/" in ref.path else ref.path
    moved = verdict.withdrawal.moved_to.format(path=path)
    if withdrawn(f"{moved}:{ref.tag}" if ref.tag else moved) is not None:
        return None
    return f"{moved}:{ref.tag}" if ref.tag else moved


def pullable(patterns: Sequence[str], image: str) -> bool:
    """Whether one of a profile's ``images.pullable`` (or ``present``) patterns names ``image``:
    a pattern without a tag matches the repository, one with a tag the tag pulled too."""
    try:
        ref = parse(image)
    except ImageRefError:
        return False
    for p in patterns:
        # a pattern with a tag (``app:dev``, ``bitnami/*:17.*``) matches the reference pulled
        tagged = ":" in p.rsplit("/", 1)[-1] or "@" in p
        if wildcard.matcher(normalise_pattern(p))(ref.pulled if tagged else ref.name):
            return True
    return False


def unobtainable(image: str, pullable_patterns: Sequence[str], present_patterns: Sequence[str] = ()) -> bool:
    """Whether no node can ever get ``image``: the kubelet cannot parse it, or a public registry
    withdrew it and the profile neither serves it (``pullable``) nor preloads it (``present``)."""
    from helmsim.kube.imageref import kubelet_error

    if kubelet_error(image) is not None:
        return True
    verdict = withdrawn(image)
    return (
        verdict is not None
        and bool(verdict.error)
        and not pullable(pullable_patterns, image)
        and not pullable(present_patterns, image)
    )


__all__ = ["PullVerdict", "WITHDRAWALS", "Withdrawal", "not_found", "pullable", "replacement", "unobtainable", "withdrawn"]
