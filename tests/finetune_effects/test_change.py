"""Change of every head after fine-tuning [K] §4.3 (METHODS 8.2) on hand-built maps."""

from __future__ import annotations

import numpy as np
import pytest

from support.dumps import write_dump, write_token_roles
from support.maps import block_map, previous_token_map, roles, simple_words, vertical_map
from support.tiny_models import placeholder_checkpoint
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.finetune_effects.change import (
    finetune_change,
    head_cosines,
    paired_examples,
)


def maps_of(special, segment, changed: bool) -> np.ndarray:
    n = len(special)
    heads = [vertical_map(special), previous_token_map(n), block_map(special, segment), previous_token_map(n)]
    if changed:
        heads[3] = vertical_map(special)  # layer 1, head 1 turns from diagonal to vertical
    return np.stack(heads).reshape(2, 2, n, n)


def test_cosine_per_head():
    special, segment = roles(4, 4)
    before, after = maps_of(special, segment, False), maps_of(special, segment, True)
    cos = head_cosines(before, after)
    assert cos.shape == (2, 2)
    np.testing.assert_allclose(cos[[0, 0, 1], [0, 1, 0]], 1.0, rtol=1e-6)
    a, b = previous_token_map(len(special)).ravel(), vertical_map(special).ravel()
    assert cos[1, 1] == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b), rel=1e-5)
    with pytest.raises(AtlasError):
        head_cosines(before, before[..., :-1, :-1])


def test_change_pairs_examples_stored_in_different_orders(tmp_path):
    special, segment = roles(4, 4)
    ids = [4, 1, 7, 2, 9]
    pre = write_dump(tmp_path / "pre", {i: maps_of(special, segment, False) for i in ids}, order=ids)
    tuned = write_dump(tmp_path / "ft", {i: maps_of(special, segment, i != 7) for i in ids}, order=ids[::-1])
    assert sorted(i for i, *_ in paired_examples(pre.parent, tuned.parent)) == sorted(ids)
    tokens = write_token_roles(tmp_path / "tokens.parquet", {i: (special, segment, simple_words(special)) for i in ids})
    manifest = placeholder_checkpoint(tmp_path / "ckpt", "rte.seed3.step5", global_step=5)
    frame = finetune_change(pre.parent, tuned.parent, tokens, tmp_path / "change.csv", model="tiny", task="rte",
                            checkpoint="rte.seed3.step5", checkpoint_manifest=manifest, resamples=200,
                            seed=0)
    assert len(frame) == 4 and (frame["n"] == 5).all()
    assert frame["step"].tolist() == [5] * 4 and frame["seed"].tolist() == [3] * 4
    changed = frame[(frame["layer"] == 1) & (frame["head"] == 1)].iloc[0]
    one = head_cosines(maps_of(special, segment, False), maps_of(special, segment, True))[1, 1]
    assert changed["cosine"] == pytest.approx((4 * one + 1) / 5, rel=1e-4)  # example 7 unchanged
    assert changed["ci_low"] <= changed["cosine"] <= changed["ci_high"] < 1
    np.testing.assert_allclose(frame.loc[frame["head"] + frame["layer"] < 2, "cosine"], 1.0, rtol=1e-5)
    capped = finetune_change(pre.parent, tuned.parent, tokens, tmp_path / "capped.csv", model="tiny", task="rte",
                             checkpoint="rte.seed3.step5", checkpoint_manifest=manifest, max_examples=2,
                             resamples=50, seed=0)
    assert (capped["n"] == 2).all()


def test_dumps_from_different_inputs_are_an_error(tmp_path):
    special, segment = roles(4, 4)
    short_special, short_segment = roles(3, 4)
    pre = write_dump(tmp_path / "pre", {1: maps_of(special, segment, False)}, n_shards=1)
    tuned = write_dump(tmp_path / "ft", {1: maps_of(short_special, short_segment, False)}, n_shards=1)
    tokens = write_token_roles(tmp_path / "tokens.parquet", {1: (special, segment, simple_words(special))})
    with pytest.raises(AtlasError, match="rerun snakemake"):
        finetune_change(pre.parent, tuned.parent, tokens, tmp_path / "c.csv", model="tiny", task="rte",
                        checkpoint="rte.seed3.final",
                        checkpoint_manifest=placeholder_checkpoint(tmp_path / "c", "rte.seed3.final"), resamples=10,
                        seed=0)
