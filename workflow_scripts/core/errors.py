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


class ChecksumMismatchError(AtlasError):
    """A downloaded file is not the one expected: its digest differs from the pinned or configured one.

    The file has been deleted; the message names the URL, both digests and the fix.
    """


UTF8_FIX = ("re-encode the file as UTF-8, e.g. iconv -f latin1 -t utf-8 OLD > NEW if it is Latin-1, "
            "or fix the byte by hand")


class InputEncodingError(InputFormatError):
    """A source file holds a byte sequence that is not UTF-8.

    ``offset`` is the 0-based byte offset of the first bad byte from the start of
    the file, so that ``head -c`` / ``xxd -s`` can show it; ``line`` is 1-based.
    """

    def __init__(self, path: object, line: int | None, offset: int | None, byte: int | None) -> None:
        what = "a byte" if byte is None else f"byte 0x{byte:02x}"
        at = "" if offset is None else f" at byte offset {offset} (0-based, from the start of the file)"
        super().__init__(path, line, f"{what}{at} is not valid UTF-8", UTF8_FIX)
        self.offset = offset
        self.byte = byte
