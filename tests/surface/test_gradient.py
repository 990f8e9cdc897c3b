"""Separator-gradient importance (METHODS 7.2): masking, the gradient itself, the split, skipping."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from support.entries import TASKS
from support.tiny_models import write_manifest
from workflow_scripts.attention.tokens import TOKEN_SCHEMA
from workflow_scripts.data.tables import text_task_schema
from workflow_scripts.surface.figures import plot_sep_gradient
from workflow_scripts.surface.gradient import (
    attention_gradients,
    bert_masking,
    gradient_sums,
    sep_gradient,
    separator_mask,
)

TEXTS = [("the cat sat on the mat .", "the dog ran ."), ("a big red house .", "it is not small , is it ?"),
         ("they walked quickly .", "we sat on the mat ."), ("he sees the dog .", "she saw a cat .")]


# --- masking and separators ---------------------------------------------------------------------


def test_bert_masking_is_seeded_and_never_touches_special_tokens():
    ids = np.arange(100, 300)
    special = np.zeros(200, bool)
    special[[0, 99, 199]] = True
    masked, labels = bert_masking(ids, special, np.random.default_rng([5, 1]), mask_prob=0.15, mask_token_id=4,
                                  vocab_size=1000)
    again, labels_again = bert_masking(ids, special, np.random.default_rng([5, 1]), mask_prob=0.15,
                                       mask_token_id=4, vocab_size=1000)
    np.testing.assert_array_equal(masked, again)
    np.testing.assert_array_equal(labels, labels_again)
    chosen = labels != -100
    assert chosen.sum() == round(0.15 * 197)
    assert not (chosen & special).any()
    np.testing.assert_array_equal(labels[chosen], ids[chosen])
    np.testing.assert_array_equal(masked[~chosen], ids[~chosen])
    assert (masked[chosen] == 4).mean() > 0.6  # about 80% become the mask token
    # at least one position is predicted even in a short example
    _, short = bert_masking(np.array([1, 9, 2]), np.array([1, 0, 1], bool), np.random.default_rng(0),
                            mask_prob=0.15, mask_token_id=4, vocab_size=10)
    assert short.tolist() == [-100, 9, -100]


def test_separators_are_the_special_tokens_but_the_first():
    special = np.array([1, 0, 0, 1, 0, 1], bool)
    assert separator_mask(special, np.array([0, 5, 5, 2, 5, 2]), None).tolist() == [0, 0, 0, 1, 0, 1]
    assert separator_mask(special, np.array([0, 5, 5, 2, 5, 3]), 2).tolist() == [0, 0, 0, 1, 0, 0]


# --- the gradient --------------------------------------------------------------------------------


class Linear(torch.nn.Module):
    """A fake model whose loss is sum(W * A) over its attention A, so that dL/dA = W exactly."""

    def __init__(self, weights: list[torch.Tensor]):
        super().__init__()
        self.logits = torch.nn.Parameter(torch.zeros(weights[0].shape))
        self.weights = weights
        self.config = SimpleNamespace(model_type="fake")

    def forward(self, labels=None, output_attentions=False, **_):
        attentions = [torch.softmax(self.logits, -1) * 1.0 for _ in self.weights]
        loss = sum((w * a).sum() for w, a in zip(self.weights, attentions))
        return SimpleNamespace(attentions=tuple(attentions), loss=loss)


def test_gradient_is_split_into_separator_and_other_columns():
    # 2 layers, 1 example, 2 heads, 3 tokens; the separator is token 2.
    w0 = torch.tensor([[[1., 2., -3.], [0., 0., 4.], [1., 1., 1.]], [[0., 0., 0.], [0., 0., 0.], [0., 0., 2.]]])[None]
    w1 = torch.full((1, 2, 3, 3), -0.5)
    gradients, loss = attention_gradients(Linear([w0, w1]), {"labels": None})
    torch.testing.assert_close(gradients[0], w0)
    sums = gradient_sums(gradients, np.array([False, False, True]))
    # layer 0: |grad| to token 2 = 3+4+1+0+0+2 = 10 over 2 heads x 3 rows; others 1+2+0+0+1+1 = 5 over 12.
    np.testing.assert_allclose(sums[0], [10, 6, 5, 12])
    np.testing.assert_allclose(sums[1], [3, 6, 6, 12])


@pytest.fixture(scope="module")
def tiny_mlm(tiny_bert, tmp_path_factory):
    """A tiny BERT with a (random but saved) masked-LM head."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    directory = tmp_path_factory.mktemp("tiny-mlm")
    BertForMaskedLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def _token_table(path, tokenizer):
    columns = {name: [] for name in TOKEN_SCHEMA.names}
    for example_id, (a, b) in enumerate(TEXTS):
        encoding = tokenizer(a, b, return_special_tokens_mask=True, return_token_type_ids=True)
        n = len(encoding["input_ids"])
        columns["example_id"] += [example_id] * n
        columns["token_index"] += list(range(n))
        columns["token"] += tokenizer.convert_ids_to_tokens(encoding["input_ids"])
        columns["input_id"] += encoding["input_ids"]
        columns["token_type_id"] += encoding["token_type_ids"]
        columns["char_start"] += [0] * n
        columns["char_end"] += [0] * n
        columns["segment"] += [0] * n
        columns["special"] += [bool(s) for s in encoding["special_tokens_mask"]]
        columns["word_index"] += [-1] * n
    pq.write_table(pa.Table.from_pydict(columns, schema=TOKEN_SCHEMA), path)
    return path


