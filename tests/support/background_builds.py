"""Shared whole-DAG studies, each built once per test session by one thread when a test first asks for it
(tests/conftest.py's ``SHARED_STUDIES`` and their fixtures).

Queuing them all at the session's start, to build them while the unit tests ran, did not pay on the 2-core
machine: in the one full run with it (2026-11-28) the suite took 24 min (15.6 the day before, without it), the first
test waiting 773 s for the studies' setup, which ran before it. A study is the same real ``snakemake`` run
(``support.workflow_runs.snakemake_command``, offline) either way; a session that stops early ends the run in
progress."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .workflow_runs import offline_env, snakemake_command

NICENESS = 10  # the unit tests running meanwhile go first


@dataclass
class Build:
    """One study's ``snakemake`` run: its folder, its console (two files beside the folder, never in it: the tests
    copy the folder), its process once started, and when it is done."""

    work: Path
    args: tuple[str, ...] = ()
    configfile: str = "tiny.yaml"
    process: subprocess.Popen | None = None
    done: threading.Event = field(default_factory=threading.Event)
    stopped: bool = False

    @property
    def console_files(self) -> tuple[Path, Path]:
        return self.work.with_name(self.work.name + ".stdout"), self.work.with_name(self.work.name + ".stderr")

    def run(self) -> None:
        stdout, stderr = self.console_files
        try:
            if self.stopped:
                return
            command = snakemake_command(self.work, *self.args, configfile=self.configfile)
            with stdout.open("w") as out, stderr.open("w") as err:
                self.process = subprocess.Popen(
                    ["nice", "-n", str(NICENESS), *command], cwd=self.work, stdout=out, stderr=err, text=True,
                    env=offline_env(), start_new_session=True)
                self.process.wait()
        finally:
            self.done.set()

    def result(self) -> subprocess.CompletedProcess:
        """Waits for the run to end; its exit status and console as ``support.workflow_runs.snakemake`` gives them."""
        self.done.wait()
        stdout, stderr = self.console_files
        returncode = self.process.returncode if self.process else -1
        return subprocess.CompletedProcess(self.process.args if self.process else [], returncode,
                                           stdout.read_text() if stdout.exists() else "",
                                           stderr.read_text() if stderr.exists() else "")

    def stop(self) -> None:
        """Ends a run still going (a session that stopped early): Snakemake, its jobs and its warm servers."""
        self.stopped = True
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.process.pid, signal.SIGKILL)


class BuildQueue:
    """Studies built one after the other by one background thread, in the order they were queued."""

    def __init__(self) -> None:
        self.builds: dict[str, Build] = {}
        self._order: list[Build] = []
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="background studies", daemon=True)
        self._thread.start()

    def queue(self, name: str, build: Build) -> Build:
        with self._wake:
            self.builds[name] = build
            self._order.append(build)
            self._wake.notify()
        return build

    def _work(self) -> None:
        while True:
            with self._wake:
                while not self._order and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                build = self._order.pop(0)
            build.run()
            if self._closed:
                return

    def close(self) -> None:
        """Stops queuing, ends the run in progress (a session that stopped early), and marks every study not built
        as done, unbuilt."""
        with self._wake:
            self._closed = True
            pending, self._order = self._order, []
            self._wake.notify()
        for build in self.builds.values():
            build.stop()
        self._thread.join(timeout=60)
        for build in self.builds.values():
            build.stop()  # one that started while the first stop ran
        for build in pending:
            build.done.set()
