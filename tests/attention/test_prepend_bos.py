"""A model entry's prepend_bos in its token tables (attention/tokens.py): a BOS put first where the tokenizer adds
none (GPT-2's), the tokenizer's own taken away, or the tokenizer's behaviour kept; the BOS is a special token with no
word, and the input still fits max_length."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer, GPT2TokenizerFast

from support.conllu import gold_treebank
from workflow_scripts.attention.texts import WORDS
from workflow_scripts.attention.tokens import bos_edit, build_token_table
from workflow_scripts.core.errors import AtlasError

CONLLU = """# sent_id = s1
# text = the dog saw a cat
1\tthe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tsaw\tsee\tVERB\tVBD\t_\t0\troot\t_\t_
4\ta\ta\tDET\tDT\t_\t5\tdet\t_\t_
5\tcat\tcat\tNOUN\tNN\t_\t3\tobj\t_\t_

"""


@pytest.fixture()
def treebank(tmp_path):
    return gold_treebank(tmp_path, CONLLU)


@pytest.fixture()
def gpt2_style(tiny_roberta):
    """The tiny byte-level BPE as GPT-2's tokenizer: no special tokens added to a text; BOS = EOS = '</s>'."""
    return GPT2TokenizerFast(vocab=str(tiny_roberta / "vocab.json"), merges=str(tiny_roberta / "merges.txt"),
                             bos_token="</s>", eos_token="</s>", unk_token="<unk>")


def rows(table):
    return list(zip(table["token"].to_pylist(), table["special"].to_pylist(), table["word_index"].to_pylist(),
                    table["segment"].to_pylist(), table["char_start"].to_pylist(), table["char_end"].to_pylist(),
                    strict=True))


def test_a_bos_is_put_first_where_the_tokenizer_adds_none(treebank, gpt2_style):
    data, annotation = treebank
    plain, _ = build_token_table(gpt2_style, data, annotation, 32, max_examples=None, input_protocol=WORDS)
    assert not any(plain["special"].to_pylist())  # GPT-2: the text's tokens only
    table, stats = build_token_table(gpt2_style, data, annotation, 32, max_examples=None, input_protocol=WORDS,
                                     prepend_bos=True)
    assert rows(table)[0] == ("</s>", True, -1, -1, 0, 0)
    assert rows(table)[1:] == rows(plain)  # every other token as before, in the same words
    assert table["input_id"].to_pylist()[0] == gpt2_style.bos_token_id
    assert table["token_index"].to_pylist() == list(range(table.num_rows))
    assert (stats["prepend_bos"], stats["bos_edit"]) == (True, "prepend")


def test_the_bos_counts_against_max_length(treebank, gpt2_style):
    data, annotation = treebank
    plain, _ = build_token_table(gpt2_style, data, annotation, 64, max_examples=None, input_protocol=WORDS)
    limit = plain.num_rows  # the sentence's tokens exactly: with a BOS, one is cut
    table, stats = build_token_table(gpt2_style, data, annotation, limit, max_examples=None, input_protocol=WORDS,
                                     prepend_bos=True)
    assert table.num_rows == limit and stats["truncated_examples"] == 1
    untruncated, stats = build_token_table(gpt2_style, data, annotation, limit + 1, max_examples=None,
                                           input_protocol=WORDS, prepend_bos=True)
    assert untruncated.num_rows == limit + 1 and stats["truncated_examples"] == 0


def test_the_tokenizers_bos_is_taken_away_or_kept(treebank, tiny_roberta):
    data, annotation = treebank
    tokenizer = AutoTokenizer.from_pretrained(tiny_roberta)  # <s> ... </s>, as Llama's <s> ...
    kept, _ = build_token_table(tokenizer, data, annotation, 32, max_examples=None, input_protocol=WORDS)
    assert kept["token"].to_pylist()[0] == "<s>"
    for setting in (None, True):  # true where the tokenizer adds one already: nothing to change
        same, stats = build_token_table(tokenizer, data, annotation, 32, max_examples=None, input_protocol=WORDS,
                                        prepend_bos=setting)
        assert rows(same) == rows(kept) and stats["bos_edit"] is None
    dropped, stats = build_token_table(tokenizer, data, annotation, 32, max_examples=None, input_protocol=WORDS,
                                       prepend_bos=False)
    assert rows(dropped) == rows(kept)[1:] and stats["bos_edit"] == "drop"
    assert dropped["token_index"].to_pylist() == list(range(dropped.num_rows))


def test_a_tokenizer_without_a_bos_token_is_refused_naming_the_key(tiny_bert):
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)  # BERT: [CLS], no BOS
    with pytest.raises(AtlasError, match=r"config key 'models.tiny.prepend_bos': its tokenizer has no BOS token"):
        bos_edit(tokenizer, True, "tiny")
    assert bos_edit(tokenizer, False, "tiny") is None


def test_drop_takes_away_the_bos_before_each_text_of_a_pair(gpt2_style):
    from tokenizers.processors import TemplateProcessing

    from workflow_scripts.attention.tokens import _edit_bos

    bos = gpt2_style.bos_token_id  # as Llama's tokenizer builds a pair: <s> A <s> B
    gpt2_style.backend_tokenizer.post_processor = TemplateProcessing(
        single="</s> $A", pair="</s> $A </s> $B:1", special_tokens=[("</s>", bos)])
    encoding = gpt2_style("the dog", "a cat", return_offsets_mapping=True, return_special_tokens_mask=True,
                          return_token_type_ids=True)
    assert encoding["input_ids"].count(bos) == 2
    fields = _edit_bos(encoding, "drop", bos)
    assert bos not in fields["input_ids"] and not any(fields["special"])
    assert fields["sequence"] == [0, 0, 1, 1] and len(fields["offsets"]) == 4