def test_the_gradient_is_that_of_the_weights_the_model_uses(tiny_mlm, monkeypatch):
    """Finite differences: nudging one attention weight inside the model changes the loss by grad x nudge."""
    import transformers.models.bert.modeling_bert as bert
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_mlm)
    model = AutoModelForMaskedLM.from_pretrained(tiny_mlm, attn_implementation="eager").double().eval()
    encoded = tokenizer(*TEXTS[0], return_tensors="pt")
    labels = encoded["input_ids"].clone()
    labels[0, [0, 3, 5, -1]] = -100
    inputs = {**encoded, "labels": labels}
    gradients, loss = attention_gradients(model, inputs)
    assert len(gradients) == 2 and gradients[1].shape == (1, 2, labels.shape[1], labels.shape[1])
    layer = 0  # the first layer, so that the nudge passes through every later one
    head, row, col = np.unravel_index(int(gradients[layer][0].abs().argmax()), gradients[layer][0].shape)
    original = bert.eager_attention_forward
    nudge = {"eps": 0.0}

    def nudged(module, query, key, value, attention_mask, **kwargs):
        kwargs["dropout"] = 0.0
        scores = torch.matmul(query, key.transpose(2, 3)) * kwargs.get("scaling", query.size(-1) ** -0.5)
        if attention_mask is not None:
            scores = scores + attention_mask
        weights = torch.softmax(scores, dim=-1)
        if module is model.bert.encoder.layer[layer].attention.self:
            bump = torch.zeros_like(weights)
            bump[0, head, row, col] = nudge["eps"]
            weights = weights + bump
        return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights

    monkeypatch.setattr(bert, "eager_attention_forward", nudged)
    with torch.no_grad():
        nudge["eps"] = 0.0
        base = float(model(**inputs).loss)
        nudge["eps"] = 1e-5
        up = float(model(**inputs).loss)
        nudge["eps"] = -1e-5
        down = float(model(**inputs).loss)
    monkeypatch.setattr(bert, "eager_attention_forward", original)
    assert base == pytest.approx(loss, rel=1e-9)
    assert abs(float(gradients[layer][0, head, row, col])) > 1e-5  # not trivially zero
    assert (up - down) / 2e-5 == pytest.approx(float(gradients[layer][0, head, row, col]), rel=1e-4)


