"""The declared head measures' framework (workflow_scripts/surface/head_measures.py): a measure defined here runs
per shard group and gathers to the one-process table, value for value; its values are known by construction."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from support.dumps import write_dump, write_word_index_tokens
from workflow_scripts.attention.reader import AttentionDump
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.surface.head_measures import (
    HeadMeasure,
    head_measure,
    head_measure_gather,
    head_measure_shard,
    read_example_tokens,
)
from workflow_scripts.surface.measures import HEAD_MEASURES, measure_named

LABELS = {"model": "tiny", "checkpoint": "pretrained", "corpus": "wiki", "split": "segments"}


def diagonal_sums(attention: np.ndarray, tokens) -> tuple[np.ndarray, float]:
    """Attention of every token to itself, over every token: a measure written for the test."""
    return np.einsum("lhii->lh", attention, dtype=np.float64), float(attention.shape[-1])


SELF = HeadMeasure("self_share", "attention to itself", "share", diagonal_sums, caption="Self.")


def test_a_measure_is_a_ratio_of_sums_over_every_token_of_every_example(tmp_path):
    # head 0 attends to itself, head 1 to the first token; example 5 has 3 tokens, example 2 has 5
    maps = {}
    for example_id, n in ((5, 3), (2, 5)):
        first = np.zeros((n, n), np.float32)
        first[:, 0] = 1
        maps[example_id] = np.stack([np.eye(n, dtype=np.float32), first])[None].astype(np.float16)
    manifest = write_dump(tmp_path / "dump", maps)
    tokens = write_word_index_tokens(tmp_path / "tokens.parquet", {5: [-1, 0, -1], 2: [-1, 0, 1, 2, -1]})
    frame = head_measure(SELF, manifest.parent, tokens, resamples=100, seed=0)
    assert list(frame["self_share"]) == pytest.approx([1.0, 2 / 8])  # head 1: only each first token's own row
    assert list(frame["n_units"]) == [8.0, 8.0] and list(frame["n_examples"]) == [2, 2]
    assert (frame["self_share_low"] <= frame["self_share"] + 1e-12).all()
    assert (frame["self_share"] <= frame["self_share_high"] + 1e-12).all()


def test_the_tokens_of_an_example_are_read_in_position_order(tmp_path):
    tokens = read_example_tokens(write_word_index_tokens(tmp_path / "t.parquet", {4: [-1, 0, 0, 1, -1]}))
    assert list(tokens) == [4]
    assert list(tokens[4].word) == [-1, 0, 0, 1, -1]
    assert list(tokens[4].special) == [True, False, False, False, True]
    assert list(tokens[4].text) == ["[CLS]", "w0", "w0", "w1", "[SEP]"]


def test_a_token_table_that_does_not_match_the_dump_is_refused_by_example(tmp_path):
    manifest = write_dump(tmp_path / "dump", {1: np.full((1, 1, 3, 3), 1 / 3, np.float16)}, n_shards=1)
    tokens = write_word_index_tokens(tmp_path / "t.parquet", {1: [-1, 0, 1, -1]})
    with pytest.raises(AtlasError, match="example 1 has 3 tokens in the dump and 4 tokens in the token table"):
        head_measure(SELF, manifest.parent, tokens, resamples=10, seed=0)


@pytest.mark.parametrize("measure", [SELF, *HEAD_MEASURES], ids=lambda m: m.name)
def test_shard_jobs_gather_to_the_one_process_table(three_shard_dump, tmp_path, measure):
    manifest, tokens = three_shard_dump
    shards = [f.removesuffix(".parquet") for f in AttentionDump(manifest.parent).shard_files]
    random.Random(0).shuffle(shards)  # parallel jobs finish in any order
    partials = []
    for shard in shards:
        partials.append(tmp_path / f"{shard}.parquet")
        head_measure_shard(measure, manifest, tokens, partials[-1], shard_group=shard)
    gathered = head_measure_gather(measure, manifest, [str(p) for p in partials], tmp_path / "part.csv",
                                   resamples=200, seed=3, **LABELS)
    whole = head_measure(measure, manifest.parent, tokens, resamples=200, seed=3)
    columns = [c for c in whole.columns]
    pd.testing.assert_frame_equal(gathered[columns].reset_index(drop=True), whole, check_exact=False, rtol=1e-12)
    assert (gathered["model"] == "tiny").all() and (gathered["split"] == "segments").all()


def test_a_partial_of_another_measure_is_refused(three_shard_dump, tmp_path):
    manifest, tokens = three_shard_dump
    other = HeadMeasure("other", "other", "share", diagonal_sums, caption="Other.")
    shards = [f.removesuffix(".parquet") for f in AttentionDump(manifest.parent).shard_files]
    partials = []
    for shard in shards:
        partials.append(str(tmp_path / f"{shard}.parquet"))
        head_measure_shard(other, manifest, tokens, partials[-1], shard_group=shard)
    with pytest.raises(AtlasError, match="other"):
        head_measure_gather(SELF, manifest, partials, tmp_path / "part.csv", resamples=10, seed=0, **LABELS)


def test_every_declared_measure_is_named_once_and_found_by_name():
    names = [m.name for m in HEAD_MEASURES]
    assert len(names) == len(set(names))
    for measure in HEAD_MEASURES:
        assert measure_named(measure.name) is measure
        assert measure.caption.strip() and measure.label and measure.unit
    with pytest.raises(KeyError, match="no head measure is declared as 'nope'"):
        measure_named("nope")


def test_an_empty_sums_table_is_refused_with_the_dump_named(tmp_path):
    from workflow_scripts.surface.head_measures import measure_frame

    empty = pa.table({"example_id": pa.array([], pa.int64()),
                      "numerator": pa.FixedSizeListArray.from_arrays(pa.array([], pa.float64()), 1),
                      "denominator": pa.array([], pa.float64())})
    with pytest.raises(AtlasError, match="DUMP: the dump has no examples, so self_share cannot be measured"):
        measure_frame(SELF, empty, 1, 1, resamples=10, seed=0, source="DUMP")
