"""Speedup of a built study's per-dump analyses from 1 to N cores, as Snakemake runs them.

    python benchmarks/bench_analyses.py --results RESULTS [--configfile FILE ...] [--config KEY=VALUE ...]
                                        [--cores 1,2] [--workflow DIR]

The analyses that sum over every example of a dump: the surface statistics and attention distance
(rules/surface.smk) of every (subject, checkpoint), and the dependency scoring (rules/syntax.smk) of every
(subject, checkpoint, treebank, split) of the study; each runs as one job per shard of its dump and a
gather. Their inputs (dumps, token tables, annotation, checkpoint manifests) come from RESULTS, a study
already built with the same config files, linked into a scratch results folder, so RESULTS is never
written. For each core count, the analyses' outputs are removed and Snakemake makes them again
(``--allowed-rules``: the analyses alone, their inputs taken as they are); the time is Snakemake's wall time
less that of a dry run of the same DAG (start-up and DAG building, measured in the same run). Prints each
core count's time, jobs and the speedup over the first. ``--workflow DIR`` runs another checkout's Snakefile
on the same targets (e.g. a worktree of an earlier commit, whose analyses ran one job per dump).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from workflow_scripts.study.build import build_study  # noqa: E402 - as above
from workflow_scripts.study.checks import resolve_config  # noqa: E402 - the repository is on sys.path only from here

# The rules of the analyses timed here (this checkout's and earlier ones', whose analyses had no shard rules).
ANALYSIS_RULES = re.compile(r"^(surface_heads|attention_distance|dependency_scores)(_part|_shard)?$")
# What a run writes; everything else of RESULTS is linked in as input.
WRITTEN = ("analysis", "logs", "tables", "figures", "report")


def targets(configfiles: list[str], cli: list[str], results: Path) -> list[str]:
    """The per-dump parts of the study's surface, distance and dependency analyses, under ``results``."""
    study = build_study(resolve_config(configfiles, [*cli, f"results={results}"]))
    out = []
    for model, checkpoint in study.surface.pairs:
        for name in ("surface_heads", "attention_distance"):
            out.append(study.paths.analysis("surface", model, checkpoint, f"{name}.csv"))
    for model, checkpoint, treebank in study.syntax.targets:
        for split in study.syntax.splits:
            out.append(study.paths.analysis("syntax", model, checkpoint, "dependency", f"{treebank}_{split}.parquet"))
    return out


def scratch_results(results: Path, scratch: Path) -> None:
    scratch.mkdir()
    for entry in results.iterdir():
        if entry.name not in WRITTEN and not entry.name.startswith("."):
            (scratch / entry.name).symlink_to(entry.resolve())


def allowed_rules(workflow: Path, base: list[str]) -> list[str]:
    listed = subprocess.run([sys.executable, "-m", "snakemake", *base, "--list-rules"], cwd=workflow,
                            capture_output=True, text=True, check=True).stdout.split()
    return [name for name in listed if ANALYSIS_RULES.match(name)]


def snakemake(workflow: Path, args: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=workflow, capture_output=True, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(args)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    return seconds, result.stdout + result.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, required=True, help="a built study's results folder (read only)")
    parser.add_argument("--configfile", nargs="*", default=[], help="the study's config files, as snakemake takes them")
    parser.add_argument("--config", nargs="*", default=[], help="the study's --config values (KEY=VALUE)")
    parser.add_argument("--cores", default="1,2", help="comma-separated core counts, the first is the baseline")
    parser.add_argument("--workflow", type=Path, default=REPO, help="the checkout whose Snakefile runs")
    args = parser.parse_args()
    cores = [int(c) for c in args.cores.split(",")]
    configfiles = [str(Path(f).resolve()) for f in args.configfile]
    with tempfile.TemporaryDirectory(dir=args.results.parent) as tmp:
        scratch = Path(tmp) / "results"
        scratch_results(args.results.resolve(), scratch)
        files = targets(configfiles, args.config, scratch)
        base = ["--configfile", *configfiles, "--config", *args.config, f"results={scratch}"]
        rules = allowed_rules(args.workflow, base)
        run = [*files, *base, "--allowed-rules", *rules, "--rerun-triggers", "mtime", "--quiet", "rules"]
        print(f"workflow {args.workflow}; study {args.results}: {len(files)} analysis parts, rules {', '.join(rules)}")
        timings = {}
        for n in cores:
            for written in WRITTEN:
                shutil.rmtree(scratch / written, ignore_errors=True)
            dry, listing = snakemake(args.workflow, [*run[:-2], "--cores", str(n), "--dry-run"])
            jobs = re.search(r"^total\s+(\d+)", listing, re.MULTILINE)
            wall, _ = snakemake(args.workflow, [*run, "--cores", str(n)])
            missing = [f for f in files if not Path(f).exists()]
            if missing:
                raise SystemExit(f"{len(missing)} outputs were not made, e.g. {missing[0]}")
            timings[n] = wall - dry
            print(f"--cores {n}: {wall:7.1f} s wall, less {dry:.1f} s of start-up and DAG (a dry run): "
                  f"{timings[n]:7.1f} s for {jobs.group(1) if jobs else '?'} jobs")
        first = cores[0]
        for n in cores[1:]:
            print(f"speedup of the analyses from {first} to {n} cores: {timings[first] / timings[n]:.2f}x")
        print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
