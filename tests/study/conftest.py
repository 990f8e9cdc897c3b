"""Fixtures of the study tests: the config schema and the repository's config.yaml (a fresh copy per test)."""

from __future__ import annotations

import copy

import pytest
import yaml

from support.paths import REPO, SCHEMA_PATH
from workflow_scripts.study.checks import load_schema


@pytest.fixture(scope="module")
def schema() -> dict:
    return load_schema(SCHEMA_PATH)


@pytest.fixture(scope="module")
def base_config() -> dict:
    with open(REPO / "config.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture
def config(base_config) -> dict:
    return copy.deepcopy(base_config)
