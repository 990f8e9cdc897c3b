"""The architecture keys of the hub models the built-in configs name (config.yaml, profiles/zoo), as each model's
config.json on the hub declares them, so that a study of them is planned (layers, heads, disk, GPU memory and
time) on a machine with no network and no weights. Only the keys that set the architecture's shape are recorded;
every other key takes transformers' default for the model type. A model's own config.json, where it is local,
always comes first: models/model_config.py finds a model's config in one order, this record third.

A revision of a model (Pythia's pretraining checkpoints) has the model's architecture: the record serves every
revision.
"""

from __future__ import annotations

from typing import Any

# Where a recorded shape comes from, as the plan prints it.
RECORDED = "the hub's config.json as models/known_configs.py records it"

_BERT_BASE = {"model_type": "bert", "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
              "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 512,
              "architectures": ["BertForMaskedLM"]}
_GPT2 = {"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024}
_PYTHIA = {"model_type": "gpt_neox", "vocab_size": 50304, "max_position_embeddings": 2048, "rotary_pct": 0.25,
           "use_parallel_residual": True, "tie_word_embeddings": False}
_LLAMA_32 = {"model_type": "llama", "vocab_size": 128256, "intermediate_size": 8192, "num_key_value_heads": 8,
             "max_position_embeddings": 131072, "tie_word_embeddings": True, "rope_theta": 500000.0}
_QWEN25 = {"model_type": "qwen2", "vocab_size": 151936, "max_position_embeddings": 32768,
           "tie_word_embeddings": True}


def _with(base: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {**base, **keys}


KNOWN_CONFIGS: dict[str, dict[str, Any]] = {
    "google-bert/bert-base-uncased": _BERT_BASE,
    "bert-base-uncased": _BERT_BASE,
    "google-bert/bert-base-cased": _with(_BERT_BASE, vocab_size=28996),
    "bert-base-cased": _with(_BERT_BASE, vocab_size=28996),
    "google-bert/bert-large-uncased": _with(_BERT_BASE, hidden_size=1024, num_hidden_layers=24,
                                           num_attention_heads=16, intermediate_size=4096),
    "sentence-transformers/all-MiniLM-L6-v2": {"model_type": "bert", "vocab_size": 30522, "hidden_size": 384,
                                               "num_hidden_layers": 6, "num_attention_heads": 12,
                                               "intermediate_size": 1536, "max_position_embeddings": 512},
    "FacebookAI/roberta-base": {"model_type": "roberta", "vocab_size": 50265, "hidden_size": 768,
                                "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
                                "max_position_embeddings": 514, "type_vocab_size": 1, "pad_token_id": 1},
    "google/electra-base-discriminator": {"model_type": "electra", "vocab_size": 30522, "embedding_size": 768,
                                          "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                                          "intermediate_size": 3072, "max_position_embeddings": 512},
    "microsoft/deberta-v3-base": {"model_type": "deberta-v2", "vocab_size": 128100, "hidden_size": 768,
                                  "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
                                  "max_position_embeddings": 512, "relative_attention": True,
                                  "position_buckets": 256, "pos_att_type": ["p2c", "c2p"], "type_vocab_size": 0,
                                  "position_biased_input": False, "max_relative_positions": -1,
                                  "norm_rel_ebd": "layer_norm", "share_att_key": True},
    "answerdotai/ModernBERT-base": {"model_type": "modernbert", "vocab_size": 50368, "hidden_size": 768,
                                    "num_hidden_layers": 22, "num_attention_heads": 12, "intermediate_size": 1152,
                                    "max_position_embeddings": 8192},
    "openai-community/gpt2": _with(_GPT2, n_embd=768, n_layer=12, n_head=12),
    "openai-community/gpt2-medium": _with(_GPT2, n_embd=1024, n_layer=24, n_head=16),
    "openai-community/gpt2-large": _with(_GPT2, n_embd=1280, n_layer=36, n_head=20),
    "openai-community/gpt2-xl": _with(_GPT2, n_embd=1600, n_layer=48, n_head=25),
    "EleutherAI/pythia-70m": _with(_PYTHIA, hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                                   intermediate_size=2048),
    "EleutherAI/pythia-160m": _with(_PYTHIA, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                    intermediate_size=3072),
    "EleutherAI/pythia-410m": _with(_PYTHIA, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                    intermediate_size=4096),
    "EleutherAI/pythia-1.4b": _with(_PYTHIA, hidden_size=2048, num_hidden_layers=24, num_attention_heads=16,
                                    intermediate_size=8192),
    "EleutherAI/pythia-6.9b": _with(_PYTHIA, vocab_size=50432, hidden_size=4096, num_hidden_layers=32,
                                    num_attention_heads=32, intermediate_size=16384),
    "facebook/opt-125m": {"model_type": "opt", "vocab_size": 50272, "hidden_size": 768, "num_hidden_layers": 12,
                          "num_attention_heads": 12, "ffn_dim": 3072, "max_position_embeddings": 2048,
                          "word_embed_proj_dim": 768, "do_layer_norm_before": True},
    "facebook/opt-1.3b": {"model_type": "opt", "vocab_size": 50272, "hidden_size": 2048, "num_hidden_layers": 24,
                          "num_attention_heads": 32, "ffn_dim": 8192, "max_position_embeddings": 2048,
                          "word_embed_proj_dim": 2048, "do_layer_norm_before": True},
    "meta-llama/Llama-3.2-1B": _with(_LLAMA_32, hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                                     head_dim=64),
    "meta-llama/Llama-3.2-3B": _with(_LLAMA_32, hidden_size=3072, num_hidden_layers=28, num_attention_heads=24,
                                     head_dim=128),
    "meta-llama/Meta-Llama-3-8B": {"model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
                                   "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                                   "intermediate_size": 14336, "max_position_embeddings": 8192,
                                   "tie_word_embeddings": False, "rope_theta": 500000.0},
    "Qwen/Qwen2.5-0.5B": _with(_QWEN25, hidden_size=896, num_hidden_layers=24, num_attention_heads=14,
                               num_key_value_heads=2, intermediate_size=4864),
    "Qwen/Qwen2.5-1.5B": _with(_QWEN25, hidden_size=1536, num_hidden_layers=28, num_attention_heads=12,
                               num_key_value_heads=2, intermediate_size=8960),
    "Qwen/Qwen2.5-3B": _with(_QWEN25, hidden_size=2048, num_hidden_layers=36, num_attention_heads=16,
                             num_key_value_heads=2, intermediate_size=11008),
    "Qwen/Qwen2.5-7B": _with(_QWEN25, vocab_size=152064, hidden_size=3584, num_hidden_layers=28,
                             num_attention_heads=28, num_key_value_heads=4, intermediate_size=18944,
                             max_position_embeddings=131072, tie_word_embeddings=False),
    "mistralai/Mistral-7B-v0.1": {"model_type": "mistral", "vocab_size": 32000, "hidden_size": 4096,
                                  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                                  "intermediate_size": 14336, "max_position_embeddings": 32768,
                                  "tie_word_embeddings": False},
}
