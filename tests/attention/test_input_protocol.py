"""The input protocol of treebank sentences (METHODS 6): gold words joined by spaces ([C]) or the text as written.

A real CoNLL-U sentence with the multi-word tokens don't, won't and It's (and the single word its)
goes through the real parser, the gold annotation and the token table of a tiny BERT under both
protocols; the token strings and the word each token belongs to are known by construction.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from transformers import AutoTokenizer

from support.conllu import gold_treebank
from workflow_scripts.attention.texts import TEXT, WORDS, joined_words, model_inputs
from workflow_scripts.attention.tokens import build_token_table
from workflow_scripts.core.io import read_metadata

CONLLU = """# sent_id = s1
# text = I don't walk, its dog won't go. It's big.
1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\twalk\twalk\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No
5\t,\t,\tPUNCT\t,\t_\t4\tpunct\t_\t_
6\tits\tits\tPRON\tPRP$\t_\t7\tnmod:poss\t_\t_
7\tdog\tdog\tNOUN\tNN\t_\t10\tnsubj\t_\t_
8-9\twon't\t_\t_\t_\t_\t_\t_\t_\t_
8\two\twill\tAUX\tMD\t_\t10\taux\t_\t_
9\tn't\tnot\tPART\tRB\t_\t10\tadvmod\t_\t_
10\tgo\tgo\tVERB\tVB\t_\t4\tparataxis\t_\tSpaceAfter=No
11\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_
12-13\tIt's\t_\t_\t_\t_\t_\t_\t_\t_
12\tIt\tit\tPRON\tPRP\t_\t14\tnsubj\t_\t_
13\t's\tbe\tAUX\tVBZ\t_\t14\tcop\t_\t_
14\tbig\tbig\tADJ\tJJ\t_\t4\tparataxis\t_\tSpaceAfter=No
15\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

"""
#            0    1     2      3       4    5      6      7     8      9     10   11    12    13     14
GOLD_WORDS = ["I", "do", "n't", "walk", ",", "its", "dog", "wo", "n't", "go", ".", "It", "'s", "big", "."]

# What the tiny uncased BERT makes of each string, with the gold word of every token.
# words: "I do n't walk , its dog wo n't go . It 's big ." -- BERT's punctuation split cuts n't into n ' t.
UNDER_WORDS = [("[CLS]", -1), ("i", 0), ("do", 1), ("n", 2), ("'", 2), ("t", 2), ("walk", 3), (",", 4),
               ("its", 5), ("dog", 6), ("wo", 7), ("n", 8), ("'", 8), ("t", 8), ("go", 9), (".", 10),
               ("it", 11), ("'", 12), ("s", 12), ("big", 13), (".", 14), ("[SEP]", -1)]
# text: "I don't walk, its dog won't go. It's big." -- "don" is two word pieces (do ##n), and "won" one
# piece that overlaps "wo" more than "n't", so it belongs to "wo".
UNDER_TEXT = [("[CLS]", -1), ("i", 0), ("do", 1), ("##n", 2), ("'", 2), ("t", 2), ("walk", 3), (",", 4),
              ("its", 5), ("dog", 6), ("won", 7), ("'", 8), ("t", 8), ("go", 9), (".", 10),
              ("it", 11), ("'", 12), ("s", 12), ("big", 13), (".", 14), ("[SEP]", -1)]


@pytest.fixture()
def treebank(tmp_path):
    return gold_treebank(tmp_path, CONLLU)


def test_words_are_joined_by_single_spaces_with_their_spans():
    text, start, end = joined_words(["do", "n't", "go"])
    assert text == "do n't go"
    assert [text[s:e] for s, e in zip(start, end)] == ["do", "n't", "go"]


def test_the_fed_string_and_word_spans_under_each_protocol(treebank):
    data, annotation = treebank
    (fed_words,), applied = model_inputs(data, annotation, WORDS, max_examples=None)
    assert applied == WORDS
    assert fed_words.text_a == "I do n't walk , its dog wo n't go . It 's big ."
    assert [fed_words.text_a[s:e] for s, e in zip(fed_words.word_start, fed_words.word_end)] == GOLD_WORDS
    (fed_text,), applied = model_inputs(data, annotation, TEXT, max_examples=None)
    assert applied == TEXT and fed_text.text_a == "I don't walk, its dog won't go. It's big."
    # As written, the words of a multi-word token that spell it out split its span (do + n't = don't).
    assert [fed_text.text_a[s:e] for s, e in zip(fed_text.word_start, fed_text.word_end)] == GOLD_WORDS


@pytest.mark.parametrize(("protocol", "expected"), [(WORDS, UNDER_WORDS), (TEXT, UNDER_TEXT)])
def test_token_strings_and_word_indices_under_both_protocols(treebank, tiny_bert, tmp_path, protocol, expected):
    data, annotation = treebank
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    table, stats = build_token_table(tokenizer, data, annotation, 64, max_examples=None, input_protocol=protocol)
    assert list(zip(table["token"].to_pylist(), table["word_index"].to_pylist())) == expected
    assert stats["input_protocol"] == protocol and stats["words_without_tokens"] == 0
    # Offsets are in the string actually fed: each token's span is its own text there.
    (fed,), _ = model_inputs(data, annotation, protocol, max_examples=None)
    pieces = [fed.text_a[s:e].lower() for s, e, special in
              zip(table["char_start"].to_pylist(), table["char_end"].to_pylist(), table["special"].to_pylist())
              if not special]
    assert pieces == [t.removeprefix("##") for t, w in expected if w >= 0]


def test_text_corpora_are_always_fed_as_written(tmp_path, tiny_bert):
    """The protocol is for treebanks: a GLUE-style table is fed as written whatever is asked."""
    import pyarrow as pa

    from workflow_scripts.attention.annotate import ANNOTATION_SCHEMA
    from workflow_scripts.data.tables import text_task_schema

    data = tmp_path / "task.parquet"
    pq.write_table(pa.Table.from_pydict({"example_id": [0], "source_id": ["0"], "text_a": ["don't go"],
                                         "text_b": [None], "label": [1]}, schema=text_task_schema(False)), data)
    annotation = tmp_path / "annotation.parquet"
    pq.write_table(pa.Table.from_pydict({
        "example_id": [0], "annotator": ["x"], "words": [["do", "n't", "go"]], "lemmas": [["do", "not", "go"]],
        "upos": [["AUX", "PART", "VERB"]], "head": [None], "deprel": [None], "segment": [[0, 0, 0]],
        "char_start": [[0, 2, 6]], "char_end": [[2, 5, 8]]}, schema=ANNOTATION_SCHEMA), annotation)
    (fed,), applied = model_inputs(data, annotation, WORDS, max_examples=None)
    assert applied == TEXT and fed.text_a == "don't go"


def test_the_protocol_is_recorded_in_the_token_tables_metadata(treebank, tiny_bert, tmp_path):
    from support.tiny_models import write_manifest
    from workflow_scripts.attention.tokens import write_token_table

    data, annotation = treebank
    manifest = write_manifest(tmp_path / "ckpt", tiny_bert)
    for protocol in (WORDS, TEXT):
        output = tmp_path / f"tokens_{protocol}.parquet"
        write_token_table(manifest, data, annotation, output, max_length=64, max_examples=None,
                          input_protocol=protocol, offline=False)
        assert read_metadata(output)["input_protocol"] == protocol
