"""Hand-built attention maps whose answers are known by construction, and the token layouts they go with."""

from __future__ import annotations

import numpy as np

# --- one-hot rows (the surface statistics and the head clustering) -------------------------------

# Example of 5 tokens: first special, a word, ".", ",", separator.
TOKENS5 = ["<q>", "Ġcat", "Ġ.", ",", "</q>"]
SPECIAL5 = [True, False, False, False, True]


def shifted(n: int, offset: int) -> np.ndarray:
    """One-hot rows: token i attends to i+offset, or to itself where that is outside the example."""
    rows = np.zeros((n, n), dtype=np.float32)
    for i in range(n):
        j = i + offset
        rows[i, j if 0 <= j < n else i] = 1.0
    return rows


def column(n: int, j: int) -> np.ndarray:
    """Every token attends to token ``j`` only."""
    rows = np.zeros((n, n), dtype=np.float32)
    rows[:, j] = 1.0
    return rows


# --- word-targeted maps (dependency, coreference, probes) ----------------------------------------


def token_maps(token_word: list[int], targets: list[list[int]], special_mass: float = 0.4) -> np.ndarray:
    """(T, T) token map: every non-special token puts ``special_mass`` on [CLS] (token 0) and the rest,
    split evenly, on the tokens of its target words (none: on the last special token); specials attend
    to themselves."""
    token_word = np.asarray(token_word)
    size = len(token_word)
    out = np.zeros((size, size))
    for t, word in enumerate(token_word):
        if word < 0:
            out[t, t] = 1.0
            continue
        out[t, 0] = special_mass
        columns = np.flatnonzero(np.isin(token_word, targets[word]))
        if len(columns) == 0:  # no target, or a target word without tokens
            columns = [size - 1]
        out[t, columns] += (1 - special_mass) / len(columns)
    return out


# --- the pattern classes of [K] (the fine-tuning effects) ----------------------------------------


def roles(len_a: int, len_b: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """special flags and segments of [CLS] a.. [SEP] (b.. [SEP])."""
    segment = [-1] + [0] * len_a + [-1]
    if len_b is not None:
        segment += [1] * len_b + [-1]
    segment = np.array(segment)
    return segment < 0, segment


def simple_words(special: np.ndarray) -> np.ndarray:
    """One word per non-special token, in order."""
    word = np.full(len(special), -1)
    word[~special] = np.arange((~special).sum())
    return word


def vertical_map(special: np.ndarray) -> np.ndarray:
    """Every token attends evenly to the special tokens only."""
    n = len(special)
    a = np.zeros((n, n))
    a[:, special] = 1.0 / special.sum()
    return a


def previous_token_map(n: int) -> np.ndarray:
    """Every token attends to the previous one (the first token to itself)."""
    a = np.zeros((n, n))
    a[0, 0] = 1.0
    a[np.arange(1, n), np.arange(n - 1)] = 1.0
    return a


def block_map(special: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Every word token attends evenly to the words of its own sentence; special tokens to everything."""
    n = len(special)
    a = np.zeros((n, n))
    for i in range(n):
        if special[i]:
            a[i] = 1.0 / n
        else:
            same = (segment == segment[i]) & ~special
            a[i, same] = 1.0 / same.sum()
    return a


def uniform_map(n: int) -> np.ndarray:
    """Every token attends to every token alike."""
    return np.full((n, n), 1.0 / n, dtype=np.float32)
