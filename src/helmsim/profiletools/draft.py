"""A profile under construction: plain profile data plus a provenance note for every value."""

from __future__ import annotations

from typing import Any

from msgspec import Struct, field

Path = tuple[str | int, ...]


class Draft(Struct):
    """Profile data (YAML key names) with, for each value, where it came from.

    ``notes[path]`` is the end-of-line comment of the value at ``path``; ``blocks[path]`` are
    comment lines written above it (observations the profile has no field for); ``header`` opens
    the file; ``warnings`` are what the user must check (also printed by the CLI).
    """

    data: dict[str, Any] = field(default_factory=dict)
    notes: dict[Path, str] = field(default_factory=dict)
    blocks: dict[Path, list[str]] = field(default_factory=dict)
    header: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def put(self, path: Path, value: Any, note: str) -> None:
        """Set ``value`` at ``path`` (creating mappings on the way) with its provenance."""
        target: Any = self.data
        for part in path[:-1]:
            if isinstance(part, int):
                target = target[part]
            else:
                target = target.setdefault(part, {})
        last = path[-1]
        if isinstance(last, int):
            while len(target) <= last:
                target.append(None)
        target[last] = value
        self.notes[path] = note

    def note_block(self, path: Path, line: str) -> None:
        """Add a comment line above the key at ``path``."""
        self.blocks.setdefault(path, []).append(line)

    def warn(self, message: str) -> None:
        """Something inferred or missing that the user should check."""
        if message not in self.warnings:
            self.warnings.append(message)
