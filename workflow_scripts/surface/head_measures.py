"""Per-head measures of the surface dump: an analysis declared in one place, run by shared rules.

A *head measure* is one number per head: a ratio of per-example sums, ``sum_e num_e[l, h] / sum_e den_e``,
with its 95% bootstrap interval over examples (METHODS 10, as the surface statistics and the attention distance).
The science is one function per measure, from one example's token-level maps and tokens to its numerator
(layers, heads) and denominator; :class:`HeadMeasure` declares it with its caption and explorer label, and
``HEAD_MEASURES`` in ``workflow_scripts/surface/measures.py`` lists them. The rules ``head_measure_shard``,
``head_measure_part`` and ``surface_table`` (rules/surface.smk) run every declared measure on the surface
dump per shard group, gather the parts per (model, checkpoint) and write ``tables/<name>.csv`` as a report output
whose caption is the declaration's; the head explorer colours its grid by it (docs/contributing.md, "Recipe: add
an analysis").

Columns of the table: model, checkpoint, layer, head, ``<name>``, ``<name>_low``, ``<name>_high``, ``n_units``
(the summed denominators: the queries or tokens the mean is over), n_examples, bootstrap_resamples,
bootstrap_seed, corpus, split.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from ..attention.partials import read_partials, write_partial
from ..attention.reader import AttentionDump
from ..attention.shards import shard_group_files
from ..core.errors import AtlasError
from ..core.stats import ratio_bootstrap_ci
from .statistics import read_example_columns, token_text, write_labelled_part

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class ExampleTokens:
    """The tokens of one example, as the token table stores them (position order)."""

    text: np.ndarray      # object (T,): each token's text without a word marker ('Ġ', '▁', '##')
    input_ids: np.ndarray  # int (T,)
    special: np.ndarray    # bool (T,): the tokenizer's special_tokens_mask
    word: np.ndarray       # int (T,): the word of each token, -1 for special tokens


# (attention (layers, heads, T, T) float32, tokens) -> (numerator (layers, heads), denominator)
ExampleSums = Callable[[np.ndarray, ExampleTokens], tuple[np.ndarray, float]]


@dataclass(frozen=True)
class HeadMeasure:
    """One per-head measure: its table's name, what it is (label, unit), its per-example sums, the caption of its
    table in the report (reStructuredText) and whether the explorer's grid is coloured by it."""

    name: str
    label: str
    unit: str
    sums: ExampleSums
    caption: str
    in_explorer: bool = True


def read_example_tokens(token_table: str | Path,
                        example_ids: Collection[int] | None = None) -> dict[int, ExampleTokens]:
    """The tokens of every example of a token table (of ``example_ids`` only: only their rows are read)."""
    examples = read_example_columns(token_table, ["token", "input_id", "special", "word_index"], example_ids)
    return {example_id: ExampleTokens(np.array([token_text(str(t)) for t in c["token"]], dtype=object),
                                      c["input_id"], c["special"], c["word_index"])
            for example_id, c in examples.items()}


def _example_sums(measure: HeadMeasure, dump: AttentionDump, tokens: dict[int, ExampleTokens],
                  shards: list[str] | None) -> Iterator[tuple[int, np.ndarray, float]]:
    for example in dump.iter_examples(shards):
        of_example = tokens.get(example.example_id)
        if of_example is None or len(of_example.word) != example.n_tokens:
            found = "no tokens" if of_example is None else f"{len(of_example.word)} tokens"
            raise AtlasError(f"{dump.directory}: example {example.example_id} has {example.n_tokens} tokens in the "
                             f"dump and {found} in the token table; rerun snakemake to rebuild both")
        numerator, denominator = measure.sums(example.attention.astype(np.float32), of_example)
        yield example.example_id, np.asarray(numerator, dtype=np.float64).reshape(-1), float(denominator)


