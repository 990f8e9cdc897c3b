"""A model's weights dtype (models.NAME.dtype) in extraction: the maps of bfloat16 or float16 weights against those
of float32 weights, on tiny models (docs/models.md gives the figures this test prints with -s)."""

from __future__ import annotations

import numpy as np
import pytest

from support.tiny_dumps import tiny_dump
from workflow_scripts.attention.reader import AttentionDump


def maps_of(out) -> dict[int, np.ndarray]:
    return {example.example_id: example.attention.astype(np.float32) for example in AttentionDump(out).iter_examples()}


@pytest.mark.parametrize("model", ["tiny_bert", "tiny_gpt2"])
def test_half_precision_weights_change_the_maps_by_little(model, request, tmp_path):
    folder = request.getfixturevalue(model)
    dumps = {}
    for dtype in ("float32", "bfloat16", "float16"):
        (tmp_path / dtype).mkdir()
        dumps[dtype] = tiny_dump(tmp_path / dtype, folder, pairs=False, dtype=dtype)
    assert {dtype: summary["weights_dtype"] for dtype, (*_, summary, _) in dumps.items()} == {
        "float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}
    exact = maps_of(dumps["float32"][2])
    for dtype in ("bfloat16", "float16"):
        other = maps_of(dumps[dtype][2])
        assert other.keys() == exact.keys()
        differences = np.concatenate([np.abs(other[i] - exact[i]).ravel() for i in exact])
        print(f"{model} {dtype}: max {differences.max():.2e}, mean {differences.mean():.2e} "
              f"over {differences.size} stored values")
        assert differences.max() > 0, "the weights were loaded as asked, not as float32"
        # bfloat16 keeps 8 bits of mantissa, float16 11: the maps (weights in [0, 1]) move by about that much.
        assert differences.max() < (0.01 if dtype == "bfloat16" else 0.001)
        assert differences.mean() < (0.001 if dtype == "bfloat16" else 1e-5)
        # What the per-head tables hold, from these maps: each head's mean attention to the first token and mean
        # row entropy (surface statistics), over the examples.
        (exact_first, exact_entropy), (first, entropy) = per_head(exact), per_head(other)
        print(f"  per head: first-token share max {np.abs(first - exact_first).max():.1e}, "
              f"row entropy max {np.abs(entropy - exact_entropy).max():.1e} nats")
        assert np.abs(first - exact_first).max() < 0.002 and np.abs(entropy - exact_entropy).max() < 0.01


def per_head(maps: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per (layer, head): mean attention to the first token and mean row entropy, over every row of every example."""
    first = np.mean([m[:, :, :, 0].mean(axis=-1) for m in maps.values()], axis=0)
    entropy = np.mean([(-(m * np.log(np.clip(m, 1e-12, None))).sum(-1)).mean(-1) for m in maps.values()], axis=0)
    return first, entropy
