"""Word alignment by character offsets (METHODS 6) and token-to-word conversion (METHODS 5)."""

from __future__ import annotations

import numpy as np
import pytest
from transformers import AutoTokenizer

from workflow_scripts.attention.align import (
    align_tokens_to_words,
    tokens_to_words,
    word_units,
)
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.data.ud import parse_conllu


def _align(tokenizer, text, words_with_spans, text_b=None, words_b=()):
    encoding = tokenizer(text, text_b, return_offsets_mapping=True, return_special_tokens_mask=True)
    special = np.asarray(encoding["special_tokens_mask"], dtype=bool)
    segment = np.array([-1 if (s is None or sp) else s for s, sp in zip(encoding.sequence_ids(), special)])
    offsets = np.asarray(encoding["offset_mapping"])
    spans = [(0, s, e) for _, s, e in words_with_spans] + [(1, s, e) for _, s, e in words_b]
    token_word = align_tokens_to_words(offsets[:, 0], offsets[:, 1], segment,
                                       np.array([s for _, s, _ in spans]), np.array([e for _, _, e in spans]),
                                       np.array([g for g, _, _ in spans]))
    tokens = tokenizer.convert_ids_to_tokens(encoding["input_ids"])
    return tokens, token_word


def _spans(text, words):
    """Character spans of words that appear in order in text."""
    spans, cursor = [], 0
    for word in words:
        start = text.index(word, cursor)
        spans.append((word, start, start + len(word)))
        cursor = start + len(word)
    return spans


def _words_of_tokens(tokens, token_word, words):
    return {(i, t): (words[w] if w >= 0 else None) for i, (t, w) in enumerate(zip(tokens, token_word))}


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_bert_cased", "tiny_roberta"])
def test_contractions_punctuation_and_non_ascii(fixture, request):
    tokenizer = AutoTokenizer.from_pretrained(request.getfixturevalue(fixture))
    text = "The café isn't big, they can't!"
    words = ["The", "café", "is", "n't", "big", ",", "they", "ca", "n't", "!"]
    spans = _spans(text, words)
    tokens, token_word = _align(tokenizer, text, spans)
    # Special tokens belong to no word.
    assert token_word[0] == -1 and token_word[-1] == -1
    # Every word gets at least one token, and tokens keep text order.
    assert set(token_word[token_word >= 0].tolist()) == set(range(len(words)))
    assert np.all(np.diff(token_word[token_word >= 0]) >= 0)
    # Each token lies inside (or overlaps most) the span of its word.
    encoding = tokenizer(text, return_offsets_mapping=True)
    for (start, end), word in zip(encoding["offset_mapping"], token_word):
        if word >= 0 and end > start:
            _, ws, we = spans[word]
            assert min(end, we) - max(start, ws) > 0


def test_bert_uncased_strips_accents_but_offsets_point_at_the_original(tiny_bert):
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    text = "naïve café"
    tokens, token_word = _align(tokenizer, text, _spans(text, ["naïve", "café"]))
    inner = [w for w in token_word.tolist() if w >= 0]
    assert inner[0] == 0 and inner[-1] == 1 and sorted(set(inner)) == [0, 1]


def test_pair_segments_do_not_mix(tiny_bert):
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    # The same character offsets occur in both texts; the segment keeps them apart.
    tokens, token_word = _align(tokenizer, "the dog", _spans("the dog", ["the", "dog"]),
                                "the cat", _spans("the cat", ["the", "cat"]))
    assert tokens == ["[CLS]", "the", "dog", "[SEP]", "the", "cat", "[SEP]"]
    assert token_word.tolist() == [-1, 0, 1, -1, 2, 3, -1]


def test_roberta_byte_bpe_with_leading_space_tokens(tiny_roberta):
    tokenizer = AutoTokenizer.from_pretrained(tiny_roberta)
    text = "Don't the café"
    tokens, token_word = _align(tokenizer, text, _spans(text, ["Do", "n't", "the", "café"]))
    assert tokens[0] == "<s>" and tokens[-1] == "</s>"
    by_word = {}
    for token, word in zip(tokens, token_word):
        by_word.setdefault(int(word), []).append(token)
    assert "Ġthe" in by_word[2]
    assert any("caf" in t for t in by_word[3])
    assert set(by_word) >= {0, 1, 2, 3}


