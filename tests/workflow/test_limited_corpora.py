"""End to end: the tiny study's whole DAG with every corpus limited by ``attention.max_examples``.

Token tables and dumps keep only the first N examples of each corpus (treebanks ewt and gum, the coreference
windows, wiki, the task); the data tables, annotations, trees and mention tables keep them all. Every analysis,
figure and page must build from the kept examples, and a configured figure sentence or explorer example that
the limit cut off is replaced, which the figure and page say. To stay quick on 2 cores (every job is a process
of its own: their count sets the time) the study is a copy of the shared tiny study, rebuilt with the pretrained
checkpoint only (and the fine-tuned one), one shard per dump, one signal, and one epoch of the probes and the
pattern CNN.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from support.workflow_runs import config_of, copy_study, with_config
from workflow_scripts.core.io import read_metadata

pytestmark = pytest.mark.e2e

# corpus -> (its splits in the tiny study, attention.max_examples); every split has more examples than N.
LIMITS = {"ewt": (("train", "dev"), 3), "gum": (("dev",), 3), "gumwin": (("dev",), 2), "wiki": (("segments",), 2),
          "cola": (("dev",), 3)}
FIGURE_SENTENCE = 4  # syntax.figure_example_id: an ewt dev sentence beyond the first 3
EXPLORER_IDS = [1, 5]  # explorer.example_ids: cola dev examples, 5 beyond the first 3


@pytest.fixture(scope="module")
def built(tiny_study: Path, tmp_path_factory) -> Path:
    """A copy of the shared tiny study rebuilt under the limits: its data, annotation, model card and fine-tuning
    are reused, and what the limits change (token tables, dumps, analyses, pages) is made again."""
    study = copy_study(tiny_study, tmp_path_factory.mktemp("limited") / "study")
    config = config_of(study)
    config["attention"].update(max_examples={corpus: n for corpus, (_, n) in LIMITS.items()}, num_shards=1,
                               signals=["attention"], checkpoints=["pretrained"])
    config["syntax"] = {"probe_epochs": 1, "bootstrap_resamples": 20, "figure_example_id": FIGURE_SENTENCE}
    config["surface"].update({"bootstrap_resamples": 20, "gradient_examples": 2, "cluster_examples": 8})
    config["finetune_effects"] = {"bootstrap_resamples": 20, "label_sample": 16, "cnn": {"epochs": 1, "size": 8}}
    config["ablation"]["max_examples"] = 3
    config["explorer"] = {"example_ids": EXPLORER_IDS}
    result = with_config(study, config, name="limited.yaml")
    assert result.returncode == 0, result.stderr[-6000:]
    return study / "results"


def _kept(results: Path, corpus: str, split: str) -> list[int]:
    """The first N example ids of the corpus's data table (its order is the one the limit keeps)."""
    ids = pq.read_table(results / "data" / corpus / f"{split}.parquet", columns=["example_id"])["example_id"]
    n = LIMITS[corpus][1]
    assert len(ids) > n, f"{corpus}/{split} has {len(ids)} examples: the limit of {n} would keep them all"
    return ids.to_pylist()[:n]


def _unique(values) -> list[int]:
    return list(dict.fromkeys(int(v) for v in values))


def test_token_tables_and_dumps_hold_only_the_kept_examples(built):
    for corpus, (splits, n) in LIMITS.items():
        for split in splits:
            kept = _kept(built, corpus, split)
            tokens = built / "tokens" / "tiny" / corpus / f"{split}.parquet"
            assert _unique(pq.read_table(tokens, columns=["example_id"])["example_id"].to_pylist()) == kept
            assert read_metadata(tokens)["max_examples"] == n
            # The study's dumps (not the random-init ones the copied folder still holds) and the shards their
            # manifests list (not the two-shard layout's files the copy still holds).
            for dump in (built / "attention" / "tiny").glob(f"*/{corpus}/{split}"):
                if dump.parts[-3] == "random":
                    continue
                manifest = json.loads((dump / "manifest.json").read_text())
                files = [dump / shard["file"] for shard in manifest["shards"]]
                stored = [i for f in files for i in pq.read_table(f, columns=["example_id"])["example_id"].to_pylist()]
                assert manifest["examples"] == n and sorted(stored) == sorted(kept), dump


def test_every_analysis_reads_the_kept_examples_only(built):
    analysis = built / "analysis"
    for treebank, split in (("ewt", "train"), ("ewt", "dev")):  # syntax.treebanks: ewt (gum: coreference)
        kept = set(_kept(built, treebank, split))
        part = analysis / "syntax" / "tiny" / "pretrained" / "dependency" / f"{treebank}_{split}.parquet"
        assert set(pq.read_table(part, columns=["example_id"])["example_id"].to_pylist()) == kept, part
        index = analysis / "syntax" / "tiny" / "pretrained" / "probe_features" / f"{treebank}_{split}.index.npz"
        assert set(np.load(index)["example_ids"].tolist()) == kept, index
    windows = set(_kept(built, "gumwin", "dev"))
    coref = pq.read_table(analysis / "syntax" / "tiny" / "pretrained" / "coreference" / "gumwin_dev.parquet")
    assert set(coref["example_id"].to_pylist()) <= windows
    assert read_metadata(analysis / "syntax" / "tiny" / "pretrained" / "coreference" / "gumwin_dev.parquet"
                         )["windows"] == len(windows)
    tables = built / "tables"
    surface = pd.read_csv(tables / "surface_heads.csv")
    assert (surface["n_examples"] == LIMITS["wiki"][1]).all()
    change = pd.read_csv(tables / "finetune_change.csv")
    assert len(change) and (change["n"] == LIMITS["cola"][1]).all()
    for table in ("dependency_best", "coref_best", "probes", "pattern_classes", "lexical_layers", "head_clusters"):
        assert len(pd.read_csv(tables / f"{table}.csv")), table


def test_a_configured_example_the_limit_cut_off_is_replaced_and_said(built):
    assert (built / "figures" / "syntax" / "best_head_maps_tiny_pretrained_ewt.png").stat().st_size > 0
    log = (built / "logs" / "syntax" / "tiny_pretrained_best_head_maps_ewt.log").read_text()
    assert f"sentence {FIGURE_SENTENCE} (syntax.figure_example_id) is not in the dump" in log, log[-2000:]
    page = (built / "explorer" / "tiny.html").read_text()
    assert "Example ids [5] (explorer.example_ids) are not among the 3 examples" in page
