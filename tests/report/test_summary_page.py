"""The summary page: the stages' panels on one A4 page, and its footnote, on hand-built tables (conftest.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from support.paths import REPO
from workflow_scripts.report.items import StudyTables
from workflow_scripts.report.paper_values import read_paper_items
from workflow_scripts.report.registry import panels, paper_value_files
from workflow_scripts.report.summary import data_note, grid_position, summary_figure
from workflow_scripts.syntax.report_panels import (
    draw_coreference,
    draw_dependency,
    draw_probes,
)

PAPER_VALUES = paper_value_files(root=REPO)
MODEL = "tiny"
HEADS_NOTE = ("headline heads selected on train, scored on dev: held out (train→dev); light bars: selected and "
              "scored on dev, same split (dev→dev, as [C])")


def test_summary_page_with_and_without_fine_tuning(study, context, tmp_path, page):
    states = summary_figure(MODEL, study, PAPER_VALUES, tmp_path / "full.png", tmp_path / "full.pdf",
                            context=context)
    assert states == dict.fromkeys("ABCDEF")
    assert (tmp_path / "full.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "full.pdf").read_bytes()[:4] == b"%PDF"
    # Each stage's panel sits where its letter says: A-C the first row, D-F the second.
    titles = {cell: title.split("\n", 1)[0] for cell, (title, _) in page["titles"].items()}
    assert titles == {(0, 0): "A  Attention to special tokens per layer",
                      (0, 1): "B  Best head per dependency relation (EWT)",
                      (0, 2): "C  Attention probes, UAS (EWT)",
                      (1, 0): "D  Coreference: antecedent accuracy (GUM)",
                      (1, 1): "E  Fine-tuning: dev score vs majority baseline",
                      (1, 2): "F  Last layer: change of most-attended word category"}
    # The footnote, from the panels' data notes (B-C and E-F share theirs) and the treebank panels' protocol.
    assert page["suptitle"] == "tiny (2 layers x 2 heads): what its attention heads do"
    assert len(page["footnote"]) == 1
    footnote = page["footnote"][0].replace("\n", " ")
    assert footnote.startswith(
        f"Data: A wiki segments; B-C EWT treebank (gold trees; {HEADS_NOTE}); D GUM windows (gold coreference; "
        "held out: selected on one half of the documents, scored on the other); B-C-D input: gold words joined by "
        "spaces ([C]); E-F each task's dev split; text without gold annotation tagged by spacy. Black diamonds: ")

    fine_tuning = ("finetune_metrics", "pattern_classes", "pattern_classifier", "lexical_top_layers",
                   "lexical_last_layer")
    tables = {name: (None if name in fine_tuning else path) for name, path in study.items()}
    reason = "the study fine-tunes no model"
    states = summary_figure(MODEL, tables, PAPER_VALUES, tmp_path / "bare.png", context=context,
                            absent=dict.fromkeys(fine_tuning, reason))
    assert states["E"] == reason and states["F"] == reason
    assert all(states[k] is None for k in "ABCD")
    assert (tmp_path / "bare.png").read_bytes()[:4] == b"\x89PNG"

    # Nothing at all for a model: every panel says why instead of disappearing.
    states = summary_figure("absent-model", study, PAPER_VALUES, tmp_path / "none.png", context=context)
    assert all(states.values())
    assert "input:" not in page["footnote"][0]  # no rows, no protocol to name


def test_the_footnote_follows_the_config_and_the_tables(study, syntax_tables, context):
    declared = panels()
    same_split = replace(context, select_split="dev", annotator="")
    note = data_note(declared, StudyTables(study), MODEL, same_split)
    assert note == ("Data: A wiki segments; B-C EWT treebank (gold trees; heads selected and scored on dev, same "
                    "split (dev→dev, as [C])); D GUM windows (gold coreference; held out: selected on one half of the "
                    "documents, scored on the other); B-C-D input: gold words joined by spaces ([C]); E-F each task's "
                    "dev split.")
    # Tables without an input_protocol column: no input clause; a table per protocol: letters grouped by protocol.
    assert "input:" not in data_note(declared, StudyTables({**study, **syntax_tables(None)}), MODEL, context)
    mixed = {**study, "probes": syntax_tables("text")["probes"]}
    assert ("D GUM windows (gold coreference; held out: selected on one half of the documents, scored on the other); "
            "B-D input: gold words joined by spaces ([C]); C input: sentence text; E-F") in \
        data_note(declared, StudyTables(mixed), MODEL, context)


def test_letters_place_panels_row_by_row():
    assert [grid_position(letter) for letter in "ABCDEFG"] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2),
                                                                (2, 0)]
    declared = panels()
    assert list(declared) == list("ABCDEF")
    assert [p.protocol_table for p in declared.values()] == [None, "dependency_best", "probes", "coref_best", None,
                                                             None]


def test_the_page_works_without_an_input_protocol_column(study, syntax_tables, context, tmp_path):
    tables = {**study, **syntax_tables(None)}
    assert summary_figure(MODEL, tables, PAPER_VALUES, tmp_path / "s.png", context=context) == dict.fromkeys("ABCDEF")


def _axes():
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots()
    return figure, ax


def _bars(ax) -> dict[str, list[float]]:
    """label -> bar lengths (widths of horizontal bars, heights of vertical ones) of every bar series."""
    out = {}
    for container in ax.containers:
        horizontal = container.orientation == "horizontal"
        out[container.get_label()] = [round(b.get_width() if horizontal else b.get_height(), 6) for b in container]
    return out


@pytest.mark.parametrize("inputs, text", [("words", "input: gold words joined by spaces ([C])"),
                                          ("text", "input: sentence text"), (None, None)])
def test_summary_panels_show_held_out_heads_and_the_input(study, syntax_tables, context, inputs, text):
    import matplotlib.pyplot as plt

    items = read_paper_items(PAPER_VALUES)
    tables = StudyTables({**study, **syntax_tables(inputs)})
    figure, ax = _axes()
    assert draw_dependency(ax, MODEL, tables, items, context) is None
    bars = _bars(ax)  # relations in syntax.relations order: all, det, case
    assert bars["held out\n(train→dev)"] == pytest.approx([38.0, 85.0, 65.0])
    assert bars["same split\n(dev→dev, as [C])"] == pytest.approx([40.0, 90.0, 70.0])
    assert bars["fixed offset,\nheld out (train→dev)"] == pytest.approx([30.0, 30.0, 30.0])
    assert [t.get_text() for t in ax.texts] == ["2-2", "1-2", "1-2"]  # the held-out heads' labels
    title = ax.get_title(loc="left")
    assert (text in title) if text else "input:" not in title
    plt.close(figure)

    figure, ax = _axes()
    assert draw_coreference(ax, MODEL, tables, items, context) is None
    bars = _bars(ax)
    assert bars["head, held out (a→b, b→a)"] == pytest.approx([55.0] * 4)
    assert bars["head, same split (all→all, [C])"] == pytest.approx([60.0] * 4)
    assert "a→b 2-1 / b→a 1-2" in ax.get_title(loc="left")
    plt.close(figure)

    figure, ax = _axes()
    assert draw_probes(ax, MODEL, tables, items, context) is None
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[-1].replace("\n", " ") == "MST, best head train→ dev"
    assert "selected on train" in ax.get_title(loc="left")
    plt.close(figure)
