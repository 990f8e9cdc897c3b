"""The models stage's plan: a card per model and its checkpoints; the models table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from .declarations import Analysis, StagePlan, declared_tables

if TYPE_CHECKING:
    from ..model import Study

STAGE = "models"
# The report's category of the stage's outputs.
REPORT_CATEGORY = "Models"
ANALYSES = (Analysis("models", "the study", tables=("models",), captions=("models.rst",),
                     explorer_tables=("models",)),)


def plan(study: Study) -> Plan:
    return Plan(study=study, outputs=[study.paths.table(name) for name in declared_tables(ANALYSES)])


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """The models stage's plan, with the params functions of rules/models.smk (``STUDY.stage("models")``: the Study's
    ``models`` is its list of models)."""

    analyses: ClassVar[tuple[Analysis, ...]] = ANALYSES
    stage: ClassVar[str] = STAGE
    report_category: ClassVar[str] = REPORT_CATEGORY

    def model_source(self, wc: Any) -> dict[str, Any]:
        """A params function: the keys of the job's model entry that say where it comes from (Study.model_source)."""
        return self.study.model_source(wc.model)
