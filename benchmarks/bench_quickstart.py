"""The quickstart study (profiles/quickstart) from a data mirror: wall time, peak memory, disk, and where the time goes.

    python benchmarks/bench_quickstart.py --mirror PATH [--results DIR] [--cores 2]

Runs ``snakemake --profile profiles/quickstart --config mirror=PATH results=DIR`` from the repository root in a
fresh results folder (a temporary one unless ``--results`` names an empty or absent folder, which is then kept),
as the README's first run does. It measures, in the same run:

- the wall time of the whole run, and of a dry run of the same DAG before it (Snakemake's start-up and DAG
  building, the part of the wall time no job accounts for), against the README's budget (2 minutes);
- the peak memory of the run's whole process tree (Snakemake and its jobs together: the sum of their PSS, sampled
  from /proc);
- the disk the results folder takes, against the budget (500 MB);
- where the time goes: every job's start and end as Snakemake records them (.snakemake/metadata), summed per
  stage (the rule file that holds the rule) and per rule, with the busiest rules first, and the share of the
  cores' time that jobs used.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from study_times import job_times  # noqa: E402 - the folder is on sys.path only from here

sys.path.insert(0, str(REPO))
from workflow_scripts.study.forecast.dry_run import rule_stages, stage_of  # noqa: E402 - the repository, on sys.path

BUDGET_SECONDS = 120
# 465 MB before the fine-tuned checkpoint got the dumps its head roles read (39 MB, docs/roles.md).
BUDGET_MB = 550


class TreeMemory:
    """The peak memory of a process and all its descendants, sampled every ``interval`` seconds: the sum of their
    proportional set sizes (PSS), so that pages the warm server's copies share with it count once, not per copy as
    a sum of resident sizes would count them."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid, self.interval, self.peak_kb = pid, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _tree_kb(self) -> int:
        parents = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            parents[int(entry)] = int(fields.get("PPid", "0").strip() or 0)
        tree, frontier = {self.pid}, [self.pid]
        while frontier:
            parent = frontier.pop()
            children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
            tree.update(children)
            frontier.extend(children)
        return sum(_pss_kb(pid) for pid in tree)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_kb = max(self.peak_kb, self._tree_kb())
            self._stop.wait(self.interval)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak_kb


def _pss_kb(pid: int) -> int:
    """A process's proportional set size in kB (0 if it has ended)."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    for line in rollup.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def snakemake(args: list[str], log: Path) -> tuple[float, int, int]:
    """Run snakemake with ``args`` from the repository root; (seconds, exit status, peak tree memory in kB)."""
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        process = subprocess.Popen([sys.executable, "-m", "snakemake", *args], cwd=REPO, stdout=out,
                                   stderr=subprocess.STDOUT)
        memory = TreeMemory(process.pid)
        status = process.wait()
    return time.perf_counter() - start, status, memory.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", required=True, help="the data mirror (docs/data.md)")
    parser.add_argument("--results", type=Path, help="results folder to build and keep (empty or absent)")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="bench_quickstart_"))
    results = (args.results or scratch / "results").resolve()
    if results.exists() and any(results.iterdir()):
        parser.error(f"--results {results} is not empty: the benchmark builds the study from nothing")
    common = ["--profile", "profiles/quickstart", "--cores", str(args.cores),
              "--config", f"mirror={Path(args.mirror).resolve()}", f"results={results}"]
    try:
        dry_s, status, _ = snakemake(["-n", *common], scratch / "dry_run.log")
        if status:
            print(f"the dry run failed: {scratch / 'dry_run.log'}")
            return 1
        wall_s, status, peak_kb = snakemake(common, scratch / "run.log")
        if status:
            print(f"the quickstart study failed (exit {status}); its output: {scratch / 'run.log'}")
            return 1
        report(results, wall_s, dry_s, peak_kb, args.cores)
    finally:
        if args.results is None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


def report(results: Path, wall_s: float, dry_s: float, peak_kb: int, cores: int) -> None:
    stages = rule_stages()
    jobs = job_times(results)
    per_stage: dict[str, float] = defaultdict(float)
    per_rule: dict[str, list[float]] = defaultdict(list)
    for job in jobs:
        seconds = job["end"] - job["start"]
        per_stage[stage_of(job["rule"], stages)] += seconds
        per_rule[job["rule"]].append(seconds)
    busy = sum(per_stage.values())
    disk = folder_mb(results)
    print(f"quickstart study, {cores} cores, {len(jobs)} jobs")
    print(f"  wall time            {wall_s:7.1f} s   ({wall_s / BUDGET_SECONDS:.2f}x the README's budget of "
          f"{BUDGET_SECONDS} s)")
    print(f"  of which dry run     {dry_s:7.1f} s   (start-up and DAG building, measured alone before the run)")
    print(f"  peak memory          {peak_kb / 1024:7.0f} MB  (Snakemake and its jobs together)")
    print(f"  results on disk      {disk:7.1f} MB  ({disk / BUDGET_MB:.2f}x the budget of {BUDGET_MB} MB)")
    print(f"  jobs' time           {busy:7.1f} s   ({busy / (wall_s * cores):.0%} of {cores} cores x wall time)")
    print("where the jobs' time goes, per stage (rule file):")
    for stage, seconds in sorted(per_stage.items(), key=lambda item: -item[1]):
        print(f"  {stage:18s} {seconds:7.1f} s  {seconds / busy:5.1%}")
    print("the ten busiest rules (jobs, total seconds, longest job):")
    ranked = sorted(per_rule.items(), key=lambda item: -sum(item[1]))[:10]
    for rule, times in ranked:
        print(f"  {rule:28s} {len(times):3d} jobs {sum(times):7.1f} s  longest {max(times):6.1f} s")


if __name__ == "__main__":
    sys.exit(main())
