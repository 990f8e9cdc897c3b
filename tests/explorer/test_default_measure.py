"""The measure the explorer page opens on: an encoder's attention to [CLS]; a decoder's attention to its first
token (a GPT-2 without BOS has no [CLS]: that measure is 0 in every cell), on tiny tables
(tests/support/explorer_study.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from support.browser import chromium, page_errors
from support.explorer_study import write_explorer_study
from workflow_scripts.explorer.head_tables import is_decoder
from workflow_scripts.explorer.page import default_measure, explorer_data, head_explorer

LAYERS, HEADS = 2, 2
FIRST_TOKEN = "measure.first_token.first_token"
RANDOM_FIRST_TOKEN = "measure.head_diagnostics.first_token.random"
# The declared per-head columns of the two first-token tables (study/plans/surface.py declares them so).
DECLARED = [{"table": "head_diagnostics", "column": "first_token", "label": "attention to the first token (random "
             "tokens)", "unit": "share", "where": {"input": "random"}},
            {"table": "first_token", "column": "first_token", "label": "attention to the first token (alpha_1)",
             "unit": "share", "where": {}}]


def _decoder(root, tables=("first_token", "head_diagnostics")):
    """The tiny study as a GPT-2 without BOS: its card says gpt2, no head attends to [CLS] or [SEP], head 2-1 is a
    sink; ``tables``: the first-token tables it has."""
    study = write_explorer_study(root, layers=LAYERS, heads=HEADS)
    pd.DataFrame({"name": [study.model], "num_layers": [LAYERS], "num_heads": [HEADS],
                  "model_type": ["gpt2"]}).to_csv(study.tables["models"], index=False)
    surface = pd.read_csv(study.tables["surface_heads"])
    for column in ("cls", "sep", "cls_low", "cls_high", "sep_low", "sep_high", "cls_entropy"):
        surface[column] = 0.0
    surface.to_csv(study.tables["surface_heads"], index=False)
    grid = [(layer, head) for layer in range(LAYERS) for head in range(HEADS)]
    alpha = [0.96 if (layer, head) == (1, 0) else 0.1 for layer, head in grid]
    rows = pd.DataFrame({"model": study.model, "checkpoint": "pretrained", "layer": [lh[0] for lh in grid],
                         "head": [lh[1] for lh in grid], "first_token": alpha, "corpus": "wiki", "split": "segments",
                         "n_examples": 4})
    for name in tables:
        study.tables[name] = root / f"{name}.csv"
        rows.assign(**({"input": "random", "n_sequences": 8, "tokens_per_sequence": 20}
                       if name == "head_diagnostics" else {})).to_csv(study.tables[name], index=False)
    return study


def _data(study) -> dict:
    return explorer_data(study.model, study.tables, pattern_parts=study.pattern_parts, relations=["all", "nsubj"],
                         select_split="train", examples={"sentences": []}, head_measures=DECLARED)


def _opening(data) -> str:
    return data["signals"]["attention"]["default_measure"]


def test_a_decoder_opens_on_its_attention_to_the_first_token(tmp_path):
    data = _data(_decoder(tmp_path / "both"))
    assert _opening(data) == FIRST_TOKEN  # the surface corpus's alpha_1 before that of random tokens
    measures = {m["id"]: m for m in data["signals"]["attention"]["measures"]}
    assert measures[FIRST_TOKEN]["values"] == [0.1, 0.1, 0.96, 0.1]
    assert set(measures["surface.cls"]["values"]) == {0.0}  # what the page used to open on
    assert _opening(_data(_decoder(tmp_path / "random", tables=("head_diagnostics",)))) == RANDOM_FIRST_TOKEN
    # Neither table: the first measure with a non-zero value ([CLS] and [SEP] are 0 everywhere).
    assert _opening(_data(_decoder(tmp_path / "none", tables=()))) == "surface.period"


def test_an_encoder_opens_on_cls_as_before(tmp_path):
    study = write_explorer_study(tmp_path, layers=LAYERS, heads=HEADS)
    assert _opening(_data(study)) == "surface.cls"


def test_the_default_is_the_first_measure_with_a_value():
    def measure(measure_id, values, kind="number"):
        return {"id": measure_id, "values": values, "kind": kind}

    empty, zero, category = measure("a", [None, None]), measure("b", [0, 0.0]), measure("c", [0, None], "category")
    assert default_measure([empty, zero, category, measure("d", [0.2, 0])], decoder=False) == "c"
    assert default_measure([empty, zero], decoder=True) == "a"  # none has a value: the first, as the page did
    assert default_measure([], decoder=True) is None


def test_the_decoders_page_opens_on_the_first_token(tmp_path):
    study = _decoder(tmp_path)
    head_explorer(study.model, study.tables, tmp_path / "page.html", head_measures=DECLARED,
                  **study.build_kwargs(relations=["all", "nsubj"]))
    with chromium() as driver:
        from selenium.webdriver.common.by import By as by

        driver.get((tmp_path / "page.html").as_uri())
        assert driver.find_element(by.ID, "measure").get_attribute("value") == FIRST_TOKEN
        assert driver.find_element(by.ID, "measure-note").text.startswith("attention to the first token (alpha_1)")
        assert page_errors(driver) == []


@pytest.mark.parametrize("model_type, decoder", [("gpt2", True), ("bert", False), ("", False)])
def test_the_card_says_whether_a_model_is_a_decoder(tmp_path, model_type, decoder):
    path = tmp_path / "models.csv"
    pd.DataFrame({"name": ["m"], "num_layers": [1], "num_heads": [1], "model_type": [model_type]}).to_csv(path,
                                                                                                        index=False)
    assert is_decoder(path, "m") is decoder
