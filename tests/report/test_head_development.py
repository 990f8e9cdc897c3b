"""The head-development table and figure (workflow_scripts/report/development.py) from small tables written here:
each value is the one the written rows make it."""

from __future__ import annotations

import pandas as pd
import pytest

from workflow_scripts.report.development import draw_head_development, head_development

SERIES = {"tiny": [["tiny-step0", "step0", 0], ["tiny-step100", "step100", 100]]}


def write_tables(folder):
    rates = pd.DataFrame([
        # natural text is the sink rate's input where the study has it; the 'all' row is not a layer
        *({"model": model, "checkpoint": "pretrained", "input": "natural", "layer": layer, "sink_rate": rate}
          for model, values in (("tiny-step0", (0.0, 25.0)), ("tiny-step100", (50.0, 100.0)))
          for layer, rate in zip(("0", "1"), values, strict=True)),
        {"model": "tiny-step0", "checkpoint": "pretrained", "input": "natural", "layer": "all", "sink_rate": 12.5},
        {"model": "tiny-step0", "checkpoint": "pretrained", "input": "random", "layer": "0", "sink_rate": 99.0},
        {"model": "tiny-step0", "checkpoint": "random", "input": "natural", "layer": "0", "sink_rate": 77.0},
    ])
    diagnostics = pd.DataFrame([
        {"model": model, "checkpoint": checkpoint, "input": kind, "layer": layer, "head": head, "induction": value}
        for model, checkpoint, kind, layer, head, value in (
            ("tiny-step100", "pretrained", "random_repeated", 1, 0, 0.88),
            ("tiny-step100", "pretrained", "random_repeated", 1, 1, 0.07),
            ("tiny-step100", "pretrained", "random_repeated", 0, 0, 0.01),
            ("tiny-step100", "pretrained", "random_repeated", 0, 1, 0.02),
            ("tiny-step100", "pretrained", "random", 1, 0, 0.95),      # not the induction input
            ("tiny-step100", "random", "random_repeated", 1, 1, 0.99),  # the random-init control
            ("tiny-step0", "pretrained", "random_repeated", 1, 1, 0.08),
        )])
    heads = pd.DataFrame([
        {"model": "tiny-step100", "checkpoint": "pretrained", "treebank": "ewt", "relation": relation,
         "direction": direction, "layer": layer, "head": head, "select_split": "train", "score_split": "dev",
         "accuracy": accuracy, "select_accuracy": select}
        for relation, direction, layer, head, accuracy, select in (
            ("all", "causal_union", 1, 0, 0.30, 0.50),   # best on train: its dev accuracy is the layer's
            ("all", "causal_union", 1, 1, 0.45, 0.40),   # better on dev, not selected
            ("all", "dependent_to_preceding_head", 1, 1, 0.90, 0.90),  # another direction
            ("nsubj", "causal_union", 1, 1, 0.95, 0.95),  # another relation
        )])
    paths = {name: folder / f"{name}.csv" for name in ("sink_rates", "head_diagnostics", "dependency_heads")}
    rates.to_csv(paths["sink_rates"], index=False)
    diagnostics.to_csv(paths["head_diagnostics"], index=False)
    heads.to_csv(paths["dependency_heads"], index=False)
    return paths


def test_each_measure_per_layer_and_revision_is_the_one_the_rows_give(tmp_path):
    paths = write_tables(tmp_path)
    frame = head_development(paths["sink_rates"], paths["head_diagnostics"], paths["dependency_heads"],
                             tmp_path / "head_development.csv", series=SERIES, treebank="ewt", select_split="train",
                             score_split="dev")
    values = {(r.model, r.measure, r.layer): r.value for r in frame.itertuples()}
    assert values == {
        ("tiny-step0", "sink_rate", 0): 0.0, ("tiny-step0", "sink_rate", 1): 25.0,
        ("tiny-step100", "sink_rate", 0): 50.0, ("tiny-step100", "sink_rate", 1): 100.0,
        ("tiny-step100", "induction", 0): 0.02, ("tiny-step100", "induction", 1): 0.88,
        ("tiny-step0", "induction", 1): 0.08,
        ("tiny-step100", "dependency_accuracy", 1): 0.30,
    }
    induction = frame[(frame["measure"] == "induction") & (frame["model"] == "tiny-step100") & (frame["layer"] == 1)]
    assert induction["head"].tolist() == [0]
    assert set(frame.loc[frame["measure"] == "sink_rate", "input"]) == {"natural"}
    assert frame.loc[frame["measure"] == "dependency_accuracy", "direction"].tolist() == ["causal_union"]
    assert pd.read_csv(tmp_path / "head_development.csv")["step"].tolist() == frame["step"].tolist()


