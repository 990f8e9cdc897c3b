"""A zoo of five tiny models of five families through the real DAG, fine-tuned by LoRA: GPT-NeoX (Pythia's family)
and Llama (grouped-query attention) with random weights, OPT, a RoBERTa encoder, and a GPT-2 whose heads are set by
hand (support/induction_gpt2.py: a previous-token head in layer 0, an induction head and a sink in layer 1). Their
dumps (both signals), the head diagnostics, [C]'s dependency heads in the causal directions, fine-tuning with
last-token pooling, the fine-tuning effects ([K]'s change and pattern classes, [L]'s lexical categories), per-head
disabling, and the cross-model atlas, whose roles find the hand-set heads at the relative depth they were set. Run to
those tables only (test_decoder_study.py reads the GPT-2's through more of the stages). Llama's token tables are made
with prepend_bos false (rules/attention.smk's bos_ rules). The study is written by tests/support/decoder_families.py
and built once per run of the suite (``families_study`` of tests/conftest.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from workflow_scripts.core.labels import CAUSAL_DIRECTIONS

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def built(families_study):
    """The five-family study's tables (tests/support/decoder_families.py: ``families_study`` of tests/conftest.py)."""
    return families_study / "results" / "tables"


MODELS = ("neox", "llama", "opt", "encoder", "gpt2")
HEADS = {"neox": 8, "llama": 8, "opt": 8, "encoder": 8, "gpt2": 4}  # layers x heads


def test_every_family_dumps_both_signals_decoders_as_causal_maps(built):
    dumps = pd.read_csv(built / "attention_dumps.csv")
    assert set(dumps["model"] + ":" + dumps["signal"]) == {f"{m}:attention" for m in MODELS} | {
        f"{m}@norm:norm" for m in MODELS}
    for model in MODELS:
        manifest = json.loads((built.parent / "attention" / model / "pretrained" / "wiki" / "segments" /
                               "manifest.json").read_text())
        assert manifest["layout"] == ("full" if model == "encoder" else "lower_triangle"), model


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


def test_every_family_is_fine_tuned_by_lora_and_each_head_disabled(built):
    metrics = pd.read_csv(built / "finetune_metrics.csv")
    assert set(metrics["model"]) == set(MODELS) and set(metrics["task"]) == {"cola"}
    for model in MODELS:
        (record,) = [json.loads(p.read_text()) for p in (built.parent / "finetune" / model).glob("cola.seed*.json")]
        assert record["settings"]["method"] == "lora" and record["trained_parameters"] < record["parameters"], model
    disabling = pd.read_csv(built / "head_disabling.csv")
    assert disabling.groupby("model").size().to_dict() == HEADS
    assert disabling["score"].notna().all()


def test_every_family_has_the_fine_tuning_effects_of_its_merged_lora_checkpoint(built):
    change = pd.read_csv(built / "finetune_change.csv")
    finetuned = change[change["kind"] == "finetuned"]
    # one cosine per head, for both signals
    assert finetuned.groupby("model").size().to_dict() == {**HEADS, **{f"{m}@norm": n for m, n in HEADS.items()}}
    # float32: a head barely changed is 1 +- 1e-7. The hand-set GPT-2's heads without value weights have all-zero
    # norm maps, whose cosine is undefined.
    undefined = finetuned["cosine"].isna()
    assert set(finetuned.loc[undefined, "model"]) <= {"gpt2@norm"}
    assert finetuned.loc[~undefined, "cosine"].between(-1 - 1e-6, 1 + 1e-6).all()
    classes = pd.read_csv(built / "pattern_classes.csv")
    assert set(MODELS) <= set(classes["model"])
    for model, part in classes[classes["classifier"] == "rule"].groupby(["model", "checkpoint"]):
        assert part["share"].sum() == pytest.approx(1.0, abs=1e-6), model  # every map in one class
    lexical = pd.read_csv(built / "lexical_change.csv")
    assert set(MODELS) <= set(lexical["model"]) and lexical["difference"].notna().all()


def test_the_atlas_finds_the_hand_set_heads_at_their_depth(built):
    atlas = pd.read_csv(built / "atlas.csv")
    assert set(atlas["model"]) >= set(MODELS)
    assert set(atlas.loc[atlas["model"] == "llama", "family"]) == {"llama"}
    assert set(atlas.loc[atlas["model"] == "encoder", "family"]) == {"roberta"}
    gpt2 = atlas[(atlas["model"] == "gpt2") & (atlas["checkpoint"] == "pretrained")]
    for role, layer, head in (("previous_token", 0, 0), ("induction", 1, 0), ("sink", 1, 1)):
        best = gpt2[gpt2["role"] == role].sort_values("score", ascending=False).iloc[0]
        # the head it was set in, at its layer's relative depth, far above its random-init control
        assert (best["layer"], best["head"]) == (layer, head), role
        assert best["relative_depth"] == pytest.approx((layer + 0.5) / 2), role
        assert best["score"] > 0.8 and best["score"] > best["random_score"] + 0.5, role
    assert {"sink", "previous_token", "induction", "dependency", "causal_importance"} <= set(atlas["role"])
    assert (built.parent / "figures" / "report" / "atlas.png").stat().st_size > 10_000  # the cross-model figure


def test_each_model_s_norm_signal_is_a_subject_of_its_own_paired_with_its_attention(built):
    # The norm signal's subjects (MODEL@norm) have the per-head tables of the analyses of maps (the diagnostics and
    # the disabled heads are the model's own: its forward pass, no signal); role agreement pairs each with
    # its model's attention, and says in a note why the atlas (attention alone) has no rows to compare.
    for table in ("first_token", "dependency_best", "pattern_classes", "finetune_change"):
        models = set(pd.read_csv(built / f"{table}.csv")["model"])
        assert {f"{m}@norm" for m in MODELS} <= models, table
    agreement = pd.read_csv(built / "role_agreement.csv")
    signal = agreement[agreement["relation"] == "attention_vs_signal"]
    assert set(signal["second_model"]) == {f"{m}@norm" for m in MODELS}
    assert signal["note"].str.contains("signal subjects").all()
