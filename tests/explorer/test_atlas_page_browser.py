"""The atlas page (explorer/_index.html) in headless Chromium, opened from a file: a zoo of 25 models of up to 1,024
heads loads and draws within a second, every role is selectable, the hover says what a head is, a click opens the
right model's explorer page on the right head and measure, the pages link back, and nothing is requested from
anywhere.

Skipped, with the reason, without /usr/bin/chromium and /usr/bin/chromedriver or selenium (tests/support/browser.py).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from support.atlas_study import FINETUNED, RELATIONS, AtlasModel, atlas_score, write_atlas_study, zoo
from support.browser import chromium, console_errors, page_errors
from support.explorer_study import write_explorer_study
from workflow_scripts.explorer.index import index_page
from workflow_scripts.explorer.page import head_explorer

MODELS = zoo(25)
# The models whose explorer pages the click tests open (a 12 x 12 encoder and a 24 x 16 decoder).
OPENED = ("enc-0", "dec-1")
INDUCTION = "measure.head_diagnostics.induction.random_repeated"
WIDTH = 1900  # wide enough that a 24 x 16 model's heads are over two pixels apart


def _diagnostics(model: str, layers: int, heads: int) -> pd.DataFrame:
    grid = pd.DataFrame([(layer, head) for layer in range(layers) for head in range(heads)], columns=["layer", "head"])
    rows = [grid.assign(model=model, checkpoint="pretrained", input=kind, n_sequences=8, tokens_per_sequence=32,
                        induction=0.5, first_token=0.25) for kind in ("random_repeated", "random")]
    return pd.concat(rows, ignore_index=True)


def _write_study(root: Path, models: list[AtlasModel], *, agreement: bool = True) -> Path:
    explorer = root / "explorer"
    explorer.mkdir(parents=True)
    paths = write_atlas_study(root / "tables", models, agreement=agreement, finetuned=("enc-0",))
    for model in (m for m in models if m.name in OPENED):
        study = write_explorer_study(root / "sources" / model.name, model=model.name, layers=model.layers,
                                     heads=model.heads)
        study.tables["head_diagnostics"] = root / "sources" / model.name / "head_diagnostics.csv"
        _diagnostics(model.name, model.layers, model.heads).to_csv(study.tables["head_diagnostics"], index=False)
        measures = [{"table": "head_diagnostics", "column": "induction", "label": "induction score", "unit": "share",
                     "where": {"input": "random_repeated"}}]
        head_explorer(model.name, study.tables, explorer / f"{model.name}.html", head_measures=measures,
                      **study.build_kwargs(relations=["all", *RELATIONS]))
    index_page([m.name for m in models], [f"R/explorer/{m.name}.html" for m in models], paths["models"],
               explorer / "_index.html", atlas=paths["atlas"], agreement=paths.get("role_agreement"), treebank="ewt")
    return explorer / "_index.html"


@pytest.fixture(scope="module")
def atlas(tmp_path_factory) -> Path:
    return _write_study(tmp_path_factory.mktemp("atlas_page"), MODELS)


MARK = """
const [name, layer, head, checkpoint] = arguments;
const data = JSON.parse(document.getElementById('atlas-data').textContent), canvas = document.getElementById('atlas');
const model = data.models.findIndex(m => m.name === name);
const row = Number(Array.from(document.querySelectorAll('#labels div[data-model="' + model + '"]'))
  .find(div => div.dataset.checkpoint === checkpoint).dataset.row);
const m = data.models[model], left = Number(canvas.dataset.plotLeft), width = Number(canvas.dataset.plotWidth);
const size = Number(canvas.dataset.rowHeight), box = canvas.getBoundingClientRect();
const x = left + width * (layer + (head + 0.5) / m.heads) / m.layers, y = row * size + size / 2;
return [x - box.width / 2, y - box.height / 2];
"""


def _point_at(driver, model: str, layer: int, head: int, checkpoint: str = "pretrained"):
    """Move the pointer onto the mark of (layer, head), counted from 0, of the row of ``model``'s ``checkpoint``."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By as by

    dx, dy = driver.execute_script(MARK, model, layer, head, checkpoint)
    canvas = driver.find_element(by.ID, "atlas")
    actions = ActionChains(driver)
    actions.move_to_element_with_offset(canvas, round(dx), round(dy)).perform()
    return actions


