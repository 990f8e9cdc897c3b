"""First-token share and previous-token score (workflow_scripts/surface/position_measures.py), known by construction."""

from __future__ import annotations

import numpy as np
import pytest

from support.dumps import write_dump, write_word_index_tokens
from workflow_scripts.surface.head_measures import head_measure
from workflow_scripts.surface.measures import measure_named
from workflow_scripts.surface.position_measures import first_token_sums, previous_token_sums


def causal(rows: np.ndarray) -> np.ndarray:
    """Row-normalised lower triangle: what a decoder's head gives."""
    lower = np.tril(rows)
    return lower / lower.sum(axis=-1, keepdims=True)


def test_a_sink_head_a_previous_token_head_and_a_uniform_causal_head():
    n = 5
    sink = np.zeros((n, n), np.float32)
    sink[:, 0] = 1
    previous = np.zeros((n, n), np.float32)
    previous[0, 0] = 1
    previous[np.arange(1, n), np.arange(n - 1)] = 1
    uniform = causal(np.ones((n, n), np.float32))
    attention = np.stack([sink, previous, uniform])[None]
    first, count = first_token_sums(attention, None)
    before, same_count = previous_token_sums(attention, None)
    assert count == same_count == n - 1  # query 0 is left out
    # uniform causal head: query i gives 1/(i+1) to position 0 and to position i-1
    expected = sum(1 / (i + 1) for i in range(1, n))
    assert first[0] == pytest.approx([n - 1, 0 + 1, expected])  # the previous-token head's query 1 looks at 0
    assert before[0] == pytest.approx([1, n - 1, expected])      # the sink head's query 1 looks at 0 = 1 - 1


def test_the_measures_pool_queries_over_examples(tmp_path):
    sink3 = np.zeros((3, 3), np.float16)
    sink3[:, 0] = 1
    half6 = np.zeros((6, 6), np.float32)
    half6[:, 0] = 0.5
    half6[np.arange(6), np.arange(6)] += 0.5
    maps = {0: sink3[None, None], 1: half6[None, None].astype(np.float16)}
    manifest = write_dump(tmp_path / "dump", maps)
    tokens = write_word_index_tokens(tmp_path / "t.parquet", {0: [0, 1, 2], 1: [0, 1, 2, 3, 4, 5]})
    frame = head_measure(measure_named("first_token"), manifest.parent, tokens, resamples=50, seed=0)
    assert frame["first_token"].iloc[0] == pytest.approx((2 * 1 + 5 * 0.5) / 7)
    assert frame["n_units"].iloc[0] == 7
    frame = head_measure(measure_named("previous_token"), manifest.parent, tokens, resamples=50, seed=0)
    assert frame["previous_token"].iloc[0] == pytest.approx((1 + 0.5) / 7)  # query 1 of each looks at 0


def test_a_one_token_example_adds_nothing():
    first, count = first_token_sums(np.ones((1, 2, 1, 1), np.float32), None)
    assert count == 0 and not first.any()
