"""The fine-tuning effects' plan ([K] pattern classes and change, [L] lexical categories): which tasks' dev inputs
are analysed (``finetune_effects.tasks``) and at which checkpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .declarations import Analysis, declared_figures, declared_tables
from .finetune import chosen_tasks

if TYPE_CHECKING:
    from ..model import Study

STAGE = "finetune_effects"
PER_TARGET = "(subject, checkpoint, task) of the task's dev dump"
ANALYSES = (
    Analysis("pattern_classes", PER_TARGET, tables=("pattern_classes", "pattern_classifier"),
             figures=("pattern_classes",),
             captions=("finetune_effects_pattern_classes_table.rst", "finetune_effects_pattern_classifier.rst",
                       "finetune_effects_pattern_classes.rst")),
    Analysis("finetune_change", PER_TARGET, tables=("finetune_change",), figures=("finetune_change", "trajectory"),
             captions=("finetune_effects_change_table.rst", "finetune_effects_change.rst",
                       "finetune_effects_trajectory.rst"), explorer_tables=("finetune_change",)),
    Analysis("lexical", PER_TARGET,
             tables=("lexical_layers", "lexical_heads", "lexical_change", "lexical_last_layer", "lexical_top_layers"),
             figures=("lexical_layers",),
             captions=("finetune_effects_lexical_layers.rst", "finetune_effects_lexical_heads.rst",
                       "finetune_effects_lexical_change.rst", "finetune_effects_lexical_last_layer.rst",
                       "finetune_effects_lexical_top_layers.rst", "finetune_effects_lexical.rst"),
             explorer_tables=("lexical_heads",)),
)


def plan(study: Study) -> None:
    study.effects_tasks = chosen_tasks(study, STAGE, lambda t: (study.dev_split(t),), "analysed")
    study.effects_targets = [(m, c, t) for m in study.subjects for t in study.effects_tasks
                             for c in study.effects_checkpoints(m, t)]
    study.stage_outputs[STAGE] = ([study.paths.table(name) for name in declared_tables(ANALYSES)]
                                  + study.paths.figures(STAGE, declared_figures(ANALYSES))
                                  if study.effects_tasks else [])
