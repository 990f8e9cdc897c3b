"""A shard's batches from the model to the disk, in stages that overlap (shard_file.write_shard_file feeds it).

Measured on a GPU node (one H200, 16 cores, bert-base, 1000 wiki segments, a 3.63 GB dump), a single writer thread
that encoded, compressed, wrote and then hashed each batch took 9 of extraction's 11.7 s while the forward passes
took 1.7 s and 15 cores idled. Each batch now passes through three stages, each on threads of its own:

1. **column**: the batch's maps, copied from the device (pinned host memory, an asynchronous copy the model does
   not wait for), cut to each example's T x T (or lower triangle) into the Arrow column (columns.py). A pool of
   ``workers`` threads: numpy's copies release the GIL, so batches are cut side by side.
2. **write**: Parquet's encoding (and codec) of the batch, one thread, in the batches' order (a Parquet file has one
   writer);
3. **hash**: the shard's digest caught up with the bytes just written, one thread, behind the writer (the bytes are
   read back while in the page cache); BLAKE3 (core/file_records.py) spreads over idle cores itself.

At most ``max(WRITES_AHEAD, workers + 1)`` batches are in flight, so memory stays flat however many examples a shard
holds. The file's bytes are those of one thread writing the batches in order: the stages change when work is done,
not what is written.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.file_records import GrowingFileDigest

# Batches in flight beyond the column builders: two, as the single writer thread had.
WRITES_AHEAD = 2
# Most column-building threads: beyond four, copies of float16 maps are bound by memory bandwidth.
MAX_COLUMN_WORKERS = 4
DIGEST = "blake3"
# Where a shard's time goes on the stages' threads (seconds, summed over threads; extract.TIMINGS lists them all).
STAGE_TIMINGS = ("float16 cast and copy into the column", "writer thread: encode, compress, write",
                 "hashing thread: blake3")

Build = Callable[[], tuple[pa.RecordBatch, dict[str, float]]]


class ShardWriter:
    """Writes a shard's record batches, given in order as functions that build them (:meth:`submit`), to ``path``
    with ``options`` (pq.ParquetWriter's), hashing the file as it grows; :meth:`close` finishes and returns the
    digest's hex (call it once, after the file is renamed into ``final_path``)."""

    def __init__(self, path: Path, schema: pa.Schema, options: dict[str, Any], *, workers: int,
                 timings: dict[str, float]) -> None:
        self.timings = timings
        self.workers = max(1, min(int(workers), MAX_COLUMN_WORKERS))
        self.limit = max(WRITES_AHEAD, self.workers + 1)
        self._columns = ThreadPoolExecutor(self.workers, thread_name_prefix="shard-column")
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="shard-writer")
        self._hasher = ThreadPoolExecutor(1, thread_name_prefix="shard-hash")
        self._parquet = pq.ParquetWriter(path, schema, **options)
        self.digest = GrowingFileDigest(path, DIGEST)
        self._in_flight: deque[Future] = deque()

    def submit(self, build: Build) -> None:
        """Queue one batch; waits while ``limit`` batches are in flight (the time shows as "waiting for the
        writer")."""
        built = self._columns.submit(build)
        written = self._writer.submit(self._write, built)
        self._in_flight.append(self._hasher.submit(self._hash, written))
        while len(self._in_flight) > self.limit:
            self._collect(self._in_flight.popleft())

    def _write(self, built: Future) -> dict[str, float]:
        record, seconds = built.result()
        began = time.perf_counter()
        self._parquet.write_batch(record)
        return {**seconds, "writer thread: encode, compress, write": time.perf_counter() - began}

    def _hash(self, written: Future) -> dict[str, float]:
        seconds = written.result()
        began = time.perf_counter()
        self.digest.update()
        return {**seconds, "hashing thread: blake3": time.perf_counter() - began}

    def _collect(self, done: Future) -> None:
        for part, part_seconds in done.result().items():
            self.timings[part] += part_seconds

    def finish(self) -> None:
        """Wait for every batch, then close the Parquet file (its footer written)."""
        while self._in_flight:
            self._collect(self._in_flight.popleft())
        self._parquet.close()

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, *failure: object) -> None:
        """Stop the threads; on a failure, drop the batches not yet written (the file is discarded)."""
        for future in self._in_flight:
            future.cancel()
        for pool in (self._columns, self._writer, self._hasher):
            pool.shutdown(wait=True, cancel_futures=True)
        if failure[0] is not None:
            with contextlib.suppress(Exception):  # the first error is the one to tell (a full disk fails again here)
                self._parquet.close()
            self.digest.close()