def _choose(driver, label_start: str) -> None:
    from selenium.webdriver.common.by import By as by
    from selenium.webdriver.support.ui import Select

    select = Select(driver.find_element(by.ID, "role"))
    select.select_by_visible_text(next(o.text for o in select.options if o.text.startswith(label_start)))


def _no_request(driver) -> None:
    """Nothing loaded but the page itself, from its file: no resource entry, no failed or blocked load."""
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert driver.execute_script("return performance.getEntriesByType('navigation')[0].name").startswith("file://")
    assert console_errors(driver) == [] and page_errors(driver) == []


def test_a_zoo_of_25_models_loads_and_draws_within_a_second_with_no_request(atlas):
    heads = sum(m.layers * m.heads for m in MODELS) + 12 * 12  # enc-0's fine-tuned checkpoint too
    assert max(m.layers * m.heads for m in MODELS) == 1024
    with chromium(WIDTH) as driver:
        driver.get(atlas.as_uri())
        drawn = driver.execute_script("return performance.getEntriesByName('atlas-drawn').map(e => e.startTime)")
        assert len(drawn) == 1 and drawn[0] <= 1000, drawn  # ms since the navigation started
        assert driver.execute_script("return document.getElementById('atlas').dataset.marks") == str(heads)
        assert driver.title.startswith("Attention atlas")
        html = atlas.read_text()
        assert "default-src 'none'" in html and "http://" not in html.replace('"http://www.w3.org/', "")
        assert "https://" not in html
        _no_request(driver)


def test_every_role_is_selectable_and_its_legend_says_what_the_colour_spans(atlas):
    frame = pd.read_csv(atlas.parent.parent / "tables" / "atlas.csv")
    with chromium(WIDTH) as driver:
        from selenium.webdriver.common.by import By as by
        from selenium.webdriver.support.ui import Select

        driver.get(atlas.as_uri())
        labels = [o.text for o in Select(driver.find_element(by.ID, "role")).options]
        assert labels[:3] == ["attention sink (alpha_1)", "induction score",
                              f"dependency: best head per relation (all {len(RELATIONS)} relations)"]
        assert len(labels) == 3 + len(RELATIONS)  # one entry per relation too
        for k in range(len(labels)):
            Select(driver.find_element(by.ID, "role")).select_by_index(k)
            role = ("sink", "induction", "dependency")[min(k, 2)]
            rows = frame[frame["role"] == role]
            if k > 2:
                rows = rows[rows["detail"] == RELATIONS[k - 3]]
            assert driver.execute_script("return document.getElementById('atlas').dataset.marks") == str(len(rows))
            legend = driver.find_element(by.ID, "legend").text
            assert f"score {rows['score'].min():.3f}" in legend and f"{rows['score'].max():.3f} (" in legend, legend
            assert f"the lowest to the highest of the {len(rows)} heads shown" in legend
            assert driver.execute_script("return location.hash").startswith("#role=" + role)
        assert page_errors(driver) == [] and console_errors(driver) == []


def test_the_hover_names_the_model_head_score_interval_rank_and_control(atlas):
    model, layer, head = "dec-1", 5, 3  # a 24 x 16 decoder, the second model of the zoo
    score = atlas_score(1, "induction", layer, head, 16)
    frame = pd.read_csv(atlas.parent.parent / "tables" / "atlas.csv")
    row = frame[(frame["model"] == model) & (frame["role"] == "induction") & (frame["layer"] == layer)
                & (frame["head"] == head)].iloc[0]
    with chromium(WIDTH) as driver:
        from selenium.webdriver.common.by import By as by

        driver.get(atlas.as_uri())
        _choose(driver, "induction")
        _point_at(driver, model, layer, head)
        tip = driver.find_element(by.ID, "tip")
        assert tip.is_displayed()
        text = tip.text
        assert text.startswith("dec-1 (gpt2, 350M)"), text
        assert "layer 6, head 4 (head 6-4 of 24 x 16)" in text  # numbered from 1, as the explorer's pages
        assert f"score {score:.3f}  95% interval [{score - 0.01:.3f}, {score + 0.01:.3f}]" in text, text
        assert f"rank {row['rank']} of the 384 heads shown" in text and f"random-init control {score / 10:.3f}" in text
        assert page_errors(driver) == [] and console_errors(driver) == []


