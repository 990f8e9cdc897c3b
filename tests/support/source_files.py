"""Raw source files for the data builders (GLUE TSVs, WiC text files), and the check that a build
left no partial file behind."""

from __future__ import annotations

from pathlib import Path


def write(path: Path, text: str, *, bom: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def no_partials(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.name.endswith(".partial")]
