"""Attention distance per head (workflow_scripts/surface/distance.py): values known by construction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from support.dumps import write_dump
from support.maps import shifted, uniform_map
from workflow_scripts.surface.distance import attention_distance, attention_distance_part, row_distances


def self_map(n: int) -> np.ndarray:
    return np.eye(n, dtype=np.float32)


def first_token_map(n: int) -> np.ndarray:
    out = np.zeros((n, n), dtype=np.float32)
    out[:, 0] = 1.0
    return out


def test_row_distances_of_known_heads():
    n = 5
    maps = np.stack([self_map(n), first_token_map(n), uniform_map(n)])[None]  # 1 layer, 3 heads
    sums = row_distances(maps)
    assert sums.shape == (1, 3)
    assert sums[0, 0] == 0.0                            # a head that attends to itself looks nowhere
    assert sums[0, 1] == pytest.approx(0 + 1 + 2 + 3 + 4)  # row i attends to token 0, i tokens away
    assert sums[0, 2] == pytest.approx((n * n - 1) / 3)   # uniform: sum_i sum_j |i-j| / n


def test_attention_distance_of_a_dump_pools_rows_of_every_example(tmp_path):
    # head 0 attends to the previous token (the first row to itself), head 1 to the first token
    maps = {}
    for example_id, n in ((3, 4), (1, 6)):
        maps[example_id] = np.stack([shifted(n, -1), first_token_map(n)])[None].astype(np.float16)
    manifest = write_dump(tmp_path / "dump", maps)
    frame = attention_distance(manifest.parent, resamples=50, seed=0)
    previous = frame[(frame.layer == 0) & (frame["head"] == 0)].iloc[0]
    first = frame[(frame.layer == 0) & (frame["head"] == 1)].iloc[0]
    rows = 4 + 6
    assert previous.mean_distance == pytest.approx((3 + 5) / rows)          # every row but the first is 1 away
    assert first.mean_distance == pytest.approx((0 + 1 + 2 + 3 + 0 + 1 + 2 + 3 + 4 + 5) / rows)
    assert first.uniform_distance == pytest.approx(((16 - 1) / 3 + (36 - 1) / 3) / rows)
    assert first.relative_distance == pytest.approx(first.mean_distance / first.uniform_distance)
    assert previous.mean_distance_low <= previous.mean_distance <= previous.mean_distance_high
    assert (previous.n_tokens, previous.n_examples) == (rows, 2)


def test_the_part_names_its_model_checkpoint_and_corpus(tmp_path):
    maps = {0: np.stack([self_map(3)])[None].astype(np.float16)}
    manifest = write_dump(tmp_path / "dump", maps, n_shards=1)
    out = tmp_path / "part.csv"
    attention_distance_part(manifest, out, model="m", checkpoint="pretrained", corpus="wiki", split="segments",
                            resamples=10, seed=0)
    frame = pd.read_csv(out)
    assert list(frame.columns[:4]) == ["model", "checkpoint", "layer", "head"]
    assert frame.loc[0, ["model", "checkpoint", "corpus", "split"]].tolist() == ["m", "pretrained", "wiki", "segments"]
    assert frame.loc[0, "mean_distance"] == 0.0
