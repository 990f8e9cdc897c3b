"""Attention heads as dependency parsers (METHODS 7.3, [C] §4.2): heads scored as [C]'s released code does.

Every head is a parser with no parameters, at word level (METHODS 5); special
tokens and tokens over no word are never candidates, and a word never predicts
itself. For every word d with gold head h, each head makes two predictions:

- dependent -> head: the other word that d attends to most (argmax over d's row);
- head -> dependent: the other word that attends to d most (argmax over d's
  column, i.e. the row of the transposed map, as [C]'s ``mode="transpose"``).

Either is correct when it is h. Words are grouped by their relation: the full UD
label (``nmod:poss``), a base relation ``x:*`` for every label that has subtypes
in the split (``nmod:*`` pools ``nmod``, ``nmod:poss``, ``nmod:tmod``, ...), and
``all`` (dependent -> head only). ``all`` counts every word of the sentence, as
[C]'s code does: punctuation included, and the root word too, which no head can
get right (a head's prediction is always a word, never the root). A word whose
tokens, or whose head's tokens, were cut off (truncation) is skipped and counted.
``either`` picks, per relation, the best head over both directions (what [C]'s
Table 1 reports).

The baseline is a fixed offset o in -max_offset..+max_offset (o != 0): word d
predicts word d + o (no prediction past either end of the sentence). This is
METHODS' baseline, not a copy of [C]'s code, whose offsets were -3..+2 and whose
predictions past an end fell back to the root. It does not
depend on the direction, so one set of offset counts serves both. The best offset
per relation is chosen like the best head.

Scoring (:func:`score_dependency_heads`) streams one dump and writes per-sentence
correct counts per (relation, head) — vectorised over all heads at once — so
that bootstrap intervals over sentences (METHODS 10) come from
:func:`workflow_scripts.stats.ratio_bootstrap_ci`; ``dependency_selection`` selects
heads on one split, scores them on another and writes the tables.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..attention.annotate import read_trees
from ..attention.layout import LOWER_TRIANGLE
from ..attention.partials import read_partials, write_partial
from ..attention.reader import AttentionDump, ExampleMaps, to_word_level
from ..attention.shards import shard_group_files
from ..attention.tokens import token_words
from ..core.errors import AtlasError
from ..core.io import read_rows, write_table
from .dependency_counts import (
    ALL,
    CausalCounts,
    Memberships,
    NotANumberError,
    ScoredSentence,
    SentenceCounts,
    count_predictions,
    predict,
    window_is_full,
)

log = logging.getLogger(__name__)

SCORING_THREADS = 2  # windows converted and scored at once, unless the caller says otherwise


# [C]'s Stanford Dependencies labels for the UD relations that replace them (METHODS 7.3).
PAPER_LABELS = {
    "all": "All", "det": "det", "obj": "dobj", "nsubj": "nsubj", "amod": "amod", "aux": "aux",
    "aux:pass": "auxpass", "nmod:poss": "poss", "compound": "nn", "advmod": "advmod",
    "compound:prt": "prt", "mark": "mark", "ccomp": "ccomp",
    "case": "pobj (direction reversed)", "obl": "prep (direction reversed, approximate)",
}


def paper_label(relation: str) -> str:
    return PAPER_LABELS.get(relation, "")


def offsets_for(max_offset: int) -> np.ndarray:
    """The baseline's offsets: -max_offset..-1, 1..max_offset."""
    if max_offset < 1:
        raise AtlasError(f"max_offset must be at least 1 (the baseline needs an offset), got {max_offset}")
    return np.array([o for o in range(-max_offset, max_offset + 1) if o != 0], dtype=np.int64)


def relation_vocabulary(deprels: Iterable[Sequence[str]]) -> list[str]:
    """``all``, every full label, and ``x:*`` for every base label that has subtypes."""
    labels = sorted({d for sentence in deprels for d in sentence if d and d != "root"})
    bases = sorted({d.split(":", 1)[0] + ":*" for d in labels if ":" in d})
    return [ALL, *labels, *bases]


