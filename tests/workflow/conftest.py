"""Fixtures of the whole-DAG tests (test_e2e.py, test_slurm.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.mirror import write_tiny_study


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_bert) -> Path:
    """A folder with a tiny mirror and tiny.yaml, the tiny study's config; built afresh for each test module. Two
    shards per dump: these modules test sharding (shard jobs, their gather, shards per analysis job)."""
    return write_tiny_study(tmp_path_factory.mktemp("study"), tiny_bert, num_shards=2)
