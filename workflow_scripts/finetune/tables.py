"""The study's fine-tuning table (finetune_metrics.csv) from every run's metrics JSON, and which runs ended at chance.

A run whose final dev score is not above chance (its majority baseline; 0 for a correlation, whose constant predictor
has none) learnt nothing its dev split can show, so every fine-tuning effect measured on it (change per head, pattern
classes, lexical change, head disabling) is noise: the table marks it (``above_chance``), and the run's closing
message (runtime/closing_message.py) and summary panel E (finetune/report.py) say so."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.io import write_csv

log = logging.getLogger(__name__)

TABLE_COLUMNS = ["model", "task", "seed", "step", "metric", "value", "n_dev", "majority_baseline", "above_chance",
                 "main_metric", "checkpoint", "global_step", "n_train", "wall_time_s"]


def chance_level(baseline: Any) -> float:
    """The score a run must beat: its majority baseline, or 0 where that is undefined (a correlation of STS-B's
    constant predictor)."""
    try:
        value = float(baseline)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def above_chance(value: Any, baseline: Any) -> bool:
    try:
        return float(value) > chance_level(baseline)
    except (TypeError, ValueError):
        return False


def runs_at_chance(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The final checkpoints whose main dev metric is not above chance, one dict per run (model, task, seed, metric,
    value, chance), from finetune_metrics.csv read as a DataFrame."""
    if table.empty or "main_metric" not in table:
        return []
    final = table[(table["main_metric"].astype(str).str.lower() == "true") & (table["step"].astype(str) == "final")]
    return [{"model": str(row["model"]), "task": str(row["task"]), "seed": int(row["seed"]),
             "metric": str(row["metric"]), "value": float(row["value"]),
             "chance": chance_level(row["majority_baseline"])}
            for _, row in final.iterrows() if not above_chance(row["value"], row["majority_baseline"])]


def metrics_table(paths: list[str | Path], output: str | Path) -> pd.DataFrame:
    """One row per (run, evaluated checkpoint, metric) from every run's metrics JSON."""
    rows = []
    for path in paths:
        record = json.loads(Path(path).read_text())
        for evaluation in record["evaluations"]:
            for metric, value in evaluation["metrics"].items():
                baseline = record["majority_baseline"].get(metric)
                rows.append({"model": record["model"], "task": record["task"], "seed": record["seed"],
                             "step": evaluation["step"], "metric": metric, "value": value,
                             "n_dev": record["n_dev"], "majority_baseline": baseline,
                             "above_chance": above_chance(value, baseline),
                             "main_metric": metric == record["main_metric"], "checkpoint": evaluation["checkpoint"],
                             "global_step": evaluation["global_step"], "n_train": record["n_train"],
                             "wall_time_s": record.get("wall_time_s")})
    frame = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    frame = frame.sort_values(["model", "task", "seed", "global_step", "checkpoint", "metric"], kind="stable")
    write_csv(frame, output)
    log.info("%d runs, %d rows", len(paths), len(frame))
    for run in runs_at_chance(frame):
        log.info("%s", at_chance_line(run))
    return frame


def at_chance_line(run: dict[str, Any]) -> str:
    """One run at chance, as the closing message and the job's log say it."""
    return (f"{run['model']} fine-tuned on {run['task']} (seed {run['seed']}) is not above chance: final dev "
            f"{run['metric']} {run['value']:.3f}, chance {run['chance']:.3f}; its fine-tuning effects are noise "
            "(raise finetune.learning_rate, or finetune.lora_learning_rate for LoRA, or the epochs)")


def at_chance_warnings(table_path: str | Path) -> list[str]:
    """The closing message's lines on the runs at chance of finetune_metrics.csv ([] where it is absent)."""
    path = Path(table_path)
    if not path.is_file():
        return []
    runs = runs_at_chance(pd.read_csv(path))
    if not runs:
        return []
    return ["Fine-tuning that learnt nothing (not above chance on its dev split; the report's panel E marks it):",
            *(f"  {at_chance_line(run)}" for run in runs)]
