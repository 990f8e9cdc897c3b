"""The explorer page in headless Chromium, opened from a file: every head, every measure, the SVG export, and
text from the data that carries markup (it must show literally and run nothing).

Skipped, with the reason, without /usr/bin/chromium and /usr/bin/chromedriver (apt-get install -y chromium
chromium-driver) or selenium (tests/support/browser.py).
"""

from __future__ import annotations

import pytest

from support.browser import chromium, console_errors, page_errors
from support.explorer_study import write_explorer_study
from workflow_scripts.explorer.page import head_explorer

LAYERS, HEADS = 3, 4
# Markup in every kind of text the page takes from data: tokens, relation labels, cluster behaviours, the model.
PAYLOADS = ("<img src=x onerror=alert(1)>", "</script><script>window.__pwned=1;document.title='pwned'</script>",
            "<svg onload=alert(2)>", "\u2028<!--")
HOSTILE_MODEL = "m</title><script>window.__pwned=2</script>"
# Relation labels that are names of Object.prototype: a plain {} keyed by them would drop or corrupt their rows.
PROTOTYPE_NAMES = ("__proto__", "constructor")
HOSTILE_RELATIONS = ("all", PAYLOADS[0], PAYLOADS[1], *PROTOTYPE_NAMES)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("explorer_page")
    study = write_explorer_study(root, layers=LAYERS, heads=HEADS, tasks=("cola", "rte"))
    head_explorer(study.model, study.tables, root / "page.html", **study.build_kwargs())
    return root / "page.html"


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory):
    root = tmp_path_factory.mktemp("explorer_hostile")
    tokens = {0: ["[CLS]", PAYLOADS[0], "and", PAYLOADS[1], PAYLOADS[2], PAYLOADS[3], "[SEP]"]}
    study = write_explorer_study(root, model=HOSTILE_MODEL, layers=2, heads=2, tokens=tokens,
                                 relations=HOSTILE_RELATIONS, behaviours=(PAYLOADS[2], "broad"))
    head_explorer(study.model, study.tables, root / "page.html",
                  **study.build_kwargs(relations=list(HOSTILE_RELATIONS)))
    return root / "page.html"


def _panel_state(driver) -> dict:
    return driver.execute_script("""
        const panel = document.getElementById('panel');
        return {heading: (panel.querySelector('h2') || {}).textContent || '',
                sections: Array.from(panel.querySelectorAll('h3')).map(h => h.textContent),
                rows: panel.querySelectorAll('table tr td').length,
                maps: Array.from(panel.querySelectorAll('.maps svg')).map(s => s.querySelectorAll('rect').length)};
    """)


def test_clicking_every_head_fills_its_panel_without_a_javascript_error(page):
    with chromium() as driver:
        from selenium.webdriver.common.by import By as by
        driver.get(page.as_uri())
        assert driver.title == "Head explorer: tiny"
        cells = driver.find_elements(by.CSS_SELECTOR, "#grid .cell")
        assert len(cells) == LAYERS * HEADS
        for layer in range(LAYERS):
            for head in range(HEADS):
                driver.find_element(by.CSS_SELECTOR, f'#grid .cell[data-layer="{layer}"][data-head="{head}"]').click()
                state = _panel_state(driver)
                assert state["heading"].startswith(f"Head {layer + 1}-{head + 1} "), state
                assert state["sections"][0] == "Maps on example inputs"
                assert {"Surface statistics", "Dependency accuracy: ewt", "Coreference", "Cluster",
                        "Pattern classes per task", "Change after fine-tuning"} <= set(state["sections"]), state
                assert state["rows"] > 50, state
                assert state["maps"] == [7 * 7, 7 * 7], state  # a square per weight, before and after
        assert page_errors(driver) == [] and console_errors(driver) == []


def test_every_measure_colours_every_cell(page):
    with chromium() as driver:
        from selenium.webdriver.common.by import By as by
        from selenium.webdriver.support.ui import Select

        driver.get(page.as_uri())
        select = Select(driver.find_element(by.ID, "measure"))
        labels = [option.text for option in select.options]
        assert len(labels) >= 15
        assert "best relation accuracy (ewt)" in labels and "pattern class (rte, fine-tuned)" in labels
        for label in labels:
            select.select_by_visible_text(label)
            fills = driver.execute_script(
                "return Array.from(document.querySelectorAll('#grid .cell')).map(c => c.getAttribute('fill'))")
            assert len(fills) == LAYERS * HEADS and "#e9ecef" not in fills, label  # no head without a value
            assert driver.find_element(by.ID, "legend").text, label
        assert page_errors(driver) == [] and console_errors(driver) == []


