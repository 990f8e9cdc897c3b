"""Tiny GPT-NeoX (Pythia's family) and Llama (grouped-query attention) models through the real DAG, beside the
tiny GPT-2 of test_decoder_study.py: their dumps (both signals), the head diagnostics, [C]'s dependency heads in
the causal directions, fine-tuning with last-token pooling, the fine-tuning effects ([K]'s change and pattern
classes, [L]'s lexical categories) and per-head disabling. Run to those tables only (the
whole tiny study is run on the GPT-2), so that the three families cost one study's time. Llama's token tables are
made with prepend_bos false (rules/attention.smk's bos_ rules)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from support.mirror import write_tiny_study
from support.workflow_runs import snakemake
from workflow_scripts.core.labels import CAUSAL_DIRECTIONS

pytestmark = pytest.mark.e2e
# llama: two query heads share each value head
FAMILIES = {"neox": ("gpt_neox", {}), "llama": ("llama", {"num_key_value_heads": 2})}
TABLES = ("attention_dumps", "head_diagnostics", "sink_rates", "dependency_best", "finetune_metrics",
          "head_disabling", "finetune_change", "pattern_classes", "lexical_change")


def save_decoder(folder, model_type: str, tokenizer_dir, extra: dict):
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    config = AutoConfig.for_model(model_type, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, vocab_size=len(tokenizer), max_position_embeddings=64,
                                  bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, **extra)
    AutoModel.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_roberta):
    models = {name: save_decoder(tmp_path_factory.mktemp(name), model_type, tiny_roberta, extra)
              for name, (model_type, extra) in FAMILIES.items()}
    work = write_tiny_study(tmp_path_factory.mktemp("decoder-families"), models["neox"])
    config = yaml.safe_load((work / "tiny.yaml").read_text())
    config["models"] = {name: {"path": str(folder), "max_length": 32} for name, folder in models.items()}
    # Both tokenizers put <s> first (the tiny RoBERTa's): Llama's token tables are made without it.
    config["models"]["llama"]["prepend_bos"] = False
    config["study"]["models"] = list(models)
    config["attention"]["corpora"] = {"wiki": ["segments"], "ewt": ["train", "dev"]}
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(work, *(f"results/tables/{name}.csv" for name in TABLES))
    assert result.returncode == 0, result.stderr[-6000:]
    return work / "results" / "tables"


def test_neox_and_llama_dump_both_signals_as_causal_maps(built):
    dumps = pd.read_csv(built / "attention_dumps.csv")
    assert set(dumps["model"] + ":" + dumps["signal"]) == {"neox:attention", "neox@norm:norm",
                                                           "llama:attention", "llama@norm:norm"}
    for model in ("neox", "llama"):
        manifest = json.loads((built.parent / "attention" / model / "pretrained" / "wiki" / "segments" /
                               "manifest.json").read_text())
        assert manifest["layout"] == "lower_triangle", model


def test_a_model_set_to_prepend_no_bos_has_token_tables_without_it(built):
    import pyarrow.parquet as pq

    for model, first in (("neox", "<s>"), ("llama", None)):
        tokens = pq.read_table(built.parent / "tokens" / model / "ewt" / "dev.parquet").to_pandas()
        starts = tokens.groupby("example_id")["token"].first()
        assert (starts == "<s>").all() if first else (starts != "<s>").all(), model
        assert (tokens["token"] == "</s>").groupby(tokens["example_id"]).sum().eq(1).all()  # the end stays


def test_neox_and_llama_have_diagnostics_and_causal_dependency_heads(built):
    diagnostics = pd.read_csv(built / "head_diagnostics.csv")
    assert set(diagnostics["model"]) >= {"neox", "llama"}
    # each model's 2 layers x 4 heads on each input, pretrained and random-init
    per_model = diagnostics[diagnostics["model"].isin(["neox", "llama"])].groupby(["model", "checkpoint", "input"])
    assert per_model.size().eq(8).all()
    assert diagnostics["first_token"].between(0, 1).all()
    best = pd.read_csv(built / "dependency_best.csv")
    for model in ("neox", "llama", "neox@norm", "llama@norm"):
        assert set(best.loc[best["model"] == model, "direction"]) == set(CAUSAL_DIRECTIONS), model


def test_neox_and_llama_are_fine_tuned_and_each_head_disabled(built):
    metrics = pd.read_csv(built / "finetune_metrics.csv")
    assert set(metrics["model"]) == {"neox", "llama"} and set(metrics["task"]) == {"cola"}
    disabling = pd.read_csv(built / "head_disabling.csv")
    assert disabling.groupby("model").size().to_dict() == {"llama": 8, "neox": 8}
    assert disabling["score"].notna().all()


def test_neox_and_llama_have_the_fine_tuning_effects(built):
    change = pd.read_csv(built / "finetune_change.csv")
    finetuned = change[change["kind"] == "finetuned"]
    # one cosine per head, for both signals
    assert finetuned.groupby("model").size().to_dict() == {"llama": 8, "llama@norm": 8, "neox": 8, "neox@norm": 8}
    assert finetuned["cosine"].between(-1 - 1e-6, 1 + 1e-6).all()  # float32: a head barely changed is 1 +- 1e-7
    classes = pd.read_csv(built / "pattern_classes.csv")
    assert {"neox", "llama"} <= set(classes["model"])
    for model, part in classes[classes["classifier"] == "rule"].groupby(["model", "checkpoint"]):
        assert part["share"].sum() == pytest.approx(1.0, abs=1e-6), model  # every map in one class
    lexical = pd.read_csv(built / "lexical_change.csv")
    assert {"neox", "llama"} <= set(lexical["model"]) and lexical["difference"].notna().all()
