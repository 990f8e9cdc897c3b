"""Bad CoNLL-U: each error names the file, the line, the sentence and the fix (bad HEADs and IDs,
forms that do not spell the text, sentences that are not a tree)."""

from __future__ import annotations

import pytest

from support.conllu import mwt, tok, write_conllu
from support.entries import UD, UD_SOURCE
from support.source_files import input_error
from workflow_scripts.core.errors import InputFormatError
from workflow_scripts.data.build import build_mentions
from workflow_scripts.data.ud import parse_conllu

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
    error = input_error(parse_conllu, path)
    assert error.line == 10
    assert str(error).startswith(f"{path}, line 10: HEAD 7 of word 2 is not a word of this sentence (1..3)")


@pytest.mark.parametrize("head", ["_", "-1"])
def test_missing_or_negative_head(tmp_path, head):
    path = write_conllu(tmp_path / "nohead.conllu", [
        "# text = No head",
        tok(1, "No", head=2, deprel="det"),
        tok(2, "head", head=head, deprel="root"),
    ])
    message = str(input_error(parse_conllu, path))
    assert message.startswith(f"{path}, line 3: HEAD ")


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
    error = input_error(parse_conllu, path)
    message = str(error)
    assert str(path) in message
    # The sentence block starts on line 4; its bad word is on line 7.
    assert error.line in (4, 7)
    assert f"line {error.line}:" in message


def test_form_not_matching_text(tmp_path):
    path = write_conllu(tmp_path / "mismatch.conllu", [
        "# sent_id = s1",
        "# text = Hello world.",
        tok(1, "Hello", head=0, deprel="root"),
        tok(2, "World", head=1, deprel="vocative", misc="SpaceAfter=No"),
        tok(3, ".", head=1, deprel="punct"),
    ])
    message = str(input_error(parse_conllu, path))
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
    message = str(input_error(parse_conllu, path))
    assert message.startswith(f"{path}, line 4: sentence has no word lines")


def test_file_without_sentences(tmp_path):
    path = tmp_path / "blank.conllu"
    path.write_text("\n\n  \n", encoding="utf-8")
    message = str(input_error(parse_conllu, path))
    assert message.startswith(f"{path}: no sentences found")


def test_token_line_with_too_few_columns(tmp_path):
    path = write_conllu(tmp_path / "short.conllu", [
        "# text = Too short",
        tok(1, "Too", head=2, deprel="advmod"),
        "2\tshort\tshort\tADJ\tJJ",
    ])
    message = str(input_error(parse_conllu, path))
    assert str(path) in message
    assert "line " in message


# --- not a tree: cycles, missing and extra roots (each names file, line, sent_id and fix) ------

OK_SENTENCE = ["# sent_id = ok1", "# text = Fine here.", tok(1, "Fine", head=0, deprel="root"),
               tok(2, "here", head=1, deprel="advmod", misc="SpaceAfter=No"), tok(3, ".", head=1, deprel="punct"),
               ""]


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
    error = input_error(parse_conllu, path)
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
    error = input_error(parse_conllu, path)
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
    error = input_error(parse_conllu, path)
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
    error = input_error(parse_conllu, path)
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
    error = input_error(parse_conllu, path)
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
        build_mentions(UD["gum"], "dev", [path], out, mirror=None, offline=True, download_dir=tmp_path,
                       ud_tag="r2.16", **UD_SOURCE)
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
    error = input_error(parse_conllu, path)
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
    error = input_error(parse_conllu, path)
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
    error = input_error(parse_conllu, path)
    assert error.line == bad_line
    assert str(error).startswith(f"{path}, line {bad_line}: word ID {found} where {expected} was expected "
                                 "in sentence 'ids'")



def test_a_form_of_whitespace_alone_is_named_as_such(tmp_path):
    # A no-break space is whitespace to the search for the form in the text: it was reported as text and FORM
    # disagreeing, which they do not.
    path = write_conllu(tmp_path / "nbsp.conllu", [
        "# text = Odd \u00a0 form",
        tok(1, "Odd", head=0, deprel="root"),
        tok(2, "\u00a0", head=1, deprel="dep"),
        tok(3, "form", head=1, deprel="dep"),
    ])
    message = str(input_error(parse_conllu, path))
    assert message.startswith(f"{path}, line 3: the FORM column holds only whitespace (U+00A0)"), message
    assert "must agree" not in message and "put the word's characters in FORM" in message
