"""Every head's (and offset's) correct predictions of gold dependency arcs, for many sentences at once.

The rules are :mod:`.dependency`'s ([C]'s code): at word level, each word's prediction is the other word it
attends to most (dependent -> head, the argmax of its row) or that attends to it most (head -> dependent, the
argmax of its column); ties go to the first word; a word whose tokens, or whose head's tokens, were cut off
is skipped; ``all`` counts every word, the root word too, which no head gets right.

Why many sentences at once: a sentence's arrays are small (72 heads x 15 words x 15 words for a small model
on EWT), so scoring one sentence at a time spent its time in numpy's per-call overhead, not in the counts.
:func:`score_sentences` groups sentences of similar width, pads each group's word-level maps into one array
(padding: -inf, never a prediction), takes each row's argmax in one call and each column's as a running maximum
over the rows, then counts every (sentence, relation) row with one ``reduceat`` over the words.
:func:`score_sentence` is a group of one; tests/syntax/test_dependency_counts.py checks groups of every size
against a loop over heads and words.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass

import numpy as np

from ..core.batches import length_batches

ALL = "all"
# Sentences scored by one call (their word-level maps held at once), then grouped by width: a group's padded
# maps stay under MAX_GROUP_CELLS per head (sentences x (words+1)^2; about 20 MB of float32 for 72 heads).
WINDOW_SENTENCES = 256
MAX_GROUP_CELLS = 65_536
MAX_GROUP_SENTENCES = 128


def relation_memberships(deprel: str, vocabulary: Mapping[str, int]) -> list[int]:
    """Indices of the relation rows an arc with label ``deprel`` counts in (``all`` is not included)."""
    rows = [vocabulary[deprel]] if deprel in vocabulary else []
    base = deprel.split(":", 1)[0] + ":*"
    if base in vocabulary:
        rows.append(vocabulary[base])
    return rows


class Memberships:
    """The relation rows each label counts in (:func:`relation_memberships`), computed once per label: labels get
    ids as they are met, and ``rows[id]`` holds the label's rows (-1 padded)."""

    def __init__(self, vocabulary: Mapping[str, int]) -> None:
        self.vocabulary = vocabulary
        self.ids: dict[str, int] = {}
        self._rows: list[list[int]] = []
        self._lock = threading.Lock()  # windows are scored on several threads

    def label_ids(self, deprels: Sequence[str]) -> np.ndarray:
        ids = self.ids
        if any(deprel not in ids for deprel in deprels):
            with self._lock:
                for deprel in deprels:
                    if deprel not in ids:
                        self._rows.append(relation_memberships(deprel, self.vocabulary))
                        ids[deprel] = len(self._rows) - 1
        return np.fromiter((ids[d] for d in deprels), dtype=np.int64, count=len(deprels))

    @property
    def rows(self) -> np.ndarray:
        with self._lock:
            known = list(self._rows)
        table = np.full((max(len(known), 1), 2), -1, dtype=np.int64)
        for label, rows in enumerate(known):
            table[label, :len(rows)] = rows
        return table


@dataclass
class SentenceCounts:
    """Counts of one sentence (``sentence`` all 0) or of a group: one row per (sentence, relation) present,
    ordered by sentence, then relation index."""

    relations: np.ndarray  # (R,) relation row index
    total: np.ndarray  # (R,) int32 scored words
    dep_correct: np.ndarray  # (R, L*H) int16: a sentence has far fewer than 32768 arcs
    head_correct: np.ndarray  # (R, L*H) int16
    offset_correct: np.ndarray  # (R, K) int16
    skipped: int  # words whose own or whose head's tokens are gone
    sentence: np.ndarray | None = None  # (R,) the row's sentence: its position in the group
    causal: CausalCounts | None = None  # the counts restricted as a causal model's maps allow (causal=True)


@dataclass
class CausalCounts:
    """Per row, the dependents whose head precedes them (``before``) and follows them (``after``), and the correct
    predictions each direction can make of them: dependent -> head of the first, head -> dependent of the second,
    and the offsets of each. The root word is in neither."""

    before_total: np.ndarray  # (R,) int32
    after_total: np.ndarray  # (R,) int32
    dep_before: np.ndarray  # (R, L*H) int16
    head_after: np.ndarray  # (R, L*H) int16
    offset_before: np.ndarray  # (R, K) int16
    offset_after: np.ndarray  # (R, K) int16

    COLUMNS = ("before_total", "after_total", "dep_before", "head_after", "offset_before", "offset_after")


@dataclass
class ScoredSentence:
    """What scoring needs of one sentence: its word-level maps (layers, heads, U, U) over units, the word of
    each unit (-1: none), and its gold tree (0-based heads, -1 root; UD labels)."""

    maps: np.ndarray
    unit_word: np.ndarray
    heads: Sequence[int]
    deprels: Sequence[str]


