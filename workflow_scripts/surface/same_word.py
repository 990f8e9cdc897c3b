"""Attention within a word: the share of a word piece's attention that goes to the other pieces of its own word.

[C] section 3 converts token-level maps to word level by summing the attention *to* a word's tokens and
averaging the attention *from* them; the attention a piece gives its own word's other pieces disappears in that
conversion. This measure keeps it: for a token ``i`` of a word split into two or more tokens,
``s_i = sum_{j != i, word(j) = word(i)} a_ij``; per head, the mean of ``s_i`` over every such token of every example
(a ratio of per-example sums: its 95% interval resamples examples). Special tokens and one-token words are not
counted (they have no other piece); an example without a split word adds nothing to either sum.
"""

from __future__ import annotations

import numpy as np

from .head_measures import ExampleTokens


def same_word_sums(attention: np.ndarray, tokens: ExampleTokens) -> tuple[np.ndarray, float]:
    """(layers, heads) summed attention of every split word's token to its word's other tokens; their count."""
    word = np.asarray(tokens.word)
    same = (word[:, None] == word[None, :]) & (word[:, None] >= 0)
    np.fill_diagonal(same, False)
    counted = same.any(axis=1)
    numerator = np.einsum("lhij,ij->lh", attention, same.astype(attention.dtype), dtype=np.float64)
    return numerator, float(counted.sum())