def predicted_words(maps: np.ndarray, unit_word: np.ndarray, *, transpose: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Each word's most-attended other word (or, transposed, the other word that attends to it most).

    ``maps`` (..., U, U) is a word-level map over units (METHODS 5); only units
    with ``unit_word >= 0`` (words) are candidates, and a word never predicts
    itself. With ``transpose``, word d's prediction is the argmax over d's column
    (the word i != d with the largest maps[i, d]). Returns (word index of each word
    unit, predicted word index (..., n_word_units)); a word with no other word
    predicts -1. (Dependency scoring predicts for many sentences at once: dependency_counts.py.)
    """
    unit_word = np.asarray(unit_word)
    word_units = np.flatnonzero(unit_word >= 0)
    words = unit_word[word_units]
    n = len(word_units)
    maps = np.asarray(maps, dtype=np.float32)
    if np.array_equal(word_units, np.arange(n)):  # the reader puts word units first: a slice will do
        sub = maps[..., :n, :n]
    else:
        sub = maps[..., word_units[:, None], word_units[None, :]]
    sub = np.swapaxes(sub, -1, -2).copy() if transpose else sub.copy()
    if n < 2:
        return words, np.full(sub.shape[:-1], -1, dtype=np.int64)
    sub[..., np.arange(n), np.arange(n)] = -np.inf
    return words, words[sub.argmax(axis=-1)]


def _fixed_list(values: np.ndarray) -> pa.Array:
    values = np.ascontiguousarray(values, dtype=np.int16)
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])


def score_tables(dump: AttentionDump, token_table: str | Path, annotation: str | Path, *, max_offset: int,
                 shards: list[str] | None = None, threads: int = SCORING_THREADS) -> tuple[pa.Table, dict[str, Any]]:
    """Per-sentence, per-relation correct counts of every head and offset (all shards, or ``shards`` only), with
    ``threads`` windows scored at once.

    Rows are ordered by example id, then by relation in the vocabulary's order (:func:`sort_scores`); the
    vocabulary comes from every tree of the annotation, so the shards of one dump share it.
    """
    start = time.perf_counter()
    # A shard's job reads the trees and token rows of its shard's examples only; the relation vocabulary
    # comes from every tree's labels, so that all shards of a dump share it.
    example_ids = None if shards is None else dump.shard_example_ids(shards)
    trees = read_trees(annotation, example_ids)
    words_of_tokens = token_words(token_table, example_ids)
    n_words = {eid: len(tree[0]) for eid, tree in trees.items()}
    labels = read_rows(annotation, ["deprel"])["deprel"]
    relations = relation_vocabulary([pc.unique(pc.list_flatten(labels)).drop_null().to_pylist()])
    vocabulary = {r: i for i, r in enumerate(relations)}
    offsets = offsets_for(max_offset)
    memberships = Memberships(vocabulary)
    # A causal model's dump (stored as lower triangles): also count what its maps can predict (docs/syntax.md).
    causal = dump.manifest.get("layout") == LOWER_TRIANGLE
    missing = set(words_of_tokens) - set(trees)
    if missing:
        raise AtlasError(f"{annotation}: no tree for {len(missing)} examples of {token_table} "
                         f"(e.g. {sorted(missing)[:5]}); rebuild the annotation table")
    window: list[ExampleMaps] = []
    scored: list[Future] = []
    sentences = 0

    def score_window(window: list[ExampleMaps]) -> tuple[np.ndarray, SentenceCounts]:
        """A window's sentences converted to word level and scored: (example id of each row, counts)."""
        predicted = []
        for example in window:
            eid = example.example_id
            maps = to_word_level(example, words_of_tokens[eid], n_words[eid])
            # Predicted at once, while the sentence's word-level maps are in the cache; the window keeps the
            # predictions only.
            try:
                predicted.append(predict(ScoredSentence(maps.attention, maps.unit_word, trees[eid][2],
                                                        trees[eid][3])))
            except NotANumberError:
                raise AtlasError(f"{dump.directory}: example {eid}'s maps hold NaN (not a number), so no head "
                                 "predicts a word there: the model computed NaN for this input (a damaged or diverged "
                                 "checkpoint?); check the model, then delete the dump and rerun snakemake") from None
        counts = count_predictions(predicted, vocabulary, offsets, memberships, causal=causal,
                                   num_heads=dump.num_layers * dump.num_heads)
        ids = np.fromiter((example.example_id for example in window), dtype=np.int64, count=len(window))
        return ids[counts.sentence], counts

    # The main thread reads (and the reader reads ahead on a thread of its own); windows are converted to word
    # level and scored on `threads` threads: the matrix products and argmaxes leave the GIL, so both cores work.
    threads = max(int(threads), 1)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="dependency-scoring") as scorers:
        for example in dump.iter_examples(shards):
            window.append(example)
            sentences += 1
            if window_is_full(window):
                if len(scored) >= threads + 1:  # at most one window waits: memory stays bounded
                    scored[-threads - 1].result()
                scored.append(scorers.submit(score_window, window))
                window = []
        if window:
            scored.append(scorers.submit(score_window, window))
        groups = [future.result() for future in scored]
    skipped = sum(counts.skipped for _, counts in groups)
    expected = len(dump) if shards is None else sum(int(dump.shard_entry(f)["rows"]) for f in shards)
    if sentences != expected:
        raise AtlasError(f"{dump.directory}: read {sentences} examples, the manifest says {expected}")
    table = counts_table(groups, relations, dump.num_layers * dump.num_heads, len(offsets))
    stats = {"num_layers": dump.num_layers, "num_heads": dump.num_heads, "offsets": offsets.tolist(), "causal": causal,
             "input_protocol": dump.manifest.get("input_protocol", "text"), "relations": relations,
             "sentences": sentences, "words_skipped_no_unit": skipped, "dump": str(dump.directory),
             "seconds": round(time.perf_counter() - start, 2)}
    return table, stats


