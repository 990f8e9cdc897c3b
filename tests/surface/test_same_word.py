"""Attention within a word (workflow_scripts/surface/same_word.py): values known by construction."""

from __future__ import annotations

import numpy as np
import pytest

from support.dumps import write_dump, write_word_index_tokens
from workflow_scripts.surface.head_measures import ExampleTokens, head_measure
from workflow_scripts.surface.measures import measure_named
from workflow_scripts.surface.same_word import same_word_sums


def tokens_of(words: list[int]) -> ExampleTokens:
    word = np.array(words)
    return ExampleTokens(np.array([f"t{i}" for i in range(len(words))], dtype=object), np.zeros(len(words), int),
                         word < 0, word)


def test_only_the_pieces_of_split_words_count_and_only_their_own_word():
    # [CLS] a1 a2 b c1 c2 c3 [SEP]: words a (2 pieces), b (1), c (3)
    words = [-1, 0, 0, 1, 2, 2, 2, -1]
    n = len(words)
    uniform = np.full((n, n), 1 / n, np.float32)
    to_cls = np.zeros((n, n), np.float32)
    to_cls[:, 0] = 1
    attention = np.stack([uniform, to_cls])[None]  # 1 layer, 2 heads
    numerator, denominator = same_word_sums(attention, tokens_of(words))
    assert denominator == 5  # a1 a2 c1 c2 c3; b and the special tokens have no other piece
    # uniform: a piece of a gives 1/8 to its other piece, a piece of c gives 2/8 to its two others
    assert numerator[0, 0] == pytest.approx(2 * (1 / n) + 3 * (2 / n))
    assert numerator[0, 1] == 0.0  # everything goes to [CLS]


def test_a_head_that_attends_within_words_scores_one(tmp_path):
    words = [-1, 0, 0, 1, 1, -1]
    n = len(words)
    within = np.eye(n, dtype=np.float32)
    for i, j in ((1, 2), (2, 1), (3, 4), (4, 3)):  # each piece sends everything to its word's other piece
        within[i] = 0
        within[i, j] = 1
    maps = {7: within[None, None].astype(np.float16), 8: np.eye(n, dtype=np.float16)[None, None]}
    manifest = write_dump(tmp_path / "dump", maps)
    tokens = write_word_index_tokens(tmp_path / "tokens.parquet", {7: words, 8: words})
    frame = head_measure(measure_named("same_word"), manifest.parent, tokens, resamples=50, seed=0)
    assert frame["same_word"].iloc[0] == pytest.approx(0.5)  # example 7 scores 1 per piece, example 8 scores 0
    assert frame["n_units"].iloc[0] == 8


def test_an_example_without_a_split_word_adds_nothing():
    numerator, denominator = same_word_sums(np.full((2, 3, 4, 4), 0.25, np.float32), tokens_of([-1, 0, 1, -1]))
    assert denominator == 0 and numerator.shape == (2, 3) and not numerator.any()
