"""End to end with stanza, the default annotator, run for real: tiny stanza models trained offline by the
session fixture ``tiny_stanza`` annotate a tiny study's task through the real DAG (annotation table, the
lexical tables on stanza's UPOS, and the report's line naming the annotator and its models)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from support.stanza_models import as_stanza_models
from support.workflow_runs import snakemake
from workflow_scripts.core.io import read_metadata

pytestmark = [pytest.mark.e2e, pytest.mark.stanza]


@pytest.fixture(scope="module")
def study(stanza_study) -> Path:
    """The tiny study's CoLA, annotated by stanza, analysed with the pretrained checkpoint only (no fine-tuning,
    no treebank, no wiki: the branch that annotation feeds): a copy of the shared tiny study with
    tests/support/stanza_models.py's ``write_stanza_config``, built once per session (``stanza_study`` of
    tests/conftest.py)."""
    return stanza_study


@pytest.fixture(scope="module")
def built(study):
    return study


def test_stanza_annotates_the_task_and_records_its_models(built, tiny_stanza):
    path = built / "results" / "annotation" / "cola" / "dev.parquet"
    rows = pq.read_table(path).to_pylist()
    texts = pq.read_table(built / "results" / "data" / "cola" / "dev.parquet")["text_a"].to_pylist()
    assert len(rows) == len(texts) == 6
    for row, text in zip(rows, texts):
        assert row["annotator"].startswith("stanza:") and row["head"] is not None
        assert row["head"].count(-1) >= 1 and all(-1 <= h < len(row["words"]) for h in row["head"])
        assert all(text[s:e] == w for w, s, e in zip(row["words"], row["char_start"], row["char_end"]))
    assert rows[0]["words"] == ["The", "cat", "sat", "on", "the", "mat", "."]
    meta = read_metadata(path)
    assert meta["annotator_models"] == as_stanza_models(tiny_stanza) and meta["pretokenized"] is False


def test_the_lexical_tables_are_built_on_stanzas_upos_and_the_report_names_annotator_and_models(built):
    layers = pd.read_csv(built / "results" / "tables" / "lexical_layers.csv")
    assert set(layers["task"]) == {"cola"} and set(layers["category"]) >= {"content", "function"}
    part = next((built / "results" / "analysis" / "finetune_effects").rglob("lexical*.parquet"), None)
    if part is not None:
        assert any(a.startswith("stanza:") for a in read_metadata(part).get("annotators", ["stanza:"]))
    log = next((built / "results" / "logs").rglob("summary*.log")).read_text(encoding="utf-8")
    assert ("text without gold annotation tagged by stanza with model files (tokenize tokenize.pt, mwt mwt.pt, "
            "pos pos.pt, pos_pretrain pretrain.pt, depparse depparse.pt, depparse_pretrain pretrain.pt; "
            "lemma = word)") in log


def test_a_missing_model_file_is_refused_before_any_job_naming_the_processor(study, tiny_stanza):
    config = yaml.safe_load((study / "stanza.yaml").read_text(encoding="utf-8"))
    config["annotation"]["stanza_models"]["depparse"] = str(study / "no" / "depparse.pt")
    (study / "broken.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    result = snakemake(study, "-n", configfile="broken.yaml")
    assert result.returncode != 0 and "Building DAG of jobs" not in result.stdout + result.stderr
    assert (f"config key 'annotation.stanza_models.depparse': the stanza depparse model {study / 'no' / 'depparse.pt'}"
            " is not a file") in result.stdout + result.stderr
