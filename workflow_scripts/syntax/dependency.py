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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..attention.partials import read_partials, write_partial
from ..attention.reader import AttentionDump
from ..attention.shards import shard_group_files
from ..attention.tokens import token_words
from ..core.errors import AtlasError
from ..core.io import write_table

log = logging.getLogger(__name__)

DEP_TO_HEAD = "dependent_to_head"
HEAD_TO_DEP = "head_to_dependent"
EITHER = "either"
DIRECTIONS = (DEP_TO_HEAD, HEAD_TO_DEP)
ALL = "all"

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


def relation_memberships(deprel: str, vocabulary: Mapping[str, int]) -> list[int]:
    """Indices of the relation rows an arc with label ``deprel`` counts in (``all`` is not included)."""
    rows = [vocabulary[deprel]] if deprel in vocabulary else []
    base = deprel.split(":", 1)[0] + ":*"
    if base in vocabulary:
        rows.append(vocabulary[base])
    return rows


def word_predictions(maps: np.ndarray, unit_word: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(word index of each word unit, predictions by row, predictions by column) of :func:`predicted_words`,
    both directions from one copy of the maps."""
    unit_word = np.asarray(unit_word)
    word_units = np.flatnonzero(unit_word >= 0)
    words = unit_word[word_units]
    n = len(word_units)
    maps = np.asarray(maps, dtype=np.float32)
    if np.array_equal(word_units, np.arange(n)):  # the reader puts word units first: a slice will do
        sub = maps[..., :n, :n].copy()
    else:
        sub = maps[..., word_units[:, None], word_units[None, :]]
    if n < 2:
        none = np.full(sub.shape[:-1], -1, dtype=np.int64)
        return words, none, none.copy()
    sub[..., np.arange(n), np.arange(n)] = -np.inf
    # argmax takes the first of equal values: the lowest column index, or (transposed) the lowest row index.
    # The transposed copy is reduced along its last axis: numpy's argmax over axis -2 is three times slower.
    by_column = np.ascontiguousarray(np.swapaxes(sub, -1, -2)).argmax(axis=-1)
    return words, words[sub.argmax(axis=-1)], words[by_column]


def predicted_words(maps: np.ndarray, unit_word: np.ndarray, *, transpose: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Each word's most-attended other word (or, transposed, the other word that attends to it most).

    ``maps`` (..., U, U) is a word-level map over units (METHODS 5); only units
    with ``unit_word >= 0`` (words) are candidates, and a word never predicts
    itself. With ``transpose``, word d's prediction is the argmax over d's column
    (the word i != d with the largest maps[i, d]). Returns (word index of each word
    unit, predicted word index (..., n_word_units)); a word with no other word
    predicts -1.
    """
    words, by_row, by_column = word_predictions(maps, unit_word)
    return words, by_column if transpose else by_row


@dataclass
class SentenceCounts:
    relations: np.ndarray  # (R,) relation row index
    total: np.ndarray  # (R,) scored words
    dep_correct: np.ndarray  # (R, L*H)
    head_correct: np.ndarray  # (R, L*H)
    offset_correct: np.ndarray  # (R, K)
    skipped: int  # words whose own or whose head's tokens are gone


class Memberships(dict):
    """deprel -> the relation rows an arc with that label counts in (:func:`relation_memberships`), computed
    once per label."""

    def __init__(self, vocabulary: Mapping[str, int]) -> None:
        super().__init__()
        self.vocabulary = vocabulary

    def __missing__(self, deprel: str) -> list[int]:
        self[deprel] = rows = relation_memberships(deprel, self.vocabulary)
        return rows


def score_sentence(maps: np.ndarray, unit_word: np.ndarray, heads: Sequence[int], deprels: Sequence[str],
                   vocabulary: Mapping[str, int], offsets: np.ndarray,
                   memberships: Memberships | None = None) -> SentenceCounts:
    """Per-relation correct counts of every head (and every offset) on one sentence.

    ``maps`` is (layers, heads, U, U) at word level; ``heads``/``deprels`` are
    the sentence's gold tree (0-based heads, -1 root). ``memberships``: the labels' relation rows, kept
    across the sentences of one vocabulary (made here when not given).
    """
    layers, n_heads = maps.shape[:2]
    words, by_row, by_column = word_predictions(maps, unit_word)
    by_row = by_row.reshape(layers * n_heads, -1)  # (LH, n word units)
    by_column = by_column.reshape(layers * n_heads, -1)
    heads = np.asarray(heads, dtype=np.int64)
    n_words = len(heads)
    unit_of_word = np.full(n_words, -1, dtype=np.int64)
    unit_of_word[words] = np.arange(len(words))
    dependents = np.arange(n_words)
    has_unit = unit_of_word[dependents] >= 0
    is_root = heads < 0
    usable = has_unit & (is_root | (unit_of_word[np.maximum(heads, 0)] >= 0))
    skipped = int((~usable).sum())
    dependents, gold = dependents[usable], heads[usable]
    k = len(offsets)
    if len(dependents) == 0:
        empty = np.zeros((0, layers * n_heads), dtype=np.int16)
        return SentenceCounts(np.zeros(0, np.int64), np.zeros(0, np.int32), empty, empty,
                              np.zeros((0, k), np.int16), skipped)
    memberships = Memberships(vocabulary) if memberships is None else memberships
    # A root word is always wrong, as in [C]'s code, where a prediction is always a word. (Here a
    # one-word sentence "predicts" -1, which must not count as finding the root.)
    is_arc = gold >= 0
    dependent_units = unit_of_word[dependents]
    # Correct predictions as float32 0/1 (exact for these counts), so that the counts of all heads are BLAS
    # matrix products rather than numpy's integer loops.
    dep_ok = ((by_row[:, dependent_units] == gold) & is_arc).astype(np.float32)  # (LH, P)
    head_ok = ((by_column[:, dependent_units] == gold) & is_arc).astype(np.float32)  # (LH, P)
    off_ok = (((gold[:, None] - dependents[:, None]) == offsets[None, :]) & is_arc[:, None]).astype(np.float32)
    # Membership of every word in its relation rows: a (P, R) 0/1 matrix. Every word counts in `all`; the
    # root word in nothing else.
    member = np.zeros((len(dependents), len(vocabulary)), dtype=np.float32)
    member[:, vocabulary[ALL]] = 1
    for p, j in enumerate(dependents):
        if heads[j] >= 0:
            member[p, memberships[deprels[j]]] = 1
    present = np.flatnonzero(member.any(axis=0))
    member_t = np.ascontiguousarray(member[:, present].T)  # (R, P)
    counts = member_t @ np.concatenate([dep_ok, head_ok], axis=0).T  # (R, 2 LH)
    lh = layers * n_heads
    # int16: a sentence has far fewer than 32768 arcs, and a study keeps every sentence's counts.
    return SentenceCounts(
        relations=present, total=member_t.sum(axis=1).astype(np.int32),
        dep_correct=counts[:, :lh].astype(np.int16), head_correct=counts[:, lh:].astype(np.int16),
        offset_correct=(member_t @ off_ok).astype(np.int16), skipped=skipped)


def read_trees(annotation_path: str | Path, example_ids: list[int] | None = None
               ) -> dict[int, tuple[list[str], list[str], list[int], list[str]]]:
    """example_id -> (words, upos, head, deprel) of a gold annotation table (of ``example_ids`` only)."""
    filters = None if example_ids is None else [("example_id", "in", example_ids)]
    table = pq.read_table(annotation_path, columns=["example_id", "words", "upos", "head", "deprel"], filters=filters)
    trees = {}
    for eid, words, upos, head, deprel in zip(*(table[c].to_pylist() for c in table.column_names)):
        if head is None or deprel is None:
            raise AtlasError(f"{annotation_path}: example {eid} has no dependency tree; the syntax analyses "
                             "need gold trees (ewt, gum)")
        trees[int(eid)] = (words, upos, head, deprel)
    return trees


def _fixed_list(values: np.ndarray) -> pa.Array:
    values = np.ascontiguousarray(values, dtype=np.int16)
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])


