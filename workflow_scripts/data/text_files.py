"""The one way the data layer reads text: UTF-8, with errors that point at the bad byte.

A leading byte-order mark (Windows editors and spreadsheet exports add one) is dropped in every format, by
the default encoding ``utf-8-sig``, which reads a file without one exactly as ``utf-8`` does.

Every text source (CoNLL-U, GLUE TSVs, WiC data and gold files, WikiText,
GloVe) is read through ``open_text``, ``read_text`` or ``decode_text``. A bare
``UnicodeDecodeError`` from a text stream is useless to a user: its position is
relative to whichever read chunk was being decoded, not to the file, and it
does not name the file. Here it becomes an ``InputEncodingError`` naming the
file, the 1-based line and the byte offset in the file.

The normal path is the plain ``io.TextIOWrapper``, so reading stays streaming
and keeps each reader's newline and BOM handling; only after a decode error is
the file scanned again, as bytes, to find the first bad byte.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from ..core.errors import InputEncodingError

T = TypeVar("T")


def first_bad_byte(lines: Iterable[bytes]) -> tuple[int, int, int] | None:
    """(1-based line, 0-based file offset, byte value) of the first byte that is not UTF-8.

    ``lines`` are the file's bytes split after each b"\\n" (what iterating a binary
    file gives). No byte of a UTF-8 multi-byte sequence is b"\\n", so decoding line
    by line finds the same first bad byte as decoding the whole file, without
    holding the file in memory.
    """
    offset = 0
    for number, raw in enumerate(lines, start=1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return number, offset + exc.start, raw[exc.start]
        offset += len(raw)
    return None


def _encoding_error(name: object, found: tuple[int, int, int] | None) -> InputEncodingError:
    if found is None:  # cannot happen for UTF-8 input that failed to decode; keep the file name anyway
        return InputEncodingError(name, None, None, None)
    return InputEncodingError(name, *found)


def decode_text(data: bytes, name: object, encoding: str = "utf-8-sig") -> str:
    """Decode a whole file (or archive member) held in memory; ``name`` is what errors call it."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        # Locate with strict UTF-8 over the raw bytes: with "utf-8-sig" the decoder's
        # own position would not count the byte-order mark.
        raise _encoding_error(name, first_bad_byte(_split_lf(data))) from None


def _split_lf(data: bytes) -> Iterator[bytes]:
    # Not bytes.splitlines: it also splits at a lone b"\r", and line numbers here count
    # b"\n" only, like iterating a binary file.
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end == -1 else end + 1
        yield data[start:end]
        start = end


def read_text(path: str | Path, encoding: str = "utf-8-sig") -> str:
    """The whole text of a (small) file, e.g. WiC's data and gold files."""
    return decode_text(Path(path).read_bytes(), path, encoding)


class TextFile:
    """A text stream whose decode errors name the file, the line and the byte offset.

    It supports what the readers use: iteration (also by ``csv.reader``), ``readline``,
    ``readlines``, ``read`` and ``with``.
    """

    def __init__(self, name: object, open_binary: Callable[[], BinaryIO], *, encoding: str = "utf-8-sig",
                 newline: str | None = None) -> None:
        self.name = name
        self._open_binary = open_binary
        self._handle = io.TextIOWrapper(open_binary(), encoding=encoding, newline=newline)

    def _checked(self, read: Callable[[], T]) -> T:
        try:
            return read()
        except UnicodeDecodeError:
            with self._open_binary() as raw:
                found = first_bad_byte(raw)
            raise _encoding_error(self.name, found) from None

    def __iter__(self) -> TextFile:
        return self

    def __next__(self) -> str:
        return self._checked(lambda: next(self._handle))

    def readline(self) -> str:
        return self._checked(self._handle.readline)

    def readlines(self) -> list[str]:
        return self._checked(self._handle.readlines)

    def read(self) -> str:
        return self._checked(self._handle.read)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> TextFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def open_text(path: str | Path, *, encoding: str = "utf-8-sig", newline: str | None = None,
              open_binary: Callable[[], BinaryIO] | None = None) -> TextFile:
    """Open a text file for reading, like ``open(path, encoding=..., newline=...)``.

    ``open_binary`` reads something other than a plain file (an archive member);
    ``path`` is then only the name that errors give, e.g. ``archive.zip:member``.
    """
    opener = open_binary or (lambda: open(path, "rb"))
    return TextFile(path, opener, encoding=encoding, newline=newline)
