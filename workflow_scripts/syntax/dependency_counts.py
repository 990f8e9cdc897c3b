"""Every head's (and offset's) correct predictions of gold dependency arcs, for many sentences at once.

The rules are :mod:`.dependency`'s ([C]'s code): at word level, each word's prediction is the other word it
attends to most (dependent -> head, the argmax of its row) or that attends to it most (head -> dependent, the
argmax of its column); ties go to the first word; a word whose tokens, or whose head's tokens, were cut off
is skipped; ``all`` counts every word, the root word too, which no head gets right.

How the work is split: :func:`predict` takes one sentence's predictions with two numpy argmaxes (rows, and
columns through numpy's transposed copy) right after its conversion to word level, while its maps (72 heads x 15
x 15 words for a small model on EWT) are still in the processor's cache; :func:`count_predictions` then counts
a whole window of sentences at once: every (sentence, relation) row with one ``reduceat`` over the words, since one
sentence at a time that part spent its time in numpy's per-call overhead. (Padding a window's maps into one
array per width, as this module did before, cost more than it saved: the padded arrays outgrew the cache.)
:func:`score_sentences` is both for maps in hand; tests/syntax/test_dependency_counts.py checks them against a
loop over heads and words.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass
from itertools import chain

import numpy as np

ALL = "all"
# Sentences counted by one call (their predictions held at once).
WINDOW_SENTENCES = 256


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
    """Counts of one sentence (``sentence`` all 0) or of a window: one row per (sentence, relation) present,
    ordered by sentence, then relation index."""

    relations: np.ndarray  # (R,) relation row index
    total: np.ndarray  # (R,) int32 scored words
    dep_correct: np.ndarray  # (R, L*H) int16: a sentence has far fewer than 32768 arcs
    head_correct: np.ndarray  # (R, L*H) int16
    offset_correct: np.ndarray  # (R, K) int16
    skipped: int  # words whose own or whose head's tokens are gone
    sentence: np.ndarray | None = None  # (R,) the row's sentence: its position in the window
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
    maps = sentence.maps.reshape(int(np.prod(sentence.maps.shape[:-2])), *sentence.maps.shape[-2:])  # even 0 x 0
    if np.array_equal(word_units, np.arange(n)):  # the reader puts word units first: a slice will do
        return unit_word[:n], maps[:, :n, :n]
    return unit_word[word_units], maps[:, word_units[:, None], word_units[None, :]]


@dataclass
class PredictedSentence:
    """One sentence's predictions (:func:`predict`) and its gold tree: all that counting needs."""

    words: np.ndarray  # (n,) the word index of each word unit
    by_row: np.ndarray  # (L*H, n) each word unit's predicted word by its row (-1: no other word)
    by_column: np.ndarray  # (L*H, n) and by its column
    heads: Sequence[int]
    deprels: Sequence[str]


def predict(sentence: ScoredSentence) -> PredictedSentence:
    """Every head's predicted word for each word of one sentence, by row and by column.

    Both take the first of equal values: the lowest column index, or the lowest row index. Called right after a
    sentence's conversion to word level, while its maps are still in the processor's cache.
    """
    words, maps = _word_maps(sentence)
    n = len(words)
    if n < 2:  # one word: no other word to predict
        alone = np.full((maps.shape[0], n), -1, dtype=np.int64)
        return PredictedSentence(words, alone, alone, sentence.heads, sentence.deprels)
    candidates = np.array(maps, dtype=np.float32)  # a copy: the diagonal is overwritten
    diagonal = np.arange(n)
    candidates[:, diagonal, diagonal] = -np.inf  # a word never predicts itself
    by_row = candidates.argmax(axis=-1)
    # argmax picks a row's first NaN: any NaN off the diagonal shows among the picked values (a cheap check).
    if np.isnan(np.take_along_axis(candidates, by_row[..., None], axis=-1)).any():
        raise NotANumberError("the word-level maps hold NaN (not a number)")
    return PredictedSentence(words, words[by_row], words[candidates.argmax(axis=-2)], sentence.heads,
                             sentence.deprels)


class NotANumberError(ValueError):
    """A sentence's maps hold NaN: no head's prediction is defined (argmax would pick the NaN)."""


def score_sentences(sentences: Sequence[ScoredSentence], vocabulary: Mapping[str, int], offsets: np.ndarray,
                    memberships: Memberships | None = None, *, causal: bool = False) -> SentenceCounts:
    """Per-(sentence, relation) correct counts of every head and offset of many sentences.

    ``memberships``: the labels' relation rows, kept across the calls of one vocabulary (made here when not
    given). Rows are ordered by sentence (position in ``sentences``), then by relation index. ``causal``: also
    count as a causal model's maps allow (:class:`CausalCounts`).
    """
    num_heads = int(np.prod(sentences[0].maps.shape[:-2])) if sentences else 0
    return count_predictions([predict(s) for s in sentences], vocabulary, offsets, memberships, causal=causal,
                             num_heads=num_heads)


