"""Per-shard surface jobs and their gather: the table one process writes, value for value."""

from __future__ import annotations

import json
import random

import pandas as pd
import pyarrow.parquet as pq
import pytest

from support.dumps import write_token_table
from support.tiny_dumps import SENTENCES
from workflow_scripts.attention.reader import AttentionDump
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.core.file_records import write_sealed_json
from workflow_scripts.surface.distance import (
    attention_distance_gather,
    attention_distance_part,
    attention_distance_shard,
)
from workflow_scripts.surface.statistics import surface_heads, surface_heads_gather, surface_heads_shard

LABELS = {"model": "tiny", "checkpoint": "pretrained", "corpus": "wiki", "split": "segments"}


def _shard_jobs(job, manifest, tmp_path, name):
    """Run ``job`` once per shard, in a shuffled order (as parallel jobs finish); the partials' paths."""
    shards = [f.removesuffix(".parquet") for f in AttentionDump(manifest.parent).shard_files]
    assert len(shards) == 3
    outputs = {shard: tmp_path / f"{name}.{shard}.parquet" for shard in shards}
    for shard in random.Random(1).sample(shards, len(shards)):
        job(shard, outputs[shard])
    return list(outputs.values())


def test_surface_shard_jobs_and_their_gather_write_the_one_process_table(three_shard_dump, tmp_path):
    manifest, tokens = three_shard_dump
    serial = surface_heads(manifest, tokens, tmp_path / "serial.csv", resamples=200, seed=3, **LABELS)
    partials = _shard_jobs(lambda shard, out: surface_heads_shard(manifest, tokens, out, shard_group=shard),
                           manifest, tmp_path, "surface_heads")
    assert sorted(len(pq.read_table(p)) for p in partials) == sorted(
        s["rows"] for s in AttentionDump(manifest.parent).manifest["shards"])
    gathered = surface_heads_gather(manifest, partials[::-1], tmp_path / "gathered.csv", resamples=200, seed=3,
                                    **LABELS)
    pd.testing.assert_frame_equal(gathered, serial, check_exact=True)
    assert (tmp_path / "gathered.csv").read_bytes() == (tmp_path / "serial.csv").read_bytes()
    assert gathered["n_examples"].iloc[0] == len(SENTENCES)


def test_distance_shard_jobs_and_their_gather_write_the_one_process_table(three_shard_dump, tmp_path):
    manifest, _ = three_shard_dump
    serial = attention_distance_part(manifest, tmp_path / "serial.csv", resamples=200, seed=3, **LABELS)
    partials = _shard_jobs(lambda shard, out: attention_distance_shard(manifest, out, shard_group=shard),
                           manifest, tmp_path, "attention_distance")
    gathered = attention_distance_gather(manifest, partials, tmp_path / "gathered.csv", resamples=200, seed=3,
                                         **LABELS)
    pd.testing.assert_frame_equal(gathered, serial, check_exact=True)
    assert (tmp_path / "gathered.csv").read_bytes() == (tmp_path / "serial.csv").read_bytes()


def test_jobs_of_several_shards_each_and_their_gather_write_the_one_process_table(three_shard_dump, tmp_path):
    """attention.analysis_shards_per_job 2 over 3 shards: a job of shards 0-1 and one of shard 2."""
    manifest, tokens = three_shard_dump
    serial = surface_heads(manifest, tokens, tmp_path / "serial.csv", resamples=200, seed=3, **LABELS)
    groups = {"shards-0000-0001-of-0003": tmp_path / "a.parquet", "shard-0002-of-0003": tmp_path / "b.parquet"}
    for group, output in groups.items():
        surface_heads_shard(manifest, tokens, output, shard_group=group)
    partials = list(groups.values())
    gathered = surface_heads_gather(manifest, partials, tmp_path / "gathered.csv", resamples=200, seed=3, **LABELS)
    pd.testing.assert_frame_equal(gathered, serial, check_exact=True)
    # A one-shard partial beside the group that holds its shard: the shard would count twice.
    single = tmp_path / "single.parquet"
    surface_heads_shard(manifest, tokens, single, shard_group="shard-0001-of-0003")
    with pytest.raises(AtlasError, match="two partials of surface_heads for the shard shard-0001-of-0003"):
        surface_heads_gather(manifest, [*partials, single], tmp_path / "t.csv", resamples=10, seed=0, **LABELS)


