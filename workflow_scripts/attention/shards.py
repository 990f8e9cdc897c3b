"""The layout of a dump's shards: their names, the examples each holds, and where each job leaves its record.

Shared by extraction (extract.py, one job per shard) and the gather (gather.py), which must agree on it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

SHARD_NAME = "shard-{index:04d}-of-{count:04d}.parquet"
# The shards one analysis job reads (attention.analysis_shards_per_job): consecutive shards FIRST to LAST. A group
# of one shard is named as the shard, so that the default (one job per shard) keeps the shard's own name.
SHARD_GROUP_NAME = "shards-{first:04d}-{last:04d}-of-{count:04d}"
SHARD_GROUP_PATTERN = re.compile(r"shard-(?P<first>[0-9]{4})-of-(?P<count>[0-9]{4})"
                                 r"|shards-(?P<first_of_group>[0-9]{4})-(?P<last>[0-9]{4})-of-(?P<group_count>[0-9]{4})")
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




def shard_groups(count: int, per_group: int) -> list[str]:
    """Names of the shard groups that the analyses of a dump of ``count`` shards run on, one job each:
    ``per_group`` consecutive shards per group (the last may hold fewer)."""
    names = []
    for first in range(0, count, per_group):
        last = min(first + per_group, count) - 1
        names.append(shard_stem(first, count) if first == last
                     else SHARD_GROUP_NAME.format(first=first, last=last, count=count))
    return names


def shard_group_files(group: str) -> list[str]:
    """The shard files of a group name of :func:`shard_groups` (a shard's own name is a group of one)."""
    match = SHARD_GROUP_PATTERN.fullmatch(group.removesuffix(".parquet"))
    if match is None:
        raise ValueError(f"{group!r} names no shard group (shard-IIII-of-NNNN or shards-FFFF-LLLL-of-NNNN)")
    if match["first"] is not None:
        first, last, count = int(match["first"]), int(match["first"]), int(match["count"])
    else:
        first, last, count = int(match["first_of_group"]), int(match["last"]), int(match["group_count"])
    if not first <= last < count:
        raise ValueError(f"{group!r}: a group runs from a first to a last shard of the dump")
    return shard_names(count)[first:last + 1]
