"""Attention extraction (METHODS 4): every layer and head of a checkpoint, as Parquet shards.

Layout of a dump ``{results}/attention/{model}/{checkpoint}/{corpus}/{split}/``:
``shard-IIII-of-NNNN.parquet`` files and ``manifest.json``. Shard i holds the
examples whose position in the data table lies in ``[i*n/N, (i+1)*n/N)``; within
a shard, rows follow the length-sorted batches they were computed in. See
docs/attention.md for the schema.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import AtlasError
from ..core.io import atomic_path, read_metadata, write_json
from .capture import attn_implementation

log = logging.getLogger(__name__)

DUMP_SCHEMA = pa.schema([
    pa.field("example_id", pa.int64(), nullable=False),
    pa.field("n_tokens", pa.int32(), nullable=False),
    # float16 little-endian, C order, shape (num_layers, num_heads, n_tokens, n_tokens):
    # attention[l, h, i, j] is how much token i attends to token j in head h of layer l.
    pa.field("attention", pa.large_binary(), nullable=False),
])
SHARD_NAME = "shard-{index:04d}-of-{count:04d}.parquet"
# Level 1: on real maps it stores 1.766 bytes per value against 1.756 at level 3, in 0.73x the time.
ZSTD_LEVEL = 1
# attention.compression (config) -> ParquetWriter arguments.
CODECS = {"lz4": {"compression": "lz4"}, "zstd": {"compression": "zstd", "compression_level": ZSTD_LEVEL},
          "none": {"compression": None}}


def shard_names(count: int) -> list[str]:
    return [SHARD_NAME.format(index=i, count=count) for i in range(count)]


def shard_bounds(n_examples: int, n_shards: int) -> np.ndarray:
    """Positions that split n examples into n_shards contiguous, near-equal ranges."""
    return np.linspace(0, n_examples, n_shards + 1).round().astype(int)


def length_batches(lengths: np.ndarray, batch_size: int, max_batch_tokens: int) -> list[np.ndarray]:
    """Indices grouped into batches of similar length, so that little compute goes to padding."""
    order = np.argsort(lengths, kind="stable")
    batches: list[np.ndarray] = []
    current: list[int] = []
    for index in order:
        longest = lengths[index]  # ascending order: the newest example is the longest
        if current and (len(current) + 1 > batch_size or longest * (len(current) + 1) > max_batch_tokens):
            batches.append(np.asarray(current))
            current = []
        current.append(int(index))
    if current:
        batches.append(np.asarray(current))
    return batches


def pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise AtlasError("device 'cuda' was asked for but torch sees no GPU here; use 'auto' or 'cpu'")
    return device


def forward_attentions(model: Any, input_ids: Any, attention_mask: Any, token_type_ids: Any | None) -> Any:
    """One forward pass returning float16 attention maps stacked as (batch, layers, heads, T, T)."""
    import torch

    kwargs = {"input_ids": input_ids, "attention_mask": attention_mask, "output_attentions": True}
    if token_type_ids is not None:
        kwargs["token_type_ids"] = token_type_ids
    with torch.inference_mode():
        outputs = model(**kwargs)
    attentions = getattr(outputs, "attentions", None)
    if not attentions or any(a is None or a.numel() == 0 for a in attentions):
        implementation = getattr(model.config, "_attn_implementation", "?")
        raise AtlasError(
            f"model type {model.config.model_type!r} returned no attention weights "
            f"(attention implementation {implementation!r}); load it with attn_implementation='eager' "
            "(fused SDPA/flash kernels return none), or choose a model type that supports eager attention")
    # Straight into one float16 buffer: stacking in float32 first would cost a second pass over every map.
    first = attentions[0]
    maps = torch.empty((first.shape[0], len(attentions), *first.shape[1:]), dtype=torch.float16, device=first.device)
    for layer, attention in enumerate(attentions):
        maps[:, layer].copy_(attention)
    return maps


def maps_column(maps: np.ndarray, lengths: np.ndarray) -> pa.LargeBinaryArray:
    """A batch's maps (batch, layers, heads, W, W) cut to each example's T x T, as one Arrow column.

    The blobs are copied once, straight into the column's single data buffer: no bytes object per
    example and no second copy when Arrow builds the column.
    """
    sizes = maps.shape[1] * maps.shape[2] * lengths.astype(np.int64) ** 2 * maps.itemsize
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    for row, n in enumerate(lengths.tolist()):
        destination = data[offsets[row]:offsets[row + 1]].view(maps.dtype).reshape(*maps.shape[1:3], n, n)
        np.copyto(destination, maps[row, :, :, :n, :n])
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(lengths),
                                            [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def read_examples(token_table: str | Path) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """Example ids, input ids and token type ids of every example, in data-table order."""
    table = pq.read_table(token_table, columns=["example_id", "input_id", "token_type_id"])
    example = table["example_id"].to_numpy()
    bounds = np.flatnonzero(np.diff(example)) + 1
    ids = np.split(table["input_id"].to_numpy(), bounds)
    types = np.split(table["token_type_id"].to_numpy(), bounds)
    first = example[np.concatenate([[0], bounds])] if len(example) else np.array([], dtype=np.int64)
    return first, ids, types


def example_ids_digest(example_ids: np.ndarray) -> str:
    """sha256 of a shard's example ids in storage order (int64 little-endian): what the reader checks."""
    return hashlib.sha256(np.ascontiguousarray(example_ids, dtype="<i8").tobytes()).hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def extract_attention(checkpoint_manifest: str | Path, token_table: str | Path, out_dir: str | Path, *,
                      n_shards: int, batch_size: int, max_batch_tokens: int, device: str, threads: int,
                      offline: bool, compression: str, implementation: str) -> dict[str, Any]:
    """Run the checkpoint over every example of a token table and write the attention shards."""
    import torch

    from ..models.checkpoints import load_checkpoint, read_manifest

    torch.set_num_threads(max(1, threads))
    out_dir = Path(out_dir)
    for stale in out_dir.glob(".*.partial"):  # left by a job that was killed mid-write
        stale.unlink()
    manifest = read_manifest(checkpoint_manifest)
    try:
        _, model = load_checkpoint(checkpoint_manifest, offline=offline, attn_implementation=attn_implementation(
            implementation))
    except (ValueError, OSError) as exc:
        raise AtlasError(f"checkpoint {manifest['model']}/{manifest['checkpoint']}: cannot load it with eager "
                         f"attention ({exc})") from exc
    device = pick_device(device)
    model.to(device)
    uses_token_types = getattr(model.config, "type_vocab_size", 0) > 1
    pad_id = model.config.pad_token_id or 0
    example_ids, input_ids, token_types = read_examples(token_table)
    lengths = np.array([len(x) for x in input_ids])
    bounds = shard_bounds(len(example_ids), n_shards)
    layers, heads = model.config.num_hidden_layers, model.config.num_attention_heads
    input_protocol = read_metadata(token_table).get("input_protocol", "text")
    # Every shard carries the identity of its dump and its own place in it, so that a shard copied
    # in from another dump (another checkpoint, corpus or run), or swapped with a sibling, is refused
    # on read (reader.AttentionDump) instead of being trusted.
    dump_id = uuid.uuid4().hex
    metadata = {b"atlas.model": manifest["model"].encode(), b"atlas.checkpoint": manifest["checkpoint"].encode(),
                b"atlas.num_layers": str(layers).encode(), b"atlas.num_heads": str(heads).encode(),
                b"atlas.dtype": b"float16", b"atlas.dump_id": dump_id.encode(),
                b"atlas.input_protocol": input_protocol.encode()}
    shards: list[dict[str, Any]] = []
    started = time.perf_counter()
    done = 0
    # Where the time goes (seconds; the manifest keeps them, benchmarks/bench_extraction.py prints them):
    # the writer thread's work overlaps the model's, so only "waiting for the writer" adds to the wall time.
    timings = dict.fromkeys(("forward and float16 cast", "copy into the column", "waiting for the writer",
                             "writer thread: encode, compress, write", "closing shards", "shard sha256"), 0.0)

    def timed_write(writer: pq.ParquetWriter, record: pa.RecordBatch) -> None:
        began = time.perf_counter()
        writer.write_batch(record)
        timings["writer thread: encode, compress, write"] += time.perf_counter() - began

    # Parquet encoding and compression run on a writer thread while the model computes the next batch.
    with ThreadPoolExecutor(max_workers=1) as writer_thread:
        for shard_index, name in enumerate(shard_names(n_shards)):
            lo, hi = bounds[shard_index], bounds[shard_index + 1]
            destination = out_dir / name
            schema = DUMP_SCHEMA.with_metadata({**metadata, b"atlas.shard": name.encode()})
            stored_ids: list[np.ndarray] = []
            with ExitStack() as stack:
                tmp = stack.enter_context(atomic_path(destination))
                writer = pq.ParquetWriter(tmp, schema, **CODECS[compression], use_dictionary=False,
                                          write_page_checksum=True)
                pending: list[Future] = []
                for batch in length_batches(lengths[lo:hi], batch_size, max_batch_tokens):
                    batch = batch + lo
                    stored_ids.append(example_ids[batch])
                    width = int(lengths[batch].max())
                    ids = np.full((len(batch), width), pad_id, dtype=np.int64)
                    types = np.zeros((len(batch), width), dtype=np.int64)
                    mask = np.zeros((len(batch), width), dtype=np.int64)
                    for row, index in enumerate(batch):
                        ids[row, :lengths[index]] = input_ids[index]
                        types[row, :lengths[index]] = token_types[index]
                        mask[row, :lengths[index]] = 1
                    began = time.perf_counter()
                    maps = forward_attentions(
                        model, torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device),
                        torch.from_numpy(types).to(device) if uses_token_types else None).cpu().numpy()
                    copied = time.perf_counter()
                    record = pa.record_batch([pa.array(example_ids[batch], pa.int64()),
                                              pa.array(lengths[batch], pa.int32()),
                                              maps_column(maps, lengths[batch])], schema=schema)
                    waiting = time.perf_counter()
                    # At most two batches wait for the writer, so memory stays flat however many
                    # examples a shard holds, even when writing is slower than the model.
                    while len(pending) >= 2:
                        pending.pop(0).result()
                    pending.append(writer_thread.submit(timed_write, writer, record))
                    timings["forward and float16 cast"] += copied - began
                    timings["copy into the column"] += waiting - copied
                    timings["waiting for the writer"] += time.perf_counter() - waiting
                    done += len(batch)
                began = time.perf_counter()
                for future in pending:
                    future.result()
                writer.close()
            timings["closing shards"] += time.perf_counter() - began
            began = time.perf_counter()
            digest = _sha256(destination)
            timings["shard sha256"] += time.perf_counter() - began
            shards.append({"file": name, "rows": int(hi - lo), "first_position": int(lo),
                           "example_ids": [int(example_ids[lo]), int(example_ids[hi - 1])] if hi > lo else [],
                           "bytes": destination.stat().st_size, "sha256": digest,
                           "example_ids_sha256": example_ids_digest(
                               np.concatenate(stored_ids) if stored_ids else np.zeros(0, np.int64))})
            elapsed = time.perf_counter() - started
            log.info("shard %d/%d written (%d/%d examples, %.1f examples/s)", shard_index + 1, n_shards, done,
                     len(example_ids), done / max(elapsed, 1e-9))
    values = int(sum(layers * heads * int(n) ** 2 for n in lengths))
    summary = {"model": manifest["model"], "checkpoint": manifest["checkpoint"], "dump_id": dump_id,
               "input_protocol": input_protocol, "compression": compression,
               "implementation": implementation, "num_layers": layers,
               "num_heads": heads, "examples": len(example_ids), "tokens": int(lengths.sum()),
               "values": values, "bytes": int(sum(s["bytes"] for s in shards)), "device": device,
               "seconds": round(time.perf_counter() - started, 3), "shards": shards,
               "token_table": str(token_table), "timings": {k: round(v, 3) for k, v in timings.items()}}
    summary["bytes_per_value"] = summary["bytes"] / max(values, 1)
    write_json(summary, out_dir / "manifest.json")
    log.info("dump complete: %d examples, %.3f bytes per stored value, %.1f s", summary["examples"],
             summary["bytes_per_value"], summary["seconds"])
    return summary


def read_dump_manifest(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())