def test_download_svg_exports_both_maps_as_vector_graphics(page):
    with chromium() as driver:
        from selenium.webdriver.common.by import By as by
        driver.get(page.as_uri())
        # Catch the Blob the button makes, and the file name it asks for, instead of letting the browser save it.
        driver.execute_script("window.__svgBlobs = []; URL.createObjectURL = b => { window.__svgBlobs.push(b); "
                              "return 'blob:caught'; }; HTMLAnchorElement.prototype.click = function () { "
                              "window.__savedAs = this.download; };")
        driver.find_element(by.CSS_SELECTOR, '#grid .cell[data-layer="1"][data-head="2"]').click()
        driver.find_element(by.ID, "download-svg").click()
        svg = driver.execute_async_script("const done = arguments[0]; window.__svgBlobs[0].text().then(done);")
        assert driver.execute_script("return window.__svgBlobs[0].type") == "image/svg+xml"
        assert driver.execute_script("return window.__savedAs") == "tiny_head2-3_example0.svg"
        assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and "viewBox" in svg
        assert svg.count("<rect") == 2 * 7 * 7 and svg.count(">cat</text>") == 4  # both axes, both maps
        assert "pretrained, head 2-3" in svg and "fine-tuned on cola, head 2-3" in svg
        assert page_errors(driver) == [] and console_errors(driver) == []


def test_the_page_works_inside_the_report_as_snakemake_embeds_it(page, tmp_path):
    """snakemake --report shows an HTML result in an iframe whose src is the file as a data: URI."""
    from snakemake.report.common import data_uri_from_file

    report = tmp_path / "report.html"
    report.write_text('<!DOCTYPE html><html><body><iframe id="result" width="1300" height="900"></iframe>'
                      '</body></html>')
    with chromium() as driver:
        from selenium.webdriver.common.by import By as by

        driver.get(report.as_uri())
        driver.execute_script("document.getElementById('result').src = arguments[0];", data_uri_from_file(page))
        driver.switch_to.frame(driver.find_element(by.ID, "result"))
        cells = driver.find_elements(by.CSS_SELECTOR, "#grid .cell")
        assert len(cells) == LAYERS * HEADS
        cells[5].click()
        state = _panel_state(driver)
        assert state["heading"].startswith("Head 2-2 ") and state["maps"] == [7 * 7, 7 * 7], state
        assert page_errors(driver) == [] and console_errors(driver) == []


def test_markup_in_the_data_shows_literally_and_runs_nothing(hostile_page):
    html = hostile_page.read_text()
    for payload in PAYLOADS[:3]:
        assert payload not in html, "data text must never reach the HTML unescaped"
    with chromium() as driver:
        from selenium.webdriver.common.by import By as by
        driver.get(hostile_page.as_uri())
        for layer in range(2):
            for head in range(2):
                driver.find_element(by.CSS_SELECTOR, f'#grid .cell[data-layer="{layer}"][data-head="{head}"]').click()
        assert driver.execute_script("return window.__pwned === undefined")
        assert driver.title == f"Head explorer: {HOSTILE_MODEL}"
        assert driver.execute_script("return document.querySelectorAll('img, iframe, object, embed').length") == 0
        assert driver.execute_script("return document.querySelectorAll('script').length") == 2  # data + the page's
        assert page_errors(driver) == [] and console_errors(driver) == []
        labels = driver.execute_script("return Array.from(document.querySelectorAll('.maps svg text'))"
                                       ".map(t => t.textContent)")
        for payload in PAYLOADS:
            assert payload in labels, payload
        panel = driver.find_element(by.ID, "panel").text
        assert PAYLOADS[0] in panel and "</script><script>window.__pwned=1" in panel
        assert driver.find_element(by.ID, "title").text == f"Head explorer: {HOSTILE_MODEL}"
        from selenium.webdriver.support.ui import Select

        Select(driver.find_element(by.ID, "measure")).select_by_visible_text("cluster behaviour")
        assert PAYLOADS[2] in driver.find_element(by.ID, "legend").text
        assert driver.execute_script("return window.__pwned === undefined") and page_errors(driver) == []


def test_relations_named_like_object_prototype_keys_are_rows_like_any_other(hostile_page):
    """A relation called __proto__ or constructor (text from the treebank) shows as its own row, with its values."""
    with chromium() as driver:
        from selenium.webdriver.common.by import By as by
        driver.get(hostile_page.as_uri())
        driver.find_element(by.CSS_SELECTOR, '#grid .cell[data-layer="1"][data-head="0"]').click()
        rows = driver.execute_script("""
            const heading = Array.from(document.querySelectorAll('#panel h3'))
              .find(h => h.textContent.startsWith('Dependency accuracy'));
            let table = heading.nextElementSibling;
            while (table.tagName !== 'TABLE') table = table.nextElementSibling;
            return Array.from(table.querySelectorAll('tr')).slice(1)
              .map(tr => Array.from(tr.querySelectorAll('td')).map(td => td.textContent));""")
        # Every relation once, in the page data's order: 'all', then the larger n first (n = 100 + position).
        assert [row[0] for row in rows] == ["all", *reversed(HOSTILE_RELATIONS[1:])]
        by_name = {row[0]: row for row in rows}
        for name in PROTOTYPE_NAMES:
            relation = HOSTILE_RELATIONS.index(name)
            # Both directions and n as written (tests/support/explorer_study.py: n = 100 + the relation's position).
            assert by_name[name][1].endswith("]") and by_name[name][2].endswith("]"), by_name[name]
            assert by_name[name][3] == str(100 + relation)
        assert driver.execute_script("return Object.prototype.dependent_to_head === undefined && "
                                     "typeof Object.dependent_to_head === 'undefined'")
        assert page_errors(driver) == [] and console_errors(driver) == []
