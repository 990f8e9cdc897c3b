"""Pattern classes [K] (METHODS 8.1): hand-built maps whose class is known by construction.

The maps (tests/support/maps.py) and the dumps and token tables (tests/support/dumps.py) are built by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from support.dumps import write_dump, write_token_roles
from support.maps import block_map, previous_token_map, roles, simple_words, uniform_map, vertical_map
from support.tiny_models import placeholder_checkpoint
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.finetune_effects.pattern_rules import (
    BLOCK,
    CLASSES,
    DIAGONAL,
    HETEROGENEOUS,
    VERTICAL,
    VERTICAL_DIAGONAL,
    Thresholds,
    class_index,
    map_features,
    rule_labels,
)
from workflow_scripts.finetune_effects.pattern_shares import class_shares, pattern_classes_part
from workflow_scripts.finetune_effects.patterns import combine_parts, first_examples, pattern_features


def test_a_map_on_the_special_tokens_only_is_vertical():
    special, segment = roles(10)
    features = map_features(vertical_map(special), special, segment)
    assert features["vertical"] == pytest.approx(1.0)
    assert rule_labels(features, Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8)) == VERTICAL


def test_a_previous_token_map_is_diagonal():
    special, segment = roles(10)
    features = map_features(previous_token_map(len(special)), special, segment)
    assert features["diagonal"] == pytest.approx(11 / 12)
    assert np.isnan(features["block"]), "block is defined for pairs only"
    assert rule_labels(features, Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8)) == DIAGONAL


def test_within_sentence_attention_on_a_pair_is_block_and_not_on_one_sentence():
    special, segment = roles(8, 8)
    features = map_features(block_map(special, segment), special, segment)
    assert features["block"] == pytest.approx(1.0)
    assert rule_labels(features, Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8)) == BLOCK
    single_special, single_segment = roles(17)
    single = map_features(block_map(single_special, single_segment), single_special, single_segment)
    assert rule_labels(single, Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8)) == HETEROGENEOUS


def test_mixed_and_broad_maps():
    special, segment = roles(8, 8)
    n = len(special)
    mixed = 0.5 * vertical_map(special) + 0.5 * previous_token_map(n)
    uniform = uniform_map(n)
    maps = np.stack([vertical_map(special), previous_token_map(n), mixed, block_map(special, segment), uniform])
    features = map_features(maps[None], special, segment)  # (1 layer, 5 heads): all heads at once
    assert features["vertical"].shape == (1, 5)
    assert rule_labels(features, Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8)).tolist() == [
        [VERTICAL, DIAGONAL, VERTICAL_DIAGONAL, BLOCK, HETEROGENEOUS]]
    # The uniform map's within-segment share is about a half whatever the segment lengths.
    long_special, long_segment = roles(30, 4)
    assert map_features(uniform_map(len(long_special)), long_special, long_segment)["block"] == pytest.approx(0.5)


def test_thresholds_come_from_config_and_unknown_keys_are_named():
    assert Thresholds.from_mapping({"structured": 1, "vertical": 0.3, "diagonal": 0.3, "block": 0.9}).block == 0.9
    with pytest.raises(TypeError, match="bogus"):
        Thresholds.from_mapping({"bogus": 1})
    assert class_index("vert+diag") == VERTICAL_DIAGONAL and class_index("heterogeneous") == HETEROGENEOUS
    with pytest.raises(KeyError):
        class_index("Sideways")


def test_class_shares_count_maps_and_resample_examples():
    ids = np.array([0, 0, 1, 1])
    labels = np.array([VERTICAL, BLOCK, VERTICAL, VERTICAL])
    shares = class_shares(ids, labels, resamples=200, seed=0).set_index("class")
    assert shares.loc["Vertical", "share"] == pytest.approx(0.75)
    assert shares.loc["Block", "share"] == pytest.approx(0.25)
    assert shares.loc["Diagonal", "share"] == 0
    assert (shares["n"] == 4).all() and (shares["n_examples"] == 2).all()
    assert shares.loc["Vertical", "ci_low"] <= 0.75 <= shares.loc["Vertical", "ci_high"]


def test_features_and_shares_of_a_dump_end_to_end(tmp_path):
    special, segment = roles(8, 8)
    n = len(special)
    heads = np.stack([vertical_map(special), previous_token_map(n), block_map(special, segment), uniform_map(n)])
    maps = {i: heads.reshape(2, 2, n, n) for i in (5, 3, 9)}  # 2 layers x 2 heads
    manifest = write_dump(tmp_path / "dump", maps)
    tokens = write_token_roles(tmp_path / "tokens.parquet",
                          {i: (special, segment, simple_words(special)) for i in (5, 3, 9)})
    assert first_examples(tokens, 2) == [5, 3]
    frame = pattern_features(manifest.parent, tokens, tmp_path / "features.parquet",
                             thresholds=Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8),
                             max_examples=2)
    assert sorted(frame["example_id"].unique()) == [3, 5], "the first two examples of the token table only"
    first = frame[frame["example_id"] == 3].sort_values(["layer", "head"])
    assert first["rule_class"].tolist() == ["Vertical", "Diagonal", "Block", "Heterogeneous"]
    shares = pattern_classes_part(tmp_path / "features.parquet", tmp_path / "classes.csv", model="tiny",
                                  classifier="rule", checkpoint="pretrained", task="rte",
                                  checkpoint_manifest=placeholder_checkpoint(tmp_path / "ckpt"), resamples=100,
                                  seed=0, threads=1)
    assert dict(zip(shares["class"], shares["share"])) == {"Vertical": 0.25, "Diagonal": 0.25,
                                                           "Vertical+Diagonal": 0.0, "Block": 0.25,
                                                           "Heterogeneous": 0.25}
    assert (shares["global_step"] == 0).all() and (shares["classifier"] == "rule").all()
    table = combine_parts([tmp_path / "classes.csv"], tmp_path / "table.csv", ["task", "class"],
                          pretrained_only=["rte"])
    assert table["note"].str.startswith("pretrained only").all()
    assert set(table["class"]) == set(CLASSES)


def test_a_dump_that_lacks_examples_is_an_error_naming_it(tmp_path):
    special, segment = roles(4)
    n = len(special)
    manifest = write_dump(tmp_path / "dump", {1: uniform_map(n)[None, None]}, n_shards=1)
    tokens = write_token_roles(tmp_path / "tokens.parquet", {1: (special, segment, simple_words(special)),
                                                        2: (special, segment, simple_words(special))})
    with pytest.raises(AtlasError, match="holds 1 of the 2 examples"):
        pattern_features(manifest.parent, tokens, tmp_path / "f.parquet",
                         thresholds=Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8))


def test_combine_parts_without_parts(tmp_path):
    with pytest.raises(AtlasError, match="no part tables"):
        combine_parts([], tmp_path / "x.csv", ["task"])
    frame = combine_parts([], tmp_path / "x.csv", ["task"], empty_columns=["task", "cosine"])
    assert frame.empty and list(pd.read_csv(tmp_path / "x.csv").columns) == ["task", "cosine", "note"]


def test_the_generic_table_rule_writes_an_empty_change_table_and_sorts_by_the_declared_key(tmp_path):
    from types import SimpleNamespace

    from workflow_scripts.entrypoints import ENTRY_POINTS, _import_all

    _import_all()

    def job(table, parts, key):
        output = tmp_path / f"{table}.csv"
        ENTRY_POINTS["finetune_effects_table"](SimpleNamespace(
            input=parts, output=[str(output)], wildcards=SimpleNamespace(table=table),
            params=SimpleNamespace(key=key, pretrained_only=["rte"])))
        return pd.read_csv(output, keep_default_na=False)

    # No fine-tuned checkpoint: the change after fine-tuning is its columns alone; another table without parts fails.
    change = job("finetune_change", [], ["model", "task", "checkpoint", "layer", "head"])
    assert change.empty and list(change.columns)[:3] == ["model", "task", "checkpoint"] and "note" in change.columns
    with pytest.raises(AtlasError, match="no part tables"):
        job("pattern_classes", [], ["model"])
    parts = []
    for model in ("b", "a"):
        parts.append(tmp_path / f"{model}.csv")
        pd.DataFrame({"model": [model] * 2, "task": ["rte", "cola"], "class": ["Block", "Vertical"]}).to_csv(
            parts[-1], index=False)
    classes = job("pattern_classes", parts, ["model", "task", "class"])
    assert list(zip(classes["model"], classes["task"])) == [("a", "cola"), ("a", "rte"), ("b", "cola"), ("b", "rte")]
    assert list(classes["note"] != "") == [False, True, False, True]  # rte is analysed pretrained only


def test_a_decoders_first_token_is_a_vertical_column_without_a_special_token():
    # GPT-2's text starts without a special token: a head that sends everything to the first token is vertical
    n = 5
    sink = np.zeros((n, n), np.float32)
    sink[:, 0] = 1
    features = map_features(sink[None], np.zeros(n, bool), np.zeros(n, int))
    assert features["vertical"][0] == pytest.approx(1.0) and features["structured"][0] == pytest.approx(1.0)
