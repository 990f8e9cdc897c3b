"""How a dump stores each example's maps: whole, or a decoder's lower triangle only.

A decoder's token attends to itself and the tokens before it: above the diagonal its maps are zero by
construction (for every signal: the weights, their norm-weighted version, their rollout). A causal model's
dump (its family says ``causal``, models/families.py) stores, per layer and head, the T(T+1)/2 values on and
below the diagonal, row by row (``numpy.tril_indices`` order); the reader puts them back into full T x T maps,
so that no analysis sees the difference. The manifest, each shard's record and its footer say the layout.
Before a map is cut to its triangle, its upper triangle is checked to be zero: a model declared causal that
attends ahead stops the extraction rather than losing weights.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..core.errors import AtlasError

FULL = "full"
LOWER_TRIANGLE = "lower_triangle"
LAYOUTS = (FULL, LOWER_TRIANGLE)


def stored_values(n_tokens: int, layout: str) -> int:
    """Values stored per map of an example of ``n_tokens`` tokens."""
    return n_tokens * (n_tokens + 1) // 2 if layout == LOWER_TRIANGLE else n_tokens * n_tokens


@lru_cache(maxsize=1024)
def _triangles(n_tokens: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(rows, columns) on and below the diagonal, then (rows, columns) above it."""
    return (*np.tril_indices(n_tokens), *np.triu_indices(n_tokens, 1))


def pack(maps: Any, layout: str, example_id: int) -> Any:
    """The stored values of an example's maps (..., T, T) (numpy or torch): the maps themselves, or their lower
    triangles (..., T(T+1)/2). ``example_id`` is named in the error of a causal model that attends ahead."""
    if layout == FULL:
        return maps
    rows, columns, above_rows, above_columns = _triangles(maps.shape[-1])
    if len(above_rows) and bool((maps[..., above_rows, above_columns] != 0).any()):
        raise AtlasError(f"example {example_id}: the model is declared causal (workflow_scripts/models/families.py) "
                         "but attends to tokens after the query; its maps cannot be stored as lower triangles. Fix "
                         "its family's declaration")
    return maps[..., rows, columns]


def unpack(values: np.ndarray, n_tokens: int, layout: str) -> np.ndarray:
    """Full maps (..., T, T) from stored values (..., stored_values(T)); the upper triangle is zero."""
    if layout == FULL:
        return values.reshape(*values.shape[:-1], n_tokens, n_tokens)
    maps = np.zeros((*values.shape[:-1], n_tokens, n_tokens), dtype=values.dtype)
    rows, columns, _, _ = _triangles(n_tokens)
    maps[..., rows, columns] = values
    return maps
