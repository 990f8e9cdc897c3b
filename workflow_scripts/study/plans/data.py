"""The data stage's plan: every corpus's tables (planned by data/corpora.py from the entries) and the summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .declarations import Analysis

if TYPE_CHECKING:
    from ..model import Study

STAGE = "data"
ANALYSES = (Analysis("data_summary", "the study", tables=("data_summary",), captions=("data_summary.rst",)),)


def plan(study: Study) -> None:
    study.stage_outputs[STAGE] = [study.paths.table(name) for name in ANALYSES[0].tables]
