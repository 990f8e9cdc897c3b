"""The published numbers of one model ([G] Gu et al. 2025's sink rates, [W] Wang et al. 2023's GPT-2 heads): compared
with the study's model of the same hub id only, on hand-built tables (conftest.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from support.paths import REPO
from workflow_scripts.report.comparison import paper_comparison
from workflow_scripts.report.formatting import NOT_COMPUTED
from workflow_scripts.report.paper_values import read_paper_items
from workflow_scripts.report.registry import paper_value_files

PAPER_VALUES = paper_value_files(root=REPO)
MODEL = "tiny"  # the model of the hand-built tables (conftest.py)


def _rows(frame: pd.DataFrame, item: str) -> pd.DataFrame:
    return frame[frame["item"] == item]


def _one(frame: pd.DataFrame, item: str) -> pd.Series:
    rows = _rows(frame, item)
    assert len(rows) == 1, f"{item}: {len(rows)} rows\n{rows}"
    return rows.iloc[0]


def _cards(path: Path, rows: list[dict]) -> Path:
    pd.DataFrame([{"num_layers": 2, "num_heads": 2, **row} for row in rows]).to_csv(path, index=False)
    return path


def test_a_number_of_one_model_is_compared_with_that_model_only(study, context, tmp_path):
    # "tiny" comes from hub id tiny-hub/tiny (a prefetched folder: its card says so); "other" from another id.
    study = {**study, "models": _cards(tmp_path / "models.csv", [
        {"name": MODEL, "source": "path", "location": "/data/models/tiny", "hub_id": "tiny-hub/tiny"},
        {"name": "other", "source": "hub", "location": "org/tiny", "hub_id": "org/tiny"}])}
    values = tmp_path / "paper_values.csv"
    values.write_text("paper,analysis,item,value,unit,note,source,model\n"
                      'G,sink rate,"Tiny sink rate, natural text",60.00,%,,"Gu, Table 1",Tiny-Hub/Tiny\n'
                      'G,sink rate,"Tiny sink rate, random tokens",40.00,%,,"Gu, Table 1",tiny-hub/tiny\n'
                      'G,sink rate,"Tiny sink rate, repeated token",0.00,%,,"Gu, Table 1",x/y tiny-hub/tiny\n'
                      'W,head roles,previous-token heads,"1.0, 0.0",heads,,W,tiny-hub/tiny\n'
                      'W,head roles,induction heads,"1.1, 0.1",heads,,W,tiny-hub/tiny\n'
                      'W,head roles,duplicate-token heads,"0.1, 3.0",heads,,W,tiny-hub/tiny\n'
                      'W,head roles,previous-token heads (absent),"3.0",heads,,W,big-org/absent big-org/absent-2\n'
                      "C,dependency_best,det,94.3,accuracy %,,x,\n")
    subjects = (MODEL, f"{MODEL}@norm", "other")
    frame = paper_comparison([values], study, tmp_path / "c.csv", context=replace(context, models=subjects))
    # Items without a model compare with every subject; those of one model with that model's own weights alone
    # (not MODEL@norm, which the head diagnostics do not run on).
    assert set(_rows(frame, "det")["model"]) == set(subjects)
    assert set(frame.loc[frame["paper"].isin(["G", "W"]), "model"]) == {MODEL, ""}

    # Sink rate: sink_rates.csv's whole-model row (layer "all") of the input, per checkpoint but the control.
    natural = _one(frame, "Tiny sink rate, natural text")
    assert (natural["study_value"], natural["difference"], natural["checkpoint"]) == (62.5, 2.5, "pretrained")
    assert "input natural: 8 sequences of 65 tokens, 4 heads, threshold 0.3" in natural["study_detail"]
    assert "heads whose mean alpha_1 exceeds it: 31.25%" in natural["study_detail"]
    assert "random-init control: 12.50%" in natural["study_detail"]
    assert _one(frame, "Tiny sink rate, random tokens")["study_value"] == 50.0
    assert _one(frame, "Tiny sink rate, repeated token")["study_value"] == 0.0

    # Head roles: the study's top heads by the role's score, as many as the paper names, in its notation;
    # the paper's heads ranked (equal scores share the better rank).
    previous = _one(frame, "previous-token heads")
    assert previous["study_value"] == "1.0, 0.1" and previous["difference"] == ""
    assert "1.0: 0.900, rank 1 of 4; 0.0: 0.100, rank 3 of 4" in previous["study_detail"]
    assert "the paper's heads among them: 1 of 2" in previous["study_detail"]
    assert "random-init control: best head 0.0 (0-based), 0.200" in previous["study_detail"]
    induction = _one(frame, "induction heads")
    assert induction["study_value"] == "1.1, 1.0" and "0.1: 0.100, rank 3 of 4" in induction["study_detail"]
    duplicate = _one(frame, "duplicate-token heads")  # 0.0 and 0.1 tie at 0.6: both rank 1
    assert duplicate["study_value"] == "0.0, 0.1"
    assert "0.1: 0.600, rank 1 of 4; 3.0: not in this model" in duplicate["study_detail"]
    assert "the paper's heads among them: 1 of 2" in duplicate["study_detail"]

    # A model the study does not have: one row that says what to add.
    absent = _one(frame, "previous-token heads (absent)")
    assert absent["model"] == "" and absent["status"] == NOT_COMPUTED
    assert absent["reason"] == ("no model of this study has hub id big-org/absent (or big-org/absent-2) "
                                "(models.csv, column hub_id); to compare, add it to the config: models: NAME: "
                                "{hub: big-org/absent}, and NAME to study.models")


@pytest.mark.parametrize("card, compared", [
    ({"source": "hub", "location": "Tiny-Hub/Tiny"}, True),             # a card written before hub_id: its location
    ({"source": "path", "location": "/models/tiny"}, False),            # a folder of unknown origin
    ({"source": "path", "location": "/m/tiny", "hub_id": ""}, False),  # the prefetch copied it from a folder
    ({"source": "hub", "location": "tiny", "hub_id": "tiny"}, False),   # another model named as the id ends
])
def test_which_cards_count_as_the_papers_model(study, context, tmp_path, card, compared):
    study = {**study, "models": _cards(tmp_path / "models.csv", [{"name": MODEL, **card}])}
    values = tmp_path / "paper_values.csv"
    values.write_text('paper,analysis,item,value,unit,note,source,model\nG,sink rate,"sink rate, natural",1,%,,G,'
                      "tiny-hub/tiny\n")
    frame = paper_comparison([values], study, tmp_path / "c.csv", context=context)
    assert list(frame["model"]) == ([MODEL] if compared else [""])


# Gu et al. 2025, Table 1 (p. 5): (row, input) -> Sink_1^eps (%); the hub ids as their code
# (eval_sink_open_source.py) loads the models.
GU_TABLE_1 = {
    ("GPT2-XL", "natural text"): 77.00, ("GPT2-XL", "random tokens"): 70.29, ("GPT2-XL", "repeated token"): 62.28,
    ("Mistral-7B", "natural text"): 97.49, ("Mistral-7B", "random tokens"): 75.21,
    ("Mistral-7B", "repeated token"): 0.00, ("LLaMA2-7B Base", "natural text"): 92.47,
    ("LLaMA2-7B Base", "random tokens"): 90.13, ("LLaMA2-7B Base", "repeated token"): 0.00,
    ("LLaMA3-8B Base", "natural text"): 99.02, ("LLaMA3-8B Base", "random tokens"): 91.23,
    ("LLaMA3-8B Base", "repeated token"): 0.00, ("LLaMA2-13B Base", "natural text"): 91.69,
    ("Mistral-7B Chat", "natural text"): 88.34, ("LLaMA2-7B Chat", "natural text"): 92.88,
    ("LLaMA2-13B Chat", "natural text"): 90.94, ("LLaMA3-8B Chat", "natural text"): 98.85}
GU_HUB_IDS = {"GPT2-XL": ("openai-community/gpt2-xl", "gpt2-xl"), "Mistral-7B": ("mistralai/Mistral-7B-v0.1",),
              "LLaMA2-7B Base": ("meta-llama/Llama-2-7b-hf",), "LLaMA3-8B Base": ("meta-llama/Meta-Llama-3-8B",),
              "LLaMA2-13B Base": ("meta-llama/Llama-2-13b-hf",),
              "Mistral-7B Chat": ("mistralai/Mistral-7B-Instruct-v0.1",),
              "LLaMA2-7B Chat": ("meta-llama/Llama-2-7b-chat-hf",),
              "LLaMA2-13B Chat": ("meta-llama/Llama-2-13b-chat-hf",),
              "LLaMA3-8B Chat": ("meta-llama/Meta-Llama-3-8B-Instruct",)}


def test_the_published_sink_rates_and_heads_are_the_papers():
    items = read_paper_items(PAPER_VALUES)
    rates = {tuple(item.item.split(" sink rate, ")): item for item in items if item.paper == "G"}
    assert {key: item.number for key, item in rates.items()} == GU_TABLE_1
    assert {key[0]: item.hub_ids for key, item in rates.items()} == GU_HUB_IDS
    assert all(item.analysis == "sink rate" and item.unit == "%" and ", p. 5" in item.source
               for item in rates.values())
    roles = {item.item: item for item in items if item.paper == "W"}
    assert {name: item.value for name, item in roles.items()} == {
        "previous-token heads": "2.2, 4.11", "induction heads": "5.5, 6.9", "duplicate-token heads": "0.1, 3.0"}
    assert {item.hub_ids for item in roles.values()} == {("openai-community/gpt2", "gpt2")}