def test_a_models_fine_tuned_checkpoint_has_its_own_row_under_it(atlas):
    layer, head = 2, 7
    score = atlas_score(100, "sink", layer, head, 12)  # enc-0 is the zoo's first model; its checkpoint: index + 100
    with chromium(WIDTH) as driver:
        from selenium.webdriver.common.by import By as by

        driver.get(atlas.as_uri())
        labels = [div.text for div in driver.find_elements(by.CSS_SELECTOR, "#labels div")]
        assert labels[1:3] == ["enc-0 (110M)", f"\u21b3 {FINETUNED}"]
        _point_at(driver, "enc-0", layer, head, FINETUNED)
        text = driver.find_element(by.ID, "tip").text
        assert f"attention sink (alpha_1) \u2013 natural, {FINETUNED}" in text and f"score {score:.3f}" in text, text
        _choose(driver, "dependency: best head per relation (all")  # no fine-tuned rows: no checkpoint row
        assert FINETUNED not in driver.find_element(by.ID, "labels").text
        assert page_errors(driver) == [] and console_errors(driver) == []


def test_a_click_opens_the_models_page_on_that_head_and_measure_and_the_pages_link_back(atlas):
    with chromium(WIDTH) as driver:
        from selenium.webdriver.common.by import By as by

        driver.get(atlas.as_uri())
        _choose(driver, "induction")
        _point_at(driver, "dec-1", 5, 3).click().perform()
        assert driver.current_url.endswith(f"/dec-1.html#layer=6&head=4&measure={INDUCTION}")
        state = driver.execute_script("""return {measure: document.getElementById('measure').value,
            cells: Array.from(document.querySelectorAll('#grid .cell.selected'))
              .map(c => [c.dataset.layer, c.dataset.head]),
            heading: document.querySelector('#panel h2').textContent}""")
        assert state == {"measure": INDUCTION, "cells": [["5", "3"]], "heading": "Head 6-4 (layer 6, head 4)"}
        _no_request(driver)
        driver.find_element(by.ID, "atlas-link").click()  # back to the atlas
        assert driver.current_url.split("#")[0].endswith("/explorer/_index.html")
        assert driver.title.startswith("Attention atlas")
        # A dependency relation's best head opens on the best-relation measure of the atlas's treebank.
        _choose(driver, "dependency: best head per relation \u2013 nsubj")
        frame = pd.read_csv(atlas.parent.parent / "tables" / "atlas.csv")
        best = frame[(frame["model"] == "enc-0") & (frame["role"] == "dependency") & (frame["detail"] == "nsubj")]
        layer, head = int(best["layer"].iloc[0]), int(best["head"].iloc[0])
        _point_at(driver, "enc-0", layer, head).click().perform()
        assert driver.current_url.endswith(f"/enc-0.html#layer={layer + 1}&head={head + 1}"
                                           "&measure=dependency.ewt.best")
        assert driver.execute_script("return document.getElementById('measure').value") == "dependency.ewt.best"
        selected = "return document.querySelector('#grid .cell.selected').dataset"
        assert driver.execute_script(selected) == {"layer": str(layer), "head": str(head)}
        _no_request(driver)
        driver.back()  # the browser's own back: the atlas again, on the role it showed
        assert driver.title.startswith("Attention atlas")
        assert driver.find_element(by.ID, "role").get_attribute("value") == "3"
        # The model's name in the atlas and in the table of every page link to its page.
        driver.find_element(by.LINK_TEXT, "enc-0").click()
        assert driver.current_url.endswith("/enc-0.html") and driver.title == "Head explorer: enc-0"
        assert page_errors(driver) == [] and console_errors(driver) == []


