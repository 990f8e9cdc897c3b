"""The cross-model atlas (workflow_scripts/report/atlas.py, atlas_figure.py) from small tables whose every value is
set here: a 4-layer x 2-head encoder "enc" (a sink at layer 1, head 0) and a 2-layer x 2-head decoder "dec" at a
pretraining revision."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.report.atlas import (
    ATLAS_INPUTS,
    assemble,
    atlas_table,
    dependency_roles,
    diagnostic_roles,
    model_info,
    relative_depth,
)
from workflow_scripts.report.atlas_figure import draw_atlas

FAMILIES = {"bert": "bert", "gpt2": "gpt2"}
REVISIONS = {"dec": ["dec-series", "step100", 100]}


def family(model_type):
    return FAMILIES.get(model_type, "generic")


def models_table() -> pd.DataFrame:
    return pd.DataFrame({"name": ["enc", "dec"], "model_type": ["bert", "gpt2"], "num_layers": [4, 2],
                         "num_heads": [2, 2]})


def diagnostics_table() -> pd.DataFrame:
    """Every head of both models: enc's (1, 0) is its sink (alpha_1 0.9 natural, 0.2 at random init), dec has only
    random-token rows, and repeated random tokens hold the induction scores."""
    rows = []
    for model, layers in (("enc", 4), ("dec", 2)):
        for checkpoint in ("pretrained", "random"):
            for kind in ("natural", "random", "random_repeated"):
                if model == "dec" and kind == "natural":
                    continue
                for layer in range(layers):
                    for head in range(2):
                        sink = 0.9 if (model, checkpoint, layer, head) == ("enc", "pretrained", 1, 0) else 0.1
                        sink = 0.2 if (model, checkpoint, layer, head) == ("enc", "random", 1, 0) else sink
                        sink = sink + (0.05 if kind == "random" else 0.0)
                        rows.append({"model": model, "checkpoint": checkpoint, "input": kind, "layer": layer,
                                     "head": head, "first_token": sink, "first_token_low": sink - 0.01,
                                     "first_token_high": sink + 0.01, "previous_token": 0.3,
                                     "previous_token_low": 0.29, "previous_token_high": 0.31,
                                     "induction": 0.5 if layer == 1 and head == 1 else 0.0,
                                     "induction_low": 0.0, "induction_high": 0.6})
    # a signal subject's rows: no model of models.csv, left out
    rows.append({**rows[0], "model": "enc@norm"})
    return pd.DataFrame(rows)


def dependency_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    best = pd.DataFrame([
        {"model": "enc", "checkpoint": "pretrained", "treebank": "ewt", "relation": relation, "direction": direction,
         "select_split": select, "score_split": "dev", "layer": layer, "head": head, "head_direction": head_direction,
         "accuracy": accuracy, "ci_low": accuracy - 0.1, "ci_high": accuracy + 0.1}
        for relation, direction, select, layer, head, head_direction, accuracy in (
            ("nsubj", "either", "train", 2, 1, "head_to_dependent", 0.8),          # the row read
            ("nsubj", "dependent_to_head", "train", 3, 0, "dependent_to_head", 0.7),  # not the direction
            ("nsubj", "either", "dev", 0, 0, "dependent_to_head", 0.9),            # not the protocol
            ("all", "dependent_to_head", "train", 3, 1, "dependent_to_head", 0.4),   # `all`: no either
            ("all", "either", "train", 0, 1, "dependent_to_head", 0.99),            # (never written; ignored)
        )] + [
        {"model": "dec", "checkpoint": "pretrained", "treebank": "ewt", "relation": "nsubj",
         "direction": direction, "select_split": "train", "score_split": "dev", "layer": 1, "head": head,
         "head_direction": direction, "accuracy": accuracy, "ci_low": 0.0, "ci_high": 1.0}
        for direction, head, accuracy in (("causal_union", 0, 0.6), ("dependent_to_preceding_head", 1, 0.65))])
    heads = pd.DataFrame([
        {"model": "enc", "checkpoint": "random", "treebank": "ewt", "relation": "nsubj",
         "direction": direction, "select_split": "train", "score_split": "dev", "layer": 2, "head": 1,
         "accuracy": accuracy}
        for direction, accuracy in (("head_to_dependent", 0.11), ("dependent_to_head", 0.22))])
    return best, heads


def test_relative_depth_is_the_centre_of_the_layers_slice():
    assert relative_depth(1, 4) == pytest.approx(0.375)
    assert relative_depth(0, 1) == pytest.approx(0.5)
    # a layer of a 4-layer model sits where its two layers of an 8-layer model sit on average
    assert relative_depth(1, 4) == pytest.approx(np.mean(relative_depth(np.array([2, 3]), 8)))


def test_a_sink_at_layer_1_of_4_with_its_random_init_control():
    roles = diagnostic_roles(diagnostics_table())
    atlas = assemble(roles, model_info(models_table(), family, {"enc": 1000}, REVISIONS))
    sinks = atlas[(atlas["role"] == "sink") & (atlas["model"] == "enc")]
    top = sinks[sinks["rank"] == 1].iloc[0]
    assert (top["layer"], top["head"], top["num_layers"]) == (1, 0, 4)
    assert top["relative_depth"] == pytest.approx(0.375)
    assert top["score"] == pytest.approx(0.9) and top["random_score"] == pytest.approx(0.2)
    assert (top["ci_low"], top["ci_high"]) == pytest.approx((0.89, 0.91))
    assert top["detail"] == "natural" and top["family"] == "bert" and top["parameters"] == 1000
    assert len(sinks) == 8 and sorted(sinks["rank"]) == list(range(1, 9))
    # dec has no natural rows: random tokens; its revision's step is there
    dec = atlas[(atlas["role"] == "sink") & (atlas["model"] == "dec")]
    assert set(dec["detail"]) == {"random"} and dec["score"].tolist() == pytest.approx([0.15] * 4)
    assert set(dec["series"]) == {"dec-series"} and set(dec["step"]) == {100} and dec["parameters"].isna().all()
    induction = atlas[(atlas["role"] == "induction") & (atlas["rank"] == 1)]
    assert set(zip(induction["model"], induction["layer"], induction["head"])) == {("enc", 1, 1), ("dec", 1, 1)}
    assert "enc@norm" not in set(atlas["model"])


def test_each_relations_best_head_in_the_found_heads_direction_with_the_same_heads_control():
    best, heads = dependency_tables()
    roles = dependency_roles(best, heads, treebank="ewt", select_split="train", score_split="dev")
    found = {(r.model, r.detail): (r.layer, r.head, r.score, r.random_score) for r in roles.itertuples()}
    assert set(found) == {("enc", "nsubj"), ("enc", "all"), ("dec", "nsubj")}
    # the either row's head, and the random-init accuracy of the same head in the direction it looks
    assert found["enc", "nsubj"][:3] == (2, 1, 0.8) and found["enc", "nsubj"][3] == pytest.approx(0.11)
    assert found["enc", "all"][:3] == (3, 1, 0.4) and np.isnan(found["enc", "all"][3])
    assert found["dec", "nsubj"][:3] == (1, 0, 0.6)  # the causal union for a decoder
    without = dependency_roles(best, None, treebank="ewt", select_split="train", score_split="dev")
    assert without["random_score"].isna().all() and len(without) == 3


def test_a_study_without_some_roles_tables_and_the_figure(tmp_path):
    models = tmp_path / "models.csv"
    models_table().to_csv(models, index=False)
    diagnostics = tmp_path / "head_diagnostics.csv"
    diagnostics_table().to_csv(diagnostics, index=False)
    output = tmp_path / "atlas.csv"
    frame = atlas_table(models, output, family_of=family, tables={"head_diagnostics": diagnostics},
                        revisions=REVISIONS, treebank="ewt", select_split="train", score_split="dev")
    assert set(frame["role"]) == {"sink", "previous_token", "induction"}
    written = pd.read_csv(output)
    assert list(written.columns) == list(frame.columns) and len(written) == 3 * (8 + 4)
    # ordered by family (bert before gpt2), each model's roles in the figure's order
    assert written["model"].tolist()[:24] == ["enc"] * 24
    assert written[written["model"] == "enc"]["role"].drop_duplicates().tolist() == ["sink", "previous_token",
                                                                                    "induction"]
    draw_atlas(output, tmp_path / "atlas.png", tmp_path / "atlas.pdf")
    assert (tmp_path / "atlas.png").stat().st_size > 0 and (tmp_path / "atlas.pdf").stat().st_size > 0
    # no role table at all: the columns only, and a figure that says so
    empty = atlas_table(models, tmp_path / "none.csv", family_of=family, tables={name: None for name in ATLAS_INPUTS},
                        treebank="ewt", select_split="train", score_split="dev")
    assert empty.empty and list(pd.read_csv(tmp_path / "none.csv").columns) == list(frame.columns)
    draw_atlas(tmp_path / "none.csv", tmp_path / "none.png", tmp_path / "none.pdf")


def test_patterns_and_causal_importance(tmp_path):
    models = tmp_path / "models.csv"
    models_table().to_csv(models, index=False)
    # enc's layer 3 head 0: 3 of 4 maps Vertical; every other map Heterogeneous (no role)
    rows = [{"example_id": e, "layer": layer, "head": head,
             "rule_class": "Vertical" if (layer, head) == (3, 0) and e < 3 else "Heterogeneous"}
            for e in range(4) for layer in range(4) for head in range(2)]
    features = tmp_path / "features.parquet"
    pd.DataFrame(rows).to_parquet(features)
    disabling = tmp_path / "head_disabling.csv"
    pd.DataFrame([{"model": "enc", "checkpoint": "cola.seed1.final", "task": "cola", "metric": "mcc",
                   "mode": "zero", "layer": layer, "head": head, "delta": -0.3 if (layer, head) == (0, 1) else 0.0}
                  for layer in range(4) for head in range(2)]).to_csv(disabling, index=False)
    frame = atlas_table(models, tmp_path / "atlas.csv", family_of=family, tables={"head_disabling": disabling},
                        patterns=[("enc", "pretrained", "cola", features)], treebank="ewt", select_split="train",
                        score_split="dev")
    assert set(frame["role"]) == {"pattern:Vertical", "causal_importance"}
    vertical = frame[(frame["role"] == "pattern:Vertical") & (frame["rank"] == 1)].iloc[0]
    assert (vertical["layer"], vertical["head"], vertical["score"], vertical["detail"]) == (3, 0, 0.75, "cola")
    assert vertical["relative_depth"] == pytest.approx(3.5 / 4) and np.isnan(vertical["random_score"])
    causal = frame[(frame["role"] == "causal_importance") & (frame["rank"] == 1)].iloc[0]
    assert (causal["layer"], causal["head"], causal["checkpoint"]) == (0, 1, "cola.seed1.final")
    assert causal["score"] == pytest.approx(0.3) and causal["detail"] == "cola mcc, zero"
