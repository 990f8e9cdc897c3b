"""The summary page of a decoder, on hand-built tables: a 2 x 2 GPT-2-like model "gpt" without BOS, whose head 2-1
is an attention sink (0.96 of its attention on the first token), and whose dependency_best.csv holds a causal
model's directions only (docs/syntax.md). The encoder "tiny" of conftest.py keeps [CLS] and [SEP]."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from support.paths import REPO
from workflow_scripts.report.items import StudyTables
from workflow_scripts.report.paper_values import read_paper_items
from workflow_scripts.report.registry import paper_value_files
from workflow_scripts.report.summary import summary_figure
from workflow_scripts.surface.report import draw_surface
from workflow_scripts.syntax.report_panels import draw_dependency

PAPER_VALUES = paper_value_files(root=REPO)
DECODER = "gpt"
# (layer, head) -> alpha_1, pretrained; the random-init control has 0.05 everywhere.
FIRST_TOKEN = {(0, 0): 0.10, (0, 1): 0.20, (1, 0): 0.96, (1, 1): 0.30}
# (relation, direction, select split) -> (accuracy, head label, offset baseline); every row is scored on dev.
CAUSAL = {("all", "causal_union", "train"): (0.38, "2-2", 0.30),
          ("all", "causal_union", "dev"): (0.40, "2-2", 0.30),
          ("all", "dependent_to_preceding_head", "train"): (0.55, "1-2", 0.50),
          ("all", "head_to_preceding_dependent", "train"): (0.20, "2-1", 0.15),
          ("det", "causal_union", "train"): (0.70, "1-1", 0.45),
          ("det", "causal_union", "dev"): (0.75, "1-1", 0.45)}


def _csv(path: Path, rows: list[dict]) -> Path:
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _decoder_tables(folder: Path, model_type: str | None = "gpt2", bos: bool = False) -> dict[str, Path]:
    """models.csv, surface_heads.csv (no [CLS] or [SEP]; with ``bos``, a BOS as the first special token),
    first_token.csv and dependency_best.csv of "gpt"."""
    folder.mkdir(parents=True, exist_ok=True)
    card = {"name": DECODER, "num_layers": 2, "num_heads": 2, **({"model_type": model_type} if model_type else {})}
    surface, first = [], []
    for checkpoint in ("pretrained", "random"):
        for (layer, head), alpha in FIRST_TOKEN.items():
            alpha = alpha if checkpoint == "pretrained" else 0.05
            surface.append({"model": DECODER, "checkpoint": checkpoint, "layer": layer, "head": head, "prev": 0.2,
                            "self": 0.1, "next": 0.0, "cls": alpha if bos else 0.0, "sep": 0.0, "period": 0.05,
                            "comma": 0.02, "n_tokens": 500, "corpus": "wiki"})
            first.append({"model": DECODER, "checkpoint": checkpoint, "layer": layer, "head": head,
                          "first_token": alpha, "n_units": 480, "n_examples": 20, "corpus": "wiki"})
    best = [{"model": DECODER, "checkpoint": "pretrained", "treebank": "ewt", "relation": relation, "paper_label": "",
             "direction": direction, "select_split": select, "score_split": "dev", "layer": int(label[0]) - 1,
             "head": int(label[-1]) - 1, "head_label": label, "head_direction": direction, "accuracy": accuracy,
             "n": 100, "input_protocol": "words", "baseline_offset": -1, "baseline_accuracy": baseline,
             "ci_low": accuracy - 0.05, "ci_high": accuracy + 0.05}
            for (relation, direction, select), (accuracy, label, baseline) in CAUSAL.items()]
    return {"models": _csv(folder / "models.csv", [card]), "surface_heads": _csv(folder / "surface_heads.csv", surface),
            "first_token": _csv(folder / "first_token.csv", first),
            "dependency_best": _csv(folder / "dependency_best.csv", best)}


def _axes():
    import matplotlib.pyplot as plt

    return plt.subplots()


def _lines(ax) -> dict[str, list[float]]:
    """legend label -> the y values of the labelled (solid, pretrained) lines."""
    return {line.get_label(): [round(float(y), 6) for y in line.get_ydata()] for line in ax.get_lines()
            if not line.get_label().startswith("_") and len(line.get_ydata())}


@pytest.mark.parametrize("model_type, bos, label", [("gpt2", False, "first token"),
                                                    ("llama", True, "first token (BOS)"), (None, False, "first token")])
def test_panel_a_of_a_decoder_shows_its_first_token_not_cls_and_sep(study, context, tmp_path, model_type, bos,
                                                                    label):
    # A card naming a causal family, or, without one, text with no special token attended: the first token.
    import matplotlib.pyplot as plt

    tables = StudyTables({**study, **_decoder_tables(tmp_path / "gpt", model_type, bos)})
    figure, ax = _axes()
    assert draw_surface(ax, DECODER, tables, read_paper_items(PAPER_VALUES), context) is None
    lines = _lines(ax)
    assert lines == {label: [0.15, 0.63], "'.' or ','": [0.07, 0.07]}  # layer means of the heads; the sink: 2-1
    assert ax.get_title(loc="left").split("\n")[0] == "A  Attention to the first token per layer"
    assert ax.get_ylim()[1] == pytest.approx(0.63 * 1.15)
    plt.close(figure)


def test_panel_a_of_an_encoder_keeps_cls_sep_and_the_papers_range(study, context):
    import matplotlib.pyplot as plt

    figure, ax = _axes()
    assert draw_surface(ax, "tiny", StudyTables(study), read_paper_items(PAPER_VALUES), context) is None
    assert {k: v for k, v in _lines(ax).items() if not k.startswith("[C]")} == {
        "[CLS]": [0.2, 0.3], "[SEP]": [0.4, 0.6], "'.' or ','": [0.07, 0.07]}
    assert ax.get_title(loc="left").split("\n")[0] == "A  Attention to special tokens per layer"
    plt.close(figure)


def test_panel_a_of_a_decoder_without_a_first_token_table_says_so(study, context, tmp_path):
    import matplotlib.pyplot as plt

    tables = StudyTables({**study, **_decoder_tables(tmp_path / "gpt"), "first_token": None})
    figure, ax = _axes()
    assert draw_surface(ax, DECODER, tables, [], context) is None
    assert list(_lines(ax)) == ["'.' or ','"]
    assert "first token: not in this study" in ax.get_title(loc="left")
    plt.close(figure)


def _bars(ax) -> dict[str, list[float]]:
    return {c.get_label(): [round(b.get_width(), 6) for b in c] for c in ax.containers}


def test_panel_b_of_a_decoder_draws_its_causal_union_rows(study, context, tmp_path):
    import matplotlib.pyplot as plt

    tables = StudyTables({**study, **_decoder_tables(tmp_path / "gpt")})
    figure, ax = _axes()
    assert draw_dependency(ax, DECODER, tables, read_paper_items(PAPER_VALUES), context) is None
    bars = _bars(ax)  # relations in syntax.relations order: all, det (no case row)
    assert bars["held out\n(train→dev)"] == pytest.approx([38.0, 70.0])
    assert bars["same split\n(dev→dev, as [C])"] == pytest.approx([40.0, 75.0])
    assert bars["fixed offset,\nheld out (train→dev)"] == pytest.approx([30.0, 45.0])
    assert [t.get_text() for t in ax.texts] == ["2-2", "1-1"]
    assert "decoder: each arc in the direction its causal mask allows" in ax.get_title(loc="left")
    plt.close(figure)


def test_the_decoders_page_draws_both_panels(study, context, tmp_path, page):
    tables = {**study, **_decoder_tables(tmp_path / "gpt")}
    states = summary_figure(DECODER, tables, PAPER_VALUES, tmp_path / "gpt.png", context=context)
    assert states["A"] is None and states["B"] is None
    assert page["titles"][(0, 0)][0].startswith("A  Attention to the first token per layer")
    assert page["suptitle"] == "gpt (2 layers x 2 heads): what its attention heads do"
