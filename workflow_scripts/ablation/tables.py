"""The ablation stage's study tables: ``tables/head_disabling.csv`` and ``tables/found_heads.csv``.

Each job writes one part (``analysis/ablation/MODEL/TASK.seedN/disabling.csv`` per fine-tuned run,
``analysis/ablation/MODEL/found_heads.csv`` per model); these functions stack them, checking that every
part has the columns its stage writes. No part (the check is off, or no task is ablated) gives a table of
the columns alone, so that the report can still read it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..core.io import stack_csv_parts, write_csv

log = logging.getLogger(__name__)

# The columns of each part, in order (the jobs write them from here too).
HEAD_DISABLING_COLUMNS = ["model", "checkpoint", "task", "metric", "mode", "layer", "head", "head_label", "score",
                          "baseline_score", "delta", "n_examples", "seconds"]
FOUND_HEADS_COLUMNS = ["model", "source", "layer", "head", "head_label", "random_head_label", "mode", "target",
                       "baseline", "ablated", "delta", "random_ablated", "random_delta", "n"]


def stack_parts(parts: Sequence[str | Path], output: str | Path, columns: Sequence[str],
                sort_by: Sequence[str]) -> pd.DataFrame:
    """The parts one under the other (in ``sort_by`` order, stable), with ``columns`` in that order."""
    table = stack_csv_parts(parts, output, sort_by=sort_by, columns=columns)
    write_csv(table, output)
    log.info("%d rows from %d part(s) written to %s", len(table), len(parts), output)
    return table


def head_disabling_table(parts: Sequence[str | Path], output: str | Path) -> pd.DataFrame:
    # Within a part rows stay in its order: mode (the config's order), then layer, then head.
    return stack_parts(parts, output, HEAD_DISABLING_COLUMNS, ["model", "checkpoint"])


def found_heads_table(parts: Sequence[str | Path], output: str | Path) -> pd.DataFrame:
    return stack_parts(parts, output, FOUND_HEADS_COLUMNS, ["model"])
