"""Snakemake's own cost: the main process's CPU per job and per minute of a run, and where it goes.

    python benchmarks/bench_scheduler.py --mirror PATH [--parts quickstart,synthetic] [--seconds 60] [--shards 100]
                                         [--job-seconds 0.3] [--top 12] [--cores 2] [--snakemake-args "..."]

Every job's work runs in a process of its own; the main process plans the DAG, then, while jobs run, schedules the
ready ones and records the finished ones. This measures that second part, two ways (docs/contributing.md,
"Snakemake's own cost"):

- ``quickstart``: the quickstart study (profiles/quickstart) from the mirror, in a fresh results folder, its real
  jobs;
- ``synthetic``: the quickstart study with ``attention.num_shards`` = ``--shards`` (100), so that its extraction jobs
  (one per shard of its 14 dumps) are all ready at once: 1000+ jobs waiting for 2 cores, each with the real plans'
  params and resources functions. Their inputs are built for real first (``--omit-from extract_attention``, about a
  minute); then a copy of the workflow whose every job sleeps ``--job-seconds`` and touches its outputs runs the
  extraction for ``--seconds`` seconds, and is stopped.

Each part runs twice: plainly, for the numbers (the main process's user + system CPU from /proc/PID/stat, sampled
until it exits; the jobs finished; the machine's other busy CPU, the jobs', from /proc/stat: run it on an otherwise
idle machine), from its start and from its first finished job on (the CPU per second while jobs run and wait), and
under cProfile (the main thread's CPU time, where Snakemake's scheduler runs), for the ``--top`` entries by own time
and by cumulative time. The main process's share is its CPU over the jobs' CPU: at most 2% is the goal.
``--snakemake-args`` adds options to every run (``--scheduler ilp``, ``--max-jobs-per-timespan 100/1s``); the
environment's ``ATLAS_SCHEDULER_PASSES=snakemake`` runs Snakemake's own scheduler loop, unmended
(workflow_scripts/runtime/scheduler_passes.py): this benchmark's before and after.
"""

from __future__ import annotations

import argparse
import os
import pstats
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support.workflow_runs import copy_workflow  # noqa: E402 - the tests' helpers are on sys.path only from here

HZ = os.sysconf("SC_CLK_TCK")
# The copy's every job: a pause in place of its work, then its outputs, empty.
SLEEP_JOB = """import os, time
from pathlib import Path
time.sleep(float(os.environ.get("BENCH_JOB_SECONDS", "0.3")))
for path in snakemake.output:  # noqa: F821 - Snakemake's script preamble defines it
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).touch()
for path in snakemake.log:  # noqa: F821
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("a benchmark's sleep job\\n")
"""



def machine_busy() -> float:
    """Seconds of CPU the machine has been busy (every core, /proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(values) - values[3] - values[4]) / HZ


def own_cpu(pid: int) -> float | None:
    """A process's own user + system CPU seconds (not its children's), None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / HZ


@dataclass
class Run:
    wall: float
    main_cpu: float
    others_cpu: float
    jobs: int
    status: int
    running_s: float = 0.0      # from the first job's end to the run's
    running_cpu: float = 0.0    # the main process's CPU then

    def lines(self, label: str) -> list[str]:
        per_job = self.main_cpu / self.jobs if self.jobs else float("nan")
        share = self.main_cpu / self.others_cpu if self.others_cpu > 0 else float("nan")
        waiting = self.running_cpu / self.running_s if self.running_s > 0 else float("nan")
        return [f"{label}: {self.jobs} jobs in {self.wall:.1f} s (exit {self.status})",
                f"  main process CPU      {self.main_cpu:8.2f} s   {per_job:.3f} s per job, "
                f"{60 * self.main_cpu / self.wall:.2f} s per minute of run",
                f"  while jobs ran        {self.running_cpu:8.2f} s   over {self.running_s:.1f} s after the first job: "
                f"{waiting:.3f} s of CPU per second",
                f"  jobs' CPU (the rest)  {self.others_cpu:8.2f} s   main process / jobs: {100 * share:.1f}% "
                "(the goal: 2% or less)"]


