"""Sentences grouped by similar length, for work on padded (n+1) x (n+1) arrays (the probes, dependency scoring)."""

from __future__ import annotations

import numpy as np


def length_batches(lengths: np.ndarray, max_sentences: int, max_cells: int) -> list[np.ndarray]:
    """Positions of sentences grouped by similar length (sorted, stable): at most ``max_sentences`` per group
    and ``max_cells`` cells once padded to the group's longest, n words counting (n+1)^2 cells."""
    order = np.argsort(lengths, kind="stable")
    batches, current = [], []
    for i in order:
        size = (int(lengths[i]) + 1) ** 2
        if current and (len(current) >= max_sentences or size * (len(current) + 1) > max_cells):
            batches.append(np.asarray(current))
            current = []
        current.append(i)
    if current:
        batches.append(np.asarray(current))
    return batches
