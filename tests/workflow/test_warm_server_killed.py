"""A warm server killed mid-run (by a user who found it by its name in ps, or by the out-of-memory killer): the job in
flight fails with a message that says what happened and what to do, and one plain run repairs the results folder,
whose tables then equal those of a run that was never interrupted."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.paths import REPO
from support.workflow_runs import copy_study, offline_env, snakemake, snakemake_command

pytestmark = pytest.mark.e2e

spec = importlib.util.spec_from_file_location("compare_tables", REPO / "tools" / "compare_tables.py")
compare_tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_tables)

WALL_CLOCKS = ("seconds", "train_seconds", "wall_time_s")


def processes_named(prefix: str, folder: Path) -> list[int]:
    """The processes whose command line (as ps shows it: process_title.py) starts with ``prefix`` and that run in
    ``folder`` (the study's: never another run's, of another test or of another session on the machine)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if ((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").startswith(prefix)
                        and Path(os.readlink(entry / "cwd")) == folder.resolve()):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the processes by name in /proc (Linux)")
def test_a_killed_warm_server_fails_the_job_in_flight_and_one_plain_run_repairs(tiny_study, tmp_path):
    pytest.importorskip("setproctitle")
    own = copy_study(tiny_study, tmp_path / "study")
    parts = sorted((own / "results" / "analysis" / "surface").glob("*/*/head_diagnostics.csv"))
    assert parts
    # The parts and the table they make (a missing part alone is not rebuilt while its table is there): these jobs
    # and what reads the table run again, warm.
    for part in [*parts, own / "results" / "tables" / "head_diagnostics.csv"]:
        part.unlink()
    run = subprocess.Popen(snakemake_command(own), cwd=own, env=offline_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 300
        # A job in flight in a warm copy (the run's first jobs may start cold, while the server imports).
        while not [pid for pid in processes_named("atlas ", own) if "(waiting for its warm copy" in title(pid)]:
            assert run.poll() is None and time.time() < deadline, "no job of the run started warm"
            time.sleep(0.01)
        servers = processes_named("atlas warm server", own)
        assert servers, "the job runs, but no warm server is named"
        for pid in servers:
            os.kill(pid, signal.SIGKILL)
        output, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode != 0, output[-3000:]
    assert "the warm server of this run" in output and "ended before this job did; run snakemake again" in output, \
        output[-3000:]
    repaired = snakemake(own)
    assert repaired.returncode == 0, repaired.stderr[-3000:]
    verdicts = compare_tables.compare_folders(tiny_study / "results", own / "results", ignore=WALL_CLOCKS)
    assert verdicts and all(v in ("identical", "equal") for v in verdicts.values()), verdicts
