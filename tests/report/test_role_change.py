"""The change of each role per layer (workflow_scripts/report/role_change.py, docs/roles.md) on atlas rows whose every
score is set here: the mean absolute change of a layer's heads, its interval over the layer's heads, the signed mean,
and the figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.report.role_change import draw_role_change, role_change_by_layer, role_change_table

FINETUNED = "cola.seed1.final"


def rows(checkpoint, scores, role="sink", detail="natural"):
    layers, heads = scores.shape
    return pd.DataFrame({"model": "m", "checkpoint": checkpoint, "role": role, "detail": detail,
                         "layer": np.repeat(np.arange(layers), heads), "head": np.tile(np.arange(heads), layers),
                         "score": scores.ravel(), "num_layers": layers, "num_heads": heads})


PAIR = {"relation": "pretrained_vs_finetuned", "first_model": "m", "first_checkpoint": "pretrained",
        "second_model": "m", "second_checkpoint": FINETUNED, "task": "cola"}


def test_each_layer_s_mean_absolute_change_and_its_interval():
    before = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.5, 0.5], [0.2, 0.2, 0.2, 0.2]])
    change = np.array([[0.0, 0.0, 0.0, 0.0], [0.1, -0.1, 0.1, -0.1], [0.4, 0.2, 0.4, 0.2]])
    atlas = pd.concat([rows("pretrained", before), rows(FINETUNED, before + change),
                       rows("pretrained", before, "dependency", "nsubj").head(1),  # a best-head role: no layers
                       rows(FINETUNED, before, "dependency", "nsubj").head(1)])
    frame = role_change_by_layer(atlas, [PAIR], resamples=500, seed=0).set_index("layer")
    assert set(frame["role"]) == {"sink"} and list(frame.index) == [0, 1, 2]
    assert frame["mean_abs_change"].tolist() == pytest.approx([0.0, 0.1, 0.3])
    assert frame["mean_change"].tolist() == pytest.approx([0.0, 0.0, 0.3])
    assert frame.loc[0, ["ci_low", "ci_high"]].tolist() == [0.0, 0.0]  # no head moved: no spread
    assert frame.loc[1, ["ci_low", "ci_high"]].tolist() == pytest.approx([0.1, 0.1])  # every head by 0.1
    assert 0.2 - 1e-12 <= frame.loc[2, "ci_low"] < 0.3 < frame.loc[2, "ci_high"] <= 0.4 + 1e-12  # by 0.2 and 0.4
    assert frame["relative_depth"].tolist() == pytest.approx([1 / 6, 3 / 6, 5 / 6])
    assert (frame["heads"] == 4).all()


def test_a_pair_the_atlas_cannot_compare_has_no_rows_and_the_table_and_figure_are_written(tmp_path):
    atlas = pd.concat([rows("pretrained", np.ones((2, 2))), rows("wide", np.ones((2, 4)))])
    assert role_change_by_layer(atlas, [{**PAIR, "second_checkpoint": "wide"}], resamples=10, seed=0).empty
    scores = np.random.default_rng(0).random((3, 4))
    (tmp_path / "atlas.csv").write_text(pd.concat([rows("pretrained", scores), rows(FINETUNED, scores[::-1])])
                                        .to_csv(index=False))
    table = role_change_table(tmp_path / "atlas.csv", tmp_path / "by_layer.csv", pairs=[PAIR], resamples=50, seed=0)
    assert len(table) == 3 and pd.read_csv(tmp_path / "by_layer.csv").shape == table.shape
    draw_role_change(tmp_path / "by_layer.csv", tmp_path / "change.png", tmp_path / "change.pdf")
    assert (tmp_path / "change.png").stat().st_size > 10_000
    empty = tmp_path / "empty.csv"
    role_change_by_layer(atlas.iloc[0:0], [PAIR], resamples=10, seed=0).to_csv(empty, index=False)
    draw_role_change(empty, tmp_path / "none.png", tmp_path / "none.pdf")  # no pair compared: a note, no error
    assert (tmp_path / "none.png").exists()
