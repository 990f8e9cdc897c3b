"""Signals side by side (workflow_scripts/report/signals.py): values taken from the study's tables as built."""

from __future__ import annotations

import pandas as pd
import pytest

from workflow_scripts.report.signals import draw_signal_comparison, signal_comparison


def _tables(tmp_path):
    surface = []
    for subject, scale in (("m", 1.0), ("m@norm", 0.5)):
        for checkpoint in ("pretrained", "random"):
            for layer in (0, 1):
                for head in (0, 1):
                    base = scale * (layer + 1) * (head + 1) / 10
                    surface.append({"model": subject, "checkpoint": checkpoint, "layer": layer, "head": head,
                                    "cls": base, "sep": base / 2, "period": 0.01, "comma": 0.02})
    best = []
    for subject, accuracy in (("m", 0.6), ("m@norm", 0.4), ("other", 0.9)):
        for select in ("train", "dev"):
            for direction in ("either", "dependent_to_head"):
                best.append({"model": subject, "checkpoint": "pretrained", "treebank": "ewt", "relation": "nsubj",
                             "direction": direction, "select_split": select, "score_split": "dev",
                             "head_label": "2-1", "accuracy": accuracy if select == "train" else 0.99,
                             "baseline_accuracy": 0.3, "n": 50})
    paths = tmp_path / "surface.csv", tmp_path / "best.csv"
    pd.DataFrame(surface).to_csv(paths[0], index=False)
    pd.DataFrame(best).to_csv(paths[1], index=False)
    return paths


def test_each_signal_has_its_per_layer_shares_and_best_heads(tmp_path):
    surface, best = _tables(tmp_path)
    frame = signal_comparison(surface, best, tmp_path / "out.csv", models=["m"], signals=["attention", "norm"],
                              treebank="ewt", select_split="train", score_split="dev")
    shares = frame[frame["measure"] == "share_to_cls"].set_index(["signal", "layer"])["value"]
    # mean over heads 0 and 1 of scale * (layer + 1) * (head + 1) / 10
    assert shares["attention", 0] == pytest.approx(0.15) and shares["attention", 1] == pytest.approx(0.3)
    assert shares["norm", 1] == pytest.approx(0.15)
    punct = frame[frame["measure"] == "share_to_punct"]["value"]
    assert punct.to_numpy() == pytest.approx([0.03] * 4)
    accuracy = frame[frame["measure"] == "best_head_accuracy"].set_index("signal")
    # The headline protocol (train -> dev), either direction, the study's models only (not "other").
    assert accuracy.loc["attention", "value"] == 0.6 and accuracy.loc["norm", "value"] == 0.4
    assert set(frame["subject"]) == {"m", "m@norm"} and len(accuracy) == 2
    assert pd.read_csv(tmp_path / "out.csv").shape == frame.shape


def test_the_figure_is_drawn_and_a_model_without_rows_says_so(tmp_path):
    surface, best = _tables(tmp_path)
    signal_comparison(surface, None, tmp_path / "out.csv", models=["m"], signals=["attention", "rollout"],
                      treebank="ewt", select_split="train", score_split="dev")
    for model in ("m", "absent"):
        draw_signal_comparison(tmp_path / "out.csv", tmp_path / f"{model}.png", tmp_path / f"{model}.pdf",
                               model=model)
        assert (tmp_path / f"{model}.png").stat().st_size > 0
