"""Lexical categories of the most-attended words [L] (METHODS 9) on hand-built maps."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.dumps import write_dump, write_token_roles
from support.tiny_models import placeholder_checkpoint
from workflow_scripts.core.errors import AtlasError as ConfigError
from workflow_scripts.finetune_effects.lexical import (
    category_counts,
    category_of,
    lexical_counts,
    lexical_tables,
    load_counts,
    task_groups,
)

MAPPING = {"content": ["NOUN", "PROPN", "VERB", "ADJ", "ADV"],
           "function": ["DET", "ADP", "AUX", "CCONJ", "SCONJ", "PART", "PRON"]}
PREDICTIONS = {"syntactic": ["cola", "mrpc", "mnli"], "semantic": ["sst2", "qqp", "wic"]}

WORDS = ["The", "cat", "sat", "on", "the", "mat"]
UPOS = ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN"]
# [CLS] The cat sat on the ma ##t [SEP]: "mat" has two tokens.
TOKEN_WORD = np.array([-1, 0, 1, 2, 3, 4, 5, 5, -1])
SPECIAL = TOKEN_WORD < 0
SEGMENT = np.where(SPECIAL, -1, 0)
CAT, THE = 2, 1  # token positions of the first noun and the first determiner
N = len(TOKEN_WORD)


def onto(token: int, cls_share: float = 0.5) -> np.ndarray:
    """Every row: ``cls_share`` on [CLS], the rest on ``token``."""
    a = np.zeros((N, N))
    a[:, 0] = cls_share
    a[:, token] += 1 - cls_share
    return a


def write_study(tmp_path, name: str, head_maps: np.ndarray, ids=range(5), upos=UPOS):
    """A dump where every example has the same (layers, heads, T, T) maps, plus its token table and annotation."""
    folder = tmp_path / name
    manifest = write_dump(folder / "dump", {i: head_maps for i in ids})
    tokens = write_token_roles(folder / "tokens.parquet", {i: (SPECIAL, SEGMENT, TOKEN_WORD) for i in ids})
    annotation = folder / "annotation.parquet"
    pq.write_table(pa.table({"example_id": pa.array(list(ids), pa.int64()),
                             "annotator": ["hand"] * len(ids), "upos": [list(upos)] * len(ids)}), annotation)
    return manifest.parent, tokens, annotation


def test_categories_come_from_the_upos_mapping():
    assert category_of(["NOUN", "DET", "PUNCT", "PRON", "NUM"], MAPPING).tolist() == [0, 1, 2, 1, 2]
    assert category_of(["NUM"], {"content": ["NUM"], "function": []}).tolist() == [0]
    with pytest.raises(ConfigError, match="more than one"):
        category_of(["X"], {"content": ["X"], "function": ["X"]})
    assert task_groups(PREDICTIONS)["cola"] == "syntactic" and task_groups(PREDICTIONS)["wic"] == "semantic"


def test_a_map_that_always_attends_to_the_first_noun_is_all_content(tmp_path):
    maps = np.stack([onto(CAT), onto(CAT, 0.9)])[None]  # 1 layer x 2 heads; half or more on [CLS]
    dump, tokens, annotation = write_study(tmp_path, "noun", maps)
    summary = lexical_counts(dump, tokens, annotation, tmp_path / "noun.npz", mapping=MAPPING, exclude_self=False)
    counts = load_counts(tmp_path / "noun.npz")
    assert summary["examples"] == 5 and summary["attending_words"] == 30
    np.testing.assert_allclose(counts["layer_argmax"][:, 0], [[6, 0, 0]] * 5)
    # specials removed, rows renormalised
    np.testing.assert_allclose(counts["layer_mass"][:, 0], [[6, 0, 0]] * 5, atol=1e-9)
    np.testing.assert_allclose(counts["head_argmax"][:, 0, 1], [[6, 0, 0]] * 5)
    assert json.loads((tmp_path / "noun.json").read_text())["annotators"] == ["hand"]


def test_argmax_keeps_or_excludes_the_word_itself():
    unit_word = np.arange(6)
    category = category_of(UPOS, MAPPING)
    a = np.zeros((6, 6))
    a[np.arange(6), np.arange(6)] = 0.6
    a[:, 1] += 0.4  # every word also looks at "cat" ...
    a[1] = 0.0
    a[1, 1], a[1, 0] = 0.6, 0.4  # ... and "cat" at "The"
    with_self, mass, rows, empty = category_counts(a, unit_word, category, exclude_self=False)
    assert with_self.tolist() == [3, 3, 0] and rows == 6 and empty == 0
    np.testing.assert_allclose(mass, [0.6 * 3 + 0.4 * 5, 0.6 * 3 + 0.4, 0])
    without_self, *_ = category_counts(a, unit_word, category, exclude_self=True)
    assert without_self.tolist() == [5, 1, 0]


def test_rows_with_no_word_mass_and_words_without_tokens_are_counted(tmp_path):
    a = onto(THE)
    a[3] = 0.0
    a[3, 0] = 1.0  # "sat" attends to [CLS] only: no mass left on words
    maps = a[None, None]
    dump, tokens, annotation = write_study(tmp_path, "odd", maps, ids=[0], upos=UPOS + ["PUNCT"])  # 7th word cut
    summary = lexical_counts(dump, tokens, annotation, tmp_path / "odd.npz", mapping=MAPPING, exclude_self=False)
    assert summary["words_without_units"] == 1
    assert summary["layer_rows_without_word_mass"] == 1
    counts = load_counts(tmp_path / "odd.npz")
    assert counts["rows"].tolist() == [6]
    assert counts["layer_argmax"][0, 0].tolist() == [0, 5, 0]  # the empty row counts as a word but no category


def test_tables_change_and_predicted_direction(tmp_path):
    noun = np.stack([np.stack([onto(CAT), onto(CAT)]), np.stack([onto(CAT), onto(THE)])])  # 2 layers x 2 heads
    det = np.stack([np.stack([onto(CAT), onto(CAT)]), np.stack([onto(THE), onto(THE)])])
    parts = {}
    for task in ("cola", "sst2"):
        for name, maps in (("pretrained", noun), (f"{task}.seed1.final", det)):
            dump, tokens, annotation = write_study(tmp_path, f"{task}-{name}", maps)
            lexical_counts(dump, tokens, annotation, tmp_path / f"{task}-{name}.npz", mapping=MAPPING,
                           exclude_self=False)
            extra = {"global_step": 10} if name != "pretrained" else {}
            parts[("tiny", name, task)] = (tmp_path / f"{task}-{name}.npz",
                                           placeholder_checkpoint(tmp_path / f"ckpt-{task}-{name}", name, **extra))
    out = {k: tmp_path / f"{k}.csv" for k in ("layers", "heads", "change", "last", "top")}
    tables = lexical_tables(parts, predictions=PREDICTIONS, top_k=3, layers_out=out["layers"], heads_out=out["heads"],
                            change_out=out["change"], last_layer_out=out["last"], top_out=out["top"], resamples=200,
                            seed=0)
    layers = tables["layers"].set_index(["task", "checkpoint", "layer", "category"])
    # Layer 1 of the pretrained model: the mean of the heads (0.25 on "cat", 0.25 on "The") ties: argmax takes the
    # first word.
    assert layers.loc[("cola", "pretrained", 0, "content"), "argmax_share"] == 1.0
    assert layers.loc[("cola", "cola.seed1.final", 1, "function"), "argmax_share"] == 1.0
    assert layers.loc[("cola", "cola.seed1.final", 1, "function"), "mass_share"] == pytest.approx(1.0)
    assert layers.loc[("cola", "cola.seed1.final", 1, "function"), "n"] == 30
    heads = tables["heads"].set_index(["task", "checkpoint", "layer", "head", "category"])
    assert heads.loc[("cola", "pretrained", 1, 1, "function"), "argmax_share"] == 1.0
    assert heads.loc[("cola", "pretrained", 1, 0, "content"), "argmax_share"] == 1.0
    last = tables["last_layer"]
    assert set(last["layer"]) == {1}
    row = last[(last["task"] == "cola") & (last["category"] == "function") & (last["measure"] == "mass")].iloc[0]
    # No resample reached 0: p is the floor 1/B (never 0), printed "< 1/B".
    assert row["difference"] == pytest.approx(0.5) and row["p"] == pytest.approx(1 / 200)
    assert row["p_text"] == "< 0.005" and row["bootstrap_resamples"] == 200
    assert row["ci_low"] == pytest.approx(0.5) and row["ci_high"] == pytest.approx(0.5)
    assert row["predicted_direction"] == "up" and bool(row["moved_as_predicted"]) and row["task_group"] == "syntactic"
    semantic = last[(last["task"] == "sst2") & (last["category"] == "content") & (last["measure"] == "mass")].iloc[0]
    assert semantic["predicted_direction"] == "up" and not bool(semantic["moved_as_predicted"])
    assert (tables["change"]["global_step"] == 10).all()
    top = tables["top"]
    assert top.groupby(["task", "checkpoint", "category"]).size().max() == 2  # only 2 layers here
    assert pd.read_csv(out["change"])["n_examples"].eq(5).all()
