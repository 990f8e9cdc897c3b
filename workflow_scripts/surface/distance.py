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

from ..core.errors import AtlasError
from ..core.io import write_csv
from ..core.stats import ratio_bootstrap_ci

log = logging.getLogger(__name__)


def row_distances(attention: np.ndarray) -> np.ndarray:
    """Summed distance ``sum_i sum_j a_ij |i - j|`` of every head of one example: (layers, heads)."""
    n = attention.shape[-1]
    positions = np.arange(n)
    offsets = np.abs(positions[:, None] - positions[None, :]).astype(np.float32)  # (n, n)
    return np.einsum("lhij,ij->lh", attention.astype(np.float32), offsets, dtype=np.float64)


def uniform_distance_sum(n_tokens: int) -> float:
    """``sum_i sum_j |i - j| / n`` for a uniform head over ``n`` tokens: (n^2 - 1) / 3."""
    return (n_tokens * n_tokens - 1) / 3.0


def attention_distance(dump_dir: str | Path, *, resamples: int, seed: int,
                       limit: int | None = None) -> pd.DataFrame:
    """One row per (layer, head) of a dump: mean, uniform and relative distance, with 95% intervals."""
    from ..attention.reader import AttentionDump

    dump = AttentionDump(dump_dir)
    ids, sums, rows, uniform = [], [], [], []
    for example in dump.iter_examples():
        ids.append(example.example_id)
        sums.append(row_distances(example.attention).reshape(-1))
        rows.append(example.n_tokens)
        uniform.append(uniform_distance_sum(example.n_tokens))
        if limit is not None and len(ids) >= limit:
            break
    if not ids:
        raise AtlasError(f"{dump_dir}: the dump has no examples, so no distance can be measured")
    order = np.argsort(ids, kind="stable")  # resampling is independent of storage order
    sums_array = np.stack(sums)[order]
    rows_array = np.asarray(rows, dtype=np.float64)[order]
    estimate, low, high = ratio_bootstrap_ci(sums_array, rows_array, resamples=resamples, seed=seed)
    layer, head = np.divmod(np.arange(dump.num_layers * dump.num_heads), dump.num_heads)
    uniform_mean = float(np.sum(uniform) / rows_array.sum())
    frame = pd.DataFrame({"layer": layer, "head": head, "mean_distance": estimate,
                          "mean_distance_low": low, "mean_distance_high": high,
                          "uniform_distance": uniform_mean, "relative_distance": estimate / uniform_mean,
                          "n_tokens": int(rows_array.sum()), "n_examples": len(ids),
                          "bootstrap_resamples": resamples, "bootstrap_seed": seed})
    log.info("attention distance of %s: %d examples, %d tokens", dump_dir, len(ids), int(rows_array.sum()))
    return frame


def attention_distance_part(dump_manifest: str | Path, output: str | Path, *, model: str, checkpoint: str,
                            corpus: str, split: str, resamples: int, seed: int) -> pd.DataFrame:
    """The per-checkpoint part of ``attention_distance.csv``."""
    frame = attention_distance(Path(dump_manifest).parent, resamples=resamples, seed=seed)
    frame.insert(0, "checkpoint", checkpoint)
    frame.insert(0, "model", model)
    frame["corpus"], frame["split"] = corpus, split
    write_csv(frame, output)
    return frame
