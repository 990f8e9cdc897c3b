"""A full disk, named as such: which folder's disk, how much is free, and what to do.

A job that runs out of disk fails deep in a library (pyarrow's writer, torch's checkpoint writer, numpy), with an
``OSError`` of errno ENOSPC or, from torch, a ``RuntimeError`` that says only "file write failed". Without this a
full disk read as a bug of the workflow. :func:`disk_full_error` turns any such failure of a job into one
:class:`DiskFullError` naming the disk of the job's outputs; the entry points (``workflow_scripts.entrypoints``)
call it for every failed job, so every stage says it the same way. Standard library only.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from ..core.errors import AtlasError
from ..core.sizes import size_text

FULL = {errno.ENOSPC, errno.EDQUOT}
# What a library says when a write fails and it drops the errno (torch's "file write failed", C stdio).
_WRITE_FAILED = ("file write failed", "no space left", "disk quota exceeded", "write failed")
NEARLY_FULL_BYTES = 16 << 20  # a failed write and less than this left: the disk was full when the job wrote


class DiskFullError(AtlasError):
    """A job could not write because the disk of its outputs is full; the message names the folder and the fix."""


def disk_full_error(error: BaseException, folders: Iterable[str | os.PathLike[str]]) -> DiskFullError | None:
    """A :class:`DiskFullError` for ``error`` if it (or an error it was raised from) is a full disk, else None.
    ``folders``: where the job writes (its outputs' and log's folders), the first that exists of each checked."""
    chain = list(_chain(error))
    by_errno = next((e for e in chain if isinstance(e, OSError) and e.errno in FULL), None)
    said = any(any(text in str(e).lower() for text in _WRITE_FAILED) for e in chain)
    if by_errno is None and not said:
        return None
    spaces = [(folder, *_space(folder)) for folder in _existing(folders)]
    spaces = [s for s in spaces if s[1] is not None]
    if by_errno is None and not any(free < NEARLY_FULL_BYTES for _, free, _ in spaces):
        return None  # a failed write with room left on every disk: not a full disk
    folder, free, total = min(spaces, key=lambda s: s[1]) if spaces else (getattr(by_errno, "filename", None) or
                                                                           "the results folder", None, None)
    what = "is over its quota" if by_errno is not None and by_errno.errno == errno.EDQUOT else "is full"
    room = f" ({_size(free)} free of {_size(total)} now)" if free is not None else ""
    return DiskFullError(
        f"the disk that holds {folder} {what}{room}: this job could not write its outputs "
        f"({type(error).__name__}: {_first_line(error)})\n"
        "fix: free space on that disk (or move the results to a larger one: --config results=PATH), then run "
        "snakemake again: this job runs again, after the partial files it left are removed")


def _chain(error: BaseException):
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _existing(folders: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Each folder, or its nearest existing parent (an output's folder may not exist yet), once each."""
    found: list[Path] = []
    for folder in folders:
        path = Path(folder).absolute()
        while not path.exists() and path != path.parent:
            path = path.parent
        if path not in found:
            found.append(path)
    return found


def _space(folder: Path) -> tuple[int | None, int | None]:
    try:
        usage = shutil.disk_usage(folder)
    except OSError:
        return None, None
    return usage.free, usage.total


def _size(n: int | None) -> str:
    return "?" if n is None else size_text(n, digits=".1f")


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."
