"""A model's shape in one record (workflow_scripts/models/shape.py): the same numbers whatever a model type calls its
keys, the same record from a config.json as from the recorded configs, and parameters counted exactly from
safetensors headers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workflow_scripts.models.known_configs import KNOWN_CONFIGS, RECORDED
from workflow_scripts.models.model_config import find_config
from workflow_scripts.models.shape import ModelShape, parameter_count, weight_shapes

# Each model type's own key names, with (layers, heads, kv heads, hidden, intermediate, vocab, max positions).
CONFIGS = {
    "bert": ({"model_type": "bert", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 32,
              "intermediate_size": 37, "vocab_size": 99, "max_position_embeddings": 64},
             (2, 4, 4, 32, 37, 99, 64)),
    "roberta": ({"model_type": "roberta", "num_hidden_layers": 3, "num_attention_heads": 2, "hidden_size": 16,
                 "intermediate_size": 40, "vocab_size": 50, "max_position_embeddings": 66},
                (3, 2, 2, 16, 40, 50, 66)),
    "distilbert": ({"model_type": "distilbert", "n_layers": 3, "n_heads": 4, "dim": 32, "hidden_dim": 37,
                    "vocab_size": 99, "max_position_embeddings": 64},
                   (3, 4, 4, 32, 37, 99, 64)),
    # n_inner null: 4 x n_embd, GPT-2's default.
    "gpt2": ({"model_type": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 32, "n_inner": None, "vocab_size": 99,
              "n_positions": 64, "architectures": ["GPT2LMHeadModel"]},
             (2, 4, 4, 32, 128, 99, 64)),
    "gpt_neox": ({"model_type": "gpt_neox", "num_hidden_layers": 6, "num_attention_heads": 8, "hidden_size": 512,
                  "intermediate_size": 2048, "vocab_size": 50304, "max_position_embeddings": 2048},
                 (6, 8, 8, 512, 2048, 50304, 2048)),
    "llama": ({"model_type": "llama", "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
               "hidden_size": 2048, "intermediate_size": 8192, "vocab_size": 128256,
               "max_position_embeddings": 131072},
              (16, 32, 8, 2048, 8192, 128256, 131072)),
    "opt": ({"model_type": "opt", "num_hidden_layers": 12, "num_attention_heads": 12, "hidden_size": 768,
             "ffn_dim": 3072, "vocab_size": 50272, "max_position_embeddings": 2048},
            (12, 12, 12, 768, 3072, 50272, 2048)),
    # An encoder-decoder: the encoder's layers (num_layers; the decoder's are num_decoder_layers).
    "t5": ({"model_type": "t5", "num_layers": 6, "num_decoder_layers": 4, "num_heads": 8, "d_model": 512,
            "d_ff": 2048, "vocab_size": 32128, "n_positions": 512},
           (6, 8, 8, 512, 2048, 32128, 512)),
}


def _numbers(shape: ModelShape) -> tuple:
    return (shape.layers, shape.heads, shape.kv_heads, shape.hidden, shape.intermediate, shape.vocab,
            shape.max_positions)


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_every_model_types_key_names_give_the_same_numbers(model_type):
    config, expected = CONFIGS[model_type]
    shape = ModelShape.from_config(config)
    assert (shape.model_type, _numbers(shape), shape.source) == (model_type, expected, "config.json")
    assert shape.layers_heads == expected[:2]


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_a_transformers_config_gives_the_numbers_of_its_own_attribute_names(model_type):
    from transformers import AutoConfig

    keys = dict(CONFIGS[model_type][0])
    config = AutoConfig.for_model(keys.pop("model_type"), **keys)
    shape = ModelShape.from_config(config)  # read from config.to_dict(), no attribute of transformers'
    assert (shape.layers, shape.heads, shape.hidden, shape.vocab) == (
        config.num_hidden_layers, config.num_attention_heads, config.hidden_size, config.vocab_size)


def test_a_t5_record_gives_its_layer_count(monkeypatch):
    monkeypatch.setitem(KNOWN_CONFIGS, "google-t5/t5-small", CONFIGS["t5"][0])
    shape = find_config("t5", {"hub": "google-t5/t5-small"}).shape()
    assert (shape.layers_heads, shape.source) == ((6, 8), RECORDED)
    assert not find_config("x", {"hub": "nobody/no-such-model"}).found


def test_the_record_of_a_config_json_equals_the_recorded_one():
    # bert-base-uncased's config.json as the hub serves it: every key, not only the shape's.
    config_json = {"architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1,
                   "gradient_checkpointing": False, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                   "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
                   "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
                   "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0,
                   "position_embedding_type": "absolute", "transformers_version": "4.6.0.dev0", "type_vocab_size": 2,
                   "use_cache": True, "vocab_size": 30522}
    from_file = ModelShape.from_config(config_json)
    recorded = find_config("bert", {"hub": "google-bert/bert-base-uncased"}).shape()
    assert from_file == recorded and (from_file.source, recorded.source) == ("config.json", RECORDED)
    assert (recorded.mlm_head, recorded.causal) == (True, False)


@pytest.mark.parametrize("hub", sorted(KNOWN_CONFIGS))
def test_each_recorded_shape_is_that_of_the_transformers_config_made_from_it(hub):
    """The record's keys read as transformers reads them (its defaults for what the record leaves out)."""
    found = find_config("m", {"hub": hub})
    made, recorded = ModelShape.from_config(found.transformers_config()), found.shape()
    assert (made.layers, made.heads, made.hidden, made.vocab, made.kv_heads) == (
        recorded.layers, recorded.heads, recorded.hidden, recorded.vocab, recorded.kv_heads)
    assert made.causal == recorded.causal


def test_parameters_are_the_tensors_sizes_read_from_safetensors_headers(tmp_path):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    first = {"embeddings.weight": rng.random((7, 5), dtype=np.float32), "bias": np.zeros(5, np.float16),
             "scale": np.array(2.0, np.float32)}  # a scalar: one parameter
    second = {"layer.0.weight": rng.random((3, 4, 2)).astype(np.float32)}
    save_file(first, str(tmp_path / "model-00001-of-00002.safetensors"), metadata={"format": "pt"})
    save_file(second, str(tmp_path / "model-00002-of-00002.safetensors"))
    tensors = {**first, **second}
    assert parameter_count(tmp_path) == sum(a.size for a in tensors.values()) == 35 + 5 + 1 + 24
    assert weight_shapes(tmp_path) == {name: list(a.shape) for name, a in tensors.items()}
    assert parameter_count(tmp_path / "none") is None and weight_shapes(tmp_path) is not None
    assert math.prod(weight_shapes(tmp_path)["scale"]) == 1


def test_the_hub_is_asked_only_with_network_online_and_not_told_otherwise(monkeypatch):
    from workflow_scripts.models.shape import may_ask_hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert may_ask_hub(network=True, offline=False)
    assert not may_ask_hub(network=False, offline=False) and not may_ask_hub(network=True, offline=True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not may_ask_hub(network=True, offline=False)
