"""Pattern classes [K] (METHODS 8.1): hand-built maps whose class is known by construction.

Also holds the helpers that write a hand-built dump, token table and annotation in the formats of
the attention stage (used by test_change, test_lexical and test_pattern_cnn too).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workflow_scripts.finetune_effects.patterns import (
    BLOCK,
    CLASSES,
    DIAGONAL,
    HETEROGENEOUS,
    VERTICAL,
    VERTICAL_DIAGONAL,
    Thresholds,
    class_index,
    class_shares,
    combine_parts,
    first_examples,
    map_features,
    pattern_classes_part,
    pattern_features,
    rule_labels,
)
from workflow_scripts.attention.extract import DUMP_SCHEMA
from workflow_scripts.models.checkpoints import write_manifest
from workflow_scripts.core.errors import AtlasError, ConfigError

# --- helpers: hand-built dumps in the attention stage's formats --------------------------------


def roles(len_a: int, len_b: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """special flags and segments of [CLS] a.. [SEP] (b.. [SEP])."""
    segment = [-1] + [0] * len_a + [-1]
    if len_b is not None:
        segment += [1] * len_b + [-1]
    segment = np.array(segment)
    return segment < 0, segment


def write_dump(directory: Path, maps: dict[int, np.ndarray], order: list[int] | None = None,
               shards: int = 2) -> Path:
    """A dump of hand-built (layers, heads, T, T) maps, in ``order`` (storage order), as extraction writes it."""
    directory.mkdir(parents=True, exist_ok=True)
    order = list(maps) if order is None else order
    first = next(iter(maps.values()))
    bounds = np.linspace(0, len(order), shards + 1).round().astype(int)
    entries = []
    for index in range(shards):
        ids = order[bounds[index]:bounds[index + 1]]
        name = f"shard-{index:04d}-of-{shards:04d}.parquet"
        batch = pa.table({"example_id": pa.array(ids, pa.int64()),
                          "n_tokens": pa.array([maps[i].shape[-1] for i in ids], pa.int32()),
                          "attention": pa.array([maps[i].astype("<f2").tobytes() for i in ids], pa.large_binary())},
                         schema=DUMP_SCHEMA)
        pq.write_table(batch, directory / name, row_group_size=2, write_page_checksum=True)
        entries.append({"file": name, "rows": len(ids)})
    manifest = {"num_layers": first.shape[0], "num_heads": first.shape[1], "examples": len(order),
                "shards": entries}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory / "manifest.json"


def write_tokens(path: Path, examples: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Path:
    """Token table: example id -> (special, segment, word_index) per token."""
    rows = {"example_id": [], "token_index": [], "special": [], "segment": [], "word_index": []}
    for example_id, (special, segment, word) in examples.items():
        n = len(special)
        rows["example_id"] += [example_id] * n
        rows["token_index"] += list(range(n))
        rows["special"] += [bool(s) for s in special]
        rows["segment"] += [int(s) for s in segment]
        rows["word_index"] += [int(w) for w in word]
    table = pa.table({"example_id": pa.array(rows["example_id"], pa.int64()),
                      "token_index": pa.array(rows["token_index"], pa.int32()),
                      "special": pa.array(rows["special"], pa.bool_()),
                      "segment": pa.array(rows["segment"], pa.int8()),
                      "word_index": pa.array(rows["word_index"], pa.int32())})
    pq.write_table(table, path)
    return path


def simple_words(special: np.ndarray) -> np.ndarray:
    """One word per non-special token, in order."""
    word = np.full(len(special), -1)
    word[~special] = np.arange((~special).sum())
    return word


def checkpoint(directory: Path, name: str = "pretrained", **extra) -> Path:
    return write_manifest(directory, model="tiny", name=name, load_from="nowhere", **extra)


# --- hand-built maps -----------------------------------------------------------------------


def vertical_map(special: np.ndarray) -> np.ndarray:
    n = len(special)
    a = np.zeros((n, n))
    a[:, special] = 1.0 / special.sum()
    return a


def previous_token_map(n: int) -> np.ndarray:
    a = np.zeros((n, n))
    a[0, 0] = 1.0
    a[np.arange(1, n), np.arange(n - 1)] = 1.0
    return a


def block_map(special: np.ndarray, segment: np.ndarray) -> np.ndarray:
    n = len(special)
    a = np.zeros((n, n))
    for i in range(n):
        if special[i]:
            a[i] = 1.0 / n
        else:
            same = (segment == segment[i]) & ~special
            a[i, same] = 1.0 / same.sum()
    return a


def uniform_map(n: int) -> np.ndarray:
    return np.full((n, n), 1.0 / n)


def test_a_map_on_the_special_tokens_only_is_vertical():
    special, segment = roles(10)
    features = map_features(vertical_map(special), special, segment)
    assert features["vertical"] == pytest.approx(1.0)
    assert rule_labels(features, Thresholds()) == VERTICAL


def test_a_previous_token_map_is_diagonal():
    special, segment = roles(10)
    features = map_features(previous_token_map(len(special)), special, segment)
    assert features["diagonal"] == pytest.approx(11 / 12)
    assert np.isnan(features["block"]), "block is defined for pairs only"
    assert rule_labels(features, Thresholds()) == DIAGONAL


def test_within_sentence_attention_on_a_pair_is_block_and_not_on_one_sentence():
    special, segment = roles(8, 8)
    features = map_features(block_map(special, segment), special, segment)
    assert features["block"] == pytest.approx(1.0)
    assert rule_labels(features, Thresholds()) == BLOCK
    single_special, single_segment = roles(17)
    single = map_features(block_map(single_special, single_segment), single_special, single_segment)
    assert rule_labels(single, Thresholds()) == HETEROGENEOUS


def test_mixed_and_broad_maps():
    special, segment = roles(8, 8)
    n = len(special)
    mixed = 0.5 * vertical_map(special) + 0.5 * previous_token_map(n)
    uniform = uniform_map(n)
    maps = np.stack([vertical_map(special), previous_token_map(n), mixed, block_map(special, segment), uniform])
    features = map_features(maps[None], special, segment)  # (1 layer, 5 heads): all heads at once
    assert features["vertical"].shape == (1, 5)
    assert rule_labels(features, Thresholds()).tolist() == [[VERTICAL, DIAGONAL, VERTICAL_DIAGONAL, BLOCK,
                                                             HETEROGENEOUS]]
    # The uniform map's within-segment share is about a half whatever the segment lengths.
    long_special, long_segment = roles(30, 4)
    assert map_features(uniform_map(len(long_special)), long_special, long_segment)["block"] == pytest.approx(0.5)


def test_thresholds_come_from_config_and_unknown_keys_are_named():
    assert Thresholds.from_config({"block": 0.9}).block == 0.9
    with pytest.raises(ConfigError, match="bogus"):
        Thresholds.from_config({"bogus": 1})
    assert class_index("vert+diag") == VERTICAL_DIAGONAL and class_index("heterogeneous") == HETEROGENEOUS
    with pytest.raises(KeyError):
        class_index("Sideways")


def test_class_shares_count_maps_and_resample_examples():
    ids = np.array([0, 0, 1, 1])
    labels = np.array([VERTICAL, BLOCK, VERTICAL, VERTICAL])
    shares = class_shares(ids, labels, resamples=200).set_index("class")
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
    tokens = write_tokens(tmp_path / "tokens.parquet",
                          {i: (special, segment, simple_words(special)) for i in (5, 3, 9)})
    assert first_examples(tokens, 2) == [5, 3]
    frame = pattern_features(manifest.parent, tokens, tmp_path / "features.parquet", thresholds=Thresholds(),
                             max_examples=2)
    assert sorted(frame["example_id"].unique()) == [3, 5], "the first two examples of the token table only"
    first = frame[frame["example_id"] == 3].sort_values(["layer", "head"])
    assert first["rule_class"].tolist() == ["Vertical", "Diagonal", "Block", "Heterogeneous"]
    shares = pattern_classes_part(tmp_path / "features.parquet", tmp_path / "classes.csv", model="tiny",
                                  checkpoint="pretrained", task="rte",
                                  checkpoint_manifest=checkpoint(tmp_path / "ckpt"), resamples=100)
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
    manifest = write_dump(tmp_path / "dump", {1: uniform_map(n)[None, None]}, shards=1)
    tokens = write_tokens(tmp_path / "tokens.parquet", {1: (special, segment, simple_words(special)),
                                                        2: (special, segment, simple_words(special))})
    with pytest.raises(AtlasError, match="holds 1 of the 2 examples"):
        pattern_features(manifest.parent, tokens, tmp_path / "f.parquet", thresholds=Thresholds())


def test_combine_parts_without_parts(tmp_path):
    with pytest.raises(AtlasError, match="no part tables"):
        combine_parts([], tmp_path / "x.csv", ["task"])
    frame = combine_parts([], tmp_path / "x.csv", ["task"], empty_columns=["task", "cosine"])
    assert frame.empty and list(pd.read_csv(tmp_path / "x.csv").columns) == ["task", "cosine", "note"]
