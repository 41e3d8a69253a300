"""The one error type for bad input: the CLI prints it as a single line and exits 2."""

from __future__ import annotations


class InputError(Exception):
    """Bad user input: a file, a line (when known) and what is wrong with it."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        return f"{where}{self.message}"
