"""Examples grouped by similar length, so that little work goes to padding: extraction's batches (a batch costs
its longest example's tokens per example) and the probes' (a sentence of n words is an (n+1) x (n+1) array, padded
to the batch's longest)."""

from __future__ import annotations

import numpy as np


def length_batches(padded_sizes: np.ndarray, max_items: int, max_total: int) -> list[np.ndarray]:
    """Positions grouped by similar size (sorted, stable): at most ``max_items`` per group, and a group's largest
    size times its count at most ``max_total`` (one item alone may exceed it). ``padded_sizes``: what an item costs
    once padded, increasing with its length (extraction: its tokens; a word array: (n+1)^2 cells)."""
    order = np.argsort(padded_sizes, kind="stable")
    batches: list[np.ndarray] = []
    current: list[int] = []
    for index in order:
        largest = int(padded_sizes[index])  # ascending order: the newest item is the largest
        if current and (len(current) >= max_items or largest * (len(current) + 1) > max_total):
            batches.append(np.asarray(current))
            current = []
        current.append(int(index))
    if current:
        batches.append(np.asarray(current))
    return batches
