"""One run at a time per results folder (workflow_scripts/runtime/results_lock.py), across working directories.

Unit tests contend for the lock from two processes; the end-to-end tests start real Snakemake
processes from different working directories on one results folder: a tiny Snakefile wired like
the real one, and the real workflow (its DAG only: the second run must stop before any job).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from support.paths import REPO
from workflow_scripts.runtime import results_lock
from workflow_scripts.runtime.results_lock import ResultsInUseError, acquire, lock_path, release

HOLDER = r"""
import sys
sys.path.insert(0, sys.argv[2])
from workflow_scripts.runtime.results_lock import acquire
acquire(sys.argv[1])
print("held", flush=True)
sys.stdin.readline()  # hold until the test closes stdin (or kills this process)
"""


def _hold(results: Path, cwd: Path) -> subprocess.Popen:
    """A second process holding the lock of ``results``, started from ``cwd``."""
    cwd.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(results), str(REPO)], cwd=cwd,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


@pytest.fixture
def no_locks_left():
    yield
    for fd in results_lock._HELD.values():
        os.close(fd)
    results_lock._HELD.clear()


def test_a_second_process_is_told_who_holds_the_folder_until_the_first_exits(tmp_path, no_locks_left):
    results = tmp_path / "shared-results"
    holder = _hold(results, tmp_path / "clone-a")
    try:
        with pytest.raises(ResultsInUseError) as caught:
            acquire(results)
        message = str(caught.value)
        assert f"results folder '{results}' is in use" in message
        assert f"pid {holder.pid}" in message and f"host {os.uname().nodename}" in message
        assert f"working directory {tmp_path / 'clone-a'}" in message
        assert "running since 20" in message
        assert "Wait for that run to finish" in message and "--config results=OTHER_FOLDER" in message
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0
    assert acquire(results) == lock_path(results)
    record = results_lock.parse_record(lock_path(results).read_text())
    assert record["pid"] == str(os.getpid()) and record["directory"] == os.getcwd()
    release(results)
    assert lock_path(results).read_text() == "", "a released lock must not name its last holder"
    # Released, so another process can take it again.
    holder = _hold(results, tmp_path / "clone-b")
    holder.stdin.close()
    holder.wait(timeout=30)


def test_a_killed_holder_leaves_no_stale_lock(tmp_path, no_locks_left):
    results = tmp_path / "results"
    holder = _hold(results, tmp_path)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    assert str(holder.pid) in lock_path(results).read_text(), "the killed run's record stays behind"
    assert acquire(results) == lock_path(results)
    assert results_lock.parse_record(lock_path(results).read_text())["pid"] == str(os.getpid())


def test_a_holder_that_has_not_written_its_record_yet(tmp_path, monkeypatch, no_locks_left):
    import fcntl

    monkeypatch.setattr(results_lock, "RECORD_WAIT_S", 0.1)
    results = tmp_path / "results"
    results.mkdir()
    fd = os.open(lock_path(results), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another descriptor: to flock, another holder
        with pytest.raises(ResultsInUseError, match="has not recorded who it is"):
            acquire(results)
    finally:
        os.close(fd)


def test_the_same_process_may_acquire_twice_and_release_is_harmless(tmp_path, no_locks_left):
    results = tmp_path / "results"
    release(results)  # nothing held, no folder: nothing happens
    assert acquire(results) == acquire(results) == lock_path(results)
    assert len(results_lock._HELD) == 1
    release(results)
    release(results)
    assert results_lock._HELD == {}
    assert stat_mode(lock_path(results)) == 0o666 & ~current_umask()


def test_on_start_locks_only_in_the_main_process_of_a_real_run(tmp_path, no_locks_left):
    for flags in ({"remote_exec": True}, {"subprocess_exec": True}, {"dryrun": True}):
        assert results_lock.on_start(SimpleNamespace(**flags), tmp_path / "skipped") is None
    assert not (tmp_path / "skipped").exists()
    main = SimpleNamespace(remote_exec=False, subprocess_exec=False, dryrun=False)
    assert results_lock.on_start(main, tmp_path / "results") == lock_path(tmp_path / "results")


def test_a_file_system_without_locks_warns_and_goes_on(tmp_path, monkeypatch, no_locks_left):
    import errno
    import fcntl

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    warnings = []
    assert acquire(tmp_path / "results", warn=warnings.append) is None
    assert len(warnings) == 1 and "cannot lock" in warnings[0]


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# End to end ---------------------------------------------------------------------------------

# Wired like the real Snakefile's handlers; its one job waits for a file the test creates, so
# the first run is held mid-run for as long as the test needs.
TINY_SNAKEFILE = """
import sys
sys.path.insert(0, {repo!r})

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from workflow_scripts.runtime import results_lock
from workflow_scripts.core.errors import AtlasError

