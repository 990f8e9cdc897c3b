"""What Snakemake prints on the console of a run: two of its messages shortened, so that a failed run stays short.

A run of the whole study printed a table of its 78 rules before the first job, and, for every failed job,
Snakemake's ``RuleException`` / ``CalledProcessError ... entry.py' returned non-zero exit status 1.``,
which says only that the project's script failed: the block ``onerror:`` prints at the end
(``workflow_scripts/runtime/failures.py``) says how, for every failed job. :func:`install` puts two objects of
the standard ``logging`` module on the console handler of Snakemake's logger, and on nothing else:

- a :class:`logging.Formatter` (:class:`CompactJobStats`) that prints a job table longer than
  :data:`MAX_TABLE_ROWS` rules as the jobs per stage (the rule file that declares each rule), in a real run
  only. A dry run keeps the table: it is how one asks for the jobs per rule, and what
  ``workflow_scripts/study/forecast/plan.py`` and the benchmarks read. A short table (one target, a few rules) stays,
  being short already and more telling than stages;
- a :class:`logging.Filter` (:class:`DropScriptExit`) that drops the ``CalledProcessError`` of the project's
  script (``rules/scripts/entry.py``) when it exited with status 1 (see :func:`is_script_exit` for why that
  one and no other), and the "Error in rule" block of a job that recorded its failure (the block at the end
  says the same, and more).

The record itself is not changed (the formatter formats it; the filter only answers): Snakemake's log file
(``.snakemake/log/``) and logger plugins still get the whole table, its ``stats`` and the error. Every other
message is left as Snakemake prints it. ``ATLAS_CONSOLE=full`` in the environment installs nothing.

The Snakefile (``rules/common.smk``) installs these while it is parsed, in the main process of a run: Snakemake
makes its handlers before it reads the Snakefile (``snakemake.logging.LoggerManager``, once per run), and
logs the job table after, when the DAG is built. This module does not import Snakemake.
"""

from __future__ import annotations

import logging
import os
import re
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .failures import read_record

SWITCH = "ATLAS_CONSOLE"  # ATLAS_CONSOLE=full: Snakemake's own console output, nothing left out
# A table of more rules than this no longer fits beside the failure blocks on one screen.
MAX_TABLE_ROWS = 15
WIDTH = 100
PER_RULE = "(per rule: the same command with -n -q rules)"

# Snakemake's error for a job whose script exited with status 1: its whole text, nothing else in it
# (snakemake.exceptions.format_exception_to_string of a RuleException that wraps the CalledProcessError of
# the job's shell command, which runs the script under .snakemake/scripts/tmpXXXXXXXX.entry.py).
_SCRIPT_EXIT = re.compile(
    r"RuleException:\nCalledProcessError in file \"[^\n]*\", line \d+:\n"
    r"Command '[^\n]*/\.snakemake/scripts/tmp[\w-]*\.entry\.py' returned non-zero exit status 1\.\s*")


def is_stats(record: logging.LogRecord) -> bool:
    """Snakemake's job table (``dag.stats()``, logged with ``extra=dict(event=LogEvent.RUN_INFO, stats=...)``)."""
    return getattr(record, "event", None) == "run_info" and isinstance(getattr(record, "stats", None), Mapping)


def is_script_exit(record: logging.LogRecord) -> bool:
    """Snakemake's error saying that the project's script (every rule runs it) exited with status 1.

    Such a job always has a block of its own at the end: ``onerror:`` prints one for every job Snakemake
    counts as failed, with the message the job recorded, or, when it recorded none, its log. And status 1
    says nothing more than that the job failed: the entry point exits with it after writing its record, and
    Python exits with it after printing an uncaught exception's traceback, which the console shows already.
    Snakemake's ``Error in rule`` block, which names the job and its log, stays. The filter cannot tell the
    first case from the second by the job's record: this error does not name the job (the next message
    does), so it drops both rather than hold messages back. Whatever says more is kept: another status
    (137: killed, out of memory), a signal, a traceback, another script, another error.
    """
    return (getattr(record, "exception", None) == "RuleException"
            and _SCRIPT_EXIT.fullmatch(record.getMessage()) is not None)


def stage_of_rules(workflow: Any) -> dict[str, str]:
    """Rule name -> stage: the stem of the ``rules/<stage>.smk`` that declares it; a rule of another file (the
    Snakefile's ``all``) stands for itself. In the order the workflow declares its rules: the Snakefile's
    includes, stage by stage (``workflow_scripts/core/stages.py``)."""
    stages = {}
    for rule in getattr(workflow, "rules", ()):
        path = Path(str(getattr(rule, "snakefile", "") or ""))
        stages[rule.name] = path.stem if path.parent.name == "rules" and path.suffix == ".smk" else rule.name
    return stages


