"""Heads as dependency parsers (METHODS 7.3) on hand-built maps whose right answers are known by construction.

The dumps, token tables and annotation tables are written by hand (tests/support/dumps.py, in
the formats of workflow_scripts.attention).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from support.dumps import write_annotation, write_dump, write_word_index_tokens
from support.maps import token_maps
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.core.io import write_table
from workflow_scripts.core.labels import DEP_TO_HEAD, EITHER, HEAD_TO_DEP
from workflow_scripts.syntax.dependency import (
    ALL,
    offsets_for,
    predicted_words,
    relation_vocabulary,
    score_dependency_heads,
)
from workflow_scripts.syntax.dependency_counts import score_sentence
from workflow_scripts.syntax.dependency_selection import SplitCounts, best_rows
from workflow_scripts.syntax.dependency_tables import summarise_dependency

# ---------------------------------------------------------------------------------------------
# Hand-built inputs


# "the cat sat on the mat": heads the->cat, cat->sat, sat root, on->mat, the->mat, mat->sat;
# "mat" is split into two tokens. [CLS] the cat sat on the ma ##t [SEP]
WORDS = ["the", "cat", "sat", "on", "the", "mat"]
UPOS = ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN"]
HEADS = [1, 2, -1, 5, 5, 2]
DEPRELS = ["det", "nsubj", "root", "case", "det", "obl:tmod"]
TOKEN_WORD = [-1, 0, 1, 2, 3, 4, 5, 5, -1]


def sentence_maps() -> np.ndarray:
    """(2 layers, 2 heads, T, T): L0H0 attends to the gold head; L0H1 to the next word;
    L1H0 to itself (0.5) and the previous word; L1H1 from each head word to its last dependent."""
    gold = token_maps(TOKEN_WORD, [[h] if h >= 0 else [] for h in HEADS])
    following = token_maps(TOKEN_WORD, [[w + 1] if w + 1 < len(WORDS) else [] for w in range(len(WORDS))])
    previous = token_maps(TOKEN_WORD, [[w, w - 1] if w > 0 else [w] for w in range(len(WORDS))])
    last_dependent = token_maps(TOKEN_WORD, [[max(d for d, h in enumerate(HEADS) if h == w)]
                                             if w in HEADS else [] for w in range(len(WORDS))])
    return np.array([[gold, following], [previous, last_dependent]])


def word_level(maps: np.ndarray):
    from workflow_scripts.attention.reader import ExampleMaps, to_word_level

    return to_word_level(ExampleMaps(0, maps.astype(np.float16)), np.array(TOKEN_WORD), len(WORDS))


# ---------------------------------------------------------------------------------------------
# Predictions


def test_prediction_is_the_most_attended_other_word_never_a_special_or_itself():
    maps = word_level(sentence_maps())
    words, predicted = predicted_words(maps.attention, maps.unit_word)
    assert words.tolist() == list(range(6))
    # [CLS] gets 0.4 of every row, more than any word: it must never be predicted.
    assert predicted[0, 0].tolist() == [1, 2, 0, 5, 5, 2]  # the root "sat" attends to [SEP]: first other word
    assert predicted[1, 0].tolist() == [1, 0, 1, 2, 3, 4]  # itself (0.5) masked: the previous word
    # The split word "mat" gets the *sum* of its two tokens' attention (0.3 + 0.3).
    assert predicted[0, 0, 3] == 5


def test_gold_head_map_scores_100_and_next_word_map_scores_the_plus_one_baseline():
    maps = word_level(sentence_maps())
    vocabulary = {r: i for i, r in enumerate(relation_vocabulary([DEPRELS]))}
    offsets = offsets_for(5)
    counts = score_sentence(maps.attention, maps.unit_word, HEADS, DEPRELS, vocabulary, offsets)
    rows = {list(vocabulary)[r]: i for i, r in enumerate(counts.relations)}
    # `all` counts every word, the root word "sat" included (as [C]'s code): 6 words, 5 arcs.
    assert counts.total[rows[ALL]] == 6 and counts.skipped == 0
    gold_head, next_word, previous_word, last_dependent = range(4)  # heads in layer-major order
    # dependent -> head: the gold-head map is right on every arc of every relation; the root word
    # is the one word of `all` that no head can get right.
    relations = [r for r in rows if r != ALL]
    np.testing.assert_array_equal(counts.dep_correct[[rows[r] for r in relations], gold_head],
                                  counts.total[[rows[r] for r in relations]])
    assert counts.dep_correct[rows[ALL], gold_head] == 5
    # The next-word head equals the +1 offset baseline relation by relation.
    plus_one = list(offsets).index(1)
    np.testing.assert_array_equal(counts.dep_correct[:, next_word], counts.offset_correct[:, plus_one])
    assert counts.dep_correct[rows[ALL], next_word] == 3  # the->cat, cat->sat, the->mat
    # head -> dependent reads the transposed map: the word that attends to d most is d + 1 in the
    # previous-word head, so that head read transposed is the +1 baseline.
    np.testing.assert_array_equal(counts.head_correct[:, previous_word], counts.offset_correct[:, plus_one])
    # The last-dependent head (each head word attends to its last dependent), transposed: the word
    # attending most to "the"(0) is "cat", to "the"(4) is "mat", to "mat" is "sat": right for both det
    # and obl:tmod; nobody attends to "cat" or "on" (nsubj, case: wrong).
    assert counts.head_correct[rows["det"], last_dependent] == 2
    assert counts.head_correct[rows["case"], last_dependent] == 0
    assert counts.head_correct[rows["nsubj"], last_dependent] == 0
    assert counts.head_correct[rows["obl:tmod"], last_dependent] == 1
    # Base relations pool their subtypes.
    assert "obl:*" in rows and counts.total[rows["obl:*"]] == 1


def test_row_argmax_and_transposed_map_give_different_answers():
    """Words a, b, c; gold heads a->b, b root, c->b; unit 3 is [SEP]. Three measures, three answers.

    Row argmax (dependent -> head): a attends most to b (right), c to a (wrong).
    Transposed map ([C]'s head -> dependent): the word attending most to a is c (wrong: a's head is b);
    to c it is b (right). [SEP]'s row puts everything on a, but a special token never attends as a word.
    The old, different measure ("is the head's own most-attended word d?") would say a right, c wrong.
    """
    word_map = np.array([
        # to:  a    b    c   [SEP]
        [0.0, 0.9, 0.0, 0.1],  # a
        [0.6, 0.0, 0.3, 0.1],  # b
        [0.9, 0.0, 0.0, 0.1],  # c
        [1.0, 0.0, 0.0, 0.0],  # [SEP]
    ])[None, None]
    unit_word = np.array([0, 1, 2, -1])
    _, by_row = predicted_words(word_map, unit_word)
    _, by_column = predicted_words(word_map, unit_word, transpose=True)
    assert by_row[0, 0].tolist() == [1, 0, 0]
    assert by_column[0, 0].tolist() == [2, 0, 1]
    deprels = ["nsubj", "root", "obj"]
    vocabulary = {r: i for i, r in enumerate(relation_vocabulary([deprels]))}
    counts = score_sentence(word_map, unit_word, [1, -1, 1], deprels, vocabulary, offsets_for(2))
    rows = {list(vocabulary)[r]: i for i, r in enumerate(counts.relations)}
    assert (counts.dep_correct[rows["nsubj"], 0], counts.dep_correct[rows["obj"], 0]) == (1, 0)
    assert (counts.head_correct[rows["nsubj"], 0], counts.head_correct[rows["obj"], 0]) == (0, 1)
    assert counts.total[rows[ALL]] == 3 and counts.dep_correct[rows[ALL], 0] == 1
    # The offset baseline predicts d + o in either direction: +1 gets a->b, -1 gets c->b.
    offsets = list(offsets_for(2))
    assert counts.offset_correct[rows["nsubj"], offsets.index(1)] == 1
    assert counts.offset_correct[rows["obj"], offsets.index(-1)] == 1


def test_a_one_word_sentence_is_counted_in_all_and_never_right():
    """Its root word has no other word to predict: -1, which must not match the root's gold -1."""
    maps = np.array([[[[0.5, 0.5], [0.5, 0.5]]]])  # the word and [SEP]
    vocabulary = {r: i for i, r in enumerate(relation_vocabulary([["root"]]))}
    counts = score_sentence(maps, np.array([0, -1]), [-1], ["root"], vocabulary, offsets_for(2))
    assert counts.total.tolist() == [1]
    assert counts.dep_correct.sum() == 0 and counts.head_correct.sum() == 0 and counts.offset_correct.sum() == 0