def count_predictions(sentences: Sequence[PredictedSentence], vocabulary: Mapping[str, int], offsets: np.ndarray,
                      memberships: Memberships | None = None, *, causal: bool = False,
                      num_heads: int | None = None) -> SentenceCounts:
    """:func:`score_sentences`'s counts from the sentences' predictions (``num_heads``: L*H, needed only when
    ``sentences`` is empty)."""
    memberships = Memberships(vocabulary) if memberships is None else memberships
    num_heads = sentences[0].by_row.shape[0] if sentences else num_heads or 0
    # The dependents scored: every word with a unit whose head (or root) has one too. The window's words side by
    # side (a sentence's words, then the next's), so that a few numpy calls serve every sentence.
    n_words = np.array([len(sentence.heads) for sentence in sentences], dtype=np.int64)
    n_units = np.array([len(sentence.words) for sentence in sentences], dtype=np.int64)
    word_start = np.concatenate([[0], np.cumsum(n_words)])
    unit_start = np.concatenate([[0], np.cumsum(n_units)])
    sentence_of_word = np.repeat(np.arange(len(sentences)), n_words)
    heads = np.fromiter(chain.from_iterable(sentence.heads for sentence in sentences), np.int64, int(word_start[-1]))
    if np.any(heads >= n_words[sentence_of_word]):
        raise ValueError("a gold head past its sentence's last word")
    words = np.concatenate([sentence.words for sentence in sentences] or [np.zeros(0)]).astype(np.int64)
    if np.any(words >= np.repeat(n_words, n_units)):  # it would count in the next sentence's place
        raise ValueError("a word unit past its sentence's last word")
    unit_of_word = np.full(len(heads), -1, dtype=np.int64)  # each word's unit, numbered across the window
    unit_of_word[words + np.repeat(word_start[:-1], n_units)] = np.arange(unit_start[-1])
    head_of_word = np.where(heads >= 0, heads + word_start[sentence_of_word], 0)
    kept = np.flatnonzero((unit_of_word >= 0) & ((heads < 0) | (unit_of_word[head_of_word] >= 0)))
    skipped = len(heads) - len(kept)
    which = sentence_of_word[kept]
    column = unit_of_word[kept]  # the dependent's column in the window's predictions, side by side
    gold = heads[kept]
    dependent = kept - word_start[which]
    labels = memberships.label_ids(list(chain.from_iterable(sentence.deprels for sentence in sentences)))[kept]
    empty = SentenceCounts(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros((0, num_heads), np.int16),
                           np.zeros((0, num_heads), np.int16), np.zeros((0, len(offsets)), np.int16), skipped,
                           np.zeros(0, np.int64))
    if causal:
        empty.causal = CausalCounts(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros((0, num_heads), np.int16),
                                    np.zeros((0, num_heads), np.int16), np.zeros((0, len(offsets)), np.int16),
                                    np.zeros((0, len(offsets)), np.int16))
    if not len(kept):
        return empty
    is_arc = gold >= 0
    # Correct predictions per dependent (P, 2 L*H + K): by row, by column, then each offset (d predicts d + o).
    correct = np.zeros((len(which), 2 * num_heads + len(offsets)), dtype=np.int32)
    correct[:, 2 * num_heads:] = ((gold[:, None] - dependent[:, None]) == offsets[None, :]) & is_arc[:, None]
    correct[:, :num_heads] = np.concatenate([s.by_row for s in sentences], axis=1)[:, column].T == gold[:, None]
    correct[:, num_heads:2 * num_heads] = (np.concatenate([s.by_column for s in sentences], axis=1)[:, column].T
                                           == gold[:, None])
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
    """Per-relation correct counts of every head (and every offset) on one sentence: a window of one.

    ``maps`` is (layers, heads, U, U) at word level; ``heads``/``deprels`` are
    the sentence's gold tree (0-based heads, -1 root).
    """
    return score_sentences([ScoredSentence(np.asarray(maps, dtype=np.float32), unit_word, heads, deprels)],
                           vocabulary, offsets, memberships, causal=causal)


def window_is_full(sentences: Sized) -> bool:
    """Whether the sentences gathered for one window (one :func:`count_predictions` call) have reached
    WINDOW_SENTENCES."""
    return len(sentences) >= WINDOW_SENTENCES
