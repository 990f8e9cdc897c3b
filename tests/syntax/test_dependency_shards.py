"""Per-shard dependency scoring and its gather: the score table one process writes, row for row."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.tiny_dumps import SENTENCES, whitespace_annotation
from support.tiny_dumps import tiny_dump as _dump
from workflow_scripts.attention.reader import AttentionDump
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.core.io import read_metadata
from workflow_scripts.syntax.dependency import (
    dependency_scores_gather,
    dependency_scores_shard,
    score_dependency_heads,
)
from workflow_scripts.syntax.dependency_selection import SplitCounts

RELATIONS = ["det", "nsubj", "obj", "nmod:poss", "case", "punct"]


def chain_trees(tmp_path):
    """The tiny sentences' whitespace words as a chain: word 1 is the root, each next word depends on the one
    before; relations cycle through RELATIONS (so nmod:poss also makes the pooled nmod:*)."""
    annotation = whitespace_annotation(_data(tmp_path), tmp_path / "words.parquet")
    rows = pq.read_table(annotation).to_pylist()
    for row in rows:
        n = len(row["words"])
        row["head"] = [0] + list(range(1, n))
        row["deprel"] = ["root"] + [RELATIONS[i % len(RELATIONS)] for i in range(n - 1)]
    path = tmp_path / "trees.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(annotation)), path)
    return path


def _data(tmp_path):
    from support.tiny_dumps import tiny_data

    return tiny_data(tmp_path, pairs=False)


def test_dependency_shard_jobs_and_their_gather_write_the_one_process_table(tmp_path, tiny_bert):
    _, tokens, dump, _, _ = _dump(tmp_path, tiny_bert, pairs=False, n_shards=3)
    trees = chain_trees(tmp_path)
    manifest = dump / "manifest.json"
    serial = tmp_path / "serial.parquet"
    stats = score_dependency_heads(dump, tokens, trees, serial, max_offset=3)
    assert stats["sentences"] == len(SENTENCES)
    partials = []
    for shard in ("shard-0002-of-0003", "shard-0000-of-0003", "shard-0001-of-0003"):  # as parallel jobs finish
        partials.append(tmp_path / f"{shard}.parquet")
        dependency_scores_shard(manifest, tokens, trees, partials[-1], shard_group=shard, max_offset=3)
    gathered = tmp_path / "gathered.parquet"
    dependency_scores_gather(manifest, partials, gathered)
    assert pq.read_table(gathered).equals(pq.read_table(serial))
    volatile = ("seconds",)
    assert ({k: v for k, v in read_metadata(gathered).items() if k not in volatile}
            == {k: v for k, v in read_metadata(serial).items() if k not in volatile})
    counts = SplitCounts.read(gathered)  # what dependency_tables reads
    assert set(counts.frame.example_id) == set(range(len(SENTENCES)))
    assert {"all", "det", "nmod:poss", "nmod:*"} <= set(counts.relations())


def test_partials_scored_with_other_settings_are_refused(tmp_path, tiny_bert):
    _, tokens, dump, _, _ = _dump(tmp_path, tiny_bert, pairs=False, n_shards=2)
    trees = chain_trees(tmp_path)
    manifest = dump / "manifest.json"
    partials = [tmp_path / f"{i}.parquet" for i in range(2)]
    for index, (shard, offset) in enumerate((("shard-0000-of-0002", 3), ("shard-0001-of-0002", 4))):
        dependency_scores_shard(manifest, tokens, trees, partials[index], shard_group=shard, max_offset=offset)
    with pytest.raises(AtlasError, match="differ in offsets") as refused:
        dependency_scores_gather(manifest, partials, tmp_path / "out.parquet")
    assert str(partials[0]) in str(refused.value) and str(partials[1]) in str(refused.value)
    # Which setting is current cannot be told from the files: both are removed, so the next run recomputes them.
    assert not any(path.exists() for path in partials)
    assert len(AttentionDump(dump)) == len(SENTENCES)
