"""Attention signals (docs/signals.md): norm and rollout equal their definitions computed directly, attention
is today's maps bit for bit, padding changes nothing, and the dump says which signal it holds."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from support.tiny_dumps import SENTENCES
from support.tiny_dumps import tiny_dump as _dump
from support.tiny_models import tiny_config
from workflow_scripts.attention.extract import extract_shard
from workflow_scripts.attention.gather import gather_manifest
from workflow_scripts.attention.reader import AttentionDump, normalised_rows
from workflow_scripts.attention.shards import shard_names, shard_record_path
from workflow_scripts.attention.signals import SignalMaps, attn_implementation_for, projected_value_norms
from workflow_scripts.core.errors import AtlasError


@pytest.fixture(scope="module", params=["tiny_bert", "tiny_roberta"])
def sharp_model(request, tmp_path_factory):
    """A tiny model whose attention is far from uniform: the random tiny models attend almost uniformly, and
    uniform maps are symmetric and alike across heads, which would hide a transposed or mixed-up product."""
    model_dir = request.getfixturevalue(request.param)
    directory = tmp_path_factory.mktemp(f"sharp-{request.param}")
    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager")
    with torch.no_grad():
        for layer in model.encoder.layer:
            layer.attention.self.query.weight *= 10  # the largest weight per row rises from about 1/T to about 0.3
            layer.attention.self.key.weight *= 10
    model.save_pretrained(directory)
    AutoTokenizer.from_pretrained(model_dir).save_pretrained(directory)
    return directory


def _encoded(tokenizer, example_id, pairs):
    text_b = list(reversed(SENTENCES))[example_id] if pairs else None
    return tokenizer(SENTENCES[example_id], text_b, return_tensors="pt")


def _close_in_float16(stored, direct):
    """Equal up to float16 rounding (half a unit in the last place) and the float32 sums behind it."""
    scale = float(np.abs(direct).max())
    np.testing.assert_allclose(stored.astype(np.float32), direct, rtol=2e-3, atol=1e-4 * scale)


def direct_norm(model, encoded):
    """N[l, h, i, j] = alpha[l, h, i, j] * ||(x_j W_V^h + b_V^h) W_O^h||, from the model's own modules, head by head."""
    with torch.no_grad():
        outputs = model(**encoded, output_attentions=True, output_hidden_states=True)
        layers = []
        for index, layer in enumerate(model.encoder.layer):
            heads = model.config.num_attention_heads
            width = model.config.hidden_size // heads
            values = layer.attention.self.value(outputs.hidden_states[index])[0]  # the layer's input, (T, hidden)
            output = layer.attention.output.dense.weight
            maps = []
            for head in range(heads):
                columns = slice(head * width, (head + 1) * width)
                transformed = values[:, columns] @ output[:, columns].T  # (T, hidden): no output bias
                maps.append(outputs.attentions[index][0, head] * transformed.norm(dim=-1)[None, :])
            layers.append(torch.stack(maps))
    return torch.stack(layers).numpy()


def test_norm_maps_equal_alpha_times_the_transformed_value_norm(tmp_path, sharp_model):
    model_dir = sharp_model
    _, _, out, summary, _ = _dump(tmp_path, model_dir, pairs=True, signal="norm")
    assert summary["signal"] == "norm"
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    stored = {example.example_id: example.attention
              for example in AttentionDump(out, normalise_rows=False).iter_examples()}
    assert sorted(stored) == list(range(len(SENTENCES)))
    normalised = AttentionDump(out)  # a norm dump is read row-normalised unless asked otherwise
    assert normalised.signal == "norm" and normalised.normalise_rows
    for example in normalised.iter_examples():
        direct = direct_norm(model, _encoded(tokenizer, example.example_id, pairs=True))
        _close_in_float16(stored[example.example_id], direct)
        assert not np.allclose(direct.sum(-1), 1.0, atol=1e-2), "norm rows are no distributions"
        assert example.attention.dtype == np.float16
        np.testing.assert_allclose(example.attention.astype(np.float32).sum(-1), 1.0, atol=3e-3)
        _close_in_float16(example.attention, direct / direct.sum(-1, keepdims=True))


