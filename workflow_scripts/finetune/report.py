"""The fine-tuning stage's share of the report: ``finetune_metrics.csv`` and summary panel E."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.table_names import FINETUNE_METRICS
from ..report.drawing import not_in_study
from ..report.formatting import finite, task_order
from ..report.items import PaperItem, StageReport, StudyContext, StudyTables, SummaryPanel
from .tables import above_chance
from .tasks import TASK_NAMES

METRIC_NAMES = {"matthews_corr": "MCC", "accuracy": "acc", "f1": "F1", "pearson": "Pearson", "spearman": "Spearman"}
DEV_NOTE = "each task's dev split"


def draw_finetune(ax: Any, model: str, tables: StudyTables, items: Sequence[PaperItem],
                  ctx: StudyContext) -> str | None:
    """Panel E: the final checkpoints' dev scores (main GLUE metric, mean of seeds) beside the majority baseline."""
    title = "E  Fine-tuning: dev score vs majority baseline"
    rows, why = tables.model_rows(FINETUNE_METRICS, model)
    if rows is None:
        return not_in_study(ax, title, why)
    main = rows["main_metric"].astype(str).str.lower() == "true"
    rows = rows[main & (rows["step"].astype(str) == "final")]
    if rows.empty:
        return not_in_study(ax, title, f"{FINETUNE_METRICS}.csv has no final checkpoint for this model")
    tasks = task_order(rows["task"], TASK_NAMES)
    x = np.arange(len(tasks))
    means, majority, names = [], [], []
    for xx, task in zip(x, tasks):
        part = rows[rows["task"].astype(str) == task]
        values = 100 * part["value"].astype(float).to_numpy()
        means.append(float(np.nanmean(values)) if np.isfinite(values).any() else np.nan)
        if len(values) > 1:
            ax.plot(np.full(len(values), xx), values, "o", color="navy", markersize=2.5)
        base = pd.to_numeric(part["majority_baseline"], errors="coerce").iloc[0]
        majority.append(100 * float(base) if finite(base) else np.nan)
        metric = str(part["metric"].iloc[0])
        names.append(f"{TASK_NAMES.get(task, task)}\n{METRIC_NAMES.get(metric, metric)}")
    # A run not above chance learnt nothing its dev split shows: its bar is grey and says so (its effects are noise).
    learnt = [above_chance(mean / 100, base / 100 if np.isfinite(base) else None)
              for mean, base in zip(means, majority)]
    colours = ["tab:green" if ok else "0.7" for ok in learnt]
    ax.bar(x, means, width=0.6, color=colours, label="fine-tuned (final" + (", mean of seeds)"
                                                                            if rows["seed"].nunique() > 1 else ")"))
    ax.hlines(majority, x - 0.35, x + 0.35, color="black", linewidth=1.5, label="majority baseline")
    for xx, value, ok, base in zip(x, means, learnt, majority):
        if np.isfinite(value):
            # Above the bar and its baseline's line, so that the words cross neither.
            top = max(value, base if np.isfinite(base) else 0, 0)
            ax.text(xx, top + 1.5, f"{value:.0f}" if ok else f"{value:.0f}\nat chance:\neffects\nare noise",
                    ha="center", va="bottom", fontsize=6.5, color="black" if ok else "firebrick")
    ax.axhline(0, color="0.5", linewidth=0.6)
    ax.set_xticks(x)
    ax.set_xticklabels(names, fontsize=6.5)
    low = min(0.0, float(np.nanmin([*means, 0.0])) - 5)
    ax.set_ylim(low, 105)
    ax.set_ylabel("dev score (x100; main GLUE metric)", fontsize=8)
    note = "final checkpoints; no majority baseline for STS-B" if "stsb" in tasks else "final checkpoints"
    ax.set_title(f"{title}\n({note})", fontsize=9, loc="left")
    ax.legend(fontsize=6.5, loc="upper right", frameon=False)
    return None


REPORT = StageReport(tables=(FINETUNE_METRICS,), panels=(SummaryPanel("E", draw_finetune, DEV_NOTE),))