def test_words_without_tokens_are_skipped_and_counted():
    token_word = [-1, 0, 1, 2, 3, 4, -1]  # "mat" lost its tokens (truncation)
    maps = np.ones((1, 1, 7, 7)) / 7
    from workflow_scripts.attention.reader import ExampleMaps, to_word_level

    word_maps = to_word_level(ExampleMaps(0, maps.astype(np.float16)), np.array(token_word), 6)
    vocabulary = {r: i for i, r in enumerate(relation_vocabulary([DEPRELS]))}
    counts = score_sentence(word_maps.attention, word_maps.unit_word, HEADS, DEPRELS, vocabulary, offsets_for(5))
    assert counts.skipped == 3  # on->mat, the->mat, mat (no tokens of its own)
    assert counts.total[list(counts.relations).index(vocabulary[ALL])] == 3  # the, cat and the root sat


# ---------------------------------------------------------------------------------------------
# Streaming a dump, selection protocols, tables


def _dependency_inputs(tmp_path: Path, n_sentences: int = 6):
    maps = sentence_maps()
    dump = write_dump(tmp_path / "dump", {i: maps for i in range(n_sentences)}, n_shards=1).parent
    tokens = write_word_index_tokens(tmp_path / "tokens.parquet", {i: TOKEN_WORD for i in range(n_sentences)})
    annotation = write_annotation(tmp_path / "annotation.parquet",
                                  {i: (WORDS, UPOS, HEADS, DEPRELS) for i in range(n_sentences)})
    return dump, tokens, annotation


