"""The head-ablation attention function: values known by construction, on tiny BERT and RoBERTa models.

Every mode is checked against the plain eager model with the head's slice of the context (the input of
the layer's output projection) replaced by hand, through a forward pre-hook on that projection.
"""

from __future__ import annotations

import pytest
import torch

from workflow_scripts.ablation.heads import (
    ABLATION_ATTRIBUTE,
    HeadAblation,
    attn_implementation,
)
from workflow_scripts.core.errors import AtlasError

TEXTS = ["the cat sat on the mat .", "a dog", "they ran quickly on the big red mat"]


def _models(path):
    from transformers import AutoModel, AutoTokenizer

    plain = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    ablatable = AutoModel.from_pretrained(path, attn_implementation=attn_implementation()).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    return plain, ablatable, batch


@pytest.fixture(params=["bert", "roberta"])
def models(request, tiny_bert, tiny_roberta):
    return _models(tiny_bert if request.param == "bert" else tiny_roberta)


def _run(model, batch, **kwargs):
    with torch.no_grad():
        return model(**batch, output_attentions=True, output_hidden_states=True, **kwargs)


def _projection(model, layer):
    """The output projection of ``layer``'s attention: its input is the concatenated head contexts."""
    return model.encoder.layer[layer].attention.output.dense


def _with_context(plain, batch, layer, head, replace):
    """The plain model's output with head (layer, head)'s context slice set to ``replace(slice, hidden_in)``."""
    size = plain.config.hidden_size // plain.config.num_attention_heads
    inputs = {}

    def capture(module, args):  # the layer's input hidden states (for the value projection)
        inputs["hidden"] = args[0]

    def edit(module, args):
        context = args[0].clone()
        part = slice(head * size, (head + 1) * size)
        context[..., part] = replace(context[..., part], inputs["hidden"])
        return (context,)

    attention = plain.encoder.layer[layer].attention.self
    handles = [attention.register_forward_pre_hook(capture), _projection(plain, layer).register_forward_pre_hook(edit)]
    try:
        return _run(plain, batch)
    finally:
        for handle in handles:
            handle.remove()


def _values(plain, layer, head, hidden):
    size = plain.config.hidden_size // plain.config.num_attention_heads
    value = plain.encoder.layer[layer].attention.self.value(hidden)
    return value[..., head * size:(head + 1) * size]  # (B, T, d)


def test_unablated_output_is_the_plain_eager_output_exactly(models):
    plain, ablatable, batch = models
    expected = _run(plain, batch)
    with HeadAblation(ablatable):
        got = _run(ablatable, batch)
    assert torch.equal(got.last_hidden_state, expected.last_hidden_state)
    for a, b in zip(got.attentions, expected.attentions):
        assert torch.equal(a, b)


def test_zero_equals_zeroing_the_heads_context_slice(models):
    plain, ablatable, batch = models
    expected = _with_context(plain, batch, 1, 1, lambda part, hidden: torch.zeros_like(part))
    with HeadAblation(ablatable) as ablation:
        ablation.set({(1, 1)}, "zero")
        got = _run(ablatable, batch)
    torch.testing.assert_close(got.last_hidden_state, expected.last_hidden_state, rtol=0, atol=1e-6)
    assert not got.attentions[1][:, 1].any()  # the mask's weights: all zero
    assert not torch.equal(got.last_hidden_state, _run(plain, batch).last_hidden_state)


def test_uniform_weights_are_one_over_the_real_tokens(models):
    plain, ablatable, batch = models
    real = batch["attention_mask"].bool()
    with HeadAblation(ablatable) as ablation, ablation.ablating({(0, 1)}, "uniform"):
        got = _run(ablatable, batch)
    weights = got.attentions[0][:, 1]  # (B, queries, keys)
    for b in range(len(TEXTS)):
        n = int(real[b].sum())
        expected = torch.where(real[b], 1.0 / n, 0.0).expand_as(weights[b])
        torch.testing.assert_close(weights[b], expected, rtol=0, atol=1e-7)
    torch.testing.assert_close(got.attentions[0][:, 0], _run(plain, batch).attentions[0][:, 0], rtol=0, atol=0)

    def mean_of_real_values(part, hidden):
        values = _values(plain, 0, 1, hidden)
        mean = (values * real[..., None]).sum(1, keepdim=True) / real.sum(1)[:, None, None]
        return mean.expand_as(part)

    expected = _with_context(plain, batch, 0, 1, mean_of_real_values)
    torch.testing.assert_close(got.last_hidden_state, expected.last_hidden_state, rtol=0, atol=1e-5)


