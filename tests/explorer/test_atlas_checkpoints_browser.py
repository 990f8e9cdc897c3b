"""The atlas page's checkpoints (explorer/_index.html, docs/roles.md) in headless Chromium: choosing a fine-tuned
checkpoint draws that checkpoint's heads on each model's row, the "change from pretrained" view draws the head a
hand-made fine-tuned copy moved as the largest change, the role agreement panel lists every role of the chosen pair
with its floor and verdict, and a click on a head of the fine-tuned checkpoint opens the model's page on that head with
that checkpoint's measure.

Skipped, with the reason, without /usr/bin/chromium and /usr/bin/chromedriver or selenium (tests/support/browser.py).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from support.atlas_study import FINETUNED, AtlasModel, write_atlas_study
from support.browser import chromium, console_errors, page_errors
from support.explorer_study import write_explorer_study
from workflow_scripts.explorer.index import index_page
from workflow_scripts.explorer.page import head_explorer

MODELS = [AtlasModel("enc-0", "bert", 110_000_000, 12, 12), AtlasModel("dec-1", "gpt2", 350_000_000, 24, 16)]
MOVED = (3, 5)  # the head whose sink score the "fine-tuned" copy raises by 0.9 (layer 4, head 6 on the pages)
SINK_RANDOM = "measure.head_diagnostics.first_token.random"
WIDTH = 1900


def _diagnostics(checkpoint: str, scores: pd.Series) -> pd.DataFrame:
    """enc-0's head_diagnostics rows of one checkpoint: its sink scores on random tokens."""
    frame = scores.reset_index().rename(columns={"score": "first_token"})
    return frame.assign(model="enc-0", checkpoint=checkpoint, input="random", n_sequences=8, tokens_per_sequence=32,
                        induction=0.5)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("atlas_checkpoints")
    paths = write_atlas_study(root / "tables", MODELS, roles=("sink", "induction"), finetuned=("enc-0",))
    atlas = pd.read_csv(paths["atlas"])
    # The fine-tuned copy keeps every head's score but one: the sink of head MOVED rises by 0.9.
    pretrained = atlas[(atlas["model"] == "enc-0") & (atlas["checkpoint"] == "pretrained")].set_index(
        ["role", "layer", "head"])["score"]
    tuned = atlas["checkpoint"] == FINETUNED
    keys = list(zip(atlas.loc[tuned, "role"], atlas.loc[tuned, "layer"], atlas.loc[tuned, "head"]))
    atlas.loc[tuned, "score"] = pretrained.loc[keys].to_numpy()
    moved = tuned & (atlas["role"] == "sink") & (atlas["layer"] == MOVED[0]) & (atlas["head"] == MOVED[1])
    atlas.loc[moved, "score"] += 0.9
    atlas.to_csv(paths["atlas"], index=False)
    agreement = pd.read_csv(paths["role_agreement"])
    for role in ("sink", "induction"):
        if not ((agreement["role"] == role) & (agreement["second_checkpoint"] == FINETUNED)).any():
            agreement = pd.concat([agreement, agreement[agreement["second_checkpoint"] == FINETUNED].assign(
                role=role, detail="random_repeated")], ignore_index=True)
    pair = agreement["second_checkpoint"] == FINETUNED
    agreement.loc[pair, "floor_rho"], agreement.loc[pair, "floor_low"] = 0.95, 0.9
    agreement.loc[pair, "floor_high"], agreement.loc[pair, "verdict"] = 0.99, "moved"
    agreement.to_csv(paths["role_agreement"], index=False)
    explorer = root / "explorer"
    explorer.mkdir()
    study = write_explorer_study(root / "sources", model="enc-0", layers=12, heads=12)
    study.tables["head_diagnostics"] = root / "sources" / "head_diagnostics.csv"
    sink = pretrained.loc["sink"]
    moved_sink = sink.copy()
    moved_sink.loc[MOVED] += 0.9
    pd.concat([_diagnostics("pretrained", sink), _diagnostics(FINETUNED, moved_sink)]).to_csv(
        study.tables["head_diagnostics"], index=False)
    measures = [{"table": "head_diagnostics", "column": "first_token", "label": "attention to the first token",
                 "unit": "share", "where": {"input": "random"}}]
    head_explorer("enc-0", study.tables, explorer / "enc-0.html", head_measures=measures,
                  **study.build_kwargs(relations=["all", "nsubj"]))
    index_page([m.name for m in MODELS], [f"R/explorer/{m.name}.html" for m in MODELS], paths["models"],
               explorer / "_index.html", atlas=paths["atlas"], agreement=paths["role_agreement"], treebank="ewt")
    return explorer / "_index.html"