def test_a_dump_whose_maps_hold_nan_is_named_with_its_example(tmp_path):
    _, tokens, annotation = _dependency_inputs(tmp_path, n_sentences=3)
    maps = sentence_maps().astype(np.float16)
    maps[1, 0, 2, 4] = np.nan  # one value of example 1, between two words' tokens
    nan_dump = write_dump(tmp_path / "nan_dump", {0: sentence_maps(), 1: maps, 2: sentence_maps()}, n_shards=1).parent
    with pytest.raises(AtlasError, match=r"nan_dump: example 1's maps hold NaN .* delete the dump and rerun"):
        score_dependency_heads(nan_dump, tokens, annotation, tmp_path / "scores.parquet", max_offset=2)
    assert not (tmp_path / "scores.parquet").exists()


def test_scoring_a_dump_then_the_tables(tmp_path):
    dump, tokens, annotation = _dependency_inputs(tmp_path)
    part = tmp_path / "dev.parquet"
    stats = score_dependency_heads(dump, tokens, annotation, part, max_offset=5)
    assert stats["sentences"] == 6 and stats["words_skipped_no_unit"] == 0
    counts = SplitCounts.read(part)
    ids, total, heads, offsets = counts.candidates(ALL, DEP_TO_HEAD)
    assert sorted(ids.tolist()) == list(range(6)) and total.sum() == 36  # 6 words, the root included
    assert heads.sum(axis=0).tolist() == [30, 18, 6, 6]  # gold head, next word, previous word, last dependent
    parts = {("m", c, "ewt", s): part for c in ("pretrained", "random") for s in ("train", "dev")}
    summarise_dependency(parts, tmp_path / "heads.csv", tmp_path / "best.csv", relations=[ALL, "det", "case"],
                         select_split="train", score_split="dev", resamples=50, seed=0)
    heads_table = pd.read_csv(tmp_path / "heads.csv")
    assert list(heads_table.columns[:3]) == ["model", "checkpoint", "treebank"] and set(heads_table.treebank) == {"ewt"}
    gold = heads_table[(heads_table.relation == ALL) & (heads_table.layer == 0) & (heads_table["head"] == 0)]
    assert np.allclose(gold.accuracy, 5 / 6) and (gold.n == 36).all() and gold.selected.all()
    assert set(heads_table.select_split) == {"train", "dev"} and set(heads_table.score_split) == {"dev"}
    best = pd.read_csv(tmp_path / "best.csv")
    assert list(best.columns[:3]) == ["model", "checkpoint", "treebank"] and set(best.treebank) == {"ewt"}
    row = best[(best.relation == ALL) & (best.checkpoint == "pretrained") & (best.select_split == "train")].iloc[0]
    assert (row.layer, row["head"], row.head_label) == (0, 0, "1-1") and row.accuracy == pytest.approx(5 / 6)
    assert row.baseline_offset == 1 and row.baseline_accuracy == pytest.approx(18 / 36)
    assert row.ci_low == pytest.approx(5 / 6) and row.ci_high == pytest.approx(5 / 6)  # every sentence alike
    assert row.control_checkpoint == "random" and row.diff_vs_control == 0.0
    case = best[(best.relation == "case") & (best.direction == EITHER) & (best.select_split == "dev")].iloc[0]
    assert case.accuracy == 1.0 and case.head_direction == DEP_TO_HEAD
    assert best[best.relation == "case"].paper_label.iloc[0].startswith("pobj")


