"""The ablation stage's study tables: ``tables/head_disabling.csv`` and ``tables/found_heads.csv``.

Each job writes one part (``analysis/ablation/MODEL/TASK.seedN/disabling.csv`` per fine-tuned run,
``analysis/ablation/MODEL/found_heads.csv`` per model); ``stack_parts`` stacks them (the generic rule
ablation_table, in the order its plan declares), checking that every part has the columns its stage writes. No
part (the check is off, or no task is ablated) gives a table of the columns alone, so that the report can still
read it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..core.io import stack_csv_parts, write_csv
from ..core.table_names import FOUND_HEADS, HEAD_DISABLING

log = logging.getLogger(__name__)

# The columns of each part, in order (the jobs write them from here too).
HEAD_DISABLING_COLUMNS = ["model", "checkpoint", "task", "metric", "mode", "layer", "head", "head_label", "score",
                          "baseline_score", "delta", "n_examples", "seconds"]
FOUND_HEADS_COLUMNS = ["model", "source", "layer", "head", "head_label", "random_head_label", "mode", "target",
                       "baseline", "ablated", "delta", "random_ablated", "random_delta", "n"]
# Each study table's columns, by its name (the generic rule ablation_table stacks them; its plan gives the sort key).
COLUMNS = {HEAD_DISABLING: HEAD_DISABLING_COLUMNS, FOUND_HEADS: FOUND_HEADS_COLUMNS}


def stack_parts(parts: Sequence[str | Path], output: str | Path, columns: Sequence[str],
                sort_by: Sequence[str]) -> pd.DataFrame:
    """The parts one under the other (in ``sort_by`` order, stable), with ``columns`` in that order."""
    table = stack_csv_parts(parts, output, sort_by=sort_by, columns=columns)
    write_csv(table, output)
    log.info("%d rows from %d part(s) written to %s", len(table), len(parts), output)
    return table