def test_rollout_is_the_product_of_residual_attention_per_head_and_its_head_mean_the_layer_rollout(tmp_path,
                                                                                                     sharp_model):
    for folder in ("attention", "rollout"):
        (tmp_path / folder).mkdir()
    _, _, weights, _, _ = _dump(tmp_path / "attention", sharp_model, pairs=True)
    _, _, out, summary, _ = _dump(tmp_path / "rollout", sharp_model, pairs=True, signal="rollout")
    attention = {example.example_id: example.attention.astype(np.float64)
                 for example in AttentionDump(weights).iter_examples()}
    dump = AttentionDump(out)
    assert summary["signal"] == dump.signal == "rollout" and not dump.normalise_rows
    for example in dump.iter_examples():
        maps = attention.pop(example.example_id)
        identity = np.eye(example.n_tokens)
        layer_rollout = identity  # R_0 = I
        for layer in range(dump.num_layers):
            per_head = (0.5 * maps[layer] + 0.5 * identity) @ layer_rollout  # R_{l,h} = (0.5 A + 0.5 I) R_{l-1}
            layer_rollout = (0.5 * maps[layer].mean(0) + 0.5 * identity) @ layer_rollout  # R_l = Ã_l R_{l-1}
            stored = example.attention[layer].astype(np.float64)
            np.testing.assert_allclose(stored, per_head, atol=2e-3)
            np.testing.assert_allclose(stored.mean(0), layer_rollout, atol=2e-3)
        np.testing.assert_allclose(example.attention.astype(np.float32).sum(-1), 1.0, atol=3e-3)
    assert not attention


def test_the_attention_signal_is_todays_float16_weights_bit_for_bit(tiny_bert):
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    model = AutoModel.from_pretrained(tiny_bert, attn_implementation=attn_implementation_for("eager", "attention"))
    encoded = tokenizer(SENTENCES[:3], padding=True, return_tensors="pt")
    maps, signal_seconds = SignalMaps(model.eval(), "attention")(encoded["input_ids"], encoded["attention_mask"],
                                                                 None)
    with torch.no_grad():
        weights = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"],
                        output_attentions=True).attentions
    assert signal_seconds == 0.0
    assert torch.equal(maps, torch.stack(weights, 1).to(torch.float16))


@pytest.mark.parametrize("implementation", ["eager", "fused"])
@pytest.mark.parametrize("signal", ["norm", "rollout"])
def test_a_padded_batch_gives_each_example_its_maps_alone(sharp_model, signal, implementation):
    tokenizer = AutoTokenizer.from_pretrained(sharp_model)
    model = AutoModel.from_pretrained(sharp_model, attn_implementation=attn_implementation_for(implementation,
                                                                                              signal))
    signal_maps = SignalMaps(model.eval(), signal)
    texts = [SENTENCES[2], SENTENCES[6], SENTENCES[0]]  # a long, a short and a middling one: two padded
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    together, _ = signal_maps(batch["input_ids"], batch["attention_mask"], None)
    config = model.config
    assert together.dtype == torch.float16
    assert together.shape[:3] == (3, config.num_hidden_layers, config.num_attention_heads)
    for row, text in enumerate(texts):
        alone = tokenizer(text, return_tensors="pt")
        maps, _ = signal_maps(alone["input_ids"], alone["attention_mask"], None)
        n = maps.shape[-1]
        assert int(batch["attention_mask"][row].sum()) == n
        _close_in_float16(together[row, :, :, :n, :n].numpy(), maps[0].float().numpy())


def test_norm_refuses_a_model_loaded_without_recording_its_value_vectors(tiny_bert):
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    model = AutoModel.from_pretrained(tiny_bert, attn_implementation="eager").eval()  # not attn_implementation_for
    encoded = tokenizer(SENTENCES[:2], padding=True, return_tensors="pt")
    with pytest.raises(AtlasError, match=r"layers \[0, 1\] passed no value vectors.*attn_implementation_for"):
        SignalMaps(model, "norm")(encoded["input_ids"], encoded["attention_mask"], None)


def test_norm_with_fused_capture_equals_norm_with_eager(tiny_roberta):
    tokenizer = AutoTokenizer.from_pretrained(tiny_roberta)
    encoded = tokenizer(SENTENCES[:4], padding=True, return_tensors="pt")
    maps = {}
    for implementation in ("eager", "fused"):
        model = AutoModel.from_pretrained(tiny_roberta, attn_implementation=attn_implementation_for(implementation,
                                                                                                    "norm"))
        maps[implementation], _ = SignalMaps(model.eval(), "norm")(encoded["input_ids"], encoded["attention_mask"],
                                                                   None)
    _close_in_float16(maps["fused"].numpy(), maps["eager"].float().numpy())


