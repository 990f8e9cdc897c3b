"""Word alignment by character offsets and the token-to-word conversion (METHODS 5, 6).

Words are never re-tokenised: a model token belongs to the word its character
span overlaps most (in the same text of a pair), so cased, uncased and
byte-level BPE tokenizers align the same way.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import AtlasError
from ..core.float16 import float16_to_float32


def align_tokens_to_words(token_start: np.ndarray, token_end: np.ndarray, token_segment: np.ndarray,
                          word_start: np.ndarray, word_end: np.ndarray, word_segment: np.ndarray) -> np.ndarray:
    """Index of the word each token belongs to, or -1 (special tokens, tokens over no word).

    A token belongs to the word of its own segment whose character span it
    overlaps most; on a tie, the first such word. Special tokens carry segment -1
    and empty spans and so belong to no word.
    """
    token_start, token_end = np.asarray(token_start), np.asarray(token_end)
    word_start, word_end = np.asarray(word_start), np.asarray(word_end)
    if len(word_start) == 0 or len(token_start) == 0:
        return np.full(len(token_start), -1, dtype=np.int32)
    overlap = (np.minimum(token_end[:, None], word_end[None, :])
               - np.maximum(token_start[:, None], word_start[None, :]))
    overlap = np.where(np.asarray(token_segment)[:, None] == np.asarray(word_segment)[None, :], overlap, 0)
    best = overlap.argmax(axis=1)
    has_word = overlap[np.arange(len(best)), best] > 0
    return np.where(has_word, best, -1).astype(np.int32)


def word_units(token_word: np.ndarray, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """Group tokens into units: one per aligned word, one per remaining token.

    Returns (unit of each token, word index of each unit or -1). Units of words
    come first, in word order (words that got no token have no unit); tokens
    that belong to no word (special tokens, and tokens of cut or unaligned text)
    keep units of their own after them, so that no attention mass is lost.
    """
    # Plain Python: a sentence has tens of tokens, where a dozen numpy calls cost more than the loop.
    words = np.asarray(token_word).tolist()
    aligned_words = sorted({w for w in words if w >= 0})
    if aligned_words and aligned_words[-1] >= n_words:
        raise AtlasError(f"a token belongs to word {aligned_words[-1]}, but the example has {n_words} words: the "
                         "token table and the annotation are out of step; rerun snakemake to rebuild them")
    unit_of_word = {w: u for u, w in enumerate(aligned_words)}
    token_unit = []
    loose = len(aligned_words)
    for w in words:
        if w >= 0:
            token_unit.append(unit_of_word[w])
        else:
            token_unit.append(loose)
            loose += 1
    unit_word = aligned_words + [-1] * (loose - len(aligned_words))
    return np.array(token_unit, dtype=np.int64), np.array(unit_word, dtype=np.int64)


def tokens_to_words(attention: np.ndarray, token_unit: np.ndarray, n_units: int) -> np.ndarray:
    """Convert token-level maps (..., T, T) into unit-level maps (..., U, U) [C §4.1].

    Attention *to* a unit is the sum over its tokens; attention *from* a unit is
    the mean of its tokens' rows, so every row still sums to 1.
    """
    attention = float16_to_float32(attention)  # a dump's float16, widened as astype does, 5x faster
    token_unit = np.asarray(token_unit)
    if n_units == len(token_unit) and np.array_equal(np.sort(token_unit), np.arange(n_units)):
        # One token per unit: the conversion only reorders, and a reordering gives the products' values exactly
        # (each is one value times 1 plus zeros), without their cost.
        order = np.argsort(token_unit)
        return attention[..., order[:, None], order[None, :]]
    assignment = np.zeros((len(token_unit), n_units), dtype=np.float32)
    assignment[np.arange(len(token_unit)), token_unit] = 1.0
    counts = assignment.sum(axis=0)
    summed_columns = attention @ assignment  # (..., T, U)
    summed_rows = np.swapaxes(assignment, 0, 1) @ summed_columns  # (..., U, U)
    summed_rows /= counts[:, None]
    return summed_rows
