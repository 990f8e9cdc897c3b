"""core/io.stack_csv_parts: the one way per-job CSV parts become a study table (surface, finetune_effects, ablation)."""

from __future__ import annotations

import pandas as pd
import pytest

from workflow_scripts.core.errors import AtlasError, InputFormatError
from workflow_scripts.core.io import stack_csv_parts


def _part(path, rows):
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_parts_are_stacked_and_sorted_stably_by_the_columns_they_have(tmp_path):
    a = _part(tmp_path / "a.csv", {"model": ["m2", "m1"], "layer": [1, 0], "value": [0.5, 0.25]})
    b = _part(tmp_path / "b.csv", {"model": ["m1", "m1"], "layer": [0, 2], "value": [0.75, 1.0]})
    table = stack_csv_parts([a, b], tmp_path / "out.csv", sort_by=["model", "layer", "absent"])
    # m1/0 from a comes before m1/0 from b: the sort is stable, and a column no part has is passed over.
    assert table.to_dict("list") == {"model": ["m1", "m1", "m1", "m2"], "layer": [0, 0, 2, 1],
                                     "value": [0.25, 0.75, 1.0, 0.5]}
    assert list(table.index) == [0, 1, 2, 3]
    assert not (tmp_path / "out.csv").exists(), "the caller writes the table"


def test_columns_are_kept_in_order_and_a_part_without_one_is_refused_by_name(tmp_path):
    a = _part(tmp_path / "a.csv", {"extra": [9], "head": [3], "model": ["m"]})
    table = stack_csv_parts([a], tmp_path / "t.csv", sort_by=["model"], columns=["model", "head"])
    assert list(table.columns) == ["model", "head"] and table["head"].tolist() == [3]
    bad = _part(tmp_path / "bad.csv", {"model": ["m"]})
    with pytest.raises(InputFormatError, match=r"bad.csv.*columns \['head'\] are missing \(a part of t.csv"):
        stack_csv_parts([a, bad], tmp_path / "t.csv", sort_by=["model"], columns=["model", "head"])


def test_no_parts_give_an_empty_table_with_its_columns_or_an_error_naming_the_table(tmp_path):
    assert list(stack_csv_parts([], tmp_path / "t.csv", sort_by=["m"], columns=["m", "h"]).columns) == ["m", "h"]
    assert list(stack_csv_parts([], tmp_path / "t.csv", sort_by=["m"], empty_columns=["m"]).columns) == ["m"]
    with pytest.raises(AtlasError, match=r"t.csv: no part tables to combine"):
        stack_csv_parts([], tmp_path / "t.csv", sort_by=["m"])