def test_norm_of_distilbert_uses_its_out_lin(tmp_path):
    from transformers import DistilBertConfig, DistilBertModel

    torch.manual_seed(0)
    DistilBertModel(DistilBertConfig(vocab_size=50, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                     max_position_embeddings=32)).save_pretrained(tmp_path)
    model = AutoModel.from_pretrained(tmp_path, attn_implementation=attn_implementation_for("eager", "norm")).eval()
    input_ids = torch.randint(5, 50, (1, 7))
    maps, _ = SignalMaps(model, "norm")(input_ids, torch.ones_like(input_ids), None)
    with torch.no_grad():
        outputs = model(input_ids=input_ids, output_attentions=True, output_hidden_states=True)
        for index, layer in enumerate(model.transformer.layer):
            values = layer.attention.v_lin(outputs.hidden_states[index])[0].view(7, 4, 8)
            weight = layer.attention.out_lin.weight.view(32, 4, 8)
            norms = torch.stack([(values[:, head] @ weight[:, head].T).norm(dim=-1) for head in range(4)])
            direct = outputs.attentions[index][0] * norms[:, None, :]
            _close_in_float16(maps[0, index].numpy(), direct.numpy())


def test_grouped_query_value_heads_serve_each_of_their_query_heads():
    torch.manual_seed(0)
    value = torch.randn(2, 2, 5, 4)  # two value heads, each serving two query heads
    gram = torch.randn(4, 4, 4)
    gram = gram @ gram.transpose(1, 2)  # a Gram matrix per query head: positive semi-definite
    repeated = value.repeat_interleave(2, dim=1)
    expected = torch.einsum("bhtd,hde,bhte->bht", repeated, gram, repeated).sqrt()
    torch.testing.assert_close(projected_value_norms(value, gram, groups=2), expected)