def test_the_gather_refuses_a_missing_or_foreign_partial(three_shard_dump, tmp_path):
    manifest, tokens = three_shard_dump
    surface = _shard_jobs(lambda shard, out: surface_heads_shard(manifest, tokens, out, shard_group=shard),
                          manifest, tmp_path, "surface_heads")
    distance = _shard_jobs(lambda shard, out: attention_distance_shard(manifest, out, shard_group=shard),
                           manifest, tmp_path, "attention_distance")
    with pytest.raises(AtlasError, match="no partial of surface_heads for the shards shard-0002-of-0003"):
        surface_heads_gather(manifest, surface[:2], tmp_path / "t.csv", resamples=10, seed=0, **LABELS)
    # Another analysis's partial of the same shard: refused and removed, so the next run recomputes it.
    with pytest.raises(AtlasError, match=f"{distance[2]}: not a partial of surface_heads .* removed"):
        surface_heads_gather(manifest, [*surface[:2], distance[2]], tmp_path / "t.csv", resamples=10, seed=0,
                             **LABELS)
    assert not distance[2].exists() and not (tmp_path / "t.csv").exists()
    with pytest.raises(AtlasError, match="two partials of surface_heads for the shard shard-0000-of-0003"):
        surface_heads_gather(manifest, [*surface, surface[0]], tmp_path / "t.csv", resamples=10, seed=0, **LABELS)


def test_a_partial_of_an_earlier_extraction_is_refused_and_removed(three_shard_dump, tmp_path):
    manifest, tokens = three_shard_dump
    partials = _shard_jobs(lambda shard, out: surface_heads_shard(manifest, tokens, out, shard_group=shard),
                           manifest, tmp_path, "surface_heads")
    # The dump is extracted again: its manifest's checksum of shard 1 changes.
    rebuilt = tmp_path / "rebuilt"
    rebuilt.mkdir()
    for path in manifest.parent.glob("shard-*.parquet"):
        (rebuilt / path.name).symlink_to(path)
    text = manifest.read_text()
    entry = AttentionDump(manifest.parent).shard_entry("shard-0001-of-0003.parquet")
    write_sealed_json(json.loads(text.replace(entry["blake3"], "0" * 64)), rebuilt / "manifest.json")
    with pytest.raises(AtlasError, match="computed from an earlier extraction of .*shard-0001-of-0003.parquet"):
        surface_heads_gather(rebuilt / "manifest.json", partials, tmp_path / "t.csv", resamples=10, seed=0,
                             **LABELS)
    assert [p.exists() for p in partials] == [True, False, True]  # the stale one goes, the next run remakes it


def test_a_shard_the_dump_does_not_have_is_named(three_shard_dump, tmp_path):
    manifest, tokens = three_shard_dump
    with pytest.raises(AtlasError, match="the dump has no shard shard-0003-of-0004.parquet .*num_shards"):
        surface_heads_shard(manifest, tokens, tmp_path / "x.parquet", shard_group="shard-0003-of-0004")


def test_the_separator_id_is_read_from_the_token_table_without_a_tokenizer(tmp_path):
    from workflow_scripts.core.io import write_table
    from workflow_scripts.surface.statistics import separator_token_id

    table = pq.read_table(write_token_table(tmp_path / "plain.parquet", {0: ["a"]}, {0: [False]}))
    write_table(table, tmp_path / "tokens.parquet", {"sep_token_id": 2})
    # No checkpoint exists: the recorded id is all it needs (a per-shard job loads no tokenizer).
    assert separator_token_id(tmp_path / "missing.json", offline=True, token_table=tmp_path / "tokens.parquet") == 2
    write_table(table, tmp_path / "none.parquet", {"sep_token_id": None})  # a tokenizer with no separator
    assert separator_token_id(tmp_path / "missing.json", offline=True, token_table=tmp_path / "none.parquet") is None


def test_token_tables_record_the_separator_id(three_shard_dump, tiny_bert, tmp_path):
    from transformers import AutoTokenizer

    from workflow_scripts.attention.tokens import write_token_table as build
    from workflow_scripts.core.io import read_metadata

    manifest, _ = three_shard_dump
    made = manifest.parent.parent  # the fixture's folder: checkpoint, data and annotation of the tiny dump
    build(made / "ckpt" / "checkpoint.json", made / "single.parquet", made / "annotation.parquet",
          tmp_path / "tokens.parquet", max_length=64, max_examples=None, input_protocol="text", offline=True)
    assert read_metadata(tmp_path / "tokens.parquet")["sep_token_id"] == AutoTokenizer.from_pretrained(
        tiny_bert).sep_token_id is not None
