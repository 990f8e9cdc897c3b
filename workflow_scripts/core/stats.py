"""Statistics shared by every analysis (METHODS 10): bootstrap intervals, paired tests, held-out splits.

Accuracies and shares are ratios of per-unit sums (correct / total per sentence
or example), so the bootstrap resamples units (sentences, examples), not tokens.

Bootstrap p-values are never 0: with B resamples the smallest p a bootstrap can
resolve is 1/B, so :func:`bootstrap_p_value` reports max(2k/B, 1/B) (k: resamples on the
other side of 0). A p of exactly 1/B in a table therefore means "no resample reached 0",
i.e. p < 1/B, and :func:`format_p_value` prints it so ("< 0.001" for B = 1000).

B (``resamples``) and the seed are always the caller's: they are config values (the stages'
``bootstrap_resamples`` and ``bootstrap_seed``), whose defaults live in the config schema only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# The floor p log p takes its log at: 0 log 0 = 0, and every positive float16 value (6e-8 and up) keeps its own.
PLOGP_FLOOR = np.float32(1e-30)


def plogp(p: np.ndarray) -> np.ndarray:
    """p log p elementwise, 0 log 0 = 0 (float32 stays float32)."""
    return p * np.log(np.maximum(p, PLOGP_FLOOR))


def entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """The entropy (nats) of the distributions along ``axis``, 0 log 0 = 0."""
    return -plogp(p).sum(axis)


def ratio_bootstrap_ci(numerators: np.ndarray, denominators: np.ndarray, *, resamples: int, seed: int,
                       level: float = 0.95) -> tuple[float, float, float]:
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
                          resamples: int, seed: int) -> tuple[float, float, float, float]:
    """Paired comparison of two ratios on the same units.

    Returns (difference after-before, ci low, ci high, two-sided p-value); the
    p-value is the bootstrap's share of resampled differences on the other side of 0, doubled,
    and never below 1/``resamples`` (:func:`bootstrap_p_value`; print it with :func:`format_p_value`).
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
    return float(difference), float(low), float(high), bootstrap_p_value(samples, difference)


def bootstrap_p_value(samples: np.ndarray, observed: float) -> float:
    """Two-sided bootstrap p-value of ``observed`` != 0, bounded below by 1/B.

    k = the resampled values on the other side of 0 from ``observed`` (0 itself counts);
    p = min(1, max(2k/B, 1/B)) with B = len(samples). p is never 0: when no resample reached 0
    (k = 0) it is exactly 1/B, which reads "p < 1/B" (:func:`format_p_value`); any k >= 1 gives
    p >= 2/B, so the floor is unambiguous.
    """
    samples = np.asarray(samples, dtype=np.float64)
    resamples = len(samples)
    if resamples == 0 or not np.isfinite(observed):
        return float("nan")
    k = int(np.sum(samples <= 0)) if observed >= 0 else int(np.sum(samples >= 0))
    return float(min(1.0, max(2 * k / resamples, 1.0 / resamples)))


def format_p_value(p: object, resamples: int) -> str:
    """A bootstrap p-value as text: "< 1/B" (e.g. "< 0.001") at the floor, else 2 significant digits.

    The floor is 1/B (:func:`bootstrap_p_value`); a p at or below it (a p of 0 from an older table too)
    prints as "< 1/B", never as 0. Not a number: "n/a".
    """
    try:
        value = float(p)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "n/a"
    if not np.isfinite(value):
        return "n/a"
    floor = 1.0 / max(int(resamples), 1)
    if value <= floor * (1 + 1e-9):
        return f"< {floor:.3g}"
    return f"{value:.2g}"


def grouped_holdout(classes: Sequence[object], groups: Sequence[object], fraction: float, seed: int) -> np.ndarray:
    """Boolean mask of held-out items: whole groups held out, seeded, stratified by class as far as groups allow.

    Every group (e.g. one example, whose maps from different heads go together) lies on one side only.
    Each class found in at least two groups aims at round(``fraction`` x its items) held-out items (at
    least 1, at most all but 1) and always keeps at least one group in training; a class found in one
    group only stays in training, and so does that group. Groups are visited largest first (ties in a
    seeded random order) and each goes to the side, held out or training, whose class counts it brings
    closer to their targets (squared shortfall relative to the target); a class that still has nothing
    held out then gets the group that costs the least. With one item per group this is a plain stratified split.
    """
    classes, groups = np.asarray(classes), np.asarray(groups)
    if classes.shape != groups.shape:
        raise ValueError(f"{len(classes)} classes but {len(groups)} groups")
    if len(classes) == 0 or fraction <= 0:
        return np.zeros(len(classes), dtype=bool)
    _, group_of = np.unique(groups, return_inverse=True)
    _, class_of = np.unique(classes, return_inverse=True)
    counts = np.zeros((group_of.max() + 1, class_of.max() + 1))
    np.add.at(counts, (group_of, class_of), 1)
    present = counts > 0
    groups_per_class = present.sum(axis=0)
    total = counts.sum(axis=0)
    held_target = np.where(groups_per_class >= 2, np.clip(np.round(fraction * total), 1, total - 1), 0)
    targets = np.stack([total - held_target, held_target])  # side 0: training, side 1: held out
    weight = 1.0 / np.maximum(targets, 1)
    filled = np.zeros_like(targets)
    held_groups = np.zeros(counts.shape[1], dtype=np.int64)
    chosen = np.zeros(len(counts), dtype=bool)

    def change(side: int, g: int, sign: int = 1) -> float:
        """How much adding (sign 1) or removing (-1) group g on ``side`` changes that side's cost."""
        after = filled[side] + sign * counts[g] - targets[side]
        return float((weight[side] * (after ** 2 - (filled[side] - targets[side]) ** 2)).sum())

    def allowed(g: int) -> bool:
        return not chosen[g] and bool(np.all(held_groups[present[g]] + 1 < groups_per_class[present[g]]))

    def hold(g: int) -> None:
        chosen[g] = True
        filled[1] += counts[g]
        held_groups[present[g]] += 1

    order = np.random.default_rng(seed).permutation(len(counts))
    order = order[np.argsort(-counts[order].sum(axis=1), kind="stable")]
    for g in order:
        if allowed(g) and change(1, g) < change(0, g):
            hold(g)
        else:
            filled[0] += counts[g]
    for k in np.argsort(groups_per_class, kind="stable"):  # rarest classes first
        if held_target[k] == 0 or filled[1, k] > 0:
            continue
        candidates = [g for g in order if present[g, k] and allowed(g)]
        if candidates:
            g = min(candidates, key=lambda g: change(1, g) + change(0, g, -1))
            filled[0] -= counts[g]
            hold(g)
    return chosen[group_of]
