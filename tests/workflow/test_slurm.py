"""The tiny study through a real SLURM cluster with profiles/slurm, compared with a local run.

Runs where SLURM answers: a cluster whose ``sbatch`` is on PATH and whose ``sinfo`` works, or,
with ATLAS_SLURM_TEST=1, the one-node cluster of scripts/slurm_one_node.sh (started here if it
is not running, and stopped again afterwards; needs root and apt-get). Otherwise it skips.

It builds the tiny study of tests/workflow/test_e2e.py (the ``study`` fixture of
tests/workflow/conftest.py) twice from one snapshot of the workflow's files (others may edit the
repository meanwhile), once locally (--cores 2) and once with ``snakemake --profile profiles/slurm``,
and checks that
  * every job of the SLURM run went through sbatch: one SLURM job id logged per job Snakemake
    ran (the local target rule 'all' aside), the same jobs per rule as the local run, and SLURM
    knows each id, under this run's job name, as COMPLETED;
  * the outputs are equal: the same files; Parquet tables (attention shards included) equal as
    data; CSV tables and JSON equal once time/host columns or keys are dropped, and the file records'
    keys that say which run wrote a file and when (RUN_RECORD_KEYS), and the run's own directory is
    written alike; PNG pixels, PDF content (creation date aside) and zip archives'
    members (torch.save names the archive's folder after the temporary file) equal; every other
    file equal byte for byte (logs aside, which record times and paths).
The profile is used as it is, except where this machine lacks what it asks for: the partition
(that of the cluster here), accounts, GPUs (the tiny study runs on the CPU) and memory beyond
half a node's. Those overrides are derived from the profile (tests/support/slurm_runs.py), not from
a list of rule names.
Both runs take most of an hour on a 2-core machine; ATLAS_SLURM_TIMEOUT_S bounds each.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from support.paths import REPO
from support.slurm_runs import finished_of, jobs_of, slurm_overrides, submissions_of

pytestmark = pytest.mark.e2e

PROFILE = Path("profiles") / "slurm"  # in the snapshot of the workflow (see ``workflow``)
SCRIPT = REPO / "scripts" / "slurm_one_node.sh"
REQUESTED = os.environ.get("ATLAS_SLURM_TEST") == "1"
RUN_TIMEOUT_S = int(os.environ.get("ATLAS_SLURM_TIMEOUT_S", "5400"))  # per Snakemake run
JOB_PREFIX = f"atlastest{os.getpid()}"  # SLURM job names: {JOB_PREFIX}_{run uuid}
# Columns / keys that may record when or on which host a job ran rather than what it computed.
# (Absolute paths into the run's own directory are compared with that directory replaced.)
VOLATILE = re.compile(r"(^|_)(time|times|seconds|elapsed|duration|date|timestamp|host|hostname|"
                      r"pid|started|finished|created)($|_)", re.IGNORECASE)
# Keys of the file records (core/file_records.py, the shards' and checkpoints' records) that say which run wrote a
# file and when, not what it holds: a file's mtime, the writing run's and dump's random ids (also in a shard's Parquet
# metadata, so the shard's digest), the record's own hash over them, the digests of files each compared on its own
# below, and an extraction's wall-clock timings per stage.
RUN_RECORD_KEYS = frozenset({"mtime_ns", "run_id", "dump_id", "record_sha256", "blake3", "sha256", "timings"})


def _run(command: list[str], timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)


def _sinfo_answers() -> bool:
    if not shutil.which("sbatch") or not shutil.which("sinfo"):
        return False
    try:
        return _run(["sinfo", "-h", "-o", "%P"], timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.lru_cache(maxsize=1)
def _slurm_was_up() -> bool:
    """Whether SLURM answered when the tests began (asked once: a down controller takes ~10 s)."""
    return _sinfo_answers()


def _slurm_logs(lines: int = 40) -> str:
    """Tails of the controller's and node daemon's logs, wherever the running config puts them."""
    try:
        config = _run(["scontrol", "show", "config"], timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"(scontrol show config failed: {error})"
    tails = []
    for key in ("SlurmctldLogFile", "SlurmdLogFile", "JobCompLoc"):
        match = re.search(rf"^{key}\s*=\s*(\S+)", config, re.MULTILINE)
        if match and Path(match.group(1)).is_file():
            text = Path(match.group(1)).read_text(errors="replace").splitlines()[-lines:]
            tails.append(f"== {match.group(1)} (last {lines} lines)\n" + "\n".join(text))
    return "\n".join(tails) or "(no SLURM daemon logs readable here)"


@pytest.fixture(scope="session")  # session: set up before the tiny model, so a skip is quick
def cluster():
    """The partition to submit to and its per-node CPUs and memory; starts the one-node cluster
    of scripts/slurm_one_node.sh when asked to (ATLAS_SLURM_TEST=1) and none answers."""
    started = False
    if not _slurm_was_up():
        if not REQUESTED:
            pytest.skip("no SLURM here (sbatch not on PATH or sinfo does not answer); set "
                        "ATLAS_SLURM_TEST=1 to start a one-node cluster with scripts/slurm_one_node.sh "
                        "(root, apt-get), or run 'bash scripts/slurm_one_node.sh start' first")
        result = _run(["bash", str(SCRIPT), "start"], timeout=1800)
        if result.returncode != 0:
            pytest.fail(f"ATLAS_SLURM_TEST=1 but {SCRIPT.name} start failed (rc {result.returncode}):\n"
                        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        started = True
        assert _sinfo_answers(), f"{SCRIPT.name} start succeeded but sinfo does not answer"
    partitions = _run(["sinfo", "-h", "-o", "%P"]).stdout.split()
    partition = os.environ.get("ATLAS_SLURM_PARTITION") or next(
        (p.rstrip("*") for p in partitions if p.endswith("*")), partitions[0].rstrip("*") if partitions else "")
    assert partition, f"sinfo lists no partition: {partitions}"
    # Per-node CPUs and memory (MB) of the partition; the smallest node counts.
    nodes = _run(["sinfo", "-h", "-p", partition, "-N", "-o", "%c %m"]).stdout.split("\n")
    sizes = [tuple(int(re.sub(r"\D", "", v)) for v in line.split()) for line in nodes if line.strip()]
    assert sizes, f"partition {partition!r} has no nodes (sinfo -p {partition} -N)"
    cpus, mem_mb = min(s[0] for s in sizes), min(s[1] for s in sizes)
    yield {"partition": partition, "cpus": cpus, "mem_mb": mem_mb}
    if started:
        _run(["bash", str(SCRIPT), "stop"], timeout=300)


def _cancel_leftover_jobs() -> None:
    """Cancel the jobs of this test's SLURM runs that are still queued or running."""
    listing = _run(["squeue", "-h", "-o", "%i %j"]).stdout.split("\n")
    ids = [line.split()[0] for line in listing if len(line.split()) == 2
           and line.split()[1].startswith(JOB_PREFIX + "_")]
    if ids:
        _run(["scancel", "--full", *ids])


