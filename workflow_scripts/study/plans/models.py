"""The models stage's plan: a card per model and its checkpoints; the models table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.table_names import MODELS
from .declarations import Analysis, StagePlan, declared_tables

if TYPE_CHECKING:
    from ..model import Study

STAGE = "models"
# The report's category of the stage's outputs.
REPORT_CATEGORY = "Models"
ANALYSES = (Analysis(MODELS, "the study", tables=(MODELS,), captions=("models.rst",),
                     explorer_tables=(MODELS,)),)


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
        """A params function: the keys of the job's model entry (``model`` wildcard) that say where it comes from (not
        how it is used, e.g. max_length), so that changing a usage setting does not rebuild the model card or its
        checkpoints."""
        entry = self.study.config["models"][wc.model]
        keys = ("hub", "path", "revision", *(("package", "subdir") if entry.get("package") else ()))
        return {k: v for k, v in entry.items() if k in keys}
