"""``helmsim profiles import``: a cluster's objects → a validated, commented profile YAML."""

from __future__ import annotations

from pathlib import Path

from msgspec import Struct

from helmsim.cluster.profile import (
    ClusterProfile,
    builtin_names,
    load_profile,
    profile_from_mapping,
)
from helmsim.errors import InputError
from helmsim.profiletools.detect import build_draft, detect_platform
from helmsim.profiletools.draft import Draft
from helmsim.profiletools.dumps import Dump
from helmsim.profiletools.emit import render
from helmsim.yamlio import load_one

AUTO = "auto"


class Imported(Struct, frozen=True):
    """The profile text, the validated profile it loads as, and what to tell the user."""

    text: str
    profile: ClusterProfile
    draft: Draft
    prior: str  # the prior's name or path, or "" for helmsim's defaults


def resolve_prior(dump: Dump, prior: str) -> tuple[ClusterProfile | None, str]:
    """The prior profile: ``auto`` picks the built-in closest to the detected platform."""
    if prior != AUTO:
        return load_profile(prior), prior
    name = detect_platform(dump).prior
    if name is None or name not in builtin_names():
        return None, ""
    return load_profile(name), name


def import_profile(
    dump: Dump, *, name: str, origin: str, prior: str = AUTO, name_note: str = "--name"
) -> Imported:
    """Build the profile of ``dump``; the text is re-read and validated before it is returned."""
    base, label = resolve_prior(dump, prior)
    draft = build_draft(
        dump, name=name, origin=origin, prior=base, prior_label=label, name_note=name_note
    )
    if base is None:
        draft.warn("no built-in profile matches this platform: latencies are helmsim's defaults")
    text = render(draft)
    data = load_one(text, "imported profile")
    try:
        profile = profile_from_mapping(data, source=f"{name}.yaml")
    except InputError as err:
        # The objects passed every reader check but the profile they make does not validate:
        # a value the cluster allows and the profile schema does not (one line, exit 2).
        raise InputError(
            f"the imported profile does not validate: {err.message}", file=origin
        ) from None
    return Imported(text, profile, draft, label)


def default_name(paths: list[Path]) -> str:
    """A profile name from the dump directory (or the first file's directory)."""
    if not paths:
        return "imported"
    first = paths[0].resolve()
    stem = first.name if first.is_dir() else first.parent.name
    return stem or "imported"
