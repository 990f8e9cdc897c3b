"""The explorer's index, the study's atlas page (explorer/index.py, atlas_page.py): every model linked to its page,
described by the models table; the atlas's data in the order and shape the page draws; the role agreement where the
study has it. In the browser: test_atlas_page_browser.py."""

from __future__ import annotations

import dataclasses
import json
import re

import pandas as pd
import pytest

from support.atlas_study import FINETUNED, AtlasModel, atlas_score, write_atlas_study
from support.study_configs import MODEL, one_model, study_of
from workflow_scripts.explorer.atlas_page import atlas_data, role_measures
from workflow_scripts.explorer.index import index_page
from workflow_scripts.study.plans.explorer import index_inputs

MODELS = [AtlasModel("big", "llama", 7_000_000_000, 4, 4), AtlasModel("enc", "bert", 110_000_000, 2, 3),
          AtlasModel("rev-step2000", "gpt_neox", 160_000_000, 2, 2, "rev", "step2000", 2000),
          AtlasModel("rev-step1000", "gpt_neox", 160_000_000, 2, 2, "rev", "step1000", 1000),
          AtlasModel("small</script>", "bert", 4_000_000, 1, 2)]


def _page_data(text: str) -> dict:
    block = re.search(r'<script type="application/json" id="atlas-data">(.*?)</script>', text, re.S).group(1)
    return json.loads(block)


def test_every_model_is_listed_with_its_page_and_shape(tmp_path):
    models = tmp_path / "models.csv"
    pd.DataFrame([{"name": "bert<b>", "model_type": "bert", "num_layers": 12.0, "num_heads": 12, "hidden_size": 768,
                   "vocab_size": 30522, "source": "hub", "revision": None},
                  {"name": "pythia-160m-step1000", "model_type": "gpt_neox", "num_layers": 12, "num_heads": 12,
                   "hidden_size": 768, "vocab_size": 50304, "source": "hub", "revision": "step1000"}]).to_csv(models)
    out = tmp_path / "explorer" / "_index.html"
    index_page(["bert<b>", "pythia-160m-step1000", "unknown"],
               ["R/explorer/bert<b>.html", "R/explorer/pythia-160m-step1000.html", "R/explorer/unknown.html"],
               models, out)
    text = out.read_text()
    assert "Every model's head explorer (3 pages)" in text
    assert '<a href="bert&lt;b&gt;.html">bert&lt;b&gt;</a>' in text  # escaped, linked beside the index
    assert "<td>gpt_neox</td><td>12</td><td>12</td><td>768</td><td>50304</td><td>hub</td><td>step1000</td>" in text
    assert '<a href="unknown.html">unknown</a><td></td>' not in text and "<td>unknown</td>" not in text
    # The page's own script only, by its hash; nothing loads from anywhere.
    policy = re.search(r'Content-Security-Policy" content="([^"]*)"', text).group(1)
    assert policy.startswith("default-src 'none'; script-src 'sha256-") and "unsafe" not in policy
    assert text.count("<script") == 2 and "src=" not in re.sub(r"<table>.*</table>", "", text, flags=re.S)
    assert _page_data(text) == {"models": [], "rows": [], "roles": [], "has_atlas": False, "checkpoints": [],
                                "agreement": None}
    with pytest.raises(ValueError, match="2 models but 1 pages"):
        index_page(["a", "b"], ["a.html"], models, out)


def test_the_atlas_rows_are_grouped_by_family_ordered_by_size_revisions_under_their_series(tmp_path):
    paths = write_atlas_study(tmp_path, MODELS)
    pages = {m.name: f"{m.name}.html" for m in MODELS[:4]}  # the last model has no page
    data = atlas_data(paths["atlas"], {m.name: m.heads for m in MODELS}, pages, agreement=paths["role_agreement"],
                      treebank="ewt")
    names = [m["name"] for m in data["models"]]
    # bert (its smallest model 4M) before gpt_neox (160M) before llama (7B); by size within a family; by step.
    assert names == ["small</script>", "enc", "rev-step1000", "rev-step2000", "big"]
    assert [(r["kind"], r.get("text", r.get("model"))) for r in data["rows"]] == [
        ("family", "bert"), ("model", 0), ("model", 1), ("family", "gpt_neox"), ("series", "rev"), ("model", 2),
        ("model", 3), ("family", "llama"), ("model", 4)]
    assert [r.get("indent") for r in data["rows"] if r["kind"] == "model"] == [False, False, True, True, False]
    assert data["models"][4] == {"name": "big", "family": "llama", "parameters": 7_000_000_000, "series": "big",
                                 "revision": None, "step": None, "layers": 4, "heads": 4, "page": "big.html"}
    assert data["models"][0]["page"] is None and data["models"][2]["step"] == 1000