def _word_maps(sentence: ScoredSentence) -> tuple[np.ndarray, np.ndarray]:
    """(word index of each word unit, the (L*H, n, n) maps between word units)."""
    unit_word = np.asarray(sentence.unit_word)
    word_units = np.flatnonzero(unit_word >= 0)
    n = len(word_units)
    maps = sentence.maps.reshape(-1, *sentence.maps.shape[-2:])
    if np.array_equal(word_units, np.arange(n)):  # the reader puts word units first: a slice will do
        return unit_word[:n], maps[:, :n, :n]
    return unit_word[word_units], maps[:, word_units[:, None], word_units[None, :]]


def _column_argmax(rows_first: np.ndarray) -> np.ndarray:
    """For maps laid out rows first, (rows, ..., columns), the first row of the largest value of each column
    (``argmax`` over axis 0; the maps hold no NaN), as a running maximum over the rows: each step compares one row of
    every map, a contiguous block, at once. numpy's argmax over short columns (or over the rows of a transposed
    copy) spends its time per column, not per value."""
    best = rows_first[0].copy()
    index = np.zeros(best.shape, dtype=np.intp)
    better = np.empty(best.shape, dtype=bool)
    for row in range(1, len(rows_first)):
        values = rows_first[row]
        np.greater(values, best, out=better)  # strictly: a tie keeps the earlier row
        np.copyto(index, row, where=better)
        np.maximum(best, values, out=best)
    return index


def _predictions(groups: Sequence[tuple[np.ndarray, np.ndarray]], num_heads: int) -> tuple[np.ndarray, np.ndarray]:
    """(B, L*H, N) predicted word of every word unit, by row and by column (-1: no other word)."""
    width = max([len(words) for words, _ in groups] + [1])
    # Rows first, (row, sentence, head, column): a row of every map is one contiguous block for the column argmax,
    # and each row is contiguous for the row argmax.
    padded = np.full((width, len(groups), num_heads, width), -np.inf, dtype=np.float32)
    words = np.full((len(groups), width), -1, dtype=np.int64)
    for b, (sentence_words, maps) in enumerate(groups):
        n = len(sentence_words)
        padded[:n, b, :, :n] = maps.swapaxes(0, 1)
        words[b, :n] = sentence_words
    diagonal = np.arange(width)
    padded[diagonal, :, :, diagonal] = -np.inf  # a word never predicts itself
    # Both take the first of equal values: the lowest column index, or the lowest row index.
    by_row = np.take_along_axis(words[:, None, :], np.moveaxis(padded.argmax(axis=-1), 0, -1), axis=-1)
    by_column = np.take_along_axis(words[:, None, :], _column_argmax(padded), axis=-1)
    alone = np.array([len(sentence_words) < 2 for sentence_words, _ in groups])
    by_row[alone], by_column[alone] = -1, -1  # one word: no other word to predict
    return by_row, by_column


