"""[C]'s dependency accuracy on a causal model's maps (docs/syntax.md): dependent -> head over the dependents whose
head precedes them, head -> dependent over those whose head follows them, and their union; values known by
construction on hand-made lower-triangular maps."""

from __future__ import annotations

import numpy as np
import pytest

from workflow_scripts.core.io import write_table
from workflow_scripts.core.labels import CAUSAL_DIRECTIONS, CAUSAL_UNION, DEP_TO_PRECEDING_HEAD, HEAD_TO_PRECEDING_DEP
from workflow_scripts.syntax.dependency import counts_table, offsets_for, relation_vocabulary
from workflow_scripts.syntax.dependency_counts import ScoredSentence, score_sentences
from workflow_scripts.syntax.dependency_selection import SplitCounts, best_rows, head_rows

# Four words: 0 <- 1 (head after: nsubj), 1 is the root, 1 -> 2 (head before: obj), 2 -> 3 (head before: amod).
HEADS = [1, -1, 1, 2]
DEPRELS = ["nsubj", "root", "obj", "amod"]


def causal_maps() -> np.ndarray:
    """1 layer, 2 heads over 4 words: head 0 attends to the previous word (word 0 to itself), head 1 to itself."""
    previous = np.zeros((4, 4), np.float32)
    previous[0, 0] = 1
    previous[np.arange(1, 4), np.arange(3)] = 1
    return np.stack([previous, np.eye(4, dtype=np.float32)])[None]


def scored(causal: bool = True):
    sentence = ScoredSentence(causal_maps(), np.arange(4), HEADS, DEPRELS)
    relations = relation_vocabulary([DEPRELS])
    vocabulary = {r: i for i, r in enumerate(relations)}
    return score_sentences([sentence, sentence], vocabulary, offsets_for(2), causal=causal), relations, vocabulary


def test_the_restricted_counts_of_hand_made_causal_maps():
    counts, _, vocabulary = scored()
    rows = np.flatnonzero((counts.relations == vocabulary["all"]) & (counts.sentence == 0))
    c = counts.causal
    # words 2 and 3 have an earlier head, word 0 a later one; the root is in neither
    assert (c.before_total[rows], c.after_total[rows]) == ([2], [1])
    # the previous-word head finds both earlier heads by its row, and word 0's later head by its column (row 1 of
    # column 0); the self head's rows find none of the earlier heads
    assert c.dep_before[rows].tolist() == [[2, 0]]
    assert c.head_after[rows, 0].tolist() == [1]
    # offset -1 (the previous word) is the earlier heads' offset, +1 the later head's
    offsets = offsets_for(2).tolist()
    assert c.offset_before[rows, offsets.index(-1)].tolist() == [2]
    assert c.offset_after[rows, offsets.index(1)].tolist() == [1]
    assert counts.total[rows].tolist() == [4]  # [C]'s 'all' counts every word, the root too


def test_an_encoder_is_scored_without_the_restricted_counts():
    counts, _, _ = scored(causal=False)
    assert counts.causal is None


@pytest.fixture
def split(tmp_path):
    counts, relations, _ = scored()
    table = counts_table([(np.array([10, 11])[counts.sentence], counts)], relations, 2, len(offsets_for(2)))
    path = tmp_path / "scores.parquet"
    write_table(table, path, {"num_layers": 1, "num_heads": 2, "offsets": offsets_for(2).tolist(), "causal": True,
                              "input_protocol": "words", "relations": relations})
    return SplitCounts.read(path)


