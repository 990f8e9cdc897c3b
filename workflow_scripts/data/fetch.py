"""Downloads from public sources: verified against their checksum, with errors that say what was tried, how to
go offline, and what to do when a file is not the one expected.

:func:`download` is the one place a release file is fetched (by the data jobs and by the prefetch alike):
it checks the file against the digest given in the config, pinned in the source registry, or (a UD release
file) the git blob id that GitHub's contents API gives for it at its tag, and otherwise records the digest it
received (trust on first use), which the data table's metadata and data_summary.csv keep. The transfer itself
is pooch's (a well-kept downloader over requests): a failed attempt is retried from the start, with backoff.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pooch
import requests

from ..core.errors import AtlasError, ChecksumMismatchError, SourceUnavailableError
from ..core.io import atomic_path
from .registry import PINNED_DIGESTS, mirror_candidates

log = logging.getLogger(__name__)
T = TypeVar("T")

DOWNLOAD_TIMEOUT_S = 60  # without a byte for this long, an attempt fails (and is retried)
# A failed attempt (connection refused or dropped, a timeout, a 5xx answer, a transfer cut short of its
# Content-Length) is retried this many times, each from the start into a fresh file. pooch waits between
# attempts, one second longer each time (1 s, 2 s, 3 s; at most 10 s): a brief outage passes, while an
# unreachable host still fails within minutes. Read at each download, so that a test can lower it.
DOWNLOAD_RETRIES = 3
# The 4xx answers that mean "try later"; any other (404, 403, 410, ...) would be the same again: not retried.
RETRIED_CLIENT_STATUS = frozenset({408, 425, 429})
API_TIMEOUT_S = 20
# A UD release file's checksum: the git blob id (sha1 of b"blob SIZE\0" + content) GitHub's contents API gives.
GIT_BLOB = "git blob id"
RELEASE_BLOB_ORIGIN = "the release (GitHub API)"


# pooch logs every download and retry at INFO to a stderr handler of its own, outside the logging tree: the
# attempts are logged here instead, through this module's logger and with their cause (pooch's documented way
# to quiet it: its logger's level).
pooch.get_logger().setLevel(logging.WARNING)


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
    holding = f"PATH holds {layout}, paths relative to it" if layout else "PATH holds this split"
    return SourceUnavailableError(
        f"corpus {corpus!r}, split {split!r}: could not be obtained ({mirror_hint}).\n"
        f"places tried:\n{places}{reason}\n"
        "fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH --cores all\n"
        f"  ({holding}; the layout: docs/data.md, 'Where data comes from').\n"
        "  On a cluster whose compute nodes have no internet, fill PATH on the login node first with the prefetch:\n"
        "  python -m workflow_scripts.entrypoints.prefetch (README, 'Cluster without internet on compute nodes')."
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


def not_a_zip(url: str, path: Path, url_key: str, cause: BaseException) -> AtlasError:
    """The error for a release archive that is not a zip file (a login, error or 'moved' page served instead)."""
    with open(path, "rb") as handle:
        start = handle.read(64)
    looks = " (it starts like an HTML page)" if start.lstrip().lower().startswith((b"<!doctype", b"<html")) else ""
    return AtlasError(f"{url}: the file received ({path}, {path.stat().st_size} bytes) is not a zip archive{looks}: "
                      f"{cause}\nfix: open the URL in a browser and check what it serves (a login page, a moved "
                      f"release, a proxy's error page); point config key '{url_key}' at the release archive itself")


@dataclass(frozen=True)
class ExpectedDigest:
    """The digest a download must have, and who says so (the config key or the source registry)."""

    algorithm: str  # a hashlib name, or GIT_BLOB
    value: str
    origin: str
    where: str = ""  # where the digest was read (the API URL of a release's blob id), for the error message


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
NO_CHECKSUM = "no checksum known"


def expected_digest(url: str, configured_sha256: str | None, config_key: str) -> ExpectedDigest | None:
    """What ``url`` must hash to: the sha256 the config gives (key ``config_key``), else the source registry's
    pin of that exact URL, else None (nothing known: the received digest is recorded)."""
    if configured_sha256:
        return ExpectedDigest("sha256", configured_sha256.strip().lower(), f"config key '{config_key}'")
    pin = PINNED_DIGESTS.get(url)
    if pin is None:
        return None
    return ExpectedDigest(pin.algorithm, pin.value, f"the source registry: {pin.origin}")


def release_blob_id(api_url: str) -> tuple[ExpectedDigest | None, str]:
    """The git blob id of a UD release file, as GitHub's contents API at ``api_url`` gives it ("sha"), or
    (None, why not) when the API cannot be reached or answers without one (e.g. its rate limit)."""
    try:
        request = urllib.request.Request(api_url, headers={"Accept": "application/vnd.github+json"})
        with urllib.request.urlopen(request, timeout=API_TIMEOUT_S) as response:
            answer = json.loads(response.read())
    except Exception as exc:  # unreachable, an HTTP error (403: rate limit), not JSON: the download goes on
        return None, f"the release's git blob id could not be read from {api_url} ({type(exc).__name__}: {exc})"
    sha = answer.get("sha") if isinstance(answer, dict) else None
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}", sha):
        said = answer.get("message") if isinstance(answer, dict) else None
        return None, (f"{api_url} answered without a git blob id ('sha')" + (f": {said}" if said else ""))
    return ExpectedDigest(GIT_BLOB, sha, RELEASE_BLOB_ORIGIN, where=api_url), ""


def file_digests(path: Path, algorithms: tuple[str, ...] = ("sha256",)) -> dict[str, str]:
    """The file's digests by name: hashlib's, and GIT_BLOB (git's sha1 of a blob: header, then the content)."""
    hashers = {}
    for name in dict.fromkeys(algorithms):
        if name == GIT_BLOB:
            hashers[name] = hashlib.sha1(b"blob %d\0" % Path(path).stat().st_size, usedforsecurity=False)
        else:
            hashers[name] = hashlib.new(name)
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            for hasher in hashers.values():
                hasher.update(chunk)
    return {name: hasher.hexdigest() for name, hasher in hashers.items()}


DOWNLOAD_FIX = ("check the URL and whatever serves it (a proxy or login page, a moved or truncated file, a mirror "
                "holding another version) and run again")


def mismatch(what: str, expected: ExpectedDigest, received: str, sha256: str, size: int, config_key: str,
             fate: str, fix: str = DOWNLOAD_FIX) -> ChecksumMismatchError:
    """The error for a file (``what``: 'the download of URL', 'the mirror file PATH') that is not the one
    expected; ``fate``: what became of it; ``fix``: what to do about the file itself."""
    also = "" if expected.algorithm == "sha256" else f" (sha256 {sha256})"
    where = f", read from {expected.where}" if expected.where else ""
    return ChecksumMismatchError(
        f"{what} is not the expected file, and {fate}:\n"
        f"  expected {expected.algorithm} {expected.value} ({expected.origin}{where})\n"
        f"  received {expected.algorithm} {received}{also}, {size} bytes\n"
        f"fix: {fix}; if the file changed upstream on purpose and you trust the new one, give its sha256 in "
        f"config key '{config_key}' (it replaces the registry's pin)")


def _check(url: str, path: Path, expected: ExpectedDigest | None, config_key: str,
           unchecked: str = NO_CHECKSUM) -> Fetched:
    """The downloaded file at ``path`` checked against ``expected``; a mismatch deletes it and says so.
    ``unchecked``: why there is nothing to check against (recorded with the digest received)."""
    algorithms = ("sha256",) if expected is None else ("sha256", expected.algorithm)
    digests = file_digests(path, algorithms)
    if expected is None:
        log.warning("%s: %s; received sha256 %s (recorded, trust on first use)", url, unchecked, digests["sha256"])
        verified = UNVERIFIED if unchecked == NO_CHECKSUM else \
            f"unverified: {unchecked.splitlines()[0]}; the received sha256 is recorded"
        return Fetched(path, url, digests["sha256"], verified)
    received = digests[expected.algorithm]
    if received != expected.value:
        size = path.stat().st_size
        path.unlink()
        raise mismatch(f"the download of {url}", expected, received, digests["sha256"], size, config_key,
                       "was deleted")
    log.info("%s: %s verified against %s", url, expected.algorithm, expected.origin)
    return Fetched(path, url, digests["sha256"], f"{expected.algorithm} matches {expected.origin}")


def download(url: str, destination: Path, expected: ExpectedDigest | None, *,
             config_key: str = "the entry's sha256", unchecked: str = NO_CHECKSUM) -> Fetched:
    """Download ``url`` to ``destination`` atomically and check it against ``expected``.

    A complete earlier download is reused only when it can be checked (``expected`` is known) and passes the
    check; otherwise (a file that anyone writing the downloads folder may have put there) it is fetched again.
    ``config_key`` is where a user gives this file's sha256: the mismatch error names it as the fix;
    ``unchecked`` says why ``expected`` is None (recorded with the digest received).
    """
    destination = Path(destination)
    if destination.is_file():
        if expected is None:
            log.info("%s: an earlier download cannot be checked (%s): downloading it again", destination, unchecked)
        else:
            try:
                return _check(url, destination, expected, config_key)
            except ChecksumMismatchError as stale:
                log.warning("an earlier download is not the expected file; downloading it again: %s", stale)
    with atomic_path(destination) as tmp:
        # pooch renames its own temporary file onto the name it is given: a new name beside the reserved one, so
        # that the file moved onto ``tmp`` is a new one, which atomic_path gives the usual mode (not tempfile's 0600).
        staged = tmp.with_name(tmp.name + ".pooch")
        try:
            if url.lower().startswith("file:"):  # a local copy (the schema allows file:// URLs): no network to retry
                _copy_local(url, staged)
            else:
                _transfer(url, staged, DOWNLOAD_RETRIES)
            os.replace(staged, tmp)
        finally:
            staged.unlink(missing_ok=True)
    return _check(url, destination, expected, config_key, unchecked)


def _copy_local(url: str, target: Path) -> None:
    """A file:// URL copied to ``target`` (requests, and so pooch, read no file:// URLs; urllib does)."""
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, open(target, "wb") as out:
        while chunk := response.read(1 << 20):
            out.write(chunk)


class FinalHTTPError(OSError):
    """An HTTP answer that another attempt would not change (404, 403, ...): raised past pooch's retries."""


class _LoggedAttempts:
    """pooch's HTTP downloader (no progress bar: job logs stay readable), logging each failed attempt with its
    cause (pooch retries it), and raising an answer that asking again would not change past the retries."""

    def __init__(self, attempts: int):
        self.http = pooch.HTTPDownloader(progressbar=False, timeout=DOWNLOAD_TIMEOUT_S)
        self.attempts, self.started = attempts, 0

    def __call__(self, url: str, output_file: str, pup: pooch.Pooch | None) -> None:
        self.started += 1
        try:
            self.http(url, output_file, pup)
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 0
            if 400 <= status < 500 and status not in RETRIED_CLIENT_STATUS:
                raise FinalHTTPError(str(exc)) from exc
            self._failed(url, exc)
            raise
        except (requests.RequestException, ValueError) as exc:  # what pooch retries
            self._failed(url, exc)
            raise

    def _failed(self, url: str, exc: BaseException) -> None:
        # INFO: the job's log keeps every attempt; its console shows warnings only, and the download's error
        # (raised after the last attempt, the cause in it) ends in the run's failure block.
        then = "trying again from the start" if self.started < self.attempts else "no attempt left"
        log.info("%s: download attempt %d of %d failed (%s: %s); %s", url, self.started, self.attempts,
                 type(exc).__name__, exc, then)


def _transfer(url: str, target: Path, retries: int) -> None:
    """``url`` written to ``target`` (absent) by pooch, which retries a failed attempt ``retries`` times, each into
    a fresh temporary file beside ``target`` (the failed one deleted) that is renamed onto it once complete.

    pooch is given no hash (known_hash None): the file is checked afterwards by :func:`_check`, which alone knows
    a git blob id, keeps this module's messages, and does not download again a file that is complete but not the
    expected one (pooch would retry a mismatch as if the transfer had failed, a large archive included).
    """
    target = target.absolute()
    pup = pooch.create(path=target.parent, base_url="", registry={target.name: None}, urls={target.name: url},
                       retry_if_failed=retries)
    pup.fetch(target.name, downloader=_LoggedAttempts(retries + 1))


def verified_download(url: str, destination: Path, *, sha256: str | None, config_key: str,
                      blob_api_url: str | None) -> Fetched:
    """``url`` downloaded to ``destination`` and checked against, in order: ``sha256`` (the config's, key
    ``config_key``), the source registry's pin of ``url``, the git blob id GitHub's contents API at
    ``blob_api_url`` gives (a UD release file; None: not one). When none is known (the API unreachable or
    rate-limited included) the sha256 received is recorded, with a warning that says why."""
    expected, unchecked = expected_digest(url, sha256, config_key), NO_CHECKSUM
    if expected is None and blob_api_url:
        expected, unchecked = release_blob_id(blob_api_url)
    return download(url, destination, expected, config_key=config_key, unchecked=unchecked)
