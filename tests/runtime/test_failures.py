"""A failed job's record and the block the end of the run prints from it (workflow_scripts/runtime/failures.py),
and the entry point that writes them (workflow_scripts/entrypoints/__init__.py run()).

tests/workflow/test_run_messages.py runs the same through real Snakemake runs.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from workflow_scripts import entrypoints
from workflow_scripts.core.errors import InputFormatError, SourceUnavailableError
from workflow_scripts.runtime import failures

UNREACHABLE = ("corpus 'cola', split 'dev': could not be obtained (no mirror is set).\n"
               "places tried:\n  - hub dataset nyu-mll/glue (cola, validation)\n"
               "fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH --cores all\n"
               "  (PATH holds glue/CoLA/dev.tsv).")


def _job(rule: str, log: Path | None, **wildcards) -> SimpleNamespace:
    return SimpleNamespace(rule=SimpleNamespace(name=rule), wildcards_dict=wildcards,
                           log=[str(log)] if log else [], is_group=lambda: False)


def test_the_fix_line_and_its_indented_lines_come_apart_from_the_message():
    message, fix = failures.split_fix(UNREACHABLE)
    assert fix == ("run from a mirror: snakemake --profile profiles/offline --config mirror=PATH --cores all\n"
                   "  (PATH holds glue/CoLA/dev.tsv).")
    assert message.startswith("corpus 'cola'") and "fix:" not in message and "places tried:" in message
    assert failures.split_fix("x.csv: unreadable; fix: delete it") == ("x.csv: unreadable", "delete it")
    assert failures.split_fix("no fix here") == ("no fix here", "")


def test_a_record_is_written_whole_and_read_back(tmp_path):
    log = tmp_path / "logs" / "job.log"
    log.parent.mkdir()
    path = failures.write_record(log, rule="glue_table", wildcards={"task": "cola"},
                                 error=SourceUnavailableError(UNREACHABLE), bug=False)
    assert path == tmp_path / "logs" / "job.log.failure.json"
    assert [p.name for p in log.parent.iterdir()] == [path.name], "no temporary file left"
    record = failures.read_record(log)
    assert record["rule"] == "glue_table" and record["message"] == UNREACHABLE and record["bug"] is False
    failures.clear(log)
    assert failures.read_record(log) is None


def test_the_block_of_a_project_error_has_rule_message_fix_and_log(tmp_path):
    log = tmp_path / "cola_dev.log"
    failures.write_record(log, rule="glue_table", wildcards={"task": "cola", "split": "dev"},
                          error=SourceUnavailableError(UNREACHABLE), bug=False)
    text = failures.block("glue_table", {"task": "cola", "split": "dev"}, [str(log)], failures.read_record(log))
    lines = text.splitlines()
    assert lines[0] == "rule glue_table (task=cola, split=dev) failed:"
    assert "    corpus 'cola', split 'dev': could not be obtained (no mirror is set)." in lines
    assert "    fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH --cores all" in lines
    assert lines[-1] == f"    log: {log}" and "Traceback" not in text


def test_the_block_of_a_bug_names_the_exception_where_it_was_raised_and_the_log(tmp_path):
    log = tmp_path / "job.log"
    try:
        {}["missing"]
    except KeyError as error:
        failures.write_record(log, rule="surface_heads", wildcards={}, error=error, bug=True)
    text = failures.block("surface_heads", {}, [str(log)], failures.read_record(log))
    assert text.startswith("rule surface_heads failed: an unexpected error, a bug in the workflow:")
    assert "    KeyError: 'missing'" in text and "raised at " in text and "test_failures.py" in text
    assert "traceback is in the log" in text and text.endswith(f"log: {log}")


def test_a_job_without_record_is_still_named_with_its_log(tmp_path):
    text = failures.block("finetune_cola", {"model": "tiny"}, [str(tmp_path / "f.log")], None)
    assert text.startswith("rule finetune_cola (model=tiny) failed without a message of this workflow")
    assert text.endswith(f"log: {tmp_path / 'f.log'}")


def test_report_lists_the_failed_jobs_in_the_order_they_failed_and_caps_the_blocks(tmp_path, monkeypatch):
    jobs = []
    for i in range(failures.MAX_BLOCKS + 3):
        log = tmp_path / f"job{i}.log"
        failures.write_record(log, rule="glue_table", wildcards={"task": f"t{i}"},
                              error=InputFormatError(f"t{i}.tsv", 2, "bad row"), bug=False)
        record = json.loads(failures.record_path(log).read_text())
        record["time"] = 1000 - i  # the last written failed first
        failures.record_path(log).write_text(json.dumps(record))
        jobs.append(_job("glue_table", log, task=f"t{i}"))
    jobs.append(_job("head_explorer", None, model="tiny"))
    text = failures.report(SimpleNamespace(scheduler=SimpleNamespace(failed=jobs)))
    lines = text.splitlines()
    assert lines[0] == f"{failures.MAX_BLOCKS + 4} jobs failed:"
    assert lines[1] == f"rule glue_table (task=t{failures.MAX_BLOCKS + 2}) failed:"
    assert text.count(") failed:") == failures.MAX_BLOCKS
    assert lines[-1].startswith("... and 4 more (glue_table x3, head_explorer x1)")
    assert failures.report(SimpleNamespace(scheduler=SimpleNamespace(failed=[]))) == ""


# The entry point ----------------------------------------------------------------------------------


def _smk(rule: str, log: Path) -> SimpleNamespace:
    return SimpleNamespace(rule=rule, log=[str(log)], params={}, threads=1,
                           wildcards=SimpleNamespace(items=lambda: [("task", "cola")]))


@pytest.mark.parametrize(("raised", "bug"), [(SourceUnavailableError(UNREACHABLE), False),
                                             (ZeroDivisionError("division by zero"), True)], ids=["project", "bug"])
def test_a_failing_entry_point_exits_1_with_its_traceback_in_the_log_only(tmp_path, monkeypatch, capfd, job_logging,
                                                                          raised, bug):
    def failing(smk):
        raise raised

    monkeypatch.setattr(entrypoints, "_import_all", lambda: None)
    monkeypatch.setitem(entrypoints.ENTRY_POINTS, "failing_rule", failing)
    log = tmp_path / "logs" / "failing.log"
    failures.record_path(log).parent.mkdir(parents=True)
    failures.record_path(log).write_text('{"rule": "stale"}')  # an earlier attempt's: replaced
    with pytest.raises(SystemExit) as exited:
        entrypoints.run(_smk("failing_rule", log))
    assert exited.value.code == 1
    console = capfd.readouterr()
    assert "Traceback" not in console.err + console.out and str(raised).splitlines()[0] not in console.err
    text = log.read_text()
    assert "rule failing_rule failed with" in text and "Traceback" in text and type(raised).__name__ in text
    record = failures.read_record(log)
    assert record["rule"] == "failing_rule" and record["bug"] is bug and record["wildcards"] == {"task": "cola"}


def test_a_job_that_succeeds_leaves_no_record(tmp_path, monkeypatch, job_logging):
    monkeypatch.setattr(entrypoints, "_import_all", lambda: None)
    monkeypatch.setitem(entrypoints.ENTRY_POINTS, "fine_rule", lambda smk: None)
    log = tmp_path / "fine.log"
    failures.record_path(log).write_text('{"rule": "stale"}')
    entrypoints.run(_smk("fine_rule", log))
    assert not failures.record_path(log).exists() and "rule fine_rule: done" in log.read_text()


def test_what_libraries_write_to_stderr_goes_to_the_log_and_warnings_of_ours_also_to_the_console(
        tmp_path, monkeypatch, capfd, job_logging):
    library = logging.getLogger("some_library")

    def chatty(smk):
        library.addHandler(logging.StreamHandler())  # bound to sys.stderr now, as a library does on import
        library.warning("Retrying in 1s [Retry 1/5].")
        print("Loading weights: 50%", file=sys.stderr)
        logging.getLogger("workflow_scripts.stage").info("an info of ours")
        logging.getLogger("workflow_scripts.stage").warning("a warning of ours")

    monkeypatch.setattr(entrypoints, "_import_all", lambda: None)
    monkeypatch.setitem(entrypoints.ENTRY_POINTS, "chatty_rule", chatty)
    log = tmp_path / "chatty.log"
    try:
        entrypoints.run(_smk("chatty_rule", log))
    finally:
        library.handlers.clear()
    assert sys.stderr is sys.__stderr__ or not isinstance(sys.stderr, entrypoints._StderrToLog)
    console = capfd.readouterr().err
    assert "Retrying" not in console and "Loading weights" not in console and "an info of ours" not in console
    assert "a warning of ours" in console
    text = log.read_text()
    for line in ("Retrying in 1s [Retry 1/5].", "Loading weights: 50%", "an info of ours", "a warning of ours"):
        assert line in text, text


def test_a_message_cannot_drive_the_terminal(tmp_path):
    log = tmp_path / "job.log"
    error = InputFormatError("x.tsv", 1, "row \x1b[2Jcleared")
    failures.write_record(log, rule="glue_table", wildcards={}, error=error, bug=False)
    text = failures.block("glue_table", {}, [str(log)], failures.read_record(log))
    assert "\x1b" not in text and "row ?[2Jcleared" in text
