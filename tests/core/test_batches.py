"""core/batches.py: examples grouped by similar length within a budget, for extraction (tokens) and the probes
(cells of a sentence's (n+1) x (n+1) array)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from workflow_scripts.core.batches import length_batches
from workflow_scripts.probing.model import sentence_batches


def test_batches_group_similar_lengths_and_respect_the_token_budget():
    lengths = np.array([5, 50, 6, 49, 7, 48, 8])
    batches = length_batches(lengths, max_items=3, max_total=100)
    assert sorted(np.concatenate(batches).tolist()) == list(range(7))
    for batch in batches:
        assert len(batch) <= 3 and lengths[batch].max() * len(batch) <= 100
    assert [sorted(lengths[b].tolist()) for b in batches][0] == [5, 6, 7]
    # By length (5, 6, 7 | 8, 48 | 49, 50): three of the short fit; 48 and 49 would cost 3 x 49 > 100 with 8.
    assert [batch.tolist() for batch in batches] == [[0, 2, 4], [6, 5], [3, 1]]


def test_an_item_over_the_budget_is_a_batch_alone():
    # 3 and 4 cost 2 x 4 = 8 <= 10 together; 200 alone is over the budget, and still a batch.
    assert [batch.tolist() for batch in length_batches(np.array([3, 200, 4]), max_items=8, max_total=10)] == [
        [0, 2], [1]]


def test_probe_sentences_are_batched_by_their_cells():
    # Sentences of 1, 9, 2 and 3 words: (n + 1)^2 cells of 4, 100, 9 and 16; at most 40 cells a batch, counted as
    # the largest sentence's cells times the batch's sentences: 2 x 9 = 18 fits, 3 x 16 = 48 does not.
    sentences = [SimpleNamespace(gold=[0] * words) for words in (1, 9, 2, 3)]
    assert [batch.tolist() for batch in sentence_batches(sentences, max_sentences=8, max_cells=40)] == [
        [0, 2], [3], [1]]