def _select(driver, element: str, text: str) -> None:
    from selenium.webdriver.common.by import By as by
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(by.ID, element)).select_by_visible_text(text)


def _canvas(driver, name: str) -> str:
    return driver.execute_script(f"return document.getElementById('atlas').dataset.{name}")


def test_choosing_the_fine_tuned_checkpoint_draws_its_heads_and_the_change_view_finds_the_moved_head(page):
    with chromium(WIDTH) as driver:
        driver.get(page.as_uri())
        every = int(_canvas(driver, "marks"))
        assert every == 12 * 12 * 2 + 24 * 16  # the sink: both models' pretrained heads, and enc-0's fine-tuned row
        _select(driver, "checkpoint", FINETUNED)
        assert int(_canvas(driver, "marks")) == 12 * 12  # enc-0 alone has the checkpoint, on its own row
        assert _canvas(driver, "view") == "score"
        _select(driver, "view", "change from pretrained")
        assert _canvas(driver, "view") == "change"
        assert _canvas(driver, "largest") == f"enc-0 {MOVED[0] + 1}-{MOVED[1] + 1} {FINETUNED}"  # +0.9, the rest 0
        legend = driver.execute_script("return document.getElementById('legend').textContent")
        assert "change -0.900" in legend and f"score on {FINETUNED} minus its pretrained score" in legend
        assert driver.execute_script("return location.hash") == f"#role=sink&checkpoint={FINETUNED}&view=change"
        # The role agreement panel: every role of the pairs with the chosen checkpoint, its floor and verdict.
        rows = driver.execute_script("""return Array.from(document.querySelectorAll('#agreement-table tbody.pair'))
            .map(b => [b.querySelector('td').textContent, b.dataset.verdict,
                       b.querySelectorAll('td')[4].textContent])""")
        assert [row[0].split(" (")[0] for row in rows] == ["sink", "induction"]
        assert all(row[1] == "moved" and row[2] == "0.950 [0.900, 0.990]" for row in rows)
        assert page_errors(driver) == [] and console_errors(driver) == []


def test_a_click_on_a_fine_tuned_head_opens_the_models_page_on_that_head_and_checkpoint(page):
    with chromium(WIDTH) as driver:
        driver.get(page.as_uri() + f"#role=sink&checkpoint={FINETUNED}&view=change")
        assert _canvas(driver, "view") == "change"
        dx, dy = driver.execute_script("""
            const data = JSON.parse(document.getElementById('atlas-data').textContent);
            const canvas = document.getElementById('atlas'), box = canvas.getBoundingClientRect();
            const row = Number(document.querySelector('#labels div[data-model="0"]').dataset.row);
            const left = Number(canvas.dataset.plotLeft), width = Number(canvas.dataset.plotWidth);
            const size = Number(canvas.dataset.rowHeight), m = data.models[0];
            const x = left + width * (arguments[0] + (arguments[1] + 0.5) / m.heads) / m.layers, y = (row + 0.5) * size;
            return [x - box.width / 2, y - box.height / 2];""", *MOVED)
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By as by

        ActionChains(driver).move_to_element_with_offset(driver.find_element(by.ID, "atlas"), round(dx),
                                                         round(dy)).click().perform()
        measure = f"{SINK_RANDOM}@{FINETUNED}"
        assert driver.current_url.split("#")[0].endswith("/enc-0.html")
        assert f"layer={MOVED[0] + 1}&head={MOVED[1] + 1}" in driver.current_url
        state = driver.execute_script("""return {measure: document.getElementById('measure').value,
            cells: Array.from(document.querySelectorAll('#grid .cell.selected'))
              .map(c => [c.dataset.layer, c.dataset.head])}""")
        assert state == {"measure": measure, "cells": [[str(MOVED[0]), str(MOVED[1])]]}
        assert page_errors(driver) == [] and console_errors(driver) == []
