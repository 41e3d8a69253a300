"""kustomize's ``images`` transformer (api/internal/builtins/ImageTagTransformer.go): every
``image`` of a ``containers``/``initContainers`` list anywhere in an object (filters/imagetag
legacy.go), and the ``spec[/template/spec]/volumes[]/image/reference`` fields of the default
field specs (api/internal/konfig/builtinpluginconsts/images.go); CRDs are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from msgspec import Struct


class Image(Struct, frozen=True):
    """One ``images`` entry (kustomize types.Image; fluxcd/pkg apis/kustomize Image)."""

    name: str
    new_name: str = ""
    new_tag: str = ""
    digest: str = ""
    tag_suffix: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Image:
        return cls(
            name=str(data.get("name") or ""),
            new_name=str(data.get("newName") or ""),
            new_tag=str(data.get("newTag") or ""),
            digest=str(data.get("digest") or ""),
            tag_suffix=str(data.get("tagSuffix") or ""),
        )


def matches(value: str, name: str) -> bool:
    """api/internal/image/image.go IsImageMatched: the name (a regexp), then a tag and digest."""
    try:
        pattern = re.compile(
            "^" + name + r"(:[a-zA-Z0-9_.{}-]*)?(@[a-zA-Z0-9]+([.+_-][a-zA-Z0-9]+)*:[a-zA-Z0-9_.{}-]*)?$"
        )
    except re.error:
        return False
    return pattern.match(value) is not None


def split(image: str) -> tuple[str, str, str]:
    """image.go Split: (name, tag, digest); a registry port is not a tag."""
    slash = image.find("/")
    search, offset = (image[slash:], slash) if slash > 0 else (image, 0)
    at, colon = search.find("@"), search.find(":")
    if colon < 0 and at < 0:
        return image, "", ""
    if at >= 0 and (at < colon or colon < 0):
        at += offset
        return image[:at], "", image[at + 1 :]
    if at >= 0 and colon >= 0:
        at, colon = at + offset, colon + offset
        return image[:colon], image[colon + 1 : at], image[at + 1 :]
    colon += offset
    return image[:colon], image[colon + 1 :], ""


def updated(value: str, image: Image) -> str:
    """updater.go SetImageValue: the new image reference, or ``value`` when it does not match."""
    if not matches(value, image.name):
        return value
    name, tag, digest = split(value)
    if image.new_name:
        name = image.new_name
    if image.new_tag and image.digest:
        tag, digest = image.new_tag, image.digest
    elif image.new_tag:
        tag, digest = image.new_tag, ""
    elif image.digest:
        tag, digest = "", image.digest
    elif image.tag_suffix:
        tag, digest = tag + image.tag_suffix, ""
    if tag:
        name += ":" + tag
    if digest:
        name += "@" + digest
    return name


def _walk(node: Any, image: Image) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            _walk(value, image)
            if key in ("containers", "initContainers") and isinstance(value, list):
                for container in value:
                    if isinstance(container, dict) and isinstance(container.get("image"), str):
                        container["image"] = updated(container["image"], image)
    elif isinstance(node, list):
        for item in node:
            _walk(item, image)


def _volume_images(obj: dict[str, Any], image: Image) -> None:
    spec = obj.get("spec")
    for pod in (spec, (spec or {}).get("template", {}).get("spec") if isinstance(spec, dict) else None):
        if not isinstance(pod, dict):
            continue
        for volume in pod.get("volumes") or ():
            ref = (volume.get("image") or {}) if isinstance(volume, dict) else {}
            if isinstance(ref, dict) and isinstance(ref.get("reference"), str):
                ref["reference"] = updated(ref["reference"], image)


def apply(obj: dict[str, Any], images: list[Image]) -> None:
    """Apply every ``images`` entry to ``obj`` in place, in order."""
    if obj.get("kind") == "CustomResourceDefinition":
        return
    for image in images:
        _walk(obj, image)
        _volume_images(obj, image)


__all__ = ["Image", "apply", "matches", "split", "updated"]
