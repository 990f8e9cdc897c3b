"""benchmarks/bench_study_stages.py: per-stage wall time and the longest jobs from Snakemake's job records, on
records the test writes with known times."""

from __future__ import annotations

import base64
import importlib.util
import json
import sys

from support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
spec = importlib.util.spec_from_file_location("bench_study_stages", REPO / "benchmarks" / "bench_study_stages.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
from study_times import busy_seconds, job_times  # noqa: E402 - benchmarks/ is on sys.path from here


def record(workdir, output, rule, start, end, job_hash):
    folder = workdir / ".snakemake" / "metadata"
    folder.mkdir(parents=True, exist_ok=True)
    name = base64.b64encode(output.encode()).decode().replace("/", "@")
    (folder / name).write_text(json.dumps({"rule": rule, "starttime": start, "endtime": end, "job_hash": job_hash}))


def test_union_of_intervals():
    assert busy_seconds([(0, 10), (5, 15), (20, 25)]) == 20
    assert busy_seconds([]) == 0


def test_stages_and_long_poles_from_the_records(tmp_path, capsys):
    # Two extraction jobs side by side (0-100, 50-150), a gather after them, and a long ablation job (150-750).
    dump = "results/attention/m/pretrained/ewt/dev"
    record(tmp_path, f"{dump}/shard-0000-of-0002.parquet", "extract_attention", 0, 100, 1)
    record(tmp_path, f"{dump}/parts/shard-0000-of-0002.json", "extract_attention", 0, 100, 1)
    record(tmp_path, f"{dump}/shard-0001-of-0002.parquet", "extract_attention", 50, 150, 2)
    record(tmp_path, f"{dump}/manifest.json", "attention_dump_manifest", 150, 160, 3)
    record(tmp_path, "results/analysis/ablation/m/found_heads.csv", "found_heads", 150, 750, 4)
    record(tmp_path, "elsewhere/x.csv", "found_heads", 0, 9999, 5)  # not under the results folder
    jobs = job_times("results", tmp_path)
    assert len(jobs) == 4  # a job's outputs share one record each, counted once
    rows = {row["stage"]: row for row in bench.stage_table(jobs)}
    assert rows["attention"]["wall"] == 160 and rows["attention"]["jobs_time"] == 210 and rows["attention"]["jobs"] == 3
    assert rows["ablation"]["wall"] == 600 and rows["ablation"]["longest_rule"] == "found_heads"
    assert list(rows) == ["ablation", "attention"]  # the busiest wall time first
    assert bench.main(["--directory", str(tmp_path), "--results", "results"]) == 0
    out = capsys.readouterr().out
    assert "4 jobs, span 12.5 m" in out and "0.80x  found_heads" in out
    assert bench.main(["--directory", str(tmp_path), "--results", "other"]) == 1
