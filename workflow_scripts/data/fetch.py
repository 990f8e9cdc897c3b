"""Downloads from public sources: verified against their checksum, with errors that say what was tried, how to
go offline, and what to do when a file is not the one expected.

:func:`download` is the one place a release file is fetched (by the data jobs and by the prefetch alike):
it checks the file against the digest given in the config or pinned in the source registry, and otherwise
records the digest it received (trust on first use), which the data table's metadata and data_summary.csv keep.
"""

from __future__ import annotations

import hashlib
import logging
import os
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..core.errors import AtlasError, ChecksumMismatchError, SourceUnavailableError
from ..core.io import atomic_path
from .registry import PINNED_DIGESTS, mirror_candidates

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
        "offline, the public source is never tried. On a cluster whose compute nodes have no internet, "
        "fill a mirror on the login node first: python -m workflow_scripts.entrypoints.prefetch "
        "(README, 'Cluster without internet on compute nodes')."
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


@dataclass(frozen=True)
class ExpectedDigest:
    """The digest a download must have, and who says so (the config key or the source registry)."""

    algorithm: str
    value: str
    origin: str


@dataclass(frozen=True)
class Fetched:
    """A downloaded file, the sha256 it was received with, and how it was checked."""

    path: Path
    url: str
    sha256: str
    verified: str  # what it was checked against, or that nothing was known to check it against

    def record(self) -> dict[str, str]:
        """What a data table's metadata keeps about the download (and data_summary.csv shows)."""
        return {"url": self.url, "sha256": self.sha256, "verified": self.verified}


UNVERIFIED = "unverified: no checksum known, the received sha256 is recorded"


def expected_digest(url: str, configured_sha256: str | None, config_key: str) -> ExpectedDigest | None:
    """What ``url`` must hash to: the sha256 the config gives (key ``config_key``), else the source registry's
    pin of that exact URL, else None (nothing known: the received digest is recorded)."""
    if configured_sha256:
        return ExpectedDigest("sha256", configured_sha256.strip().lower(), f"config key '{config_key}'")
    pin = PINNED_DIGESTS.get(url)
    if pin is None:
        return None
    return ExpectedDigest(pin.algorithm, pin.value, f"the source registry: {pin.origin}")


def file_digests(path: Path, algorithms: tuple[str, ...] = ("sha256",)) -> dict[str, str]:
    hashers = {name: hashlib.new(name) for name in dict.fromkeys(algorithms)}
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            for hasher in hashers.values():
                hasher.update(chunk)
    return {name: hasher.hexdigest() for name, hasher in hashers.items()}


def _check(url: str, path: Path, expected: ExpectedDigest | None, config_key: str) -> Fetched:
    """The downloaded file at ``path`` checked against ``expected``; a mismatch deletes it and says so."""
    algorithms = ("sha256",) if expected is None else ("sha256", expected.algorithm)
    digests = file_digests(path, algorithms)
    if expected is None:
        log.warning("%s: no checksum known; received sha256 %s (recorded, trust on first use)",
                    url, digests["sha256"])
        return Fetched(path, url, digests["sha256"], UNVERIFIED)
    received = digests[expected.algorithm]
    if received != expected.value:
        size = path.stat().st_size
        path.unlink()
        also = "" if expected.algorithm == "sha256" else f" (sha256 {digests['sha256']})"
        raise ChecksumMismatchError(
            f"the download of {url} is not the expected file, and was deleted:\n"
            f"  expected {expected.algorithm} {expected.value} ({expected.origin})\n"
            f"  received {expected.algorithm} {received}{also}, {size} bytes\n"
            "fix: check the URL and whatever serves it (a proxy or login page, a moved or truncated file, "
            "a mirror holding another version) and run again; if the file changed upstream on purpose and you "
            f"trust the new one, give its sha256 in config key '{config_key}' (it replaces the registry's pin)")
    log.info("%s: %s verified against %s", url, expected.algorithm, expected.origin)
    return Fetched(path, url, digests["sha256"], f"{expected.algorithm} matches {expected.origin}")


def download(url: str, destination: Path, expected: ExpectedDigest | None = None, *,
             config_key: str = "the entry's sha256") -> Fetched:
    """Download ``url`` to ``destination`` atomically and check it against ``expected``.

    A complete earlier download is reused once it passes the same check (one that fails is fetched again).
    ``config_key`` is where a user gives this file's sha256: the mismatch error names it as the fix.
    """
    destination = Path(destination)
    if destination.is_file():
        try:
            return _check(url, destination, expected, config_key)
        except ChecksumMismatchError as stale:
            log.warning("an earlier download is not the expected file; downloading it again: %s", stale)
    with atomic_path(destination) as tmp:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, open(tmp, "wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)
    return _check(url, destination, expected, config_key)
