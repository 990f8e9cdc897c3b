"""Warm starts (workflow_scripts/runtime/warm_start.py, warm_server.py): a job handed to the run's server runs in a
forked copy exactly as in a process of its own (exit status, streams, environment, folder, killing signal), a killed
job's copy dies with it, the stages hand the socket over without losing a job, and where there is no server to take
a job it runs in its own process. The server here imports small modules only; the whole DAG runs warm in the
end-to-end tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.paths import REPO
from workflow_scripts.runtime import warm_start

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="warm starts are Linux-only")

CLIENT = ("import sys; sys.path.insert(0, {repo!r}); from workflow_scripts.runtime.warm_start import run_warm; "
          "run_warm(sys.argv[1]); print('ran in its own process'); exec(open(sys.argv[1]).read())")


def start_server(folder: Path, stages: tuple) -> tuple[subprocess.Popen, str]:
    """A server with small ``stages`` (as warm_start.start runs the real one), serving once its last stage listens."""
    address = str(folder / "jobs.sock")
    code = (f"import sys; sys.path.insert(0, {str(REPO)!r}); from workflow_scripts.runtime import warm_server; "
            f"warm_server.IMPORT_STAGES = {stages!r}; warm_server.serve()")
    server = subprocess.Popen([sys.executable, "-c", code, address, str(os.getpid())])
    deadline = time.time() + 30
    while not (os.path.islink(address) and os.readlink(address).endswith(f".{len(stages) - 1}")):
        assert time.time() < deadline and server.poll() is None, "the server did not come up"
        time.sleep(0.05)
    return server, address


@pytest.fixture
def server(tmp_path, monkeypatch):
    folder = tmp_path / "server"
    folder.mkdir()
    process, address = start_server(folder, (("json", ("json",)), ("csv", ("csv",))))
    monkeypatch.setenv(warm_start.ENV, address)
    yield address
    warm_start.stop(process)


def job(tmp_path: Path, code: str, address: str | None, **env: str) -> subprocess.CompletedProcess:
    script = tmp_path / "job.py"
    script.write_text(code)
    environment = {k: v for k, v in os.environ.items() if k != warm_start.ENV}
    environment.update(env, **({warm_start.ENV: address} if address else {}))
    return subprocess.run([sys.executable, "-c", CLIENT.format(repo=str(REPO)), str(script)], cwd=tmp_path,
                          capture_output=True, text=True, env=environment, timeout=60)


def test_a_warm_job_has_the_status_streams_environment_and_folder_of_its_own_process(server, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    code = ("import os, sys\nprint('out', os.getcwd(), os.environ['ONLY_THIS_JOB'], 'csv' in sys.modules)\n"
            "print('err', file=sys.stderr)\nsys.exit(3)\n")
    script = work / "job.py"
    script.write_text(code)
    environment = {**os.environ, "ONLY_THIS_JOB": "yes"}
    result = subprocess.run([sys.executable, "-c", CLIENT.format(repo=str(REPO)), str(script)], cwd=work,
                            capture_output=True, text=True, env=environment, timeout=60)
    assert result.returncode == 3, result.stderr
    # Run by the server's copy (its last stage had imported csv), not by the job's own process.
    assert result.stdout.split() == ["out", str(work), "yes", "True"] and result.stderr.strip() == "err"


def test_a_copy_killed_by_a_signal_ends_its_job_by_the_same_signal(server, tmp_path):
    result = job(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", server)
    assert result.returncode == -signal.SIGKILL


def test_a_killed_job_takes_its_copy_with_it(server, tmp_path):
    marker = tmp_path / "copy.pid"
    script = tmp_path / "job.py"
    script.write_text(f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
    environment = {**os.environ, warm_start.ENV: server}
    client = subprocess.Popen([sys.executable, "-c", CLIENT.format(repo=str(REPO)), str(script)], env=environment)
    deadline = time.time() + 30
    while not marker.exists() or not marker.read_text():
        assert time.time() < deadline, "the job did not start"
        time.sleep(0.05)
    copy = int(marker.read_text())
    assert copy != client.pid  # the job runs in the server's copy
    client.kill()
    client.wait()
    deadline = time.time() + 5
    while warm_start.alive(copy) and time.time() < deadline:
        time.sleep(0.05)
    assert not warm_start.alive(copy) or _zombie(copy), "the copy outlived its killed job"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def test_with_no_server_or_another_python_the_job_runs_in_its_own_process(tmp_path):
    own = job(tmp_path, "print('done')\n", None)
    assert own.returncode == 0 and own.stdout.split() == ["ran", "in", "its", "own", "process", "done"]
    gone = job(tmp_path, "print('done')\n", str(tmp_path / "no-such.sock"))
    assert gone.returncode == 0 and "own process" in gone.stdout
    off = job(tmp_path, "print('done')\n", "off")
    assert off.returncode == 0 and "own process" in off.stdout


def test_a_run_of_few_jobs_starts_no_server_unless_two_of_them_would_import_torch(tmp_path, monkeypatch):
    monkeypatch.delenv(warm_start.ENV, raising=False)
    assert warm_start.start(REPO, offline=True, pays=False) is None
    assert warm_start.ENV not in os.environ  # its jobs find no server: each runs in its own process

    class Rule:
        def __init__(self, env):
            self.conda_env = env

    class Job:
        def __init__(self, env):
            self.rule = Rule(env)

    def workflow(*envs):
        dag = type("Dag", (), {"needrun_jobs": lambda self: iter([Job(env) for env in envs])})()
        return type("Workflow", (), {"dag": dag, "basedir": str(REPO)})()

    tables, models = "../envs/data.yaml", "../envs/models.yaml"  # the second installs torch
    assert not warm_start.server_pays(workflow(tables, tables, models))
    assert warm_start.server_pays(workflow(tables, models, models))
    assert warm_start.server_pays(workflow(*[tables] * warm_start.MIN_JOBS))
    assert warm_start.server_pays(object())  # a Snakemake whose DAG says nothing: the server starts


def test_jobs_sent_while_the_stages_hand_over_all_run(tmp_path, monkeypatch):
    # Three stages, each taking the socket over from the one before, while jobs keep arriving.
    folder = tmp_path / "server"
    folder.mkdir()
    address = str(folder / "jobs.sock")
    code = (f"import sys, time; sys.path.insert(0, {str(REPO)!r}); from workflow_scripts.runtime import warm_server; "
            "warm_server._preload = lambda modules: time.sleep(0.3); "
            "warm_server.IMPORT_STAGES = (('a', ('a',)), ('b', ('b',)), ('c', ('c',))); warm_server.serve()")
    process = subprocess.Popen([sys.executable, "-c", code, address, str(os.getpid())])
    try:
        results = [job(tmp_path, f"print({i})\n", address) for i in range(12)]
        deadline = time.time() + 30
        while not (os.path.islink(address) and os.readlink(address).endswith(".2")):
            assert time.time() < deadline, "the last stage did not take the socket over"
            time.sleep(0.05)
        last = job(tmp_path, "print('last')\n", address)
    finally:
        monkeypatch.setenv(warm_start.ENV, address)
        warm_start.stop(process)
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    assert [r.stdout.split()[-1] for r in results] == [str(i) for i in range(12)]
    assert last.returncode == 0 and last.stdout.split() == ["last"]  # served by the last stage's copy


def test_stop_ends_every_stage_and_removes_the_folder(tmp_path, monkeypatch):
    folder = tmp_path / "server"
    folder.mkdir()
    process, address = start_server(folder, (("json", ("json",)), ("csv", ("csv",))))
    pids = [int(p.read_text()) for p in folder.glob("stage-*.pid")]
    assert len(pids) == 2
    monkeypatch.setenv(warm_start.ENV, address)
    warm_start.stop(process)
    deadline = time.time() + 5
    while any(warm_start.alive(pid) and not _zombie(pid) for pid in pids) and time.time() < deadline:
        time.sleep(0.05)
    assert not any(warm_start.alive(pid) and not _zombie(pid) for pid in pids)
    assert not folder.exists() and warm_start.ENV not in os.environ


def _names(pid: int) -> tuple[str, str]:
    """(the command line ps shows, the short name top shows) of a process."""
    proc = Path(f"/proc/{pid}")
    return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip(), (proc / "comm").read_text().strip()


def test_jobs_and_server_stages_are_named_in_ps_and_top(server, tmp_path):
    pytest.importorskip("setproctitle")
    marker = tmp_path / "copy.pid"
    script = tmp_path / "job.py"
    script.write_text(f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
    title = "atlas extract_attention model=tiny checkpoint=pretrained corpus=ewt shard=shard-0000-of-0001"
    client_code = (f"import sys; sys.path.insert(0, {str(REPO)!r}); "
                   "from workflow_scripts.runtime.process_title import set_title; "
                   f"from workflow_scripts.runtime.warm_start import run_warm; set_title({title!r}); "
                   f"run_warm(sys.argv[1], {title!r})")
    client = subprocess.Popen([sys.executable, "-c", client_code, str(script)],
                              env={**os.environ, warm_start.ENV: server})
    try:
        deadline = time.time() + 30
        while not marker.exists() or not marker.read_text():
            assert time.time() < deadline, "the job did not start"
            time.sleep(0.05)
        copy = int(marker.read_text())
        # The copy that does the work carries the job's name, its short name the rule's (15 bytes, as Linux keeps).
        assert _names(copy) == (title, "extract_attenti")
        deadline = time.time() + 10
        while "waiting for its warm copy" not in _names(client.pid)[0] and time.time() < deadline:
            time.sleep(0.05)
        assert _names(client.pid)[0] == f"{title} (waiting for its warm copy, pid {copy})"
        stages = [int(p.read_text()) for p in Path(server).parent.glob("stage-*.pid")]
        # Each stage is named; the last (csv) serves, the first (json) ends once it has handed the socket over (a
        # zombie until reaped), so it may be gone.
        alive = {_names(pid) for pid in stages if not _zombie(pid)}
        assert ("atlas warm server: csv", "warm csv") in alive
        assert alive <= {("atlas warm server: csv", "warm csv"), ("atlas warm server: json", "warm json")}
    finally:
        client.kill()
        client.wait()


def test_a_cold_job_is_named_as_a_warm_one(tmp_path):
    pytest.importorskip("setproctitle")
    code = (f"import sys, time; sys.path.insert(0, {str(REPO)!r}); "
            "from workflow_scripts.runtime.process_title import job_title, set_title; "
            "set_title(job_title('finetune_rte', {'model': 'm', 'seed': 42})); "
            "print(open('/proc/self/cmdline', 'rb').read().replace(b'\\0', b' ').decode().strip()); "
            "print(open('/proc/self/comm').read().strip())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines() == ["atlas finetune_rte model=m seed=42", "finetune_rte"], result.stderr
