"""Pattern CNN labels on a corpus limited by ``attention.max_examples``: the dump and token table hold the first
examples of the task's dev split, a (human) labels file may name maps of any example."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from support.dumps import write_dump, write_token_roles
from support.maps import block_map, previous_token_map, roles, simple_words, vertical_map
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.core.io import write_table
from workflow_scripts.finetune_effects.pattern_cnn import collect_maps, train_pattern_cnn
from workflow_scripts.finetune_effects.pattern_rules import Thresholds
from workflow_scripts.finetune_effects.patterns import held_labels

KEPT = 4  # attention.max_examples of the task: examples 0..3 of its dev split
THRESHOLDS = Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8)


def _dumps(tmp_path, limit: int | None) -> dict:
    """A pretrained dump (1 layer x 3 heads: vertical, previous token, block) of the first KEPT pair examples."""
    maps, token_rows = {}, {}
    for example_id in range(KEPT):
        special, segment = roles(3 + example_id, 4)
        n = len(special)
        maps[example_id] = np.stack([vertical_map(special), previous_token_map(n), block_map(special, segment)])[None]
        token_rows[example_id] = (special, segment, simple_words(special))
    manifest = write_dump(tmp_path / "dump", maps)
    tokens = write_token_roles(tmp_path / "tokens.parquet", token_rows)
    # As the token_table rule writes it: the limit in the table's metadata.
    write_table(pq.read_table(tokens), tokens, {"max_examples": limit})
    return {("pretrained", "rte"): (manifest.parent, tokens)}


def _labels(example_ids: list[int]) -> pd.DataFrame:
    """Each example's three heads, labelled by construction."""
    return pd.DataFrame([{"checkpoint": "pretrained", "task": "rte", "example_id": e, "layer": 0, "head": h,
                          "class": ("Vertical", "Diagonal", "Block")[h], "source": "human"}
                         for e in example_ids for h in range(3)])


def test_labels_beyond_the_kept_examples_are_left_out(tmp_path, caplog):
    dumps = _dumps(tmp_path, limit=KEPT)
    everything = _labels([5, 0, 2, 9, 3])
    with caplog.at_level("WARNING", logger="workflow_scripts.finetune_effects.patterns"):
        kept = held_labels(everything, dumps)
    assert "6 labelled maps of pretrained/rte (examples [5, 9]) are beyond the first 4 dev examples" in caplog.text
    pd.testing.assert_frame_equal(kept, _labels([0, 2, 3]))
    # The maps and rule labels are those of the kept examples' labels alone.
    images, rules, _ = collect_maps(kept, dumps, size=8, thresholds=THRESHOLDS)
    alone, alone_rules, _ = collect_maps(_labels([0, 2, 3]), dumps, size=8, thresholds=THRESHOLDS)
    np.testing.assert_array_equal(images, alone)
    np.testing.assert_array_equal(rules, alone_rules)
    assert len(rules) == 9 and (rules >= 0).all()
    metrics = train_pattern_cnn(_write(tmp_path, everything), None, dumps, tmp_path / "cnn.safetensors",
                                tmp_path / "labels.csv", tmp_path / "metrics.csv", model="tiny", size=8, epochs=1,
                                learning_rate=3e-3, batch_size=8, holdout=0.34, thresholds=THRESHOLDS, seed=0,
                                threads=1)
    assert sorted(set(pd.read_csv(tmp_path / "labels.csv")["example_id"])) == [0, 2, 3]
    assert metrics["n_human"].iloc[0] == 9


def test_without_a_limit_a_label_of_an_example_the_dump_lacks_is_refused(tmp_path):
    dumps = _dumps(tmp_path, limit=None)
    labels = held_labels(_labels([0, 5]), dumps)
    assert len(labels) == 6
    with pytest.raises(AtlasError, match=r"labelled examples \[5\] of pretrained/rte are not in the dump"):
        collect_maps(labels, dumps, size=8, thresholds=THRESHOLDS)


def _write(tmp_path, labels: pd.DataFrame):
    path = tmp_path / "seeded.csv"
    labels.to_csv(path, index=False)
    return path
