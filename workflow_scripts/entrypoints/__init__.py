"""Thin entry points between Snakemake rules and the science functions.

Each rule runs ``rules/scripts/entry.py``, which calls :func:`run`; it runs the function registered with
``@entry_point("<rule name>")`` in ``entrypoints/<stage>.py`` (the rule's own file's stage), found by the rule's
name exactly; the rules a loop makes one per config entry register their name's pattern (``finetune_{task}``),
which a rule's name must match whole. It sets up logging to the rule's log file and hands over plain values (paths
and params). Nothing below this module knows about Snakemake.

A job that fails writes its error, with the traceback, to its log file only, leaves a record of it
beside the log for the end of the run (``workflow_scripts/runtime/failures.py``) and exits with status 1
without a traceback on the console: Snakemake then reports the job as failed (one
``CalledProcessError`` line), and the Snakefile's ``onerror:`` prints each failed job's message and fix
once, at the end, where it is not buried under the output of the jobs that ran on.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from ..core.errors import AtlasError
from ..core.io import setup_logging
from ..core.stages import entry_name_matches
from ..runtime import failures
from ..runtime.disk_space import DiskFullError, disk_full_error

ENTRY_POINTS: dict[str, Callable[[Any], None]] = {}


def entry_point(rule: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    def register(function: Callable[[Any], None]) -> Callable[[Any], None]:
        ENTRY_POINTS[rule] = function
        return function
    return register


def find_entry_point(rule: str) -> Callable[[Any], None]:
    """The function registered under the rule's name, or under a pattern its name matches whole (``finetune_{task}``:
    ``finetune_`` then one field of letters, digits, ``_`` and ``-``). No prefix lookup, no fallback."""
    if rule in ENTRY_POINTS:
        return ENTRY_POINTS[rule]
    for name, function in ENTRY_POINTS.items():
        if entry_name_matches(name, rule):
            return function
    raise KeyError(f"rule {rule!r}: no @entry_point({rule!r}) in workflow_scripts/entrypoints/ (the module of the "
                   "rule's stage registers one under the rule's name)")


def run(smk: Any) -> None:
    """Run the entry point of ``smk.rule`` (the ``snakemake`` object of a script)."""
    log_path = smk.log[0] if smk.log else None
    failures.clear(log_path)  # left by an earlier attempt of this job: it must not speak for this one
    log = setup_logging(log_path)
    if smk.params.get("offline", False):
        # Make every Hugging Face library fail fast instead of trying the network.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_OFFLINE"] = "1"
    saved_stderr = sys.stderr
    if log_path:
        # The console is shared by every job of the run: it gets this package's warnings; the log
        # file gets every line, and what libraries write to stderr (their own log handlers, progress
        # bars, Python warnings), which would otherwise bury the end-of-run blocks.
        for handler in log.handlers:
            if not isinstance(handler, logging.FileHandler):
                handler.setLevel(logging.WARNING)
        files = [h for h in log.handlers if isinstance(h, logging.FileHandler)]
        sys.stderr = _StderrToLog(files[0], saved_stderr)
    # Libraries' own log handlers hold the stderr of when they were imported: in a warm copy, the server's, which is
    # the console (transformers' load reports came through). They write to this job's stderr, its log, instead.
    moved = _library_handlers_to(sys.stderr, keep=log.handlers) if log_path else []
    try:
        _import_all()
        function = find_entry_point(smk.rule)
        log.info("rule %s: start (threads=%s)", smk.rule, smk.threads)
        entered = time.time()
        function(smk)
    except Exception as error:
        full = disk_full_error(error, _job_folders(smk, log_path))  # whatever raised it: named as a full disk
        _fail(log, smk, log_path, full or error, bug=full is None and not isinstance(error, AtlasError))
    finally:
        sys.stderr = saved_stderr
        for handler, stream in moved:
            handler.setStream(stream)
    log.info("rule %s: done (%s)", smk.rule, job_cost(entered))


def _library_handlers_to(stream: Any, keep: list[logging.Handler]) -> list[tuple[logging.StreamHandler, Any]]:
    """Point every console handler of a logger (but this package's, ``keep``) at ``stream``; returns each handler
    with the stream it had, to put back."""
    loggers = [logging.getLogger(), *(item for item in logging.Logger.manager.loggerDict.values()
                                      if isinstance(item, logging.Logger))]
    moved = []
    for logger in loggers:
        for handler in logger.handlers:
            if (type(handler) is logging.StreamHandler and handler not in keep
                    and handler.stream in (sys.__stderr__, getattr(stream, "console", None))):
                moved.append((handler, handler.setStream(stream)))
    return moved


class _StderrToLog(io.TextIOBase):
    """``sys.stderr`` for a job: text goes into its log file through the log's own file handler (one
    file object, so the two never write over each other); the console's descriptor stays for code
    that asks for one."""

    def __init__(self, handler: logging.FileHandler, console: Any) -> None:
        self.handler, self.console = handler, console

    def write(self, text: str) -> int:
        with self.handler.lock or contextlib.nullcontext():
            stream = self.handler.stream
            try:
                (stream or self.console).write(text)  # stream is None once logging has shut down
            except OSError:  # the log's disk is full: the job's failure record says so, not a traceback per line
                pass
        return len(text)

    def flush(self) -> None:
        try:
            self.handler.flush()
        except OSError:
            pass

    def fileno(self) -> int:
        return self.console.fileno()

    @property
    def encoding(self) -> str:
        return "utf-8"


def _job_folders(smk: Any, log_path: str | None) -> list[str]:
    """Where the job writes: its outputs' folders and its log's."""
    outputs = [str(p) for p in getattr(smk, "output", [])]
    return [os.path.dirname(os.path.abspath(p)) for p in [*outputs, *([log_path] if log_path else [])]]


def _fail(log: logging.Logger, smk: Any, log_path: str | None, error: Exception, bug: bool) -> NoReturn:
    """Log ``error`` with its traceback to the job's log file, record it, and exit with status 1."""
    if isinstance(error, DiskFullError):
        logging.raiseExceptions = False  # the log's own writes fail too: no "--- Logging error ---" per line
    if log_path is None:  # no log to keep it (every rule of this workflow has one): the console keeps it
        if bug:
            raise error
        print(f"rule {smk.rule} failed: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    what = "an unexpected error (a bug)" if bug else "an error"
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, "rule %s failed with %s", (smk.rule, what),
                            (type(error), error, error.__traceback__))
    # The file handlers only: the console gets the message once, from onerror at the end of the run.
    for handler in log.handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
    wildcards = dict(smk.wildcards.items()) if hasattr(smk.wildcards, "items") else {}
    if failures.write_record(log_path, rule=smk.rule, wildcards=wildcards, error=error, bug=bug) is None:
        # Not even the record could be written (its disk and the temporary folder's full): the console says it.
        print(f"rule {smk.rule} failed: {error}", file=sys.__stderr__)
    # SystemExit, not the error: Python would print its traceback on stderr, that is, on the console.
    raise SystemExit(1) from None


