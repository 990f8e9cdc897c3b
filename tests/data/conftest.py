"""Fixtures of the data tests: a small GUM-like CoNLL-U file (tests/support/conllu.py) written afresh per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.conllu import GUM_LINES, write_conllu


@pytest.fixture
def gum_file(tmp_path) -> Path:
    return write_conllu(tmp_path / "en_gum-ud-dev.conllu", GUM_LINES)
