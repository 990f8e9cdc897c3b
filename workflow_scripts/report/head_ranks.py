"""Ranking heads by a role's score: the top heads, the heads with the role, and Spearman's rho of two subjects' scores
with its bootstrap interval over heads (tables/role_agreement.csv, docs/roles.md)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

TOP_SHARE, TOP_MIN = 0.05, 3
LEVEL = 0.95


def top_count(heads: int) -> int:
    """How many top heads a subject has: 5% of its heads, at least 3 (all of them where it has fewer)."""
    return min(heads, max(TOP_MIN, math.ceil(TOP_SHARE * heads)))


def top_heads(scores: pd.Series, count: int) -> set[tuple[int, int]]:
    """The ``count`` (layer, head) of highest score, among the heads above the lowest score (a head tied with the
    lowest is never a top head: the heads a hand-set or untrained model leaves at 0 are no role's); ties go to the
    lower layer, then the lower head."""
    scores = scores[scores > scores.min()] if len(scores) > 1 else scores
    ordered = scores.reset_index().sort_values(["score", "layer", "head"], ascending=[False, True, True],
                                               kind="stable")
    return set(zip(ordered["layer"].head(count).astype(int), ordered["head"].head(count).astype(int), strict=True))


def role_heads(scores: pd.Series, threshold: float | None) -> set[tuple[int, int]]:
    """The heads with the role: score above ``threshold``, or the top heads where the role has no threshold."""
    if threshold is None:
        return top_heads(scores, top_count(len(scores)))
    above = scores[scores > threshold]
    return set(zip(above.index.get_level_values("layer").astype(int), above.index.get_level_values("head").astype(int),
                   strict=True))


def _spearman_rows(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row of ``first`` with the same row of ``second`` (average ranks for ties; NaN where a
    row is constant)."""
    from scipy.stats import rankdata

    x, y = rankdata(first, axis=-1), rankdata(second, axis=-1)
    x, y = x - x.mean(axis=-1, keepdims=True), y - y.mean(axis=-1, keepdims=True)
    spread = np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread > 0, (x * y).sum(axis=-1) / np.where(spread > 0, spread, 1.0), np.nan)


def spearman_interval(first: np.ndarray, second: np.ndarray, *, resamples: int, seed: int,
                      level: float = LEVEL) -> tuple[float, float, float]:
    """(rho, low, high): Spearman's rho of the paired scores and its percentile bootstrap interval over the pairs."""
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    rho = float(_spearman_rows(first, second))
    if len(first) < 3 or not np.isfinite(rho) or resamples <= 0:
        return rho, np.nan, np.nan
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(first), size=(resamples, len(first)))
    samples = _spearman_rows(first[picks], second[picks])
    alpha = (1 - level) / 2
    low, high = np.nanquantile(samples, [alpha, 1 - alpha]) if np.isfinite(samples).any() else (np.nan, np.nan)
    return rho, float(low), float(high)
