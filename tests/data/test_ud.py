"""CoNLL-U parsing (heads, character spans, multi-word tokens), GUM coreference mentions,
and the treebank/mention builders."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from workflow_scripts.core.errors import InputFormatError, SourceUnavailableError
from workflow_scripts.core.io import read_metadata
from workflow_scripts.data.build import build_mentions, build_treebank
from workflow_scripts.data.tables import MENTION_SCHEMA, TREEBANK_SCHEMA
from workflow_scripts.data.ud import mention_table, parse_conllu, treebank_table


def tok(id_, form, lemma="_", upos="_", xpos="_", head="_", deprel="_", misc="_") -> str:
    """One 10-column CoNLL-U token line."""
    return "\t".join(str(c) for c in (id_, form, lemma, upos, xpos, "_", head, deprel, "_", misc))


def mwt(id_, form, misc="_") -> str:
    return "\t".join([id_, form, "_", "_", "_", "_", "_", "_", "_", misc])


def write_conllu(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def line_of(path: Path, prefix: str, occurrence: int = 1) -> int:
    """1-based number of the ``occurrence``-th line of ``path`` that starts with ``prefix``."""
    seen = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.startswith(prefix):
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"no line {prefix!r}")


# A small GUM-like file: two documents, multi-word tokens, nested and multiple mentions.
GUM_LINES = [
    "# newdoc id = doc1",
    "# global.Entity = GRP-etype-infstat-salience-centering-minspan-link-identity",
    "# sent_id = doc1-1",
    "# text = Digital humanities won't wait.",
    tok(1, "Digital", "digital", "ADJ", "JJ", 2, "amod", "Entity=(1-abstract-new-sssss-cf1-1,2-coref"),
    tok(2, "humanities", "humanity", "NOUN", "NNS", 5, "nsubj", "Entity=1)"),
    mwt("3-4", "won't"),
    tok(3, "wo", "will", "AUX", "MD", 5, "aux"),
    tok(4, "n't", "not", "PART", "RB", 5, "advmod"),
    tok(5, "wait", "wait", "VERB", "VB", 0, "root", "SpaceAfter=No"),
    tok(6, ".", ".", "PUNCT", ".", 5, "punct"),
    "",
    "# sent_id = doc1-2",
    "# text = They can't stop the digital project.",
    tok(1, "They", "they", "PRON", "PRP", 4, "nsubj", "Entity=(1-abstract-giv:act-sssss-cf1-1-coref)"),
    mwt("2-3", "can't"),
    tok(2, "ca", "can", "AUX", "MD", 4, "aux"),
    tok(3, "n't", "not", "PART", "RB", 4, "advmod"),
    tok(4, "stop", "stop", "VERB", "VB", 0, "root"),
    tok(5, "the", "the", "DET", "DT", 7, "det",
        "Entity=(2-object-new-ssnns-cf2-1,2,3-coref(3-abstract-new-sssss-cf3-1,2-coref-Digital_humanities"),
    tok(6, "digital", "digital", "ADJ", "JJ", 7, "amod", "Entity=3)"),
    tok(7, "project", "project", "NOUN", "NN", 4, "obj", "Entity=(4-object-new-nnnnn-cf4-1-sgl)2)|SpaceAfter=No"),
    tok(8, ".", ".", "PUNCT", ".", 4, "punct"),
    "",
    "# sent_id = doc1-3",
    "# text = Big red dogs bark.",
    tok(1, "Big", "big", "ADJ", "JJ", 3, "amod", "Entity=(5-animal-new-sssss-cf5-1,2,3-coref"),
    tok(2, "red", "red", "ADJ", "JJ", 3, "amod", "Entity=(6-animal-new-sssss-cf6-1,2-sgl"),
    tok(3, "dogs", "dog", "NOUN", "NNS", 4, "nsubj", "Entity=6)5)"),
    tok(4, "bark", "bark", "VERB", "VBP", 0, "root", "SpaceAfter=No"),
    tok(5, ".", ".", "PUNCT", ".", 4, "punct"),
    "",
    "# newdoc id = doc2",
    "# sent_id = doc2-1",
    "# text = It works.",
    tok(1, "It", "it", "PRON", "PRP", 2, "nsubj", "Entity=(1-abstract-giv:inact-sssss-cf1-1-coref)"),
    tok(2, "works", "work", "VERB", "VBZ", 0, "root", "SpaceAfter=No"),
    tok(3, ".", ".", "PUNCT", ".", 2, "punct"),
]


@pytest.fixture
def gum_file(tmp_path) -> Path:
    return write_conllu(tmp_path / "en_gum-ud-dev.conllu", GUM_LINES)


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


def test_text_rebuilt_ignores_empty_nodes(tmp_path):
    path = write_conllu(tmp_path / "enhanced.conllu", [
        tok(1, "He", head=2, deprel="nsubj"),
        tok(2, "went", head=0, deprel="root"),
        "\t".join(["2.1", "went", "go", "VERB", "VBD", "_", "_", "_", "0:root", "_"]),
        tok(3, "home", head=2, deprel="advmod", misc="SpaceAfter=No"),
        tok(4, ".", head=2, deprel="punct"),
    ])
    (sentence,) = parse_conllu(path)
    assert sentence.text == "He went home."
    assert [w.form for w in sentence.words] == ["He", "went", "home", "."]


def test_empty_node_with_text_comment_is_skipped(tmp_path):
    path = write_conllu(tmp_path / "enhanced.conllu", [
        "# text = He went home.",
        tok(1, "He", head=2, deprel="nsubj"),
        tok(2, "went", head=0, deprel="root"),
        "\t".join(["2.1", "went", "go", "VERB", "VBD", "_", "_", "_", "0:root", "_"]),
        tok(3, "home", head=2, deprel="advmod", misc="SpaceAfter=No"),
        tok(4, ".", head=2, deprel="punct"),
    ])
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


# --- bad CoNLL-U ------------------------------------------------------------------------------


def test_head_out_of_range_names_word_line(tmp_path):
    path = write_conllu(tmp_path / "badhead.conllu", [
        "# sent_id = s1",
        "# text = Fine here.",
        tok(1, "Fine", head=0, deprel="root"),
        tok(2, "here", head=1, deprel="advmod", misc="SpaceAfter=No"),
        tok(3, ".", head=1, deprel="punct"),
        "",
        "# sent_id = s2",
        "# text = Bad head.",
        tok(1, "Bad", head=2, deprel="amod"),
        tok(2, "head", head=7, deprel="root", misc="SpaceAfter=No"),
        tok(3, ".", head=2, deprel="punct"),
    ])
    with pytest.raises(InputFormatError) as info:
        parse_conllu(path)
    assert info.value.line == 10
    assert str(info.value).startswith(f"{path}, line 10: HEAD 7 of word 2 is not a word of this sentence (1..3)")


@pytest.mark.parametrize("head", ["_", "-1"])
def test_missing_or_negative_head(tmp_path, head):
    path = write_conllu(tmp_path / "nohead.conllu", [
        "# text = No head",
        tok(1, "No", head=2, deprel="det"),
        tok(2, "head", head=head, deprel="root"),
    ])
    with pytest.raises(InputFormatError) as info:
        parse_conllu(path)
    assert str(info.value).startswith(f"{path}, line 3: HEAD ")


def test_non_numeric_head_names_file_and_line(tmp_path):
    path = write_conllu(tmp_path / "xhead.conllu", [
        "# text = Ok",
        tok(1, "Ok", head=0, deprel="root"),
        "",
        "# sent_id = s2",
        "# text = X head",
        tok(1, "X", head=2, deprel="det"),
        tok(2, "head", head="x", deprel="root"),
    ])
    with pytest.raises(InputFormatError) as info:
        parse_conllu(path)
    message = str(info.value)
    assert str(path) in message
    # The sentence block starts on line 4; its bad word is on line 7.
    assert info.value.line in (4, 7)
    assert f"line {info.value.line}:" in message


def test_form_not_matching_text(tmp_path):
    path = write_conllu(tmp_path / "mismatch.conllu", [
        "# sent_id = s1",
        "# text = Hello world.",
        tok(1, "Hello", head=0, deprel="root"),
        tok(2, "World", head=1, deprel="vocative", misc="SpaceAfter=No"),
        tok(3, ".", head=1, deprel="punct"),
    ])
    with pytest.raises(InputFormatError) as info:
        parse_conllu(path)
    message = str(info.value)
    assert message.startswith(f"{path}, line 4: token 'World' does not follow at character 6")
    assert "'# text'" in message


def test_multiword_form_not_matching_text(tmp_path):
    path = write_conllu(tmp_path / "mwtmismatch.conllu", [
        "# text = I won't.",
        tok(1, "I", head=2, deprel="nsubj"),
        mwt("2-3", "wont"),
        tok(2, "wo", head=0, deprel="root"),
        tok(3, "n't", head=2, deprel="advmod", misc="SpaceAfter=No"),
        tok(4, ".", head=2, deprel="punct"),
    ])
    with pytest.raises(InputFormatError, match=r"mwtmismatch\.conllu, line 3: token 'wont'"):
        parse_conllu(path)


def test_sentence_without_words(tmp_path):
    path = write_conllu(tmp_path / "emptysent.conllu", [
        "# text = Ok",
        tok(1, "Ok", head=0, deprel="root"),
        "",
        "# sent_id = s2",
        "# text = ",
    ])
    with pytest.raises(InputFormatError) as info:
        parse_conllu(path)
    assert str(info.value).startswith(f"{path}, line 4: sentence has no word lines")


def test_file_without_sentences(tmp_path):
    path = tmp_path / "blank.conllu"
    path.write_text("\n\n  \n", encoding="utf-8")
    with pytest.raises(InputFormatError) as info:
        parse_conllu(path)
    assert str(info.value).startswith(f"{path}: no sentences found")


def test_token_line_with_too_few_columns(tmp_path):
    path = write_conllu(tmp_path / "short.conllu", [
        "# text = Too short",
        tok(1, "Too", head=2, deprel="advmod"),
        "2\tshort\tshort\tADJ\tJJ",
    ])
    with pytest.raises(InputFormatError) as info:
        parse_conllu(path)
    assert str(path) in str(info.value)
    assert "line " in str(info.value)


# --- not a tree: cycles, missing and extra roots (each names file, line, sent_id and fix) ------

OK_SENTENCE = ["# sent_id = ok1", "# text = Fine here.", tok(1, "Fine", head=0, deprel="root"),
               tok(2, "here", head=1, deprel="advmod", misc="SpaceAfter=No"), tok(3, ".", head=1, deprel="punct"),
               ""]


def bad_tree_error(path: Path) -> InputFormatError:
    with pytest.raises(InputFormatError) as info:
        parse_conllu(path)
    return info.value


def test_head_cycle_names_a_word_of_the_cycle(tmp_path):
    # Words 2 -> 3 -> 4 -> 2 form a cycle; word 1 is the root and word 5 hangs off the cycle.
    path = write_conllu(tmp_path / "cycle.conllu", [*OK_SENTENCE,
        "# sent_id = loop-7",                          # line 7
        "# text = a b c d e",                          # line 8
        tok(1, "a", head=0, deprel="root"),            # line 9
        tok(2, "b", head=3, deprel="dep"),             # line 10
        tok(3, "c", head=4, deprel="dep"),             # line 11
        tok(4, "d", head=2, deprel="dep"),             # line 12
        tok(5, "e", head=4, deprel="dep"),             # line 13
    ])
    error = bad_tree_error(path)
    assert error.path == path and error.line == 10  # word 2, the cycle's first word in the file
    message = str(error)
    assert message.startswith(f"{path}, line 10: sentence 'loop-7': the HEADs of words 2 -> 3 -> 4 -> 2 "
                              "form a cycle")
    assert "fix the HEAD of one of these words" in message


def test_word_that_is_its_own_head_is_a_cycle(tmp_path):
    path = write_conllu(tmp_path / "self.conllu", [
        "# sent_id = me",
        "# text = x y",
        tok(1, "x", head=0, deprel="root"),
        tok(2, "y", head=2, deprel="dep"),             # line 4
    ])
    error = bad_tree_error(path)
    assert error.line == 4
    assert "sentence 'me': the HEADs of words 2 -> 2 form a cycle" in str(error)


def test_sentence_without_root_names_its_first_line(tmp_path):
    # No word has HEAD 0 (1 -> 2 -> 1): the error is on the sentence's first line.
    path = write_conllu(tmp_path / "noroot.conllu", [*OK_SENTENCE,
        "# sent_id = rootless",                        # line 7
        "# text = p q",
        tok(1, "p", head=2, deprel="dep"),
        tok(2, "q", head=1, deprel="dep"),
    ])
    error = bad_tree_error(path)
    assert error.line == 7
    message = str(error)
    assert message.startswith(f"{path}, line 7: sentence 'rootless' has no root (no word has HEAD 0)")
    assert "give exactly one word HEAD 0" in message


@pytest.mark.parametrize("n_roots", [2, 3])
def test_two_roots_names_the_second_root(tmp_path, n_roots):
    heads = [0, 1, 0, 0 if n_roots == 3 else 3]
    path = write_conllu(tmp_path / "tworoots.conllu", [*OK_SENTENCE,
        "# sent_id = twice",                           # line 7
        "# text = r s t u",
        *(tok(i + 1, form, head=h, deprel="dep") for i, (form, h) in enumerate(zip("rstu", heads))),
    ])                                                 # words 1..4 on lines 9..12
    error = bad_tree_error(path)
    assert error.line == 11  # word 3, the second word with HEAD 0
    ids = "1, 3" if n_roots == 2 else "1, 3, 4"
    message = str(error)
    assert message.startswith(f"{path}, line 11: sentence 'twice' has {n_roots} roots: words {ids} all have HEAD 0")
    assert "only one word per sentence may have HEAD 0" in message


def test_bad_tree_without_sent_id_uses_generated_id(tmp_path):
    path = write_conllu(tmp_path / "anon.conllu", [*OK_SENTENCE,
        "# text = p q",                                # line 7
        tok(1, "p", head=0, deprel="root"),
        tok(2, "q", head=0, deprel="root"),            # line 9
    ])
    error = bad_tree_error(path)
    assert str(error).startswith(f"{path}, line 9: sentence 'anon-2' has 2 roots")


def test_build_mentions_rejects_a_cycle_instead_of_guessing_a_head(tmp_path):
    path = write_conllu(tmp_path / "en_gum-ud-dev.conllu", [
        "# newdoc id = d",
        "# sent_id = d-1",
        "# text = big red dogs bark",
        tok(1, "big", head=2, deprel="amod", misc="Entity=(1-animal-new-s-cf1-1-coref"),
        tok(2, "red", head=3, deprel="amod"),
        tok(3, "dogs", head=1, deprel="nsubj", misc="Entity=1)"),   # 1 -> 2 -> 3 -> 1
        tok(4, "bark", head=0, deprel="root"),
    ])
    out = tmp_path / "out" / "m.parquet"
    with pytest.raises(InputFormatError, match=r"line 4: sentence 'd-1': the HEADs of words 1 -> 2 -> 3 -> 1"):
        build_mentions("gum", "dev", [path], out, mirror=None, offline=True, download_dir=tmp_path,
                       ud_tag="r2.16")
    assert not out.exists()


# --- HEAD values and IDs that are not what CoNLL-U allows, on the token's own line ------------


@pytest.mark.parametrize("head", ["x", "2.5", "02", "+1", " 1"])
def test_non_integer_head_names_token_line_value_and_fix(tmp_path, head):
    path = write_conllu(tmp_path / "xhead.conllu", [*OK_SENTENCE,
        "# sent_id = s2",                              # line 7
        "# text = X head",
        tok(1, "X", head=2, deprel="det"),
        tok(2, "head", head=head, deprel="root"),      # line 10
    ])
    error = bad_tree_error(path)
    assert error.line == 10
    message = str(error)
    assert message.startswith(f"{path}, line 10: HEAD {head!r} of token 2 is not an integer")
    assert "HEAD is the ID of the word's head in this sentence (a whole number), or 0 for the root" in message


def test_unparsable_id_names_token_line(tmp_path):
    path = write_conllu(tmp_path / "badid.conllu", [*OK_SENTENCE,
        "# text = A b",                                # line 7
        tok(1, "A", head=0, deprel="root"),
        tok("2x", "b", head=1, deprel="dep"),          # line 9
    ])
    error = bad_tree_error(path)
    assert error.line == 9
    assert str(error).startswith(f"{path}, line 9: unreadable CoNLL-U sentence")
    assert "'2x'" in str(error)


@pytest.mark.parametrize("ids, bad_line, found, expected", [
    ([1, 2, 2, 3], 5, 2, 3),  # a repeated ID: the repeat's line (5), not the first 2's (4)
    ([1, 2, 4], 5, 4, 3),     # a gap
    ([1, 3, 2], 4, 3, 2),     # out of order
])
def test_word_ids_must_run_from_one_in_order(tmp_path, ids, bad_line, found, expected):
    forms = "abcd"[:len(ids)]
    path = write_conllu(tmp_path / "ids.conllu", [
        "# sent_id = ids",
        "# text = " + " ".join(forms),
        *(tok(i, f, head=0 if n == 0 else 1, deprel="dep") for n, (i, f) in enumerate(zip(ids, forms))),
    ])                                                 # word lines start at line 3
    error = bad_tree_error(path)
    assert error.line == bad_line
    assert str(error).startswith(f"{path}, line {bad_line}: word ID {found} where {expected} was expected "
                                 "in sentence 'ids'")


# --- coreference mentions -------------------------------------------------------------------


def test_mentions(gum_file):
    table = mention_table(parse_conllu(gum_file), gum_file)
    assert table.schema.equals(MENTION_SCHEMA)
    rows = table.to_pylist()
    assert [(r["doc_id"], r["entity"], r["sent_id"], r["start"], r["end"]) for r in rows] == [
        ("doc1", "1", "doc1-1", 0, 2),   # Digital humanities
        ("doc1", "1", "doc1-2", 0, 1),   # They (single-word mention)
        ("doc1", "2", "doc1-2", 4, 7),   # the digital project (two opened on one word)
        ("doc1", "3", "doc1-2", 4, 6),   # the digital
        ("doc1", "4", "doc1-2", 6, 7),   # project ("(4-...-sgl)2)": single, then a close)
        ("doc1", "5", "doc1-3", 0, 3),   # Big red dogs ("6)5)" closes two)
        ("doc1", "6", "doc1-3", 1, 3),   # red dogs
        ("doc2", "1", "doc2-1", 0, 1),   # It: entity 1 again, but another document
    ]
    assert [r["mention_id"] for r in rows] == list(range(8))
    assert [r["example_id"] for r in rows] == [0, 1, 1, 1, 1, 2, 2, 3]
    assert [r["text"] for r in rows] == ["Digital humanities", "They", "the digital project", "the digital",
                                         "project", "Big red dogs", "red dogs", "It"]
    # Head: the span word whose head is outside the span (the first of the shallowest on a tie).
    assert [r["head"] for r in rows] == [1, 0, 6, 4, 6, 2, 2, 0]
    assert [r["head_form"] for r in rows] == ["humanities", "They", "project", "the", "project", "dogs",
                                              "dogs", "It"]
    assert [r["head_upos"] for r in rows][:3] == ["NOUN", "PRON", "NOUN"]
    assert [r["etype"] for r in rows] == ["abstract", "abstract", "object", "abstract", "object", "animal",
                                          "animal", "abstract"]
    assert [r["infstat"] for r in rows][:2] == ["new", "giv:act"]
    assert [r["link"] for r in rows] == ["coref", "coref", "coref", "coref", "sgl", "coref", "sgl", "coref"]
    assert [r["identity"] for r in rows] == [None, None, None, "Digital_humanities", None, None, None, None]
    # Chains are per (document, entity), in document order.
    assert [r["chain_position"] for r in rows] == [0, 1, 0, 0, 0, 0, 0, 0]
    assert [r["chain_size"] for r in rows] == [2, 2, 1, 1, 1, 1, 1, 1]
    assert [r["antecedent"] for r in rows] == [-1, 0, -1, -1, -1, -1, -1, -1]
    # The line of each mention is the line of the word that opens it.
    assert rows[0]["line"] == line_of(gum_file, "1\tDigital")
    assert rows[2]["line"] == rows[3]["line"] == line_of(gum_file, "5\tthe")
    assert rows[4]["line"] == line_of(gum_file, "7\tproject")
    assert rows[6]["line"] == line_of(gum_file, "2\tred")


def test_nested_mentions_of_the_same_entity_close_innermost_first(tmp_path):
    path = write_conllu(tmp_path / "nested.conllu", [
        "# newdoc id = d",
        "# text = friends of friends",
        tok(1, "friends", head=0, deprel="root", misc="Entity=(1-person-new-s-cf1-1-coref"),
        tok(2, "of", head=3, deprel="case"),
        tok(3, "friends", head=1, deprel="nmod", misc="Entity=(1-person-giv-s-cf1-1-coref)1)"),
    ])
    rows = mention_table(parse_conllu(path), path).to_pylist()
    assert [(r["start"], r["end"], r["infstat"]) for r in rows] == [(0, 3, "new"), (2, 3, "giv")]
    assert [r["head"] for r in rows] == [0, 2]
    assert [r["antecedent"] for r in rows] == [-1, 0]
    assert [r["chain_size"] for r in rows] == [2, 2]


def test_mention_never_closed(tmp_path):
    path = write_conllu(tmp_path / "unclosed.conllu", [
        "# sent_id = s1",
        "# text = A big dog barks",
        tok(1, "A", head=3, deprel="det", misc="Entity=(1-animal-new-sssss-cf1-3-coref"),
        tok(2, "big", head=3, deprel="amod", misc="Entity=(2-abstract-new-sssss-cf2-1-sgl)"),
        tok(3, "dog", head=4, deprel="nsubj"),
        tok(4, "barks", head=0, deprel="root"),
        "",
        "# sent_id = s2",
        "# text = It ends",
        tok(1, "It", head=2, deprel="nsubj", misc="Entity=1)"),
        tok(2, "ends", head=0, deprel="root"),
    ])
    with pytest.raises(InputFormatError) as info:
        mention_table(parse_conllu(path), path)
    message = str(info.value)
    assert message.startswith(f"{path}, line 3: mention of entity 1 opened here never closes within sentence s1")


def test_mention_closed_without_open(tmp_path):
    path = write_conllu(tmp_path / "noopen.conllu", [
        "# sent_id = s1",
        "# text = A dog barks",
        tok(1, "A", head=2, deprel="det", misc="Entity=(1-animal-new-sssss-cf1-2-coref"),
        tok(2, "dog", head=3, deprel="nsubj", misc="Entity=9)1)"),
        tok(3, "barks", head=0, deprel="root"),
    ])
    with pytest.raises(InputFormatError) as info:
        mention_table(parse_conllu(path), path)
    assert str(info.value).startswith(f"{path}, line 4: mention of entity 9 closes but was never opened")


@pytest.mark.parametrize("value", ["()", "1-abstract", "(1-a-new-s-cf1-1-coref)x"])
def test_unreadable_entity_value(tmp_path, value):
    path = write_conllu(tmp_path / "weird.conllu", [
        "# text = Odd one",
        tok(1, "Odd", head=2, deprel="amod"),
        tok(2, "one", head=0, deprel="root", misc=f"Entity={value}"),
    ])
    with pytest.raises(InputFormatError) as info:
        mention_table(parse_conllu(path), path)
    assert str(info.value).startswith(f"{path}, line 3: ")


# --- builders -------------------------------------------------------------------------------


def test_build_treebank_and_mentions_from_mirror(gum_file, tmp_path):
    treebank_out = tmp_path / "out" / "gum_dev.parquet"
    build_treebank("gum", "dev", [gum_file], treebank_out, mirror=str(tmp_path), offline=True,
                   download_dir=tmp_path / "dl", ud_tag="r2.16")
    table = pq.read_table(treebank_out)
    assert table.num_rows == 4
    assert table["head"].to_pylist()[0] == [1, 4, 4, 4, -1, 4]
    meta = read_metadata(treebank_out)
    assert meta["corpus"] == "gum" and meta["split"] == "dev"
    assert meta["n_words"] == 6 + 8 + 5 + 3
    assert meta["source"] == f"mirror:{gum_file}"

    mentions_out = tmp_path / "out" / "gum_mentions_dev.parquet"
    build_mentions("gum", "dev", [gum_file], mentions_out, mirror=str(tmp_path), offline=True,
                   download_dir=tmp_path / "dl", ud_tag="r2.16")
    mentions = pq.read_table(mentions_out)
    assert mentions.num_rows == 8
    meta = read_metadata(mentions_out)
    assert meta["corpus"] == "gum_mentions"
    # (doc1, 1..6) and (doc2, 1)
    assert meta["n_entities"] == 7
    assert [p.name for p in (tmp_path / "out").iterdir() if p.name.endswith(".partial")] == []


def test_build_treebank_offline_without_mirror(tmp_path):
    with pytest.raises(SourceUnavailableError) as info:
        build_treebank("ewt", "train", [], tmp_path / "ewt.parquet", mirror=None, offline=True,
                       download_dir=tmp_path / "dl", ud_tag="r2.16")
    message = str(info.value)
    assert "corpus 'ewt', split 'train'" in message
    assert ("https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/r2.16/"
            "en_ewt-ud-train.conllu (skipped: 'offline' is true)") in message
    assert "fix: give a mirror directory that" in message
    assert not (tmp_path / "ewt.parquet").exists()
    assert not (tmp_path / "dl").exists()


def test_build_mentions_offline_with_mirror_lacking_file(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with pytest.raises(SourceUnavailableError) as info:
        build_mentions("gum", "test", [], tmp_path / "m.parquet", mirror=str(mirror), offline=True,
                       download_dir=tmp_path / "dl", ud_tag="r2.15")
    message = str(info.value)
    assert "corpus 'gum', split 'test'" in message
    assert f"mirror {mirror / 'ud/UD_English-GUM/en_gum-ud-test.conllu'}" in message
    assert "UD_English-GUM/r2.15/en_gum-ud-test.conllu" in message
    assert "fix: give a mirror directory that" in message


def test_build_treebank_bad_file_leaves_no_output(tmp_path):
    bad = write_conllu(tmp_path / "bad.conllu", ["# text = A b", tok(1, "A", head=0), tok(2, "c", head=1)])
    out = tmp_path / "out" / "t.parquet"
    with pytest.raises(InputFormatError, match="line 3"):
        build_treebank("ewt", "dev", [bad], out, mirror=None, offline=True, download_dir=tmp_path,
                       ud_tag="r2.16")
    assert not out.exists()
    assert not any(p.name.endswith(".partial") for p in tmp_path.rglob("*"))
