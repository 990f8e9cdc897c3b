"""What a role agreement row is read against (docs/roles.md, "Reading a rho"): the noise floor of a role on the study's
own data, the best head's move, and the verdict.

- The **split-half floor** of a role: the first subject's per-head scores on two fixed halves of its examples
  (tables/atlas_halves.csv), their Spearman rho over the heads the pair compares (``split_half_rho``, with its
  percentile bootstrap interval over heads), corrected by Spearman-Brown to the full number of examples:
  ``floor = 2 r / (1 + r)`` (r >= 0; a negative r is kept as it is), applied to the estimate and to each end of its
  interval (``floor_rho``, ``floor_low``, ``floor_high``; ``floor_correction`` says so). It estimates how far two
  measurements of the same checkpoint on independent examples of the study's size agree.
- The **verdict**: ``same weights`` when the two checkpoints hold the same weights (nothing to compare, whatever the
  numbers); ``noisy`` when the floor is below ``roles.noisy_below`` (the role cannot be measured on this data);
  ``moved`` when the pair's rho interval lies wholly below the floor's interval; ``kept`` when they overlap (or the
  pair's lies above). No verdict without a floor (the role has no halves) or without a rho (constant scores).
  Both subjects are scored on the same examples, so their rho under no change would exceed the floor: ``moved`` is a
  conservative call.
- The **best head**: the first subject's top head (ties: lower layer, then head) and the second's, whether it stays
  the top (``best_kept``), and its score's change ``best_change`` (second minus first) with a 95% interval from the
  two scores' intervals, as if independent (``sqrt(se_1^2 + se_2^2)``, se = interval width / (2 x 1.96)): wider
  than a paired interval, since both were measured on the same examples.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .head_ranks import spearman_interval, top_heads

Z95 = 1.959963984540054
SAME_WEIGHTS, NOISY, MOVED, KEPT = "same weights", "noisy", "moved", "kept"
CORRECTION = "spearman-brown"


def spearman_brown(r: float) -> float:
    """The reliability of a measure twice as long as one whose halves correlate r: 2 r / (1 + r); r < 0 unchanged
    (no correction is defined for a measure that disagrees with itself) and NaN kept."""
    if not np.isfinite(r) or r < 0:
        return r
    return 2 * r / (1 + r)


def split_half_floor(halves: pd.DataFrame | None, heads: pd.Index, *, resamples: int,
                     seed: int) -> dict[str, Any]:
    """The floor columns of one role of the first subject: ``halves`` its rows of atlas_halves.csv indexed by
    (layer, head), over the ``heads`` the pair compares."""
    empty = {"split_half_rho": np.nan, "floor_rho": np.nan, "floor_low": np.nan, "floor_high": np.nan,
             "floor_correction": ""}
    if halves is None or halves.empty:
        return empty
    rows = halves.reindex(heads).dropna(subset=["score_half_a", "score_half_b"])
    if len(rows) < 3:
        return empty
    rho, low, high = spearman_interval(rows["score_half_a"].to_numpy(float), rows["score_half_b"].to_numpy(float),
                                       resamples=resamples, seed=seed)
    return {"split_half_rho": rho, "floor_rho": spearman_brown(rho), "floor_low": spearman_brown(low),
            "floor_high": spearman_brown(high), "floor_correction": CORRECTION}


def verdict(row: dict[str, Any], *, noisy_below: float, same_weights: bool) -> str:
    """``same weights``, ``noisy``, ``moved``, ``kept``, or '' (no floor or no rho): see the module's docstring."""
    if same_weights:
        return SAME_WEIGHTS
    floor, rho = row.get("floor_rho", np.nan), row.get("rho", np.nan)
    if not np.isfinite(floor) or not np.isfinite(rho):
        return ""
    if floor < noisy_below:
        return NOISY
    high, floor_low = row.get("rho_high", np.nan), row.get("floor_low", np.nan)
    if np.isfinite(high) and np.isfinite(floor_low) and high < floor_low:
        return MOVED
    return KEPT


def head_label(head: tuple[int, int]) -> str:
    """'layer:head', counted from 0 as the atlas counts."""
    return f"{head[0]}:{head[1]}"


def _standard_error(low: float, high: float) -> float:
    return (high - low) / (2 * Z95) if np.isfinite(low) and np.isfinite(high) else np.nan


def best_head_change(first: pd.DataFrame, second: pd.DataFrame) -> dict[str, Any]:
    """The best-head columns of one role: ``first`` and ``second`` the two subjects' rows indexed by (layer, head)
    with ``score``, ``ci_low`` and ``ci_high``."""
    found_first, found_second = top_heads(first["score"], 1), top_heads(second["score"], 1)
    if not found_first:  # every head of the first subject scores the same: no best head
        return {"first_best": "", "second_best": head_label(min(found_second)) if found_second else "",
                "best_kept": None, "best_change": np.nan, "best_change_low": np.nan, "best_change_high": np.nan}
    top_first = min(found_first)
    top_second = min(found_second) if found_second else None
    before = first.loc[top_first]
    after = second.loc[top_first] if top_first in second.index else None
    change = low = high = np.nan
    if after is not None and np.isfinite(after["score"]):
        change = float(after["score"]) - float(before["score"])
        spread = math.hypot(_standard_error(float(before["ci_low"]), float(before["ci_high"])),
                            _standard_error(float(after["ci_low"]), float(after["ci_high"])))
        if np.isfinite(spread):
            low, high = change - Z95 * spread, change + Z95 * spread
    return {"first_best": head_label(top_first), "second_best": head_label(top_second) if top_second else "",
            "best_kept": top_first == top_second, "best_change": change, "best_change_low": low,
            "best_change_high": high}
