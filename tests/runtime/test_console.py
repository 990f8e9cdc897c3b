"""The console of a run (workflow_scripts/runtime/console.py), on Snakemake's own console handler and formatter: a
long job table printed as jobs per stage, the script's exit status 1 left out, every other message as it was,
the log file and the record untouched, and ATLAS_CONSOLE=full for all of Snakemake's output."""

from __future__ import annotations

import io
import logging
import re
from types import SimpleNamespace

import pytest
from snakemake.logging import ColorizingTextHandler, DefaultFormatter
from snakemake_interface_logger_plugins.common import LogEvent

from workflow_scripts.runtime import console

# The default study's job table, as Snakemake's dag.stats() gives it: 78 rules in 10 stage files and the Snakefile.
STAGE_RULES = {
    "data": 12, "models": 4, "finetune": 10, "attention": 5, "surface": 13, "syntax": 13, "finetune_effects": 11,
    "ablation": 5, "report": 3, "explorer": 1,
}
RULES = [(f"{stage}_rule{i}", stage) for stage, n in STAGE_RULES.items() for i in range(n)] + [("all", None)]
STATS = {**{rule: 2 for rule, _ in RULES[:-1]}, "all": 1}
STATS["total"] = sum(STATS.values())

SCRIPT_EXIT = ("RuleException:\nCalledProcessError in file \"/repo/rules/data.smk\", line 118:\n"
               "Command 'set -euo pipefail;  /repo/.venv/bin/python3 /repo/.snakemake/scripts/tmp97ox4hns.entry.py' "
               "returned non-zero exit status {status}.")


def workflow(dryrun: bool = False, rules=RULES) -> SimpleNamespace:
    """What the console reads of Snakemake's workflow: its rules' names and files, and whether it is a dry run."""
    return SimpleNamespace(dryrun=dryrun, rules=[
        SimpleNamespace(name=name, snakefile=f"/repo/rules/{stage}.smk" if stage else "/repo/Snakefile")
        for name, stage in rules])


def table(stats: dict[str, int]) -> str:
    """dag.stats()'s message (its layout; the console replaces it whole)."""
    return "Job stats:\njob    count\n-----  -----\n" + "".join(f"{job}  {n}\n" for job, n in stats.items())


@pytest.fixture
def logs():
    """A logger wired as Snakemake wires its own: the console handler with Snakemake's formatter, and a log file."""
    logger = logging.getLogger(f"test_console.{id(object())}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    screen, file = io.StringIO(), io.StringIO()
    handler = ColorizingTextHandler(nocolor=True, stream=screen, formatter=DefaultFormatter())
    handler.name = "DefaultStreamHandler"  # as snakemake.logging.LoggerManager names it
    logger.addHandler(handler)
    log_file = logging.FileHandler("/dev/null", delay=True)
    log_file.setFormatter(DefaultFormatter())
    log_file.setStream(file)
    logger.addHandler(log_file)
    yield SimpleNamespace(logger=logger, screen=screen, file=file)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)


def log_stats(logger: logging.Logger, stats: dict[str, int]) -> logging.LogRecord:
    """Log the table as Snakemake's workflow.execute() does; the record, as the handlers got it."""
    records = []
    grab = logging.Handler()
    grab.emit = records.append
    logger.addHandler(grab)
    logger.info(table(stats), extra=dict(event=LogEvent.RUN_INFO, stats=stats))
    logger.removeHandler(grab)
    return records[0]


def test_a_long_job_table_is_printed_as_jobs_per_stage_and_kept_whole_in_the_log_file(logs):
    assert console.install(logs.logger, workflow(), environ={}) == 1
    record = log_stats(logs.logger, STATS)
    printed = logs.screen.getvalue()
    assert printed.endswith(")\n\n")  # a blank line after it, as after Snakemake's table
    lines = printed.rstrip("\n").splitlines()
    assert 1 < len(lines) <= 4 and all(len(line) <= console.WIDTH for line in lines), lines
    assert lines[-1] == f"  {console.PER_RULE}"  # broken between stages, not inside one: "surface 26" stays whole
    assert all(re.fullmatch(r"(Job stats: \d+ jobs, by stage \(rule file\):)?( ?[a-z_]+ \d+,?)+", line.strip())
               for line in lines[:-1]), lines
    text = " ".join(line.strip() for line in lines)
    assert text == (f"Job stats: {STATS['total']} jobs, by stage (rule file): data 24, models 8, finetune 20, "
                    "attention 10, surface 26, syntax 26, finetune_effects 22, ablation 10, report 6, explorer 2, "
                    f"all 1 {console.PER_RULE}")
    # The record is not changed: the log file and logger plugins get the table and its stats.
    assert logs.file.getvalue() == table(STATS) + "\n"
    assert record.stats is STATS and record.event == LogEvent.RUN_INFO and record.getMessage() == table(STATS)


