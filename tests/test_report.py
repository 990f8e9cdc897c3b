"""The report stage: the comparison with the papers' numbers and the summary page, on hand-built tables."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from workflow_scripts.report.comparison import (
    COMPARED,
    NOT_COMPUTED,
    TABLES,
    StudyContext,
    StudyTables,
    coref_key,
    paper_comparison,
    probe_key,
    read_paper_values,
    relation_of,
    tasks_in_note,
)
from workflow_scripts.report.summary import (
    _panel_coreference,
    _panel_dependency,
    _panel_probes,
    summary_figure,
)
from workflow_scripts.core.errors import InputFormatError

REPO = Path(__file__).resolve().parents[1]
PAPER_VALUES = REPO / "report" / "paper_values.csv"
MODEL = "tiny"
CONTEXT = StudyContext(
    models=(MODEL,), relations=("all", "det", "case"), select_split="train", score_split="dev",
    tasks=("cola", "sst2", "mrpc"), finetuned_tasks=("cola", "mrpc"), analysed_tasks=("cola", "sst2", "mrpc"),
    predictions={"syntactic": ["cola", "mrpc", "mnli"], "semantic": ["sst2", "qqp", "wic"]}, glove=True,
    annotator="spacy")


def _csv(path: Path, rows: list[dict]) -> Path:
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


# (relation, direction, checkpoint, select split) -> (accuracy, head label, n); every row is scored on dev.
DEPENDENCY = {
    ("all", "dependent_to_head", "pretrained", "dev"): (0.40, "2-1", 100),
    ("all", "dependent_to_head", "pretrained", "train"): (0.38, "2-2", 100),
    ("all", "dependent_to_head", "random", "dev"): (0.05, "1-1", 100),
    ("all", "dependent_to_head", "random", "train"): (0.04, "1-1", 100),
    ("det", "either", "pretrained", "dev"): (0.90, "2-1", 50),
    ("det", "either", "pretrained", "train"): (0.85, "1-2", 50),
    ("det", "either", "random", "dev"): (0.10, "1-1", 50),
    ("det", "either", "random", "train"): (0.08, "2-2", 50),
    ("det", "dependent_to_head", "pretrained", "dev"): (0.88, "2-3", 50),
    ("case", "either", "pretrained", "dev"): (0.70, "1-2", 20),
    ("case", "either", "pretrained", "train"): (0.65, "1-2", 20),
    ("case", "either", "random", "dev"): (0.12, "2-2", 20),
}
# (checkpoint, select documents, score documents) -> (accuracy of the best head, head label, mentions), every type.
COREF_HEADS = {("pretrained", "all", "all"): (0.60, "1-2", 40), ("pretrained", "a", "b"): (0.50, "2-1", 30),
               ("pretrained", "b", "a"): (0.70, "1-2", 10), ("random", "all", "all"): (0.02, "1-1", 40),
               ("random", "a", "b"): (0.02, "1-1", 30), ("random", "b", "a"): (0.02, "2-2", 10)}


def _dependency(tmp_path: Path, inputs: str | None = "words") -> Path:
    rows = []
    for (relation, direction, checkpoint, select), (accuracy, label, n) in DEPENDENCY.items():
        control = DEPENDENCY.get((relation, direction, "random", select)) if checkpoint == "pretrained" else None
        rows.append({"model": MODEL, "checkpoint": checkpoint, "relation": relation, "paper_label": "",
                     "direction": direction, "select_split": select, "score_split": "dev",
                     "layer": int(label[0]) - 1, "head": int(label[-1]) - 1, "head_label": label,
                     "head_direction": "dependent_to_head", "accuracy": accuracy, "n": n, "baseline_offset": 1,
                     "baseline_direction": "dependent_to_head", "baseline_accuracy": 0.3,
                     # 1/B (B = 1000): no resample reached 0; an older table's 0 reads the same.
                     "p_vs_baseline": 0.001 if select == "train" else 0.0,
                     "control_checkpoint": "random" if control else "",
                     "control_head_label": control[1] if control else "",
                     "control_accuracy": control[0] if control else None,
                     "p_vs_control": 0.034 if control else None, "ci_low": accuracy - 0.05,
                     "ci_high": accuracy + 0.05, **({"input_protocol": inputs} if inputs else {})})
    return _csv(tmp_path / "dependency_best.csv", rows)


def _coref(tmp_path: Path, inputs: str | None = "words") -> Path:
    rows = []
    for (checkpoint, select, score), (head_accuracy, label, n) in COREF_HEADS.items():
        for mention in ("all", "pronoun", "proper", "nominal"):
            for method, accuracy in (("head", head_accuracy), ("nearest_mention", 0.3), ("head_word_match", 0.5)):
                controlled = method == "head" and checkpoint == "pretrained"
                rows.append({"model": MODEL, "checkpoint": checkpoint, "select_documents": select,
                             "score_documents": score, "method": method, "mention_type": mention,
                             "head_label": label if method == "head" else "", "accuracy": accuracy, "n": n,
                             "ci_low": accuracy - 0.1, "ci_high": accuracy + 0.1,
                             "control_accuracy": 0.02 if controlled else None,
                             "control_head_label": "2-1" if controlled else "",
                             **({"input_protocol": inputs} if inputs else {})})
    return _csv(tmp_path / "coref_best.csv", rows)


def _probes(tmp_path: Path, inputs: str | None = "words") -> Path:
    rows = [("none", "right_branching", "uas", 0.3), ("none", "distance_glove", "uas", 0.5),
            ("pretrained", "attn", "uas", 0.6), ("pretrained", "attn_glove", "uas", 0.7),
            ("random", "attn", "uas", 0.1), ("random", "attn_glove", "uas", 0.2),
            ("pretrained", "mst_best_head", "uuas", 0.55)]
    return _csv(tmp_path / "probes.csv", [
        {"model": MODEL, "checkpoint": c, "probe": p, "metric": m, "uas": v, "n": 200, "ci_low": v - 0.02,
         "ci_high": v + 0.02, "sentences": 20, "train_sentences": 40, "epochs": 2,
         **({"input_protocol": inputs} if inputs else {})} for c, p, m, v in rows])


def _surface(tmp_path: Path) -> Path:
    rows = []
    for checkpoint, prev in (("pretrained", [0.6, 0.1, 0.7, 0.2]), ("random", [0.1, 0.1, 0.1, 0.1])):
        for k, (layer, head) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
            rows.append({"model": MODEL, "checkpoint": checkpoint, "layer": layer, "head": head, "prev": prev[k],
                         "self": 0.1, "next": 0.55 if (layer, head) == (1, 1) and checkpoint == "pretrained" else 0.1,
                         "cls": 0.2 + 0.1 * layer, "sep": 0.4 + 0.2 * layer, "period": 0.05, "comma": 0.02,
                         "n_tokens": 500, "corpus": "wiki"})
    return _csv(tmp_path / "surface_heads.csv", rows)


def _finetuning(tmp_path: Path) -> dict[str, Path]:
    classes = []
    for checkpoint, task, share in (("pretrained", "mrpc", 0.30), ("mrpc.seed1.final", "mrpc", 0.45),
                                    ("mrpc.seed1.step5", "mrpc", 0.40), ("pretrained", "sst2", 0.5)):
        for name, value in (("Vertical", 1 - share), ("Heterogeneous", share)):
            classes.append({"model": MODEL, "checkpoint": checkpoint, "task": task, "step": checkpoint.split(".")[-1],
                            "classifier": "rule", "class": name, "share": value, "ci_low": value - 0.01,
                            "ci_high": value + 0.01, "n_maps": 10, "n": 40, "n_examples": 10})
    top = []
    for checkpoint in ("pretrained", "mrpc.seed1.final"):
        for category, layers in (("content", (1, 0)), ("function", (0, 1))):
            for rank, layer in enumerate(layers, start=1):
                top.append({"model": MODEL, "checkpoint": checkpoint, "task": "mrpc", "layer": layer,
                            "category": category, "argmax_share": 0.6 - 0.1 * rank, "rank": rank})
    last = []
    for category, difference in (("content", -0.03), ("function", 0.02), ("other", 0.01)):
        for measure in ("argmax", "mass"):
            last.append({"model": MODEL, "task": "mrpc", "checkpoint": "mrpc.seed1.final", "seed": 1, "step": "final",
                         "layer": 1, "last_layer": True, "category": category, "measure": measure,
                         "difference": difference, "ci_low": difference - 0.01, "ci_high": difference + 0.01,
                         "p": 0.001 if category == "content" else 0.01, "n": 300, "n_examples": 10, "task_group": "syntactic",
                         "predicted_direction": {"content": "down", "function": "up"}.get(category, "none"),
                         "moved_as_predicted": category != "other", "significant": True})
    metrics = [{"model": MODEL, "task": task, "seed": 1, "step": step, "metric": metric, "value": value,
                "majority_baseline": base, "main_metric": main, "checkpoint": f"{task}.seed1.{step}"}
               for task, metric, value, base, main in (("cola", "matthews_corr", 0.3, 0.0, True),
                                                       ("mrpc", "f1", 0.8, 0.81, True),
                                                       ("mrpc", "accuracy", 0.7, 0.68, False))
               for step in ("final",)]
    classifier = [{"model": MODEL, "classifier": "cnn", "evaluated_on": "heldout", "label_source": "rule", "n": 100,
                   "n_heldout_examples": 30, "macro_f1": 0.8, "accuracy": 0.9}]
    return {"pattern_classes": _csv(tmp_path / "pattern_classes.csv", classes),
            "pattern_classifier": _csv(tmp_path / "pattern_classifier.csv", classifier),
            "lexical_top_layers": _csv(tmp_path / "lexical_top_layers.csv", top),
            "lexical_last_layer": _csv(tmp_path / "lexical_last_layer.csv", last),
            "finetune_metrics": _csv(tmp_path / "finetune_metrics.csv", metrics)}


@pytest.fixture
def study(tmp_path) -> dict[str, Path]:
    tables = {"models": _csv(tmp_path / "models.csv", [{"name": MODEL, "num_layers": 2, "num_heads": 2}]),
              "dependency_best": _dependency(tmp_path), "coref_best": _coref(tmp_path), "probes": _probes(tmp_path),
              "surface_heads": _surface(tmp_path), **_finetuning(tmp_path)}
    assert set(tables) == set(TABLES)
    return tables


def _rows(frame: pd.DataFrame, item: str, **where: str) -> pd.DataFrame:
    rows = frame[frame["item"] == item]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    return rows


def _one(frame: pd.DataFrame, item: str, **where: str) -> pd.Series:
    rows = _rows(frame, item, **where)
    assert len(rows) == 1, f"{item} {where}: {len(rows)} rows\n{rows}"
    return rows.iloc[0]


def test_the_comparison_pairs_paper_and_study_values(study, tmp_path):
    out = tmp_path / "paper_comparison.csv"
    paper_comparison(PAPER_VALUES, study, out, context=CONTEXT)
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


def test_items_the_study_cannot_compute_have_no_value_and_a_reason(study, tmp_path):
    # No coreference table in this study: its items say why, with no number.
    tables = {**study, "coref_best": None}
    context = StudyContext(**{**CONTEXT.__dict__, "glove": False})
    frame = paper_comparison(PAPER_VALUES, tables, tmp_path / "c.csv", context=context,
                             absent={"coref_best": "the study scores no GUM coreference"})
    missing = frame[frame["status"] == NOT_COMPUTED]
    assert (missing["study_value"] == "").all() and (missing["reason"] != "").all()
    compared = frame[frame["status"] == COMPARED]
    assert (compared["study_value"] != "").all() and (compared["reason"] == "").all()

    assert "not in syntax.relations" in _one(frame, "aux:pass")["reason"]
    assert "obl" in _one(frame, "prep (UD obl reversed; approximate)")["reason"]  # prep stands for UD obl, not scored here
    assert set(_rows(frame, "head 5-4 all")["reason"]) == {"the study scores no GUM coreference"}
    assert "study.glove" in _one(frame, "distances+glove")["reason"]
    assert "2 layers" in _one(frame, "attention on [SEP] in layers 6-10")["reason"]
    assert "not in study.tasks" in _one(frame, "Heterogeneous share", task="qqp")["reason"]
    assert "not in study.tasks" in _one(frame, "fine-tuning direction", task="mnli")["reason"]
    # sst2 is in the study but has no fine-tuned model: a reason, not a number.
    sst2 = _one(frame, "fine-tuning direction", task="sst2")
    assert sst2["status"] == NOT_COMPUTED and "fine-tunes no model" in sst2["reason"]

    # Every paper item has at least one row for the model.
    items = read_paper_values(PAPER_VALUES)
    assert {(i.paper, i.item) for i in items} == set(zip(frame["paper"], frame["item"]))


def test_a_model_without_rows_and_an_unknown_analysis_are_reported_not_invented(study, tmp_path):
    values = tmp_path / "paper_values.csv"
    values.write_text("paper,analysis,item,value,unit,note,source\n"
                      "C,dependency_best,det,94.3,accuracy %,,x\n"
                      "C,attention_flow,rollout,12,%,,y\n")
    context = StudyContext(**{**CONTEXT.__dict__, "models": (MODEL, "other")})
    frame = paper_comparison(values, study, tmp_path / "c.csv", context=context)
    assert _one(frame, "det", model=MODEL)["status"] == COMPARED
    other = _one(frame, "det", model="other")
    assert other["status"] == NOT_COMPUTED and "no rows for model other" in other["reason"]
    assert set(_rows(frame, "rollout")["status"]) == {NOT_COMPUTED}
    assert "attention_flow" in _rows(frame, "rollout")["reason"].iloc[0]


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


def test_summary_page_with_and_without_fine_tuning(study, tmp_path):
    panels = summary_figure(MODEL, study, PAPER_VALUES, tmp_path / "full.png", tmp_path / "full.pdf", context=CONTEXT)
    assert panels == dict.fromkeys("ABCDEF")
    assert (tmp_path / "full.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "full.pdf").read_bytes()[:4] == b"%PDF"

    fine_tuning = ("finetune_metrics", "pattern_classes", "pattern_classifier", "lexical_top_layers",
                   "lexical_last_layer")
    tables = {name: (None if name in fine_tuning else path) for name, path in study.items()}
    reason = "the study fine-tunes no model"
    panels = summary_figure(MODEL, tables, PAPER_VALUES, tmp_path / "bare.png", context=CONTEXT,
                            absent=dict.fromkeys(fine_tuning, reason))
    assert panels["E"] == reason and panels["F"] == reason
    assert all(panels[k] is None for k in "ABCD")
    assert (tmp_path / "bare.png").read_bytes()[:4] == b"\x89PNG"

    # Nothing at all for a model: every panel says why instead of disappearing.
    panels = summary_figure("absent-model", study, PAPER_VALUES, tmp_path / "none.png", context=CONTEXT)
    assert all(panels.values())


def test_entry_points_hand_the_rule_over(study, tmp_path):
    from workflow_scripts.entrypoints import ENTRY_POINTS, _import_all

    _import_all()
    present = {name: str(path) for name, path in study.items() if name != "coref_best"}
    inputs = SimpleNamespace(paper_values=str(PAPER_VALUES), get=present.get)
    params = SimpleNamespace(context={**CONTEXT.__dict__, "predictions": dict(CONTEXT.predictions)},
                             absent={"coref_best": "no GUM in this study"})
    smk = SimpleNamespace(input=inputs, params=params, output=[str(tmp_path / "c.csv")],
                          wildcards=SimpleNamespace(model=MODEL))
    ENTRY_POINTS["paper_comparison"](smk)
    frame = pd.read_csv(tmp_path / "c.csv", keep_default_na=False)
    assert set(_rows(frame, "head 5-4 all")["reason"]) == {"no GUM in this study"}
    smk.output = SimpleNamespace(png=str(tmp_path / "s.png"), pdf=str(tmp_path / "s.pdf"))
    ENTRY_POINTS["summary_figure"](smk)
    assert (tmp_path / "s.png").exists() and (tmp_path / "s.pdf").exists()


@pytest.mark.parametrize("caption", ["paper_comparison.rst", "summary_figure.rst"])
def test_captions_render_as_snakemake_renders_them(caption):
    # Snakemake 9 renders a caption with Jinja2 (snakemake.params/.wildcards/.config), then docutils.
    from docutils.core import publish_parts
    from jinja2 import Environment, StrictUndefined

    env = Environment(trim_blocks=True, lstrip_blocks=True, undefined=StrictUndefined)
    snakemake = SimpleNamespace(params=SimpleNamespace(context={**CONTEXT.__dict__}),
                                wildcards=SimpleNamespace(model=MODEL), config={})
    text = env.from_string((REPO / "report" / caption).read_text()).render(snakemake=snakemake)
    html = publish_parts(text, writer="html", settings_overrides={"halt_level": 2})["body"]
    assert "spacy" in html and "{{" not in html
    if caption == "summary_figure.rst":
        assert MODEL in html


def test_headline_heads_are_held_out_with_the_same_split_number_beside_them(study, tmp_path):
    frame = paper_comparison(PAPER_VALUES, study, tmp_path / "c.csv", context=CONTEXT)
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


def test_the_comparison_works_without_an_input_protocol_column(study, tmp_path):
    tables = {**study, "dependency_best": _dependency(tmp_path, None), "coref_best": _coref(tmp_path, None),
              "probes": _probes(tmp_path, None)}
    frame = paper_comparison(PAPER_VALUES, tables, tmp_path / "c.csv", context=CONTEXT)
    assert set(frame["input_protocol"]) == {""}
    det = _one(frame, "det")
    assert det["study_value"] == pytest.approx(85.0) and "input:" not in det["study_detail"]
    panels = summary_figure(MODEL, tables, PAPER_VALUES, tmp_path / "s.png", context=CONTEXT)
    assert panels == dict.fromkeys("ABCDEF")


def test_a_relation_without_a_held_out_row_is_not_computed(study, tmp_path):
    rows = pd.read_csv(study["dependency_best"])
    rows = rows[~((rows["relation"] == "case") & (rows["select_split"] == "train"))]
    tables = {**study, "dependency_best": _csv(tmp_path / "dependency_best.csv", rows.to_dict("records"))}
    frame = paper_comparison(PAPER_VALUES, tables, tmp_path / "c.csv", context=CONTEXT)
    pobj = _one(frame, "pobj (UD case reversed)")
    assert pobj["status"] == NOT_COMPUTED and pobj["study_value"] == ""
    assert "selected on train and scored on dev" in pobj["reason"]
    assert "same split (dev→dev, as [C]): 70.0" in pobj["study_detail"]


def test_select_and_score_on_one_split_is_labelled_as_such(study, tmp_path):
    context = StudyContext(**{**CONTEXT.__dict__, "select_split": "dev"})
    frame = paper_comparison(PAPER_VALUES, study, tmp_path / "c.csv", context=context)
    det = _one(frame, "det")
    assert det["study_value"] == pytest.approx(90.0) and det["protocol"] == "same split (dev→dev, as [C])"


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
def test_summary_panels_show_held_out_heads_and_the_input(study, tmp_path, inputs, text):
    import matplotlib.pyplot as plt

    items = read_paper_values(PAPER_VALUES)
    tables = StudyTables({**study, "dependency_best": _dependency(tmp_path, inputs),
                          "coref_best": _coref(tmp_path, inputs), "probes": _probes(tmp_path, inputs)})
    figure, ax = _axes()
    assert _panel_dependency(ax, MODEL, tables, items, CONTEXT) is None
    bars = _bars(ax)  # relations in syntax.relations order: all, det, case
    assert bars["held out\n(train→dev)"] == pytest.approx([38.0, 85.0, 65.0])
    assert bars["same split\n(dev→dev, as [C])"] == pytest.approx([40.0, 90.0, 70.0])
    assert bars["fixed offset,\nheld out (train→dev)"] == pytest.approx([30.0, 30.0, 30.0])
    assert [t.get_text() for t in ax.texts] == ["2-2", "1-2", "1-2"]  # the held-out heads' labels
    title = ax.get_title(loc="left")
    assert (text in title) if text else "input:" not in title
    plt.close(figure)

    figure, ax = _axes()
    assert _panel_coreference(ax, MODEL, tables, items) is None
    bars = _bars(ax)
    assert bars["head, held out (a→b, b→a)"] == pytest.approx([55.0] * 4)
    assert bars["head, same split (all→all, [C])"] == pytest.approx([60.0] * 4)
    assert "a→b 2-1 / b→a 1-2" in ax.get_title(loc="left")
    plt.close(figure)

    figure, ax = _axes()
    assert _panel_probes(ax, MODEL, tables, items, CONTEXT) is None
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[-1].replace("\n", " ") == "MST, best head train→ dev"
    assert "selected on train" in ax.get_title(loc="left")
    plt.close(figure)