def compact_stats(stats: Mapping[str, int], stage_of: Mapping[str, str]) -> str:
    """The job table as its total and the jobs per stage, stages in ``stage_of``'s order (then any other)."""
    per_stage: dict[str, int] = dict.fromkeys(stage_of.values(), 0)
    for rule, count in stats.items():
        if rule != "total":
            stage = stage_of.get(rule, rule)
            per_stage[stage] = per_stage.get(stage, 0) + int(count)
    per_stage = {stage: count for stage, count in per_stage.items() if count}
    total = stats.get("total", sum(per_stage.values()))
    # Lines break between stages, not inside one (nor inside the hint): their spaces are no-break spaces
    # for textwrap, and spaces again once wrapped.
    units = [f"{stage}\xa0{count}" for stage, count in per_stage.items()]
    units = [f"{unit}," for unit in units[:-1]] + units[-1:]
    text = " ".join([f"Job stats: {total} jobs, by stage (rule file):", *units, PER_RULE.replace(" ", "\xa0")])
    lines = textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)
    return "\n".join(lines).replace("\xa0", " ") + "\n"


class CompactJobStats(logging.Formatter):
    """The console's formatter: Snakemake's own (``inner``), but for a long job table in a real run."""

    def __init__(self, inner: logging.Formatter | None, workflow: Any, max_rows: int = MAX_TABLE_ROWS) -> None:
        super().__init__()
        self.inner, self.workflow, self.max_rows = inner or logging.Formatter(), workflow, max_rows

    def format(self, record: logging.LogRecord) -> str:
        stats = getattr(record, "stats", None)
        # workflow.dryrun is known once the run has chosen its executor, before the table is logged.
        if is_stats(record) and len(stats) - ("total" in stats) > self.max_rows and \
                not getattr(self.workflow, "dryrun", False):
            try:
                return compact_stats(stats, stage_of_rules(self.workflow))
            except Exception:  # noqa: BLE001 - a workflow object unlike Snakemake's: its own table, not none
                pass
        return self.inner.format(record)


def is_recorded_job_error(record: logging.LogRecord) -> bool:
    """Snakemake's "Error in rule" block of a job that recorded its failure beside its log: the block
    ``onerror:`` prints for it at the end names the same rule and log, and says what went wrong and the fix."""
    if getattr(record, "event", None) != "job_error":
        return False
    return any(read_record(log) is not None for log in getattr(record, "log", None) or [])


class DropScriptExit(logging.Filter):
    """The console's filter: leaves out :func:`is_script_exit` and :func:`is_recorded_job_error` records and,
    in a real run of ``workflow``, the block Snakemake prints as each job starts (its inputs, outputs, reason
    and resources: 7 lines or more a job, a thousand and more for the quickstart study). The progress lines
    ("N of M steps done") stay, the log file keeps the blocks, and a dry run keeps them: they are how one
    lists the jobs."""

    def __init__(self, workflow: Any = None) -> None:
        super().__init__()
        self.workflow = workflow

    def filter(self, record: logging.LogRecord) -> bool:
        if is_script_exit(record) or is_recorded_job_error(record):
            return False
        started = getattr(record, "event", None) in ("job_info", "group_info")
        return not (started and self.workflow is not None and not getattr(self.workflow, "dryrun", True))


# The name snakemake.logging.LoggerManager gives the handler it writes the console with. Not its log file's,
# nor the QueueHandler that feeds logger plugins (one of which may write the console instead: then there is
# no such handler, and the console is the plugin's, left as it is).
CONSOLE_HANDLER = "DefaultStreamHandler"


def console_handlers(logger: logging.Logger) -> list[logging.Handler]:
    """Snakemake's console handler on ``logger`` (none or one)."""
    return [handler for handler in logger.handlers
            if handler.name == CONSOLE_HANDLER and isinstance(handler, logging.StreamHandler)]


def install(logger: logging.Logger, workflow: Any, *, environ: Mapping[str, str] | None = None,
            warn: Callable[[str], Any] | None = None, max_rows: int = MAX_TABLE_ROWS) -> int:
    """Put the formatter and the filter on ``logger``'s console handlers (once); the number of handlers changed.
    Nothing when ``ATLAS_CONSOLE`` is ``full``; ``warn`` is told of any other value but none."""
    value = (os.environ if environ is None else environ).get(SWITCH, "").strip().lower()
    if value == "full":
        return 0
    if value and warn:
        warn(f"{SWITCH}={value!r} is not a setting: 'full' shows Snakemake's whole console output; "
             "anything else, or nothing, the short one")
    changed = 0
    for handler in console_handlers(logger):
        if any(isinstance(f, DropScriptExit) for f in handler.filters):
            continue  # installed already (the Snakefile read twice in one process)
        handler.setFormatter(CompactJobStats(handler.formatter, workflow, max_rows))
        handler.addFilter(DropScriptExit(workflow))
        changed += 1
    return changed
