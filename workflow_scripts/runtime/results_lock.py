"""One Snakemake run at a time per results folder, whichever clone or working directory it runs from.

Snakemake's own lock lives in ``.snakemake/locks`` of the working directory, so two clones of
the workflow (or two ``--directory`` runs) writing one results folder do not see each other and
would build the same outputs at once. This lock lives in the results folder itself:
``{results}/.atlas.lock``, held with an exclusive ``flock`` by the main Snakemake process for the
whole run. The kernel releases a flock when its process ends, killed or not, so a crashed run
never leaves a stale lock behind (unlike ``.snakemake/locks``, no ``--unlock`` is needed). The file
records who holds it (host, pid, user, directory, start time) for the message the next run prints.

The profiles turn Snakemake's own lock off (``nolock: true``), so that a killed run needs no
``--unlock``: this lock covers what that one did for this workflow (docs/troubleshooting.md says
what it does not). Holding it, :func:`on_start` also clears what killed jobs of earlier runs left in
the folder (:func:`sweep`): partial files and failure records.

The Snakefile calls :func:`on_start` from its ``onstart:`` handler (turning its errors into
Snakemake's WorkflowError) and :func:`release` from ``onsuccess:`` / ``onerror:``. Snakemake runs
``onstart`` only in the main process of a real run, once the DAG is built and before the first
job: not in dry runs, not for ``--unlock`` (nor ``--list``, ``--report``, ``--delete-all-output``),
not when nothing is to be done, and not in the job processes that cluster executors and ``run:``
jobs start (Snakemake passes them ``--no-hooks --nolock``). Snakemake's ``--nolock`` does not skip
this lock; ``--no-hooks`` does. On NFS, Linux maps flock to a POSIX lock seen by every client, so
a run on a login node and one on another host exclude each other too.
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import getpass
import os
import re
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import AtlasError
from .failures import RECORD_SUFFIX

LOCK_NAME = ".atlas.lock"
FIELDS = ("host", "pid", "user", "directory", "since")
# A run that just took the lock writes its record right after; a contender waits this long for it.
RECORD_WAIT_S = 1.0
# flock says "held by another" with these; any other error means the file system cannot lock.
HELD_ERRNOS = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
# Left by a job killed mid-write: core/io.atomic_path's temporary files, failures.write_record's.
LEFTOVER = re.compile(r"^\..+\.(?:[0-9a-f]{8}\.partial|failure\.json\.[0-9]+\.tmp)$")

# Locks this process holds, by the lock file's (device, inode): the descriptor must stay open for
# the lock to last, and a second acquire in the same process (the Snakemake API run twice) must
# reuse it, since flock would refuse a second descriptor of the same file even to its own process.
_HELD: dict[tuple[int, int], int] = {}


class ResultsInUseError(AtlasError):
    """Another run holds the results folder; the message says who and what to do."""


def lock_path(results: str | os.PathLike[str]) -> Path:
    return Path(results) / LOCK_NAME


def holder_record() -> dict[str, str]:
    """Who this process is, as the next run will read it from the lock file."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name for this uid (containers): the uid identifies it
        user = str(os.getuid())
    return {"host": socket.gethostname(), "pid": str(os.getpid()), "user": user, "directory": os.getcwd(),
            "since": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}


def format_record(record: dict[str, Any]) -> str:
    return "".join(f"{key}: {record[key]}\n" for key in FIELDS if key in record)


def parse_record(text: str) -> dict[str, str]:
    record = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in FIELDS:
            record[key] = value
    return record


def _read_record(fd: int) -> dict[str, str]:
    """The holder's record; it may be moments from being written, so wait for it briefly."""
    deadline = time.monotonic() + RECORD_WAIT_S
    while True:
        try:
            record = parse_record(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
        except OSError:  # opened write-only or unreadable: the message does without the details
            return {}
        if record.get("since") or time.monotonic() >= deadline:
            return record
        time.sleep(0.05)


def in_use_message(results: str | os.PathLike[str], record: dict[str, str]) -> str:
    if record:
        who = (f"  host {record.get('host', '?')}, pid {record.get('pid', '?')}, user {record.get('user', '?')}\n"
               f"  working directory {record.get('directory', '?')}\n"
               f"  running since {record.get('since', '?')}\n")
    else:
        who = "  (it has not recorded who it is: its lock file may not be writable for its user)\n"
    return (f"results folder '{results}' is in use by another Snakemake run of this workflow:\n{who}"
            "Two runs building one results folder at once would write the same outputs. Wait for that run "
            "to finish (the lock goes away when its process ends, also if it is killed), or give this run "
            f"another folder: --config results=OTHER_FOLDER. (Lock file: {lock_path(results)})")


def _open(path: Path) -> tuple[int, bool]:
    """Open the lock file, creating it with the mode a plain open() gives; (fd, writable)."""
    # O_CLOEXEC (Python's default too): job processes must not inherit the descriptor, or a killed
    # Snakemake's lock would live on in its still-running jobs.
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666), True
    except PermissionError:
        # Another user's lock file that the group may not write: flock still works read-only on
        # local file systems, only the record cannot be written.
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC), False


