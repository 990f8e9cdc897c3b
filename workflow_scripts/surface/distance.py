"""How far each head looks: the mean token distance of its attention (Vig and Belinkov 2019, section 4.3).

For a head and attention row ``i`` of an example with ``n`` tokens, the row's distance is
``d_i = sum_j a_ij |i - j|``: 0 for a head that attends to itself, 1 for one that attends to a
neighbour, large for one that attends far. Per head:

- ``mean_distance``: the sum of ``d_i`` over every row of every example, divided by the number of
  rows (a ratio of per-example sums, so its 95% interval resamples examples, METHODS 10);
- ``uniform_distance``: the same for a head that spreads every row evenly over the ``n`` tokens,
  ``sum_i sum_j |i - j| / n = (n^2 - 1) / 3`` per example, the reference of a head that looks everywhere;
- ``relative_distance``: ``mean_distance / uniform_distance`` (below 1: the head looks nearer than chance).

Special tokens count as tokens, as in the surface statistics; a head that sends most of its attention to
[CLS] from late rows therefore looks far. The dump is streamed one example at a time.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from ..attention.partials import read_partials, write_partial
from ..attention.reader import AttentionDump
from ..attention.shards import shard_group_files
from ..core.errors import AtlasError
from ..core.stats import ratio_bootstrap_ci
from .statistics import write_labelled_part

log = logging.getLogger(__name__)


def row_distances(attention: np.ndarray) -> np.ndarray:
    """Summed distance ``sum_i sum_j a_ij |i - j|`` of every head of one example: (layers, heads)."""
    n = attention.shape[-1]
    positions = np.arange(n)
    offsets = np.abs(positions[:, None] - positions[None, :]).astype(np.float32)  # (n, n)
    return np.einsum("lhij,ij->lh", attention.astype(np.float32), offsets, dtype=np.float64)


def uniform_distance_sum(n_tokens: int | np.ndarray) -> float | np.ndarray:
    """``sum_i sum_j |i - j| / n`` for a uniform head over ``n`` tokens: (n^2 - 1) / 3."""
    return (n_tokens * n_tokens - 1) / 3.0


def _distance_sums(dump: AttentionDump, *, shards: list[str] | None = None, limit: int | None = None) -> pa.Table:
    """Per example: its id, its number of rows and every head's summed row distance (reading order)."""
    ids, sums, rows = [], [], []
    for example in dump.iter_examples(shards):
        ids.append(example.example_id)
        sums.append(row_distances(example.attention).reshape(-1))
        rows.append(example.n_tokens)
        if limit is not None and len(ids) >= limit:
            break
    width = dump.num_layers * dump.num_heads
    values = np.concatenate(sums) if sums else np.zeros(0)
    return pa.table({"example_id": pa.array(ids, pa.int64()), "n_tokens": pa.array(rows, pa.int64()),
                     "sums": pa.FixedSizeListArray.from_arrays(pa.array(values, pa.float64()), width)})


def distance_frame(per_example: pa.Table, num_layers: int, num_heads: int, *, resamples: int, seed: int,
                   source: str | Path) -> pd.DataFrame:
    """One row per (layer, head): mean, uniform and relative distance, with 95% intervals over examples."""
    if not per_example.num_rows:
        raise AtlasError(f"{source}: the dump has no examples, so no distance can be measured")
    ids = per_example["example_id"].to_numpy()
    order = np.argsort(ids, kind="stable")  # resampling is independent of storage order
    sums = per_example["sums"].combine_chunks().flatten().to_numpy().reshape(len(ids), -1)[order]
    rows = per_example["n_tokens"].to_numpy().astype(np.float64)[order]
    estimate, low, high = ratio_bootstrap_ci(sums, rows, resamples=resamples, seed=seed)
    layer, head = np.divmod(np.arange(num_layers * num_heads), num_heads)
    uniform_mean = float(uniform_distance_sum(rows).sum() / rows.sum())
    frame = pd.DataFrame({"layer": layer, "head": head, "mean_distance": estimate,
                          "mean_distance_low": low, "mean_distance_high": high,
                          "uniform_distance": uniform_mean, "relative_distance": estimate / uniform_mean,
                          "n_tokens": int(rows.sum()), "n_examples": len(ids),
                          "bootstrap_resamples": resamples, "bootstrap_seed": seed})
    log.info("attention distance of %s: %d examples, %d tokens", source, len(ids), int(rows.sum()))
    return frame


def attention_distance(dump_dir: str | Path, *, resamples: int, seed: int,
                       limit: int | None = None) -> pd.DataFrame:
    """One row per (layer, head) of a dump, streamed in one process (the rules run it per shard)."""
    dump = AttentionDump(dump_dir)
    return distance_frame(_distance_sums(dump, limit=limit), dump.num_layers, dump.num_heads, resamples=resamples,
                          seed=seed, source=dump_dir)


def attention_distance_part(dump_manifest: str | Path, output: str | Path, *, model: str, checkpoint: str,
                            corpus: str, split: str, resamples: int, seed: int) -> pd.DataFrame:
    """The per-checkpoint part of ``attention_distance.csv``, in one process."""
    frame = attention_distance(Path(dump_manifest).parent, resamples=resamples, seed=seed)
    return write_labelled_part(frame, output, model=model, checkpoint=checkpoint, corpus=corpus, split=split)


def attention_distance_shard(dump_manifest: str | Path, output: str | Path, *, shard_group: str) -> None:
    """One shard group's per-example distance sums (rule attention_distance_shard)."""
    dump = AttentionDump(Path(dump_manifest).parent)
    files = shard_group_files(shard_group)
    table = _distance_sums(dump, shards=files)
    write_partial(table, output, dump=dump, shards=files, analysis="attention_distance", examples=table.num_rows)


def attention_distance_gather(dump_manifest: str | Path, partials: list[str], output: str | Path, *, model: str,
                              checkpoint: str, corpus: str, split: str, resamples: int, seed: int) -> pd.DataFrame:
    """The per-checkpoint part of ``attention_distance.csv`` from the shards' partials: the one-process table."""
    dump = AttentionDump(Path(dump_manifest).parent)
    tables = [table for table, _ in read_partials(partials, dump, "attention_distance")]
    frame = distance_frame(pa.concat_tables(tables), dump.num_layers, dump.num_heads, resamples=resamples,
                           seed=seed, source=dump.directory)
    return write_labelled_part(frame, output, model=model, checkpoint=checkpoint, corpus=corpus, split=split)
