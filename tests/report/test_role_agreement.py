"""Role agreement (workflow_scripts/report/role_agreement.py, role_agreement_figure.py) on atlas rows whose every
score is set here, and on a hand-set GPT-2 whose "fine-tuned" checkpoint moves its attention sink to another head."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from support.induction_gpt2 import HEADS, WIDTH, save_induction_gpt2
from workflow_scripts.report.atlas import assemble, diagnostic_roles, model_info
from workflow_scripts.report.role_agreement import (
    COLUMNS,
    role_agreement,
    role_agreement_table,
    spearman_interval,
    top_count,
)
from workflow_scripts.report.role_agreement_figure import draw_role_agreement
from workflow_scripts.study.plans.report import role_agreement_pairs, weight_subjects

CONTRACT = ["relation", "role", "detail", "first_model", "first_checkpoint", "second_model", "second_checkpoint",
            "heads", "rho", "rho_low", "rho_high", "split_half_rho", "floor_rho", "floor_low", "floor_high",
            "seed_checkpoint", "seed_rho", "seed_low", "seed_high", "verdict", "first_best", "second_best", "best_kept",
            "best_change", "best_change_low", "best_change_high", "top_heads", "jaccard_top", "role_heads",
            "kept_share", "note"]
FINETUNED = "cola.seed1.final"


def atlas_rows(model, checkpoint, role, scores, *, detail="natural"):
    """Atlas rows of one subject's role: ``scores`` (layers, heads)."""
    layers, heads = scores.shape
    return pd.DataFrame({"model": model, "checkpoint": checkpoint, "role": role, "detail": detail,
                         "layer": np.repeat(np.arange(layers), heads), "head": np.tile(np.arange(heads), layers),
                         "score": scores.ravel(), "num_layers": layers, "num_heads": heads})


def pair(first, second, relation="pretrained_vs_finetuned", **extra):
    return {"relation": relation, "first_model": first[0], "first_checkpoint": first[1], "second_model": second[0],
            "second_checkpoint": second[1], **extra}


def agreement(atlas, pairs, thresholds=None):
    return role_agreement(atlas, pairs, thresholds=thresholds or {}, resamples=200, seed=0)


def test_top_heads_are_five_percent_and_at_least_three():
    assert [top_count(n) for n in (4, 8, 60, 61, 144, 1024)] == [3, 3, 3, 4, 8, 52]
    assert top_count(2) == 2


def test_identical_scores_agree_fully_and_a_permutation_of_heads_does_not():
    rng = np.random.default_rng(1)
    scores = rng.random((16, 16))
    shuffled = rng.permutation(scores.ravel()).reshape(16, 16)
    atlas = pd.concat([atlas_rows("m", "pretrained", "induction", scores),
                       atlas_rows("m", FINETUNED, "induction", scores),
                       atlas_rows("m", "cola.seed2.final", "induction", shuffled)])
    frame = agreement(atlas, [pair(("m", "pretrained"), ("m", FINETUNED)),
                              pair(("m", "pretrained"), ("m", "cola.seed2.final"))])
    same, permuted = frame.iloc[0], frame.iloc[1]
    assert same["rho"] == pytest.approx(1.0) and (same["rho_low"], same["rho_high"]) == pytest.approx((1.0, 1.0))
    assert same["jaccard_top"] == 1.0 and same["kept_share"] == 1.0 and same["heads"] == 256
    assert same["top_heads"] == 13 and same["role_heads"] == 13 and same["role_rule"] == "top 13 heads"
    assert abs(permuted["rho"]) < 0.2 and permuted["rho_low"] < 0 < permuted["rho_high"]
    assert permuted["jaccard_top"] < 0.3


def test_a_head_that_loses_its_role_is_named():
    before = np.array([[0.1, 0.1], [0.9, 0.1]])     # the sink is layer 1, head 0
    after = np.array([[0.1, 0.8], [0.1, 0.1]])      # fine-tuning moved it to layer 0, head 1
    atlas = pd.concat([atlas_rows("m", "pretrained", "sink", before), atlas_rows("m", FINETUNED, "sink", after)])
    row = agreement(atlas, [pair(("m", "pretrained"), ("m", FINETUNED))], {"sink": 0.3}).iloc[0]
    assert (row["role_heads"], row["kept_share"], row["lost_heads"]) == (1, 0.0, "1:0")
    assert row["role_rule"] == "score > 0.3"