def sums_table(measure: HeadMeasure, dump: AttentionDump, tokens: dict[int, ExampleTokens],
               shards: list[str] | None = None) -> pa.Table:
    """Per example of ``shards`` (default: every shard): its id, every head's numerator and its denominator."""
    ids, numerators, denominators = [], [], []
    for example_id, numerator, denominator in _example_sums(measure, dump, tokens, shards):
        ids.append(example_id)
        numerators.append(numerator)
        denominators.append(denominator)
    width = dump.num_layers * dump.num_heads
    values = np.concatenate(numerators) if numerators else np.zeros(0)
    return pa.table({"example_id": pa.array(ids, pa.int64()),
                     "numerator": pa.FixedSizeListArray.from_arrays(pa.array(values, pa.float64()), width),
                     "denominator": pa.array(denominators, pa.float64())})


def measure_frame(measure: HeadMeasure, per_example: pa.Table, num_layers: int, num_heads: int, *, resamples: int,
                  seed: int, source: str | Path) -> pd.DataFrame:
    """One row per (layer, head): the measure with its 95% interval over examples (examples in id order)."""
    if not per_example.num_rows:
        raise AtlasError(f"{source}: the dump has no examples, so {measure.name} cannot be measured")
    ids = per_example["example_id"].to_numpy()
    order = np.argsort(ids, kind="stable")  # resampling is independent of storage order
    numerators = per_example["numerator"].combine_chunks().flatten().to_numpy().reshape(len(ids), -1)[order]
    denominators = per_example["denominator"].to_numpy()[order]
    estimate, low, high = ratio_bootstrap_ci(numerators, denominators, resamples=resamples, seed=seed)
    layer, head = np.divmod(np.arange(num_layers * num_heads), num_heads)
    log.info("%s of %s: %d examples, %g units", measure.name, source, len(ids), denominators.sum())
    return pd.DataFrame({"layer": layer, "head": head, measure.name: estimate, f"{measure.name}_low": low,
                         f"{measure.name}_high": high, "n_units": float(denominators.sum()), "n_examples": len(ids),
                         "bootstrap_resamples": resamples, "bootstrap_seed": seed})


def head_measure(measure: HeadMeasure, dump_dir: str | Path, token_table: str | Path, *, resamples: int,
                 seed: int) -> pd.DataFrame:
    """The measure of every head of a dump in one process (the rules run it per shard group and gather)."""
    dump = AttentionDump(dump_dir)
    table = sums_table(measure, dump, read_example_tokens(token_table))
    return measure_frame(measure, table, dump.num_layers, dump.num_heads, resamples=resamples, seed=seed,
                         source=dump_dir)


def head_measure_shard(measure: HeadMeasure, dump_manifest: str | Path, token_table: str | Path,
                       output: str | Path, *, shard_group: str) -> None:
    """One shard group's per-example sums (rule head_measure_shard)."""
    dump = AttentionDump(Path(dump_manifest).parent)
    files = shard_group_files(shard_group)
    tokens = read_example_tokens(token_table, dump.shard_example_ids(files))
    table = sums_table(measure, dump, tokens, files)
    write_partial(table, output, dump=dump, shards=files, analysis=measure.name, examples=table.num_rows)


def head_measure_gather(measure: HeadMeasure, dump_manifest: str | Path, partials: list[str], output: str | Path, *,
                        model: str, checkpoint: str, corpus: str, split: str, resamples: int,
                        seed: int) -> pd.DataFrame:
    """The (model, checkpoint) part of ``tables/<name>.csv`` from the shards' partials (rule head_measure_part)."""
    dump = AttentionDump(Path(dump_manifest).parent)
    tables = [table for table, _ in read_partials(partials, dump, measure.name)]
    frame = measure_frame(measure, pa.concat_tables(tables), dump.num_layers, dump.num_heads, resamples=resamples,
                          seed=seed, source=dump.directory)
    return write_labelled_part(frame, output, model=model, checkpoint=checkpoint, corpus=corpus, split=split)