def test_the_role_agreement_of_a_chosen_pair_marks_its_models(atlas):
    with chromium(WIDTH) as driver:
        from selenium.webdriver.common.by import By as by

        driver.get(atlas.as_uri())
        rows = driver.find_elements(by.CSS_SELECTOR, "#agreement-table tbody.pair")
        # The sink's pairs: the five steps after the first beside the one before, enc-0 before and after
        # fine-tuning (the heads that lose the role numbered from 1), then the note of the pair left out.
        assert len(rows) == 7
        assert rows[0].text.startswith("rev-step1000 \u2192 rev-step2000 revision_next 144 0.900 [0.850, 0.950]")
        assert rows[5].text.endswith("0.333 (of 3)\nlost: 1-2 3-4")
        assert rows[6].text.endswith("finetuned (every role)" + " \u2013" * 7 + "\ndifferent shapes: left out")
        rows[0].click()
        paired = driver.execute_script("return Array.from(document.querySelectorAll('#labels .model.paired'))"
                                       ".map(d => d.textContent)")
        assert paired == ["step1000 (step 1000)", "step2000 (step 2000)"]
        # A model before and after fine-tuning: its own row and its checkpoint's (the table is drawn anew).
        driver.find_elements(by.CSS_SELECTOR, "#agreement-table tbody.pair")[5].click()
        paired = driver.execute_script("return Array.from(document.querySelectorAll('#labels .paired'))"
                                       ".map(d => d.textContent)")
        assert paired == ["enc-0 (110M)", f"\u21b3 {FINETUNED}"]
        _choose(driver, "dependency: best head per relation (all")
        # No pair in this role: only the note of the pair left out, which holds for every role.
        rows = driver.find_elements(by.CSS_SELECTOR, "#agreement-table tbody.pair")
        assert len(rows) == 1 and "different shapes: left out" in rows[0].text
        assert page_errors(driver) == [] and console_errors(driver) == []


def test_without_a_role_agreement_table_or_an_atlas_the_page_says_so(tmp_path):
    page = _write_study(tmp_path / "no_agreement", MODELS[:3], agreement=False)
    no_atlas = tmp_path / "no_atlas" / "_index.html"
    index_page(["m<b>"], ["R/explorer/m<b>.html"], None, no_atlas)
    with chromium(WIDTH) as driver:
        from selenium.webdriver.common.by import By as by

        driver.get(page.as_uri())
        assert driver.find_element(by.ID, "agreement-note").text == ("This study has no role agreement table "
                                                                     "(tables/role_agreement.csv).")
        assert driver.execute_script("return document.getElementById('atlas').dataset.marks") == str(
            sum(m.layers * m.heads for m in MODELS[:3]) + 12 * 12)
        driver.get(no_atlas.as_uri())
        assert "This study makes no atlas" in driver.find_element(by.ID, "summary").text
        assert not driver.find_element(by.ID, "atlas-area").is_displayed()
        assert driver.find_element(by.LINK_TEXT, "m<b>").get_attribute("href").endswith("/m%3Cb%3E.html")
        _no_request(driver)


def test_the_page_works_inside_the_report_as_snakemake_embeds_it(atlas, tmp_path):
    """snakemake --report shows an HTML result in an iframe whose src is the file as a data: URI."""
    from snakemake.report.common import data_uri_from_file

    report = tmp_path / "report.html"
    report.write_text('<!DOCTYPE html><html><body><iframe id="result" width="1800" height="900"></iframe>'
                      "</body></html>")
    with chromium(WIDTH) as driver:
        from selenium.webdriver.common.by import By as by

        driver.get(report.as_uri())
        driver.execute_script("document.getElementById('result').src = arguments[0];", data_uri_from_file(atlas))
        driver.switch_to.frame(driver.find_element(by.ID, "result"))
        _choose(driver, "induction")
        assert driver.execute_script("return document.getElementById('atlas').dataset.marks") == str(
            sum(m.layers * m.heads for m in MODELS) + 12 * 12)
        assert page_errors(driver) == [] and console_errors(driver) == []


def test_markup_in_model_names_shows_literally_and_runs_nothing(tmp_path):
    hostile = [AtlasModel("<img src=x onerror=alert(1)>", "</script><script>window.__pwned=1</script>", 10, 2, 2),
               AtlasModel("m2", "bert", 20, 2, 2)]
    page = _write_study(tmp_path, hostile)
    assert "<img src=x" not in page.read_text()
    with chromium(WIDTH) as driver:
        from selenium.webdriver.common.by import By as by

        driver.get(page.as_uri())
        _point_at(driver, hostile[0].name, 1, 1)
        assert driver.find_element(by.ID, "tip").text.startswith(hostile[0].name)
        assert hostile[1].family in driver.find_element(by.ID, "labels").text
        assert driver.execute_script("return window.__pwned === undefined && document.images.length === 0")
        assert page_errors(driver) == [] and console_errors(driver) == []
