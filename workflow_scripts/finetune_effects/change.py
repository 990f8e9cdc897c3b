"""Change of every head after fine-tuning [K] §4.3 (METHODS 8.2).

Per head: the cosine similarity between the flattened token-level maps of the pretrained and a
fine-tuned checkpoint on the same inputs (the task's dev examples, one token table, so the maps
have the same shape), averaged over examples; 1 means unchanged. The mean over examples carries a
95% interval that resamples examples (METHODS 10). Both dumps are streamed side by side: they were
written from the same token table with the same batching, so their storage orders agree; should
they not, the examples met in one dump wait in a buffer until the other dump reaches them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import AtlasError
from ..core.io import write_csv
from ..core.stats import ratio_bootstrap_ci
from .patterns import checkpoint_info, first_examples

log = logging.getLogger(__name__)


def head_cosines(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Cosine similarity per head between two (layers, heads, T, T) maps of the same example."""
    a = np.asarray(before, dtype=np.float32).reshape(before.shape[0], before.shape[1], -1)
    b = np.asarray(after, dtype=np.float32).reshape(after.shape[0], after.shape[1], -1)
    if a.shape != b.shape:
        raise AtlasError(f"maps of shapes {before.shape} and {after.shape} cannot be compared")
    dot = (a * b).sum(-1)
    norm = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    return np.divide(dot, norm, out=np.full(dot.shape, np.nan, dtype=np.float32), where=norm > 0)


def paired_examples(first_dir: str | Path, second_dir: str | Path, wanted: set[int] | None = None
                    ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(example id, maps of the first dump, maps of the second) for every example in both dumps."""
    from ..attention.reader import AttentionDump

    first, second = AttentionDump(first_dir), AttentionDump(second_dir)
    if (first.num_layers, first.num_heads) != (second.num_layers, second.num_heads):
        raise AtlasError(f"dumps {first_dir} and {second_dir} differ in layers x heads "
                         f"({first.num_layers}x{first.num_heads} vs {second.num_layers}x{second.num_heads})")
    waiting_first: dict[int, np.ndarray] = {}
    waiting_second: dict[int, np.ndarray] = {}
    for one, two in _zip_longest(first.iter_examples(), second.iter_examples()):
        for example, own, other, is_first in ((one, waiting_first, waiting_second, True),
                                             (two, waiting_second, waiting_first, False)):
            if example is None or (wanted is not None and example.example_id not in wanted):
                continue
            match = other.pop(example.example_id, None)
            if match is None:
                own[example.example_id] = example.attention
            elif is_first:
                yield example.example_id, example.attention, match
            else:
                yield example.example_id, match, example.attention
    if waiting_first or waiting_second:
        log.warning("%d examples only in %s, %d only in %s: left out", len(waiting_first), first_dir,
                    len(waiting_second), second_dir)


def _zip_longest(a, b):
    from itertools import zip_longest

    return zip_longest(a, b, fillvalue=None)


def finetune_change(pretrained_dump: str | Path, finetuned_dump: str | Path, token_table: str | Path,
                    output: str | Path, *, model: str, task: str, checkpoint: str, checkpoint_manifest: str | Path,
                    resamples: int, max_examples: int | None = None, seed: int) -> pd.DataFrame:
    """Per-head mean cosine between pretrained and fine-tuned maps of one task's dev examples."""
    wanted = set(first_examples(token_table, max_examples))
    cosines = []
    for example_id, before, after in paired_examples(pretrained_dump, finetuned_dump, wanted):
        if before.shape != after.shape:
            raise AtlasError(f"example {example_id}: {pretrained_dump} has maps of {before.shape[-1]} tokens, "
                             f"{finetuned_dump} of {after.shape[-1]}; both must come from the token table "
                             f"{token_table}: rerun snakemake")
        cosines.append(head_cosines(before, after))
    if not cosines:
        raise AtlasError(f"no example is in both {pretrained_dump} and {finetuned_dump}")
    if len(cosines) < len(wanted):
        raise AtlasError(f"only {len(cosines)} of {len(wanted)} examples are in both {pretrained_dump} and "
                         f"{finetuned_dump}; rerun snakemake to rebuild the dumps")
    values = np.stack(cosines)  # (examples, layers, heads)
    n_examples, layers, heads = values.shape
    mean, low, high = ratio_bootstrap_ci(values.reshape(n_examples, -1), np.ones(n_examples),
                                         resamples=resamples, seed=seed)
    info = checkpoint_info(checkpoint_manifest)
    frame = pd.DataFrame({
        "model": model, "task": task, "checkpoint": checkpoint, **info,
        "layer": np.repeat(np.arange(layers), heads), "head": np.tile(np.arange(heads), layers),
        "cosine": mean, "ci_low": low, "ci_high": high, "n": n_examples, "bootstrap_seed": seed,
    })
    write_csv(frame, output)
    log.info("%s vs pretrained on %s: mean cosine %.3f over %d heads and %d examples (lowest %.3f)",
             checkpoint, task, float(np.nanmean(mean)), layers * heads, n_examples, float(np.nanmin(mean)))
    return frame