def score_sentences(sentences: Sequence[ScoredSentence], vocabulary: Mapping[str, int], offsets: np.ndarray,
                    memberships: Memberships | None = None, *, causal: bool = False) -> SentenceCounts:
    """Per-(sentence, relation) correct counts of every head and offset of many sentences.

    ``memberships``: the labels' relation rows, kept across the calls of one vocabulary (made here when not
    given). Rows are ordered by sentence (position in ``sentences``), then by relation index. ``causal``: also
    count as a causal model's maps allow (:class:`CausalCounts`).
    """
    memberships = Memberships(vocabulary) if memberships is None else memberships
    num_heads = int(np.prod(sentences[0].maps.shape[:-2])) if sentences else 0
    words_and_maps = [_word_maps(s) for s in sentences]
    # The dependents scored: every word with a unit whose head (or root) has one too.
    which, unit, gold, dependent, labels = [], [], [], [], []
    skipped = 0
    for b, (sentence, (words, _)) in enumerate(zip(sentences, words_and_maps)):
        heads = np.asarray(sentence.heads, dtype=np.int64)
        unit_of_word = np.full(len(heads), -1, dtype=np.int64)
        unit_of_word[words] = np.arange(len(words))
        usable = (unit_of_word >= 0) & ((heads < 0) | (unit_of_word[np.maximum(heads, 0)] >= 0))
        kept = np.flatnonzero(usable)
        skipped += len(heads) - len(kept)
        which.append(np.full(len(kept), b))
        unit.append(unit_of_word[kept])
        gold.append(heads[kept])
        dependent.append(kept)
        labels.append(memberships.label_ids(sentence.deprels)[kept])
    empty = SentenceCounts(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros((0, num_heads), np.int16),
                           np.zeros((0, num_heads), np.int16), np.zeros((0, len(offsets)), np.int16), skipped,
                           np.zeros(0, np.int64))
    if causal:
        empty.causal = CausalCounts(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros((0, num_heads), np.int16),
                                    np.zeros((0, num_heads), np.int16), np.zeros((0, len(offsets)), np.int16),
                                    np.zeros((0, len(offsets)), np.int16))
    if not sentences or not sum(len(k) for k in dependent):
        return empty
    which, unit, gold, dependent, labels = (np.concatenate(x) for x in (which, unit, gold, dependent, labels))
    is_arc = gold >= 0
    # Correct predictions per dependent (P, 2 L*H + K): by row, by column, then each offset (d predicts d + o).
    correct = np.zeros((len(which), 2 * num_heads + len(offsets)), dtype=np.int32)
    correct[:, 2 * num_heads:] = ((gold[:, None] - dependent[:, None]) == offsets[None, :]) & is_arc[:, None]
    widths = np.array([len(words) for words, _ in words_and_maps])
    starts = np.concatenate([[0], np.cumsum(np.bincount(which, minlength=len(sentences)))])
    # Groups of similar width: little of a group's padded arrays is padding.
    for group in length_batches(widths, MAX_GROUP_SENTENCES, MAX_GROUP_CELLS):
        by_row, by_column = _predictions([words_and_maps[b] for b in group], num_heads)
        members = np.concatenate([np.arange(starts[b], starts[b + 1]) for b in group])
        local = np.repeat(np.arange(len(group)), starts[group + 1] - starts[group])
        correct[members, :num_heads] = by_row[local, :, unit[members]] == gold[members, None]
        correct[members, num_heads:2 * num_heads] = by_column[local, :, unit[members]] == gold[members, None]
    correct[~is_arc, :2 * num_heads] = 0  # the root word: always wrong, as in [C]'s code
    if causal:  # (P, 2 L*H + 2 K + 2): dep->head of the dependents whose head precedes, head->dep of the others
        before, after = is_arc & (gold < dependent), is_arc & (gold > dependent)
        k = len(offsets)
        correct = np.concatenate([
            correct, correct[:, :num_heads] * before[:, None], correct[:, num_heads:2 * num_heads] * after[:, None],
            correct[:, 2 * num_heads:] * before[:, None], correct[:, 2 * num_heads:] * after[:, None],
            before[:, None], after[:, None]], axis=1, dtype=np.int32)
    # Each dependent counts in its sentence's `all` row and, when it has a head, in its label's rows.
    n_relations = len(vocabulary)
    label_rows = np.where(is_arc[:, None], memberships.rows[labels], -1)
    rows = np.concatenate([np.full((len(which), 1), vocabulary[ALL]), label_rows], axis=1)
    pair_dependent = np.repeat(np.arange(len(which)), rows.shape[1])
    pair_key = (which[:, None] * n_relations + rows).reshape(-1)
    valid = rows.reshape(-1) >= 0
    pair_dependent, pair_key = pair_dependent[valid], pair_key[valid]
    order = np.argsort(pair_key, kind="stable")
    keys, first = np.unique(pair_key[order], return_index=True)
    counts = np.add.reduceat(correct[pair_dependent[order]], first, axis=0)
    width = 2 * num_heads + len(offsets)
    restricted = None
    if causal:
        extra = np.split(counts[:, width:], np.cumsum([num_heads, num_heads, k, k, 1]), axis=1)
        dep_before, head_after, offset_before, offset_after, before_total, after_total = extra
        restricted = CausalCounts(before_total[:, 0].astype(np.int32), after_total[:, 0].astype(np.int32),
                                  dep_before.astype(np.int16), head_after.astype(np.int16),
                                  offset_before.astype(np.int16), offset_after.astype(np.int16))
    return SentenceCounts(
        relations=keys % n_relations, total=np.diff(np.append(first, len(order))).astype(np.int32),
        dep_correct=counts[:, :num_heads].astype(np.int16),
        head_correct=counts[:, num_heads:2 * num_heads].astype(np.int16),
        offset_correct=counts[:, 2 * num_heads:width].astype(np.int16), skipped=skipped,
        sentence=keys // n_relations, causal=restricted)


def score_sentence(maps: np.ndarray, unit_word: np.ndarray, heads: Sequence[int], deprels: Sequence[str],
                   vocabulary: Mapping[str, int], offsets: np.ndarray,
                   memberships: Memberships | None = None, *, causal: bool = False) -> SentenceCounts:
    """Per-relation correct counts of every head (and every offset) on one sentence: a group of one.

    ``maps`` is (layers, heads, U, U) at word level; ``heads``/``deprels`` are
    the sentence's gold tree (0-based heads, -1 root).
    """
    return score_sentences([ScoredSentence(np.asarray(maps, dtype=np.float32), unit_word, heads, deprels)],
                           vocabulary, offsets, memberships, causal=causal)


def window_is_full(sentences: Sized) -> bool:
    """Whether the sentences gathered for one :func:`score_sentences` call have reached WINDOW_SENTENCES."""
    return len(sentences) >= WINDOW_SENTENCES