def _two_treebanks(tmp_path: Path) -> dict[str, Path]:
    """ewt (labelled) and ptb (the same trees, deprel "_"), summarised; the paths of the inputs and tables.

    The random-init control of ewt is a dump without the gold-head map (its best `all` head is the next-word
    map: 18/36 = 0.5); that of ptb is the gold dump itself (5/6).
    """
    dump, tokens, annotation = _dependency_inputs(tmp_path)
    maps = sentence_maps()
    no_gold = np.array([[maps[0, 1], maps[1, 0]], [maps[1, 1], maps[0, 1]]])  # next, previous, last dep., next
    no_gold_dump = write_dump(tmp_path / "no_gold", {i: no_gold for i in range(6)}, n_shards=1).parent
    unlabelled = write_annotation(tmp_path / "ptb.parquet", {i: (WORDS, UPOS, HEADS, ["_"] * 6) for i in range(6)})
    ewt, ewt_random, ptb = (tmp_path / f"{name}.parquet" for name in ("ewt", "ewt_random", "ptb_part"))
    for source, gold, part in ((dump, annotation, ewt), (no_gold_dump, annotation, ewt_random),
                               (dump, unlabelled, ptb)):
        score_dependency_heads(source, tokens, gold, part, max_offset=5)
    files = {("pretrained", "ewt"): ewt, ("random", "ewt"): ewt_random, ("pretrained", "ptb"): ptb,
             ("random", "ptb"): ptb}
    parts = {("m", c, t, s): path for (c, t), path in files.items() for s in ("train", "dev")}
    summarise_dependency(parts, tmp_path / "heads.csv", tmp_path / "best.csv", relations=RELATIONS,
                         select_split="train", score_split="dev", resamples=20, seed=0,
                         labelled={"ewt": True, "ptb": False})
    return {"heads": tmp_path / "heads.csv", "best": tmp_path / "best.csv", "dump": dump, "tokens": tokens,
            "ewt": annotation, "ptb": unlabelled}


RELATIONS = [ALL, "det", "case"]


