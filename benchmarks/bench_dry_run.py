"""How long a dry run of a study's whole DAG takes when there is nothing to do.

    python benchmarks/bench_dry_run.py [--configfile my-study.yaml] [--repeats 3]

Builds, in a temporary folder, every output of the study's DAG as an empty placeholder (the
file list comes from a dry run there, so no model or data is needed: the default study works
anywhere), then times `snakemake --dry-run` over it, which must print "Nothing to be done".
The baseline, measured in the same run, is `snakemake --version`: the interpreter and
Snakemake's own start-up, which no workflow can avoid. Target: under 5 s for the default study.

The SLURM executor plugin asks `sacct`/`squeue` about the cluster at every start; where the
SLURM client tools are installed but no controller answers, that alone adds seconds (see
README). Pass --no-slurm-tools to hide them from PATH and time the workflow itself.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SLURM_TOOLS = ("sacct", "squeue", "sinfo", "sbatch", "scontrol", "scancel")


def _environment(hide_slurm: bool, scratch: Path) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if not hide_slurm:
        return env
    # A PATH with everything but the SLURM client tools: links to every other program on it.
    bin_dir = scratch / "bin"
    bin_dir.mkdir()
    for folder in env.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            target = os.path.join(folder, name)
            if name not in SLURM_TOOLS and not (bin_dir / name).exists() and os.access(target, os.X_OK):
                (bin_dir / name).symlink_to(target)
    env["PATH"] = str(bin_dir)
    return env


def _snakemake(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd, env=env,
                            capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return seconds, result.stdout + result.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", action="append", default=[], help="study config(s), as for snakemake")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-slurm-tools", action="store_true", help="hide the SLURM client tools from PATH")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="atlas-dry-run-") as scratch:
        work = Path(scratch) / "study"
        work.mkdir()
        env = _environment(args.no_slurm_tools, Path(scratch))
        common = ["--snakefile", str(REPO / "Snakefile"), "--directory", str(work), "--cores", "2",
                  *[a for path in args.configfile for a in ("--configfile", str(Path(path).resolve()))]]
        _, plan = _snakemake([*common, "--dry-run"], env, work)
        outputs = {p.strip() for line in re.findall(r"^\s+(?:output|log): (.*)$", plan, re.M)
                   for p in line.split(",") if p.strip()}
        jobs = len(re.findall(r"^(?:local)?rule \S+:$", plan, re.M))
        # One shared mtime: no placeholder is newer than another, so nothing looks stale.
        stamp = time.time() - 60
        for name in outputs:
            path = work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
            os.utime(path, (stamp, stamp))
        baseline = [_snakemake(["--version"], env, work)[0] for _ in range(args.repeats)]
        timings = []
        for _ in range(args.repeats):
            seconds, text = _snakemake([*common, "--dry-run"], env, work)
            if "Nothing to be done" not in text:
                raise SystemExit(f"the dry run still has work to do:\n{text[-3000:]}")
            timings.append(seconds)
        shutil.rmtree(work / ".snakemake", ignore_errors=True)

    dry, start = statistics.median(timings), statistics.median(baseline)
    print(f"DAG: {jobs} jobs, {len(outputs)} output and log files (empty placeholders)")
    print(f"snakemake --version (start-up baseline): {start:.2f} s (median of {args.repeats})")
    print(f"dry run, nothing to do:                  {dry:.2f} s (median of {args.repeats}; "
          f"all: {', '.join(f'{t:.2f}' for t in timings)})")
    print(f"ratio dry run / start-up: {dry / start:.2f}x; workflow's own share: {dry - start:.2f} s; target < 5 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