@pytest.fixture(scope="module")
def workflow(tmp_path_factory) -> Path:
    """A snapshot of the workflow's files (git's view: tracked and untracked-not-ignored), taken
    once, that both runs execute: other developers may edit the repository while the runs last
    (most of an hour), and the two runs must run the same code."""
    snapshot = tmp_path_factory.mktemp("workflow")
    listed = _run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    if listed.returncode == 0:
        files = [f for f in listed.stdout.split("\0") if f]
    else:  # no git: everything but the usual build and result folders
        skip = {".git", ".venv", "results", "resources", ".snakemake", "__pycache__", ".pytest_cache"}
        files = [str(p.relative_to(REPO)) for p in REPO.rglob("*")
                 if p.is_file() and not skip & set(p.relative_to(REPO).parts)]
    for name in files:
        source = REPO / name
        if source.is_file() and not name.startswith(("tests/", "benchmarks/")):
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, snapshot / name)
    assert (snapshot / "Snakefile").is_file() and (snapshot / PROFILE / "config.yaml").is_file(), \
        f"the snapshot of {REPO} in {snapshot} lacks the Snakefile or {PROFILE}/config.yaml"
    return snapshot


def _snakemake(workflow: Path, work: Path, directory: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    directory.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(workflow / "Snakefile"), "--directory",
               str(directory), "--configfile", str(work / "tiny.yaml"), *args]
    # ATLAS_CONSOLE=full: the job blocks this test reads are left out of a real run's console otherwise.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "ATLAS_CONSOLE": "full"}
    start = time.monotonic()
    result = subprocess.run(command, cwd=directory, capture_output=True, text=True, env=env,
                            timeout=RUN_TIMEOUT_S)
    (directory / "snakemake.out").write_text(result.stdout + result.stderr)
    return result, time.monotonic() - start


