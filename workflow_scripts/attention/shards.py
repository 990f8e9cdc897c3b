"""The layout of a dump's shards: their names, the examples each holds, and where each job leaves its record.

Shared by extraction (extract.py, one job per shard) and the gather (gather.py), which must agree on it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

SHARD_NAME = "shard-{index:04d}-of-{count:04d}.parquet"
# Each shard's job leaves a record of its shard here (parts/shard-IIII-of-NNNN.json); the gather
# (rule attention_dump_manifest) makes manifest.json from them.
RECORD_DIR = "parts"


def shard_names(count: int) -> list[str]:
    return [SHARD_NAME.format(index=i, count=count) for i in range(count)]


def shard_bounds(n_examples: int, n_shards: int) -> np.ndarray:
    """Positions that split n examples into n_shards contiguous, near-equal ranges."""
    return np.linspace(0, n_examples, n_shards + 1).round().astype(int)


def example_ids_digest(example_ids: np.ndarray) -> str:
    """sha256 of a shard's example ids in storage order (int64 little-endian): what the reader checks."""
    return hashlib.sha256(np.ascontiguousarray(example_ids, dtype="<i8").tobytes()).hexdigest()


def shard_stem(index: int, count: int) -> str:
    """A shard's name without ``.parquet``: the ``shard`` wildcard of rule extract_attention."""
    return SHARD_NAME.format(index=index, count=count).removesuffix(".parquet")


def shard_record_path(out_dir: str | Path, name: str) -> Path:
    """Where a shard's job leaves its record for the gather (``parts/shard-IIII-of-NNNN.json``)."""
    return Path(out_dir) / RECORD_DIR / name.replace(".parquet", ".json")