def test_pairs_that_cannot_be_compared_are_note_rows():
    atlas = pd.concat([atlas_rows("m", "pretrained", "sink", np.ones((2, 2))),
                       atlas_rows("m", "pretrained", "pattern:Block", np.eye(2), detail="sst2"),
                       atlas_rows("m", FINETUNED, "sink", np.ones((2, 2))),
                       atlas_rows("m", FINETUNED, "causal_importance", np.eye(2), detail="cola mcc, zero"),
                       atlas_rows("wide", "pretrained", "sink", np.ones((2, 4)))])
    frame = agreement(atlas, [pair(("m", "pretrained"), ("wide", "pretrained"), "revision_next"),
                              pair(("m", "pretrained"), ("m@norm", "pretrained"), "attention_vs_signal",
                                   why_absent="the atlas leaves signal subjects out"),
                              pair(("m", "pretrained"), ("m", FINETUNED), task="cola")])
    assert list(frame.columns[:len(CONTRACT)]) == CONTRACT and list(frame.columns) == COLUMNS
    shapes, signal = frame.iloc[0], frame.iloc[1]
    assert pd.isna(shapes["rho"]) and "different shapes" in shapes["note"] and "2 x 2 and 2 x 4" in shapes["note"]
    assert pd.isna(signal["heads"]) and "no role rows of m@norm pretrained" in signal["note"]
    assert "signal subjects" in signal["note"]
    finetuned = frame[frame["relation"] == "pretrained_vs_finetuned"]
    # the sink is compared (constant scores: no rank correlation); another task's pattern class is not this pair's
    assert finetuned["role"].tolist() == ["sink", ""] and np.isnan(finetuned.iloc[0]["rho"])
    note = finetuned.iloc[1]["note"]
    assert "only on the second: causal_importance (cola mcc, zero)" in note and "Block" not in note


def test_best_head_roles_say_whether_the_best_head_stays_the_best():
    atlas = pd.DataFrame([{"model": "m", "checkpoint": checkpoint, "role": "dependency", "detail": "nsubj",
                           "layer": layer, "head": head, "score": 0.7, "num_layers": 2, "num_heads": 2}
                          for checkpoint, layer, head in (("pretrained", 1, 0), (FINETUNED, 0, 1))])
    row = agreement(atlas, [pair(("m", "pretrained"), ("m", FINETUNED))]).iloc[0]
    assert (row["heads"], row["jaccard_top"], row["kept_share"], row["lost_heads"]) == (1, 0.0, 0.0, "1:0")
    assert pd.isna(row["rho"]) and "best head" in row["note"]


def test_spearman_interval_is_the_percentile_bootstrap_over_heads():
    x = np.arange(20.0)
    rho, low, high = spearman_interval(x, x[::-1], resamples=100, seed=0)
    assert (rho, low, high) == pytest.approx((-1.0, -1.0, -1.0))
    again = spearman_interval(x, np.sin(x), resamples=100, seed=0)
    assert again == spearman_interval(x, np.sin(x), resamples=100, seed=0)  # seeded
    assert again[1] <= again[0] <= again[2]


def swap_heads_of_layer_1(model):
    """The "fine-tuned" checkpoint: heads 0 and 1 of layer 1 trade their weights (queries, keys, values and their
    rows of the output projection), so each head's role moves to the other."""
    import torch

    width = WIDTH // HEADS
    block = model.h[1].attn
    with torch.no_grad():
        for part in range(3):  # query, key, value
            first = slice(part * WIDTH, part * WIDTH + width)
            second = slice(part * WIDTH + width, part * WIDTH + 2 * width)
            weight, bias = block.c_attn.weight, block.c_attn.bias
            weight[:, first], weight[:, second] = weight[:, second].clone(), weight[:, first].clone()
            bias[first], bias[second] = bias[second].clone(), bias[first].clone()
        rows = block.c_proj.weight
        rows[:width], rows[width:] = rows[width:].clone(), rows[:width].clone()
    return model


