"""The text (or text pair) of every example of a normalised data table."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq


def example_texts(data_path: str | Path) -> tuple[list[int], list[str], list[str | None]]:
    """(example ids, first texts, second texts or None) of a data table of any corpus."""
    schema = pq.read_schema(data_path)
    if "text_a" in schema.names:
        table = pq.read_table(data_path, columns=["example_id", "text_a", "text_b"])
        return (table["example_id"].to_pylist(), table["text_a"].to_pylist(), table["text_b"].to_pylist())
    table = pq.read_table(data_path, columns=["example_id", "text"])
    ids = table["example_id"].to_pylist()
    return ids, table["text"].to_pylist(), [None] * len(ids)