def run(command: list[str], cwd: Path, log: Path, *, env: dict, seconds: float | None = None,
        count_jobs=lambda: 0) -> Run:
    """Run ``command``; stop it with SIGINT after ``seconds`` (None: let it end); the main process's CPU, in all and
    from the first finished job on (checked once a second)."""
    busy, start = machine_busy(), time.perf_counter()
    first: tuple[float, float] | None = None
    with open(log, "w", encoding="utf-8") as out:
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        cpu, stopped, checked, jobs = 0.0, False, start, 0
        while process.poll() is None:
            cpu = own_cpu(process.pid) or cpu
            now = time.perf_counter()
            if first is None and now - checked >= 1.0:
                checked = now
                if count_jobs() > 0:
                    first = (now, cpu)
            if seconds is not None and not stopped and now - start > seconds:
                jobs, stopped = count_jobs(), True
                stop = (now, cpu)
                process.send_signal(signal.SIGINT)
            time.sleep(0.2)
    wall = time.perf_counter() - start
    if not stopped:
        jobs, stop = count_jobs(), (time.perf_counter(), cpu)
    running = (stop[0] - first[0], stop[1] - first[1]) if first else (0.0, 0.0)
    return Run(wall=wall, main_cpu=cpu, others_cpu=machine_busy() - busy - cpu, jobs=jobs,
               status=process.returncode, running_s=running[0], running_cpu=running[1])


def profile_lines(path: Path, top: int) -> list[str]:
    """The main thread's top entries, by own time and by cumulative time."""
    lines = []
    for key, label in (("tottime", "own time"), ("cumulative", "cumulative time")):
        stats = pstats.Stats(str(path))
        entries = sorted(stats.stats.items(), key=lambda item: -item[1][2 if key == "tottime" else 3])[:top]
        lines.append(f"  main thread, by {label} (cProfile):")
        for (file, line, name), (_, calls, own, cumulative, _) in entries:
            where = f"{Path(file).name}:{line}" if file != "~" else "(builtin)"
            lines.append(f"    {own if key == 'tottime' else cumulative:8.2f} s  {calls:>9} calls  {name} ({where})")
    return lines


def snakemake_command(args: list[str], profile_to: Path | None) -> list[str]:
    if profile_to is None:
        return [sys.executable, "-m", "snakemake", *args]
    # The main thread's CPU time (time.thread_time), not its wall time: waiting on the scheduler's lock costs nothing.
    code = ("import cProfile, sys, time\nfrom snakemake.cli import main\nsys.argv = ['snakemake', *sys.argv[1:]]\n"
            "profile = cProfile.Profile(time.thread_time)\ntry:\n    profile.runcall(main)\n"
            f"except BaseException:\n    pass\nfinally:\n    profile.dump_stats({str(profile_to)!r})\n")
    return [sys.executable, "-c", code, *args]


def quickstart(scratch: Path, mirror: Path, cores: int, top: int, env: dict, extra: list[str]) -> list[str]:
    out = []
    for profiled in (False, True):
        results = scratch / ("quickstart_profiled" if profiled else "quickstart")
        args = [*extra, "--profile", "profiles/quickstart", "--cores", str(cores), "--config", f"mirror={mirror}",
                f"results={results}"]
        profile = scratch / "quickstart.prof" if profiled else None
        found = run(snakemake_command(args, profile), REPO, scratch / f"{results.name}.log", env=env,
                    count_jobs=lambda r=results: finished_jobs(r))
        if profiled:
            out += profile_lines(profile, top)
        else:
            out += found.lines("quickstart (real jobs)")
    return out