def test_a_family_without_a_known_output_projection_is_refused_by_name(tmp_path, tiny_bert):
    from transformers import AlbertConfig, AlbertModel

    albert = tmp_path / "tiny-albert"
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    AlbertModel(AlbertConfig(vocab_size=len(tokenizer), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                             num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
                ).save_pretrained(albert)
    tokenizer.save_pretrained(albert)
    with pytest.raises(AtlasError, match=r"model type 'albert': attention signal 'norm' acts inside each layer's "
                                         r"attention, which this workflow knows for model types bert, camembert, .*"
                                         r"Remove norm from attention.signals"):
        _dump(tmp_path, albert, pairs=False, signal="norm")
    _, _, out, summary, _ = _dump(tmp_path, albert, pairs=False, signal="rollout")  # rollout needs the weights only
    assert summary["signal"] == "rollout"


def test_an_unknown_signal_is_refused(tiny_bert):
    with pytest.raises(AtlasError, match=r"unknown attention signal 'grad'.*attention, norm, rollout"):
        attn_implementation_for("eager", "grad")


@pytest.mark.parametrize("signal", ["attention", "norm", "rollout"])
def test_the_manifest_records_and_footers_name_the_signal(tmp_path, tiny_bert, signal):
    _, _, out, summary, _ = _dump(tmp_path, tiny_bert, pairs=False, signal=signal)
    assert summary["signal"] == signal == json.loads((out / "manifest.json").read_text())["signal"]
    # norm and rollout's math after the forward pass is timed apart (rounded to ms: 0 on tiny models too).
    assert "signal computation" in summary["timings"]
    if signal == "attention":
        assert summary["timings"]["signal computation"] == 0.0
    for name in shard_names(3):
        assert json.loads(shard_record_path(out, name).read_text())["signal"] == signal
        assert pq.read_schema(out / name).metadata[b"atlas.signal"] == signal.encode()


def test_records_and_manifests_without_a_signal_are_attention(tmp_path, tiny_bert):
    """Dumps written before signals: their records and manifests have no "signal" key."""
    _, _, out, _, _ = _dump(tmp_path, tiny_bert, pairs=False)
    for name in shard_names(3):
        path = shard_record_path(out, name)
        record = json.loads(path.read_text())
        del record["signal"], record["record_sha256"]  # written before signals, and seals
        path.write_text(json.dumps(record))
    manifest = gather_manifest(out, 3)
    assert manifest["signal"] == "attention"
    del manifest["signal"], manifest["record_sha256"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    dump = AttentionDump(out)
    assert dump.signal == "attention" and not dump.normalise_rows
    assert len(list(dump.iter_examples())) == len(SENTENCES)


def test_shards_of_different_signals_do_not_gather_into_one_dump(tmp_path, tiny_bert):
    _, token_path, out, _, _ = _dump(tmp_path, tiny_bert, pairs=False)
    extract_shard(tmp_path / "ckpt" / "checkpoint.json", token_path, out, index=1, n_shards=3, batch_size=3,
                  max_batch_tokens=10_000, device="cpu", threads=1, offline=False, compression="lz4",
                  implementation="eager", signal="rollout")
    with pytest.raises(AtlasError, match=r"other signal.*'rollout' vs 'attention'"):
        gather_manifest(out, 3)


def test_row_normalisation_keeps_zero_rows_zero():
    maps = np.array([[[[0.0, 0.0], [1.0, 3.0]]]], dtype=np.float16)
    np.testing.assert_array_equal(normalised_rows(maps), np.array([[[[0.0, 0.0], [0.25, 0.75]]]], np.float16))


def test_any_dump_reads_raw_or_row_normalised_on_request(tmp_path, tiny_bert):
    _, _, out, _, _ = _dump(tmp_path, tiny_bert, pairs=False, n_shards=1, signal="rollout")
    raw = {example.example_id: example.attention for example in AttentionDump(out).iter_examples()}
    for example in AttentionDump(out, normalise_rows=True).iter_examples():
        np.testing.assert_array_equal(example.attention, normalised_rows(raw.pop(example.example_id)))
    assert not raw


# llama: two query heads per value head (support/tiny_models.tiny_config)
@pytest.mark.parametrize("model_type", ["gpt2", "gpt_neox", "llama"])
def test_norm_of_each_decoder_family_is_alpha_times_its_projected_value_norm(tmp_path, model_type):
    # GPT-2 keeps W_O in a Conv1D (in, out), GPT-NeoX fuses q, k and v, Llama's value heads serve groups of query
    # heads: the value vectors and W_O are taken here from each model's own modules, head by head.
    torch.manual_seed(0)
    AutoModel.from_config(tiny_config(model_type)).save_pretrained(tmp_path)
    model = AutoModel.from_pretrained(tmp_path, attn_implementation=attn_implementation_for("eager", "norm")).eval()
    input_ids = torch.randint(1, 50, (1, 7))
    maps, _ = SignalMaps(model, "norm")(input_ids, torch.ones_like(input_ids), None)
    heads, width = 4, 8
    with torch.no_grad():
        outputs = model(input_ids=input_ids, output_attentions=True, output_hidden_states=True)
        for index in range(2):
            hidden = outputs.hidden_states[index]
            if model_type == "gpt2":
                block = model.h[index]
                values = block.attn.c_attn(block.ln_1(hidden))[0].split(32, dim=-1)[2].view(7, heads, width)
                weight = block.attn.c_proj.weight.T  # Conv1D: x @ W, W of shape (in, out)
            elif model_type == "gpt_neox":
                layer = model.layers[index]
                fused = layer.attention.query_key_value(layer.input_layernorm(hidden))[0].view(7, heads, 3 * width)
                values = fused[..., 2 * width:]
                weight = layer.attention.dense.weight
            else:
                layer = model.layers[index]
                grouped = layer.self_attn.v_proj(layer.input_layernorm(hidden))[0].view(7, 2, width)
                values = grouped.repeat_interleave(2, dim=1)  # query heads 0, 1 read value head 0; 2, 3 value head 1
                weight = layer.self_attn.o_proj.weight
            per_head = weight.view(32, heads, width)
            norms = torch.stack([(values[:, h] @ per_head[:, h].T).norm(dim=-1) for h in range(heads)])
            direct = outputs.attentions[index][0] * norms[:, None, :]
            _close_in_float16(maps[0, index].numpy(), direct.numpy())
            assert np.all(np.triu(maps[0, index].numpy(), 1) == 0), "a decoder's maps are causal"
