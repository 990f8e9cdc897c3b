"""What a person sees at the end of a run, through real Snakemake runs: one block per failed job (rule,
message, fix, log; tracebacks only in the logs), a killed run followed by a dry run and a run with no extra
flag, and the closing message of a successful run.

A tiny workflow wired like the real Snakefile's handlers and console (rules/common.smk), run under the real
workstation profile (profiles/default: nolock, show-failed-logs off), whose jobs go through the real entry point
(run()) with entry points of the test's own; and the real workflow on the tiny study for a project error.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.paths import REPO
from workflow_scripts.runtime import failures

pytestmark = pytest.mark.e2e

TINY_SNAKEFILE = """
import sys
sys.path.insert(0, {repo!r})

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from snakemake_interface_executor_plugins.settings import ExecMode
from workflow_scripts.runtime import console, failures, results_lock
from workflow_scripts.runtime.closing_message import on_success
from workflow_scripts.core.errors import AtlasError

RESULTS = config.get("results", "results")

# As rules/common.smk does, but for a table of more than one rule: this workflow's tables are short.
if workflow.exec_mode == ExecMode.DEFAULT:
    console.install(logger, workflow, max_rows=1)


onstart:
    try:
        results_lock.on_start(workflow, RESULTS, warn=logger.warning, note=logger.info)
    except AtlasError as error:
        raise WorkflowError(str(error)) from None


onsuccess:
    results_lock.release(RESULTS)
    if message := on_success(workflow, RESULTS, sys.argv):
        logger.info(message)


onerror:
    results_lock.release(RESULTS)
    if message := failures.report(workflow):
        logger.error(message)


rule all:
    default_target: True
    input: f"{{RESULTS}}/explorer/tiny.html", f"{{RESULTS}}/slow.txt"


rule page:
    output: f"{{RESULTS}}/explorer/{{{{model}}}}.html"
    log: f"{{RESULTS}}/logs/page_{{{{model}}}}.log"
    script: "entry.py"


rule slow:
    output: f"{{RESULTS}}/slow.txt"
    log: f"{{RESULTS}}/logs/slow.log"
    script: "entry.py"


rule unreachable:
    output: f"{{RESULTS}}/data/{{{{task}}}}.txt"
    log: f"{{RESULTS}}/logs/data/{{{{task}}}}.log"
    script: "entry.py"


rule crash:
    output: f"{{RESULTS}}/crash.txt"
    log: f"{{RESULTS}}/logs/crash.log"
    script: "entry.py"
"""

# The jobs' script, entry.py as the workflow's (rules/scripts/entry.py): the real entry point, with the test's
# entry points in place of the workflow's stages.
JOB_SCRIPT = """
import sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})

from workflow_scripts import entrypoints
from workflow_scripts.core.errors import SourceUnavailableError
from workflow_scripts.core.io import atomic_path


def page(smk):
    Path(smk.output[0]).write_text("<html></html>")


def slow(smk):
    hold = Path(smk.output[0]).parents[1] / "hold"  # outside the results folder
    with atomic_path(smk.output[0]) as tmp:
        tmp.write_text("half")
        (hold.parent / "writing").touch()
        while hold.exists():  # the killed run's job stays here; the next one goes through
            time.sleep(0.05)


def unreachable(smk):
    raise SourceUnavailableError(
        f"corpus '{{smk.wildcards.task}}', split 'dev': could not be obtained (no mirror is set).\\n"
        "fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH --cores all")


def crash(smk):
    return {{}}["no such key"]