def test_a_fine_tuned_checkpoint_that_moves_the_sink_is_reported_as_its_head_losing_it(tmp_path, tiny_roberta):
    from transformers import AutoModel, AutoTokenizer

    from workflow_scripts.surface.diagnostics import Settings, diagnose

    folder = save_induction_gpt2(tmp_path / "gpt2", tiny_roberta, sink=True)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    settings = Settings(sequences=8, length=8, seed=0, token_range=(5, 48), prepend_bos=None, batch_size=8)
    frames = []
    for checkpoint in ("pretrained", FINETUNED):
        model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
        model = swap_heads_of_layer_1(model) if checkpoint == FINETUNED else model
        frames.append(diagnose(tokenizer, model, settings, resamples=50, bootstrap_seed=0).assign(
            model="gpt2", checkpoint=checkpoint))
    models = pd.DataFrame({"name": ["gpt2"], "model_type": ["gpt2"], "num_layers": [2], "num_heads": [2]})
    atlas = assemble(diagnostic_roles(pd.concat(frames)), model_info(models, lambda _: "gpt2", {}, {}))
    path = tmp_path / "atlas.csv"
    atlas.to_csv(path, index=False)
    pairs = [pair(("gpt2", "pretrained"), ("gpt2", FINETUNED))]
    table = role_agreement_table(path, tmp_path / "role_agreement.csv", pairs=pairs,
                                 thresholds={"sink": 0.3, "previous_token": 0.5}, resamples=100, seed=0)
    rows = table.set_index("role")
    # the sink (head 1 of layer 1) moved to head 0: that head is the one reported as losing the role
    assert (rows.loc["sink", "role_heads"], rows.loc["sink", "kept_share"]) == (1, 0.0)
    assert rows.loc["sink", "lost_heads"] == "1:1"
    # layer 0 is untouched: its previous-token head keeps its role
    assert rows.loc["previous_token", "kept_share"] == 1.0 and rows.loc["previous_token", "lost_heads"] == ""
    assert set(rows.index) == {"sink", "previous_token", "induction"}
    written = pd.read_csv(tmp_path / "role_agreement.csv")
    assert list(written.columns[:len(CONTRACT)]) == CONTRACT and len(written) == 3
    reference = tmp_path / "reference.csv"
    pd.DataFrame([{"paper": "Wu et al. 2025", "analysis": "role agreement", "item": "base vs variant", "value": "0.87",
                   "unit": "Pearson r", "note": "", "source": "x"}]).to_csv(reference, index=False)
    draw_role_agreement(tmp_path / "role_agreement.csv", reference, tmp_path / "ra.png", tmp_path / "ra.pdf")
    assert (tmp_path / "ra.png").stat().st_size > 10_000 and (tmp_path / "ra.pdf").stat().st_size > 0


def test_the_plan_pairs_every_related_subject(monkeypatch):
    from types import SimpleNamespace

    from workflow_scripts.study.revisions import RevisionPoint

    study = SimpleNamespace(
        models=["m", "p-step1", "p-step2", "p-step3"],
        finetune=SimpleNamespace(runs=[("m", "cola", 1), ("m", "cola", 2), ("m", "sst2", 1)],
                                 role_checkpoints={("m", c): ("head_diagnostics",) for c in (
                                     "cola.seed1.step5", "cola.seed1.final", "cola.seed2.step5", "cola.seed2.final")}),
        config={"attention": {"signals": ["attention", "norm"]}})
    monkeypatch.setattr("workflow_scripts.study.plans.report.revision_series", lambda config: {
        "p": [RevisionPoint(f"p-step{n}", f"step{n}", n) for n in (1, 2, 3)]})
    pairs = [(p["relation"], p["first_model"], p["first_checkpoint"], p["second_model"], p["second_checkpoint"])
             for p in role_agreement_pairs(study)]
    # every checkpoint of roles.finetuned (a step too) and every run's final one, each with its seed twin
    assert pairs[:7] == [("pretrained_vs_finetuned", "m", "pretrained", "m", "cola.seed1.step5"),
                         ("pretrained_vs_finetuned", "m", "pretrained", "m", "cola.seed1.final"),
                         ("pretrained_vs_finetuned", "m", "pretrained", "m", "cola.seed2.step5"),
                         ("pretrained_vs_finetuned", "m", "pretrained", "m", "cola.seed2.final"),
                         ("pretrained_vs_finetuned", "m", "pretrained", "m", "sst2.seed1.final"),
                         ("finetune_seeds", "m", "cola.seed1.step5", "m", "cola.seed2.step5"),
                         ("finetune_seeds", "m", "cola.seed1.final", "m", "cola.seed2.final")]
    twins = [p.get("seed_checkpoint") for p in role_agreement_pairs(study)[:5]]
    assert twins == ["cola.seed2.step5", "cola.seed2.final", "cola.seed1.step5", "cola.seed1.final", None]
    assert pairs[7:11] == [("revision_next", "p-step1", "pretrained", "p-step2", "pretrained"),
                           ("revision_last", "p-step1", "pretrained", "p-step3", "pretrained"),
                           ("revision_next", "p-step2", "pretrained", "p-step3", "pretrained"),
                           ("revision_last", "p-step2", "pretrained", "p-step3", "pretrained")]
    assert pairs[11] == ("attention_vs_signal", "m", "pretrained", "m@norm", "pretrained") and len(pairs) == 15
    assert weight_subjects(role_agreement_pairs(study))[:2] == [("m", "cola.seed1.step5"), ("m", "cola.seed2.step5")]
