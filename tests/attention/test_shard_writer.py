"""The shard writer's stages (attention/shard_writer.py): batches built side by side, written in order, hashed."""

from __future__ import annotations

import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workflow_scripts.attention.shard_writer import STAGE_TIMINGS, ShardWriter
from workflow_scripts.core.file_records import file_digest

SCHEMA = pa.schema([pa.field("example_id", pa.int64()), pa.field("blob", pa.large_binary())])
OPTIONS = {"compression": "lz4", "use_dictionary": False, "write_page_checksum": True}


def batch_builder(index: int, delay: float, built: list[int], lock: threading.Lock):
    def build():
        time.sleep(delay)  # later batches finish first: the writer must still write them in order
        with lock:
            built.append(index)
        blob = np.full(1000 + index, index % 256, dtype=np.uint8).tobytes()
        return pa.record_batch([pa.array([index]), pa.array([blob], pa.large_binary())], schema=SCHEMA), {
            "float16 cast and copy into the column": delay}
    return build


def test_batches_built_out_of_order_are_written_in_order_and_hashed(tmp_path):
    path = tmp_path / "shard.parquet"
    timings = dict.fromkeys(STAGE_TIMINGS, 0.0)
    built, lock = [], threading.Lock()
    delays = [0.05, 0.0, 0.03, 0.0, 0.0, 0.02, 0.0, 0.0]
    with ShardWriter(path, SCHEMA, OPTIONS, workers=3, timings=timings) as writer:
        assert writer.limit == 4
        for index, delay in enumerate(delays):
            writer.submit(batch_builder(index, delay, built, lock))
            assert len(writer._in_flight) <= writer.limit  # memory stays flat: at most `limit` batches held
        writer.finish()
    assert built != sorted(built), "the column threads built batches side by side"
    table = pq.read_table(path)
    assert table["example_id"].to_pylist() == list(range(len(delays)))
    assert [len(b) for b in table["blob"].to_pylist()] == [1000 + i for i in range(len(delays))]
    assert writer.digest.hexdigest(path) == file_digest(path, "blake3")
    assert timings["float16 cast and copy into the column"] == pytest.approx(sum(delays))
    assert timings["writer thread: encode, compress, write"] > 0 and timings["hashing thread: blake3"] > 0


def test_a_failing_batch_stops_the_shard_with_its_error(tmp_path):
    def broken():
        raise RuntimeError("the maps of batch 2 could not be cut")

    built, lock = [], threading.Lock()
    with pytest.raises(RuntimeError, match="batch 2 could not be cut"):
        with ShardWriter(tmp_path / "shard.parquet", SCHEMA, OPTIONS, workers=2,
                         timings=dict.fromkeys(STAGE_TIMINGS, 0.0)) as writer:
            for index in range(8):
                writer.submit(broken if index == 2 else batch_builder(index, 0.0, built, lock))
            writer.finish()
    assert 2 not in built  # the error reached the caller, which stopped the shard (its file is discarded)