entrypoints._import_all = lambda: None  # the workflow's stages are not needed here
entrypoints.ENTRY_POINTS.update(page=page, slow=slow, unreachable=unreachable, crash=crash)
entrypoints.run(snakemake)
"""


@pytest.fixture
def tiny(tmp_path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "Snakefile").write_text(TINY_SNAKEFILE.format(repo=str(REPO)))
    (work / "entry.py").write_text(JOB_SCRIPT.format(repo=str(REPO)))
    return work


def _command(work: Path, *args: str) -> list[str]:
    # The real workstation profile, as a run of the real Snakefile from the repository would load it.
    return [sys.executable, "-m", "snakemake", "--snakefile", str(work / "Snakefile"), "--directory", str(work),
            "--workflow-profile", str(REPO / "profiles" / "default"), "--cores", "2", *args]


def _environment(**environ: str) -> dict[str, str]:
    """This process's environment but ATLAS_CONSOLE (the console a person gets by default), and ``environ``."""
    return {**{k: v for k, v in os.environ.items() if k != "ATLAS_CONSOLE"}, **environ}


def _run(work: Path, *args: str, environ: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(_command(work, *args), cwd=work, capture_output=True, text=True, timeout=300,
                          env=_environment(**(environ or {})))


def test_each_failed_job_is_one_block_at_the_end_with_tracebacks_only_in_the_logs(tiny):
    result = _run(tiny, "results/data/cola.txt", "results/crash.txt", "--keep-going")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Traceback" not in output, output
    message = "corpus 'cola', split 'dev': could not be obtained (no mirror is set)."
    assert output.count(message) == 1 and output.count("KeyError") == 1, output
    blocks = output[output.index("2 jobs failed:"):]
    project = blocks[blocks.index("rule unreachable (task=cola) failed:"):]
    assert project.splitlines()[1:4] == [
        f"    {message}",
        "    fix: run from a mirror: snakemake --profile profiles/offline --config mirror=PATH --cores all",
        "    log: results/logs/data/cola.log"], output
    bug = blocks[blocks.index("rule crash failed: an unexpected error, a bug in the workflow:"):]
    assert bug.splitlines()[1] == "    KeyError: 'no such key'" and " in crash" in bug.splitlines()[2]
    assert "    log: results/logs/crash.log" in bug.splitlines()
    # Snakemake shows no job log (show-failed-logs is off): the logs hold the tracebacks.
    assert "Logfile " not in output
    for log, name in (("data/cola.log", "SourceUnavailableError"), ("crash.log", "KeyError")):
        text = (tiny / "results" / "logs" / log).read_text()
        assert "Traceback" in text and name in text, text
    # The blocks end the run but for Snakemake's last lines (its log file, the time, its final error).
    lines = blocks.splitlines()
    after = lines[max(i for i, line in enumerate(lines) if line.startswith("    log: ")) + 1:]
    assert len(after) <= 5 and after[-1] == "At least one job did not complete successfully.", output[-2000:]
    # The console (workflow_scripts/runtime/console.py): the job table as jobs per stage, no CalledProcessError
    # for the script's exit status 1 and no "Error in rule" for a job that recorded its failure (its block at
    # the end says more); Snakemake's log file keeps them all.
    assert "Job stats: 2 jobs, by stage (rule file): unreachable 1, crash 1\n" in output, output
    assert "CalledProcessError" not in output and "Error in rule " not in output, output
    # About 42 lines with Snakemake 9.27.1, most of them its own for each job's start (7-8); the blocks
    # take 10. Snakemake's table would add a line per rule, each CalledProcessError 3, each "Error in rule" 6.
    assert len(output.splitlines()) <= 48, output
    snakemake_log = next((tiny / ".snakemake" / "log").glob("*.snakemake.log")).read_text()
    assert snakemake_log.count("CalledProcessError") == 2 and "Job stats:\njob" in snakemake_log, snakemake_log
    assert snakemake_log.count("Error in rule ") == 2, snakemake_log


def test_atlas_console_full_prints_all_of_snakemakes_output(tiny):
    result = _run(tiny, "results/crash.txt", environ={"ATLAS_CONSOLE": "full"})
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "1 job failed:" in output, output
    assert "Job stats:\njob" in output and output.count("CalledProcessError") == 1, output


def test_a_killed_run_needs_no_unlock_and_its_partial_file_is_removed(tiny):
    results = tiny / "results"
    hold = tiny / "hold"
    hold.touch()
    run = subprocess.Popen(_command(tiny, "results/slow.txt"), cwd=tiny, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not (tiny / "writing").exists() and run.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert (tiny / "writing").exists(), run.communicate(timeout=30)[0][-3000:]
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)  # Snakemake and its job, as a crash or the OOM killer would
        run.communicate(timeout=30)
    assert run.returncode == -signal.SIGKILL
    partials = list(results.glob(".slow.txt.*.partial"))
    assert len(partials) == 1 and not (results / "slow.txt").exists()
    hold.unlink()

    dry = _run(tiny, "-n")
    dry_output = dry.stdout + dry.stderr
    assert dry.returncode == 0 and "cannot be locked" not in dry_output and "--unlock" not in dry_output, dry_output
    assert "Job stats:\njob" in dry_output, dry_output  # a dry run lists its jobs per rule, console or not
    again = _run(tiny)  # no --unlock, no other flag
    output = again.stdout + again.stderr
    assert again.returncode == 0, output[-3000:]
    assert "removed 1 partial file(s)" in output and not list(results.glob(".*.partial"))
    assert (results / "slow.txt").read_text() == "half"


def test_a_run_of_the_whole_study_ends_with_the_pages_and_the_report_command(tiny):
    (tiny / "my.yaml").write_text("results: out\n")
    single = _run(tiny, "out/explorer/tiny.html", "--configfile", str(tiny / "my.yaml"))
    assert single.returncode == 0 and "--report" not in single.stdout + single.stderr, single.stderr[-3000:]
    whole = _run(tiny, "--configfile", str(tiny / "my.yaml"), "--config", "unused=1")
    output = whole.stdout + whole.stderr
    assert whole.returncode == 0, output[-3000:]
    report = (f"snakemake --report report.html --snakefile {tiny / 'Snakefile'} --directory {tiny} "
              f"--workflow-profile {REPO / 'profiles' / 'default'} --configfile {tiny / 'my.yaml'} --config unused=1")
    # (this workflow's page only: its _index.html, where a study has one, is named after it: test_closing_message.py)
    closing = ["Head explorer (open a page in a browser):", "  out/explorer/tiny.html",
               "Report (every figure and table in one HTML file):", f"  {report}"]
    lines = output.splitlines()
    start = lines.index(closing[0])
    assert lines[start:start + 4] == closing, output[-3000:]


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_bert) -> Path:
    from support.mirror import write_tiny_study

    return write_tiny_study(tmp_path_factory.mktemp("study"), tiny_bert)