def _warn(message: str) -> None:
    print(f"Warning: {message}", file=sys.stderr)


def acquire(results: str | os.PathLike[str], *, warn: Callable[[str], None] = _warn) -> Path | None:
    """Hold the results folder's lock for the rest of this process (or until :func:`release`).

    Returns the lock file, or None where the file system cannot lock (then ``warn`` says so and
    the run goes on unguarded, as it did before this lock existed). Raises
    :class:`ResultsInUseError` when another process holds it.
    """
    path = lock_path(results)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, writable = _open(path)
    except OSError as exc:
        raise AtlasError(f"results folder '{results}': cannot open its lock file {path} ({exc.strerror}); "
                         "make the folder writable for you, or give this run another folder: "
                         "--config results=OTHER_FOLDER") from None
    info = os.fstat(fd)
    key = (info.st_dev, info.st_ino)
    if key in _HELD:  # this process already holds it
        os.close(fd)
        return path
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in HELD_ERRNOS:
            record = _read_record(fd)
            os.close(fd)
            raise ResultsInUseError(in_use_message(results, record)) from None
        os.close(fd)
        if not writable:
            # NFS locks need a descriptor open for writing (EBADF otherwise).
            raise AtlasError(f"results folder '{results}': cannot lock {path}: it is not writable for you "
                             "(it was created by another user); ask them to make it group-writable "
                             f"(chmod g+w {path}), or give this run another folder: "
                             "--config results=OTHER_FOLDER") from None
        warn(f"results folder '{results}': the file system cannot lock {path} ({exc.strerror}); "
             "this run goes on, but nothing stops a second run from building the same folder at once")
        return None
    if writable:
        os.ftruncate(fd, 0)
        os.pwrite(fd, format_record(holder_record()).encode(), 0)
    else:
        warn(f"results folder '{results}': locked, but {path} is not writable for you, so another run "
             "cannot be told who holds it; ask its owner to make it group-writable (chmod g+w)")
    _HELD[key] = fd
    return path


def release(results: str | os.PathLike[str]) -> None:
    """Give up the lock if this process holds it; harmless otherwise."""
    try:
        info = os.stat(lock_path(results))
    except OSError:
        return
    fd = _HELD.pop((info.st_dev, info.st_ino), None)
    if fd is None:
        return
    try:
        # Cleared before unlocking, so the next holder never shows this run's record as its own.
        os.ftruncate(fd, 0)
    except OSError:
        pass  # read-only descriptor: nothing was written
    finally:
        os.close(fd)  # closing the last descriptor releases the flock


def sweep(results: str | os.PathLike[str]) -> tuple[int, int]:
    """Remove what jobs of earlier runs left under ``results``; return (files, bytes) of partial files.

    Called with the lock held and before this run's first job, so no job of a live run is writing
    them; a job that outlived its killed Snakemake (kill -9 of the main process alone) and is still
    writing one fails at its rename, and this run builds that output again. Partial files are never
    read as outputs (their names are hidden and end in .partial), but an attention shard's can be
    gigabytes. Failure records (``LOG.failure.json``) are removed too: the next onerror must show only
    this run's.
    """
    files = size = 0
    for folder, _, names in os.walk(results):
        for name in names:
            path = os.path.join(folder, name)
            partial = LEFTOVER.match(name) is not None
            if not (partial or name.endswith(RECORD_SUFFIX)):
                continue
            try:
                bytes_ = os.lstat(path).st_size
                os.unlink(path)
            except OSError:  # gone already, or another user's in a shared folder: harmless, left there
                continue
            if partial:
                files, size = files + 1, size + bytes_
    return files, size


def on_start(workflow: Any, results: str | os.PathLike[str], *,
             warn: Callable[[str], None] = _warn, note: Callable[[str], None] | None = None) -> Path | None:
    """The ``onstart:`` handler: lock ``results`` and sweep it; raises :class:`AtlasError` (in use, unlockable).

    Takes the workflow as an opaque object (this package does not import Snakemake) and reads
    only its exec-mode and dry-run flags.
    """
    # Snakemake calls onstart only in the main process of a real run; this guards against it
    # ever being called in a job process, which would find its own main process holding the lock.
    if getattr(workflow, "remote_exec", False) or getattr(workflow, "subprocess_exec", False):
        return None
    if getattr(workflow, "dryrun", False):
        return None
    path = acquire(results, warn=warn)
    if path is not None:  # unguarded (no locks on this file system), another run may be writing them
        files, size = sweep(results)
        if files:
            (note or warn)(f"removed {files} partial file(s) ({size / 1e6:.1f} MB) that jobs of an interrupted "
                           f"earlier run left in '{results}'")
    return path
