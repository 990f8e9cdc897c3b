"""Config checking, max_length against the model's position limit: local, RoBERTa-style, cached hub
models and fine-tuning settings, before any job and again in the fine-tuning job."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from support.config_checks import semantic_error, with_defaults
from support.entries import TASKS
from support.tiny_models import save_tiny_model, write_manifest
from workflow_scripts.models.cards import local_position_limit, position_limit
from workflow_scripts.study.checks import check_semantics

# --- max_length against the model's position limit ------------------------------------------------


@pytest.mark.parametrize(("model_config", "tokenizer_max", "limit"), [
    ({"model_type": "bert", "max_position_embeddings": 512}, None, 512),
    ({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1}, None, 512),
    ({"model_type": "xlm-roberta", "max_position_embeddings": 514, "pad_token_id": 1}, None, 512),
    ({"model_type": "camembert", "max_position_embeddings": 514}, None, 512),  # pad_token_id defaults to 1
    ({"model_type": "roberta", "max_position_embeddings": 66, "pad_token_id": 0}, None, 65),
    ({"model_type": "bert", "max_position_embeddings": 512}, 256, 256),
    ({"model_type": "bert", "max_position_embeddings": 512}, int(1e30), 512),  # "no limit" sentinel
    ({"model_type": "bert"}, 128, 128),
    ({"model_type": "bert"}, int(1e30), None),  # nothing says: not checked
])
def test_position_limit(model_config, tokenizer_max, limit):
    found = position_limit(model_config, tokenizer_max)
    assert (found and found[0]) == limit


def _local_model(config: dict, tmp_path: Path, model_dir: Path, **entry) -> dict:
    config["models"]["local"] = {"path": str(model_dir), **entry}
    config["study"]["models"] = ["local"]
    return with_defaults(config)


def test_max_length_above_the_limit_of_a_local_model(config, tmp_path, tiny_bert):
    config = _local_model(config, tmp_path, tiny_bert, max_length=100)
    message = semantic_error(config)
    assert ("config key 'models.local.max_length': 100 tokens is more than model 'local' accepts (64: "
            "max_position_embeddings 64; tokenizer model_max_length 64); set it to 64 or less") in message
    config["models"]["local"]["max_length"] = 64
    check_semantics(config)


def test_max_length_of_a_roberta_style_model(config, tmp_path, tiny_roberta):
    # 66 position rows, of which RoBERTa reserves pad_token_id + 1 = 2.
    assert local_position_limit("r", {"path": str(tiny_roberta)})[0] == 64
    folder = tmp_path / "roberta"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "roberta", "max_position_embeddings": 514,
                                                    "pad_token_id": 1}))
    (folder / "vocab.txt").write_text("<pad>\n")  # a tokenizer: a folder without one is refused before this check
    config = _local_model(config, tmp_path, folder, max_length=514)
    message = semantic_error(config)
    assert "config key 'models.local.max_length': 514 tokens" in message
    assert "(512: max_position_embeddings 514 minus the 2 positions roberta models reserve)" in message
    config["models"]["local"]["max_length"] = 512
    check_semantics(config)


def test_finetune_max_length_is_checked_too(config, tmp_path, tiny_bert):
    config = _local_model(config, tmp_path, tiny_bert, max_length=64)
    config["finetune"]["max_length"] = None
    check_semantics(config)
    config["finetune"]["max_length"] = 65
    config["finetune"]["per_task"] = {"rte": {"max_length": 128}, "cola": {"epochs": 2}}
    message = semantic_error(config)
    assert "config key 'finetune.max_length': 65 tokens is more than model 'local' accepts (64" in message
    assert "set it to 64 or less, or null to use 'models.local.max_length'" in message
    assert "config key 'finetune.per_task.rte.max_length': 128 tokens" in message
    assert "config key 'models.local.max_length'" not in message  # 64 fits


def test_hub_model_checked_from_the_local_cache_only(config, tmp_path, monkeypatch):
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    snapshot = cache / "models--org--tiny" / "snapshots" / ("a" * 40)
    save_tiny_model(snapshot, kind="bert")
    (cache / "models--org--tiny" / "refs").mkdir()
    (cache / "models--org--tiny" / "refs" / "main").write_text("a" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    config["models"]["cached"] = {"hub": "org/tiny", "max_length": 100}
    config["models"]["absent"] = {"hub": "org/not-in-the-cache", "max_length": 100000}
    config["study"]["models"] = ["cached", "absent"]
    message = semantic_error(with_defaults(config))
    assert "config key 'models.cached.max_length': 100 tokens is more than model 'cached' accepts (64" in message
    assert "absent" not in message  # not in the cache: checked when its fine-tuning job loads it
    config["models"]["cached"]["revision"] = "b" * 40  # a revision the cache does not hold: not checked
    check_semantics(config)


def test_finetune_job_checks_max_length_before_training(tmp_path, tiny_bert):
    from workflow_scripts.finetune.training import finetune

    rows = [{"example_id": i, "source_id": str(i), "text_a": "the cat sat on the mat", "text_b": None,
             "label": i % 2} for i in range(4)]
    for split in ("train", "dev"):
        pd.DataFrame(rows).to_parquet(tmp_path / f"{split}.parquet", index=False)
    manifest = write_manifest(tmp_path / "checkpoints" / "tiny" / "pretrained", tiny_bert)
    settings = {"epochs": 1, "batch_size": 2, "learning_rate": 1e-3, "warmup_ratio": 0.0, "weight_decay": 0.0,
                "max_grad_norm": 1.0, "max_length": 100, "max_train_examples": None, "max_dev_examples": None,
                "save_steps": [], "eval_at_checkpoints": False, "device": "cpu", "group_by_length": False,
                "precision": "fp32", "method": "full", "lora_rank": 8, "lora_alpha": 16, "lora_dropout": 0.1,
                "lora_learning_rate": 3.0e-4}
    from workflow_scripts.finetune.task_data import FinetuneError

    with pytest.raises(FinetuneError) as info:
        finetune(model_name="tiny", task=TASKS["cola"], seed=1, pretrained=manifest,
                 train_path=tmp_path / "train.parquet",
                 dev_path=tmp_path / "dev.parquet", checkpoint_root=tmp_path / "out",
                 metrics_path=tmp_path / "metrics.json", settings=settings, threads=1, offline=False, mirror=None)
    message = str(info.value)
    assert "max_length: 100 tokens is more than model 'tiny' accepts (64" in message
    assert "give at most 64" in message
    assert not (tmp_path / "out").exists() and not (tmp_path / "metrics.json").exists()


# --- the norm signal needs the model's family --------------------------------------------------------


def test_norm_on_a_model_whose_family_is_not_declared_is_refused_before_any_job(config, tmp_path, tiny_bert):
    folder = tmp_path / "albert"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "albert", "max_position_embeddings": 512}))
    (folder / "spiece.model").write_bytes(b"")  # a tokenizer, which the config checks ask of a model folder
    config = _local_model(config, tmp_path, folder, max_length=128)
    config["attention"]["signals"] = ["attention", "norm"]
    message = semantic_error(config)
    assert ("config key 'attention.signals': 'norm' multiplies each weight by the norm of the head's projected value, "
            "which needs the attention layout of model 'local' (model type 'albert')") in message
    assert "declare its family there" in message
    config["attention"]["signals"] = ["attention", "rollout"]  # the weights alone: any model
    check_semantics(config)
    config = _local_model(config, tmp_path, tiny_bert, max_length=64)  # a declared family
    config["attention"]["signals"] = ["attention", "norm"]
    check_semantics(config)