def finished_jobs(results: Path) -> int:
    """The jobs a run finished: one log each (every rule has one)."""
    return sum(1 for _ in (results / "logs").rglob("*.log")) if (results / "logs").exists() else 0


def synthetic_copy(scratch: Path) -> Path:
    """The workflow's copy whose every job sleeps and touches its outputs."""
    copy = copy_workflow(scratch / "workflow").parent
    (copy / "rules" / "scripts" / "entry.py").write_text(SLEEP_JOB)
    return copy


def synthetic(scratch: Path, mirror: Path, cores: int, top: int, env: dict, extra: list[str], *, seconds: float,
              shards: int, job_seconds: float) -> list[str]:
    copy = synthetic_copy(scratch)
    out = []
    for profiled in (False, True):
        work = scratch / ("synthetic_profiled" if profiled else "synthetic")
        work.mkdir()
        study = ["--directory", str(work), "--profile", str(REPO / "profiles" / "quickstart"), "--cores", str(cores),
                 "--config", f"mirror={mirror}", f"results={work / 'results'}",
                 f"attention={{num_shards: {shards}}}"]
        # The extraction's inputs, built for real (data, checkpoints, the fine-tuning, token tables): the plan reads
        # them when the DAG is built.
        upstream = run(snakemake_command([*study, "--omit-from", "extract_attention"], None), REPO,
                       work / "upstream.log", env=env)
        if upstream.status:
            return [f"synthetic: the upstream jobs failed (exit {upstream.status}): {work / 'upstream.log'}"]
        profile = scratch / "synthetic.prof" if profiled else None
        shards_done = lambda w=work: sum(1 for _ in (w / "results" / "attention").rglob("shard-*.parquet"))  # noqa: E731
        # The extraction, each job a sleep (its inputs are the real ones: the copy's changed script reruns nothing).
        sleeping = [*extra, "--snakefile", str(copy / "Snakefile"), *study, "--rerun-triggers", "mtime",
                    "--until", "extract_attention"]
        found = run(snakemake_command(sleeping, profile), REPO, work / "extraction.log",
                    env={**env, "ATLAS_WARM_START": "off", "BENCH_JOB_SECONDS": str(job_seconds)}, seconds=seconds,
                    count_jobs=shards_done)
        if profiled:
            out += profile_lines(profile, top)
        else:
            dumps = len(list((work / "results" / "tokens").rglob("*.parquet")))
            out += [f"synthetic: the quickstart study with {shards} shards per dump; its upstream jobs for real "
                    f"({upstream.wall:.0f} s), then its extraction jobs, each sleeping {job_seconds} s "
                    f"({dumps} token tables)"]
            out += found.lines(f"synthetic extraction (stopped after {seconds:.0f} s)")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", required=True, help="the data mirror (docs/data.md)")
    parser.add_argument("--parts", default="quickstart,synthetic")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the synthetic extraction runs")
    parser.add_argument("--shards", type=int, default=100, help="attention.num_shards of the synthetic study")
    parser.add_argument("--job-seconds", type=float, default=0.3, help="each synthetic job's sleep")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--snakemake-args", default="", help="options added to every snakemake command, quoted")
    args = parser.parse_args(argv)
    extra = shlex.split(args.snakemake_args)
    mirror = Path(args.mirror).resolve()
    env = dict(os.environ)
    scratch = Path(tempfile.mkdtemp(prefix="bench_scheduler_"))
    try:
        parts = [p.strip() for p in args.parts.split(",") if p.strip()]
        for part in parts:
            if part == "quickstart":
                lines = quickstart(scratch, mirror, args.cores, args.top, env, extra)
            elif part == "synthetic":
                lines = synthetic(scratch, mirror, args.cores, args.top, env, extra, seconds=args.seconds,
                                  shards=args.shards, job_seconds=args.job_seconds)
            else:
                parser.error(f"unknown part {part!r}: quickstart or synthetic")
            print("\n".join(lines), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
