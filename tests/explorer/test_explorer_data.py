"""The explorer's data, from tiny tables whose every value is known by construction
(tests/support/explorer_study.py)."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

from support.explorer_study import head_value, write_explorer_study
from workflow_scripts.attention.reader import AttentionDump
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.explorer.example_maps import choose_examples, example_maps, maps_bytes
from workflow_scripts.explorer.page import embed_json, explorer_data, head_explorer

HEADS = 4


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return write_explorer_study(tmp_path_factory.mktemp("explorer"), heads=HEADS, tasks=("cola", "rte"))


@pytest.fixture(scope="module")
def data(study):
    kwargs = study.build_kwargs()
    maps = example_maps(kwargs["example_dumps"], kwargs["example_tokens"], count=3, max_tokens=40, example_ids=None,
                        budget_bytes=10**7, corpus="cola", split="dev")
    return explorer_data(study.model, study.tables, pattern_parts=study.pattern_parts,
                         relations=["all", "nsubj", "det"], select_split="train", examples=maps)


def _measures(data):
    return {m["id"]: m for m in data["signals"]["attention"]["measures"]}


def test_grid_values_are_the_tables_values_of_the_same_head(data):
    measures, index = _measures(data), 1 * HEADS + 0  # head (1, 0)
    # surface_heads.csv: cls is the 4th column, offset 3/100 (pretrained rows, not the random control's).
    assert measures["surface.cls"]["values"][index] == head_value(1, 0, 0.03, HEADS)
    assert measures["surface.entropy"]["values"][index] == head_value(1, 0, 0.07, HEADS)
    assert measures["coreference.all"]["values"][index] == head_value(1, 0, 0.2, HEADS)
    # 1 - cosine of the final checkpoint (not step 50): the change of rte (offset 0.1).
    assert measures["change.rte"]["values"][index] == pytest.approx(head_value(1, 0, 0.1, HEADS), abs=1e-4)
    assert measures["dependency.ewt.all"]["values"][index] == head_value(1, 0, 0.0, HEADS)
    assert data["layers"] == 3 and data["heads"] == HEADS and len(measures["surface.cls"]["values"]) == 12


def test_best_relation_is_the_max_over_the_named_relations_and_both_directions(data):
    best = _measures(data)["dependency.ewt.best"]
    # Relations all (0), nsubj (1), det (2), punct (3); only nsubj and det are named: det head_to_dependent wins
    # (offset 0.2 + 0.05); punct is higher still but not a relation of syntax.relations.
    assert best["values"][5] == head_value(1, 1, 0.25, HEADS)
    assert best["detail"][5] == "det head_to_dependent"


def test_pattern_classes_per_head_are_the_most_frequent_rule_class(data):
    measures = _measures(data)
    pretrained, final = measures["pattern.cola.pretrained"], measures["pattern.cola.cola.seed42.final"]
    assert pretrained["categories"] == final["categories"] == ["Heterogeneous", "Vertical"]
    # Head (0, 0): Vertical on examples 0 and 2 of 3 when pretrained, the other way after fine-tuning.
    assert pretrained["categories"][pretrained["values"][0]] == "Vertical"
    assert final["categories"][final["values"][0]] == "Heterogeneous"
    shares = data["signals"]["attention"]["sections"]["patterns"]["entries"][0]["shares"]
    assert shares[1][0] == pytest.approx(2 / 3, abs=1e-4)  # Vertical's share of head (0, 0)


def test_the_panel_sections_hold_intervals_and_the_random_control(data):
    sections = data["signals"]["attention"]["sections"]
    assert sorted(sections) == sorted(data["section_order"])
    cls = next(s for s in sections["surface"]["stats"] if s["id"] == "cls")
    assert cls["low"][4] == pytest.approx(cls["value"][4] - 0.001)
    assert cls["control"][4] == head_value(1, 0, 0.53, HEADS)
    ewt = sections["dependency"]["treebanks"][0]
    assert ewt["relations"][0]["relation"] == "all" and {r["direction"] for r in ewt["relations"]} == {
        "dependent_to_head", "head_to_dependent"}
    # Lexical shares at the same (checkpoint, task) pairs as the pattern classes: pretrained and final.
    assert [(e["checkpoint"], e["task"]) for e in sections["lexical"]["entries"]] == [
        (e["checkpoint"], e["task"]) for e in sections["patterns"]["entries"]]


def test_example_maps_are_the_dumps_maps_quantised_to_a_byte(study, data):
    sentence = data["examples"]["sentences"][0]
    tokens = sentence["tokens"]
    assert tokens == ["[CLS]", "the", "cat", "sat", "down", ".", "[SEP]"]
    raw = np.frombuffer(base64.b64decode(sentence["maps"]["pretrained"]), dtype=np.uint8)
    original = AttentionDump(study.example_dumps[0][2]).get(sentence["example_id"]).attention.astype(np.float32)
    assert raw.reshape(original.shape).shape == (3, HEADS, 7, 7)
    assert np.abs(raw.reshape(original.shape) / 255 - original).max() <= 0.5 / 255 + 1e-3
    assert [c["name"] for c in data["examples"]["checkpoints"]] == ["pretrained", "cola.seed42.final"]


def test_examples_are_chosen_short_or_by_id():
    tokens = {0: ["a"] * 50, 1: ["a"] * 3, 2: ["a"] * 10, 3: ["a"] * 40, 4: ["a"] * 12}
    assert choose_examples(tokens, 2, 40) == [2, 3]
    assert choose_examples(tokens, 2, 40, example_ids=[0]) == [0]
    with pytest.raises(AtlasError, match=r"example ids \[9\]"):
        choose_examples(tokens, 2, 40, example_ids=[9])


def test_a_12_by_12_model_fits_the_20_mb_budget_by_construction(tmp_path):
    """The default settings (3 examples of at most 40 tokens, two checkpoints) on a BERT-base-sized model with
    60 relations on two treebanks and nine tasks: the whole page, not only its maps."""
    assert maps_bytes(12, 12, [40, 40, 40], 2) < 2e6
    tokens = {i: ["[CLS]", *[f"w{k}" for k in range(38)], "[SEP]"] for i in range(3)}
    relations = ("all", *[f"rel{k}" for k in range(59)])
    tasks = ("cola", "sst2", "mrpc", "stsb", "qnli", "rte", "wnli", "wic", "qqp")
    study = write_explorer_study(tmp_path, layers=12, heads=12, tokens=tokens, tasks=tasks, relations=relations,
                                 treebanks=("ewt", "ptb"))
    output = tmp_path / "page.html"
    size = head_explorer(study.model, study.tables, output, **study.build_kwargs(relations=list(relations)))
    assert size == output.stat().st_size and size <= 20e6, f"{size / 1e6:.1f} MB"


def test_maps_above_the_budget_stop_the_job_with_their_sizes(study, tmp_path):
    with pytest.raises(AtlasError, match=r"above the page's budget of 0\.0 MB; choose fewer or shorter examples"):
        head_explorer(study.model, study.tables, tmp_path / "p.html", **study.build_kwargs(max_megabytes=1e-5))
    assert not (tmp_path / "p.html").exists()


def test_a_study_without_tables_or_maps_still_makes_a_page_that_says_so(study, tmp_path):
    output = tmp_path / "bare.html"
    head_explorer(study.model, {"models": study.tables["models"]}, output,
                  **study.build_kwargs(pattern_parts=[], example_dumps=[], example_tokens=None))
    data = json.loads(re.search(r'id="explorer-data">(.*?)</script>', output.read_text(), re.S).group(1))
    assert data["signals"]["attention"]["measures"] == [] and data["examples"]["sentences"] == []
    assert "Not in this study: surface, dependency, coreference, cluster, patterns, change, lexical." in data["notes"]


def test_embedded_json_cannot_end_its_script_element_and_parses_back():
    hostile = {"t": "</script><script>alert(1)</script> <!-- & \u2028\u2029 <img src=x onerror=alert(1)>"}
    text = embed_json(hostile)
    assert not re.search("[<>&\u2028\u2029]", text)
    assert json.loads(text) == hostile