def test_a_short_table_and_a_dry_runs_table_are_printed_as_they_are(logs):
    console.install(logs.logger, workflow(), environ={})
    short = {"glue_table": 2, "treebank_table": 1, "total": 3}
    log_stats(logs.logger, short)
    assert logs.screen.getvalue() == table(short) + "\n"
    dry = logging.getLogger(f"{logs.logger.name}.dry")
    dry.propagate = False
    dry.handlers = [logs.logger.handlers[0].__class__(nocolor=True, stream=(screen := io.StringIO()),
                                                      formatter=DefaultFormatter())]
    dry.handlers[0].name = "DefaultStreamHandler"
    console.install(dry, workflow(dryrun=True), environ={})
    log_stats(dry, STATS)
    assert screen.getvalue() == table(STATS) + "\n"


def test_a_rule_of_another_file_and_an_unknown_rule_stand_for_themselves():
    stages = console.stage_of_rules(workflow(rules=[("glue_table", "data"), ("all", None)]))
    assert stages == {"glue_table": "data", "all": "all"}
    text = console.compact_stats({"glue_table": 3, "all": 1, "made_later": 2, "total": 6}, stages)
    assert text == f"Job stats: 6 jobs, by stage (rule file): data 3, all 1, made_later 2\n  {console.PER_RULE}\n"


def test_the_scripts_exit_status_1_is_left_out_and_every_other_message_is_printed(logs):
    console.install(logs.logger, workflow(), environ={})
    error = dict(event=LogEvent.ERROR, exception="RuleException")
    logs.logger.error(SCRIPT_EXIT.format(status=1), extra=error)
    assert logs.screen.getvalue() == ""
    assert "CalledProcessError" in logs.file.getvalue()  # the log file keeps it
    kept = [
        SCRIPT_EXIT.format(status=137),  # killed (out of memory): what says why a job left no record
        SCRIPT_EXIT.format(status=1).replace("tmp97ox4hns.entry.py", "tmp97ox4hns.other.py"),  # not the project's
        SCRIPT_EXIT.format(status=1).replace(" returned non-zero exit status 1.", " died with <Signals.SIGKILL: 9>."),
        SCRIPT_EXIT.format(status=1) + '\n  File "/repo/rules/data.smk", line 118, in __rule_glue_table',
        "RuleException:\nMissingOutputException in rule glue_table ...",
    ]
    for message in kept:
        logs.logger.error(message, extra=error)
    logs.logger.error(SCRIPT_EXIT.format(status=1))  # the same text, not as Snakemake's error record
    logs.logger.info("Shutting down, this might take some time.")
    assert logs.screen.getvalue() == "\n".join([*kept, SCRIPT_EXIT.format(status=1),
                                                "Shutting down, this might take some time."]) + "\n"


def test_atlas_console_full_shows_everything_and_the_filter_goes_on_once(logs):
    assert console.install(logs.logger, workflow(), environ={console.SWITCH: "full"}) == 0
    log_stats(logs.logger, STATS)
    logs.logger.error(SCRIPT_EXIT.format(status=1), extra=dict(event=LogEvent.ERROR, exception="RuleException"))
    assert logs.screen.getvalue() == table(STATS) + "\n" + SCRIPT_EXIT.format(status=1) + "\n"
    warned = []
    assert console.install(logs.logger, workflow(), environ={console.SWITCH: "ful"}, warn=warned.append) == 1
    assert console.install(logs.logger, workflow(), environ={}) == 0  # already on the handler
    assert len(warned) == 1 and "'ful' is not a setting" in warned[0]
    assert [type(f) for f in logs.logger.handlers[0].filters].count(console.DropScriptExit) == 1
    assert logs.logger.handlers[1].filters == []  # the log file is not the console


def test_a_workflow_it_cannot_read_gets_snakemakes_table(logs):
    console.install(logs.logger, SimpleNamespace(dryrun=False, rules=None), environ={})  # rules: not a list
    log_stats(logs.logger, STATS)
    assert logs.screen.getvalue() == table(STATS) + "\n"


def test_the_error_block_of_a_job_that_recorded_its_failure_is_left_to_the_final_block(tmp_path):
    from workflow_scripts.runtime import failures

    recorded, silent = tmp_path / "recorded.log", tmp_path / "silent.log"
    failures.write_record(recorded, rule="r", wildcards={}, error=ValueError("x"), bug=False)
    record = logging.LogRecord("snakemake", logging.ERROR, __file__, 1, "Error in rule r, jobid: 1", None, None)
    record.event, record.log = "job_error", [str(recorded)]
    assert not console.DropScriptExit().filter(record)
    record.log = [str(silent)]  # killed, out of memory: no record, so Snakemake's own block stays
    assert console.DropScriptExit().filter(record)
