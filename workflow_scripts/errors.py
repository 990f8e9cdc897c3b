"""Errors that carry enough context (file, line, key) for a user to fix their input."""

from __future__ import annotations


class AtlasError(Exception):
    """Base class for every error this package raises on bad input."""


class InputFormatError(AtlasError):
    """A source file is malformed; the message names the file, the line and the fix."""

    def __init__(self, path: object, line: int | None, problem: str, fix: str = "") -> None:
        where = f"{path}" if line is None else f"{path}, line {line}"
        message = f"{where}: {problem}"
        if fix:
            message += f" ({fix})"
        super().__init__(message)
        self.path = path
        self.line = line


class ConfigError(AtlasError):
    """The configuration is invalid; the message names the key and the fix."""


class SourceUnavailableError(AtlasError):
    """No place that could provide a corpus or model could be reached."""