def test_each_role_carries_every_head_and_the_explorer_measures_of_its_quantity(tmp_path):
    paths = write_atlas_study(tmp_path, MODELS)
    data = atlas_data(paths["atlas"], {}, {}, treebank="ewt")
    roles = {role["role"]: role for role in data["roles"]}
    assert list(roles) == ["sink", "induction", "dependency"]
    sink, dependency = roles["sink"], roles["dependency"]
    assert sink["merged"] and not dependency["merged"]  # a model has one sink input, five relations
    assert sink["measures"] == [[["measure.first_token.first_token", "measure.head_diagnostics.first_token.random",
                                  "surface.cls"]]]  # per detail, per checkpoint
    assert dependency["details"] == ["nsubj", "det", "amod", "obj", "all"]
    assert dependency["measures"][0] == [["dependency.ewt.best"]]
    assert dependency["measures"][4] == [["dependency.ewt.all"]]
    columns = sink["columns"]
    assert len(columns["score"]) == sum(m.layers * m.heads for m in MODELS)
    # The head (layer 3, head 2) of "big" (the fifth model on the page, the first of the table): its own score.
    index = next(i for i, (m, layer, head) in enumerate(zip(columns["model"], columns["layer"], columns["head"]))
                 if (m, layer, head) == (4, 3, 2))
    score = atlas_score(0, "sink", 3, 2, 4)
    found = (columns["score"][index], columns["low"][index], columns["high"][index], columns["random"][index])
    assert found == pytest.approx((score, score - 0.01, score + 0.01, round(score / 10, 4)))
    assert data["agreement"] is None  # none given


def test_a_roles_other_checkpoints_are_its_own_and_the_atlas_says_how_many_heads_a_layer_has(tmp_path):
    paths = write_atlas_study(tmp_path, MODELS, finetuned=("enc",))
    frame = pd.read_csv(paths["atlas"])
    frame.assign(num_heads=frame["model"].map({m.name: m.heads for m in MODELS})).to_csv(paths["atlas"], index=False)
    data = atlas_data(paths["atlas"], {"enc": 99}, {}, treebank="ewt")  # the atlas's column over the models table
    assert [m["heads"] for m in data["models"]] == [2, 3, 2, 2, 4]
    sink = data["roles"][0]
    assert sink["checkpoints"] == ["pretrained", FINETUNED] and sink["merged"]
    # the fine-tuned checkpoint's measures are its own (page.checkpoint_measures: ID@CHECKPOINT)
    assert sink["measures"][0][1] == [f"{measure}@{FINETUNED}" for measure in sink["measures"][0][0]]
    assert data["checkpoints"] == ["pretrained", FINETUNED]
    tuned = [i for i, k in enumerate(sink["columns"]["checkpoint"]) if k == 1]
    assert len(tuned) == 6 and {sink["columns"]["model"][i] for i in tuned} == {1}  # enc: 2 x 3 heads


