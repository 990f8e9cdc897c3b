"""A GPT-2 through the real DAG: the stages of the decoder and families study (tests/support/decoder_families.py) on
its hand-set GPT-2, with the norm signal: the lower-triangle dumps, the head diagnostics and sink rates, a head measure,
the gradient analysis that skips a decoder, the dependency directions a causal map allows, fine-tuning, the causal head
checks and the papers' decoder numbers. The stages that read a dump through its reader alone (probes, coreference,
the explorer) are taken through causal dumps by the unit tests (tests/attention/test_causal_dumps.py); the tiny
study takes an encoder through every stage."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from support.decoder_families import TARGETS
from support.workflow_runs import snakemake
from workflow_scripts.core.labels import CAUSAL_DIRECTIONS

pytestmark = pytest.mark.e2e

DECODER = "gpt2"  # the study's GPT-2: 2 layers x 2 heads


@pytest.fixture(scope="module")
def built(families_study):
    """The decoder and families study (``families_study`` of tests/conftest.py), built once per run of the suite."""
    return families_study


def _rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the GPT-2's two subjects (its attention and its norm signal)."""
    return table[table["model"].isin([DECODER, f"{DECODER}@norm"])]


def test_a_tiny_decoder_goes_through_every_stage(built):
    results = built / "results"
    manifest = json.loads((results / f"attention/{DECODER}/pretrained/wiki/segments/manifest.json").read_text())
    assert manifest["layout"] == "lower_triangle"  # a decoder's dump stores the triangles
    dumps = _rows(pd.read_csv(results / "tables" / "attention_dumps.csv"))
    assert set(dumps["model"] + ":" + dumps["signal"]) == {f"{DECODER}:attention", f"{DECODER}@norm:norm"}
    # [C]'s dependency heads, in the directions a causal map allows, for both signals
    best = _rows(pd.read_csv(results / "tables" / "dependency_best.csv"))
    assert set(best["direction"]) == set(CAUSAL_DIRECTIONS) and set(best["model"]) == {DECODER, f"{DECODER}@norm"}
    # the head diagnostics on every input kind, with the sink rates per layer
    diagnostics = _rows(pd.read_csv(results / "tables" / "head_diagnostics.csv"))
    assert set(diagnostics["input"]) == {"natural", "random", "random_repeated", "one_token"}
    assert set(diagnostics["checkpoint"]) == {"pretrained", "random"}
    rates = _rows(pd.read_csv(results / "tables" / "sink_rates.csv"))
    assert set(rates["layer"].astype(str)) == {"0", "1", "all"} and rates["sink_rate"].between(0, 100).all()
    assert set(_rows(pd.read_csv(results / "tables" / "first_token.csv"))["model"]) == {DECODER, f"{DECODER}@norm"}
    # fine-tuned (sequence classification from the last token), scored, and each head disabled in it
    metrics = _rows(pd.read_csv(results / "tables" / "finetune_metrics.csv"))
    assert set(metrics["task"]) == {"cola"}
    disabling = _rows(pd.read_csv(results / "tables" / "head_disabling.csv"))
    assert len(disabling) == 2 * 2 and disabling["score"].notna().all()
    gradient = pd.read_csv(results / "tables" / "sep_gradient.csv")
    assert gradient.loc[gradient["model"] == DECODER, "skipped"].str.startswith("a decoder (gpt2)").all()


def test_the_decoder_numbers_of_the_papers_meet_the_study_tables(built, tiny_study, tmp_path):
    from workflow_scripts.report.comparison import paper_comparison
    from workflow_scripts.report.items import StudyContext

    # A study without the models Gu et al. and Wang et al. measured (the tiny study's table, as the DAG wrote it): one
    # row each, saying which to add.
    rows = pd.read_csv(tiny_study / "results" / "tables" / "paper_comparison.csv", keep_default_na=False)
    papers = rows[rows["paper"].isin(["G", "W"])]
    assert len(papers) == 20 and set(papers["model"]) == {""} and set(papers["status"]) == {"not computed"}
    assert papers["reason"].str.contains("add it to the config").all()
    tables = built / "results" / "tables"
    cards = pd.read_csv(tables / "models.csv")
    assert cards["hub_id"].isna().all()  # local folders the prefetch did not write: no hub id
    # The same kind of numbers, said to be of the GPT-2 (its card given a hub id), on the tables the DAG wrote.
    cards["hub_id"] = cards["name"].map({DECODER: "x/gpt2"})
    cards.to_csv(tmp_path / "models.csv", index=False)
    values = tmp_path / "values.csv"
    values.write_text("paper,analysis,item,value,unit,note,source,model\n"
                      'G,sink rate,"gpt2 sink rate, random tokens",50,%,,G,x/gpt2\n'
                      'W,head roles,induction heads,"1.3, 5.5",heads,,W,x/gpt2\n')
    paths = {"models": tmp_path / "models.csv", **{name: tables / f"{name}.csv"
                                                   for name in ("head_diagnostics", "sink_rates")}}
    frame = paper_comparison(values, paths, tmp_path / "c.csv",
                             context=StudyContext(models=(DECODER, f"{DECODER}@norm"), select_split="train",
                                                  score_split="dev", glove=False, resamples=10,
                                                  input_protocol="words"))
    assert set(frame["model"]) == {DECODER} and set(frame["status"]) == {"compared"}
    rates = pd.read_csv(tables / "sink_rates.csv")
    rate = rates[(rates["model"] == DECODER) & (rates["checkpoint"] == "pretrained") & (rates["input"] == "random")
                 & (rates["layer"] == "all")]
    sink = frame[frame["analysis"] == "sink rate"].iloc[0]
    assert sink["study_value"] == round(float(rate["sink_rate"].iloc[0]), 2)
    diagnostics = pd.read_csv(tables / "head_diagnostics.csv")
    induction = diagnostics[(diagnostics["model"] == DECODER) & (diagnostics["checkpoint"] == "pretrained")
                            & (diagnostics["input"] == "random_repeated")]
    best = induction.loc[induction["induction"].idxmax()]
    heads = frame[frame["analysis"] == "head roles"].iloc[0]
    assert heads["study_value"].split(", ")[0] == f"{best['layer']}.{best['head']}" == "1.0"  # the hand-set head
    assert "5.5: not in this model" in heads["study_detail"]


def test_a_second_run_does_nothing(built):
    result = snakemake(built, *TARGETS, "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr
