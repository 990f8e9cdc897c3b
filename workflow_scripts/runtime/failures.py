"""What a failed job tells the person who ran the workflow: one short block per failed job, at the end.

Without this, a failed job's error reached the console three times (the script's traceback on stderr,
Snakemake's RuleException, and the job's log shown by ``show-failed-logs``), and the line that says
what to do was buried in hundreds of lines of traceback. Now:

- In the job (``workflow_scripts.entrypoints.run``), an error is written to the job's log only, with
  its traceback, and summed up in a small record beside the log, ``LOG.failure.json`` (rule,
  wildcards, message, whether it is a bug); the job then exits with status 1 and prints nothing more.
  The record is a file, not a message on stderr, because the main process must find it after the
  fact, also for cluster jobs whose stderr goes to the scheduler's files. Where the log's disk is full, the
  record goes to the temporary folder instead (:func:`spare_record_path`), and where neither can be
  written, the job prints its message on the console.
- In the main process, the Snakefile's ``onerror:`` calls :func:`report`, which reads the record of
  each job Snakemake counted as failed and prints one block per job: rule, message, fix, log.
  A project error (:class:`~workflow_scripts.core.errors.AtlasError`: bad input, unreachable source)
  is shown as its message, which names the fix; any other exception is a bug: the block says so,
  where it was raised and which log holds the traceback. A job that left no record (killed, out of
  memory, outputs missing) gets a block saying that, with its log.

Stale records cannot be mistaken for this run's: a job removes its own record when it starts, and
the run's ``onstart`` removes every record under the results folder before the first job
(``results_lock.sweep``). Standard library only: the main process imports this module while parsing the Snakefile.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sysconfig
import tempfile
import time
import traceback
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

RECORD_SUFFIX = ".failure.json"
# More blocks than this would push the first ones off the screen; the rest get one line per rule.
MAX_BLOCKS = 8
# An unexpected exception's message can be a whole repr of a table: the block keeps its head.
MAX_BUG_LINES, MAX_BUG_CHARS = 4, 400
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def record_path(log: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(log)}{RECORD_SUFFIX}")


def spare_record_path(log: str | os.PathLike[str]) -> Path:
    """Where a job's record goes when the disk of its log is full: the temporary folder, named by the log's
    absolute path (the main process of a local run reads it there; a cluster job's may not, and says so)."""
    key = hashlib.sha256(os.path.abspath(os.fspath(log)).encode()).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / "atlas-failures" / f"{key}{RECORD_SUFFIX}"


def clear(log: str | os.PathLike[str] | None) -> None:
    """Remove the records an earlier attempt of this job left (called when a job starts)."""
    if log:
        for path in (record_path(log), spare_record_path(log)):
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass


def _where(error: BaseException) -> str:
    """The innermost frame of the workflow's own code that the exception came through (file:line in
    function): not the Python library's nor an installed package's, where the cause seldom is."""
    installed = {os.path.realpath(sysconfig.get_path(name)) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if not any(os.path.realpath(f.filename).startswith(p + os.sep) for p in installed)]
    if not (ours or frames):
        return ""
    frame = (ours or frames)[-1]
    path = Path(frame.filename).resolve()
    filename = str(path.relative_to(PACKAGE_DIR.parent)) if path.is_relative_to(PACKAGE_DIR.parent) else frame.filename
    return f"{filename}:{frame.lineno} in {frame.name}"


def write_record(log: str | os.PathLike[str], *, rule: str, wildcards: Mapping[str, Any],
                 error: BaseException, bug: bool) -> Path | None:
    """Write ``LOG.failure.json`` for ``error`` atomically (a reader never sees half a record), or its spare where
    the log's disk is full; None where neither could be written."""
    message = str(error).strip() or type(error).__name__
    record = {"rule": rule, "wildcards": {str(k): str(v) for k, v in wildcards.items()},
              "bug": bug, "type": type(error).__name__, "message": message,
              "where": _where(error) if bug else "", "log": os.fspath(log), "time": time.time(),
              "host": socket.gethostname(), "pid": os.getpid()}
    text = json.dumps(record, indent=1) + "\n"
    for path in (record_path(log), spare_record_path(log)):  # the second where the first's disk is full
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
            return path
        except OSError:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
    return None


def read_record(log: str | os.PathLike[str]) -> dict[str, Any] | None:
    for path in (record_path(log), spare_record_path(log)):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            return record
    return None


# Control characters (but newline and tab): a message may quote a corpus row, and a record is a file of
# the results folder, which a group may write (docs/security.md); neither may drive the terminal.
_CONTROL = dict.fromkeys([*range(0, 9), *range(11, 32), *range(127, 160)], "?")


def printable(text: str) -> str:
    return text.translate(_CONTROL)


def split_fix(message: str) -> tuple[str, str]:
    """``(message, fix)``: the message's ``fix:`` line, with the indented lines that go on from it
    (or a ``...; fix: ...`` tail), apart from the rest."""
    lines = message.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("fix: "):
            end = i + 1
            while end < len(lines) and lines[end][:1].isspace():
                end += 1
            fix = "\n".join([line[len("fix: "):], *lines[i + 1:end]])
            return "\n".join(lines[:i] + lines[end:]).rstrip(), fix
    head, sep, fix = message.rpartition("; fix: ")
    if sep and "\n" not in fix:
        return head, fix
    return message, ""


def _shorten(text: str) -> str:
    lines = text.splitlines()
    short = "\n".join(lines[:MAX_BUG_LINES])
    if len(short) > MAX_BUG_CHARS:
        short = short[:MAX_BUG_CHARS].rstrip() + " ..."
    elif len(lines) > MAX_BUG_LINES:
        short += "\n..."
    return short


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def _job_name(rule: str, wildcards: Mapping[str, Any]) -> str:
    inside = ", ".join(f"{k}={v}" for k, v in wildcards.items())
    return f"rule {rule} ({inside})" if inside else f"rule {rule}"


def block(rule: str, wildcards: Mapping[str, Any], logs: list[str], record: dict[str, Any] | None) -> str:
    """The lines that tell what went wrong in one failed job and what to do about it."""
    return printable(_block(rule, wildcards, logs, record))


def _block(rule: str, wildcards: Mapping[str, Any], logs: list[str], record: dict[str, Any] | None) -> str:
    logs_text = ", ".join(logs) if logs else "(this rule keeps no log)"
    name = _job_name(rule, wildcards)
    if record is None:
        return (f"{name} failed without a message of this workflow (killed, out of memory, or its outputs "
                f"missing: Snakemake's error above says which)\n    log: {logs_text}")
    if record.get("bug"):
        message = _shorten(f"{record.get('type', 'Exception')}: {record.get('message', '')}")
        where = f"\n    raised at {record['where']}" if record.get("where") else ""
        return (f"{name} failed: an unexpected error, a bug in the workflow:\n{_indent(message)}{where}\n"
                f"    fix: none known; the traceback is in the log: please report it with that log\n"
                f"    log: {logs_text}")
    message, fix = split_fix(str(record.get("message", "")))
    fix_line = "\n" + _indent(f"fix: {fix}") if fix else ""
    return f"{name} failed:\n{_indent(message)}{fix_line}\n    log: {logs_text}"


def _jobs(job: Any) -> list[Any]:
    """The jobs of a failed job: itself, or the members of a group job."""
    members = getattr(job, "jobs", None)
    return list(members) if members and getattr(job, "is_group", lambda: False)() else [job]


def blocks_of(jobs: Iterable[Any]) -> tuple[list[str], int]:
    """One block per failed Snakemake job (objects with ``rule.name``, ``wildcards_dict`` and ``log``),
    in the order they failed, at most :data:`MAX_BLOCKS` and a line for the rest; and the number of jobs."""
    found = []
    for failed in jobs:
        for job in _jobs(failed):
            logs = [os.fspath(p) for p in getattr(job, "log", [])]
            record = next((r for r in map(read_record, logs) if r), None)
            wildcards = dict(getattr(job, "wildcards_dict", None) or {})
            when = record.get("time") if record else None  # jobs with no record last
            when = when if isinstance(when, (int, float)) else float("inf")
            found.append((when, job.rule.name, logs, wildcards, record))
    found.sort(key=lambda item: (item[0], item[1], item[2]))
    texts = [block(rule, wildcards, logs, record) for _, rule, logs, wildcards, record in found[:MAX_BLOCKS]]
    if len(found) > MAX_BLOCKS:
        rest: dict[str, int] = {}
        for _, rule, *_ in found[MAX_BLOCKS:]:
            rest[rule] = rest.get(rule, 0) + 1
        more = ", ".join(f"{rule} x{n}" for rule, n in rest.items())
        texts.append(f"... and {len(found) - MAX_BLOCKS} more ({more}); each log has a {RECORD_SUFFIX} "
                     "beside it with its message")
    return texts, len(found)


def report(workflow: Any) -> str:
    """The text ``onerror:`` prints: a heading and one block per failed job ('' when none is known).

    Takes the workflow as an opaque object (this package does not import Snakemake) and reads only
    the scheduler's set of failed jobs.
    """
    failed = getattr(getattr(workflow, "scheduler", None), "failed", None) or ()
    texts, count = blocks_of(failed)
    if not texts:
        return ""
    heading = "1 job failed:" if count == 1 else f"{count} jobs failed:"
    return "\n".join([heading, *texts])