def test_the_role_agreement_rows_are_given_as_the_table_holds_them(tmp_path):
    paths = write_atlas_study(tmp_path, MODELS, finetuned=("enc",))
    data = atlas_data(paths["atlas"], {}, {}, agreement=paths["role_agreement"])
    sink = [row for row in data["agreement"] if row["role"] == "sink"]
    assert sink[0] == {"relation": "revision_next", "role": "sink", "detail": "natural", "first_model": "rev-step2000",
                       "first_checkpoint": "pretrained", "second_model": "rev-step1000",
                       "second_checkpoint": "pretrained", "heads": 4, "rho": 0.9, "rho_low": 0.85,
                       "rho_high": 0.95, "top_heads": 7, "jaccard_top": 0.5, "role_heads": 10, "kept_share": 0.8,
                       "note": None, "role_rule": None, "lost_heads": None,
                       # the columns a table of before lacks (the floors, the verdict, the best head): None
                       **dict.fromkeys(("split_half_rho", "floor_rho", "floor_low", "floor_high", "seed_checkpoint",
                                        "seed_rho", "seed_low", "seed_high", "verdict", "first_best", "second_best",
                                        "best_kept", "best_change", "best_change_low", "best_change_high"))}
    assert sink[-1]["second_checkpoint"] == FINETUNED and sink[-1]["lost_heads"] == "0:1 2:3"
    noted = [row for row in data["agreement"] if row["role"] is None]  # a pair's note, for every role
    assert len(noted) == 1 and noted[0]["rho"] is None and noted[0]["note"] == "different shapes: left out"
    # The table's other columns are not the page's; one it lacks is None.
    frame = pd.read_csv(paths["role_agreement"]).drop(columns=["lost_heads"]).assign(bootstrap_seed=0)
    frame.to_csv(paths["role_agreement"], index=False)
    assert {row["lost_heads"] for row in atlas_data(paths["atlas"], {}, {}, agreement=paths["role_agreement"])[
        "agreement"]} == {None}
    # A table that is planned but not there (yet) is no table.
    assert atlas_data(paths["atlas"], {}, {}, agreement=tmp_path / "absent.csv")["agreement"] is None


def test_text_from_the_data_cannot_end_the_data_block(tmp_path):
    paths = write_atlas_study(tmp_path, MODELS)
    out = tmp_path / "explorer" / "_index.html"
    index_page([m.name for m in MODELS], [f"R/explorer/{m.name}.html" for m in MODELS], paths["models"], out,
               atlas=paths["atlas"], agreement=paths["role_agreement"], treebank="ewt")
    text = out.read_text()
    assert "small</script>" not in text and text.count("</script>") == 2
    assert _page_data(text)["models"][0]["name"] == "small</script>"


def test_measures_of_roles_the_explorer_shows_and_of_those_it_does_not():
    assert role_measures("sink", "random", "ewt")[0] == "measure.head_diagnostics.first_token.random"
    assert role_measures("previous_token", "natural", None) == ["measure.previous_token.previous_token", "surface.prev"]
    assert role_measures("induction", "random_repeated", None) == ["measure.head_diagnostics.induction.random_repeated"]
    assert role_measures("coreference", "all mentions", None) == ["coreference.all"]
    assert role_measures("pattern:Vertical", "cola", None) == ["pattern.cola.pretrained"]
    assert role_measures("pattern:Vertical", "cola", None, "cola.seed1.final") == ["pattern.cola.cola.seed1.final"]
    assert role_measures("causal_importance", "cola mcc, zero", None) == []
    # every head's accuracy opens the grid measures of the same quantity; a fine-tuned checkpoint's own measures
    assert role_measures("dependency_accuracy", "nsubj", "ewt") == ["dependency.ewt.best"]
    assert role_measures("dependency_accuracy", "all", "ewt", "cola.seed1.final") == [
        "dependency.ewt.all@cola.seed1.final"]
    assert role_measures("coreference_accuracy", "all mentions", None) == ["coreference.all"]
    assert role_measures("induction", "random_repeated", None, "cola.seed1.final") == [
        "measure.head_diagnostics.induction.random_repeated@cola.seed1.final"]


def test_the_index_reads_the_atlas_and_role_agreement_where_the_study_plans_them():
    study = study_of(one_model(tasks=["cola"]))
    inputs = index_inputs(study)
    planned = set(study.outputs())
    assert inputs["models"] == "R/tables/models.csv"
    for name in ("atlas", "role_agreement"):
        assert (inputs.get(name) == f"R/tables/{name}.csv") == (f"R/tables/{name}.csv" in planned), name
    assert "atlas" in inputs  # this study measures head roles
    # The same study with a report plan that plans neither table (a plan is frozen: replaced whole, as a test only may).
    study.plans["report"] = dataclasses.replace(study.report, outputs=[
        path for path in study.report.outputs if path not in ("R/tables/atlas.csv", "R/tables/role_agreement.csv")])
    assert set(index_inputs(study)) == {"models"}
    study.plans["report"] = dataclasses.replace(study.report, outputs=[*study.report.outputs,
                                                                       "R/tables/role_agreement.csv"])
    assert index_inputs(study)["role_agreement"] == "R/tables/role_agreement.csv"
    assert MODEL in study.models
