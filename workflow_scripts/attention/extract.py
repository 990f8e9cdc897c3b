"""Attention extraction (METHODS 4): every layer and head of a checkpoint, as Parquet shards.

Layout of a dump ``{results}/attention/{subject}/{checkpoint}/{corpus}/{split}/`` (subject: the model, or
MODEL@SIGNAL for a signal other than attention, whose maps signals.py computes; docs/signals.md):
``shard-IIII-of-NNNN.parquet`` files, each with its record ``parts/shard-IIII-of-NNNN.json``,
and ``manifest.json``. Shard i holds the examples whose position in the data table lies in
``[i*n/N, (i+1)*n/N)``; within a shard, rows follow the length-sorted batches they were computed in.
See docs/attention.md for the schema.

The workflow writes each shard in a job of its own (:func:`extract_shard`, rule extract_attention)
and gathers their records into the manifest (:func:`gather_manifest`, rule attention_dump_manifest);
:func:`extract_attention` does both in one process (tests, benchmarks). A shard's batches go through the model
and into its file in shard_file.py; its schema and record are made here.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.batches import length_batches
from ..core.errors import AtlasError
from ..core.file_records import file_entry, write_sealed_json
from ..core.io import read_metadata
from ..models.families import family_of
from .layout import FULL, LOWER_TRIANGLE
from .shard_file import BatchMaps, TokenColumns, write_shard_file
from .shard_writer import DIGEST, STAGE_TIMINGS
from .shards import example_ids_digest, shard_bounds, shard_names, shard_record_path
from .signals import SignalMaps, attn_implementation_for
from .streams import stream_threads

log = logging.getLogger(__name__)

DUMP_SCHEMA = pa.schema([
    pa.field("example_id", pa.int64(), nullable=False),
    pa.field("n_tokens", pa.int32(), nullable=False),
    # float16 little-endian, C order, shape (num_layers, num_heads, n_tokens, n_tokens):
    # attention[l, h, i, j] is how much token i attends to token j in head h of layer l.
    pa.field("attention", pa.large_binary(), nullable=False),
])
# "signal computation": norm and rollout's math after the forward pass (signals.SignalMaps); 0 for attention.
# On CPU the attention weights are cast to float16 as they are copied into the column (columns.layers_column), on a
# model stream; on a GPU, and for the other signals, the cast is part of the forward pass's time, and the copy into
# the column is done by shard_writer's column threads. The forward pass and the signal are summed over the model
# streams (streams.py), which overlap each other: "waiting for the model" is what the shard waited for them. The
# stages' times (shard_writer.STAGE_TIMINGS) are summed over their threads, which overlap the model.
TIMINGS = ("forward pass", "signal computation", "waiting for the model", "waiting for the writer", *STAGE_TIMINGS,
           "closing shards", "shard digest")


def shard_batches(lengths: np.ndarray, index: int, n_shards: int, batch_size: int, max_batch_tokens: int
                  ) -> list[np.ndarray]:
    """Shard ``index``'s batches (core/batches.length_batches, by tokens, within the shard's positions,
    shard_bounds), as positions in the data table, in the order extraction computes and stores them."""
    bounds = shard_bounds(len(lengths), n_shards)
    lo, hi = int(bounds[index]), int(bounds[index + 1])
    return [batch + lo for batch in length_batches(lengths[lo:hi], batch_size, max_batch_tokens)]


def pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise AtlasError("device 'cuda' was asked for but torch sees no GPU here; use 'auto' or 'cpu'")
    return device


def read_examples(token_table: str | Path) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """Example ids, input ids and token type ids of every example, in data-table order."""
    table = pq.read_table(token_table, columns=["example_id", "input_id", "token_type_id"])
    example = table["example_id"].to_numpy()
    bounds = np.flatnonzero(np.diff(example)) + 1
    ids = np.split(table["input_id"].to_numpy(), bounds)
    types = np.split(table["token_type_id"].to_numpy(), bounds)
    first = example[np.concatenate([[0], bounds])] if len(example) else np.array([], dtype=np.int64)
    return first, ids, types


@dataclass
class Extractor:
    """A checkpoint loaded for extraction and the token table it runs over (read once per process)."""

    model: Any
    device: str
    checkpoint: dict[str, Any]
    token_table: str
    implementation: str
    input_protocol: str
    tokens: TokenColumns
    threads: int = 1  # torch's threads, shared by the model streams (streams.py)
    signal: str = "attention"
    signal_maps: SignalMaps | None = None  # computes the signal's maps batch by batch (signals.py)

    @property
    def num_layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def num_heads(self) -> int:
        return int(self.model.config.num_attention_heads)


def load_extractor(checkpoint_manifest: str | Path, token_table: str | Path, *, device: str, threads: int,
                   offline: bool, implementation: str, signal: str = "attention",
                   dtype: str = "float32") -> Extractor:
    import torch

    from ..models.checkpoints import load_checkpoint, read_manifest

    torch.set_num_threads(max(1, threads))
    manifest = read_manifest(checkpoint_manifest, verify=False)  # load_checkpoint verifies the weights it loads
    try:
        _, model = load_checkpoint(checkpoint_manifest, offline=offline, dtype=dtype,
                                   attn_implementation=attn_implementation_for(implementation, signal))
    except (ValueError, OSError) as exc:
        # Only an error about the attention implementation is blamed on the setting; any other (an unreadable
        # weights file, say) names the checkpoint and transformers' own words.
        if "implementation" in str(exc):
            raise AtlasError(f"checkpoint {manifest['model']}/{manifest['checkpoint']}: cannot load it with "
                             f"attention.implementation {implementation!r} for signal {signal!r} ({exc})") from exc
        raise AtlasError(f"checkpoint {manifest['model']}/{manifest['checkpoint']} ({checkpoint_manifest}): "
                         f"transformers cannot load it ({exc})") from exc
    signal_maps = SignalMaps(model, signal)  # before the device and the token table: refuses an unknown family
    device = pick_device(device)
    model.to(device)
    example_ids, input_ids, token_types = read_examples(token_table)
    return Extractor(model=model, device=device, checkpoint=manifest, token_table=str(token_table),
                     implementation=implementation,
                     input_protocol=read_metadata(token_table).get("input_protocol", "text"),
                     tokens=TokenColumns(example_ids, input_ids, token_types,
                                         np.array([len(x) for x in input_ids], dtype=np.int64)),
                     threads=max(1, threads),
                     signal=signal,
                     signal_maps=signal_maps)


def retire_manifest(out_dir: str | Path) -> None:
    """Remove a dump's manifest before any of its shards is replaced: it marks the dump complete, and would
    describe a shard that no longer exists (the gather writes the new one)."""
    (Path(out_dir) / "manifest.json").unlink(missing_ok=True)


def write_shard(extractor: Extractor, out_dir: str | Path, index: int, n_shards: int, *, batch_size: int,
                max_batch_tokens: int, compression: str, signal: str | None = None) -> dict[str, Any]:
    """Extract shard ``index`` of ``n_shards`` (positions [lo, hi) of the token table, by shard_bounds).

    ``signal`` (signals.SIGNALS) defaults to the one the extractor was loaded for; ``norm`` needs an extractor
    loaded for it (its value vectors are recorded by the attention function it was loaded with).

    Writes the shard and then its record (shard_record_path), each renamed into place when complete,
    and returns the record. The dump's manifest, if any, is removed first: it would describe a shard
    that is about to be replaced (gather_manifest writes the new one from the records).
    """
    out_dir = Path(out_dir)
    name = shard_names(n_shards)[index]
    destination = out_dir / name
    retire_manifest(out_dir)
    # Left by a job of this shard that was killed mid-write; sibling shards' files are live (their jobs may run now).
    record_path = shard_record_path(out_dir, name)
    for stale in (*out_dir.glob(f".{name}.*.partial"), *record_path.parent.glob(f".{record_path.name}.*.partial")):
        stale.unlink(missing_ok=True)
    ex, model, device = extractor, extractor.model, extractor.device
    example_ids = ex.tokens.example_ids
    signal = signal or ex.signal
    signal_maps = ex.signal_maps if signal == ex.signal and ex.signal_maps else SignalMaps(model, signal)
    uses_token_types = getattr(model.config, "type_vocab_size", 0) > 1
    family = family_of(model.config.model_type)
    pad_id = family.pad_id(model.config)
    layout = LOWER_TRIANGLE if family.causal else FULL  # a decoder's upper triangle is zero: not stored
    bounds = shard_bounds(len(example_ids), n_shards)
    lo, hi = int(bounds[index]), int(bounds[index + 1])
    # Every shard carries the identity of the job that wrote it and its own place in the dump, so that a
    # shard copied in from another dump or run, or swapped with a sibling, is refused on read
    # (reader.AttentionDump): the manifest lists each shard's run id.
    run_id = uuid.uuid4().hex
    schema = DUMP_SCHEMA.with_metadata(_shard_metadata(ex, name, run_id, signal, layout))
    started = time.perf_counter()
    # Where the time goes (seconds; the manifest sums them, benchmarks/bench_extraction.py prints them):
    # the writer thread's work overlaps the model's, so only "waiting for the writer" adds to the wall time.
    timings = dict.fromkeys(TIMINGS, 0.0)
    compute = BatchMaps(model=model, device=device, signal=signal, signal_maps=signal_maps, layout=layout,
                        schema=schema, pad_id=pad_id, uses_token_types=uses_token_types, tokens=ex.tokens)
    batches = shard_batches(ex.tokens.lengths, index, n_shards, batch_size, max_batch_tokens)
    streams = stream_threads(ex.threads, device, signal)
    # On a CPU the model streams take the cores (the column is cut on them); a GPU leaves them to the columns.
    digest = write_shard_file(destination, schema, compression, compute, batches, streams,
                              column_workers=ex.threads if device != "cpu" else 1, timings=timings)
    shard = {"file": name, "rows": hi - lo, "first_position": lo,
             "example_ids": [int(example_ids[lo]), int(example_ids[hi - 1])] if hi > lo else [],
             "bytes": destination.stat().st_size, DIGEST: digest,
             "example_ids_sha256": example_ids_digest(example_ids[np.concatenate(batches)] if batches
                                                      else np.zeros(0, np.int64)),
             "run_id": run_id}
    seconds = time.perf_counter() - started
    record = _shard_record(ex, index, n_shards, lo, hi, signal=signal, compression=compression, layout=layout,
                           seconds=seconds, timings=timings, shard=shard)
    record = write_sealed_json(record, record_path)
    log.info("shard %d/%d written: %d examples (positions %d-%d), %.1f examples/s", index + 1, n_shards, hi - lo,
             lo, hi, (hi - lo) / max(seconds, 1e-9))
    return record


def _shard_metadata(ex: Extractor, name: str, run_id: str, signal: str, layout: str) -> dict[bytes, bytes]:
    """The Parquet metadata of shard ``name``: the checkpoint and its shape, the maps' type, signal and layout, and
    the run id of the job writing it."""
    return {b"atlas.model": ex.checkpoint["model"].encode(),
            b"atlas.checkpoint": ex.checkpoint["checkpoint"].encode(),
            b"atlas.num_layers": str(ex.num_layers).encode(), b"atlas.num_heads": str(ex.num_heads).encode(),
            b"atlas.dtype": b"float16", b"atlas.run_id": run_id.encode(), b"atlas.shard": name.encode(),
            b"atlas.input_protocol": ex.input_protocol.encode(), b"atlas.signal": signal.encode(),
            b"atlas.layout": layout.encode()}


def _shard_record(ex: Extractor, index: int, n_shards: int, lo: int, hi: int, *, signal: str, compression: str,
                  layout: str, seconds: float, timings: dict[str, float], shard: dict[str, Any]) -> dict[str, Any]:
    """Shard ``index``'s record (before write_sealed_json seals it): what was extracted from where and how, its
    size, its times, and ``shard``, its file's entry in the manifest."""
    lengths = ex.tokens.lengths[lo:hi]
    return {"model": ex.checkpoint["model"], "checkpoint": ex.checkpoint["checkpoint"],
            "input_protocol": ex.input_protocol, "signal": signal, "compression": compression, "layout": layout,
            "implementation": ex.implementation, "weights_dtype": str(ex.model.dtype).removeprefix("torch."),
            "num_layers": ex.num_layers, "num_heads": ex.num_heads, "device": ex.device,
            "token_table": ex.token_table, "table_examples": len(ex.tokens.example_ids), "index": index,
            # The token table as this shard read it: the plan checks it (runtime/integrity.py).
            "token_table_file": file_entry(ex.token_table),
            "num_shards": n_shards, "examples": hi - lo, "tokens": int(lengths.sum()),
            # The maps' values (T x T per head) whatever the layout stores: bytes per value compare layouts.
            "values": int(sum(ex.num_layers * ex.num_heads * int(n) ** 2 for n in lengths)),
            "seconds": round(seconds, 3), "timings": {k: round(v, 3) for k, v in timings.items()}, "shard": shard}


