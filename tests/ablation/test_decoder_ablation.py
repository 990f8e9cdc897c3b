"""Head ablation on decoders (GPT-2's Conv1D projection, Llama's grouped-query attention): disabling a head in the
attention function equals zeroing its slice of the context that enters the output projection."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModel

from support.tiny_models import tiny_config
from workflow_scripts.ablation.heads import HeadAblation, attn_implementation
from workflow_scripts.models.families import attention_of_layers


@pytest.fixture(params=["gpt2", "llama"])  # llama: two query heads per value head (support/tiny_models.tiny_config)
def decoder(request, tmp_path):
    torch.manual_seed(0)
    AutoModel.from_config(tiny_config(request.param)).save_pretrained(tmp_path)
    plain = AutoModel.from_pretrained(tmp_path, attn_implementation="eager").eval()
    ablatable = AutoModel.from_pretrained(tmp_path, attn_implementation=attn_implementation()).eval()
    input_ids = torch.randint(1, 50, (2, 6))
    mask = torch.ones_like(input_ids)
    mask[1, 4:] = 0  # the second input is shorter: right padding
    return plain, ablatable, {"input_ids": input_ids, "attention_mask": mask}


def _run(model, batch):
    with torch.no_grad():
        return model(**batch, output_attentions=True)


def test_zeroing_a_decoder_head_equals_zeroing_its_context_slice(decoder):
    plain, ablatable, batch = decoder
    layer, head, width = 1, 2, 8
    projection = attention_of_layers(plain, "a test", "Nothing to do")[layer].output_projection

    def zero_head(module, args):
        context = args[0].clone()
        context[..., head * width:(head + 1) * width] = 0
        return (context,)

    handle = projection.register_forward_pre_hook(zero_head)
    try:
        expected = _run(plain, batch).last_hidden_state
    finally:
        handle.remove()
    with HeadAblation(ablatable) as ablation:
        unablated = _run(ablatable, batch).last_hidden_state
        ablation.set({(layer, head)}, "zero")
        got = _run(ablatable, batch)
    torch.testing.assert_close(unablated, _run(plain, batch).last_hidden_state, rtol=0, atol=0)
    torch.testing.assert_close(got.last_hidden_state, expected, rtol=0, atol=1e-6)
    assert not got.attentions[layer][:, head].any()
    assert not torch.equal(got.last_hidden_state, unablated)


def test_a_uniform_decoder_head_spreads_each_query_over_the_tokens_before_it(decoder):
    _, ablatable, batch = decoder
    with HeadAblation(ablatable) as ablation, ablation.ablating({(0, 1)}, "uniform"):
        weights = _run(ablatable, batch).attentions[0][:, 1]
    causal = torch.tril(torch.ones(6, 6))
    torch.testing.assert_close(weights[0], causal / causal.sum(-1, keepdim=True))  # query i: 1/(i+1) each
    # The shorter input: its real queries spread over its real tokens before them (the padding is no key).
    torch.testing.assert_close(weights[1, :4, :4], causal[:4, :4] / causal[:4, :4].sum(-1, keepdim=True))
    assert not weights[1, :4, 4:].any()