@pytest.fixture(scope="module")
def runs(cluster, workflow, study):
    """The tiny study built locally and through SLURM (results, logs, wall times)."""
    local, local_s = _snakemake(workflow, study, study / "local", "--cores", "2")
    assert local.returncode == 0, "local run failed:\n" + (local.stdout + local.stderr)[-6000:]
    profile = yaml.safe_load((workflow / PROFILE / "config.yaml").read_text())
    assert profile.get("executor") == "slurm", f"{PROFILE}/config.yaml: executor is not slurm"
    sacct_works = shutil.which("sacct") and _run(["sacct", "-n", "-X", "-S", "now"]).returncode == 0
    slurm_args = [
        "--profile", str(workflow / PROFILE),
        "--workflow-profile", "none",  # profiles/default would override keys of profiles/slurm
        *slurm_overrides(profile, cluster),
        # Quick status polls for a tiny study, and keep every job's SLURM log as evidence.
        "--slurm-init-seconds-before-status-checks", "2",
        "--slurm-keep-successful-logs",
        "--slurm-jobname-prefix", JOB_PREFIX,
        *([] if sacct_works else ["--slurm-status-command", "squeue"]),
    ]
    try:
        slurm, slurm_s = _snakemake(workflow, study, study / "slurm", *slurm_args)
    finally:  # a failed or timed-out run leaves no jobs behind
        _cancel_leftover_jobs()
    log = slurm.stdout + slurm.stderr
    assert slurm.returncode == 0, ("SLURM run failed:\n" + log[-8000:] + "\n\n" + _slurm_logs()
                                   + "\n\nsbatch call options: " + " ".join(slurm_args))
    print(f"\nwall time: local run {local_s:.0f} s, SLURM run {slurm_s:.0f} s")
    return {"local": study / "local", "slurm": study / "slurm", "local_log": local.stdout + local.stderr,
            "slurm_log": log, "local_s": local_s, "slurm_s": slurm_s}


def slurm_states(run_name: str, ids: list[str]) -> dict[str, tuple[str, str]]:
    """SLURM job id -> (state, comment) as SLURM records them, for the jobs named run_name."""
    states = {}
    out = _run(["squeue", "--states=all", "--noheader", "--name", run_name, "--format=%i|%T|%k"]).stdout
    for line in out.splitlines():
        job, state, comment = (line.split("|", 2) + ["", ""])[:3]
        states[job.strip()] = (state.strip(), comment.strip())
    for job in ids:  # older than MinJobAge: ask scontrol, then accounting
        if job in states:
            continue
        shown = _run(["scontrol", "-o", "show", "job", job]).stdout
        name, state = re.search(r"JobName=(\S+)", shown), re.search(r"JobState=(\S+)", shown)
        if name and state and name.group(1) == run_name:
            comment = re.search(r"Comment=(\S+)", shown)
            states[job] = (state.group(1), comment.group(1) if comment else "")
        elif shutil.which("sacct"):
            acct = _run(["sacct", "-n", "-X", "-P", "-j", job, "-o", "JobName,State,Comment"]).stdout
            for row in acct.splitlines():
                fields = row.split("|")
                if fields[0] == run_name:
                    states[job] = (fields[1].split()[0], fields[2] if len(fields) > 2 else "")
    return states


