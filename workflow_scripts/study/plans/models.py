"""The models stage's plan: a card per model and its checkpoints; the models table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .declarations import Analysis, StagePlan, declared_tables

if TYPE_CHECKING:
    from ..model import Study

STAGE = "models"
ANALYSES = (Analysis("models", "the study", tables=("models",), captions=("models.rst",),
                     explorer_tables=("models",)),)


def plan(study: Study) -> StagePlan:
    return StagePlan(study=study, outputs=[study.paths.table(name) for name in declared_tables(ANALYSES)])
