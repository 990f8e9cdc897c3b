"""A tiny GPT-2 through the real DAG: every stage of the tiny study on a decoder, with the norm signal, fine-tuning,
the causal head checks, the head diagnostics and the dependency directions a causal map allows."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from support.workflow_runs import snakemake
from workflow_scripts.core.labels import CAUSAL_DIRECTIONS

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def built(decoder_study):
    """The tiny study on the tiny GPT-2 (``decoder_study`` of tests/conftest.py, built in the background from the
    session's start)."""
    return decoder_study


def test_a_tiny_decoder_goes_through_every_stage(built):
    results = built / "results"
    manifest = json.loads((results / "attention/tiny/pretrained/wiki/segments/manifest.json").read_text())
    assert manifest["layout"] == "lower_triangle"  # a decoder's dump stores the triangles
    dumps = pd.read_csv(results / "tables" / "attention_dumps.csv")
    assert set(dumps["model"] + ":" + dumps["signal"]) == {"tiny:attention", "tiny@norm:norm"}
    # [C]'s dependency heads, in the directions a causal map allows, for both signals
    best = pd.read_csv(results / "tables" / "dependency_best.csv")
    assert set(best["direction"]) == set(CAUSAL_DIRECTIONS) and set(best["model"]) == {"tiny", "tiny@norm"}
    # the head diagnostics on every input kind, with the sink rates per layer
    diagnostics = pd.read_csv(results / "tables" / "head_diagnostics.csv")
    assert set(diagnostics["input"]) == {"natural", "random", "random_repeated", "one_token"}
    assert set(diagnostics["checkpoint"]) == {"pretrained", "random"}
    rates = pd.read_csv(results / "tables" / "sink_rates.csv")
    assert set(rates["layer"].astype(str)) == {"0", "1", "all"} and rates["sink_rate"].between(0, 100).all()
    for name in ("first_token", "previous_token", "same_word"):
        assert set(pd.read_csv(results / "tables" / f"{name}.csv")["model"]) == {"tiny", "tiny@norm"}, name
    # fine-tuned (sequence classification from the last token), scored, and each head disabled in it
    metrics = pd.read_csv(results / "tables" / "finetune_metrics.csv")
    assert set(metrics["task"]) == {"cola"}
    disabling = pd.read_csv(results / "tables" / "head_disabling.csv")
    assert len(disabling) == 2 * 4 and disabling["score"].notna().all()
    gradient = pd.read_csv(results / "tables" / "sep_gradient.csv")
    assert gradient["skipped"].str.startswith("a decoder (gpt2)").all()
    assert (results / "explorer" / "tiny.html").stat().st_size > 0


def test_the_decoder_numbers_of_the_papers_meet_the_study_tables(built, tmp_path):
    from workflow_scripts.report.comparison import paper_comparison
    from workflow_scripts.report.items import StudyContext

    tables = built / "results" / "tables"
    # The study has none of the models Gu et al. and Wang et al. measured: one row each, saying which to add.
    rows = pd.read_csv(tables / "paper_comparison.csv", keep_default_na=False)
    papers = rows[rows["paper"].isin(["G", "W"])]
    assert len(papers) == 20 and set(papers["model"]) == {""} and set(papers["status"]) == {"not computed"}
    assert papers["reason"].str.contains("add it to the config").all()
    cards = pd.read_csv(tables / "models.csv")
    assert cards["hub_id"].isna().all()  # a local folder the prefetch did not write: no hub id
    # The same kind of numbers, said to be of this model (its card given a hub id), on the tables the DAG wrote.
    cards.assign(hub_id="x/tiny").to_csv(tmp_path / "models.csv", index=False)
    values = tmp_path / "values.csv"
    values.write_text("paper,analysis,item,value,unit,note,source,model\n"
                      'G,sink rate,"tiny sink rate, random tokens",50,%,,G,x/tiny\n'
                      'W,head roles,induction heads,"1.3, 5.5",heads,,W,x/tiny\n')
    paths = {"models": tmp_path / "models.csv", **{name: tables / f"{name}.csv"
                                                   for name in ("head_diagnostics", "sink_rates")}}
    frame = paper_comparison(values, paths, tmp_path / "c.csv",
                             context=StudyContext(models=("tiny", "tiny@norm"), select_split="train",
                                                  score_split="dev", glove=False, resamples=10,
                                                  input_protocol="words"))
    assert set(frame["model"]) == {"tiny"} and set(frame["status"]) == {"compared"}
    rates = pd.read_csv(tables / "sink_rates.csv")
    rate = rates[(rates["checkpoint"] == "pretrained") & (rates["input"] == "random") & (rates["layer"] == "all")]
    sink = frame[frame["analysis"] == "sink rate"].iloc[0]
    assert sink["study_value"] == round(float(rate["sink_rate"].iloc[0]), 2)
    diagnostics = pd.read_csv(tables / "head_diagnostics.csv")
    induction = diagnostics[(diagnostics["checkpoint"] == "pretrained") & (diagnostics["input"] == "random_repeated")]
    best = induction.loc[induction["induction"].idxmax()]
    heads = frame[frame["analysis"] == "head roles"].iloc[0]
    assert heads["study_value"].split(", ")[0] == f"{best['layer']}.{best['head']}"
    assert "5.5: not in this model" in heads["study_detail"]


def test_a_second_run_does_nothing(built):
    result = snakemake(built, "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr
