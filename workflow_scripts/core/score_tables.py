"""Per-head score tables read back (the dependency and coreference scores, the probes' features): apart from
core/io.py, which every job imports, so that these readers change only the digests of the jobs that use them."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .errors import AtlasError
from .io import read_metadata


def read_score_table(path: str | os.PathLike[str], what: str) -> tuple[pa.Table, dict[str, Any]]:
    """A per-head score table this workflow wrote, and its ``atlas.*`` metadata; a file without that metadata (no
    ``num_layers``) is refused as not ``what`` (e.g. 'a dependency score table')."""
    table = pq.read_table(path)
    meta = read_metadata(path)
    if "num_layers" not in meta:
        raise AtlasError(f"{path}: not {what} (no metadata); rerun snakemake")
    return table, meta


def list_rows(column: pa.ChunkedArray) -> np.ndarray:
    """A fixed-size list column as one array: (rows, list size)."""
    column = column.combine_chunks()
    return column.flatten().to_numpy(zero_copy_only=False).reshape(-1, column.type.list_size)