def test_every_job_went_through_sbatch(runs):
    log = runs["slurm_log"]
    jobs, finished, submitted = jobs_of(log), finished_of(log), submissions_of(log)
    assert jobs and finished, "no jobs in the SLURM run's log:\n" + log[-4000:]
    assert finished <= set(jobs), f"finished jobs without a job block: {sorted(finished - set(jobs))}"
    local_jobs = {j for j in finished if jobs[j]["local"]}
    # Only target rules without outputs (rule all) may run on the submitting host.
    assert all(not jobs[j]["has_output"] for j in local_jobs), \
        f"jobs with outputs ran locally, not through sbatch: {[jobs[j]['rule'] for j in local_jobs]}"
    remote = finished - local_jobs
    assert set(submitted) == remote, (
        f"jobs run without an sbatch submission: {sorted((jobs[j]['rule'], j) for j in remote - set(submitted))}; "
        f"submitted but not finished: {sorted(set(submitted) - remote)}")
    slurm_ids = list(submitted.values())
    assert len(set(slurm_ids)) == len(slurm_ids) == len(remote), "one SLURM job id per job expected"
    # The same DAG as the local run: the same number of jobs of each rule.
    local_jobs_all = jobs_of(runs["local_log"])
    local_rules = sorted(local_jobs_all[j]["rule"] for j in finished_of(runs["local_log"]))
    assert sorted(jobs[j]["rule"] for j in finished) == local_rules
    # SLURM itself knows every one of them, under this run's job name, as COMPLETED.
    run_name = re.search(r"SLURM run ID: (\S+)", log)
    assert run_name, "no 'SLURM run ID' in the log"
    states = slurm_states(run_name.group(1), slurm_ids)
    missing = [i for i in slurm_ids if i not in states]
    assert not missing, f"SLURM does not know jobs {missing} of run {run_name.group(1)}\n" + _slurm_logs()
    failed = {i: s for i, s in states.items() if i in slurm_ids and s[0] != "COMPLETED"}
    assert not failed, f"SLURM jobs not COMPLETED: {failed}"
    rows = sorted((int(submitted_id), job, jobs[job]["rule"], states[submitted_id][0])
                  for job, submitted_id in submitted.items())
    listing = "\n".join(f"  SLURM {sid:>6}  snakemake job {job:>3}  {rule:<28} {state}"
                        for sid, job, rule, state in rows)
    print(f"\nSLURM run {run_name.group(1)}: {len(rows)} jobs submitted with sbatch, "
          f"{len(local_jobs)} local target job(s) ({', '.join(jobs[j]['rule'] for j in local_jobs)}); "
          f"{len(finished)} jobs in all\n{listing}")
    assert re.search(r"(\d+) of \1 steps \(100%\) done", log)


def _normalised(value, root: Path):
    """``value`` with time/host keys and the run records' keys dropped and the run's own directory written as <run>."""
    if isinstance(value, dict):
        return {k: _normalised(v, root) for k, v in value.items()
                if not VOLATILE.search(str(k)) and k not in RUN_RECORD_KEYS}
    if isinstance(value, (list, tuple)):
        return [_normalised(v, root) for v in value]
    if isinstance(value, str):
        return value.replace(str(root), "<run>")
    return value


