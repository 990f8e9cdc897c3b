"""The report reads one treebank of the syntax tables, ``StudyContext.syntax_treebank`` (conftest.py: ewt and ptb)."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from support.paths import REPO
from workflow_scripts.report.comparison import paper_comparison
from workflow_scripts.report.formatting import COMPARED, NOT_COMPUTED
from workflow_scripts.report.items import StudyContext, StudyTables
from workflow_scripts.report.paper_values import read_paper_items
from workflow_scripts.report.registry import paper_value_files
from workflow_scripts.syntax.report_items import treebank_note
from workflow_scripts.syntax.report_panels import draw_dependency, draw_probes

PAPER_VALUES = paper_value_files(root=REPO)
MODEL = "tiny"
PTB = "WSJ (PTB sample)"


def _one(frame: pd.DataFrame, item: str) -> pd.Series:
    rows = frame[frame["item"] == item]
    assert len(rows) == 1, f"{item}: {len(rows)} rows\n{rows}"
    return rows.iloc[0]


def test_the_comparison_shows_the_value_of_the_syntax_treebank(context, tmp_path):
    """One `all` row per treebank, selected on train and scored on dev: ewt 0.40, ptb 0.90."""
    common = {"model": MODEL, "checkpoint": "pretrained", "relation": "all", "direction": "dependent_to_head",
              "select_split": "train", "score_split": "dev", "layer": 0, "head": 0, "head_label": "1-1", "n": 10}
    path = tmp_path / "dependency_best.csv"
    pd.DataFrame([{**common, "treebank": "ewt", "accuracy": 0.40},
                  {**common, "treebank": "ptb", "accuracy": 0.90}]).to_csv(path, index=False)
    values = tmp_path / "values.csv"
    values.write_text("paper,analysis,item,value,unit,note,source\nC,dependency_best,all,40.0,accuracy %,,x\n")
    frame = paper_comparison([values], {"dependency_best": path}, tmp_path / "c.csv", context=context)
    row = _one(frame, "all")
    assert row["study_value"] == pytest.approx(40.0) and row["status"] == COMPARED
    assert "selected on EWT train, scored on EWT dev" in row["study_detail"]
    frame = paper_comparison([values], {"dependency_best": path}, tmp_path / "c.csv",
                             context=replace(context, syntax_treebank="ptb"))
    row = _one(frame, "all")
    assert row["study_value"] == pytest.approx(90.0)
    assert f"selected on {PTB} train, scored on {PTB} dev" in row["study_detail"]


def test_every_syntax_item_reads_the_syntax_treebank(study, context, tmp_path):
    frame = paper_comparison(PAPER_VALUES, study, tmp_path / "c.csv", context=context)
    assert _one(frame, "all")["study_value"] == pytest.approx(38.0)  # ptb's all: 99
    assert _one(frame, "attn+glove")["study_value"] == pytest.approx(70.0)  # ptb's probes: 95
    assert _one(frame, "right-branching")["study_value"] == pytest.approx(30.0)
    assert _one(frame, "det")["input_protocol"] == "words"  # ptb's rows were fed as text

    ptb = paper_comparison(PAPER_VALUES, study, tmp_path / "p.csv", context=replace(context, syntax_treebank="ptb"))
    every = _one(ptb, "all")
    assert every["study_value"] == pytest.approx(99.0) and every["input_protocol"] == "text"
    det = _one(ptb, "det")  # an unlabelled treebank has `all` only
    assert det["status"] == NOT_COMPUTED and "no row for UD det" in det["reason"]
    probe = _one(ptb, "attn+glove")
    assert probe["study_value"] == pytest.approx(95.0) and f"on {PTB} dev" in probe["study_detail"]
    assert f"{PTB} train sentences" in probe["study_detail"]

    absent = paper_comparison(PAPER_VALUES, study, tmp_path / "g.csv",
                              context=replace(context, syntax_treebank="gum"))
    assert "no rows for model tiny on treebank gum" in _one(absent, "all")["reason"]
    assert "no rows for model tiny on treebank gum" in _one(absent, "attn")["reason"]
    assert _one(absent, "head 5-4 all")["status"] == COMPARED  # coref_best has no treebank column


def test_tables_without_a_treebank_column_are_read_whole(study, syntax_tables, context, tmp_path):
    tables = {**study, **syntax_tables("words", treebanks=False)}
    assert "treebank" not in pd.read_csv(tables["dependency_best"]).columns
    frame = paper_comparison(PAPER_VALUES, tables, tmp_path / "c.csv", context=context)
    assert _one(frame, "det")["study_value"] == pytest.approx(85.0)
    assert _one(frame, "attn")["study_value"] == pytest.approx(60.0)


def _bars(ax) -> dict[str, list[float]]:
    return {c.get_label(): [round(b.get_width() if c.orientation == "horizontal" else b.get_height(), 6) for b in c]
            for c in ax.containers}


def test_panels_draw_the_syntax_treebank(study, context):
    import matplotlib.pyplot as plt

    items = read_paper_items(PAPER_VALUES)
    tables = StudyTables(study)
    for ctx, relations, held_out, name in ((context, ["all", "det", "case"], [38.0, 85.0, 65.0], "EWT"),
                                           (replace(context, syntax_treebank="ptb"), ["all"], [99.0], PTB)):
        figure, ax = plt.subplots()
        assert draw_dependency(ax, MODEL, tables, items, ctx) is None
        assert [t.get_text().split(" ")[0] for t in ax.get_yticklabels()] == relations
        assert _bars(ax)["held out\n(train→dev)"] == pytest.approx(held_out)
        assert ax.get_title(loc="left").startswith(f"B  Best head per dependency relation ({name})")
        plt.close(figure)
        figure, ax = plt.subplots()
        assert draw_probes(ax, MODEL, tables, items, ctx) is None
        assert ax.get_title(loc="left").startswith(f"C  Attention probes, UAS ({name})")
        attn = [t.get_text() for t in ax.get_xticklabels()].index("attn")
        assert list(ax.containers[0])[attn].get_height() == pytest.approx(60.0 if name == "EWT" else 95.0)
        plt.close(figure)


def test_the_treebank_note_names_the_treebank_and_a_language_other_than_english(context):
    assert treebank_note(context).startswith("EWT treebank (gold trees; headline heads selected on train")
    assert treebank_note(replace(context, syntax_treebank="ptb")).startswith(f"{PTB} treebank (gold trees; ")
    german = replace(context, syntax_treebank="gsd", treebank_names={}, languages={"gsd": "de"})
    assert treebank_note(german).startswith("GSD treebank (language: de; gold trees; ")


def test_the_context_of_an_older_study_still_reads():
    older = {"models": ["tiny"], "select_split": "train", "score_split": "dev", "glove": False, "resamples": 100,
             "input_protocol": "words", "relations": ["all"], "unknown_key": 1}
    ctx = StudyContext.from_mapping(older)
    assert (ctx.syntax_treebank, dict(ctx.treebank_names), dict(ctx.languages)) == ("ewt", {}, {})
    assert ctx.models == ("tiny",) and ctx.treebank_name() == "EWT"
    newer = StudyContext.from_mapping({**older, "syntax_treebank": "ptb", "treebank_names": {"ptb": PTB},
                                       "languages": {"ptb": "en"}})
    assert (newer.syntax_treebank, newer.treebank_name(), newer.treebank_name("ewt")) == ("ptb", PTB, "EWT")
    assert dict(newer.languages) == {"ptb": "en"}
