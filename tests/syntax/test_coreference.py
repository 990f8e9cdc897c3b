"""Coreference heads on GUM windows (METHODS 7.4): windows, antecedents, baselines and tables by construction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from support.dumps import write_annotation, write_dump, write_word_index_tokens
from support.maps import token_maps
from workflow_scripts.data.windows import (
    WINDOW_MENTION_SCHEMA,
    build_windows,
    window_groups,
)
from workflow_scripts.syntax.coreference import (
    mention_type,
    score_coreference_heads,
    summarise_coreference,
    window_mentions,
)

# One window: "John met Mary . He liked her . John smiled"
WORDS = ["John", "met", "Mary", ".", "He", "liked", "her", ".", "John", "smiled"]
UPOS = ["PROPN", "VERB", "PROPN", "PUNCT", "PRON", "VERB", "PRON", "PUNCT", "PROPN", "VERB"]
# (head word, entity): John(E1) Mary(E2) He(E1) her(E2) John(E1)
MENTIONS = [(0, "1"), (2, "2"), (4, "1"), (6, "2"), (8, "1")]
TOKEN_WORD = [-1, *range(len(WORDS)), -1]


def _mention_frame(window: int = 0, doc: str = "d0") -> pd.DataFrame:
    return pd.DataFrame({
        "mention_id": np.arange(len(MENTIONS)) + 10 * window, "example_id": window, "doc_id": doc,
        "entity": [e for _, e in MENTIONS], "sentence_id": 0,
        "start": [h for h, _ in MENTIONS], "end": [h + 1 for h, _ in MENTIONS], "head": [h for h, _ in MENTIONS],
        "head_form": [WORDS[h] for h, _ in MENTIONS], "head_upos": [UPOS[h] for h, _ in MENTIONS],
        "etype": "person", "infstat": "giv"})


def test_antecedents_and_baselines_by_construction():
    found = window_mentions(_mention_frame(), len(WORDS))
    # John(0) and Mary(2) have no earlier mention of their entity; the other three do.
    assert found.heads.tolist() == [4, 6, 8]
    assert [np.flatnonzero(row).tolist() for row in found.antecedents] == [[0], [2], [0, 4]]
    # Nearest preceding mention: Mary for "He", He for "her", her for the second John: all wrong.
    assert found.nearest.tolist() == [2, 4, 6]
    # Same head word: only the second John finds "John"; the others fall back to the nearest mention.
    assert found.head_match.tolist() == [2, 4, 0]
    assert found.types == ["pronoun", "pronoun", "proper"]
    assert mention_type("NOUN") == mention_type("NUM") == "nominal"


def _maps() -> np.ndarray:
    """(1 layer, 2 heads): head 0 attends from each mention to its nearest antecedent; head 1 to the previous word."""
    antecedent = {4: [0], 6: [2], 8: [4]}
    first = token_maps(TOKEN_WORD, [antecedent.get(w, []) for w in range(len(WORDS))])
    previous = token_maps(TOKEN_WORD, [[w - 1] if w else [] for w in range(len(WORDS))])
    return np.array([[first, previous]])


def test_scores_and_tables(tmp_path):
    windows = {0: "d0", 1: "d1"}  # two documents, so that both halves hold a window
    dump = write_dump(tmp_path / "dump", {w: _maps() for w in windows}, n_shards=1).parent
    tokens = write_word_index_tokens(tmp_path / "tokens.parquet", {w: TOKEN_WORD for w in windows})
    annotation = write_annotation(tmp_path / "annotation.parquet",
                                  {w: (WORDS, UPOS, [-1] * len(WORDS), ["root"] * len(WORDS)) for w in windows})
    mentions = pd.concat([_mention_frame(w, d) for w, d in windows.items()], ignore_index=True)
    mentions_path = tmp_path / "mentions.parquet"
    pq.write_table(pa.Table.from_pandas(mentions, schema=WINDOW_MENTION_SCHEMA, preserve_index=False), mentions_path)
    part = tmp_path / "coref.parquet"
    stats = score_coreference_heads(dump, tokens, annotation, mentions_path, part)
    assert stats["mentions_scored"] == 6 and stats["mentions_skipped_no_unit"] == 0
    scored = pq.read_table(part).to_pandas()
    correct = np.stack(scored["correct"].to_numpy())
    assert correct[:, 0].all() and not correct[:, 1].any()
    assert scored["nearest_mention"].sum() == 0 and scored["head_word_match"].sum() == 2

    summarise_coreference({("m", "pretrained"): part, ("m", "random"): part}, tmp_path / "heads.csv",
                          tmp_path / "best.csv", resamples=50, seed=0)
    heads = pd.read_csv(tmp_path / "heads.csv")
    top = heads[(heads.checkpoint == "pretrained") & (heads.mention_type == "all")].set_index("head")
    assert top.loc[0, "accuracy"] == 1.0 and top.loc[1, "accuracy"] == 0.0 and top.loc[0, "n"] == 6
    assert top.loc[0, "accuracy_half_a"] == top.loc[0, "accuracy_half_b"] == 1.0
    best = pd.read_csv(tmp_path / "best.csv")
    same = best[(best.checkpoint == "pretrained") & (best.select_documents == "all")].set_index(
        ["method", "mention_type"])
    assert same.loc[("head", "all"), "head_label"] == "1-1" and same.loc[("head", "all"), "accuracy"] == 1.0
    assert same.loc[("nearest_mention", "all"), "accuracy"] == 0.0
    assert same.loc[("head_word_match", "all"), "accuracy"] == 2 / 6
    assert same.loc[("head_word_match", "proper"), "accuracy"] == 1.0
    assert same.loc[("head", "pronoun"), "n"] == 4
    held_out = best[(best.select_documents == "a") & (best.score_documents == "b") & (best.method == "head")]
    assert (held_out["n"] <= 3).all() and set(held_out.mention_type) == {"all", "pronoun", "proper"}


def test_a_mention_whose_head_lost_its_tokens_is_skipped(tmp_path):
    token_word = [-1, *range(len(WORDS) - 2), -1]  # the second "John" and "smiled" were cut off
    maps = np.full((1, 1, len(token_word), len(token_word)), 1 / len(token_word))
    dump = write_dump(tmp_path / "dump", {0: maps}, n_shards=1).parent
    tokens = write_word_index_tokens(tmp_path / "tokens.parquet", {0: token_word})
    annotation = write_annotation(tmp_path / "annotation.parquet",
                                  {0: (WORDS, UPOS, [-1] * len(WORDS), ["root"] * len(WORDS))})
    mentions_path = tmp_path / "mentions.parquet"
    pq.write_table(pa.Table.from_pandas(_mention_frame(), schema=WINDOW_MENTION_SCHEMA, preserve_index=False),
                   mentions_path)
    stats = score_coreference_heads(dump, tokens, annotation, mentions_path, tmp_path / "coref.parquet")
    assert (stats["mentions_with_antecedent"], stats["mentions_scored"], stats["mentions_skipped_no_unit"]) == (3, 2, 1)


def test_windows_keep_whole_sentences_and_renumber_words():
    assert window_groups([3, 4, 2, 6, 1], 7) == [[0, 1], [2], [3, 4]]
    assert window_groups([9, 2], 5) == [[0], [1]]  # a long sentence is a window of its own
    sentences = pd.DataFrame({
        "example_id": [0, 1, 2, 3], "sent_id": ["a-1", "a-2", "a-3", "b-1"], "doc_id": ["a", "a", "a", "b"],
        "text": ["John met Mary .", "He smiled .", "She left .", "Hi ."],
        "words": [["John", "met", "Mary", "."], ["He", "smiled", "."], ["She", "left", "."], ["Hi", "."]],
        "lemmas": [["x"] * 4, ["x"] * 3, ["x"] * 3, ["x"] * 2],
        "upos": [["PROPN", "VERB", "PROPN", "PUNCT"], ["PRON", "VERB", "PUNCT"], ["PRON", "VERB", "PUNCT"],
                 ["INTJ", "PUNCT"]],
        "xpos": [["X"] * 4, ["X"] * 3, ["X"] * 3, ["X"] * 2],
        "head": [[1, -1, 1, 1], [1, -1, 1], [1, -1, 1], [-1, 0]],
        "deprel": [["nsubj", "root", "obj", "punct"], ["nsubj", "root", "punct"], ["nsubj", "root", "punct"],
                   ["root", "punct"]],
        "char_start": [[0, 5, 9, 14], [0, 3, 10], [0, 4, 9], [0, 3]],
        "char_end": [[4, 8, 13, 15], [2, 9, 11], [3, 8, 10], [2, 4]],
        "mwt": [[-1] * 4, [-1] * 3, [-1] * 3, [-1] * 2],
    })
    mentions = pd.DataFrame({
        "mention_id": [0, 1, 2, 3], "doc_id": ["a"] * 4, "entity": ["1", "2", "1", "2"],
        "example_id": [0, 0, 1, 2], "sent_id": ["a-1", "a-1", "a-2", "a-3"], "start": [0, 2, 0, 0],
        "end": [1, 3, 1, 1], "head": [0, 2, 0, 0], "head_form": ["John", "Mary", "He", "She"],
        "head_upos": ["PROPN", "PROPN", "PRON", "PRON"], "etype": "person", "infstat": "new"})
    table, mention_table, stats = build_windows(sentences, mentions, max_words=7)
    windows = table.to_pylist()
    assert [w["sentence_ids"] for w in windows] == [[0, 1], [2], [3]]  # documents never share a window
    first = windows[0]
    assert first["text"] == "John met Mary . He smiled ."
    assert first["head"] == [1, -1, 1, 1, 5, -1, 5]  # the second sentence's heads are shifted by 4 words
    assert [first["text"][s:e] for s, e in zip(first["char_start"], first["char_end"])] == first["words"]
    assert first["sentence_word_offset"] == [0, 4]
    moved = mention_table.to_pandas().set_index("mention_id")
    assert moved.loc[2, "example_id"] == 0 and moved.loc[2, "head"] == 4  # "He" is word 4 of window 0
    assert moved.loc[3, "example_id"] == 1 and moved.loc[3, "head"] == 0
    assert stats["windows"] == 3 and stats["oversized_windows"] == 0