def test_bf16_gradients_follow_the_fp32_ones(tiny_mlm):
    """surface.gradient_precision bf16: the passes run under bfloat16 autocast (the weights the model returns are
    bfloat16), and the gradient per layer stays that of fp32 within bfloat16's precision."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_mlm)
    model = AutoModelForMaskedLM.from_pretrained(tiny_mlm, attn_implementation="eager").eval()
    encoded = tokenizer(*TEXTS[0], return_tensors="pt")
    inputs = {**encoded, "labels": encoded["input_ids"].clone()}
    fp32, fp32_loss = attention_gradients(model, inputs)
    bf16, bf16_loss = attention_gradients(model, inputs, "bf16")
    assert {str(g.dtype) for g in fp32} == {"torch.float32"} and {str(g.dtype) for g in bf16} == {"torch.bfloat16"}
    assert bf16_loss != fp32_loss and bf16_loss == pytest.approx(fp32_loss, rel=0.02)
    for exact, approximate in zip(fp32, bf16):
        total = float(exact.abs().sum())
        assert float((approximate.float() - exact).abs().sum()) < 0.1 * total


def test_masked_lm_gradients_per_layer(tiny_mlm, tmp_path):
    from transformers import AutoTokenizer

    tokens = _token_table(tmp_path / "tokens.parquet", AutoTokenizer.from_pretrained(tiny_mlm))
    manifest = write_manifest(tmp_path / "ckpt", tiny_mlm)
    frame = sep_gradient(manifest, tokens, tmp_path / "part.csv", max_examples=3, mask_prob=0.15, seed=1,
                         resamples=50, bootstrap_seed=0, threads=1, offline=False, data_name="wiki/segments")
    assert frame["layer"].tolist() == [0, 1] and (frame["n"] == 3).all()
    assert (frame["loss"] == "mlm").all() and (frame["skipped"] == "").all()
    assert (frame["grad_to_sep"] > 0).all() and (frame["grad_to_other"] > 0).all()
    assert (frame["grad_to_sep_low"] <= frame["grad_to_sep"]).all()
    assert (frame["mask_prob"] == 0.15).all() and (frame["seed"] == 1).all()
    again = sep_gradient(manifest, tokens, tmp_path / "again.csv", max_examples=3, mask_prob=0.15, seed=1,
                         resamples=50, bootstrap_seed=0, threads=1, offline=False, data_name="wiki/segments")
    pd.testing.assert_frame_equal(frame, again)


def test_a_checkpoint_without_an_mlm_head_is_skipped_with_the_reason(tiny_bert, tmp_path):
    from transformers import AutoTokenizer

    tokens = _token_table(tmp_path / "tokens.parquet", AutoTokenizer.from_pretrained(tiny_bert))
    manifest = write_manifest(tmp_path / "ckpt", tiny_bert)  # a BertModel: no masked-LM head
    frame = sep_gradient(manifest, tokens, tmp_path / "part.csv", max_examples=2, mask_prob=0.15, seed=0,
                         resamples=1000, bootstrap_seed=0, threads=1, offline=False)
    assert frame["layer"].tolist() == [0, 1] and frame["grad_to_sep"].isna().all()
    assert frame["skipped"].str.contains("no masked-LM head").all()
    written = pd.read_csv(tmp_path / "part.csv")
    assert written["grad_to_sep"].isna().all() and written["skipped"].notna().all()


def test_a_decoder_is_skipped_in_one_short_sentence(tiny_gpt2, tmp_path):
    from transformers import AutoTokenizer

    tokens = _token_table(tmp_path / "tokens.parquet", AutoTokenizer.from_pretrained(tiny_gpt2))
    manifest = write_manifest(tmp_path / "ckpt", tiny_gpt2)
    frame = sep_gradient(manifest, tokens, tmp_path / "part.csv", max_examples=2, mask_prob=0.15, seed=0,
                         resamples=10, bootstrap_seed=0, threads=1, offline=False)
    assert set(frame["skipped"]) == {"a decoder (gpt2) has no masked-LM loss; the separator gradient ([C] 7.2) "
                                     "needs one"}


@pytest.mark.parametrize("task", ["cola", "stsb"])
def test_a_finetuned_checkpoint_uses_its_task_loss(tiny_bert, tmp_path, task):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    regression = task == "stsb"
    head = {"num_labels": 1, "problem_type": "regression"} if regression else {"num_labels": 2}
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_bert, **head)
    weights = tmp_path / "weights"
    model.save_pretrained(weights)
    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(weights)
    manifest = write_manifest(tmp_path / "ckpt", weights, name=f"{task}.seed1.final")
    labels = [2.5, 4.0, 0.5, 3.0] if regression else [1, 0, 1, 0]
    dev = pa.Table.from_pydict({"example_id": [0, 1, 2, 3], "source_id": ["0", "1", "2", "3"],
                                "text_a": [a for a, _ in TEXTS],
                                "text_b": [b for _, b in TEXTS] if regression else [None] * 4, "label": labels},
                               schema=text_task_schema(regression))
    pq.write_table(dev, tmp_path / "dev.parquet")
    tokens = _token_table(tmp_path / "tokens.parquet", AutoTokenizer.from_pretrained(tiny_bert))
    frame = sep_gradient(manifest, tokens, tmp_path / "part.csv", task_data=tmp_path / "dev.parquet",
                         task=TASKS[task].params(), max_examples=None, mask_prob=0.15, seed=0, resamples=50,
                         bootstrap_seed=0, threads=1,
                         offline=False)
    assert (frame["loss"] == f"task:{task}").all() and (frame["n"] == 4).all()
    assert np.isfinite(frame["grad_to_sep"]).all() and (frame["grad_to_other"] > 0).all()
    assert frame["mask_prob"].isna().all()


def test_gradient_figure_shows_computed_and_skipped_checkpoints(tmp_path):
    frame = pd.DataFrame({"model": "m", "checkpoint": ["pretrained"] * 2 + ["random"] * 2, "layer": [0, 1, 0, 1],
                          "grad_to_sep": [1e-3, 1e-4, np.nan, np.nan], "grad_to_other": [2e-3, 2e-3, np.nan, np.nan],
                          "loss": ["mlm"] * 4, "skipped": ["", "", "no masked-LM head", "no masked-LM head"]})
    frame.to_csv(tmp_path / "g.csv", index=False)
    plot_sep_gradient(tmp_path / "g.csv", tmp_path / "g.png", tmp_path / "g.pdf")
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "g.pdf").exists()
