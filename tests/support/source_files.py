"""Raw source files for the data builders (GLUE TSVs, WiC text files), the error a parser gives on a bad one,
and the check that a build left no partial file behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from workflow_scripts.core.errors import InputFormatError


def write(path: Path, text: str, *, bom: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def no_partials(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.name.endswith(".partial")]


def input_error(parse: Callable[..., object], *args: object) -> InputFormatError:
    """The error ``parse(*args)`` raises on a bad source file; the test fails when it raises none."""
    with pytest.raises(InputFormatError) as info:
        parse(*args)
    return info.value
