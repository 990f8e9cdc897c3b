"""A decoder's dump stores each map's lower triangle (attention/layout.py) and reads back as full maps."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from transformers import AutoModel

from support.tiny_dumps import tiny_dump
from workflow_scripts.attention.extract import read_examples
from workflow_scripts.attention.layout import FULL, LOWER_TRIANGLE, pack, stored_values, unpack
from workflow_scripts.attention.reader import AttentionDump
from workflow_scripts.core.errors import AtlasError


def test_triangles_pack_and_unpack_by_construction():
    maps = np.tril(np.arange(1, 2 * 16 + 1, dtype=np.float16).reshape(2, 4, 4))
    stored = pack(maps, LOWER_TRIANGLE, 7)
    assert stored.shape == (2, stored_values(4, LOWER_TRIANGLE)) == (2, 10)
    assert stored[0].tolist() == [1, 5, 6, 9, 10, 11, 13, 14, 15, 16]  # row by row, on and below the diagonal
    assert np.array_equal(unpack(stored, 4, LOWER_TRIANGLE), maps)
    assert pack(maps, FULL, 7) is maps and stored_values(4, FULL) == 16
    assert np.array_equal(unpack(pack(maps[:, :1, :1], LOWER_TRIANGLE, 7), 1, LOWER_TRIANGLE), maps[:, :1, :1])
    ahead = maps.copy()
    ahead[1, 0, 3] = 0.5
    with pytest.raises(AtlasError, match=r"example 7: the model is declared causal .* attends to tokens after"):
        pack(ahead, LOWER_TRIANGLE, 7)
    with pytest.raises(AtlasError, match="declared causal"):
        pack(torch.from_numpy(ahead), LOWER_TRIANGLE, 7)  # the extraction's torch weights too


def test_a_decoder_dump_stores_lower_triangles_and_reads_back_the_models_maps(tmp_path, tiny_gpt2):
    _, token_path, out, summary, _ = tiny_dump(tmp_path, tiny_gpt2, pairs=False)
    assert summary["layout"] == LOWER_TRIANGLE
    dump = AttentionDump(out)
    assert dump.layout == LOWER_TRIANGLE
    model = AutoModel.from_pretrained(tiny_gpt2, attn_implementation="eager").eval()
    example_ids, ids, _ = read_examples(token_path)
    input_ids = {int(e): i.tolist() for e, i in zip(example_ids, ids)}
    stored_bytes = 0
    for shard in dump.manifest["shards"]:
        footer = pq.ParquetFile(out / shard["file"]).schema_arrow.metadata
        assert footer[b"atlas.layout"] == LOWER_TRIANGLE.encode()
        table = pq.read_table(out / shard["file"])
        for n, blob in zip(table["n_tokens"].to_pylist(), table["attention"].to_pylist()):
            assert len(blob) == 2 * 4 * n * (n + 1) // 2 * 2  # layers x heads x T(T+1)/2 float16 values
            stored_bytes += len(blob)
    full_bytes = sum(2 * 4 * len(ids) ** 2 * 2 for ids in input_ids.values())
    assert stored_bytes < 0.65 * full_bytes
    for example in dump.iter_examples():
        with torch.no_grad():
            direct = model(input_ids=torch.tensor([input_ids[example.example_id]]), output_attentions=True)
        expected = torch.stack([layer[0] for layer in direct.attentions]).half().numpy()
        assert example.attention.shape == expected.shape and np.array_equal(example.attention, expected)
        assert not np.triu(example.attention, 1).any()


def test_an_encoder_dump_keeps_whole_maps(tmp_path, tiny_bert):
    _, _, out, summary, _ = tiny_dump(tmp_path, tiny_bert, pairs=False, n_shards=1)
    assert summary["layout"] == FULL and AttentionDump(out).layout == FULL
