"""Many sentences scored at once give each sentence's counts, as a plain loop over heads and words finds them."""

from __future__ import annotations

import numpy as np
import pytest

from workflow_scripts.syntax import dependency_counts
from workflow_scripts.syntax.dependency import offsets_for, relation_vocabulary
from workflow_scripts.syntax.dependency_counts import (
    ALL,
    Memberships,
    ScoredSentence,
    relation_memberships,
    score_sentence,
    score_sentences,
)

LABELS = ["nsubj", "obj", "det", "nmod", "nmod:poss", "punct", "aux:pass"]


def reference_counts(sentence: ScoredSentence, vocabulary: dict[str, int], offsets: np.ndarray) -> dict:
    """(relation, 'dep'|'head'|'off', index) -> count, one head and one word at a time ([C]'s rules)."""
    unit_word = list(sentence.unit_word)
    unit_of_word = {w: u for u, w in enumerate(unit_word) if w >= 0}
    word_units = [u for u, w in enumerate(unit_word) if w >= 0]
    layers, heads = sentence.maps.shape[:2]
    counts: dict = {}
    for j, h in enumerate(sentence.heads):
        if j not in unit_of_word or (h >= 0 and h not in unit_of_word):
            continue
        relations = [ALL] + ([r for r in (sentence.deprels[j], sentence.deprels[j].split(":")[0] + ":*")
                              if r in vocabulary] if h >= 0 else [])
        for relation in relations:
            counts[(relation, "total", 0)] = counts.get((relation, "total", 0), 0) + 1
            for k in range(layers * heads):
                grid = sentence.maps[k // heads, k % heads]
                for kind, values in (("dep", grid[unit_of_word[j], word_units]),
                                     ("head", grid[word_units, unit_of_word[j]])):
                    values = np.array(values, dtype=np.float64)
                    values[word_units.index(unit_of_word[j])] = -np.inf
                    predicted = unit_word[word_units[int(np.argmax(values))]] if len(word_units) > 1 else -1
                    key = (relation, kind, k)
                    counts[key] = counts.get(key, 0) + int(h >= 0 and predicted == h)
            for o, offset in enumerate(offsets):
                key = (relation, "off", o)
                counts[key] = counts.get(key, 0) + int(h >= 0 and h - j == offset)
    return counts


def random_sentence(rng: np.random.Generator) -> ScoredSentence:
    n = int(rng.integers(1, 12))
    heads = [int(rng.integers(-1, n)) for _ in range(n)]
    heads = [-1 if h == j else h for j, h in enumerate(heads)]
    deprels = ["root" if h < 0 else LABELS[int(rng.integers(len(LABELS)))] for h in heads]
    aligned = [w for w in range(n) if rng.random() > 0.15]  # some words lost their tokens
    loose = int(rng.integers(0, 3))
    unit_word = np.array(aligned + [-1] * loose, dtype=np.int64)
    if rng.random() < 0.3:  # units not in the reader's order: words after a loose unit
        unit_word = rng.permutation(unit_word)
    u = len(unit_word)
    maps = rng.random((2, 3, u, u)).astype(np.float32)
    maps[maps > 0.8] = 0.8  # ties: the first of equal values wins
    return ScoredSentence(maps, unit_word, heads, deprels)


@pytest.mark.parametrize("seed", [3, 11])
def test_sentences_of_every_width_count_as_the_reference_does(seed):
    rng = np.random.default_rng(seed)
    sentences = [random_sentence(rng) for _ in range(60)]
    vocabulary = {r: i for i, r in enumerate(relation_vocabulary([s.deprels for s in sentences]))}
    names = list(vocabulary)
    offsets = offsets_for(3)
    counts = score_sentences(sentences, vocabulary, offsets, Memberships(vocabulary))
    assert np.all(np.diff(counts.sentence * len(vocabulary) + counts.relations) > 0)  # by sentence, then relation
    for b, sentence in enumerate(sentences):
        expected = reference_counts(sentence, vocabulary, offsets)
        rows = np.flatnonzero(counts.sentence == b)
        assert {names[r] for r in counts.relations[rows]} == {r for r, kind, _ in expected if kind == "total"}
        for row in rows:
            relation = names[counts.relations[row]]
            assert counts.total[row] == expected[(relation, "total", 0)]
            for kind, values in (("dep", counts.dep_correct[row]), ("head", counts.head_correct[row]),
                                 ("off", counts.offset_correct[row])):
                assert values.tolist() == [expected[(relation, kind, k)] for k in range(len(values))], (b, relation)
        alone = score_sentence(sentence.maps, sentence.unit_word, sentence.heads, sentence.deprels, vocabulary,
                               offsets)
        np.testing.assert_array_equal(alone.dep_correct, counts.dep_correct[rows])
    words = sum(len(s.heads) for s in sentences)
    scored = sum(1 for s in sentences for j, h in enumerate(s.heads)
                 if j in set(s.unit_word) and (h < 0 or h in set(s.unit_word)))
    assert counts.skipped == words - scored > 0


def test_labels_met_on_several_threads_at_once_keep_their_own_rows():
    # Windows are scored on two threads that share one Memberships: every label's id must point at its rows.
    from concurrent.futures import ThreadPoolExecutor

    labels = [f"rel{i}:sub{j}" for i in range(30) for j in range(3)]
    vocabulary = {label: k for k, label in enumerate(["all", *labels, *(f"rel{i}:*" for i in range(30))])}
    memberships = Memberships(vocabulary)
    rng = np.random.default_rng(0)
    draws = [list(rng.choice(labels, 40)) for _ in range(64)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(memberships.label_ids, draws))
    rows = memberships.rows
    for deprels, ids in zip(draws, results):
        for deprel, label in zip(deprels, ids):
            assert [r for r in rows[label] if r >= 0] == relation_memberships(deprel, vocabulary)


def test_predictions_take_the_first_of_equal_values_and_never_the_word_itself():
    # Word units 0..2 are words 4, 7, 9; unit 3 is a special token, never a candidate.
    maps = np.array([[[9.0, 1.0, 1.0, 5.0],   # word 4: 7 and 9 tie, the first (7) wins; itself (9.0) never
                      [2.0, 0.0, 3.0, 5.0],   # word 7: 9
                      [4.0, 4.0, 0.0, 5.0],   # word 9: 4 and 7 tie, 4 wins
                      [8.0, 8.0, 8.0, 8.0]]], dtype=np.float32)
    predicted = dependency_counts.predict(ScoredSentence(maps[None], np.array([4, 7, 9, -1]), [1, -1, 1],
                                                         ["nsubj", "root", "obj"]))
    assert predicted.words.tolist() == [4, 7, 9]
    assert predicted.by_row.tolist() == [[7, 9, 4]]
    # Columns: who attends to word 4 most, other than itself: 9 (4.0 > 2.0); to word 7: 9 (4.0); to 9: 7 (3.0).
    assert predicted.by_column.tolist() == [[9, 9, 7]]
    assert maps[0, 0, 0] == 9.0  # the caller's maps are left as they were


def test_a_sentence_of_one_word_predicts_nothing():
    predicted = dependency_counts.predict(ScoredSentence(np.ones((2, 3, 2, 2), np.float32), np.array([0, -1]), [-1],
                                                         ["root"]))
    assert predicted.by_row.shape == (6, 1) and (predicted.by_row == -1).all() and (predicted.by_column == -1).all()


def test_no_sentences_count_to_empty_tables_of_the_right_width():
    counts = dependency_counts.count_predictions([], {ALL: 0}, offsets_for(2), num_heads=6)
    assert counts.dep_correct.shape == (0, 6) and counts.offset_correct.shape == (0, 4)


def test_column_ties_go_to_the_first_row_and_nan_maps_are_refused():
    maps = np.array([[[0.0, 0.5, 0.2],
                      [0.3, 0.0, 0.2],    # word 2's column: rows 0 and 1 tie at 0.2, row 0 (word 0) wins
                      [0.3, 0.5, 0.0]]], dtype=np.float32)  # word 0's column: rows 1 and 2 tie, word 1 wins
    predicted = dependency_counts.predict(ScoredSentence(maps[None], np.arange(3), [1, -1, 1], ["a", "root", "b"]))
    assert predicted.by_column.tolist() == [[1, 0, 0]]
    maps[0, 2, 0] = np.nan
    with pytest.raises(dependency_counts.NotANumberError):
        dependency_counts.predict(ScoredSentence(maps[None], np.arange(3), [1, -1, 1], ["a", "root", "b"]))
    maps[0, 2, 0], maps[0, 1, 1] = 0.3, np.nan  # on the diagonal: never a candidate, no harm
    dependency_counts.predict(ScoredSentence(maps[None], np.arange(3), [1, -1, 1], ["a", "root", "b"]))


def test_a_word_unit_past_its_sentence_is_refused_not_counted_in_the_next():
    first = dependency_counts.PredictedSentence(np.array([0, 2]), np.zeros((1, 2), int), np.zeros((1, 2), int),
                                                [-1, 0], ["root", "obj"])  # word 2 of a two-word sentence
    second = dependency_counts.PredictedSentence(np.array([0, 1]), np.zeros((1, 2), int), np.zeros((1, 2), int),
                                                 [-1, 0], ["root", "obj"])
    with pytest.raises(ValueError, match="word unit past its sentence"):
        dependency_counts.count_predictions([first, second], {ALL: 0, "obj": 1}, offsets_for(1))
