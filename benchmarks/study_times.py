"""Snakemake's own record of a study's jobs (.snakemake/metadata): when each job ran (the stage of each rule is
the plan's: ``workflow_scripts.study.forecast.dry_run.rule_stages``).

Shared by bench_quickstart.py and bench_study_stages.py. Snakemake keeps one record per output file, with the job's
rule, start and end times and a hash of the job; a job with several outputs has one record per output.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def job_times(results: str | Path, workdir: Path = REPO) -> list[dict]:
    """Every job that wrote under ``results`` (as its rules name it: relative to ``workdir``, or absolute), as
    Snakemake recorded it in ``workdir``: rule, start, end (seconds since the epoch) and its first output."""
    prefix = f"{str(results).rstrip('/')}/"
    jobs: dict[tuple, dict] = {}
    folder = Path(workdir) / ".snakemake" / "metadata"
    for record in sorted(folder.iterdir()) if folder.is_dir() else ():
        try:
            path = base64.b64decode(record.name.replace("@", "/")).decode()
            meta = json.loads(record.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            continue
        if not path.startswith(prefix) or meta.get("starttime") is None:
            continue
        # A job with several outputs has a record per output, each with its own start: one job per hash.
        key = (meta["rule"], meta.get("job_hash"))
        end = meta.get("endtime") or meta["starttime"]
        job = jobs.setdefault(key, {"rule": meta["rule"], "start": meta["starttime"], "end": end, "output": path})
        job["start"], job["end"] = min(job["start"], meta["starttime"]), max(job["end"], end)
        job["output"] = min(job["output"], path)
    return list(jobs.values())


def busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """How long at least one of the intervals was running: the length of their union."""
    total, current_start, current_end = 0.0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total