def test_the_score_table_gives_each_causal_direction_its_own_n_and_accuracy(split):
    assert split.directions("all") == CAUSAL_DIRECTIONS == split.directions("obj")
    frame = head_rows("m", "pretrained", {"dev": split}, [("dev", "dev")], resamples=50, seed=0)
    rows = frame[frame["relation"] == "all"].set_index(["direction", "head"])
    assert rows.loc[(DEP_TO_PRECEDING_HEAD, 0), "accuracy"] == 1.0 and rows.loc[(DEP_TO_PRECEDING_HEAD, 0), "n"] == 4
    assert rows.loc[(DEP_TO_PRECEDING_HEAD, 1), "accuracy"] == 0.0
    assert rows.loc[(HEAD_TO_PRECEDING_DEP, 0), "n"] == 2 and rows.loc[(HEAD_TO_PRECEDING_DEP, 0), "accuracy"] == 1.0
    assert rows.loc[(CAUSAL_UNION, 0), "n"] == 6 and rows.loc[(CAUSAL_UNION, 0), "accuracy"] == 1.0
    assert set(frame["direction"]) == set(CAUSAL_DIRECTIONS)


def test_the_best_causal_heads_come_with_the_offset_baseline_restricted_the_same_way(split):
    rows = best_rows("m", "pretrained", {"dev": split}, ["all", "obj"], [("dev", "dev")], resamples=50, seed=0)
    by = {(r["relation"], r["direction"]): r for r in rows}
    assert "either" not in {r["direction"] for r in rows}
    union = by[("all", CAUSAL_UNION)]
    assert (union["head_label"], union["accuracy"], union["n"]) == ("1-1", 1.0, 6)
    # the best offset over the union: -1 is right for 4 of 6 arcs, +1 for 2
    assert (union["baseline_offset"], union["baseline_accuracy"]) == (-1, pytest.approx(4 / 6))
    after = by[("all", HEAD_TO_PRECEDING_DEP)]
    assert (after["baseline_offset"], after["baseline_accuracy"], after["n"]) == (1, 1.0, 2)


def test_a_tiny_gpt2_dump_is_scored_in_the_causal_directions(tmp_path, tiny_gpt2):
    import pandas as pd
    import pyarrow.parquet as pq

    from support.dumps import write_annotation
    from support.tiny_dumps import tiny_dump
    from workflow_scripts.syntax.dependency import score_dependency_heads
    from workflow_scripts.syntax.dependency_tables import summarise_dependency

    _, tokens, dump, _, _ = tiny_dump(tmp_path, tiny_gpt2, pairs=False, n_shards=1)
    # Gold trees on the whitespace words: the middle word is the root, the words before it hang on it (a later
    # head) and the words after it too (an earlier head).
    words = pq.read_table(tmp_path / "annotation.parquet", columns=["example_id", "words"]).to_pylist()
    trees = {}
    for row in words:
        n, root = len(row["words"]), len(row["words"]) // 2
        trees[row["example_id"]] = (row["words"], ["X"] * n, [-1 if i == root else root for i in range(n)],
                                    ["root" if i == root else "dep" for i in range(n)])
    gold = write_annotation(tmp_path / "gold.parquet", trees)
    part = tmp_path / "dev.parquet"
    stats = score_dependency_heads(dump, tokens, gold, part, max_offset=3)
    assert stats["causal"] is True
    counts = SplitCounts.read(part)
    _, before, _, _ = counts.candidates("all", DEP_TO_PRECEDING_HEAD)
    _, after, _, _ = counts.candidates("all", HEAD_TO_PRECEDING_DEP)
    expected_after = sum(len(t[0]) // 2 for t in trees.values())
    expected_before = sum(len(t[0]) - len(t[0]) // 2 - 1 for t in trees.values())
    assert (after.sum(), before.sum()) == (expected_after, expected_before - stats["words_skipped_no_unit"])
    parts = {("gpt2", "pretrained", "ewt", s): part for s in ("train", "dev")}
    summarise_dependency(parts, tmp_path / "heads.csv", tmp_path / "best.csv", relations=["all", "dep"],
                         select_split="train", score_split="dev", resamples=20, seed=0)
    assert set(pd.read_csv(tmp_path / "heads.csv")["direction"]) == set(CAUSAL_DIRECTIONS)
    best = pd.read_csv(tmp_path / "best.csv")
    assert set(best["direction"]) == set(CAUSAL_DIRECTIONS) and best["accuracy"].between(0, 1).all()
