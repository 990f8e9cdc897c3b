"""Jobs that start warm: a local run's jobs are forked from a process that has imported the heavy libraries once.

Every rule runs ``rules/scripts/entry.py`` in a new Python process, and most of a small study's time was those
processes starting: ``import torch`` takes about 2 s on the 2-core machine and transformers' model code 3-4 s more,
paid again by each of the dozens of jobs that load a model, and pandas with pyarrow 0.5 s by every job. So the main
Snakemake process of a local run (the Snakefile's ``onstart``) starts a **warm server**
(``workflow_scripts/runtime/warm_server.py``) that imports them once and listens on a Unix socket in a private folder
(mode 0700), named by ``ATLAS_WARM_START`` in the environment the jobs inherit. A job's ``entry.py`` hands itself to
the server (:func:`run_warm`): the script file Snakemake wrote for it, its working directory, environment and
standard streams. The server forks a copy of itself that runs that script as the job's own process would, and tells
the job how the copy ended; the job's process ends the same way.

Wherever that cannot hold, the job runs as before, in its own process: no server (dry runs; cluster runs, whose jobs
are each a Snakemake of their own on a compute node; ``--use-conda``), the server not listening yet or handing over
to its next stage, another Python than the server's, or ``ATLAS_WARM_START=off`` in the environment. docs/
contributing.md says what keeps a warm job the same as a cold one.
"""

from __future__ import annotations

import atexit
import functools
import getpass
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ENV = "ATLAS_WARM_START"
PREFIX = "atlas-warm-"  # the servers' folders in the temporary directory
# What Snakemake sets to a job's thread count in the job's environment (snakemake/shell.py).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
_HEADER = struct.Struct("!I")
# The server's imports cost about 7 s of CPU (2-core machine), as much as a few jobs' own: a run of fewer jobs (a
# repaired table, a changed threshold) starts them cold, each importing what it needs, and leaves the cores to them,
# unless two or more of them would import torch (server_pays).
MIN_JOBS = 8
in_copy = False  # True in a forked copy of the server: its entry.py runs the job itself


# --- the job's side ---------------------------------------------------------------------------------------------

