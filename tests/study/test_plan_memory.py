"""GPU memory estimates (study/estimates/memory.py): checked against the tensors a tiny model's jobs hold (no GPU here),
and the refusal of a study whose job exceeds gpu_memory_gb, on a real model's recorded config."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, BertConfig

from support.study_configs import study_of
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.study.estimates.memory import (
    FULL_FINETUNE_BYTES,
    classifier_parameters,
    extraction_estimate,
    finetune_estimate,
    shape_of,
)

TINY = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=64)


def tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def test_full_fine_tuning_holds_16_bytes_per_parameter():
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(TINY)
    optimizer = torch.optim.AdamW(model.parameters())
    ids = torch.randint(0, 100, (2, 8))
    model(input_ids=ids, labels=torch.tensor([0, 1])).loss.backward()
    optimizer.step()
    held = (tensor_bytes(model.parameters()) + tensor_bytes(p.grad for p in model.parameters())
            + tensor_bytes(v for state in optimizer.state.values() for k, v in state.items() if k != "step"))
    shape = shape_of(TINY)
    classifier_head = 32 * 2 + 2  # the classifier on top of the base model the shape counts
    assert shape.parameters + classifier_head == sum(p.numel() for p in model.parameters())
    assert held == FULL_FINETUNE_BYTES * (shape.parameters + classifier_head)
    estimate = finetune_estimate("tiny", "sst2", shape, {"max_length": 8, "batch_size": 2, "method": "full",
                                                         "precision": "fp32", "lora_rank": 8})
    assert estimate.parts["weights, gradients, AdamW states"] == FULL_FINETUNE_BYTES * shape.parameters


def test_lora_trains_the_parameters_the_estimate_counts():
    from peft import LoraConfig, TaskType, get_peft_model

    model = AutoModelForSequenceClassification.from_config(TINY)
    wrapped = get_peft_model(model, LoraConfig(task_type=TaskType.SEQ_CLS, r=4, target_modules=["query", "value"]))
    lora = sum(p.numel() for n, p in wrapped.named_parameters() if p.requires_grad and "lora_" in n)
    assert lora == shape_of(TINY).lora_parameters_per_rank * 4 == 3 * 2 * 4 * (32 + 32)
    trained_head = sum(p.numel() for n, p in wrapped.named_parameters() if p.requires_grad and "lora_" not in n)
    # The classifier: an upper bound (BERT's pooler stays frozen).
    assert trained_head <= classifier_parameters(shape_of(TINY))


def test_extraction_counts_the_maps_the_model_returns():
    from transformers import AutoModel

    model = AutoModel.from_config(TINY, attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(input_ids=torch.randint(0, 100, (4, 16)), output_attentions=True)
    estimate = extraction_estimate("tiny", shape_of(TINY), {"batch_size": 4, "max_batch_tokens": 64}, 16, "float32")
    returned = tensor_bytes(out.attentions)
    assert estimate.parts["attention maps"] == returned + returned // 2  # and their float16 copy
    assert estimate.parts["weights"] == tensor_bytes(model.parameters())


def test_an_8b_decoders_full_fine_tuning_is_refused_on_80_gb_and_its_lora_accepted():
    llama = {"models": {"llama-3-8b": {"hub": "meta-llama/Meta-Llama-3-8B", "max_length": 128}},
             "study": {"models": ["llama-3-8b"], "tasks": ["sst2"]}, "gpu_memory_gb": 80,
             "finetune": {"device": "cuda"}}
    with pytest.raises(ConfigError, match=r"job finetune_sst2 of model 'llama-3-8b' needs about 163.5 GB "
                                          r"\(weights, gradients, AdamW states 120.1 GB, activations 41.9 GB.*more "
                                          r"than gpu_memory_gb 80; fixes: finetune.method: lora \(about 73.7 GB\)"):
        study_of(llama)
    study = study_of({**llama, "finetune": {"device": "cuda", "method": "lora", "precision": "bf16"}})
    assert study.config["finetune"]["method"] == "lora"
    # 7.50e9 base parameters (AutoModel, as Meta's config declares it): 30.0 GB of float32 weights.
    assert shape_of(AutoConfig.for_model("llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                                         num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                                         tie_word_embeddings=False)).parameters == 7_504_924_672


def test_the_zoo_fits_its_gpu_by_the_plans_own_arithmetic():
    """profiles/zoo: every model's shape is known without network or weights, and every GPU job fits 80 GB."""
    from support.paths import REPO
    from workflow_scripts.study.checks import resolve_config
    from workflow_scripts.study.estimates.memory import GB, memory_summary

    config = resolve_config([REPO / "profiles" / "zoo" / "study.yaml"], ["mirror=null"])
    summary = memory_summary(config)
    assert summary["unknown"] == [] and len(summary["models"]) == 27  # Pythia-160m at three steps
    largest = max(job["bytes"] for model in summary["models"].values() for job in model["jobs"].values())
    assert summary["limit_gb"] == 80 and 40 * GB < largest < 80 * GB
    assert summary["models"]["llama-3-8b"]["parameters"] == 7_504_924_672


def test_a_model_whose_memory_is_not_estimated_says_why(tmp_path):
    import json

    from workflow_scripts.study.estimates.memory import memory_lines, model_config

    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": 2, "hidden_size": 8}))
    config, why = model_config("odd", {"path": str(tmp_path), "max_length": 32})
    assert config is None and why.startswith(f"{tmp_path / 'config.json'} names no model_type: give it")
    config, why = model_config("nowhere", {"hub": "someone/unrecorded-model", "max_length": 32})
    assert config is None and why == ("no config.json of someone/unrecorded-model in the hub cache, and the hub is not "
                                      "asked here (offline, --no-network, or a check before any job)")
    (tmp_path / "config.json").write_text(TINY.to_json_string())
    config, why = model_config("tiny", {"path": str(tmp_path), "max_length": 32})
    assert config.num_hidden_layers == 3 and why == "its config.json"
    lines = memory_lines({"limit_gb": None, "models": {}, "unknown": ["odd (its reason)"]})
    assert lines[-1] == "  not estimated: odd (its reason)"