def counts_table(groups: Sequence[tuple[np.ndarray, SentenceCounts]], relations: Sequence[str], num_heads: int,
                 num_offsets: int) -> pa.Table:
    """The score table of groups' counts ((example id of each row, counts) pairs): a row per sentence and
    relation it has, ordered by example id, then by relation in the vocabulary's order (as :func:`sort_scores`).

    ``num_heads``: layers x heads.
    """
    def stacked(values: list[np.ndarray], shape: tuple[int, ...], dtype: type) -> np.ndarray:
        return np.concatenate(values).astype(dtype, copy=False) if values else np.zeros(shape, dtype)

    counts = [c for _, c in groups]
    example_ids = stacked([ids for ids, _ in groups], (0,), np.int64)
    relation_index = stacked([c.relations for c in counts], (0,), np.int64)
    order = np.lexsort((relation_index, example_ids))
    names = np.asarray(relations, dtype=object)
    return pa.table({
        "example_id": example_ids[order],
        "relation": pa.array(names[relation_index[order]], pa.string()),
        "total": pa.array(stacked([c.total for c in counts], (0,), np.int32)[order]),
        "dep_correct": _fixed_list(stacked([c.dep_correct for c in counts], (0, num_heads), np.int16)[order]),
        "head_correct": _fixed_list(stacked([c.head_correct for c in counts], (0, num_heads), np.int16)[order]),
        "offset_correct": _fixed_list(stacked([c.offset_correct for c in counts], (0, num_offsets),
                                              np.int16)[order]),
        **({} if not counts or counts[0].causal is None else _causal_columns(counts, order, num_heads, num_offsets)),
    })


def _causal_columns(counts: Sequence[SentenceCounts], order: np.ndarray, num_heads: int,
                    num_offsets: int) -> dict[str, pa.Array]:
    """The columns of :class:`CausalCounts`, rows in ``order``."""
    columns = {}
    for name in CausalCounts.COLUMNS:
        values = np.concatenate([getattr(c.causal, name) for c in counts])[order]
        columns[name] = pa.array(values) if values.ndim == 1 else _fixed_list(values)
    return columns


def sort_scores(table: pa.Table, relations: Sequence[str]) -> pa.Table:
    """Score rows ordered by example id, then by relation in the vocabulary's order."""
    rank = {r: i for i, r in enumerate(relations)}
    relation_rank = np.array([rank[r] for r in table["relation"].to_pylist()], dtype=np.int64)
    return table.take(np.lexsort((relation_rank, table["example_id"].to_numpy())))


def write_scores(table: pa.Table, stats: dict[str, Any], output: str | Path) -> None:
    log.info("dependency scoring of %s: %s", stats["dump"], {k: v for k, v in stats.items() if k != "relations"})
    if stats["words_skipped_no_unit"]:
        log.warning("%d words skipped: they or their head word have no token (truncation, or characters the "
                    "tokenizer drops)", stats["words_skipped_no_unit"])
    write_table(table, output, stats)


def score_dependency_heads(dump_dir: str | Path, token_table: str | Path, annotation: str | Path,
                           output: str | Path, *, max_offset: int) -> dict[str, Any]:
    """Stream one dump in one process and write its per-sentence scores (the rules run it per shard)."""
    table, stats = score_tables(AttentionDump(dump_dir), token_table, annotation, max_offset=max_offset)
    write_scores(table, stats, output)
    return stats


def dependency_scores_shard(dump_manifest: str | Path, token_table: str | Path, annotation: str | Path,
                            output: str | Path, *, shard_group: str, max_offset: int, threads: int = SCORING_THREADS
                            ) -> None:
    """One shard group's per-sentence scores (rule dependency_scores_shard); :func:`dependency_scores_gather`
    joins them."""
    dump = AttentionDump(Path(dump_manifest).parent)
    files = shard_group_files(shard_group)
    table, stats = score_tables(dump, token_table, annotation, max_offset=max_offset, shards=files, threads=threads)
    write_partial(table, output, dump=dump, shards=files, analysis="dependency_scores", examples=stats["sentences"],
                  info=stats)


def dependency_scores_gather(dump_manifest: str | Path, partials: list[str], output: str | Path) -> dict[str, Any]:
    """The dump's score table from its shards' partials: the rows and metadata one process writes."""
    dump = AttentionDump(Path(dump_manifest).parent)
    shards = read_partials(partials, dump, "dependency_scores",
                           agree_on=("offsets", "relations", "input_protocol", "num_layers", "num_heads", "causal"))
    first = shards[0][1]
    stats = {**first, "dump": str(dump.directory)}
    for key in ("sentences", "words_skipped_no_unit", "seconds"):
        stats[key] = sum(info[key] for _, info in shards)
    stats["seconds"] = round(stats["seconds"], 2)
    # Without the partials' labels: the part carries its own metadata (stats) only.
    table = sort_scores(pa.concat_tables([table.replace_schema_metadata(None) for table, _ in shards]),
                        first["relations"])
    write_scores(table, stats, output)
    return stats