def run_warm(script: str, title: str = "") -> None:
    """Run this job (its ``script``) in a copy of the warm server and exit as the copy ends; return at once, for
    the caller to run the job itself, where there is no server to take it or this process is such a copy. The copy
    is named ``title`` in ps and top (process_title.py), and this process, which waits for it, says so."""
    address = os.environ.get(ENV, "")
    if in_copy or address in ("", "off"):
        return
    job = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        job.connect(address)
        send(job, {"script": str(Path(script).resolve()), "cwd": os.getcwd(), "env": dict(os.environ),
                    "executable": sys.executable, "title": title}, fds=[0, 1, 2])
        started = receive(job)
    except (OSError, ValueError):  # not listening yet, handing over, or gone: this job starts cold
        job.close()
        return
    if "started" not in started:  # refused: another Python (a conda env's) runs the job itself
        job.close()
        return
    if title:
        from .process_title import set_title

        set_title(f"{title} (waiting for its warm copy, pid {started['started']})")
    try:
        reply = receive(job)
    except (OSError, ValueError):
        print(f"the warm server of this run ({address}) ended before this job did; run snakemake again (set "
              f"{ENV}=off to start every job in a process of its own)", file=sys.stderr)
        sys.exit(1)
    if "signal" in reply:  # end as the copy ended (killed, e.g. out of memory), so Snakemake reports the same
        if reply["signal"] not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler to reset
            signal.signal(reply["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), reply["signal"])
    sys.exit(reply.get("exit", 1))


# --- the main Snakemake process's side --------------------------------------------------------------------------

def server_pays(workflow: Any) -> bool:
    """Whether this run's jobs are worth the server's imports (its DAG, built before ``onstart``): ``MIN_JOBS`` or
    more, or two or more whose rule's environment holds torch, each of which would import it (seconds apiece). True
    where Snakemake's DAG cannot tell."""
    try:
        rules = [job.rule for job in workflow.dag.needrun_jobs()]
    except (AttributeError, TypeError):  # another Snakemake's internals
        return True
    envs = Path(workflow.basedir) / "envs"
    return len(rules) >= MIN_JOBS or sum(_holds_torch(envs / Path(str(rule.conda_env)).name) for rule in rules) >= 2


@functools.cache
def _holds_torch(env_file: Path) -> bool:
    """Whether a rule's environment (``conda:``, one of envs/*.yaml) installs torch: one of its dependencies (conda's
    or pip's) is the package torch, whatever its comments say."""
    import yaml

    try:
        dependencies = yaml.safe_load(env_file.read_text(encoding="utf-8")).get("dependencies") or []
    except (OSError, AttributeError, yaml.YAMLError):
        return False
    names = [entry for item in dependencies for entry in (item.get("pip", []) if isinstance(item, dict) else [item])]
    return any(re.match(r"(py)?torch([=<>!~ \[]|$)", str(name)) for name in names)


def start(repo: str | os.PathLike[str], offline: bool, pays: bool = True) -> subprocess.Popen | None:
    """Start the warm server of this run (the Snakefile's ``onstart``: local runs only) and name its socket in
    ``ATLAS_WARM_START`` for the jobs to come; :func:`stop` ends it, at the latest when this process exits. None
    where it is turned off or cannot run (not Linux), or would not pay (``pays``: :func:`server_pays`)."""
    if os.environ.get(ENV) == "off" or not sys.platform.startswith("linux") or not pays:
        return None
    base = tempfile.gettempdir() if len(tempfile.gettempdir()) < 60 else "/tmp"  # a socket's path: 107 bytes at most
    _sweep(Path(base))
    folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))  # mode 0700: only this user reaches the socket
    env = dict(os.environ)
    if offline:  # as entrypoints.run sets it for each job of an offline study
        env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    # One thread per library in the servers (OpenBLAS starts its pool when it loads); each copy sets its job's.
    env.update({name: "1" for name in THREAD_VARIABLES})
    code = (f"import sys; sys.path.insert(0, {str(repo)!r}); "
            "from workflow_scripts.runtime.warm_server import serve; serve()")
    address = folder / "jobs.sock"
    server = subprocess.Popen([sys.executable, "-c", code, str(address), str(os.getpid())], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ[ENV] = str(address)
    atexit.register(stop, server)  # the Snakefile calls stop() at the end of a run; this, if it could not
    return server


def _sweep(base: Path) -> None:
    """Remove the folders of earlier runs' servers that were killed with their run (no stop(), e.g. SIGKILL)."""
    for folder in base.glob(f"{PREFIX}*"):
        try:
            if folder.owner() != getpass.getuser():
                continue
            pids = [int(f.read_text()) for f in folder.glob("stage-*.pid")]
        except (OSError, ValueError, KeyError):
            continue
        if not any(alive(pid) for pid in pids):
            shutil.rmtree(folder, ignore_errors=True)


def stop(server: subprocess.Popen | None = None) -> None:
    """End this run's warm servers (every stage) and remove their folder; again: nothing."""
    address = os.environ.pop(ENV, "")
    if address in ("", "off"):
        return
    folder = Path(address).parent
    for pid_file in folder.glob("stage-*.pid"):
        try:
            os.kill(int(pid_file.read_text()), signal.SIGTERM)
        except (OSError, ValueError):
            pass
    if server is not None:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    for path in folder.iterdir() if folder.is_dir() else ():
        path.unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        pass


def alive(pid: int) -> bool:
    """Whether the process ``pid`` exists (the main Snakemake process, a server stage)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


# --- messages: a length, then JSON; file descriptors ride with the first bytes -----------------------------------

def send(connection: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    body = json.dumps(message).encode()
    data = _HEADER.pack(len(body)) + body
    if fds:
        data = data[socket.send_fds(connection, [data], fds):]
    connection.sendall(data)


def receive(connection: socket.socket, with_fds: bool = False):
    """One message (and the file descriptors sent with it)."""
    fds: list[int] = []
    if with_fds:
        data, fds, _, _ = socket.recv_fds(connection, _HEADER.size, 3)
    else:
        data = connection.recv(_HEADER.size)
    while len(data) < _HEADER.size:
        more = connection.recv(_HEADER.size - len(data))
        if not more:
            raise ValueError("the connection closed mid-message")
        data += more
    size = _HEADER.unpack(data)[0]
    body = b""
    while len(body) < size:
        more = connection.recv(size - len(body))
        if not more:
            raise ValueError("the connection closed mid-message")
        body += more
    message = json.loads(body)
    return (message, fds) if with_fds else message
