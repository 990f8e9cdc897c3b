"""Statistics shared by every analysis (METHODS 10): bootstrap intervals and paired tests.

Accuracies and shares are ratios of per-unit sums (correct / total per sentence
or example), so the bootstrap resamples units (sentences, examples), not tokens.
"""

from __future__ import annotations

import numpy as np

DEFAULT_RESAMPLES = 1000


def ratio_bootstrap_ci(numerators: np.ndarray, denominators: np.ndarray, *, resamples: int = DEFAULT_RESAMPLES,
                       seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """(estimate, low, high) of sum(numerators)/sum(denominators), resampling units.

    ``numerators`` may have extra trailing dimensions (e.g. one column per head):
    shape (units, ...) with ``denominators`` of shape (units,) or (units, ...).
    """
    numerators = np.asarray(numerators, dtype=np.float64)
    denominators = np.asarray(denominators, dtype=np.float64)
    denominators = np.broadcast_to(
        denominators.reshape(denominators.shape + (1,) * (numerators.ndim - denominators.ndim)), numerators.shape)
    total = denominators.sum(axis=0)
    estimate = np.divide(numerators.sum(axis=0), total, out=np.full(np.shape(total), np.nan), where=total > 0)
    n = numerators.shape[0]
    if n == 0:
        nan = np.full(np.shape(estimate), np.nan)
        return estimate, nan, nan
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)  # (resamples, units)
    num = np.tensordot(counts, numerators, axes=(1, 0))
    den = np.tensordot(counts, np.ascontiguousarray(denominators), axes=(1, 0))
    with np.errstate(invalid="ignore", divide="ignore"):
        samples = num / den
    alpha = (1 - level) / 2
    low, high = np.nanquantile(samples, [alpha, 1 - alpha], axis=0)
    return estimate, low, high


def paired_bootstrap_test(before: np.ndarray, after: np.ndarray, denominators: np.ndarray, *,
                          resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> tuple[float, float, float, float]:
    """Paired comparison of two ratios on the same units.

    Returns (difference after-before, ci low, ci high, two-sided p-value); the
    p-value is the bootstrap's share of resampled differences on the other side of 0, doubled.
    """
    before = np.asarray(before, dtype=np.float64)
    after = np.asarray(after, dtype=np.float64)
    denominators = np.asarray(denominators, dtype=np.float64)
    n = len(denominators)
    total = denominators.sum()
    if n == 0 or total == 0:
        return float("nan"), float("nan"), float("nan"), float("nan")
    difference = (after.sum() - before.sum()) / total
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)
    samples = (counts @ (after - before)) / (counts @ denominators)
    low, high = np.quantile(samples, [0.025, 0.975])
    if difference >= 0:
        p = 2 * np.mean(samples <= 0)
    else:
        p = 2 * np.mean(samples >= 0)
    return float(difference), float(low), float(high), float(min(1.0, p))
