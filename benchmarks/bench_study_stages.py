"""Where a built study's time went, per stage and per job, from Snakemake's own job records: the next long pole.

    python benchmarks/bench_study_stages.py [--directory DIR] [--results RESULTS]

Reads the job records Snakemake keeps in DIR/.snakemake/metadata (DIR: the working directory of the study's runs,
by default the repository root) for every job that wrote under RESULTS (config ``results``, as the rules name it;
default ``results``) and prints, with no run of its own:

- the study's span (first job's start to last job's end) and the jobs' summed time, whose ratio is how many cores
  the jobs kept busy on average;
- per stage (the rule file that holds the rule): its wall time (how long at least one of its jobs ran), its jobs'
  summed time, the share of the span, its number of jobs and its longest job;
- the ten longest jobs with their first output and their share of the span: a job near 1.0x alone sets the
  study's wall time, whatever the number of cores.

Snakemake keeps one record per output, of the run that last wrote it: after reruns of some branches these are the
times of the latest build of each file, and the span covers them all. Build the study in one run (e.g.
``snakemake --profile profiles/offline --config mirror=PATH --cores 2`` in a fresh results folder) for a study's
wall time.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from study_times import busy_seconds, job_times  # noqa: E402 - on sys.path from here

sys.path.insert(0, str(REPO))
from workflow_scripts.study.forecast.dry_run import rule_stages, stage_of  # noqa: E402 - the repository, on sys.path


def stage_table(jobs: list[dict]) -> list[dict]:
    """Per stage: wall seconds (union of its jobs' intervals), summed job seconds, jobs and longest job; busiest
    wall time first."""
    stages = rule_stages()
    grouped: dict[str, list[dict]] = defaultdict(list)
    for job in jobs:
        grouped[stage_of(job["rule"], stages)].append(job)
    rows = []
    for stage, members in grouped.items():
        longest = max(members, key=lambda job: job["end"] - job["start"])
        rows.append({"stage": stage, "wall": busy_seconds([(j["start"], j["end"]) for j in members]),
                     "jobs_time": sum(j["end"] - j["start"] for j in members), "jobs": len(members),
                     "longest": longest["end"] - longest["start"], "longest_rule": longest["rule"]})
    return sorted(rows, key=lambda row: -row["wall"])


def duration(seconds: float) -> str:
    return f"{seconds:6.1f} s" if seconds < 600 else f"{seconds / 60:6.1f} m"


def report(jobs: list[dict], results: str) -> None:
    span = max(j["end"] for j in jobs) - min(j["start"] for j in jobs)
    summed = sum(j["end"] - j["start"] for j in jobs)
    print(f"study under {results}: {len(jobs)} jobs, span {duration(span).strip()} (first start to last end), "
          f"jobs' time {duration(summed).strip()} ({summed / max(span, 1e-9):.2f} cores busy on average)")
    print("per stage (rule file): wall time while any of its jobs ran, jobs' summed time, share of the span")
    print(f"  {'stage':18s} {'wall':>9s} {'jobs time':>10s} {'of span':>8s} {'jobs':>5s}  longest job")
    for row in stage_table(jobs):
        print(f"  {row['stage']:18s} {duration(row['wall']):>9s} {duration(row['jobs_time']):>10s} "
              f"{row['wall'] / max(span, 1e-9):8.0%} {row['jobs']:5d}  {duration(row['longest']).strip()} "
              f"({row['longest_rule']})")
    print("the ten longest jobs (the long poles: a job near 1.0x of the span sets the wall time alone)")
    for job in sorted(jobs, key=lambda j: j["start"] - j["end"])[:10]:
        seconds = job["end"] - job["start"]
        print(f"  {duration(seconds)}  {seconds / max(span, 1e-9):5.2f}x  {job['rule']:28s} {job['output']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--directory", type=Path, default=REPO,
                        help="the working directory of the study's runs (where .snakemake/ is)")
    parser.add_argument("--results", default="results", help="the study's results folder, as its config names it")
    args = parser.parse_args(argv)
    jobs = job_times(args.results, args.directory)
    if not jobs:
        print(f"no job of Snakemake's records in {args.directory / '.snakemake' / 'metadata'} wrote under "
              f"{args.results}/: give the working directory of the study's runs (--directory) and its results "
              "folder as its config names it (--results)")
        return 1
    report(jobs, args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