def test_the_real_workflow_ends_a_project_error_with_its_block(study):
    dev = next(study.glob("mirror/**/CoLA/dev.tsv"))
    dev.write_bytes(dev.read_bytes().replace(b"e", b"\xe9", 1))  # one Latin-1 byte: not UTF-8
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory",
               str(study), "--configfile", str(study / "tiny.yaml"), "--cores", "1", "results/data/cola/dev.parquet"]
    result = subprocess.run(command, cwd=study, capture_output=True, text=True, timeout=600,
                            env=_environment(HF_HUB_OFFLINE="1"))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Traceback" not in output and output.count("is not valid UTF-8") == 1, output[-4000:]
    assert "CalledProcessError" not in output, output[-4000:]  # rules/common.smk installed the console
    block = output[output.index("1 job failed:"):].splitlines()
    assert block[1] == "rule glue_table (task=cola, split=dev) failed:", output[-3000:]
    assert f"{dev}" in block[2] and "re-encode the file as UTF-8" in block[2]
    assert block[3] == "    log: results/logs/data/cola_dev.log"
    log = (study / "results" / "logs" / "data" / "cola_dev.log").read_text()
    assert "Traceback" in log and "InputEncodingError" in log
    assert failures.read_record(study / "results" / "logs" / "data" / "cola_dev.log")["bug"] is False