# The libraries whose import costs a job seconds (torch about 2 s, transformers' models 3-4 s more on a 2-core
# machine): which of them a job imported says whether its kind needs them (docs/contributing.md, "Jobs that start
# light").
HEAVY_LIBRARIES = ("torch", "transformers", "sklearn", "scipy", "matplotlib", "stanza", "spacy", "datasets")


def job_cost(entered: float) -> str:
    """How the job started (in a warm copy of the run's server or a process of its own), how long its process has
    run and how much of that passed before the entry point (Python, Snakemake's script preamble, this package's
    imports), and the heavy libraries the process holds."""
    from ..runtime import warm_start

    age = _process_age()
    heavy = [name for name in HEAVY_LIBRARIES if name in sys.modules]
    how = "warm copy of the run's server" if warm_start.in_copy else "process of its own"
    before = None if age is None else age - (time.time() - entered)
    timing = "" if age is None else f", {age:.1f} s in all, {before:.1f} s before the entry point"
    return f"{how}{timing}; holds {', '.join(heavy) if heavy else 'none of ' + '/'.join(HEAVY_LIBRARIES)}"


def _process_age() -> float | None:
    """Seconds since this process started (Linux: /proc, to the clock tick), None where that cannot be read."""
    try:
        started_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return uptime - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _import_all() -> None:
    """Import every stage module of this package so that its entry points register."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
