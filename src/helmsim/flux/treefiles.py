"""The files of a Flux tree as kustomize-controller reads them.

A directory holding a kustomization file (``kustomization.yaml``, ``kustomization.yml``,
``Kustomization``) is what kustomize builds from it (:mod:`helmsim.kustomize.build`): the
objects of its ``resources``, bases outside it included, patched, namespaced and re-imaged as
its fields say; the files it uses as patches are not objects. Any other directory is read
file by file, as before, its subdirectories with a kustomization file built. A Kustomization's
``spec.patches`` and ``spec.images`` are added to the build of its path (fluxcd/pkg
kustomize/kustomize_generator.go GenerateManifest).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from pathlib import Path

from msgspec import Struct, field

from helmsim import yamlio
from helmsim.errors import InputError
from helmsim.kustomize import KustomizeError
from helmsim.kustomize import KUSTOMIZATION_NAMES

if TYPE_CHECKING:
    from helmsim.kustomize.build import Overlay
from helmsim.manifests import read_manifest_input


class TreeFiles(Struct):
    """``(file, text)`` pairs; ``via``: each file built from outside the directory that builds it,
    mapped to that directory (the Kustomization whose path holds it applies the file's objects);
    ``notes``: what the builds did not apply."""

    files: list[tuple[str, str]] = field(default_factory=list)
    via: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    renames: dict[str, str] = field(default_factory=dict)


def read_tree_files(
    paths: Sequence[str], overlays: Mapping[Path, Overlay] | None = None, renames: Mapping[str, str] | None = None
) -> TreeFiles:
    """The tree under ``paths`` (files or directories), each kustomization directory built with
    the overlay its Kustomization adds (``overlays``: by resolved directory); a built file in
    ``renames`` (an artifact's copy) is named as the file it was copied from."""
    out = TreeFiles()
    out.renames = dict(renames or {})
    for path in paths:
        p = Path(path)
        if path == "-" or not p.is_dir():
            out.files.extend(read_manifest_input(path))
            continue
        if (p / "templates").is_dir() and not (p / "Chart.yaml").is_file():
            raise InputError("not a Helm chart: templates/ but no Chart.yaml", file=path)
        before = len(out.files)
        _directory(p, out, overlays or {})
        if len(out.files) == before:
            raise InputError("directory holds no .yaml, .yml or .json files", file=path)
    return out


def _directory(d: Path, out: TreeFiles, overlays: Mapping[Path, Overlay]) -> None:
    """Every file under ``d`` in path order, as read before kustomize builds were modelled,
    except that the topmost directories holding a kustomization file (or built with an
    overlay) are built, where their first file would have been read."""
    builds: dict[Path, bool] = {}

    def builds_here(x: Path) -> bool:
        if x not in builds:
            builds[x] = _kustomization(x) is not None or x.resolve() in overlays
        return builds[x]

    done: set[Path] = set()
    for f in sorted(f for f in d.rglob("*") if f.is_file() and f.suffix in (".yaml", ".yml", ".json")):
        between = [f.parent, *f.parent.parents]
        between = between[: between.index(d) + 1]
        root = next((x for x in reversed(between) if builds_here(x)), None)
        if root is None:
            out.files.append((str(f), yamlio.read_text(f)))
        elif root not in done:
            done.add(root)
            _built(root, out, overlays.get(root.resolve()))


def _kustomization(d: Path) -> Path | None:
    if not any((d / n).is_file() for n in KUSTOMIZATION_NAMES):
        return None  # most directories: no build, and kustomize's modules stay unimported
    from helmsim.kustomize.build import kustomization_file

    try:
        return kustomization_file(d)
    except KustomizeError as err:
        raise InputError(f"kustomize build failed: {err}", file=str(d)) from None


def _built(d: Path, out: TreeFiles, overlay: Overlay | None) -> None:
    from helmsim.kustomize.build import build, document_text

    try:
        result = build(d, overlay=overlay)
    except KustomizeError as err:
        where = str(_kustomization(d) or d)
        raise InputError(shown(f"kustomize build failed: {err}", out.renames), file=shown(where, out.renames)) from None
    except InputError as err:
        raise InputError(
            shown(err.message, out.renames), file=shown(err.file, out.renames) if err.file else None, line=err.line
        ) from None
    root = d.resolve()
    for doc in result.documents:
        real = str(Path(doc.file).resolve())
        named = out.renames.get(real, doc.file)
        out.files.append((named, document_text(doc)))
        if named != doc.file or not Path(real).is_relative_to(root):
            key = str(Path(named).resolve())
            first = out.via.setdefault(key, str(root))
            note = (
                f"{named} is built by both {first} and {root}: its objects are attributed to the Kustomization of "
                f"{first} (a file applied by two Kustomizations is not modelled)"
            )
            if first != str(root) and note not in out.notes:
                out.notes.append(note)
    out.notes.extend(n for n in result.notes if n not in out.notes)


_ARTIFACT_ROOT = re.compile(r"[^\s'\"]*helmsim-artifacts-[^/\s'\"]+/([^/\s'\"]+)/([^/\s'\"]+)-[0-9a-f]{12}")


def shown(text: str, renames: Mapping[str, str]) -> str:
    """``text`` with each artifact file (a temporary copy) named as the file it was copied from,
    and any other path inside an artifact as ``@artifact:<namespace>/<name>``."""
    if "helmsim-artifacts-" not in text:
        return text
    for copied, original in sorted(renames.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(copied, original)
    return _ARTIFACT_ROOT.sub(r"@artifact:\1/\2", text)


__all__ = ["TreeFiles", "read_tree_files", "shown"]