RESULTS = config["results"]


onstart:
    try:
        results_lock.on_start(workflow, RESULTS, warn=logger.warning)
    except AtlasError as error:
        raise WorkflowError(str(error)) from None


onsuccess:
    results_lock.release(RESULTS)


onerror:
    results_lock.release(RESULTS)


rule all:
    input: f"{{RESULTS}}/done.txt"


rule wait_for_go:
    output: f"{{RESULTS}}/done.txt"
    shell: "touch {{RESULTS}}/started; while [ ! -e {{RESULTS}}/go ]; do sleep 0.05; done; touch {{output}}"
"""


def _snakemake(snakefile: Path, workdir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile), "--directory", str(workdir),
            "--cores", "1", *args]


def test_two_snakemake_runs_from_different_directories_on_one_results_folder(tmp_path):
    snakefile = tmp_path / "Snakefile"
    snakefile.write_text(TINY_SNAKEFILE.format(repo=str(REPO)))
    results = tmp_path / "shared-results"
    config = ["--config", f"results={results}"]
    first_dir, second_dir = tmp_path / "clone-a", tmp_path / "clone-b"
    first_dir.mkdir()
    second_dir.mkdir()
    first = subprocess.Popen(_snakemake(snakefile, first_dir, *config), cwd=first_dir,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 120
        while not (results / "started").exists() and first.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert (results / "started").exists(), first.communicate(timeout=30)[0][-3000:]

        second = subprocess.run(_snakemake(snakefile, second_dir, *config), cwd=second_dir,
                                capture_output=True, text=True, timeout=120)
        log = second.stdout + second.stderr
        assert second.returncode != 0, log[-3000:]
        assert f"results folder '{results}' is in use" in log, log[-3000:]
        assert f"pid {first.pid}" in log and f"working directory {first_dir}" in log
        assert "Wait for that run to finish" in log
        locks = second_dir / ".snakemake" / "locks"
        assert not locks.exists() or not any(locks.iterdir()), "the refused run must leave no Snakemake lock"
    finally:
        (results / "go").touch()
        output = first.communicate(timeout=120)[0]
    assert first.returncode == 0, output[-3000:]
    # onsuccess released it: the next run, from any directory, may take it.
    assert lock_path(results).read_text() == ""


@pytest.mark.e2e
def test_the_real_workflow_stops_before_any_job_when_its_results_folder_is_in_use(tmp_path):
    from support.mirror import write_mirror

    work = tmp_path / "clone"
    work.mkdir()
    model = tmp_path / "model"  # a model folder in name only: the second run stops before loading it
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "bert"}')
    (model / "vocab.txt").write_text("[PAD]\n")  # and a tokenizer, which the config checks ask of a model folder
    results = tmp_path / "shared-results"
    config = {"mirror": str(write_mirror(tmp_path / "mirror")), "offline": True, "results": str(results),
              "study": {"models": ["tiny"], "tasks": ["cola"], "treebanks": [], "wiki": False, "glove": False},
              "models": {"tiny": {"path": str(model), "max_length": 32}}}
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    command = _snakemake(REPO / "Snakefile", work, "--configfile", str(work / "tiny.yaml"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    holder = _hold(results, tmp_path / "other-clone")
    try:
        result = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=300, env=env)
        # A dry run only reads: it is not refused.
        dry = subprocess.run([*command, "--dry-run"], cwd=work, capture_output=True, text=True, timeout=300, env=env)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    log = result.stdout + result.stderr
    assert result.returncode != 0, log[-3000:]
    assert f"results folder '{results}' is in use" in log and f"pid {holder.pid}" in log, log[-3000:]
    assert [p.name for p in results.iterdir()] == [".atlas.lock"], "no job may have run"
    assert dry.returncode == 0 and "extract_attention" in dry.stdout, (dry.stdout + dry.stderr)[-3000:]
