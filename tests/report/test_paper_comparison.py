"""The paper comparison: the study's numbers beside the published ones, on hand-built tables (conftest.py)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pandas as pd
import pytest

from support.paths import REPO
from workflow_scripts.core.errors import InputFormatError
from workflow_scripts.finetune_effects.report import tasks_in_note
from workflow_scripts.report.comparison import paper_comparison
from workflow_scripts.report.formatting import COMPARED, NOT_COMPUTED
from workflow_scripts.report.paper_values import read_paper_items, read_paper_values
from workflow_scripts.report.registry import paper_value_files
from workflow_scripts.syntax.report_items import coref_key, probe_key, relation_of

# The published numbers of every stage, as the report rules pass them.
PAPER_VALUES = paper_value_files(root=REPO)
MODEL = "tiny"


def _rows(frame: pd.DataFrame, item: str, **where: str) -> pd.DataFrame:
    rows = frame[frame["item"] == item]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    return rows


def _one(frame: pd.DataFrame, item: str, **where: str) -> pd.Series:
    rows = _rows(frame, item, **where)
    assert len(rows) == 1, f"{item} {where}: {len(rows)} rows\n{rows}"
    return rows.iloc[0]


def test_the_comparison_pairs_paper_and_study_values(study, context, tmp_path):
    out = tmp_path / "paper_comparison.csv"
    paper_comparison(PAPER_VALUES, study, out, context=context)
    frame = pd.read_csv(out, keep_default_na=False, na_values=[""], dtype={"paper_value": str, "study_value": str})
    frame["value"] = pd.to_numeric(frame["study_value"], errors="coerce")

    det = _one(frame, "det")  # [C] Table 1: held out (selected on train, scored on dev), the better direction
    assert (det["paper"], det["paper_value"], det["checkpoint"]) == ("C", "94.3", "pretrained")
    assert det["value"] == pytest.approx(85.0) and det["difference"] == pytest.approx(-9.3)
    assert det["status"] == COMPARED
    assert "best head 1-2" in det["study_detail"] and "n=50" in det["study_detail"]
    assert "same split (dev→dev, as [C]): 90.0, head 2-1" in det["study_detail"]
    assert "random-init control 8.0" in det["study_detail"]
    assert _one(frame, "all")["value"] == pytest.approx(38.0)
    # pobj is UD case with the direction reversed.
    pobj = _one(frame, "pobj (UD case reversed)")
    assert pobj["value"] == pytest.approx(65.0) and "UD case" in pobj["study_detail"]
    # The random-init control is no row of its own for an item about the pretrained model.
    assert "random" not in set(_rows(frame, "det")["checkpoint"])

    assert _one(frame, "head 5-4 pronoun")["value"] == pytest.approx(55.0)  # halves a->b, b->a pooled
    nearest = _one(frame, "nearest mention all")
    assert nearest["checkpoint"] == "none" and nearest["value"] == pytest.approx(30.0)

    random_probe = _one(frame, "random-init attn+glove")
    assert random_probe["checkpoint"] == "random" and random_probe["value"] == pytest.approx(20.0)
    assert _one(frame, "attn+glove")["value"] == pytest.approx(70.0)
    assert _one(frame, "right-branching")["difference"] == pytest.approx(30.0 - 26)

    previous = _one(frame, "heads >50% on previous token")
    assert previous["value"] == 2 and "1-1 2-1" in previous["study_detail"]
    assert _one(frame, "heads >50% on next token")["value"] == 1

    cnn = _one(frame, "CNN F1")
    assert cnn["value"] == pytest.approx(0.8) and "rule" in cnn["study_detail"]
    assert "100 held-out maps of 30 held-out examples" in cnn["study_detail"]

    # [K]: the final fine-tuned checkpoint of each task, not the intermediate step.
    hetero = _one(frame, "Heterogeneous share", task="mrpc")
    assert hetero["checkpoint"] == "mrpc.seed1.final" and hetero["value"] == pytest.approx(45.0)
    assert "paper's MRPC: 32" in hetero["study_detail"]
    sst2 = _one(frame, "Heterogeneous share", task="sst2")  # analysed, never fine-tuned
    assert sst2["checkpoint"] == "pretrained" and "pretrained only" in sst2["study_detail"]

    content = _one(frame, "layers preferring content words", checkpoint="mrpc.seed1.final")
    assert content["study_value"] == "1, 2" and content["status"] == COMPARED
    assert "2 layers (paper: 12)" in content["study_detail"]

    direction = _one(frame, "fine-tuning direction", task="mrpc")
    assert direction["study_value"] == "content -3.0 pts, function +2.0 pts"
    assert "as predicted" in direction["study_detail"]
    # A p at the floor 1/B (B = 1000) prints as "< 0.001", never as 0.
    assert "content as predicted (significant, p < 0.001)" in direction["study_detail"]
    assert "function as predicted (significant, p=0.01)" in direction["study_detail"]


def test_a_p_value_prints_against_the_resamples_of_its_table():
    from workflow_scripts.report.formatting import p_text

    assert p_text(0.001, 1000) == "p < 0.001" and p_text(0.005, 200) == "p < 0.005"
    assert p_text(0.002, 1000) == "p=0.002" and p_text(float("nan"), 1000) == ""
    # A row without its resamples (not written by this workflow): no floor is known, the p prints as it is.
    assert p_text(0.001, None) == "p=0.001"


def test_items_the_study_cannot_compute_have_no_value_and_a_reason(study, context, tmp_path):
    # No coreference table in this study: its items say why, with no number.
    tables = {**study, "coref_best": None}
    context = replace(context, glove=False)
    frame = paper_comparison(PAPER_VALUES, tables, tmp_path / "c.csv", context=context,
                             absent={"coref_best": "the study scores no GUM coreference"})
    missing = frame[frame["status"] == NOT_COMPUTED]
    assert (missing["study_value"] == "").all() and (missing["reason"] != "").all()
    compared = frame[frame["status"] == COMPARED]
    assert (compared["study_value"] != "").all() and (compared["reason"] == "").all()

    assert "not in syntax.relations" in _one(frame, "aux:pass")["reason"]
    # prep stands for UD obl, not scored here
    assert "obl" in _one(frame, "prep (UD obl reversed; approximate)")["reason"]
    assert set(_rows(frame, "head 5-4 all")["reason"]) == {"the study scores no GUM coreference"}
    assert "study.glove" in _one(frame, "distances+glove")["reason"]
    assert "2 layers" in _one(frame, "attention on [SEP] in layers 6-10")["reason"]
    assert "not in study.tasks" in _one(frame, "Heterogeneous share", task="qqp")["reason"]
    assert "not in study.tasks" in _one(frame, "fine-tuning direction", task="mnli")["reason"]
    # sst2 is in the study but has no fine-tuned model: a reason, not a number.
    sst2 = _one(frame, "fine-tuning direction", task="sst2")
    assert sst2["status"] == NOT_COMPUTED and "fine-tunes no model" in sst2["reason"]

    # Every paper item has at least one row for the model.
    items = read_paper_items(PAPER_VALUES)
    assert {(i.paper, i.item) for i in items} == set(zip(frame["paper"], frame["item"]))


def test_a_model_without_rows_and_an_unknown_analysis_are_reported_not_invented(study, context, tmp_path):
    values = tmp_path / "paper_values.csv"
    values.write_text("paper,analysis,item,value,unit,note,source\n"
                      "C,dependency_best,det,94.3,accuracy %,,x\n"
                      "C,attention_flow,rollout,12,%,,y\n")
    context = replace(context, models=(MODEL, "other"))
    frame = paper_comparison([values], study, tmp_path / "c.csv", context=context)
    assert _one(frame, "det", model=MODEL)["status"] == COMPARED
    other = _one(frame, "det", model="other")
    assert other["status"] == NOT_COMPUTED and "no rows for model other" in other["reason"]
    assert set(_rows(frame, "rollout")["status"]) == {NOT_COMPUTED}
    # The reason names the analyses the stages answer, in stage order.
    assert _rows(frame, "rollout")["reason"].iloc[0] == (
        "no study analysis answers paper analysis 'attention_flow' (known: surface, sink rate, head roles, "
        "dependency_best, coreference, probes, pattern_classifier, pattern_classes, lexical)")


def test_paper_values_are_checked(tmp_path):
    bad = tmp_path / "paper_values.csv"
    bad.write_text("paper,analysis,item,value,unit,note,source\nC,probes,attn,61,UAS,,x\nX,probes,attn,61,UAS,,x\n")
    with pytest.raises(InputFormatError, match=r"line 3: paper 'X'"):
        read_paper_values(bad)
    bad.write_text("paper,analysis,item,value\nC,probes,attn,61\n")
    with pytest.raises(InputFormatError, match="columns"):
        read_paper_values(bad)


def test_item_parsers():
    assert relation_of("det") == ("det", False)
    assert relation_of("pobj (UD case reversed)") == ("case", True)
    assert relation_of("dobj") == ("obj", False)
    assert relation_of("prep (UD obl reversed; approximate)")[0] == "obl"
    assert relation_of("rollout") == (None, False)
    assert coref_key("head 5-4 nominal") == ("head", "nominal")
    assert coref_key("head word match all") == ("head_word_match", "all")
    assert probe_key("random-init attn+glove") == ("random", "attn_glove")
    assert probe_key("distances+glove") == ("none", "distance_glove")
    assert tasks_in_note("from MRPC (32) to QQP (61); SST-2 (40)") == {"mrpc": 32.0, "qqp": 61.0, "sst2": 40.0}


def test_entry_points_hand_the_rule_over(study, context, tmp_path):
    from workflow_scripts.entrypoints import ENTRY_POINTS, _import_all

    _import_all()
    present = {name: str(path) for name, path in study.items() if name != "coref_best"}
    inputs = SimpleNamespace(paper_values=[str(path) for path in PAPER_VALUES], get=present.get)
    params = SimpleNamespace(context={**vars(context), "predictions": dict(context.predictions)},
                             absent={"coref_best": "no GUM in this study"})
    smk = SimpleNamespace(input=inputs, params=params, output=[str(tmp_path / "c.csv")],
                          wildcards=SimpleNamespace(model=MODEL))
    ENTRY_POINTS["paper_comparison"](smk)
    frame = pd.read_csv(tmp_path / "c.csv", keep_default_na=False)
    assert set(_rows(frame, "head 5-4 all")["reason"]) == {"no GUM in this study"}
    smk.output = SimpleNamespace(png=str(tmp_path / "s.png"), pdf=str(tmp_path / "s.pdf"))
    ENTRY_POINTS["summary_figure"](smk)
    assert (tmp_path / "s.png").exists() and (tmp_path / "s.pdf").exists()


@pytest.mark.parametrize("caption", ["report_paper_comparison.rst", "report_summary_figure.rst"])
def test_captions_render_as_snakemake_renders_them(caption, context):
    # Snakemake 9 renders a caption with Jinja2 (snakemake.params/.wildcards/.config), then docutils.
    from docutils.core import publish_parts
    from jinja2 import Environment, StrictUndefined

    env = Environment(trim_blocks=True, lstrip_blocks=True, undefined=StrictUndefined)
    snakemake = SimpleNamespace(params=SimpleNamespace(context={**vars(context)}),
                                wildcards=SimpleNamespace(model=MODEL), config={})
    text = env.from_string((REPO / "report" / caption).read_text()).render(snakemake=snakemake)
    html = publish_parts(text, writer="html", settings_overrides={"halt_level": 2})["body"]
    assert "spacy" in html and "{{" not in html
    if caption == "report_summary_figure.rst":
        assert MODEL in html


def test_headline_heads_are_held_out_with_the_same_split_number_beside_them(study, context, tmp_path):
    frame = paper_comparison(PAPER_VALUES, study, tmp_path / "c.csv", context=context)
    frame = pd.read_csv(tmp_path / "c.csv", keep_default_na=False, dtype=str)
    det = _one(frame, "det")
    # Held out: selected on train, scored on dev (85.0, head 1-2); [C]'s protocol, dev -> dev, beside it (90.0).
    assert float(det["study_value"]) == pytest.approx(85.0) and det["protocol"] == "held out (train→dev)"
    assert float(det["same_split_value"]) == pytest.approx(90.0)
    assert det["same_split_protocol"] == "same split (dev→dev, as [C])"
    assert float(det["difference"]) == pytest.approx(85.0 - 94.3)
    assert float(det["same_split_difference"]) == pytest.approx(90.0 - 94.3)
    assert "best head 1-2 (dependent_to_head) selected on EWT train, scored on EWT dev" in det["study_detail"]
    assert det["input_protocol"] == "words" and "input: gold words joined by spaces ([C])" in det["study_detail"]
    # The held-out row's control (selected on train too) and p-values: 1/B reads "< 1/B", never 0.
    assert "random-init control 8.0 (head 2-2), head vs control p=0.034" in det["study_detail"]
    assert "offset baseline 30.0 (offset +1), head vs baseline p < 0.001" in det["study_detail"]
    every = _one(frame, "all")
    assert (float(every["study_value"]), float(every["same_split_value"])) == pytest.approx((38.0, 40.0))

    # Coreference: the head selected on one half of the documents, scored on the other, both ways pooled:
    # (0.5 x 30 + 0.7 x 10) / 40 = 0.55; selected and scored on all windows: 0.60.
    head = _one(frame, "head 5-4 all")
    assert float(head["study_value"]) == pytest.approx(55.0) and float(head["same_split_value"]) == pytest.approx(60.0)
    assert head["protocol"] == "held out (GUM halves a→b, b→a)"
    assert head["same_split_protocol"] == "same split (all→all, as [C])"
    assert "a→b: head 2-1 50.0 (n=30)" in head["study_detail"] and "n=40 mentions" in head["study_detail"]
    assert head["input_protocol"] == "words"
    nearest = _one(frame, "nearest mention all")  # a baseline selects nothing
    assert nearest["protocol"] == "" and nearest["same_split_value"] == "" and nearest["input_protocol"] == "words"
    probe = _one(frame, "attn+glove")
    assert probe["protocol"] == "held out (train→dev)" and probe["input_protocol"] == "words"
    # Rows that do not rest on the syntax tables have no input protocol.
    assert _one(frame, "CNN F1")["input_protocol"] == "" and _one(frame, "CNN F1")["protocol"] == ""
    assert set(_rows(frame, "heads >50% on previous token")["input_protocol"]) == {""}


def test_the_comparison_works_without_an_input_protocol_column(study, syntax_tables, context, tmp_path):
    tables = {**study, **syntax_tables(None)}
    frame = paper_comparison(PAPER_VALUES, tables, tmp_path / "c.csv", context=context)
    assert set(frame["input_protocol"]) == {""}
    det = _one(frame, "det")
    assert det["study_value"] == pytest.approx(85.0) and "input:" not in det["study_detail"]


def test_a_relation_without_a_held_out_row_is_not_computed(study, context, tmp_path):
    rows = pd.read_csv(study["dependency_best"])
    rows = rows[~((rows["relation"] == "case") & (rows["select_split"] == "train"))]
    rows.to_csv(tmp_path / "dependency_best.csv", index=False)
    tables = {**study, "dependency_best": tmp_path / "dependency_best.csv"}
    frame = paper_comparison(PAPER_VALUES, tables, tmp_path / "c.csv", context=context)
    pobj = _one(frame, "pobj (UD case reversed)")
    assert pobj["status"] == NOT_COMPUTED and pobj["study_value"] == ""
    assert "selected on train and scored on dev" in pobj["reason"]
    assert "same split (dev→dev, as [C]): 70.0" in pobj["study_detail"]


def test_a_checkpoint_measured_for_its_roles_alone_is_left_out_of_the_paper_comparison(study, context, tmp_path):
    """A fine-tuned checkpoint of roles.finetuned (dumped on the score split alone, docs/roles.md) has the dependency
    best heads of dev -> dev only and its coreference rows: role agreement's, not the paper's."""
    tables = dict(study)
    for name in ("dependency_best", "coref_best"):
        rows = pd.read_csv(study[name])
        tuned = rows[rows["checkpoint"] == "pretrained"].assign(checkpoint="cola.seed42.final")
        if name == "dependency_best":
            tuned = tuned[tuned["select_split"] == "dev"]
        pd.concat([rows, tuned]).to_csv(tmp_path / f"{name}.csv", index=False)
        tables[name] = tmp_path / f"{name}.csv"
    with_it = paper_comparison(PAPER_VALUES, tables, tmp_path / "a.csv", context=context)
    assert "cola.seed42.final" in set(_rows(with_it, "det")["checkpoint"])  # (a not-computed row: no held-out one)
    roles = replace(context, role_checkpoints=("cola.seed42.final",))
    frame = paper_comparison(PAPER_VALUES, tables, tmp_path / "b.csv", context=roles)
    before = paper_comparison(PAPER_VALUES, study, tmp_path / "c.csv", context=context)
    assert "cola.seed42.final" not in set(frame["checkpoint"].astype(str)) and len(frame) == len(before)


def test_select_and_score_on_one_split_is_labelled_as_such(study, context, tmp_path):
    context = replace(context, select_split="dev")
    frame = paper_comparison(PAPER_VALUES, study, tmp_path / "c.csv", context=context)
    det = _one(frame, "det")
    assert det["study_value"] == pytest.approx(90.0) and det["protocol"] == "same split (dev→dev, as [C])"




def test_the_published_numbers_are_split_by_stage_and_ordered_by_paper_then_source(tmp_path):
    # One file per stage that declares published numbers, in stage order.
    assert [(path.parent, path.name) for path in PAPER_VALUES] == [
        (REPO / "report" / "paper_values", name) for name in ("surface.csv", "syntax.csv", "finetune_effects.csv")]
    # Whatever the file order, the rows come out by paper (C, K, L, G, W), then by the natural order of the source,
    # where 'Table' sorts before 'section' (capitals first); rows with one source keep their file order.
    expected = ([("C", "Clark et al. 2019, Table 1")] * 15 + [("C", "Clark et al. 2019, Table 2")] * 6
                + [("C", "Clark et al. 2019, Table 3")] * 5 + [("C", "Clark et al. 2019, section 3")] * 3
                + [("K", "Kovaleva et al. 2019, section 4.1")] * 2 + [("L", "Jang et al. 2024")] * 3
                + [("G", "Gu et al. 2025, Table 1 (Left), p. 5")] * 12
                + [("G", "Gu et al. 2025, Table 1 (Right), p. 5")] * 5 + [("W", "Wang et al. 2023, section 3")] * 3)
    for files in (PAPER_VALUES, PAPER_VALUES[::-1]):
        items = read_paper_items(files)
        assert [(i.paper, i.source) for i in items] == expected
        assert [i.item for i in items][:3] == ["all", "det", "obj"]  # syntax.csv's own order within Table 1
        assert [i.item for i in items][26:29] == ["heads >50% on previous token", "heads >50% on next token",
                                                  "attention on [SEP] in layers 6-10"]

    # Numbers in a source compare as numbers: Table 10 after Table 2.
    header = "paper,analysis,item,value,unit,note,source\n"
    first = tmp_path / "first.csv"
    first.write_text(header + 'L,lexical,x,1,,,"Jang et al. 2024"\nC,probes,ten,1,UAS,,"Clark, Table 10"\n')
    second = tmp_path / "second.csv"
    second.write_text(header + 'C,probes,two,1,UAS,,"Clark, Table 2"\nK,pattern_classes,k,1,,,"Kovaleva"\n'
                      'C,probes,two-b,1,UAS,,"Clark, Table 2"\n')
    assert [i.item for i in read_paper_items([first, second])] == ["two", "two-b", "ten", "k", "x"]
    assert [i.item for i in read_paper_items(first)] == ["ten", "x"]  # one path is a list of one