def extract_shard(checkpoint_manifest: str | Path, token_table: str | Path, out_dir: str | Path, *, index: int,
                  n_shards: int, batch_size: int, max_batch_tokens: int, device: str, threads: int,
                  offline: bool, compression: str, implementation: str, signal: str = "attention",
                  dtype: str = "float32") -> dict[str, Any]:
    """One shard of a dump, in a process of its own (rule extract_attention): load, extract, record."""
    if not 0 <= index < n_shards:
        raise AtlasError(f"shard index {index} is outside a dump of {n_shards} shards")
    retire_manifest(out_dir)  # first: loading the model takes a while, and the job may be killed meanwhile
    extractor = load_extractor(checkpoint_manifest, token_table, device=device, threads=threads, offline=offline,
                               implementation=implementation, signal=signal, dtype=dtype)
    return write_shard(extractor, out_dir, index, n_shards, batch_size=batch_size, max_batch_tokens=max_batch_tokens,
                       compression=compression)


def extract_attention(checkpoint_manifest: str | Path, token_table: str | Path, out_dir: str | Path, *,
                      n_shards: int, batch_size: int, max_batch_tokens: int, device: str, threads: int,
                      offline: bool, compression: str, implementation: str,
                      signal: str = "attention", dtype: str = "float32") -> dict[str, Any]:
    """A whole dump in one process: the model is loaded once, every shard written (write_shard), then the
    manifest gathered (gather_manifest). The workflow runs the same two steps as one job per shard
    (rule extract_attention) and a gather (rule attention_dump_manifest)."""
    retire_manifest(out_dir)
    extractor = load_extractor(checkpoint_manifest, token_table, device=device, threads=threads, offline=offline,
                               implementation=implementation, signal=signal, dtype=dtype)
    for index in range(n_shards):
        write_shard(extractor, out_dir, index, n_shards, batch_size=batch_size, max_batch_tokens=max_batch_tokens,
                    compression=compression)
    from .gather import gather_manifest  # gather imports this module's names

    return gather_manifest(out_dir, n_shards)


def read_dump_manifest(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())
