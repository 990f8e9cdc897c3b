"""The warm server of a local run (``workflow_scripts/runtime/warm_start.py`` starts it and hands it the jobs).

It comes up in stages (``IMPORT_STAGES``; not the study's stages, ``core.stages.STAGES``), so that a run's first
jobs need not wait for the slowest imports: the first stage imports pandas, pyarrow and the entry points (a second)
and starts serving; meanwhile a fork of it imports torch and transformers and then takes the socket over, and a fork
of that one the rest. A stage that has handed the socket over serves the jobs already sent to it, then ends. For each
job a stage forks a copy that becomes the job (:func:`_run_copy`) and tells the job's process how the copy ended.

What keeps a warm job the same as a cold one: before it runs the script, the copy takes the job's environment,
working directory and standard streams, applies the thread count Snakemake gives the job (``OMP_NUM_THREADS``) to
torch and the BLAS libraries, and draws Python's and numpy's global random states afresh, as a new process does. The
server runs with the environment the jobs get (with a study's ``offline`` set in it: huggingface_hub reads it when
imported) and one thread per library, and forks from its one thread. A job's process that is killed (Snakemake
cancelling it, Ctrl-C) has its copy killed by the server, which watches the job's connection; a copy dies with its
server, and the servers end with the run (``onsuccess``, ``onerror``) or as soon as the main Snakemake process is
gone.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import sys
from pathlib import Path

from . import warm_start
from .process_title import set_title
from .warm_start import alive, receive, send

# What the workflow's jobs import, in the order the server takes it on (each job's log ends with the heavy libraries
# it imported): what every job reads with, then what a model's jobs need, then the analyses' and figures' libraries.
# Each stage's name is its process's name in ps and top ("atlas warm server: torch"; process_title.py).
IMPORT_STAGES = (
    # snakemake.script: every job's script starts with Snakemake's preamble, which unpickles the job's object with it
    # (0.1 s a job, where the copy imports it itself).
    ("tables", ("snakemake.script", "pandas", "pyarrow.parquet", "yaml", "workflow_scripts.entrypoints")),
    ("torch", ("torch", "transformers.modeling_utils", "transformers.models.auto.modeling_auto",
               "transformers.models.auto.tokenization_auto")),
    ("analyses", ("sklearn.cluster", "sklearn.linear_model", "scipy.stats", "matplotlib.pyplot", "spacy")),
)
SERVER_TITLE = "atlas warm server"


# --- the server -------------------------------------------------------------------------------------------------

def serve() -> None:
    """The warm server: for each of IMPORT_STAGES, import its modules and take the socket ``sys.argv[1]`` over; each
    stage but the last forks the next one before serving. A stage ends on SIGTERM, once it has handed the socket over
    and served its jobs, or when the main Snakemake process (``sys.argv[2]``) is gone."""
    address, main_pid = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the jobs and Snakemake; Snakemake stops this one
    for number, (name, modules) in enumerate(IMPORT_STAGES):
        (Path(address).parent / f"stage-{number}.pid").write_text(str(os.getpid()))  # for stop()
        set_title(f"{SERVER_TITLE}: {name}", short=f"warm {name}")
        _preload(modules)
        listener = _take_over(address, number)
        _parent_death_signal(0)  # serving now: it ends by itself (see the class), not with the stage before
        if number + 1 < len(IMPORT_STAGES) and os.fork() == 0:
            listener.close()  # the next stage: it listens on a socket of its own once its imports are done
            _parent_death_signal(signal.SIGKILL)  # stopped, or ended with its run, while it imports: so is this
            continue
        _Stage(listener, address, number, main_pid).serve()
        return


def _preload(modules: tuple[str, ...]) -> None:
    import importlib
    import pkgutil

    for name in modules:
        try:
            module = importlib.import_module(name)
        except Exception:  # not installed here (an optional annotator): the jobs that use it import it
            continue
        if name == "workflow_scripts.entrypoints":
            for entry in pkgutil.iter_modules(module.__path__):
                importlib.import_module(f"{name}.{entry.name}")


def _take_over(address: str, number: int) -> socket.socket:
    """Listen on this stage's socket and point the run's address (a symbolic link) at it."""
    own = f"{address}.{number}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(own)
    listener.listen(64)
    link = f"{address}.link-{number}"
    os.symlink(os.path.basename(own), link)
    os.replace(link, address)
    return listener


class _Stage:
    """One stage's serving loop: a copy per job; the job's connection says when to kill it and is told how it ended."""

    def __init__(self, listener: socket.socket, address: str, number: int, main_pid: int) -> None:
        self.listener, self.address, self.number, self.main_pid = listener, address, number, main_pid
        self.jobs: dict[socket.socket, int] = {}  # a job's connection -> its copy's pid
        self.stopping = False
        self.wake_read, wake_write = os.pipe()  # a copy's end wakes select at once
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        self.wake_write = wake_write
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._stop)

    def _stop(self, *_) -> None:
        self.stopping = True

    def serve(self) -> None:
        self._loop()
        if not alive(self.main_pid):  # killed with no stop(): the run's folder goes with its last server
            shutil.rmtree(Path(self.address).parent, ignore_errors=True)

    def _loop(self) -> None:
        while not self.stopping and alive(self.main_pid):
            if self.listener is not None and not self._current():
                self._hand_over()
            if self.listener is None and not self.jobs:
                break
            sources = [self.wake_read, *self.jobs] + ([self.listener] if self.listener is not None else [])
            try:
                ready, _, _ = select.select(sources, [], [], 0.5)
            except InterruptedError:
                continue
            for source in ready:
                if source is self.listener:
                    self._accept()
                elif source == self.wake_read:
                    os.read(self.wake_read, 4096)
                else:  # the job's process closed its end: it was killed, and its copy goes with it
                    _kill(self.jobs.pop(source))
                    source.close()
            self._reap()
        for pid in self.jobs.values():
            _kill(pid)

    def _current(self) -> bool:
        try:
            return os.readlink(self.address) == os.path.basename(f"{self.address}.{self.number}")
        except OSError:
            return False

    def _hand_over(self) -> None:
        """A later stage has the socket: take the jobs already waiting on this one, then close it."""
        self.listener.setblocking(False)
        while True:
            try:
                self._accept()
            except BlockingIOError:
                break
        self.listener.close()
        Path(f"{self.address}.{self.number}").unlink(missing_ok=True)
        self.listener = None

    def _accept(self) -> None:
        job, _ = self.listener.accept()
        job.setblocking(True)
        try:
            request, fds = receive(job, with_fds=True)
        except (OSError, ValueError):
            job.close()
            return
        if request.get("executable") != sys.executable:  # a job in another environment (conda) runs itself
            send(job, {"refused": "another Python"})
            job.close()
            for fd in fds:
                os.close(fd)
            return
        pid = os.fork()
        if pid == 0:  # the copy: nothing of the server's but its memory
            try:
                signal.set_wakeup_fd(-1)
                for sock in (self.listener, job, *self.jobs):
                    sock.close()
                os.close(self.wake_read)
                os.close(self.wake_write)
                _run_copy(request, fds)
            finally:
                os._exit(1)  # reached only if _run_copy itself failed
        for fd in fds:
            os.close(fd)
        try:
            send(job, {"started": pid})
        except OSError:  # the job's process is gone already
            _kill(pid)
            job.close()
            return
        self.jobs[job] = pid

    def _reap(self) -> None:
        """Tell each job whose copy has ended how it ended."""
        for job, pid in list(self.jobs.items()):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 1 << 8
            if not done:
                continue
            try:
                send(job, {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status)
                      else {"exit": os.WEXITSTATUS(status)})
            except OSError:
                pass
            job.close()
            del self.jobs[job]


def _run_copy(request: dict, fds: list[int]) -> None:
    """In the forked copy: become the job (environment, folder, streams, threads, random states), run its script,
    exit with its status."""
    warm_start.in_copy = True
    if request.get("title"):  # named after its job at once, not after the server it was forked from
        set_title(request["title"])
    _parent_death_signal(signal.SIGKILL)  # a copy ends with its server (killed with the run)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for number in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    _job_threads(int(request["env"].get("OMP_NUM_THREADS") or 0))
    _fresh_random_states()
    sys.argv = [request["script"]]
    code = 0
    try:
        import runpy

        runpy.run_path(request["script"], run_name="__main__")
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
        if not isinstance(end.code, int | None):
            print(end.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    import atexit

    atexit._run_exitfuncs()  # what a job's own process runs at its end (logging's last flush among them)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def _parent_death_signal(number: int) -> None:
    """Linux's parent-death signal: the signal this process gets when its parent ends (0: none)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, number)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _job_threads(threads: int) -> None:
    """The thread counts a cold job's libraries take from Snakemake's OMP_NUM_THREADS & co. when they load."""
    if threads <= 0:
        return
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits  # scikit-learn's dependency: OpenMP and BLAS pools

        threadpool_limits(threads)
    except ImportError:
        pass


def _fresh_random_states() -> None:
    import random

    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