def test_ud_multiword_tokens_align_to_their_parts(tmp_path, tiny_bert):
    conllu = tmp_path / "mwt.conllu"
    conllu.write_text(
        "# sent_id = 1\n# text = I won't go.\n"
        "1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_\n"
        "2-3\twon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "2\two\twill\tAUX\tMD\t_\t4\taux\t_\t_\n"
        "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_\n"
        "4\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No\n"
        "5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_\n\n")
    sentence = parse_conllu(conllu)[0]
    assert [(w.form, w.start, w.end) for w in sentence.words] == [
        ("I", 0, 1), ("wo", 2, 4), ("n't", 4, 7), ("go", 8, 10), (".", 10, 11)]
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    spans = [(w.form, w.start, w.end) for w in sentence.words]
    tokens, token_word = _align(tokenizer, sentence.text, spans)
    assert tokens == ["[CLS]", "i", "won", "'", "t", "go", ".", "[SEP]"]
    # "won" overlaps "wo" by 2 characters and "n't" by 1: it is wo's; "'" and "t" are n't's.
    assert token_word.tolist() == [-1, 0, 1, 2, 2, 3, 4, -1]


def test_a_word_with_no_token_is_left_out_not_misassigned():
    # Word 1's characters (5..6) are covered by no token, e.g. a character the tokenizer drops.
    token_word = align_tokens_to_words(np.array([0, 0, 7, 0]), np.array([0, 4, 9, 0]), np.array([-1, 0, 0, -1]),
                                       np.array([0, 5, 7]), np.array([4, 6, 9]), np.array([0, 0, 0]))
    assert token_word.tolist() == [-1, 0, 2, -1]
    token_unit, unit_word = word_units(token_word, 3)
    assert unit_word.tolist() == [0, 2, -1, -1]
    assert token_unit.tolist() == [2, 0, 1, 3]


def test_tokens_to_words_sums_columns_and_averages_rows():
    rng = np.random.default_rng(0)
    attention = rng.random((2, 3, 5, 5))
    attention /= attention.sum(-1, keepdims=True)
    # tokens: [CLS] w0 w0 w1 [SEP]
    token_word = np.array([-1, 0, 0, 1, -1])
    token_unit, unit_word = word_units(token_word, 2)
    words = tokens_to_words(attention, token_unit, len(unit_word))
    assert unit_word.tolist() == [0, 1, -1, -1]
    np.testing.assert_allclose(words.sum(-1), 1.0, rtol=1e-6)
    a = attention
    # to word 0 = sum of columns 1 and 2; from word 0 = mean of rows 1 and 2
    np.testing.assert_allclose(words[..., 0, 0], ((a[..., 1, 1] + a[..., 1, 2]) + (a[..., 2, 1] + a[..., 2, 2])) / 2,
                               rtol=1e-6)
    np.testing.assert_allclose(words[..., 2, 1], a[..., 0, 3], rtol=1e-6)  # [CLS] -> w1
    np.testing.assert_allclose(words[..., 1, 3], a[..., 3, 4], rtol=1e-6)  # w1 -> [SEP]


def test_a_map_to_the_gold_head_stays_on_the_gold_head_after_conversion():
    # Word 1 has two tokens; every token of word 0 attends fully to word 1's second token.
    attention = np.zeros((1, 1, 4, 4))
    attention[0, 0, :, 2] = 1.0
    token_unit, unit_word = word_units(np.array([0, 1, 1, 2]), 3)
    words = tokens_to_words(attention, token_unit, len(unit_word))
    assert words[0, 0].argmax(-1).tolist() == [1, 1, 1]
    np.testing.assert_allclose(words[0, 0, :, 1], 1.0)


def test_one_token_per_word_is_a_reordering_equal_to_the_products():
    # [CLS] w0 w1 w2 [SEP]: every unit has one token, so the conversion takes the reordering path; its values
    # are the float32 of the float16 maps, exactly what the products (x * 1 + zeros) give.
    rng = np.random.default_rng(1)
    attention = rng.random((2, 3, 5, 5)).astype(np.float16)
    token_unit, unit_word = word_units(np.array([-1, 0, 1, 2, -1]), 3)
    words = tokens_to_words(attention, token_unit, len(unit_word))
    order = [1, 2, 3, 0, 4]  # the word units first, then [CLS] and [SEP]
    expected = attention.astype(np.float32)[..., order, :][..., :, order]
    assert words.dtype == np.float32 and np.array_equal(words, expected)
    assignment = np.eye(5, dtype=np.float32)[:, order]  # the products, as the general path computes them
    assert np.array_equal(words, assignment.T @ (attention.astype(np.float32) @ assignment))


def test_units_keep_word_order_whatever_the_token_order_and_a_word_past_the_tree_is_an_error():
    token_unit, unit_word = word_units(np.array([-1, 2, 0, 0, -1, 1]), 3)
    assert unit_word.tolist() == [0, 1, 2, -1, -1] and unit_word.dtype == np.int64
    assert token_unit.tolist() == [3, 2, 0, 0, 4, 1] and token_unit.dtype == np.int64
    with pytest.raises(AtlasError, match="belongs to word 3, but the example has 3 words"):
        word_units(np.array([-1, 0, 3]), 3)
