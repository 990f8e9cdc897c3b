"""``STUDY.inputs``: the input and params functions of the rules, one group per stage, each its plan's ``Inputs``.

Snakemake calls these with a job's wildcards (anything with attributes ``model``, ``checkpoint``, ``corpus``,
``probe``...): a rule of rules/surface.smk reads ``STUDY.inputs.surface.dump``, one of rules/ablation.smk
``STUDY.inputs.ablation.found_heads``. They live in the plans, not in the rule files, so that the rule files hold
rules only (``snakemake --lint``) and the paths a job reads are unit-tested with the rest of the study model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .plans import ablation, data, explorer, finetune, finetune_effects, surface, syntax

if TYPE_CHECKING:
    from .model import Study


@dataclass(frozen=True)
class RuleInputs:
    """Each stage's input functions (the stages whose rules read none have no group)."""

    data: data.Inputs
    finetune: finetune.Inputs
    surface: surface.Inputs
    syntax: syntax.Inputs
    finetune_effects: finetune_effects.Inputs
    ablation: ablation.Inputs
    explorer: explorer.Inputs

    @classmethod
    def of(cls, study: Study) -> RuleInputs:
        return cls(data.Inputs(study), finetune.Inputs(study), surface.Inputs(study), syntax.Inputs(study),
                   finetune_effects.Inputs(study), ablation.Inputs(study), explorer.Inputs(study))
