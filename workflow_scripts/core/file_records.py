"""What the workflow wrote, so that it trusts nothing else (docs/security.md, docs/troubleshooting.md).

- A **file entry** records a file as a job wrote it: its size, digest and modification time. Dump manifests
  list their shards this way and checkpoint records their weights' files. The digest is a sha256, or for an
  attention shard a BLAKE3 (``blake3``: 2.6x sha256's speed on one core of the project's 2-core machine, and it
  spreads over cores; hashing at sha256's 1 GB/s capped a GPU node's extraction). :func:`file_problem` reads
  either, so records written before BLAKE3 stay valid.
  :func:`file_problem` compares a file with its entry: the size always, the digest where the time differs
  (``always_hash`` for a load, which must not trust a file that kept its size and time).
- A **sealed record** (a dump's manifest, a shard's record, a checkpoint's ``checkpoint.json``) carries the sha256
  of its own content (``record_sha256``), so that an edited record is refused, not followed.
- A **damage marker** (``.NAME.damaged`` beside the file) is left by a job that refused a file and removed it. The
  next run's plan (workflow_scripts/runtime/integrity.py) finds it and rebuilds the file, although Snakemake would
  not rebuild a missing file whose dependents are all there.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .io import write_json

SEAL = "record_sha256"
MARKER_SUFFIX = ".damaged"
# The digests a file entry may carry, the first found being checked: BLAKE3 for shards, sha256 elsewhere.
DIGESTS = ("blake3", "sha256")


def new_digest(algorithm: str) -> Any:
    """A hashlib-style object of ``algorithm`` (DIGESTS): BLAKE3 on as many threads as it finds useful."""
    if algorithm == "blake3":
        import blake3

        return blake3.blake3(max_threads=blake3.blake3.AUTO)
    return hashlib.new(algorithm)


def file_digest(path: str | os.PathLike[str], algorithm: str = "sha256") -> str:
    if algorithm == "blake3":
        return new_digest(algorithm).update_mmap(path).hexdigest()  # the file's pages hashed in parallel
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, lambda: new_digest(algorithm)).hexdigest()


def file_sha256(path: str | os.PathLike[str]) -> str:
    return file_digest(path, "sha256")


class GrowingFileDigest:
    """The digest (DIGESTS) of a file that is being written, caught up with the bytes written so far by
    :meth:`update`.

    A writer calls ``update`` after each write (on its own thread, off the caller's critical path) and
    ``hexdigest`` once the file is complete, instead of reading the whole file back after it is closed. The
    file must only grow (Parquet's writer never seeks back); the bytes read are the ones on disk.
    """

    CHUNK = 1 << 22

    def __init__(self, path: str | os.PathLike[str], algorithm: str = "sha256") -> None:
        self._handle = open(path, "rb")  # noqa: SIM115 - read as the file grows, closed by hexdigest()
        self.algorithm = algorithm
        self._digest = new_digest(algorithm)

    def update(self) -> None:
        while chunk := self._handle.read(self.CHUNK):
            self._digest.update(chunk)

    def close(self) -> None:
        """Stop reading a file whose writing failed (hexdigest closes it otherwise)."""
        self._handle.close()

    def hexdigest(self, final_path: str | os.PathLike[str]) -> str:
        """The digest of the whole file, now at ``final_path`` (renamed into place): call it once, after the file
        is closed. Should the file read not be the one at ``final_path`` (its writer replaced it rather than
        writing to it), the file there is hashed whole."""
        self.update()
        with self._handle:
            read = os.fstat(self._handle.fileno())
            final = os.stat(final_path)
            if (read.st_ino, read.st_dev, self._handle.tell()) != (final.st_ino, final.st_dev, final.st_size):
                return file_digest(final_path, self.algorithm)
        return self._digest.hexdigest()


def file_entry(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A file as it is now: ``bytes``, ``sha256`` and ``mtime_ns``."""
    stat = os.stat(path)
    return {"bytes": stat.st_size, "sha256": file_sha256(path), "mtime_ns": stat.st_mtime_ns}


def file_problem(path: str | os.PathLike[str], entry: Mapping[str, Any], *, always_hash: bool = False) -> str | None:
    """What differs between a file and its entry, in words; None if nothing does.

    The sha256 is computed only where the size matches and the modification time does not (a copy, a restore,
    an edit that kept the size), unless ``always_hash``.
    """
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return "the file is missing"
    if "bytes" in entry and stat.st_size != entry["bytes"]:
        return f"it has {stat.st_size} bytes, the workflow wrote {entry['bytes']}"
    algorithm = next((name for name in DIGESTS if name in entry), None)
    if algorithm and (always_hash or stat.st_mtime_ns != entry.get("mtime_ns")):
        digest = file_digest(path, algorithm)
        if digest != entry[algorithm]:
            return f"its {algorithm} is {digest[:12]}..., the workflow wrote {entry[algorithm][:12]}..."
    return None


def _content_sha256(record: Mapping[str, Any]) -> str:
    body = {key: value for key, value in record.items() if key != SEAL}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def sealed(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record with the sha256 of its content added (what :func:`seal_problem` checks)."""
    return {**record, SEAL: _content_sha256(json.loads(json.dumps(record, default=str)))}


def seal_problem(record: Mapping[str, Any]) -> str | None:
    """Why a record is not as the workflow wrote it (edited after writing); None if it is, or if it has no seal
    (written before seals: its files are still checked against it)."""
    if SEAL not in record:
        return None
    if record[SEAL] != _content_sha256(record):
        return "it was edited after the workflow wrote it (its record_sha256 no longer matches its content)"
    return None


def write_sealed_json(record: Mapping[str, Any], destination: str | os.PathLike[str]) -> dict[str, Any]:
    record = sealed(record)
    write_json(record, destination)
    return record


def marker_path(path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    return path.with_name(f".{path.name}{MARKER_SUFFIX}")


def mark_damaged(path: str | os.PathLike[str], problem: str, *, remove: tuple[str | os.PathLike[str], ...] = (),
                 target: str | os.PathLike[str] | None = None) -> None:
    """Remove a refused file (and ``remove``: what vouched for it) and leave a marker, so that the next run
    rebuilds ``target`` (by default the file itself; a shard's is its dump's manifest)."""
    path = Path(path)
    for stale in (path, *map(Path, remove)):
        stale.unlink(missing_ok=True)
    if path.parent.is_dir():
        write_json({"file": path.name, "problem": problem, "target": str(target or path)}, marker_path(path))


def damage_markers(root: str | os.PathLike[str]) -> Iterator[tuple[Path, str, Path, Path]]:
    """(the damaged file, the problem, what rebuilds it, the marker) of every marker under ``root``."""
    for folder, _, names in os.walk(root):
        for name in names:
            if name.startswith(".") and name.endswith(MARKER_SUFFIX):
                marker, path = Path(folder, name), Path(folder, name[1:-len(MARKER_SUFFIX)])
                try:
                    note = json.loads(marker.read_text())
                    problem, target = str(note.get("problem", "")), Path(note.get("target") or path)
                except (OSError, ValueError, AttributeError):
                    problem, target = "", path
                yield path, problem, target, marker