def test_first_sends_all_weight_to_the_first_token(models):
    plain, ablatable, batch = models
    with HeadAblation(ablatable) as ablation, ablation.ablating({(1, 0)}, "first"):
        got = _run(ablatable, batch)
    weights = got.attentions[1][:, 0]
    assert torch.equal(weights[..., 0], torch.ones_like(weights[..., 0])) and not weights[..., 1:].any()
    expected = _with_context(plain, batch, 1, 0,
                             lambda part, hidden: _values(plain, 1, 0, hidden)[:, :1].expand_as(part))
    torch.testing.assert_close(got.last_hidden_state, expected.last_hidden_state, rtol=0, atol=1e-5)


def test_mean_is_the_heads_mean_output_over_real_tokens(models):
    plain, ablatable, batch = models
    size = plain.config.hidden_size // plain.config.num_attention_heads
    real = batch["attention_mask"].bool()
    seen = {}
    handle = _projection(plain, 0).register_forward_pre_hook(lambda m, args: seen.__setitem__("context", args[0]))
    _run(plain, batch)
    handle.remove()
    by_hand = seen["context"][real][:, size:2 * size].double().mean(0).float()  # head 1 of layer 0
    with HeadAblation(ablatable) as ablation:
        with ablation.collecting_means():
            _run(ablatable, batch)
        torch.testing.assert_close(ablation.means[0, 1], by_hand, rtol=0, atol=1e-6)
        with ablation.ablating({(0, 1)}, "mean"):
            got = _run(ablatable, batch)
    expected = _with_context(plain, batch, 0, 1, lambda part, hidden: by_hand.expand_as(part))
    torch.testing.assert_close(got.last_hidden_state, expected.last_hidden_state, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", ["zero", "uniform", "first"])
def test_ablating_a_head_changes_only_its_layer_and_above(tiny_bert, mode):
    _, ablatable, batch = _models(tiny_bert)
    plain = _run(ablatable, batch)
    with HeadAblation(ablatable) as ablation, ablation.ablating({(1, 0)}, mode):
        got = _run(ablatable, batch)
    # hidden_states[i] is the input of layer i: layers 0 and 1 see what they saw; layer 1's output differs.
    for i in (0, 1):
        assert torch.equal(got.hidden_states[i], plain.hidden_states[i])
    assert torch.equal(got.attentions[0], plain.attentions[0])
    assert not torch.equal(got.hidden_states[2], plain.hidden_states[2])


def test_deeper_model_keeps_every_layer_below_the_ablated_one(tmp_path):
    from support.tiny_models import save_tiny_model

    _, ablatable, batch = _models(save_tiny_model(tmp_path / "deep", layers=4, heads=2))
    plain = _run(ablatable, batch)
    with HeadAblation(ablatable) as ablation, ablation.ablating({(2, 1)}, "zero"):
        got = _run(ablatable, batch)
    assert all(torch.equal(got.hidden_states[i], plain.hidden_states[i]) for i in range(3))
    assert all(not torch.equal(got.hidden_states[i], plain.hidden_states[i]) for i in range(3, 5))


def test_one_model_serves_every_evaluation_and_detaches(tiny_bert):
    plain, ablatable, batch = _models(tiny_bert)
    expected = _run(plain, batch).last_hidden_state
    with HeadAblation(ablatable) as ablation:
        ablation.set({(0, 0), (1, 1)}, "zero")
        assert not torch.equal(_run(ablatable, batch).last_hidden_state, expected)
        ablation.clear()
        assert torch.equal(_run(ablatable, batch).last_hidden_state, expected)
    assert not any(hasattr(m, ABLATION_ATTRIBUTE) for m in ablatable.modules())
    assert torch.equal(_run(ablatable, batch).last_hidden_state, expected)


def test_bad_heads_modes_and_models_are_refused(tiny_bert):
    plain, ablatable, _ = _models(tiny_bert)
    with pytest.raises(AtlasError, match="attn_implementation"):
        HeadAblation(plain)
    with HeadAblation(ablatable) as ablation:
        with pytest.raises(AtlasError, match=r"2 layers x 2 heads"):
            ablation.set({(2, 0)}, "zero")
        with pytest.raises(AtlasError, match=r"head \(layer 0, head 5\)"):
            ablation.set({(0, 5)}, "zero")
        with pytest.raises(AtlasError, match="ablation.modes"):
            ablation.set({(0, 0)}, "drop")
        with pytest.raises(AtlasError, match="collecting_means"):
            ablation.set({(0, 0)}, "mean")
