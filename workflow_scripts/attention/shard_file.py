"""A shard's Parquet file (extract.write_shard): its batches run through the model on the model streams
(:class:`BatchMaps`, streams.py) and handed, in order, to the shard writer (shard_writer.py), which cuts, encodes,
writes and hashes them (:func:`write_shard_file`). The shard's schema, its record and the dump's layout are
extract.py's.
"""

from __future__ import annotations

import time
from contextlib import ExitStack, closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..core.io import atomic_path
from ..core.subjects import DEFAULT_SIGNAL
from .columns import layers_column, maps_column
from .shard_writer import Build, ShardWriter
from .signals import SignalMaps, attention_layers
from .streams import in_order

# Level 1: on real maps it stores 1.766 bytes per value against 1.756 at level 3, in 0.73x the time.
ZSTD_LEVEL = 1
# attention.compression (config) -> ParquetWriter arguments.
CODECS = {"lz4": {"compression": "lz4"}, "zstd": {"compression": "zstd", "compression_level": ZSTD_LEVEL},
          "none": {"compression": None}}


@dataclass(frozen=True)
class TokenColumns:
    """The token table as extraction reads it: each example's id, input ids, token type ids and length, in the
    table's order (positions)."""

    example_ids: np.ndarray
    input_ids: list[np.ndarray]
    token_types: list[np.ndarray]
    lengths: np.ndarray


@dataclass(frozen=True)
class BatchMaps:
    """One shard's batches through the model: called with a batch (positions in the token table) on a model stream,
    it pads the batch's inputs, runs the model (or the signal's maps, ``signal_maps``) and returns the function that
    makes the batch's record of ``schema``, with the seconds the model took. ``tokens``: the extractor's
    (extract.Extractor)."""

    model: Any
    device: str
    signal: str
    signal_maps: SignalMaps
    layout: str
    schema: pa.Schema
    pad_id: int
    uses_token_types: bool
    tokens: TokenColumns

    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("cuda")

    def __call__(self, batch: np.ndarray) -> tuple[Build, dict[str, float]]:
        """One batch through the model, on a model stream: a function that makes its record (run by the shard
        writer's column threads), and the seconds the model took."""
        import torch

        tokens = self.tokens
        width = int(tokens.lengths[batch].max())
        ids = np.full((len(batch), width), self.pad_id, dtype=np.int64)
        types = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, position in enumerate(batch):
            ids[row, :tokens.lengths[position]] = tokens.input_ids[position]
            types[row, :tokens.lengths[position]] = tokens.token_types[position]
            mask[row, :tokens.lengths[position]] = 1
        began = time.perf_counter()
        inputs = (torch.from_numpy(ids).to(self.device), torch.from_numpy(mask).to(self.device),
                  torch.from_numpy(types).to(self.device) if self.uses_token_types else None)

        def record(column: pa.Array) -> pa.RecordBatch:
            return pa.record_batch([pa.array(tokens.example_ids[batch], pa.int64()),
                                    pa.array(tokens.lengths[batch], pa.int32()), column], schema=self.schema)

        if self.signal == DEFAULT_SIGNAL and self.device == "cpu":  # cast while cutting: one pass over the weights
            layers = attention_layers(self.model, *inputs)
            copied = time.perf_counter()
            built = record(layers_column(layers, tokens.lengths[batch], self.layout, tokens.example_ids[batch]))
            seconds = {"forward pass": copied - began, "signal computation": 0.0,
                       "float16 cast and copy into the column": time.perf_counter() - copied}
            return lambda: (built, {}), seconds
        maps, signal_seconds = self.signal_maps(*inputs)
        ready = None
        if self.on_gpu:  # to pinned host memory without waiting: the model goes on with the next batch meanwhile
            host = torch.empty(maps.shape, dtype=maps.dtype, pin_memory=True)
            host.copy_(maps, non_blocking=True)
            ready = torch.cuda.Event(blocking=True)  # the column thread sleeps on it rather than spinning
            ready.record()
            maps = host
        seconds = {"forward pass": time.perf_counter() - began - signal_seconds, "signal computation": signal_seconds}

        def build() -> tuple[pa.RecordBatch, dict[str, float]]:
            cutting = time.perf_counter()
            if ready is not None:
                ready.synchronize()
            column = maps_column(maps.numpy(), tokens.lengths[batch], self.layout, tokens.example_ids[batch])
            return record(column), {"float16 cast and copy into the column": time.perf_counter() - cutting}

        return build, seconds


def write_shard_file(destination: Path, schema: pa.Schema, compression: str, compute: BatchMaps,
                     batches: list[np.ndarray], streams: list[int], *, column_workers: int,
                     timings: dict[str, float]) -> str:
    """``batches`` computed by ``compute`` on the model ``streams`` (streams.in_order) and written in order to
    ``destination`` with ``compression`` (CODECS), renamed into place when complete; returns the shard's digest.
    The seconds of each part go into ``timings`` (extract.TIMINGS)."""
    with ExitStack() as stack:
        tmp = stack.enter_context(atomic_path(destination))
        # Statistics for the id columns only: min/max of the maps' blobs would be of no use, and computing them
        # took half of the writer's time (the reader's get() skips row groups by their example_id range).
        options = {**CODECS[compression], "use_dictionary": False, "write_page_checksum": True,
                   "write_statistics": ["example_id", "n_tokens"]}
        writer = stack.enter_context(ShardWriter(tmp, schema, options, timings=timings, workers=column_workers))
        computed = stack.enter_context(closing(in_order(compute, batches, streams)))
        for _ in batches:
            began = time.perf_counter()
            build, seconds = next(computed)
            waiting = time.perf_counter()
            for part, part_seconds in seconds.items():
                timings[part] += part_seconds
            timings["waiting for the model"] += waiting - began
            writer.submit(build)
            timings["waiting for the writer"] += time.perf_counter() - waiting
        began = time.perf_counter()
        writer.finish()
        stack.pop_all().close()  # rename the shard into place, stop the writer's threads
    timings["closing shards"] += time.perf_counter() - began
    began = time.perf_counter()
    digest = writer.digest.hexdigest(destination)  # the bytes the hashing thread has not read yet: the footer
    timings["shard digest"] += time.perf_counter() - began
    return digest
