"""The study's fine-tuning table (finetune_metrics.csv) from every run's metrics JSON."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from ..core.io import write_csv

log = logging.getLogger(__name__)

TABLE_COLUMNS = ["model", "task", "seed", "step", "metric", "value", "n_dev", "majority_baseline",
                 "main_metric", "checkpoint", "global_step", "n_train", "wall_time_s"]


def metrics_table(paths: list[str | Path], output: str | Path) -> pd.DataFrame:
    """One row per (run, evaluated checkpoint, metric) from every run's metrics JSON."""
    rows = []
    for path in paths:
        record = json.loads(Path(path).read_text())
        for evaluation in record["evaluations"]:
            for metric, value in evaluation["metrics"].items():
                rows.append({"model": record["model"], "task": record["task"], "seed": record["seed"],
                             "step": evaluation["step"], "metric": metric, "value": value,
                             "n_dev": record["n_dev"], "majority_baseline": record["majority_baseline"].get(metric),
                             "main_metric": metric == record["main_metric"], "checkpoint": evaluation["checkpoint"],
                             "global_step": evaluation["global_step"], "n_train": record["n_train"],
                             "wall_time_s": record.get("wall_time_s")})
    frame = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    frame = frame.sort_values(["model", "task", "seed", "global_step", "checkpoint", "metric"], kind="stable")
    write_csv(frame, output)
    log.info("%d runs, %d rows", len(paths), len(frame))
    return frame
