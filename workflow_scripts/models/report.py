"""The models stage's share of the report: the models table, and how the report orders checkpoints.

``models.csv`` gives the report a model's shape (layers x heads: the summary page's title, the
depth caveats of layer-numbered paper items). Checkpoint names are this stage's
(:func:`.checkpoints.parse_checkpoint_name`); the analyses' comparisons and panels order and pick
them with the functions below.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from ..core.errors import AtlasError
from ..core.table_names import MODELS
from ..report.formatting import CONTROL, NO_CHECKPOINT
from ..report.items import StageReport
from .checkpoints import parse_checkpoint_name

REPORT = StageReport(tables=(MODELS,))


def checkpoint_order(name: str) -> tuple:
    """pretrained, then fine-tuned (by task, seed, step; final last), then the random-init control."""
    try:
        info = parse_checkpoint_name(name)
    except AtlasError:
        return (3, name, 0, 0)
    if info["kind"] != "finetuned":
        return ({"pretrained": 0, CONTROL: 2}[info["kind"]], "", 0, 0)
    step = info["step"]
    return (1, info["task"], info["seed"], math.inf if step == "final" else step)


def compared_checkpoints(rows: pd.DataFrame, leave_out: Iterable[str] = ()) -> list[str]:
    """Checkpoints compared with a pretrained-model item: all but the random-init control, 'none' and ``leave_out``
    (the checkpoints measured for their head roles alone: StudyContext.role_checkpoints)."""
    names = {str(c) for c in rows["checkpoint"]} - {CONTROL, NO_CHECKPOINT, *leave_out}
    return sorted(names, key=checkpoint_order)


def main_checkpoint(rows: pd.DataFrame) -> str | None:
    """The checkpoint a summary panel shows: pretrained where the rows have it, else the first compared one."""
    names = compared_checkpoints(rows)
    return "pretrained" if "pretrained" in names else (names[0] if names else None)


def is_final(checkpoint: str) -> bool:
    try:
        return parse_checkpoint_name(checkpoint)["step"] == "final"
    except AtlasError:
        return False
