"""Downloads from public sources, with errors that say what was tried and how to go offline."""

from __future__ import annotations

import logging
import os
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..core.errors import AtlasError, SourceUnavailableError
from ..core.io import atomic_path
from .registry import mirror_candidates

log = logging.getLogger(__name__)
T = TypeVar("T")

DOWNLOAD_TIMEOUT_S = 60


def unavailable(corpus: str, split: str, tried: list[str], cause: BaseException | None,
                mirror: str | os.PathLike[str] | None) -> SourceUnavailableError:
    """The error for a split that neither the mirror nor the public source could provide."""
    places = "\n".join(f"  - {place}" for place in tried)
    reason = f"\nlast error: {type(cause).__name__}: {cause}" if cause else ""
    mirror_hint = (
        f"the mirror {mirror} does not hold it" if mirror else "no mirror is set"
    )
    # Name the files a mirror must hold, relative to it, rather than a folder outside
    # the repository that a user may not have.
    try:
        layout = " or ".join(" and ".join(files) for files in mirror_candidates(corpus, split))
    except KeyError:
        layout = ""
    holding = f"holds {layout} (paths relative to it)" if layout else "holds this split"
    return SourceUnavailableError(
        f"corpus {corpus!r}, split {split!r}: could not be obtained ({mirror_hint}).\n"
        f"places tried:\n{places}{reason}\n"
        f"fix: give a mirror directory that {holding}, "
        "or run where the public source is reachable; "
        "offline, the public source is never tried."
    )


def from_public_source(corpus: str, split: str, where: str, load: Callable[[], T],
                       offline: bool, mirror: str | os.PathLike[str] | None,
                       mirror_tried: list[str]) -> T:
    """Run ``load`` (a download), turning any failure into a clear SourceUnavailableError."""
    tried = list(mirror_tried)
    if offline:
        tried.append(f"{where} (skipped: 'offline' is true)")
        raise unavailable(corpus, split, tried, None, mirror)
    tried.append(where)
    log.info("downloading %s/%s from %s", corpus, split, where)
    try:
        return load()
    except AtlasError:
        raise  # the source was reached and its content is wrong: the reader's own message says where
    except Exception as exc:  # any network, HTTP or hub error means "not reachable"
        raise unavailable(corpus, split, tried, exc, mirror) from exc


def download(url: str, destination: Path) -> Path:
    """Download ``url`` to ``destination`` atomically; reuse a complete earlier download."""
    if destination.is_file():
        return destination
    with atomic_path(destination) as tmp:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, open(tmp, "wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)
    return destination