def score_tables(dump: AttentionDump, token_table: str | Path, annotation: str | Path, *, max_offset: int,
                 shards: list[str] | None = None) -> tuple[pa.Table, dict[str, Any]]:
    """Per-sentence, per-relation correct counts of every head and offset (all shards, or ``shards`` only).

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
    labels = pq.read_table(annotation, columns=["deprel"])["deprel"]
    relations = relation_vocabulary([pc.unique(pc.list_flatten(labels)).drop_null().to_pylist()])
    vocabulary = {r: i for i, r in enumerate(relations)}
    offsets = offsets_for(max_offset)
    memberships = Memberships(vocabulary)
    missing = set(words_of_tokens) - set(trees)
    if missing:
        raise AtlasError(f"{annotation}: no tree for {len(missing)} examples of {token_table} "
                         f"(e.g. {sorted(missing)[:5]}); rebuild the annotation table")
    scored: list[tuple[int, SentenceCounts]] = []
    skipped = 0
    for example in dump.iter_word_maps(words_of_tokens, n_words, shards=shards):
        _, _, heads, deprels = trees[example.example_id]
        counts = score_sentence(example.attention, example.unit_word, heads, deprels, vocabulary, offsets,
                                memberships)
        skipped += counts.skipped
        scored.append((example.example_id, counts))
    sentences = len(scored)
    expected = len(dump) if shards is None else sum(int(dump.shard_entry(f)["rows"]) for f in shards)
    if sentences != expected:
        raise AtlasError(f"{dump.directory}: read {sentences} examples, the manifest says {expected}")
    table = counts_table(scored, relations, dump.num_layers * dump.num_heads, len(offsets))
    stats = {"num_layers": dump.num_layers, "num_heads": dump.num_heads, "offsets": offsets.tolist(),
             "input_protocol": dump.manifest.get("input_protocol", "text"), "relations": relations,
             "sentences": sentences, "words_skipped_no_unit": skipped, "dump": str(dump.directory),
             "seconds": round(time.perf_counter() - start, 2)}
    return table, stats


def counts_table(scored: Sequence[tuple[int, SentenceCounts]], relations: Sequence[str], num_heads: int,
                 num_offsets: int) -> pa.Table:
    """The score table of sentences' counts ((example id, counts) pairs): a row per sentence and relation it has,
    ordered by example id, then by relation in the vocabulary's order (``relations``, as :func:`sort_scores`).

    ``num_heads``: layers x heads.
    """
    def stacked(values: list[np.ndarray], shape: tuple[int, ...], dtype: type) -> np.ndarray:
        return np.concatenate(values).astype(dtype, copy=False) if values else np.zeros(shape, dtype)

    counts = [c for _, c in scored]
    example_ids = stacked([np.full(len(c.relations), e, dtype=np.int64) for e, c in scored], (0,), np.int64)
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
    })


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
                            output: str | Path, *, shard_group: str, max_offset: int) -> None:
    """One shard group's per-sentence scores (rule dependency_scores_shard); :func:`dependency_scores_gather`
    joins them."""
    dump = AttentionDump(Path(dump_manifest).parent)
    files = shard_group_files(shard_group)
    table, stats = score_tables(dump, token_table, annotation, max_offset=max_offset, shards=files)
    write_partial(table, output, dump=dump, shards=files, analysis="dependency_scores", examples=stats["sentences"],
                  info=stats)


def dependency_scores_gather(dump_manifest: str | Path, partials: list[str], output: str | Path) -> dict[str, Any]:
    """The dump's score table from its shards' partials: the rows and metadata one process writes."""
    dump = AttentionDump(Path(dump_manifest).parent)
    shards = read_partials(partials, dump, "dependency_scores",
                           agree_on=("offsets", "relations", "input_protocol", "num_layers", "num_heads"))
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