def test_two_treebanks_one_unlabelled_each_with_its_own_relations_and_control(tmp_path, caplog):
    """ptb has only `all`, in both tables, and no warning; each checkpoint is paired with the control of its
    own treebank (ewt's control scores 0.5, ptb's 5/6)."""
    with caplog.at_level("INFO", logger="workflow_scripts.syntax.dependency_tables"):
        paths = _two_treebanks(tmp_path)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    assert [r.getMessage() for r in caplog.records if "unlabelled" in r.getMessage()] == [
        "treebank ptb is unlabelled (no relation labels): only 'all' is computed"]
    heads = pd.read_csv(paths["heads"])
    best = pd.read_csv(paths["best"])
    for table in (heads, best):
        assert list(table.columns[:3]) == ["model", "checkpoint", "treebank"]
        assert set(table[table.treebank == "ptb"].relation) == {ALL}  # the part has "_" rows too: left out
    assert {"det", "case", "obl:tmod", "obl:*"} <= set(heads[heads.treebank == "ewt"].relation)
    assert set(best[best.treebank == "ewt"].relation) == {ALL, "det", "case"}
    assert list(dict.fromkeys(best.treebank)) == ["ewt", "ptb"]  # the order of the parts
    # Scores on `all` do not depend on the labels: the gold-head map gets 5 of 6 words in either treebank.
    held_out = best[(best.relation == ALL) & (best.select_split == "train")].set_index(["treebank", "checkpoint"])
    assert held_out.loc[("ewt", "pretrained"), "accuracy"] == pytest.approx(5 / 6)
    assert held_out.loc[("ptb", "pretrained"), "accuracy"] == pytest.approx(5 / 6)
    assert held_out.loc[("ewt", "random"), "accuracy"] == pytest.approx(0.5)
    assert held_out.loc[("ewt", "pretrained"), "control_accuracy"] == pytest.approx(0.5)
    assert held_out.loc[("ptb", "pretrained"), "control_accuracy"] == pytest.approx(5 / 6)
    assert (heads[(heads.treebank == "ptb") & (heads.relation == ALL)].n == 36).all()


def test_figures_draw_one_treebank_and_name_it(tmp_path, monkeypatch):
    from workflow_scripts.syntax import figures

    drawn = []

    def record(figure, png, pdf=None):
        drawn.append((figure._suptitle.get_text(), [ax.get_title() for ax in figure.axes if ax.axison]))
        return save(figure, png, pdf)

    save = figures.save_figure
    monkeypatch.setattr(figures, "save_figure", record)
    paths = _two_treebanks(tmp_path)
    common = {"model": "m", "checkpoint": "pretrained", "relations": RELATIONS, "select_split": "train",
              "score_split": "dev"}
    for treebank in ("ptb", "ewt"):
        figures.dependency_heatmaps(paths["heads"], paths["best"], tmp_path / f"h_{treebank}.png", None,
                                    treebank=treebank, **common)
        figures.best_head_maps(paths["dump"], paths["tokens"], paths[treebank], paths["best"],
                               tmp_path / f"m_{treebank}.png", None, treebank=treebank, example_id=None, **common)
    (ptb_title, ptb_panels), (ptb_maps, ptb_map_panels), (ewt_title, ewt_panels), (_, ewt_map_panels) = drawn
    assert "m / pretrained / ptb" in ptb_title and "m / pretrained / ewt" in ewt_title and "ptb" in ptb_maps
    # ptb: `all` only (the relations param still names det and case); ewt: every relation of the config.
    assert [t.split(" ", 1)[0] for t in ptb_panels if "(" in t] == [ALL]
    assert [t.split(" ", 1)[0] for t in ewt_panels if "(" in t] == RELATIONS
    assert [t.split(":", 1)[0] for t in ptb_map_panels] == [ALL]
    assert [t.split(":", 1)[0] for t in ewt_map_panels] == RELATIONS
    # A table written before the treebank column: every row is read.
    old = pd.read_csv(paths["heads"]).query("treebank == 'ewt'").drop(columns="treebank")
    old.to_csv(tmp_path / "old_heads.csv", index=False)
    figures.dependency_heatmaps(tmp_path / "old_heads.csv", paths["best"], tmp_path / "old.png", None,
                                treebank="ewt", **common)
    assert [t.split(" ", 1)[0] for t in drawn[-1][1] if "(" in t] == RELATIONS