def _zip_members(path: Path) -> dict[str, bytes]:
    """A zip archive's members by name, without the one top folder all of them share (if any)."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist() if not name.endswith("/")}
    tops = {name.split("/", 1)[0] for name in members}
    if len(tops) == 1 and all("/" in name for name in members):
        members = {name.split("/", 1)[1]: data for name, data in members.items()}
    return members


def _differs(a: Path, b: Path, root_a: Path, root_b: Path) -> str | None:
    """Why two output files differ as outputs (None: equal); root_*: the two runs' directories."""
    suffix = a.suffix.lower()
    if suffix == ".parquet":  # data and schema; not the file metadata (writer, row-group layout)
        ta, tb = pq.read_table(a), pq.read_table(b)
        if ta.schema.remove_metadata() != tb.schema.remove_metadata():
            return f"schemas differ:\n{ta.schema}\nvs\n{tb.schema}"
        if ta.equals(tb) or _normalised(ta.to_pylist(), root_a) == _normalised(tb.to_pylist(), root_b):
            return None
        return "table data differ"
    if suffix in (".csv", ".tsv"):
        sep = "\t" if suffix == ".tsv" else ","
        frames = []
        for path, root in ((a, root_a), (b, root_b)):
            frame = pd.read_csv(path, sep=sep)
            frame = frame.drop(columns=[c for c in frame.columns if VOLATILE.search(str(c))])
            for column in frame.select_dtypes(include=["object", "string"]).columns:
                frame[column] = frame[column].map(lambda v, r=root: _normalised(v, r))
            frames.append(frame)
        try:
            pd.testing.assert_frame_equal(*frames, check_exact=True)
        except AssertionError as error:
            return str(error)[:2000]
        return None
    if suffix == ".json":
        ja, jb = _normalised(json.loads(a.read_text()), root_a), _normalised(json.loads(b.read_text()), root_b)
        return None if ja == jb else f"JSON differs:\n{ja}\nvs\n{jb}"[:2000]
    data_a, data_b = a.read_bytes(), b.read_bytes()
    if data_a == data_b:
        return None
    if suffix == ".png":
        import matplotlib.image as mpimg
        pa, pb = mpimg.imread(a), mpimg.imread(b)
        return None if pa.shape == pb.shape and np.array_equal(pa, pb) else "PNG pixels differ"
    if zipfile.is_zipfile(a) and zipfile.is_zipfile(b):  # torch.save: the archive's folder is
        members_a, members_b = _zip_members(a), _zip_members(b)  # named after the (temp) file
        if members_a == members_b:
            return None
        changed = sorted(n for n in members_a.keys() | members_b.keys() if members_a.get(n) != members_b.get(n))
        return f"archive members differ: {changed[:10]}"
    if suffix == ".pdf":  # matplotlib writes the creation date into the file
        date = re.compile(rb"/(CreationDate|ModDate) \(D:[^)]*\)")
        return None if date.sub(b"", data_a) == date.sub(b"", data_b) else "PDF content differs"
    return f"bytes differ ({len(data_a)} vs {len(data_b)} bytes)"


def test_outputs_equal_a_local_run(runs):
    local, slurm = runs["local"] / "results", runs["slurm"] / "results"
    files = {p.relative_to(local) for p in local.rglob("*") if p.is_file()}
    other = {p.relative_to(slurm) for p in slurm.rglob("*") if p.is_file()}
    assert files == other, (f"only in the local run: {sorted(map(str, files - other))}; "
                            f"only in the SLURM run: {sorted(map(str, other - files))}")
    compared, differences, kinds = 0, {}, {}
    for rel in sorted(files):
        if rel.parts[0] == "logs" or rel.suffix == ".log":
            continue  # logs record times and paths
        why = _differs(local / rel, slurm / rel, runs["local"], runs["slurm"])
        compared += 1
        kinds[rel.suffix or rel.name] = kinds.get(rel.suffix or rel.name, 0) + 1
        if why:
            differences[str(rel)] = why
    assert not differences, "outputs differ between the local and the SLURM run:\n" + "\n".join(
        f"{k}: {v}" for k, v in differences.items())
    shards = [rel for rel in files if rel.parts[0] == "attention" and rel.suffix == ".parquet"]
    assert shards, "no attention shards to compare"
    identical = sum((local / rel).read_bytes() == (slurm / rel).read_bytes() for rel in shards)
    print(f"\nequality check: {compared} output files equal between the local and the SLURM run "
          f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}); attention shards: "
          f"{len(shards)} equal as tables, {identical} of them byte for byte; "
          f"{len(files) - compared} log files not compared")