def test_a_study_without_a_measures_table_leaves_that_measure_out(tmp_path):
    paths = write_tables(tmp_path)
    frame = head_development(None, paths["head_diagnostics"], None, tmp_path / "out.csv", series=SERIES,
                             treebank="ewt", select_split="train", score_split="dev")
    assert set(frame["measure"]) == {"induction"}


@pytest.mark.parametrize("steps", [(0, 100), (None, None)])
def test_the_figure_is_drawn_against_the_step_or_the_revisions_order(tmp_path, steps):
    paths = write_tables(tmp_path)
    series = {"tiny": [[model, revision, step] for (model, revision, _), step in zip(SERIES["tiny"], steps,
                                                                                       strict=True)]}
    head_development(paths["sink_rates"], paths["head_diagnostics"], paths["dependency_heads"], tmp_path / "t.csv",
                     series=series, treebank="ewt", select_split="train", score_split="dev")
    draw_head_development(tmp_path / "t.csv", tmp_path / "f.png", tmp_path / "f.pdf", series="tiny")
    assert (tmp_path / "f.png").stat().st_size > 10_000 and (tmp_path / "f.pdf").stat().st_size > 1_000


def icl_table(folder, steps=(0, 100)):
    """The ICL score of both revisions: about 0 at step 0, -0.4 nats at step 100 (the phase change)."""
    path = folder / "icl_score.csv"
    pd.DataFrame([{"model": model, "checkpoint": "pretrained", "series": "tiny", "revision": revision, "step": step,
                   "early_position": 2, "late_position": 16, "icl_score": score, "icl_low": score - 0.05,
                   "icl_high": score + 0.05}
                  for (model, revision, _), step, score in zip(SERIES["tiny"], steps, (0.01, -0.4), strict=True)]
                 ).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("steps", [(0, 100), (None, None)])
def test_the_icl_score_is_drawn_beside_the_induction_score(tmp_path, steps):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from workflow_scripts.report.development import _draw_icl

    paths = write_tables(tmp_path)
    series = {"tiny": [[model, revision, step] for (model, revision, _), step in zip(SERIES["tiny"], steps,
                                                                                       strict=True)]}
    frame = head_development(paths["sink_rates"], paths["head_diagnostics"], paths["dependency_heads"],
                             tmp_path / "t.csv", series=series, treebank="ewt", select_split="train",
                             score_split="dev")
    icl = icl_table(tmp_path, steps)
    figure, ax = plt.subplots()
    x_column = "step" if steps[0] is not None else "order"
    _draw_icl(ax, pd.read_csv(icl), frame, "tiny", x_column)
    right = figure.axes[-1]
    assert right is not ax and "token 16 minus token 2" in right.get_ylabel()
    line = right.get_lines()[0]
    assert line.get_xdata().tolist() == ([0.0, 100.0] if steps[0] is not None else [0.0, 1.0])
    assert line.get_ydata().tolist() == pytest.approx([0.01, -0.4])
    assert "ICL score" in ax.get_title()
    plt.close(figure)
    draw_head_development(tmp_path / "t.csv", tmp_path / "f.png", tmp_path / "f.pdf", series="tiny", icl_score=icl)
    assert (tmp_path / "f.png").stat().st_size > 10_000
