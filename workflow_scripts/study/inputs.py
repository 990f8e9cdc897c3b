"""``STUDY.inputs``: the input and params functions of the rules, one group per stage, each its plan's ``Inputs``.

Snakemake calls these with a job's wildcards (anything with attributes ``model``, ``checkpoint``, ``corpus``,
``probe``...): a rule of rules/surface.smk reads ``STUDY.inputs.surface.dump``, one of rules/ablation.smk
``STUDY.inputs.ablation.found_heads``. They live in the plans, not in the rule files, so that the rule files hold
rules only (``snakemake --lint``) and the paths a job reads are unit-tested with the rest of the study model.
"""

from __future__ import annotations

from dataclasses import make_dataclass
from typing import TYPE_CHECKING, Any

from .plans import stage_plans

if TYPE_CHECKING:
    from .model import Study


def rule_inputs(study: Study) -> Any:
    """Each stage's input functions, as ``STUDY.inputs.<stage>``: an instance of every plan's ``Inputs`` (the stages
    whose rules read none declare none), in a frozen record with one field per such stage."""
    groups = {plan.STAGE: plan.Inputs(study) for plan in stage_plans() if hasattr(plan, "Inputs")}
    return make_dataclass("RuleInputs", list(groups), frozen=True)(**groups)