def test_part_keys_name_the_treebank(tmp_path):
    part = _counts_table(tmp_path / "dev.parquet", [1, 2], 4)
    with pytest.raises(AtlasError, match="model, checkpoint, treebank, split"):
        summarise_dependency({("m", "pretrained", "dev"): part}, tmp_path / "h.csv", tmp_path / "b.csv",
                             relations=[ALL], select_split="dev", score_split="dev", resamples=5, seed=0)


def _counts_table(path: Path, per_head: list[int], total: int, n_sentences: int = 4) -> Path:
    """A score part where every sentence has ``total`` `all` arcs and head k gets per_head[k] right."""
    k = len(per_head)
    table = pa.table({
        "example_id": pa.array(np.arange(n_sentences), pa.int64()),
        "relation": pa.array([ALL] * n_sentences),
        "total": pa.array(np.full(n_sentences, total), pa.int32()),
        **{name: pa.FixedSizeListArray.from_arrays(pa.array(np.tile(values, n_sentences).astype(np.int16)), width)
           for name, values, width in (("dep_correct", per_head, k), ("head_correct", per_head, k),
                                       ("offset_correct", [1, 0], 2))},
    })
    write_table(table, path, {"num_layers": 1, "num_heads": k, "offsets": [-1, 1], "sentences": n_sentences})
    return path


def test_the_held_out_protocol_selects_on_one_split_and_scores_on_the_other(tmp_path):
    train = SplitCounts.read(_counts_table(tmp_path / "train.parquet", [9, 5, 1], 10))
    dev = SplitCounts.read(_counts_table(tmp_path / "dev.parquet", [2, 7, 1], 10))
    rows = best_rows("m", "pretrained", {"train": train, "dev": dev}, [ALL], [("train", "dev"), ("dev", "dev")],
                     resamples=20, seed=0)
    held_out, same = rows
    assert (held_out["head"], held_out["accuracy"]) == (0, 0.2)  # best on train, scored on dev
    assert (same["head"], same["accuracy"]) == (1, 0.7)  # [C]'s protocol: best on dev itself
    assert held_out["baseline_offset"] == -1 and held_out["baseline_accuracy"] == 0.1
    assert HEAD_TO_DEP not in {r["direction"] for r in rows}  # `all` is dependent -> head only


def test_a_head_outside_the_sentence_and_a_token_past_its_words_are_named(tmp_path):
    from workflow_scripts.attention.annotate import read_trees
    from workflow_scripts.attention.reader import ExampleMaps, to_word_level

    annotation = write_annotation(tmp_path / "bad.parquet", {4: (WORDS, UPOS, [len(WORDS), *HEADS[1:]], DEPRELS)})
    with pytest.raises(AtlasError, match=r"bad.parquet: example 4 has a head outside its 6 words"):
        read_trees(annotation)
    maps = ExampleMaps(7, np.ones((1, 1, 3, 3), np.float16) / 3)
    with pytest.raises(AtlasError, match="example 7: a token belongs to word 2, but the example has 2 words"):
        to_word_level(maps, np.array([-1, 0, 2]), 2)


def test_a_relation_with_no_arc_is_said_once_not_per_checkpoint_and_protocol(tmp_path, caplog):
    """'vocative' has no arc in the tiny treebank: two checkpoints, two protocols, one warning naming the split and
    the treebank."""
    dump, tokens, annotation = _dependency_inputs(tmp_path)
    part = tmp_path / "dev.parquet"
    score_dependency_heads(dump, tokens, annotation, part, max_offset=5)
    parts = {("m", c, "ewt", s): part for c in ("pretrained", "random") for s in ("train", "dev")}
    with caplog.at_level("WARNING", logger="workflow_scripts.syntax.dependency_tables"):
        summarise_dependency(parts, tmp_path / "heads.csv", tmp_path / "best.csv", relations=[ALL, "vocative"],
                             select_split="train", score_split="dev", resamples=5, seed=0)
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        "relation 'vocative' has no arc in the dev split of ewt; it is left out of dependency_best"]
