"""CoNLL-U parsing: sentences and metadata, zero-based heads, character spans and multi-word tokens,
and the treebank table."""

from __future__ import annotations

from support.conllu import line_of, mwt, tok, write_conllu
from workflow_scripts.data.tables import TREEBANK_SCHEMA
from workflow_scripts.data.ud import parse_conllu, treebank_table

# --- sentences, heads, spans ------------------------------------------------------------


def test_sentences_and_metadata(gum_file):
    sentences = parse_conllu(gum_file)
    assert [s.sent_id for s in sentences] == ["doc1-1", "doc1-2", "doc1-3", "doc2-1"]
    assert [s.doc_id for s in sentences] == ["doc1", "doc1", "doc1", "doc2"]
    assert [s.example_id for s in sentences] == [0, 1, 2, 3]
    assert sentences[1].text == "They can't stop the digital project."
    assert sentences[0].line == 1
    assert sentences[1].line == line_of(gum_file, "# sent_id = doc1-2")
    assert [w.form for w in sentences[0].words] == ["Digital", "humanities", "wo", "n't", "wait", "."]
    assert [w.lemma for w in sentences[0].words] == ["digital", "humanity", "will", "not", "wait", "."]
    assert [w.upos for w in sentences[0].words] == ["ADJ", "NOUN", "AUX", "PART", "VERB", "PUNCT"]


def test_heads_are_zero_based_with_root_minus_one(gum_file):
    sentences = parse_conllu(gum_file)
    assert [w.head for w in sentences[0].words] == [1, 4, 4, 4, -1, 4]
    assert [w.head for w in sentences[1].words] == [3, 3, 3, -1, 6, 6, 3, 3]
    assert [w.deprel for w in sentences[1].words] == ["nsubj", "aux", "advmod", "root", "det", "amod",
                                                      "obj", "punct"]
    assert [w.head for w in sentences[3].words] == [1, -1, 1]


def test_char_spans_and_multiword_tokens(gum_file):
    first, second, third, _ = parse_conllu(gum_file)
    # "Digital humanities won't wait." : won't = wo + n't splits the surface span.
    assert [(w.start, w.end) for w in first.words] == [(0, 7), (8, 18), (19, 21), (21, 24), (25, 29), (29, 30)]
    assert [w.mwt for w in first.words] == [-1, -1, 0, 0, -1, -1]
    # "They can't stop the digital project." : can't = ca + n't.
    assert [(w.start, w.end) for w in second.words] == [(0, 4), (5, 7), (7, 10), (11, 15), (16, 19),
                                                        (20, 27), (28, 35), (35, 36)]
    assert [w.mwt for w in second.words] == [-1, 0, 0, -1, -1, -1, -1, -1]
    for sentence in (first, second, third):
        for word in sentence.words:
            assert sentence.text[word.start:word.end] == word.form


def test_multiword_token_not_spelled_out_shares_span(tmp_path):
    path = write_conllu(tmp_path / "gotta.conllu", [
        "# sent_id = s1",
        "# text = I gotta go, can't I?",
        tok(1, "I", head=3, deprel="nsubj"),
        mwt("2-3", "gotta"),
        tok(2, "got", head=0, deprel="root"),
        tok(3, "to", head=4, deprel="mark"),
        tok(4, "go", head=2, deprel="xcomp", misc="SpaceAfter=No"),
        tok(5, ",", head=7, deprel="punct"),
        mwt("6-7", "can't"),
        tok(6, "ca", head=2, deprel="parataxis"),
        tok(7, "n't", head=6, deprel="advmod"),
        tok(8, "I", head=6, deprel="nsubj", misc="SpaceAfter=No"),
        tok(9, "?", head=2, deprel="punct"),
    ])
    (sentence,) = parse_conllu(path)
    assert [(w.start, w.end) for w in sentence.words] == [(0, 1), (2, 7), (2, 7), (8, 10), (10, 11),
                                                          (12, 14), (14, 17), (18, 19), (19, 20)]
    # The second multi-word token of the sentence has index 1.
    assert [w.mwt for w in sentence.words] == [-1, 0, 0, -1, -1, 1, 1, -1, -1]
    assert [w.head for w in sentence.words] == [2, -1, 3, 1, 6, 1, 5, 5, 1]


def test_text_rebuilt_from_forms_when_comment_missing(tmp_path):
    path = write_conllu(tmp_path / "notext.conllu", [
        mwt("1-2", "Don't", misc="_"),
        tok(1, "Do", head=3, deprel="aux"),
        tok(2, "n't", head=3, deprel="advmod"),
        tok(3, "go", head=0, deprel="root", misc="SpaceAfter=No"),
        tok(4, "!", head=3, deprel="punct"),
    ])
    (sentence,) = parse_conllu(path)
    assert sentence.text == "Don't go!"
    assert sentence.sent_id == "notext-1"
    assert sentence.doc_id is None
    assert [(w.start, w.end) for w in sentence.words] == [(0, 2), (2, 5), (6, 8), (8, 9)]


# An enhanced-UD sentence: the empty node 2.1 (an elided verb) between words 2 and 3.
WITH_EMPTY_NODE = [
    tok(1, "He", head=2, deprel="nsubj"),
    tok(2, "went", head=0, deprel="root"),
    "\t".join(["2.1", "went", "go", "VERB", "VBD", "_", "_", "_", "0:root", "_"]),
    tok(3, "home", head=2, deprel="advmod", misc="SpaceAfter=No"),
    tok(4, ".", head=2, deprel="punct"),
]


def test_text_rebuilt_ignores_empty_nodes(tmp_path):
    path = write_conllu(tmp_path / "enhanced.conllu", WITH_EMPTY_NODE)
    (sentence,) = parse_conllu(path)
    assert sentence.text == "He went home."
    assert [w.form for w in sentence.words] == ["He", "went", "home", "."]


def test_empty_node_with_text_comment_is_skipped(tmp_path):
    path = write_conllu(tmp_path / "enhanced.conllu", ["# text = He went home.", *WITH_EMPTY_NODE])
    (sentence,) = parse_conllu(path)
    assert [w.form for w in sentence.words] == ["He", "went", "home", "."]
    assert [(w.start, w.end) for w in sentence.words] == [(0, 2), (3, 7), (8, 12), (12, 13)]
    assert [w.head for w in sentence.words] == [1, -1, 1, 1]


def test_treebank_table(gum_file):
    table = treebank_table(parse_conllu(gum_file))
    assert table.schema.equals(TREEBANK_SCHEMA)
    assert table.num_rows == 4
    row = table.slice(0, 1).to_pylist()[0]
    assert row["words"] == ["Digital", "humanities", "wo", "n't", "wait", "."]
    assert row["head"] == [1, 4, 4, 4, -1, 4]
    assert row["char_start"] == [0, 8, 19, 21, 25, 29]
    assert row["char_end"] == [7, 18, 21, 24, 29, 30]
    assert row["mwt"] == [-1, -1, 0, 0, -1, -1]
    assert row["xpos"] == ["JJ", "NNS", "MD", "RB", "VB", "."]
    assert table["doc_id"].to_pylist() == ["doc1", "doc1", "doc1", "doc2"]
