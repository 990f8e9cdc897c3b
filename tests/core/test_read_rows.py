"""read_rows: some columns of a Parquet table, some examples' rows, without pyarrow's dataset layer."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workflow_scripts.core.io import read_rows


@pytest.fixture()
def table_path(tmp_path):
    path = tmp_path / "tokens.parquet"
    pq.write_table(pa.table({"example_id": [5, 5, 2, 9, 2], "word_index": [0, 1, 0, -1, 1], "token": list("abcde")}),
                   path, row_group_size=2)
    return path


def test_the_rows_of_some_examples_come_in_file_order(table_path):
    table = read_rows(table_path, ["example_id", "word_index"], [2, 9])
    assert table.column_names == ["example_id", "word_index"]
    assert table.to_pydict() == {"example_id": [2, 9, 2], "word_index": [0, -1, 1]}
    assert read_rows(table_path, ["token"]).column("token").to_pylist() == list("abcde")
    assert read_rows(table_path, ["example_id"], []).num_rows == 0


def test_a_missing_column_is_named_not_left_out(table_path):
    with pytest.raises(ValueError, match=r"tokens.parquet: no column deprel \(it has example_id, word_index, token\)"):
        read_rows(table_path, ["example_id", "deprel"])


def test_only_the_row_groups_that_can_hold_the_examples_are_read(tmp_path, monkeypatch):
    # A list column before example_id (Parquet counts its leaf), int32 ids, five row groups of two rows.
    path = tmp_path / "annotation.parquet"
    pq.write_table(pa.table({"words": [["a"], ["b", "c"]] * 5,
                             "example_id": pa.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], pa.int32())}),
                   path, row_group_size=2)
    read_groups = []
    original = pq.ParquetFile.read_row_groups

    def spy(self, groups, *args, **kwargs):
        read_groups.append(list(groups))
        return original(self, groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    table = read_rows(path, ["example_id", "words"], [9, 4, 3])
    assert table.to_pydict() == {"example_id": [3, 4, 9], "words": [["a"], ["b", "c"], ["a"]]}
    assert read_groups == [[1, 4]]
    assert read_rows(path, ["example_id"], [42]).num_rows == 0  # past every group: none read
    assert read_groups == [[1, 4]]
