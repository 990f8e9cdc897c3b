"""CoNLL-X and Malt-TAB treebanks: heads, tags, text and offsets, numbering across files, and bad input
rejected with the file, the line and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.conllu import tok, write_conllu
from support.paths import SHARED_DATA
from workflow_scripts.core.errors import InputFormatError
from workflow_scripts.data.treebank_formats import (
    PTB_TO_UPOS,
    parse_conllx,
    parse_malt_tab,
    ptb_to_upos,
    read_treebank,
)

NLTK_WSJ_0001 = SHARED_DATA / "ptb_nltk_sample" / "dependency_treebank" / "wsj_0001.dp"


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def cx(id_, form, cpos, pos, head, deprel="dep", lemma="_") -> str:
    """One 10-column CoNLL-X line."""
    return "\t".join(str(c) for c in (id_, form, lemma, cpos, pos, "_", head, deprel, "_", "_"))


# "Vinken will join ." and "He left .": line numbers of the file are noted for the error tests.
CONLLX_LINES = [
    "# a comment the format does not need, skipped",  # line 1
    cx(1, "Vinken", "PROPN", "NNP", 2, "nsubj", "Vinken"),  # line 2
    cx(2, "will", "AUX", "MD", 0, "root", "will"),
    cx(3, "join", "VERB", "VB", 2, "xcomp", "join"),
    cx(4, ".", "PUNCT", ".", 2, "punct", "."),  # line 5
    "",
    cx(1, "He", "PRON", "PRP", 2, "nsubj", "he"),  # line 7
    cx(2, "left", "VERB", "VBD", 0, "root", "leave"),
    cx(3, ".", "PUNCT", ".", 2, "punct", "."),  # line 9
]

MALT_LINES = [
    "Pierre\tNNP\t2",  # line 1
    "Vinken\tNNP\t3",
    "will\tMD\t0",
    "join\tVB\t3",
    ",\t,\t3",
    "#\t#\t3",  # a word "#", not a comment
    "",
    "It\tPRP\t2",  # line 8
    "rose\tVBD\t0",
]


# --- tag conversion ---------------------------------------------------------------------------


def test_ptb_to_upos():
    assert ptb_to_upos("NNP") == "PROPN"
    assert ptb_to_upos(",") == "PUNCT"
    assert ptb_to_upos("MD") == "AUX"
    assert ptb_to_upos("$") == "SYM" and ptb_to_upos("#") == "SYM"
    assert ptb_to_upos("-LRB-") == "PUNCT" and ptb_to_upos("HYPH") == "PUNCT"
    assert ptb_to_upos("PRP$") == "PRON" and ptb_to_upos("WDT") == "DET" and ptb_to_upos("RP") == "ADP"
    assert ptb_to_upos("-NONE-") == "X" and ptb_to_upos("AFX") == "ADJ"
    assert ptb_to_upos("NOT-A-TAG") == "X"
    assert set(PTB_TO_UPOS.values()) <= {"NOUN", "PROPN", "VERB", "AUX", "ADJ", "ADV", "ADP", "DET", "PRON",
                                         "CCONJ", "NUM", "PART", "INTJ", "SYM", "PUNCT", "X"}


# --- CoNLL-X ----------------------------------------------------------------------------------


def test_conllx_sentences(tmp_path):
    sentences = parse_conllx(write(tmp_path / "tiny.conll", CONLLX_LINES))
    assert [s.sent_id for s in sentences] == ["tiny-1", "tiny-2"]
    assert [s.doc_id for s in sentences] == ["tiny", "tiny"]
    assert [s.example_id for s in sentences] == [0, 1]
    assert [s.line for s in sentences] == [2, 7]
    first = sentences[0]
    assert first.text == "Vinken will join ."
    assert [w.form for w in first.words] == ["Vinken", "will", "join", "."]
    assert [w.head for w in first.words] == [1, -1, 1, 1]
    assert [w.head for w in sentences[1].words] == [1, -1, 1]
    assert [w.upos for w in first.words] == ["PROPN", "AUX", "VERB", "PUNCT"]
    assert [w.xpos for w in first.words] == ["NNP", "MD", "VB", "."]
    assert [w.lemma for w in sentences[1].words] == ["he", "leave", "."]
    assert [w.deprel for w in first.words] == ["nsubj", "root", "xcomp", "punct"]
    assert [(w.start, w.end) for w in first.words] == [(0, 6), (7, 11), (12, 16), (17, 18)]
    assert all(first.text[w.start:w.end] == w.form for w in first.words)
    assert [w.mwt for w in first.words] == [-1] * 4
    assert [w.line for w in first.words] == [2, 3, 4, 5]


def test_conllx_ptb_tagset_maps_postag(tmp_path):
    path = write(tmp_path / "t.conll", [cx(1, "Vinken", "N", "NNP", 2), cx(2, "will", "V", "MD", 0),
                                        cx(3, ",", "Punc", ",", 2)])
    assert [w.upos for w in parse_conllx(path)[0].words] == ["N", "V", "Punc"]
    words = parse_conllx(path, tagset="ptb")[0].words
    assert [w.upos for w in words] == ["PROPN", "AUX", "PUNCT"]
    assert [w.xpos for w in words] == ["NNP", "MD", ","]


def test_conllx_crlf_and_trailing_blank_lines(tmp_path):
    path = tmp_path / "crlf.conll"
    path.write_bytes(("\r\n".join(CONLLX_LINES) + "\r\n\r\n\r\n").encode("utf-8"))
    sentences = parse_conllx(path)
    assert [s.text for s in sentences] == ["Vinken will join .", "He left ."]
    assert [w.deprel for w in sentences[1].words] == ["nsubj", "root", "punct"]


def bad_conllx(tmp_path, line_9: str) -> Path:
    """CONLLX_LINES with line 9 (the last word of the second sentence) replaced."""
    return write(tmp_path / "bad.conll", CONLLX_LINES[:8] + [line_9])


@pytest.mark.parametrize("line_9, problem", [
    ("3\t.\t.\tPUNCT\t.\t_\t2\tpunct", "line has 8 tab-separated columns, CoNLL-X needs 10"),
    (cx(3, ".", "PUNCT", ".", "two"), "HEAD 'two' of word 3 ('.') in sentence 'bad-2' is not an integer"),
    (cx(3, ".", "PUNCT", ".", "_"), "HEAD '_' of word 3 ('.') in sentence 'bad-2' is not an integer"),
    (cx(3, ".", "PUNCT", ".", 4), "HEAD 4 of word 3 ('.') is not a word of sentence 'bad-2' (1..3) or 0"),
    (cx(3, ".", "PUNCT", ".", -1), "HEAD -1 of word 3 ('.') is not a word of sentence 'bad-2' (1..3) or 0"),
    (cx(4, ".", "PUNCT", ".", 2), "word ID '4' where 3 was expected"),
    (cx(2, ".", "PUNCT", ".", 2), "word ID '2' where 3 was expected"),
    (cx(3, ".", "PUNCT", ".", 0), "sentence 'bad-2' has 2 roots: words 2, 3 all have HEAD 0"),
    ("3\t.\t\tPUNCT\t.\t_\t2\tpunct\t_\t_", "column LEMMA is empty"),
])
def test_conllx_bad_line_names_file_and_line(tmp_path, line_9, problem):
    path = bad_conllx(tmp_path, line_9)
    with pytest.raises(InputFormatError) as info:
        parse_conllx(path)
    assert info.value.line == 9
    assert str(info.value).startswith(f"{path}, line 9: {problem}")
    assert "(" in str(info.value) and str(info.value).endswith(")")  # the fix follows in parentheses


def test_conllx_no_root(tmp_path):
    path = write(tmp_path / "noroot.conll", CONLLX_LINES[:6] + [
        cx(1, "He", "PRON", "PRP", 2), cx(2, "left", "VERB", "VBD", 1), cx(3, ".", "PUNCT", ".", 2)])
    with pytest.raises(InputFormatError) as info:
        parse_conllx(path)
    assert str(info.value).startswith(f"{path}, line 7: sentence 'noroot-2' has no root (no word has HEAD 0)")


def test_conllx_cycle(tmp_path):
    path = write(tmp_path / "cycle.conll", [
        cx(1, "a", "X", "X", 0), cx(2, "b", "X", "X", 3), cx(3, "c", "X", "X", 2)])
    with pytest.raises(InputFormatError) as info:
        parse_conllx(path)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{path}, line 2: sentence 'cycle-1': the HEADs of words 2 -> 3 -> 2 "
                                      "form a cycle")


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n"])
def test_conllx_empty_file(tmp_path, content):
    path = tmp_path / "empty.conll"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputFormatError) as info:
        parse_conllx(path)
    assert info.value.line is None
    assert str(info.value).startswith(f"{path}: no sentences found")
    assert "CoNLL-X" in str(info.value)


# --- Malt-TAB ---------------------------------------------------------------------------------


def test_malt_tab_sentences(tmp_path):
    sentences = parse_malt_tab(write(tmp_path / "wsj_9999.dp", MALT_LINES))
    assert [s.sent_id for s in sentences] == ["wsj_9999-1", "wsj_9999-2"]
    assert [s.doc_id for s in sentences] == ["wsj_9999", "wsj_9999"]
    assert [s.example_id for s in sentences] == [0, 1]
    first, second = sentences
    assert first.text == "Pierre Vinken will join , #"
    assert [w.form for w in first.words] == ["Pierre", "Vinken", "will", "join", ",", "#"]
    assert [w.head for w in first.words] == [1, 2, -1, 2, 2, 2]
    assert [w.head for w in second.words] == [1, -1]
    assert [w.upos for w in first.words] == ["PROPN", "PROPN", "AUX", "VERB", "PUNCT", "SYM"]
    assert [w.xpos for w in first.words] == ["NNP", "NNP", "MD", "VB", ",", "#"]
    assert {w.lemma for w in first.words} == {"_"} and {w.deprel for w in first.words} == {"_"}
    assert [(w.start, w.end) for w in first.words] == [(0, 6), (7, 13), (14, 18), (19, 23), (24, 25), (26, 27)]
    assert second.text == "It rose" and [(w.start, w.end) for w in second.words] == [(0, 2), (3, 7)]
    assert [w.line for w in second.words] == [8, 9] and second.line == 8


def test_malt_tab_upos_tagset_keeps_tags(tmp_path):
    path = write(tmp_path / "u.dp", ["Dogs\tNOUN\t2", "bark\tVERB\t0"])
    assert [w.upos for w in parse_malt_tab(path, tagset="upos")[0].words] == ["NOUN", "VERB"]
    assert [w.upos for w in parse_malt_tab(path)[0].words] == ["X", "X"]  # not PTB tags


def test_malt_tab_fourth_column_is_deprel(tmp_path):
    path = write(tmp_path / "four.dp", ["Dogs\tNNS\t2\tSUB", "bark\tVBP\t0\tROOT", ".\t.\t2\tP"])
    words = parse_malt_tab(path)[0].words
    assert [w.deprel for w in words] == ["SUB", "ROOT", "P"]
    assert [w.head for w in words] == [1, -1, 1]


def test_malt_tab_space_separated(tmp_path):
    path = write(tmp_path / "spaces.dp", ["Pierre NNP  2", "Vinken   NNP 0", "", "It PRP 2 SBJ", "rose VBD 0 ROOT"])
    first, second = parse_malt_tab(path)
    assert first.text == "Pierre Vinken"
    assert [w.xpos for w in first.words] == ["NNP", "NNP"]
    assert [w.head for w in first.words] == [1, -1]
    assert [w.deprel for w in second.words] == ["SBJ", "ROOT"]


@pytest.mark.parametrize("line_8, problem", [
    ("join\tVB", "line has 2 columns, Malt-TAB needs 3"),
    ("join\tVB\t3\tVC\textra", "line has 5 columns, Malt-TAB needs 3"),
    ("join\tVB\tx", "HEAD 'x' of word 5 ('join') in sentence 'bad-2' is not an integer"),
    ("join\tVB\t6", "HEAD 6 of word 5 ('join') is not a word of sentence 'bad-2' (1..5) or 0"),
    ("join\tVB\t0", "sentence 'bad-2' has 2 roots: words 4, 5 all have HEAD 0"),
    ("join\tVB\t5", "sentence 'bad-2': the HEADs of words 5 -> 5 form a cycle"),
    ("join\t\t3", "column tag is empty"),
])
def test_malt_tab_bad_line_names_file_and_line(tmp_path, line_8, problem):
    # Sentence 2 (after a one-word sentence and two blank lines) is "Pierre Vinken x will join" on lines
    # 4..8, rooted at "will" (word 4); line 8 holds its word 5.
    lines = ["Hi\tUH\t0", "", "", "Pierre\tNNP\t2", "Vinken\tNNP\t4", "x\tSYM\t4", "will\tMD\t0", line_8]
    path = write(tmp_path / "bad.dp", lines)
    with pytest.raises(InputFormatError) as info:
        parse_malt_tab(path)
    assert info.value.line == 8
    assert str(info.value).startswith(f"{path}, line 8: {problem}")


def test_malt_tab_no_root(tmp_path):
    path = write(tmp_path / "noroot.dp", ["Dogs\tNNS\t2", "bark\tVBP\t1"])
    with pytest.raises(InputFormatError) as info:
        parse_malt_tab(path)
    assert str(info.value).startswith(f"{path}, line 1: sentence 'noroot-1' has no root")


def test_malt_tab_empty_file(tmp_path):
    path = write(tmp_path / "empty.dp", [""])
    with pytest.raises(InputFormatError) as info:
        parse_malt_tab(path)
    assert str(info.value).startswith(f"{path}: no sentences found") and "Malt-TAB" in str(info.value)


@pytest.mark.skipif(not NLTK_WSJ_0001.exists(), reason=f"the NLTK WSJ sample is not at {NLTK_WSJ_0001}")
def test_nltk_wsj_0001():
    sentences = parse_malt_tab(NLTK_WSJ_0001)
    first = sentences[0]
    assert [w.form for w in first.words] == [
        "Pierre", "Vinken", ",", "61", "years", "old", ",", "will", "join", "the", "board", "as", "a",
        "nonexecutive", "director", "Nov.", "29", "."]
    assert [w.head for w in first.words] == [1, 7, 1, 4, 5, 1, 1, -1, 7, 10, 8, 8, 14, 14, 11, 8, 15, 7]
    roots = [i for i, w in enumerate(first.words) if w.head == -1]
    assert roots == [7] and first.words[7].form == "will" and first.words[7].upos == "AUX"
    assert first.words[0].head == 1 and first.words[0].upos == "PROPN"
    assert first.sent_id == "wsj_0001-1" and first.doc_id == "wsj_0001"
    assert first.text.startswith("Pierre Vinken , 61 years old , will join")


# --- read_treebank ----------------------------------------------------------------------------


def test_read_treebank_renumbers_across_files(tmp_path):
    a = write(tmp_path / "a.dp", MALT_LINES)
    b = write(tmp_path / "b.dp", ["Dogs\tNNS\t2", "bark\tVBP\t0"])
    sentences = read_treebank([a, str(b)], "malt_tab")
    assert [s.example_id for s in sentences] == [0, 1, 2]
    assert [s.sent_id for s in sentences] == ["a-1", "a-2", "b-1"]
    assert [s.doc_id for s in sentences] == ["a", "a", "b"]
    assert [w.upos for w in sentences[2].words] == ["NOUN", "VERB"]
    # In the given order, not sorted.
    assert [s.sent_id for s in read_treebank([b, a], "malt_tab")] == ["b-1", "a-1", "a-2"]


def test_read_treebank_conllx_and_tagsets(tmp_path):
    path = write(tmp_path / "x.conll", CONLLX_LINES)
    assert [w.upos for w in read_treebank([path], "conllx")[1].words] == ["PRON", "VERB", "PUNCT"]
    assert [w.upos for w in read_treebank([path, path], "conllx", tagset="ptb")[3].words] == ["PRON", "VERB", "PUNCT"]
    malt = write(tmp_path / "u.dp", ["Dogs\tNOUN\t2", "bark\tVERB\t0"])
    assert [w.upos for w in read_treebank([malt], "malt_tab", tagset="upos")[0].words] == ["NOUN", "VERB"]


def test_read_treebank_conllu(tmp_path):
    plain = write_conllu(tmp_path / "plain.conllu", [
        "# sent_id = p1", "# text = Dogs bark",
        tok(1, "Dogs", upos="NOUN", xpos="NNS", head=2, deprel="nsubj"),
        tok(2, "bark", upos="VERB", xpos="VBP", head=0, deprel="root")])
    with_doc = write_conllu(tmp_path / "doc.conllu", [
        "# newdoc id = d7", "# sent_id = q1", "# text = Yes",
        tok(1, "Yes", upos="INTJ", xpos="UH", head=0, deprel="root")])
    sentences = read_treebank([plain, with_doc], "conllu")
    assert [s.example_id for s in sentences] == [0, 1]
    assert [s.doc_id for s in sentences] == ["plain", "d7"]
    assert [w.head for w in sentences[0].words] == [1, -1]
    # tagset "ptb" replaces UPOS by the mapped XPOS column.
    weird = write_conllu(tmp_path / "weird.conllu", [
        "# text = Vinken will", tok(1, "Vinken", upos="NOUN", xpos="NNP", head=2, deprel="nsubj"),
        tok(2, "will", upos="VERB", xpos="MD", head=0, deprel="root")])
    assert [w.upos for w in read_treebank([weird], "conllu")[0].words] == ["NOUN", "VERB"]
    assert [w.upos for w in read_treebank([weird], "conllu", tagset="ptb")[0].words] == ["PROPN", "AUX"]


def test_read_treebank_bad_arguments(tmp_path):
    with pytest.raises(InputFormatError, match=r"no malt_tab files given"):
        read_treebank([], "malt_tab")
    with pytest.raises(InputFormatError, match=r"unknown treebank format 'penn'.*conllu, conllx, malt_tab"):
        read_treebank([tmp_path / "a.dp"], "penn")
    with pytest.raises(InputFormatError, match=r"unknown tagset 'xpos'.*upos, ptb"):
        read_treebank([tmp_path / "a.dp"], "malt_tab", tagset="xpos")


def test_read_treebank_error_names_second_file(tmp_path):
    good = write(tmp_path / "good.dp", ["Dogs\tNNS\t2", "bark\tVBP\t0"])
    bad = write(tmp_path / "bad.dp", ["Dogs\tNNS\t2", "bark\tVBP\t3"])
    with pytest.raises(InputFormatError) as info:
        read_treebank([good, bad], "malt_tab")
    assert str(info.value).startswith(f"{bad}, line 2: HEAD 3 of word 2 ('bark') is not a word of sentence 'bad-1'")
