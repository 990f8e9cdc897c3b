"""How a stage's comparisons write their rows and details: one format for every paper item.

The stages' ``report.py`` modules build the rows of ``paper_comparison.csv`` with :func:`found_row`
(a study value in the paper's unit) and :func:`missing_row` (no value, and why), and their details
with the text helpers below, so that every analysis prints percentages, intervals, counts and
bootstrap p-values alike. Nothing here knows an analysis or imports a stage.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core.stats import format_p_value
from ..core.table_names import MODELS
from .items import PaperItem, StudyTables

COMPARED, NOT_COMPUTED = "compared", "not computed"
# The random-init control checkpoint, and the checkpoint of checkpoint-free baselines in the study tables.
CONTROL, NO_CHECKPOINT = "random", "none"
# input_protocol of the syntax tables: how treebank sentences were fed to the model.
INPUT_PROTOCOLS = {"words": "gold words joined by spaces ([C])", "text": "sentence text"}


def finite(value: Any) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def pct(value: Any, digits: int = 1) -> str:
    """A fraction as a percentage without the sign ('38.5'), 'n/a' without a number."""
    return f"{100 * float(value):.{digits}f}" if finite(value) else "n/a"


def ci_text(row: Mapping[str, Any], low: str = "ci_low", high: str = "ci_high") -> str:
    """'95% CI 36.1-40.9' from a row's interval columns, '' without them."""
    if finite(row.get(low)) and finite(row.get(high)):
        return f"95% CI {pct(row[low])}-{pct(row[high])}"
    return ""


def int_text(value: Any) -> str:
    return str(int(float(value))) if finite(value) else "n/a"


def join_text(*parts: str) -> str:
    """The non-empty parts of a detail, joined by '; '."""
    return "; ".join(p for p in parts if p)


def p_text(value: Any, resamples: Any) -> str:
    """A bootstrap p-value for a detail: 'p < 0.001' at the floor 1/B, 'p=0.012' otherwise ('' without one).

    ``resamples`` is the B the table's p-values were computed with (its ``bootstrap_resamples``); a row
    without it (not written by this workflow) has no known floor, and its p is printed as it stands.
    """
    if not finite(value):
        return ""
    if not finite(resamples):
        return f"p={float(value):.2g}"
    text = format_p_value(value, int(float(resamples)))
    return f"p {text}" if text.startswith("<") else f"p={text}"


def percent_value(found: pd.DataFrame, column: str, scale: float = 100.0) -> float:
    """``scale`` x the first row's ``column``, NaN when there is no row or no number."""
    if found.empty or not finite(found[column].iloc[0]):
        return np.nan
    return scale * float(found[column].iloc[0])


def task_order(tasks: Iterable[Any], known: Sequence[str]) -> list[str]:
    """The distinct tasks in the order of ``known`` (a stage's task list), unknown ones last."""
    known = list(known)
    return sorted({str(t) for t in tasks}, key=lambda t: (known.index(t) if t in known else len(known), t))


def input_protocol(rows: pd.DataFrame | pd.Series | Mapping[str, Any] | None) -> str:
    """The ``input_protocol`` of table rows ('words', 'text', both joined by ', '), or '' where there is none."""
    if rows is None:
        return ""
    if isinstance(rows, pd.DataFrame):
        values = rows["input_protocol"] if "input_protocol" in rows.columns else []
    else:
        values = [rows.get("input_protocol")]
    found = sorted({str(v).strip() for v in values if isinstance(v, str) and v.strip()})
    return ", ".join(found)


def input_text(protocol: str) -> str:
    """'input: gold words joined by spaces ([C])' for 'words', 'input: sentence text' for 'text'; '' for ''."""
    if not protocol:
        return ""
    return "input: " + " / ".join(INPUT_PROTOCOLS.get(p.strip(), p.strip()) for p in protocol.split(","))


def layers_and_heads(tables: StudyTables, model: str) -> tuple[int | None, int | None]:
    """(layers, heads) of ``model`` from models.csv (one row per model card, keyed by ``name``). The report imports
    no stage's code, so it does not call models/shape.py's ``models_row_shape``, which the explorer uses."""
    frame = tables.get(MODELS)
    if frame is None or "name" not in frame.columns:
        return None, None
    rows = frame[frame["name"].astype(str) == model]
    if rows.empty:
        return None, None
    row = rows.iloc[0]
    layers = int(row["num_layers"]) if finite(row.get("num_layers")) else None
    heads = int(row["num_heads"]) if finite(row.get("num_heads")) else None
    return layers, heads


# --- rows of paper_comparison.csv ----------------------------------------------------------------------


def _scaled(item: PaperItem, value: Any, fraction: bool = True) -> Any:
    """``value`` in the paper's unit: a fraction scaled unless ``fraction`` is False; text as it is."""
    if isinstance(value, str) or not fraction:
        return value
    return round(float(value) * item.scale, 2 if item.scale == 100 else 4)


def found_row(item: PaperItem, value: Any, detail: str, *, checkpoint: str = "", task: str = "",
              fraction: bool = True, protocol: str = "", same_split: Any = None, same_split_protocol: str = "",
              input_protocol: str = "") -> dict[str, Any]:
    """A compared row: ``value`` (and ``same_split``, [C]'s protocol) are fractions unless ``fraction`` is False."""
    same = _scaled(item, same_split, fraction) if finite(same_split) else ""
    return {"checkpoint": checkpoint, "task": task, "study_value": _scaled(item, value, fraction),
            "study_detail": detail, "status": COMPARED, "reason": "", "protocol": protocol,
            "same_split_value": same, "same_split_protocol": same_split_protocol if same != "" else "",
            "input_protocol": input_protocol}


def missing_row(reason: str, *, checkpoint: str = "", task: str = "", detail: str = "",
                input_protocol: str = "") -> dict[str, Any]:
    """A row the study cannot compute: no value, and the ``reason``."""
    return {"checkpoint": checkpoint, "task": task, "study_value": "", "study_detail": detail,
            "status": NOT_COMPUTED, "reason": reason, "input_protocol": input_protocol}
